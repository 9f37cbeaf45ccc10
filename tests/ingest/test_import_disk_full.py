"""A full disk during an import, for real: the store lives on a 3 MB tmpfs mounted in a private mount namespace
(``unshare -rm``: a user namespace, so no root is needed and nothing outside the test sees the mount), and a
7 MB judgment file is imported into it. DuckDB runs out of space while committing (the WAL write fails with
"No space left on device" inside a TransactionException): the import must stop with the titled disk error
naming the file and the store's folder, and the store, opened again, must hold nothing of the import."""
from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from lib.errors import ImportResourceError
    from lib.ingest.importer import ingest
    from lib.store import Store

    small, path = Path(sys.argv[1]), Path(sys.argv[2])
    COUNTS = "SELECT (SELECT count(*) FROM sources), (SELECT count(*) FROM single_judgments)"
    out = {}
    with Store(small / "jl.duckdb") as store:
        try:
            ingest(store, [path])
            out["error"] = None
        except ImportResourceError as exc:
            out.update(title=exc.title, message=exc.message, kind=exc.kind)
        with store.read() as cur:
            out["rows"] = list(cur.execute(COUNTS).fetchone())
    with Store(small / "jl.duckdb") as again, again.read() as cur:
        out["reopened"] = list(cur.execute(COUNTS).fetchone())
    print(json.dumps(out))
    """)


def _namespace_mount_works() -> str | None:
    """None when this machine lets an unprivileged process mount a tmpfs in its own namespace, else why not."""
    if shutil.which("unshare") is None:
        return "util-linux's unshare is not installed"
    done = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"],
                          capture_output=True, text=True)
    return None if done.returncode == 0 else f"unshare -rm cannot mount a tmpfs here: {done.stderr.strip()}"


def _judgment_file(folder: Path) -> Path:
    rng = random.Random(7)  # random letters: DuckDB cannot compress them below the tmpfs's size
    records = [{"question_id": q, "model": f"m{m}", "judge": ["gpt-4", "single-v1"], "user_prompt": f"prompt {q}",
                "judgment": "".join(rng.choice("abcdefghij klmnop") for _ in range(3000)) + " Rating: [[7]]",
                "score": 7, "turn": turn, "tstamp": 1700000000.0}
               for q in range(1, 81) for m in range(14) for turn in (1, 2)]
    path = folder / "bench" / "model_judgment" / "gpt-4_single.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_full_disk_stops_the_import_with_the_titled_error_and_nothing_written(tmp_path):
    why_not = _namespace_mount_works()
    if why_not:
        pytest.skip(f"no small disk to fill: {why_not}")
    path = _judgment_file(tmp_path / "in")
    assert path.stat().st_size > 2 * 3 * 2**20  # twice the disk
    small = tmp_path / "small"
    small.mkdir()
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    script = f'mount -t tmpfs -o size=3m tmpfs "{small}" && exec "{sys.executable}" "{probe}" "{small}" "{path}"'
    done = subprocess.run(["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, cwd=ROOT,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}, timeout=240)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout.strip().splitlines()[-1])
    assert out["title"] == "Import stopped: out of disk space; nothing was imported"
    assert out["kind"] == "disk"
    assert out["message"] == (
        f"{path}: the disk ran out of space while the import was writing, so nothing was imported. Free space on "
        f"the disk of the store ({small}) and of the temporary folder (an import needs about the file's size free "
        "on each), then import again.")
    assert out["rows"] == [0, 0] and out["reopened"] == [0, 0]
