"""The one way JudgeLens sends many judge calls: a pool of threads, a cap on concurrency, cancel, a
fatal-error stop, and a rate for the ETA. Re-judge batches (``lib.judging.batch``) and the probe suite
(``lib.probes.runner``) both send through ``Dispatcher``; the request cache (``lib.judging.cache``) is
looked up before (``cache.fetch``) and written as answers arrive (``cache.save``), by the caller, so what
was paid for is kept. One call is ``lib.judging.client.send`` (retries, deadline).

Usage::

    d = Dispatcher(config, api_key=key, concurrency=8, cancel=event)
    for outcome in d.run(jobs):        # jobs: objects with .messages and .request_hash (and .params: the
                                       # parameters sent when they are not the config's, e.g. a generation's)
        if outcome is None:            # a tick (nothing finished for TICK_S): flush, report progress
            continue
        outcome.job, outcome.result, outcome.error

``run`` yields outcomes in the calling thread as calls finish. It stops taking new jobs when ``cancel``
is set or a call fails fatally (bad key, no access, unknown model or URL: ``d.fatal``); requests already
in flight are waited for up to ``grace_s`` (their answers are yielded like any other) and then
abandoned (``d.abandoned`` counts them). Each request has a total deadline of ``config.timeout_s``
(``lib.judging.deadline``), so nothing in flight outlives its timeout.
"""
from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Iterable, Iterator

from lib.errors import JudgeAPIError
from lib.judging.calls import CallResult
from lib.judging.client import Cancelled, make_client, send
from lib.judging.config import JudgeConfig, redact

CANCEL_GRACE_S = 5.0   # after cancel, wait this long for requests already in flight
TICK_S = 0.1           # yield None this often while nothing finishes


@dataclass
class Outcome:
    job: object
    result: CallResult | None = None
    error: str | None = None                 # the message the user reads
    exception: JudgeAPIError | None = None   # when the error was a JudgeAPIError


class Dispatcher:
    def __init__(self, config: JudgeConfig, *, api_key: str | None = None, client=None, concurrency: int = 8,
                 cancel: threading.Event | None = None, grace_s: float = CANCEL_GRACE_S):
        self.config, self.api_key, self.client = config, api_key, client
        self.concurrency = max(1, int(concurrency))
        self.cancel = cancel if cancel is not None else threading.Event()
        self.grace_s = grace_s
        self.fatal: JudgeAPIError | None = None
        self.abandoned = 0
        self.sent = 0          # calls finished (answered or failed)
        self.total = 0
        self._started = None

    def eta(self) -> float | None:
        """Seconds left at the rate so far, or None before the first answer."""
        if not self.sent or self._started is None:
            return None
        rate = self.sent / max(1e-9, time.perf_counter() - self._started)
        return (self.total - self.sent) / rate

    def run(self, jobs: Iterable) -> Iterator[Outcome | None]:
        jobs = list(jobs)
        self.total = len(jobs)
        if not jobs:
            return
        if self.client is None:
            self.client = make_client(self.config, self.api_key)
        work: queue.Queue = queue.Queue()
        for j in jobs:
            work.put(j)
        results: queue.Queue = queue.Queue()
        stop = threading.Event()   # a fatal error, or the caller stopped reading (an exception, Ctrl-C)
        in_flight = [0]
        lock = threading.Lock()
        config, api_key, client, cancel = self.config, self.api_key, self.client, self.cancel

        def worker():
            while not cancel.is_set() and not stop.is_set():
                try:
                    job = work.get_nowait()
                except queue.Empty:
                    return
                with lock:
                    in_flight[0] += 1
                try:
                    out = Outcome(job, result=send(client, config, job.messages, api_key, cancel, job.request_hash,
                                                    getattr(job, "params", None)))
                except Cancelled:
                    out = None
                except JudgeAPIError as exc:
                    out = Outcome(job, error=exc.message, exception=exc)
                    if exc.fatal:
                        stop.set()
                except Exception as exc:  # keep the run alive; the job reports it
                    out = Outcome(job, error=redact(f"{type(exc).__name__}: {exc}", api_key))
                finally:
                    with lock:
                        in_flight[0] -= 1
                if out is not None:
                    results.put(out)

        threads = [threading.Thread(target=worker, name=f"judgelens-judge-{i}", daemon=True)
                   for i in range(min(self.concurrency, len(jobs)))]
        self._started = time.perf_counter()
        for t in threads:
            t.start()
        try:
            yield from self._collect(threads, results, stop, in_flight, lock)
        finally:  # also when the caller stops early: the workers take no new job
            stop.set()

    def _collect(self, threads, results, stop, in_flight, lock) -> Iterator[Outcome | None]:
        cancel, stopping_at = self.cancel, None
        while True:
            if not any(t.is_alive() for t in threads) and results.empty():
                break
            if (cancel.is_set() or self.fatal is not None) and stopping_at is None:
                stopping_at = time.perf_counter()
            if stopping_at is not None and time.perf_counter() - stopping_at > self.grace_s:
                with lock:
                    self.abandoned = in_flight[0]
                break  # requests still in flight are abandoned (their deadline ends them)
            try:
                out = results.get(timeout=TICK_S)
            except queue.Empty:
                yield None
                continue
            self.sent += 1
            if out.exception is not None and out.exception.fatal and self.fatal is None:
                self.fatal = out.exception
            yield out
