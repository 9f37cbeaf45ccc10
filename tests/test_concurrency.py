"""One Store shared by threads (the Streamlit server), and a second process on the same file."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
import time

from conftest import JA, ROOT

from lib.analysis import queries
from lib.errors import DatabaseBusyError
from lib.ingest.importer import ingest
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


HOLD = ("import sys, time\n"
        "from lib.store import Store\n"
        "s = Store(sys.argv[1])\n"
        "print('holding', flush=True)\n"
        "sys.stdin.read()\n")


def test_second_process_gets_a_clear_message(store):
    """This process holds the file: the CLI in another process exits 3 with a message, no traceback."""
    proc = subprocess.run([sys.executable, "-m", "lib.cli", "sources", "--db", str(store.path)], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 3
    assert proc.stdout == ""
    assert "Traceback" not in proc.stderr
    message = proc.stderr.strip()
    assert message.startswith(f"The database {store.path} is open in another JudgeLens app or CLI (process ")
    assert message.endswith("DuckDB lets only one process use a database file at a time. Close the other process "
                            "and try again, or use another file (--db FILE, or the JUDGELENS_DB environment variable).")


def test_store_raises_database_busy_error(tmp_path):
    """The other way round: another process holds the file and this one opens a Store."""
    path = tmp_path / "held.duckdb"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], cwd=ROOT, stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "holding"
        try:
            Store(path)
        except DatabaseBusyError as exc:
            err = exc
        else:
            raise AssertionError("Store() opened a file another process holds")
        assert f"(process {holder.pid})" in err.message
        assert "Close the other process and try again" in err.message
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
    seen = []
    real_refresh = ingest_module.refresh_item_scores
    monkeypatch.setattr(ingest_module, "refresh_item_scores", lambda cur, b, **kw: (seen.append(limit()), real_refresh(cur, b, **kw)))
    ingest_module.ingest(store, [JA / "ja_mt_bench" / "question.jsonl"])
    assert seen and seen[0] != before and seen[0].replace(" ", "").upper().startswith("95")  # 1 GB = 953.6 MiB
    assert limit() == before
