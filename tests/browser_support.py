"""Helpers for real-browser tests: run the app in a subprocess, drive it with Playwright + Debian Chromium.

Reusable by any browser test (the fixtures in ``conftest.py`` wrap them):

- ``free_port()``: a TCP port nothing listens on right now.
- ``running_app(db_path)``: context manager; starts ``streamlit run app.py`` on a free port with
  ``JUDGELENS_DB=db_path``, waits for ``/_stcore/health`` to say ``ok``, yields the base URL, and stops
  the server (terminate, then kill) on exit. If the server dies or never gets healthy, the error
  carries its stdout and stderr.
- ``launch_chromium(playwright)``: Playwright's sync-API Chromium, using the Debian build at
  ``/usr/bin/chromium`` (``playwright install`` downloads are blocked here).
- ``wait_for_app(page)``: wait until Streamlit has finished running the script (no "running" widget).
- ``watch_runs(page)`` then ``wait_idle(page, after)``: wait until a script run that finished after ``after``
  runs (``page.finished_runs`` before an action) is on screen: robust for runs too fast for the DOM's
  "running" state to show, and for pages whose elements are still streaming in.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
START_TIMEOUT = 60.0  # seconds until /_stcore/health answers ok


def free_port() -> int:
    with closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _output(log) -> str:
    log.flush()
    log.seek(0)
    return log.read().decode("utf-8", "replace")[-8000:]


def _wait_until_healthy(proc: subprocess.Popen, url: str, out, err, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    last = "no answer yet"
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"streamlit exited with code {proc.returncode} before it was healthy.\n"
                               f"--- stdout ---\n{_output(out)}\n--- stderr ---\n{_output(err)}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                body = resp.read().decode().strip()
                if resp.status == 200 and body == "ok":
                    return
                last = f"HTTP {resp.status}: {body[:200]}"
        except (urllib.error.URLError, OSError) as exc:
            last = str(exc)
        time.sleep(0.2)
    raise RuntimeError(f"streamlit did not answer ok on {url} within {timeout:.0f} s ({last}).\n"
                       f"--- stdout ---\n{_output(out)}\n--- stderr ---\n{_output(err)}")


@contextmanager
def running_app(db_path: str | os.PathLike, env: dict[str, str] | None = None,
                timeout: float = START_TIMEOUT, script: str | os.PathLike = "app.py") -> Iterator[str]:
    """Run ``app.py`` (or another Streamlit ``script``, e.g. a benchmark's hello-world page) on a free
    loopback port against ``db_path``; yield ``http://127.0.0.1:PORT``."""
    port = free_port()
    child_env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    child_env.update({"JUDGELENS_DB": str(db_path), "PYTHONUNBUFFERED": "1"}, **(env or {}))
    cmd = [sys.executable, "-m", "streamlit", "run", str(script), "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    # Temp files, not pipes: a chatty server can never block on a full pipe buffer.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=child_env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        try:
            _wait_until_healthy(proc, f"http://127.0.0.1:{port}/_stcore/health", out, err, timeout)
            yield f"http://127.0.0.1:{port}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)


def launch_chromium(playwright, **kwargs):
    """Headless Debian Chromium through Playwright's sync API (extra kwargs go to ``launch``)."""
    return playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True, **kwargs)


def wait_for_app(page, timeout: float = 60_000) -> None:
    """Wait until the app is mounted and Streamlit's script run has finished."""
    page.wait_for_selector('[data-testid="stApp"]', timeout=timeout)
    page.wait_for_function(
        """() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return app && app.getAttribute('data-test-script-state') === 'notRunning';
        }""",
        timeout=timeout,
    )


# Wait until Streamlit is idle: a script run that started after the action has finished (the server's
# script_finished message, read off the page's websocket: a fast run can start and end between two frames, so
# the DOM's "running" state alone would miss it), the app says notRunning, and no element is stale or still
# loading its component.
IDLE = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  if (!app || app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelector('[data-stale="true"]')) return false;
  if (document.querySelector('[data-testid="stSkeleton"]')) return false;
  return !!document.querySelector('[data-testid="stMain"] h1');
}"""
FINISHED = {"FINISHED_SUCCESSFULLY", "FINISHED_WITH_COMPILE_ERROR", "FINISHED_FRAGMENT_RUN_SUCCESSFULLY"}


def watch_runs(page) -> None:
    """Count the script runs the server reports finished to this page (``page.finished_runs``)."""
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    page.finished_runs = 0

    def on_frame(payload) -> None:
        if isinstance(payload, str):
            return
        try:
            msg = ForwardMsg.FromString(payload)
        except Exception:
            return
        if msg.WhichOneof("type") == "script_finished" and \
                ForwardMsg.ScriptFinishedStatus.Name(msg.script_finished) in FINISHED:
            page.finished_runs += 1

    page.on("websocket", lambda ws: ws.on("framereceived", on_frame))


def wait_idle(page, after: int, timeout_ms: float) -> None:
    """Until a run after ``after`` finished and the page shows its result (polls every 20 ms)."""
    deadline = time.perf_counter() + timeout_ms / 1000
    while time.perf_counter() < deadline:
        if page.finished_runs > after and page.evaluate(IDLE):
            return
        page.wait_for_timeout(20)  # lets Playwright deliver the websocket events
    raise TimeoutError(f"not idle after {timeout_ms / 1000:.0f} s (runs finished: {page.finished_runs})")
