"""One Store shared by threads (the Streamlit server), and a second process on the same file."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

import duckdb
from conftest import JA, ROOT

from lib.analysis import queries
from lib.errors import DatabaseBusyError
from lib.ingest.importer import ingest
from lib.ingest.resources import memory_floor
from lib.store import Store

GPT4O = JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"


def small_files(tmp_path, n: int) -> list:
    paths = []
    for i in range(n):
        path = tmp_path / f"bench{i}" / "model_judgment" / "gpt-4_single.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("".join(json.dumps({"question_id": q, "model": f"model-{i}", "judge": ["gpt-4", "single-v1"],
                                            "score": 1 + (q + i) % 10, "turn": 1}) + "\n" for q in range(50)))
        paths.append(path)
    return paths


def run_concurrently(workers, readers=()) -> tuple[list, list[BaseException]]:
    """Start every thread at once; readers loop until the workers are done. -> (worker results, errors)."""
    barrier = threading.Barrier(len(workers) + len(readers))
    done = threading.Event()
    results: list = [None] * len(workers)
    errors: list[BaseException] = []

    def worker(i, fn):
        try:
            barrier.wait()
            results[i] = fn()
        except BaseException as exc:  # noqa: BLE001 - asserted on below
            errors.append(exc)

    def reader(fn):
        try:
            barrier.wait()
            while not done.is_set():
                fn()
                time.sleep(0.002)
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i, fn)) for i, fn in enumerate(workers)]
    reading = [threading.Thread(target=reader, args=(fn,)) for fn in readers]
    for t in [*threads, *reading]:
        t.start()
    for t in threads:
        t.join(timeout=60)
    done.set()
    for t in reading:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in [*threads, *reading]), "a thread hung"
    return results, errors


def test_parallel_imports_while_reading(store, tmp_path):
    paths = small_files(tmp_path, 4)
    seen: list[int] = []

    def read_scores():
        seen.append(int(queries.scores(store, ["model"])["n"].sum()))

    def read_sources():
        queries.sources(store)
        queries.overview_counts(store)

    reports, errors = run_concurrently([lambda p=p: ingest(store, [p]) for p in paths], [read_scores, read_sources])
    assert errors == []
    assert [len(r.imported) for r in reports] == [1, 1, 1, 1]
    assert seen and all(n in (0, 50, 100, 150, 200) for n in seen)  # readers only ever see whole files
    df = queries.scores(store, ["model"])
    assert df["model"].tolist() == [f"model-{i}" for i in range(4)] and df["n"].tolist() == [50] * 4
    with store.read() as cur:
        assert cur.execute("SELECT count(*), count(DISTINCT source_id) FROM single_judgments").fetchone() == (200, 4)
        assert cur.execute("SELECT count(*), sum(rows_imported) FROM sources").fetchone() == (4, 200)


def test_same_file_twice_at_once(store):
    reports, errors = run_concurrently([lambda: ingest(store, [GPT4O]), lambda: ingest(store, [GPT4O])])
    assert errors == []
    assert sorted((len(r.imported), len(r.unchanged)) for r in reports) == [(0, 1), (1, 0)]
    winner = next(r for r in reports if r.imported).imported[0]
    loser = next(r for r in reports if r.unchanged).unchanged[0]
    assert loser.existing_source == winner.source_id
    assert "already imported as source" in loser.line()
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM sources").fetchone()[0] == 1
        assert cur.execute("SELECT count(*) FROM single_judgments").fetchone()[0] == 320


HOLD_WRITE = ("import sys\n"
              "from lib.store import Store\n"
              "s = Store(sys.argv[1])\n"
              "with s.write() as cur:\n"
              "    cur.execute(\"INSERT INTO meta VALUES ('held', 'yes')\")\n"
              "    print('holding', flush=True)\n"
              "    sys.stdin.read()\n")


def cli(*args, env=None, **kwargs):
    import os

    return subprocess.Popen([sys.executable, "-m", "lib.cli", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, **(env or {})}, **kwargs)


def test_cli_reads_and_writes_while_this_process_has_the_store_open(store):
    """The app's situation: this process has the store open (and has just read it); the CLI in another process
    reads it and imports into it, and this process then sees the import."""
    ingest(store, [GPT4O])
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM sources").fetchone()[0] == 1
    read = cli("sources", "--db", str(store.path))
    out, err = read.communicate(timeout=120)
    assert read.returncode == 0, err
    assert "gpt-4o_single.jsonl" in out
    write = cli("ingest", str(JA / "ja_mt_bench" / "question.jsonl"), "--db", str(store.path))
    out, err = write.communicate(timeout=120)
    assert write.returncode == 0, err
    assert "1 file(s) imported" in out
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM sources").fetchone()[0] == 2
    ingest(store, [GPT4O.parent / "gpt-4.1-2025-04-14_single.jsonl"])  # and this process still writes


def test_a_writer_and_a_reader_wait_for_a_process_that_is_writing(tmp_path):
    """Another process is inside a write: the CLI's import and read say whom they wait for, wait, and go
    through once that write commits; nothing is lost on either side."""
    path = tmp_path / "held.duckdb"
    Store(path).close()
    holder = subprocess.Popen([sys.executable, "-c", HOLD_WRITE, str(path)], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        write = cli("ingest", str(GPT4O), "--db", str(path), env={"JUDGELENS_BUSY_WAIT": "600"})
        read = cli("sources", "--db", str(path), env={"JUDGELENS_BUSY_WAIT": "600"})
        for proc in (write, read):  # the first line each prints is that it waits, naming the holder
            line = proc.stderr.readline()
            assert line.startswith(f"Waiting for process {holder.pid} (a JudgeLens app or CLI) to finish with "
                                   f"{path} before this command can "), line
        holder.stdin.close()
        assert holder.wait(timeout=120) == 0
        out, err = write.communicate(timeout=300)
        assert write.returncode == 0, err
        assert "1 file(s) imported" in out
        out, err = read.communicate(timeout=300)
        assert read.returncode == 0, err
    finally:
        if holder.poll() is None:
            holder.stdin.close()
            holder.wait(timeout=30)
    with Store(path, read_only=True) as s, s.read() as cur:
        assert cur.execute("SELECT value FROM meta WHERE key = 'held'").fetchone() == ("yes",)
        assert cur.execute("SELECT count(*) FROM sources").fetchone()[0] == 1


def test_store_raises_database_busy_error_after_its_wait(tmp_path, monkeypatch):
    """Another process keeps writing: after JUDGELENS_BUSY_WAIT seconds (0 here) opening says who holds the file."""
    path = tmp_path / "held.duckdb"
    Store(path).close()
    monkeypatch.setenv("JUDGELENS_BUSY_WAIT", "0")
    holder = subprocess.Popen([sys.executable, "-c", HOLD_WRITE, str(path)], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        try:
            Store(path)
        except DatabaseBusyError as exc:
            err = exc
        else:
            raise AssertionError("Store() wrote to a file another process is writing")
        assert err.message == (
            f"The database {path} stayed in use by another JudgeLens app or CLI (process {holder.pid}) for 0 s (a "
            "long import or re-judge writes it for as long as it runs); nothing was changed here. Try again when it "
            "is done, wait longer (JUDGELENS_BUSY_WAIT=SECONDS), or use another file (--db FILE).")
        assert err.title == "The database file is in use by another process"
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    Store(path).close()  # free again once the other process is gone


def test_an_import_bounds_memory_only_while_it_writes(store, monkeypatch):
    from conftest import JA
    from lib.ingest import importer as ingest_module

    def limit():
        with store.read() as cur:
            return cur.execute("SELECT current_setting('memory_limit')").fetchone()[0]

    before = limit()
    with store.read() as cur:
        threads = int(cur.execute("SELECT current_setting('threads')").fetchone()[0])
    floor = duckdb.connect()  # a small file's import gets the floor of DuckDB's threads (lib.ingest.resources)
    floor.execute(f"SET memory_limit = '{memory_floor(threads) // 1_000_000}MB'")
    seen = []
    real_refresh = ingest_module.refresh_item_scores
    monkeypatch.setattr(ingest_module, "refresh_item_scores", lambda cur, b, **kw: (seen.append(limit()), real_refresh(cur, b, **kw)))
    ingest_module.ingest(store, [JA / "ja_mt_bench" / "question.jsonl"])
    assert seen and seen[0] != before
    assert seen[0] == floor.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    assert limit() == before


OLD_JUDGELENS_IMPORT = (  # what a JudgeLens from before issue 26 leaves: the file's source keyed by its sha256
    "import sys\n"
    "from lib.ingest.importer import ingest, sha256_of\n"
    "from lib.store import Store\n"
    "with Store(sys.argv[1]) as s:\n"
    "    (item,) = ingest(s, [sys.argv[2]]).imported\n"
    "    with s.write() as cur:\n"
    "        cur.execute('UPDATE sources SET sha256 = ? WHERE source_id = ?', [sha256_of(item.path)[0], item.source_id])\n"
    "    print(item.source_id)\n")


def test_a_file_an_older_judgelens_imported_meanwhile_lands_once(store):
    """Another process (standing in for a JudgeLens from before issue 26, which keys a file by its sha256) imports
    the same new file after this import read the sources table and before it writes: this import's re-check under
    the write lock finds that source by its sha256 (the file is inserted while its xxh3 is computed, so no sha256
    was known), takes its rows out again and reports the file unchanged."""
    other = []

    def progress(fraction, message):
        if not other:  # the sources table is read; nothing of this import is written yet
            proc = subprocess.run([sys.executable, "-c", OLD_JUDGELENS_IMPORT, str(store.path), str(GPT4O)], cwd=ROOT,
                                  capture_output=True, text=True, timeout=120)
            assert proc.returncode == 0, proc.stderr
            other.append(int(proc.stdout))

    report = ingest(store, [GPT4O], progress=progress)
    assert [(f.status, f.existing_source) for f in report.files] == [("unchanged", other[0])]
    with store.read() as cur:
        assert cur.execute("SELECT source_id, sha256 FROM sources").fetchall() == [
            (other[0], report.files[0].legacy_sha256)]
        assert cur.execute("SELECT count(*) FROM single_judgments").fetchone()[0] == 320
