#!/usr/bin/env bash
# Run every JudgeLens test (unit, CLI, AppTest pages, real-browser). Sets up everything first:
# .venv with requirements-dev.txt, and Debian's chromium for the browser tests.
# Extra arguments go to pytest (e.g. -k ingest, -x).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "Installing Debian chromium for the browser tests…"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver) >/dev/null
  else
    echo "Browser tests need Debian's chromium: sudo apt-get install chromium chromium-driver" >&2
    exit 1
  fi
fi
exec .venv/bin/python -m pytest "$@"
