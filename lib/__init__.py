"""JudgeLens library: everything that runs without Streamlit. Higher layers import lower ones, never the
reverse (the contracts in ``pyproject.toml``, checked by ``tests/project/test_layering.py``).

- ``cli/``       ``python -m lib.cli``: the only place that parses arguments or prints. ``main.py`` builds
                 the parser from one module per area (``data``, ``review``, ``judging``, ``harness``,
                 ``links``, ...); ``common.py`` holds the shared options and output helpers.
- ``probes/``    judge-prompt probes: ``spec`` (names, thresholds, results), one module per family
                 (``canaries``, ``ablation``, ``position``, ``noise``), ``items``, ``runner``
                 (``run_probes``), ``verdict`` (plain words), ``storage``; ``suite`` is the one-import API.
- ``reports``    the self-contained HTML reports (judge comparison, probe run, harness vs harness): they
                 assemble analyses, so they sit above ``analysis`` and ``judging``.
- ``render/``    pure presentation helpers at the bottom (no ``lib`` imports): ``charts`` (pure Plotly
                 figures), ``textdiff`` (character diffs, escaped HTML), ``safe_text`` (``md_escape``).
- ``judging/``   re-judging: ``templates`` (versions, built-ins), ``sandbox`` (the security boundary: the
                 locked-down Jinja2 environment in a worker process with limits), ``parsers``, ``context``
                 (the item context; choosing items); every model request goes down one path: ``config``
                 (``JudgeConfig``, the API key), ``calls`` (``CallResult``, ``CallStats``), ``cache`` (the
                 request cache: ``request_hash``, ``fetch``, ``save``), ``client`` (one call: retries,
                 ``call_judge``), ``deadline`` (a total deadline per request), ``dispatch`` (the one thread
                 pool for many calls), ``jobs`` (``BackgroundJob``: a run on a thread, progress, cancel),
                 ``batch`` (``RejudgeBatch``: verdicts stored as a new judge; ``rejudge_one``), ``attribution``
                 (the attribution ladder), ``human`` (the analyst's own verdicts as judges ``human:<author>``).
- ``ingest/``    ``formats/`` (FastChat, Swallow, JSONL readers), ``importer`` (discover, hash,
                 one-transaction import, remove), ``uploads``, ``sample`` (the bundled sample).
- ``analysis/``  ``queries`` (overview, leaderboard, scores), ``agreement``, ``deltas`` (paired A-vs-B deltas:
                 t intervals on question-level deltas, Holm correction), ``distributions``,
                 ``flags`` (suspicious stored verdicts), ``item_view`` (one item, deep links), and harness
                 vs harness: ``aliases``, ``linking``, ``selectors``, ``runs``, ``harness_diff``; ``search``
                 (full-text search over the index ``search_index`` builds inside every import).
- ``store``      the DuckDB file: schema, connections, the single writer, ``item_scores``.
- ``search_index`` the search index: exact case patterns for NFKC-stable texts, a lowered NFKC copy of the
                 others, built in the import transaction.
- ``text_features`` what an answer is (Japanese share, length, code block, ``<think>``, refusal phrase): one home
                 for each rule, Python and DuckDB twins; the ``answer_features`` table, filled in the import
                 transaction (``analysis.answer_features`` splits scores and gaps by it).
- ``errors``     the titled errors a user reads (``JudgeLensError`` and its subclasses).
- ``vocab``      the shared vocabulary: model-name key, question-id order, the ``<think>`` rule, reference
                 categories, FastChat's rating regexes.
- ``paths``      where the repository's own files live.
"""
