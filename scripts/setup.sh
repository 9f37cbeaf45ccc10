#!/usr/bin/env bash
# Create .venv and install what JudgeLens needs. Idempotent and quick when nothing changed.
#   bash scripts/setup.sh          runtime packages (requirements.txt)
#   bash scripts/setup.sh dev      + test packages (requirements-dev.txt)
set -euo pipefail
cd "$(dirname "$0")/.."
req=requirements.txt
[ "${1:-}" = "dev" ] && req=requirements-dev.txt
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "Creating .venv with $($PYTHON --version)…"
  "$PYTHON" -m venv .venv
fi
stamp=".venv/.installed-$(basename "$req" .txt)"
want=$(cat requirements*.txt | sha256sum | cut -c1-16)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "Installing Python packages from $req…"
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -r "$req"
  echo "$want" > "$stamp"
fi
