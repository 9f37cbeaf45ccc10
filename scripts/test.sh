#!/usr/bin/env bash
# Run every JudgeLens test (unit, CLI, AppTest pages, real-browser). Sets up everything first:
# .venv with requirements-dev.txt, Debian's chromium and fonts-noto-cjk (Japanese) for the browser tests and Debian's postgresql for the
# DuckLake team-store tests (each test session starts its own throwaway server as a non-root user).
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
if ! fc-list :lang=ja 2>/dev/null | grep -q .; then
  # Without a CJK font headless Chromium draws Japanese as boxes: browser tests and screenshots cannot read it.
  if [ "$(id -u)" = 0 ]; then
    echo "Installing Debian fonts-noto-cjk so the browser shows Japanese…"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq fonts-noto-cjk) >/dev/null
  else
    echo "Browser tests need a Japanese font: sudo apt-get install fonts-noto-cjk" >&2
    exit 1
  fi
fi
if ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    echo "Installing Debian postgresql for the DuckLake team-store tests…"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql) >/dev/null
  else
    echo "The DuckLake team-store tests need Debian's postgresql: sudo apt-get install postgresql" >&2
    exit 1
  fi
fi
# Two workers (pytest-xdist), a test file each at a time: the suite takes about half as long, and runs the way it must
# stay steady, with both cores busy. JUDGELENS_TEST_WORKERS=0 runs it in one process.
# --durations: the slowest tests at the end of every run, so a test that grows shows where the ~10 minutes go.
exec .venv/bin/python -m pytest -n "${JUDGELENS_TEST_WORKERS:-2}" --dist loadfile --durations=25 "$@"
