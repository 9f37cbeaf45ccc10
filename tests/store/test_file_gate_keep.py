"""An idle read-only connection to the DuckDB file is kept (DuckDB's caches with it) until a JudgeLens writer in
another process waits for the file (``lib.store.files``: IDLE_KEEP_S, ``writer_waiting``); then it closes and the
writer gets in."""
from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from lib.store import Store
from lib.store import files
from conftest import ROOT


def _idle(gate) -> None:
    """As if nothing had used the gate for a second (past IDLE_CLOSE_S, before IDLE_KEEP_S)."""
    gate.last_used = time.monotonic() - 2 * files.IDLE_CLOSE_S


def test_an_idle_reader_keeps_its_connection_until_a_writer_waits(tmp_path):
    path = tmp_path / "jl.duckdb"
    Store(path).close()  # the schema
    store = Store(path, read_only=True)
    with store.read() as cur:
        cur.execute("SELECT count(*) FROM sources").fetchall()
    gate = store._gate
    con = gate.con
    _idle(gate)
    gate._close_if_idle()
    assert gate.con is con                           # nobody waits: kept, with DuckDB's buffer cache
    files.writer_mark(path).touch()                  # a writer in another process waits
    assert files.writer_waiting(path)
    _idle(gate)
    gate._close_if_idle()
    assert gate.con is None                          # closed for it
    files.writer_mark(path).unlink()
    with store.read() as cur:                        # the next read opens it again
        assert cur.execute("SELECT count(*) FROM sources").fetchone() == (0,)
    gate.last_used = time.monotonic() - files.IDLE_KEEP_S - 1
    gate._close_if_idle()
    assert gate.con is None                          # idle past IDLE_KEEP_S: closed whoever waits
    store.close()


def test_a_stale_marker_is_no_waiting_writer(tmp_path):
    import os

    path = tmp_path / "jl.duckdb"
    mark = files.writer_mark(path)
    assert not files.writer_waiting(path)
    mark.touch()
    old = time.time() - files.WRITER_MARK_FRESH_S - 1
    os.utime(mark, (old, old))                       # a writer that died waiting
    assert not files.writer_waiting(path)


def test_a_writer_gets_in_beside_a_reader_process_that_keeps_the_file_open(tmp_path):
    """Another process reads, then idles with its connection open; this process writes: it waits, says so in the
    marker, the reader closes, the write goes through; the marker is gone after."""
    path = tmp_path / "jl.duckdb"
    Store(path).close()
    reader = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import sys
            sys.path.insert(0, {str(ROOT)!r})
            from lib.store import Store
            store = Store({str(path)!r}, read_only=True)
            with store.read() as cur:
                print(cur.execute("SELECT count(*) FROM sources").fetchone()[0], flush=True)
            sys.stdin.readline()          # idle, connection kept, until the test has written
            with store.read() as cur:
                print(cur.execute("SELECT count(*) FROM sources").fetchone()[0], flush=True)
            """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == "0"
        with Store(path) as writer, writer.write() as cur:
            cur.execute("INSERT INTO sources (sha256, path, file_name, harness, kind, bench, bytes, rows_imported) "
                        "VALUES ('x', 'x', 'x', 'fastchat', 'single_judgments', 'b', 0, 0)")
        assert not files.writer_mark(path).exists()
        reader.stdin.write("\n")
        reader.stdin.flush()
        assert reader.stdout.readline().strip() == "1"     # the reader opens it again and sees the write
    finally:
        reader.stdin.close()
        reader.wait(timeout=120)
    assert reader.returncode == 0
