"""JudgeLens library: everything that runs without Streamlit.

Modules, by what they own:

- ``store``         the DuckDB file: schema, connections, the write lock, transactions, item_scores
- ``formats``       readers for each harness's files (FastChat family, Swallow/lighteval)
- ``ingest``        finds files, hashes them, imports each import as one transaction, removes sources
- ``uploads``       import roots and the layout of uploaded files
- ``queries``       overview, leaderboard and scores the pages and the CLI ask of the store
- ``agreement``     judge-vs-judge statistics, disagreements, pairwise win rates, parse failures
- ``deltas``        paired A-vs-B deltas: t intervals on question-level deltas, Holm correction (``selectors``: A/B sides)
- ``distributions`` histograms, box summaries, the JA harness's overall views, length bias
- ``item_view``     one item's question, references, answer and verdicts; deep-link parameters
- ``textdiff``      character-level diffs (escaped HTML)
- ``safe_text``     showing untrusted text inside Markdown
- ``charts``        Plotly figures shared by the pages and the report
- ``report``        the self-contained HTML report
- ``templates``     judge prompt templates: built-ins, versions, the Jinja2 sandbox
- ``judge_context`` the documented context a template is rendered with
- ``parsers``       reading a score or verdict out of a judge's text
- ``judge_client``  judge calls through the openai client: cache, retries, batches
- ``sample``        the bundled real data and the first-start loader
- ``cli``           ``python -m lib.cli``
"""
