"""Issue 27, items 4-5: two re-judge batches with one label at once never pay twice nor store two verdicts for an
item. Real processes (the CLI) on one DuckLake store (SQLite and PostgreSQL catalogs), and two Workbench-like threads
on one DuckDB file, against the local scripted judge server; requests are counted at the server."""
from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

import pytest
from fake_openai import FakeOpenAI, Reply
from waiting import wait_for

from conftest import EN, ROOT, lake_target
from lib.keys import ItemKey
from lib.errors import BatchRunningError
from lib.ingest.importer import ingest
from lib.judging.batch import RejudgeBatch
from lib.judging.config import JudgeConfig
from lib.judging.context import select_items
from lib.judging.templates import get_template
from lib.store import Store

KEY = "sk-concurrent-0123456789"
LABEL = "judge-x+single-v1@v1"


def running_message(pid: int) -> str:
    """The exact message, as a regular expression: only the seconds since the holder started vary."""
    head = f"Another batch with this label is running: {LABEL!r} (process {pid} on {socket.gethostname()}, started "
    tail = (" s ago). Nothing was sent. When it has finished, run this batch again: it resumes from that batch's "
            "verdicts and pays only for what is still missing.")
    return re.escape(head) + r"\d+" + re.escape(tail)


def rejudge(env: dict, server, *extra: str) -> subprocess.Popen:
    child = {**os.environ, **env, "OPENAI_API_KEY": KEY, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen([sys.executable, "-m", "lib.cli", "rejudge", "--template", "single-v1", "--bench",
                             "mt_bench", "--model", "judge-x", "--base-url", server.url, "--limit", "6",
                             "--max-retries", "0", *extra], cwd=ROOT, env=child, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def verdict_counts(store: Store) -> tuple[int, int, int]:
    with store.read() as cur:
        sources = cur.execute("SELECT count(*) FROM sources WHERE kind = 'rejudge'").fetchone()[0]
        rows, items = cur.execute(
            "SELECT count(*), count(DISTINCT (bench, question_id, turn, model, sample)) FROM single_judgments "
            "WHERE judge = ?", [LABEL]).fetchone()
    return sources, rows, items


@pytest.fixture(params=["sqlite", "postgres"])
def lake_env(request, tmp_path):
    target, data = lake_target(request.param, tmp_path, request)
    with Store(target, data_path=data) as store:
        ingest(store, [EN])
    return {"JUDGELENS_STORE": target, "JUDGELENS_DATA_PATH": str(data), "JUDGELENS_DB": str(tmp_path / "no.duckdb")}


def test_two_cli_batches_with_one_label_on_a_lake_share_one_source_and_pay_once(lake_env):
    # The first batch's requests are held at the judge until the second process has ended, so the two overlap
    # however the machine schedules them.
    gate = threading.Event()

    def responder(body):
        gate.wait(120)
        return Reply("Rating: [[4]]")

    with FakeOpenAI() as server:
        server.responder = responder
        first = rejudge(lake_env, server)
        wait_for(lambda: server.chat_requests() or first.poll() is not None, timeout=180,
                 what="the first batch's first request")
        assert server.chat_requests(), first.communicate()
        second = rejudge(lake_env, server)
        out2, err2 = second.communicate(timeout=180)
        gate.set()
        out1, err1 = first.communicate(timeout=180)
        sent = len(server.chat_requests())
        # run again once the first has finished: it resumes, nothing is sent or stored twice
        again = rejudge(lake_env, server)
        out3, err3 = again.communicate(timeout=180)
        assert again.returncode == 0, err3
        assert len(server.chat_requests()) == 6
    assert first.returncode == 0, err1
    assert second.returncode == 3, err2
    assert re.fullmatch(running_message(first.pid), err2.splitlines()[-1]), err2
    assert "Traceback" not in err2 and "Constraint" not in err2
    assert sent == 6  # the second batch sent nothing
    assert "6 item(s), 6 already done" in out3
    with Store(lake_env["JUDGELENS_STORE"], data_path=lake_env["JUDGELENS_DATA_PATH"]) as store:
        assert verdict_counts(store) == (1, 6, 6)


def test_two_cli_batches_started_together_never_duplicate(lake_env):
    with FakeOpenAI() as server:
        server.default = "Rating: [[6]]"
        procs = [rejudge(lake_env, server), rejudge(lake_env, server)]
        results = [p.communicate(timeout=300) for p in procs]
        sent = len(server.chat_requests())
    codes = sorted(p.returncode for p in procs)
    # either the second was refused while the first ran, or it started after the first had finished (resumed)
    assert codes in ([0, 0], [0, 3]), results
    for p, (out, err) in zip(procs, results):
        assert "Traceback" not in err and "Constraint" not in err
        if p.returncode == 3:
            assert re.fullmatch(running_message(procs[1 - procs.index(p)].pid), err.splitlines()[-1]), err
    assert sent == 6
    with Store(lake_env["JUDGELENS_STORE"], data_path=lake_env["JUDGELENS_DATA_PATH"]) as store:
        assert verdict_counts(store) == (1, 6, 6)


def test_two_workbench_batches_on_one_file_do_not_pay_twice(_sample_db, tmp_path):
    """Two browser tabs share the server process and its Store: two threads, one Store."""
    db = tmp_path / "tabs.duckdb"
    shutil.copy(_sample_db, db)
    gate = threading.Event()

    def responder(body):
        gate.wait(120)
        return Reply("Rating: [[7]]")

    with FakeOpenAI() as server, Store(db) as store:
        server.responder = responder
        config = JudgeConfig(base_url=server.url, model="judge-x", max_retries=0)
        template = get_template(store, "single-v1")
        items = select_items(store, bench="mt_bench", limit=6)
        assert len(items) == 6 and all(isinstance(i, ItemKey) for i in items)
        tab1 = RejudgeBatch(store, template, config, items)
        tab2 = RejudgeBatch(store, template, config, items)
        tab1.prepare()
        tab2.prepare()  # both estimated before either runs, as two tabs can
        box = {}
        worker = threading.Thread(target=lambda: box.setdefault("s", tab1.run(api_key=KEY, concurrency=2)))
        worker.start()
        wait_for(server.chat_requests, timeout=120, what="the first tab's first request")
        with pytest.raises(BatchRunningError) as caught:
            tab2.run(api_key=KEY, concurrency=2)
        gate.set()
        worker.join(120)
        assert caught.value.title == "Another batch with this label is running"
        assert re.fullmatch(running_message(os.getpid()), caught.value.message)
        assert box["s"].written == 6
        assert len(server.chat_requests()) == 6
        assert verdict_counts(store) == (1, 6, 6)
        # the second tab, run again after the first finished: everything done, nothing sent
        summary = tab2.run(api_key=KEY, concurrency=2)
        assert (summary.skipped_done, summary.calls, summary.written) == (6, 0, 0)
        assert len(server.chat_requests()) == 6
        assert verdict_counts(store) == (1, 6, 6)


def test_a_dead_holders_claim_is_taken_over(store):
    """A batch killed with its claim held (kill -9) does not block the label for ever."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    with store.write() as cur:
        cur.execute("INSERT INTO work_claims VALUES ('rejudge:x', 'h:1:t', ?, ?, ?, 'old')",
                    [socket.gethostname(), pid, time.time()])
    token, holder = store.claim("rejudge:x")
    assert token and holder is None
    again, holder = store.claim("rejudge:x")
    assert again is None and holder["pid"] == os.getpid()
    store.release("rejudge:x", token)
    token, _ = store.claim("rejudge:x")
    assert token
