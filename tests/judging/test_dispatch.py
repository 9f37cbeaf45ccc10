"""The one dispatcher for judge calls (lib/judging/dispatch.py): re-judge batches and probes send through it."""
from __future__ import annotations

import re
import threading
from functools import partial
from pathlib import Path

from fake_openai import FakeOpenAI, Reply

from conftest import judge_config
from lib.errors import JudgeAPIError
from lib.judging.calls import CallResult, CallStats
from lib.judging.dispatch import Dispatcher
from lib.judging.jobs import BackgroundJob
from waiting import join_threads_named, threads_named

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-dispatch-0123456789"
WORKERS = "judgelens-judge-"   # the dispatcher's worker threads are named so


class Job:
    def __init__(self, i: int):
        self.messages = [{"role": "user", "content": f"item {i}"}]
        self.request_hash = str(i)


config = partial(judge_config, max_retries=0)   # the shared judge config, no retries


def test_every_job_comes_back_once_with_its_answer_or_its_reason():
    with FakeOpenAI() as server:
        server.responder = lambda body: (Reply.error(400, "bad item") if body["messages"][0]["content"] == "item 3"
                                         else "Rating: [[7]]")
        d = Dispatcher(config(server), api_key=KEY, concurrency=4)
        outs = [o for o in d.run([Job(i) for i in range(12)]) if o is not None]
    assert sorted(o.job.request_hash for o in outs) == sorted(str(i) for i in range(12))
    failed = [o for o in outs if o.error]
    assert [o.job.request_hash for o in failed] == ["3"] and "Server says: bad item" in failed[0].error
    assert all(o.result.text == "Rating: [[7]]" for o in outs if not o.error) and d.sent == 12 and d.fatal is None


def test_cancel_stops_taking_jobs_and_waits_for_those_in_flight():
    with FakeOpenAI(latency=0.3) as server:
        cancel = threading.Event()
        d = Dispatcher(config(server), api_key=KEY, concurrency=2, cancel=cancel)
        outs = []
        for o in d.run([Job(i) for i in range(30)]):
            if o is not None:
                outs.append(o)
                cancel.set()
        sent = len(server.chat_requests())
    assert 1 <= len(outs) < 30 and sent == len(outs) and d.abandoned == 0   # nothing paid for is dropped


def test_a_fatal_error_stops_the_run():
    with FakeOpenAI() as server:
        server.responder = lambda body: Reply.error(401, "bad key")
        d = Dispatcher(config(server), api_key=KEY, concurrency=1)
        outs = [o for o in d.run([Job(i) for i in range(10)]) if o is not None]
    assert len(outs) == 1 and d.fatal is not None and "API key was refused" in d.fatal.message


def test_a_caller_that_stops_reading_stops_the_workers():
    before = threads_named(WORKERS)
    with FakeOpenAI(latency=0.2) as server:
        d = Dispatcher(config(server), api_key=KEY, concurrency=2)
        run = d.run([Job(i) for i in range(40)])
        first = next(o for o in run if o is not None)
        run.close()                                   # e.g. an exception or Ctrl-C in the caller
        join_threads_named(WORKERS, exclude=before)   # the workers end (had they gone on: after all 40 jobs)
        sent = len(server.chat_requests())
    assert first.result is not None and sent <= 4     # the answered one, and at most one more per worker


def test_batches_and_probes_share_the_dispatcher_and_no_other_thread_pool():
    lib = ROOT / "lib"
    # the sandbox's pipe reader is not a judge call; jobs.py runs one whole batch on one thread (it sends
    # through the dispatcher like any caller)
    callers = [p for p in [*(lib / "judging").glob("*.py"), *(lib / "probes").glob("*.py")]
               if p.name not in ("sandbox.py", "jobs.py")]
    pools = [str(p.relative_to(ROOT)) for p in callers
             if re.search(r"ThreadPoolExecutor|threading\.Thread\(", p.read_text(encoding="utf-8"))]
    assert pools == ["lib/judging/dispatch.py"]
    jobs = (lib / "judging" / "jobs.py").read_text(encoding="utf-8")
    assert jobs.count("threading.Thread(") == 1 and "ThreadPoolExecutor" not in jobs
    for module in ("judging/batch.py", "probes/runner.py"):
        assert "Dispatcher(" in (lib / module).read_text(encoding="utf-8")


def test_a_background_job_reports_progress_stops_on_cancel_and_hands_back_its_outcome():
    seen, started = [], threading.Event()

    def work(progress, cancel):
        progress(1, 3, None)
        started.set()
        cancel.wait(60)            # the work runs until it is cancelled (as a batch stops taking requests)
        progress(2, 3, 0.0)
        return "summary" if cancel.is_set() else "not cancelled"

    job = BackgroundJob(work, on_progress=lambda *v: seen.append(v)).start()
    assert started.wait(60) and not job.done and job.progress == (1, 3, None)
    job.cancel.set()
    assert job.wait(60) and job.done
    assert job.outcome() == "summary" and job.progress == (2, 3, 0.0) and seen == [(1, 3, None), (2, 3, 0.0)]


def test_a_background_job_that_fails_raises_its_error_to_the_reader():
    def work(progress, cancel):
        raise JudgeAPIError("the judge said no")

    job = BackgroundJob(work).start()
    assert job.wait(60) and isinstance(job.error, JudgeAPIError)
    try:
        job.outcome()
    except JudgeAPIError as exc:
        assert exc.message == "the judge said no"
    else:
        raise AssertionError("outcome() did not raise the work's error")


def test_one_call_accounting_for_batches_and_probe_runs():
    """BatchSummary and ProbeRun count calls with the same CallStats fields and rate."""
    from lib.judging.batch import BatchSummary
    from lib.probes.spec import ProbeRun

    batch = BatchSummary("l", "t@v1", 1, None, "single", 4, calls=4, elapsed_s=2.0)
    probe = ProbeRun(template="t@v1", template_id=1, template_name="t", model="m", base_url="http://x", params={},
                     results=[], outcomes=[], calls=4, elapsed_s=2.0)
    for stats in (batch, probe):
        assert isinstance(stats, CallStats) and stats.requests_per_s == 2.0
        stats.add_answer(CallResult("ok", "h", False, prompt_tokens=10, completion_tokens=3))
        assert (stats.prompt_tokens, stats.completion_tokens) == (10, 3)
