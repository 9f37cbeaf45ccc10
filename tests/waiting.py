"""Waiting in tests without guessing how long things take: wait for a condition (with a generous timeout
that only a hung test reaches), for a line on a child's pipe, or for worker threads to end. Never sleep a
fixed time and then count."""
from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def wait_for(condition: Callable[[], T], timeout: float = 60, what: str = "the condition",
             interval: float = 0.02) -> T:
    """Poll ``condition()`` until it returns something true (returned); AssertionError after ``timeout`` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout:g} s for {what}")
        time.sleep(interval)


class PipeLines:
    """Read a child process's text pipe on a thread: ``wait_for_line(text)`` until a line containing ``text``
    arrives, ``text()`` everything read (after ``close()`` or the child's exit, all of it)."""

    def __init__(self, stream):
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._pump, args=(stream,), name="test-pipe-reader", daemon=True)
        self._thread.start()

    def _pump(self, stream) -> None:
        for line in stream:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()

    def wait_for_line(self, needle: str, timeout: float = 60) -> str:
        with self._changed:
            found = self._changed.wait_for(lambda: next((x for x in self.lines if needle in x), None), timeout)
        if found is None:
            raise AssertionError(f"waited {timeout:g} s for a line with {needle!r}; got {''.join(self.lines)[-2000:]!r}")
        return found

    def text(self, timeout: float = 60) -> str:
        """Everything the pipe carried, once it is closed (the child exited)."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the pipe was not closed"
        return "".join(self.lines)


def threads_named(prefix: str, exclude: Iterable[threading.Thread] = ()) -> list[threading.Thread]:
    """Live threads whose name starts with ``prefix`` (those in ``exclude`` left out)."""
    skip = set(exclude)
    return [t for t in threading.enumerate() if t.name.startswith(prefix) and t not in skip]


def join_threads_named(prefix: str, exclude: Iterable[threading.Thread] = (), timeout: float = 60) -> None:
    """Wait until every live thread named ``prefix…`` (but those in ``exclude``) has ended."""
    deadline = time.monotonic() + timeout
    for t in threads_named(prefix, exclude):
        t.join(max(0.0, deadline - time.monotonic()))
    left = threads_named(prefix, exclude)
    assert not left, f"threads still running after {timeout:g} s: {[t.name for t in left]}"
