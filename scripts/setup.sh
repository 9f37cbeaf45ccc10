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
  n=$(grep -cE '^[A-Za-z0-9]' "$req" || true)
  echo "Installing Python packages from $req ($n pinned, with their dependencies; the first time takes a few minutes)…"
  # One line per package as pip gets to it, so a first start is never a silent wait; the whole log is kept.
  set +e
  .venv/bin/python -m pip install --disable-pip-version-check --progress-bar off -r "$req" 2>&1 \
    | tee .venv/pip-install.log \
    | { grep --line-buffered -E '^(Collecting|Installing collected)' \
        | sed -u -E 's/^Collecting ([^ ;]+).*/  fetching \1/; s/^Installing collected packages: /  installing: /'; true; }
  status=${PIPESTATUS[0]}
  set -e
  if [ "$status" != 0 ]; then
    echo "pip could not install $req (the end of .venv/pip-install.log):" >&2
    tail -n 20 .venv/pip-install.log >&2
    exit "$status"
  fi
  echo "$want" > "$stamp"
fi
