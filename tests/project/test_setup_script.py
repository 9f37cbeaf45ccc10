"""scripts/setup.sh shows what it installs (a first start is minutes of pip) and says why when pip fails.

pip itself is replaced by a small script in a copy of the repository's scripts, so nothing is downloaded."""
from __future__ import annotations

import shutil
import subprocess

from conftest import ROOT

FAKE_PYTHON = """#!/bin/sh
# a stand-in for .venv/bin/python: "-m pip install ..." prints pip-like lines; exit code from $FAKE_PIP_EXIT
if [ "$1 $2 $3" = "-m pip install" ]; then
  echo "Collecting duckdb==1.4.1 (from -r requirements.txt (line 1))"
  echo "  Downloading duckdb-1.4.1-cp311.whl (20.1 MB)"
  echo "Collecting streamlit==1.50.0"
  echo "Installing collected packages: duckdb, streamlit"
  [ "${FAKE_PIP_EXIT:-0}" = 0 ] || echo "ERROR: No matching distribution found for streamlit==1.50.0"
  exit "${FAKE_PIP_EXIT:-0}"
fi
exit 0
"""


def repo_copy(tmp_path):
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "setup.sh", tmp_path / "scripts" / "setup.sh")
    (tmp_path / "requirements.txt").write_text("duckdb==1.4.1\nstreamlit==1.50.0\n")
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(FAKE_PYTHON)
    python.chmod(0o755)
    return tmp_path


def test_setup_prints_each_package_it_fetches(tmp_path):
    repo = repo_copy(tmp_path)
    proc = subprocess.run(["bash", "scripts/setup.sh"], cwd=repo, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "Installing Python packages from requirements.txt (2 pinned, with their dependencies; the first time takes "
        "a few minutes)…",
        "  fetching duckdb==1.4.1",
        "  fetching streamlit==1.50.0",
        "  installing: duckdb, streamlit",
    ]
    again = subprocess.run(["bash", "scripts/setup.sh"], cwd=repo, capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and again.stdout == ""  # installed: quick and quiet


def test_setup_says_why_pip_failed(tmp_path):
    repo = repo_copy(tmp_path)
    proc = subprocess.run(["bash", "scripts/setup.sh"], cwd=repo, capture_output=True, text=True, timeout=60,
                          env={"PATH": "/usr/bin:/bin", "FAKE_PIP_EXIT": "1"})
    assert proc.returncode == 1
    assert "pip could not install requirements.txt (the end of .venv/pip-install.log):" in proc.stderr
    assert "ERROR: No matching distribution found for streamlit==1.50.0" in proc.stderr
    assert not (repo / ".venv" / ".installed-requirements").exists()
