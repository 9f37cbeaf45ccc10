"""Generation: answers of the model under test made again the way a harness would (issue 21, answer side).

Above ``lib.judging`` in the layers: every request goes down judging's one request path (``lib.judging.cache``,
``lib.judging.dispatch``, ``lib.judging.client``); it never imports judging's batches or templates.
Public API:

- ``setups``: ``GenerationSetup`` (frozen: system prompt, temperature map + override, samples, copy at
  temperature 0, turn-2 conditioning, max_tokens, character cap, seed rule, provenance) with ``.fastchat()``,
  ``.swallow()``, ``.for_harness()``, ``.from_run()``, ``.temperature_for()``, ``.seed_for()``, ``.switch()``,
  ``.describe()``; ``diff``, ``differing_factors``, ``FACTORS`` (the ladder's generation steps),
  ``setup_to_dict`` / ``setup_from_dict``; the harness facts come from ``lib.harness`` (``Generation`` records).
- ``plan``: ``Question``, ``Slot``, ``GenerationPlan``, ``plan_generation``, ``messages_for``, ``request_body``,
  ``request_key``, ``estimate`` -> ``Estimate``.
- ``runner``: ``GenRequest``, ``run_plan`` -> ``GenerationResult`` (answers per slot, sent, cached, failed,
  cancelled), sending down judging's one request path (request cache, then the shared dispatcher);
  ``cached_texts`` (the cache lookup ``plan.estimate`` takes).
- ``questions``: ``questions_for_run``, ``run_answer_facts``.
- ``storage``: ``generate_run`` (send + store as a run of its own, resumable),
  ``regen_label``, ``stored_setup``.

The stored-data-only view of the answer side is ``lib.analysis.answer_stats``.
"""
