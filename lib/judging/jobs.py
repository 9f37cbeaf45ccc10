"""A run of many calls in the background: start it on a thread, read its progress, cancel it, wait for it.

The command line (``rejudge``: Ctrl-C cancels) and the Workbench page (a Cancel button, a progress bar
redrawn every second) both run a re-judge batch this way; anything that sends through the dispatcher and
takes ``progress`` and ``cancel`` (``RejudgeBatch.run``, ``run_probes``) can::

    job = BackgroundJob(lambda progress, cancel: batch.run(progress=progress, cancel=cancel, ...)).start()
    job.progress          # the last (done, total, ...) the work reported
    job.cancel.set()      # the work stops taking new requests and keeps what arrived
    job.wait_interruptibly(on_interrupt)   # in a terminal: Ctrl-C cancels, then the job is waited for
    job.outcome()         # the work's return value, or its exception raised again
"""
from __future__ import annotations

import threading
import time
from typing import Callable


class BackgroundJob:
    def __init__(self, work: Callable[[Callable, threading.Event], object], *, name: str = "judgelens-job",
                 progress: tuple = (0, 0, None), on_progress: Callable | None = None):
        """``work(progress, cancel)`` runs on a daemon thread; it calls ``progress(*values)`` as it goes (kept in
        ``self.progress`` and passed on to ``on_progress``, from the work's thread) and stops when ``cancel`` is
        set."""
        self.work, self.name, self.on_progress = work, name, on_progress
        self.progress = progress
        self.cancel = threading.Event()
        self.finished = threading.Event()
        self.result = None
        self.error: BaseException | None = None
        self.started_at: float | None = None

    def start(self) -> "BackgroundJob":
        self.started_at = time.time()
        threading.Thread(target=self._run, name=self.name, daemon=True).start()
        return self

    def _report(self, *values) -> None:
        self.progress = values
        if self.on_progress is not None:
            self.on_progress(*values)

    def _run(self) -> None:
        try:
            self.result = self.work(self._report, self.cancel)
        except BaseException as exc:  # handed to whoever reads the outcome; the work keeps what it wrote
            self.error = exc
        finally:
            self.finished.set()

    @property
    def done(self) -> bool:
        return self.finished.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the work has finished (or ``timeout`` seconds); whether it has."""
        return self.finished.wait(timeout)

    def wait_interruptibly(self, on_interrupt: Callable[[], None] | None = None) -> bool:
        """Wait for the work; Ctrl-C (KeyboardInterrupt) cancels it and the wait goes on until the work has
        stored what arrived. ``on_interrupt`` is called at the first Ctrl-C. Returns whether it was interrupted.

        The wait is on an Event, not Thread.join: a join interrupted by Ctrl-C may return at once afterwards
        (CPython 3.11), and the process would then exit while the work is still writing."""
        interrupted = False
        while not self.finished.is_set():
            try:
                self.finished.wait(0.2)
            except KeyboardInterrupt:
                self.cancel.set()      # first: whoever reads what on_interrupt prints knows the work was told
                if not interrupted and on_interrupt is not None:
                    on_interrupt()
                interrupted = True
        return interrupted

    def outcome(self):
        """The work's return value; its exception raised again if it failed. Call once it is done."""
        if self.error is not None:
            raise self.error
        return self.result
