"""``python -m lib.cli rejudge`` as a user runs it, in a real subprocess against the local fake judge:
a total deadline per request (a judge that drips), Ctrl-C (SIGINT) keeps what was paid for, and a run
where nothing succeeded says why and exits non-zero."""
from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest
from fake_openai import FakeOpenAI, Reply

from conftest import CLI_WITH_CTRL_C, ROOT
from waiting import PipeLines, wait_for
from lib.errors import JudgeAPIError
from lib.judging.client import call_judge, make_client
from lib.judging.config import JudgeConfig
from lib.store import Store

KEY = "sk-rejudge-cli-0123456789"
MSGS = [{"role": "user", "content": "Rate this answer."}]


@pytest.fixture
def db(_sample_db, tmp_path):
    path = tmp_path / "rejudge.duckdb"
    shutil.copy(_sample_db, path)
    return path




def rejudge(db, server, *extra: str) -> subprocess.Popen:
    args = [sys.executable, "-c", CLI_WITH_CTRL_C, "rejudge", "--db", str(db), "--template", "single-v1",
            "--bench", "mt_bench", "--model", "judge-x", "--base-url", server.url, *extra]
    return subprocess.Popen(args, cwd=ROOT, env=dict(os.environ, OPENAI_API_KEY=KEY), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float = 120) -> tuple[str, str]:
    """(stdout, stderr) of the finished command; a command still running after ``timeout`` s is killed and fails
    the test (a safety net for a hung run, not a speed check)."""
    try:
        return proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"the command did not end within {timeout} s: {err[-2000:]}")


def rows(db, sql, params=()):
    with Store(db) as s, s.read() as cur:
        return cur.execute(sql, list(params)).fetchall()


@pytest.mark.parametrize("headers_too", [False, True], ids=["body drips", "headers drip too"])
def test_a_judge_that_drips_one_byte_at_a_time_hits_the_total_deadline(store, headers_too):
    with FakeOpenAI() as server:
        url = server.url
        # a ~250-byte body at 5 bytes/s (and the status line and headers too): no single read ever times out
        server.queue(Reply.dripping(0.2, headers_too=headers_too))
        config = JudgeConfig(base_url=server.url, model="judge-x", timeout_s=1.5, max_retries=0)
        client = make_client(config, KEY)    # the SDK import is not part of the request
        t0 = time.perf_counter()
        with pytest.raises(JudgeAPIError) as exc:
            call_judge(store, config, MSGS, api_key=KEY, client=client)
        elapsed = time.perf_counter() - t0
    # Which limit ended it: the total deadline, as a timeout. Without it the drip is never a timeout (every
    # read gets a byte within 0.2 s): the whole answer arrives after ~50 s and the call succeeds. The deadline
    # is not shorter than asked (a lower bound; how much longer a loaded machine takes is not asserted).
    assert elapsed >= 1.5 and len(server.chat_requests()) == 1
    assert exc.value.message == (
        f"Judge call to {url} got no answer within 1.5 s (timeout). The limit is for the whole request, "
        "up to the last byte of the answer. Gave up after 1 attempt(s).")


def test_rejudge_against_a_dripping_judge_ends_and_says_why_nothing_succeeded(db):
    with FakeOpenAI() as server:
        server.responder = lambda body: Reply.dripping(1.0)
        url = server.url
        proc = rejudge(db, server, "--limit", "2", "--timeout", "2", "--max-retries", "0")
        out, err = finish(proc)        # without the deadline each answer would drip for ~4 minutes
    assert proc.returncode == 1, err
    assert (f"Nothing succeeded: every request failed: Judge call to {url} got no answer within 2 s "
            "(timeout). The limit is for the whole request, up to the last byte of the answer. Gave up after 1 "
            "attempt(s). (2 request(s))") in err
    assert "why 2 request(s) failed:" in out and "Traceback" not in err


def test_rejudge_where_every_request_fails_exits_1_with_the_distinct_reasons(db):
    with FakeOpenAI() as server:
        url = server.url
        calls = iter(range(1000))
        server.responder = lambda body: (Reply.error(400, "unsupported parameter: temperature") if next(calls) % 2
                                         else Reply.error(422, "context too long"))
        proc = rejudge(db, server, "--limit", "6", "--max-retries", "0")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 1, err
    line = next(x for x in err.splitlines() if x.startswith("Nothing succeeded"))
    prefix = f"Judge call to {url} failed: the server refused the request"
    assert line.startswith("Nothing succeeded: every request failed: " + prefix)
    assert f"{prefix} (400 Bad Request). Server says: unsupported parameter: temperature (3 request(s))" in line
    assert f"{prefix} (422 Unprocessable Entity). Server says: context too long (3 request(s))" in line
    assert "See it next to the other judges" not in out      # nothing new to see


def test_a_partly_failing_rejudge_still_exits_0(db):
    with FakeOpenAI() as server:
        server.queue(Reply.error(400, "bad one"))
        server.responder = lambda body: "Rating: [[6]]"
        proc = rejudge(db, server, "--limit", "3", "--max-retries", "0", "--concurrency", "1")
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "why the request failed:" in out and "1 x Judge call to" in out and "bad one" in out


def test_ctrl_c_during_rejudge_keeps_every_answer_already_paid_for(db):
    # The first 6 requests are answered; from the 7th on the judge holds its answer until the test has
    # sent Ctrl-C, so the batch cannot finish first however slow a loaded machine makes the test.
    gate, arrivals = threading.Event(), itertools.count()

    def responder(body):
        if next(arrivals) >= 6:
            gate.wait(60)
        return Reply("Rating: [[4]]", delay=0.4)

    with FakeOpenAI() as server:
        server.responder = responder
        proc = rejudge(db, server, "--limit", "40", "--concurrency", "2", "--max-retries", "0")
        out_lines, err_lines = PipeLines(proc.stdout), PipeLines(proc.stderr)
        wait_for(lambda: len(server.chat_requests()) >= 8, timeout=120, what="6 answers and 2 requests held")
        proc.send_signal(signal.SIGINT)
        err_lines.wait_for_line("Cancelling:")   # printed once the batch is told to stop taking requests
        gate.set()  # the requests in flight now answer; the cancelled batch sends no new ones
        proc.wait(timeout=120)
        out, err = out_lines.text(), err_lines.text()
        received = len(server.chat_requests())
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "KeyError" not in err
    assert "Cancelling: waiting for the requests in flight, then storing every verdict that arrived ..." in err
    (sid, n_source), = rows(db, "SELECT source_id, rows_imported FROM sources WHERE kind = 'rejudge'")
    n_rows = rows(db, "SELECT count(*) FROM single_judgments WHERE source_id = ?", [sid])[0][0]
    n_cache = rows(db, "SELECT count(*) FROM judge_cache")[0][0]
    assert n_source == n_rows                        # the source counts what is under it
    assert n_cache == received == n_rows == 8        # every answer the server sent was kept, and no new request
    assert (f"Interrupted: {n_rows} verdict(s) of this run are stored under 'judge-x+single-v1@v1'. Run the same "
            "command again to resume.") in err
    assert "cancelled: the verdicts that arrived are stored" in out
