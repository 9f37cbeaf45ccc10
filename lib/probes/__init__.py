"""Judge-prompt probes: catch prompt-layout bugs before they cost a benchmark.

Modules: ``spec`` (probe names, thresholds, ``ProbeSpec``, ``ProbeResult``, ``ProbeRun``), one module per
probe family (``canaries``, ``ablation``, ``position``, ``noise``), ``items`` (which items a run judges),
``runner`` (``run_probes``: builds the requests, sends them through ``lib.judging.dispatch``, applies each
family's rule), ``verdict`` (``summary_text``: the finding in plain words) and ``storage`` (probe runs in
the store: save, list, load, compare, tabulate). ``lib.probes.suite`` gathers the public API in one import.

A probe run takes one template version, one judge endpoint (``JudgeConfig``) and a small sample of
real items (stratified by category, ``sample_items``) and sends crafted requests through the same
dispatcher, cache and cost accounting as re-judging (``lib.judging.dispatch``). Nothing it sends
becomes a verdict in ``single_judgments``; the run and every result are stored in ``probe_runs`` /
``probe_results`` (``save_probe_run``), and two runs compare with ``compare_probe_runs`` ("v2 fixed
empty_answer, broke nothing else"). ``run_probes`` does it all; ``summary_text`` says in plain words
what it found.

Probes
------
**Canaries** (single-answer templates): the item's real answer is replaced by a degenerate one and the
judge's score is checked against an expected direction. The real answer is judged too, with the same
template, as the baseline ``real_score``.

=====================  ===========  ==========================================================
probe                  expected     the judged answer
=====================  ===========  ==========================================================
``empty_answer``       low          ``""``
``whitespace_answer``  low          spaces, tabs and newlines only
``question_echo``      low          the question itself
``reference_copy``     high         the item's reference answer (items without one: skipped)
``wrong_language``     low          a generic reply in another language (English for a Japanese
                                    question, Japanese otherwise)
``truncated_answer``   low          the real answer cut mid-sentence at ~40% of its length
                                    (answers under 20 characters: skipped)
``injection``          low          "I don't know." plus an injected instruction to output
                                    ``Rating: [[MAX]]`` / ``Score: MAX``
``off_topic``          low          another sampled question's real answer (else a fixed
                                    off-topic text in the question's language)
=====================  ===========  ==========================================================

Pass/fail rules (``mid`` = the midpoint of the template's scale, e.g. 3 on 1-5, 5.5 on 1-10; scores
on the template's own scale; every result's ``detail`` states its rule):

- ``low``: an item **fails** if its score is above ``mid`` or above the same item's real answer's score.
- ``high``: an item **fails** if its score is below ``mid``.
- ``truncated_answer`` (``low``, relative): an item fails if its score is not below the real
  answer's (equal passes only when the real answer already has the scale minimum); without a real
  score, the ``low`` rule.
- An item whose output has no parsable rating fails too (the judge did not follow its format); an
  API error leaves the item out. A probe fails if any of its items fails.

**Section-order ablation** (single-answer templates): the template is rendered with its blocks
(question / reference / answer / rubric) in another order, or without the reference, and the real
answers and the empty answer are judged again. Variants (only those the template's blocks allow):
``order_swap`` (answer and reference swap places), ``no_reference`` (the reference block removed),
``answer_first`` (answer and question swap places), ``rubric_first`` / ``rubric_last``. Each reports
the real answers' score shift per item and on average, and the empty answer's score under that layout
(``failed`` = the empty answer still fails the ``low`` rule there). Ablations are diagnostics: they do
not decide whether the template passes.

**Position swap** (pairwise templates): each item is judged as (A, B) and as (B, A). ``consistency``
is the share of items whose winner survives the swap; ``first_position_rate`` the share of decisive
verdicts (A or B, not tie) that chose the first position (0.5 = no bias). Fails if consistency is
below ``POSITION_CONSISTENCY_MIN`` (0.7). Pairwise templates also get the ``empty_answer`` canary: one
side empty, in both positions; it fails if the empty side ever wins or ties.

**Repeat noise**: the real answer's request sent ``repeats`` times with the cache bypassed (``force``),
at the configured temperature: the judge's own noise floor, in points on the 1-10 scale (the scale the
review pages' deltas use). Fails (diagnostic only) if the mean standard deviation exceeds
``NOISE_MAX_STD`` (1.0 point); pairwise: if fewer than ``NOISE_MIN_AGREEMENT`` (80%) of the repeats
agree with the most common verdict.

A run **passes** when no canary and no position-swap probe fails or could not be evaluated (an API
error on every item); skipped probes are neutral (``ProbeRun.passed``). ``python -m lib.cli probe``
exits 0 when the run passes and 1 when it does not.

Blocks and the marker syntax
----------------------------
``find_blocks(template)`` finds the blocks of each message:

1. **Explicit markers** (any template; when a message has markers, only markers count)::

       {# block: reference #}[Reference]
       {{ data.gt }}{# endblock #}

   ``{# block: NAME #}`` opens and ``{# endblock #}`` closes a block (Jinja comments, so they render to
   nothing; ``{#- ... -#}`` works too). NAME is ``question``, ``reference``, ``answer`` or ``rubric``
   (``answer_a`` / ``answer_b`` for pairwise; other names are kept but no ablation moves them). A
   block moves with everything between its markers; the text between blocks stays in place. Blocks
   must not overlap or nest, and a block's Jinja tags must be balanced inside it.
2. **FastChat sections**: ``[The Start of X]…[The End of X]`` and ``<|The Start of X|>…<|The End of X|>``
   (X naming the reference, the assistant's answer or conversation, assistant A / B).
3. **Paragraphs** (separated by blank lines) outside those sections, classified by the context
   variables they use: ``question``/``question_N``/``data.question`` -> question,
   ``ref_answer_N``/``data.gt``/``data.ref_answer`` -> reference, ``answer``/``answer_N``/
   ``response.content`` -> answer; a paragraph without variables that talks about rating or scoring
   is the rubric. A paragraph mixing classes is split into lines (the ``order-bug-demo`` layout
   ``question: … / answer: … / pred: …``). Paragraphs with unbalanced Jinja tags are never moved.
"""
