"""tests/cli_forks.py (the README examples' fork server) runs a command as ``python -m lib.cli`` does: the same
exit code, stdout and stderr as the real subprocess, for a command that writes (twice: the second sees the first's
import), commands that read, and usage errors."""
from __future__ import annotations

import os
import subprocess
import sys

from cli_forks import CliForks
from conftest import JA, ROOT


def test_a_forked_command_answers_as_the_real_cli(tmp_path):
    (tmp_path / "forked").mkdir()
    (tmp_path / "real").mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("JUDGELENS_STORE", "OPENAI_API_KEY")}
    commands = [["ingest", str(JA / "judge_prompts.jsonl")], ["ingest", str(JA / "judge_prompts.jsonl")],
                ["sources"], ["aliases"], ["no-such-command"], ["scores", "--by", "nothing"]]
    with CliForks({**env, "JUDGELENS_DB": str(tmp_path / "forked" / "jl.duckdb")}) as cli:
        forked = [cli.run(argv) for argv in commands]
    real = [subprocess.run([sys.executable, "-m", "lib.cli", *argv], cwd=ROOT, capture_output=True, text=True,
                           env={**env, "JUDGELENS_DB": str(tmp_path / "real" / "jl.duckdb")}, timeout=120)
            for argv in commands]
    for argv, f, r in zip(commands, forked, real):
        assert (f.returncode, f.stdout, f.stderr) == (r.returncode, r.stdout, r.stderr), argv
    assert [p.returncode for p in forked] == [0, 0, 0, 0, 2, 2]
    assert forked[1].stdout.startswith("0 file(s) imported, 1 unchanged")   # the first import's store, not a copy
    assert "invalid choice: 'no-such-command'" in forked[4].stderr
