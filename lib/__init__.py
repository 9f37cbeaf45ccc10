"""JudgeLens library: everything that runs without Streamlit.

Modules, by what they own:

- ``store``      the DuckDB file: schema, connections, the write lock, transactions
- ``formats``    readers for each harness's files (FastChat family, Swallow/lighteval)
- ``ingest``     finds files, hashes them, imports each import as one transaction
- ``queries``    read-only questions the pages and the CLI ask of the store
- ``sample``     the bundled real data and the first-start loader
- ``cli``        ``python -m lib.cli``
"""
