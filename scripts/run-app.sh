#!/usr/bin/env bash
# Start JudgeLens on http://127.0.0.1:8501. The first start loads the bundled sample into data/judgelens.duckdb.
# Extra arguments go to `streamlit run` (e.g. --server.port 8600). JUDGELENS_DB=FILE picks another database.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# serve.py = `streamlit run app.py` with the slow imports done before the server listens (see its docstring)
exec .venv/bin/python scripts/serve.py "$@"
