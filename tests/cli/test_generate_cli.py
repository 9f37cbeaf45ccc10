"""``python -m lib.cli generate`` as a user runs it, in a real subprocess against the scripted model server
(tests/fake_model.py): the cost first and nothing sent without --yes; answers stored as a run of their own;
Ctrl-C keeps what arrived and the same command resumes without sending any request twice."""
from __future__ import annotations

import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import threading

import pytest
from fake_model import FakeModel

from conftest import CLI_WITH_CTRL_C, ROOT
from waiting import PipeLines, wait_for
from lib.generation.plan import request_key
from lib.store import Store

SW = "harness=swallow,model=hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b"
FC = "harness=fastchat,judge=gpt-4o,model=shisa-ai/shisa-v2-llama3.1-8b"


@pytest.fixture
def db(_sample_db, tmp_path):
    path = tmp_path / "generate.duckdb"
    shutil.copy(_sample_db, path)
    return path


def generate(db, server, *extra: str) -> subprocess.Popen:
    args = [sys.executable, "-c", CLI_WITH_CTRL_C, "generate", "--db", str(db), "--base-url", server.url,
            "--model", "shisa", *extra]
    return subprocess.Popen(args, cwd=ROOT, env=dict(os.environ), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def rows(db, sql, params=()):
    with Store(db) as s, s.read() as cur:
        return cur.execute(sql, list(params)).fetchall()


def test_cost_first_then_yes_stores_the_run(db):
    with FakeModel() as server:
        out, err = generate(db, server, "--run", SW, "--limit", "12").communicate(timeout=120)
        assert server.chat_requests() == []
        # q1-10 coding, q11-12 extraction: temperature 0, so 1 request per turn, samples 1-4 copied
        assert "cost: 24 request(s) (96 sample(s) are copies, no request), 0 answered already, 24 to send" in err
        assert "Nothing sent. Add --yes to send these 24 request(s)." in err
        assert "system_prompt: あなたは誠実で優秀な日本人のアシスタントです。 (files)" in err
        proc = generate(db, server, "--run", SW, "--limit", "12", "--yes", "--format", "json")
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert len(server.chat_requests()) == 24
    summary = json.loads(out)
    label = "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b [regen: swallow]"
    assert summary == {"label": label, "source_id": summary["source_id"], "setup": "swallow", "requests": 24,
                       "sent": 24, "cached": 0, "answers": 120, "failed": 0, "complete": True}
    assert rows(db, "SELECT count(*), count(DISTINCT text) FROM answers WHERE model = ?", [label]) == [(120, 24)]


def test_fastchat_without_system_prompt_is_refused(db):
    with FakeModel() as server:
        proc = generate(db, server, "--run", FC, "--yes")
        out, err = proc.communicate(timeout=120)
        assert server.chat_requests() == []
    assert proc.returncode == 2
    assert err.startswith("The system prompt of the run fastchat · ja_mt_bench · gpt-4o · "
                          "shisa-ai/shisa-v2-llama3.1-8b is unknown: FastChat answer files do not record it")


def test_ctrl_c_keeps_answers_and_the_same_command_resumes(db):
    gate, arrivals = threading.Event(), itertools.count()
    args = ("--run", FC, "--system-prompt", "", "--samples", "3", "--limit", "4", "--concurrency", "1", "--yes")
    with FakeModel() as server:
        answer = server.responder

        def responder(body):
            if next(arrivals) >= 5:
                gate.wait(60)      # the 6th request waits until the test has pressed Ctrl-C
            return answer(body)

        server.responder = responder
        proc = generate(db, server, *args)
        out_lines, err_lines = PipeLines(proc.stdout), PipeLines(proc.stderr)
        wait_for(lambda: len(server.chat_requests()) >= 6, timeout=120, what="5 answers and the 6th request held")
        proc.send_signal(signal.SIGINT)
        err_lines.wait_for_line("Cancelling:")   # printed once the run is told to send nothing new
        gate.set()
        proc.wait(timeout=120)
        out, err = out_lines.text(), err_lines.text()
        assert proc.returncode == 130, err
        assert "Interrupted: run the same command again to resume." in err
        first = len(server.chat_requests())
        assert first == 6
        assert rows(db, "SELECT count(*) FROM generations WHERE request_key IS NOT NULL") == [(6,)]
        proc = generate(db, server, *args)
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "cost: 24 request(s) (0 sample(s) are copies, no request), 6 answered already, 18 to send" in err
        keys = [request_key(server.url, b) for b in server.answer_requests()]
    assert len(keys) == len(set(keys)) == 24
    assert rows(db, "SELECT count(*) FROM answers WHERE model = ?",
                ["shisa-ai/shisa-v2-llama3.1-8b [regen: fastchat]"]) == [(24,)]
