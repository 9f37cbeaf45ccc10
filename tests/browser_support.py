"""Helpers for real-browser tests: run the app in a subprocess, drive it with Playwright + Debian Chromium.

Reusable by any browser test (the fixtures in ``conftest.py`` wrap them):

- ``free_port()``: a TCP port nothing listens on right now.
- ``running_app(db_path)``: context manager; starts the app as ``scripts/run-app.sh`` does
  (``scripts/serve.py``: ``streamlit run app.py`` after warming the imports) on a free port with
  ``JUDGELENS_DB=db_path``, waits for ``/_stcore/health`` to say ``ok``, yields the base URL, and stops
  the server (terminate, then kill) on exit. If the server dies or never gets healthy, the error
  carries its stdout and stderr.
- ``launch_chromium(playwright)``: Playwright's sync-API Chromium, using the Debian build at
  ``/usr/bin/chromium`` (``playwright install`` downloads are blocked here).
- ``new_context(browser)``: a fresh context whose tabs all get the run watcher below (the benchmark opens
  many tabs in one context); ``new_page(browser)``: one tab in its own such context, generous timeouts.
- ``open_app(page, url)``: ``goto`` and wait until the new session's first script run has finished on the
  server and the page is idle (the same condition as ``wait_for_rerun``).
- ``wait_for_app(page)``: wait until the app is idle: script state ``notRunning``, websocket connected,
  no stale element (``data-stale="true"``) and no lazy component still showing its skeleton.
- ``open_expander(page, label)``: open a lazy expander (a rerun) and wait until its content is drawn.
- ``wait_for_rerun(page, action)``: do ``action`` (a click, Enter, ...) and wait until the script run it
  triggered has STARTED and then finished (on the server) and the page is idle again. Waiting only for ``notRunning``
  right after an action is the classic race: the rerun request is still in flight, the old page reads as
  idle, and the test reads values that are about to change.
- ``click_and_wait(locator)``: click the fresh copy of ``locator`` and ``wait_for_rerun``.
- ``fresh(locator)``: ``locator`` minus elements Streamlit has marked stale. During a rerun, an element whose
  position changed exists twice (the stale old copy and the new one); strict mode then fails on "2 elements".

Why idle is more than ``notRunning``: Streamlit loads some widgets (multiselect, data grid, ...) lazily and
shows a ``stSkeleton`` until their code has arrived, which can be seconds after the run finished on a busy
machine; their contents are not in the DOM before that.

How a run is detected: ``RUN_WATCH_JS`` (installed as an init script by ``new_page``) counts the server's
messages on the app's websocket: ``newSession`` opens every script run and ``scriptFinished`` closes it.
The page's own ``data-test-script-state`` is not enough: React can draw a short run's start and end in one
commit, so waiting for the attribute to turn "running" can miss a run and wait forever. A timeout says
what the page looked like (run counts, script state, stale elements, skeletons).

The benchmark (bench/browser_bench.py) times with these same waits (``open_app``, ``wait_for_rerun``,
``wait_for_app`` after a tab click): what the suite waits for is what the benchmark measures.

Timeouts are generous on purpose (a loaded 2-core machine): ``TIMEOUT_MS`` for actions, waits and
``expect`` assertions. They bound a wait; they never make a test slower when the app is quick.
"""
from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Iterator, Sequence

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run"]
START_TIMEOUT = 120.0  # seconds until /_stcore/health answers ok (generous: a loaded machine starts slowly)


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


def _wait_until_warm(proc: subprocess.Popen, out, err, timeout: float) -> None:
    """Until scripts/serve.py says it has opened every page once (its stderr line)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None or "JudgeLens: pages warmed" in _output(err):
            return
        time.sleep(0.2)
    raise RuntimeError(f"the app did not finish warming its pages within {timeout:.0f} s.\n"
                       f"--- stdout ---\n{_output(out)}\n--- stderr ---\n{_output(err)}")


def warm_setting(warm: bool | Sequence[str]) -> str:
    """``JUDGELENS_WARM_PAGES`` for ``running_app``'s ``warm``."""
    if isinstance(warm, bool):
        return "1" if warm else "0"
    return ",".join(warm) or "0"


@contextmanager
def running_app(db_path: str | os.PathLike, env: dict[str, str] | None = None,
                timeout: float = START_TIMEOUT, script: str | os.PathLike = "app.py",
                warm: bool | Sequence[str] = False) -> Iterator[str]:
    """Run ``script`` (the app, or the benchmark's hello-world floor) on a free loopback port against
    ``db_path``; yield ``http://127.0.0.1:PORT``.

    ``warm``: the app opens every page once after it starts, as scripts/run-app.sh's server does, and this waits
    until it has (the benchmark: its "first open after a server start" is a visitor's after the start-up). Off
    for tests: they drive a fresh server themselves (e.g. the first start loading the bundled sample). A list of
    page paths (``["overview", "search"]``) warms only those (``JUDGELENS_WARM_PAGES``)."""
    port = free_port()
    child_env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    child_env.update({"JUDGELENS_DB": str(db_path), "PYTHONUNBUFFERED": "1",
                      "JUDGELENS_WARM_PAGES": warm_setting(warm)}, **(env or {}))
    # The app starts the way the README's command (scripts/run-app.sh) starts it: scripts/serve.py = `streamlit
    # run app.py` after warming the imports. Any other script (the benchmark's floor) runs under `streamlit run`.
    start = [str(ROOT / "scripts" / "serve.py")] if str(script) == "app.py" else ["-m", "streamlit", "run", str(script)]
    cmd = [sys.executable, *start, "--server.headless", "true",
           "--server.port", str(port), "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]
    # Temp files, not pipes: a chatty server can never block on a full pipe buffer.
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=child_env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        try:
            _wait_until_healthy(proc, f"http://127.0.0.1:{port}/_stcore/health", out, err, timeout)
            if warm:
                _wait_until_warm(proc, out, err, timeout)
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


FIRST_START_MS = 180_000  # a fresh database: the first run imports the ~14 MB bundled sample
TIMEOUT_MS = 120_000  # one action, wait or expect(): a page's first run took over 60 s at load average ~15 on 2 cores

RUN_WATCH_JS = """(() => {
  if (window.__jlRuns) return;
  const runs = window.__jlRuns = {started: 0, finished: 0, lastStatus: -1, shownRunning: 0, frame: 0, finishedAt: 0, lastMessageAt: 0};
  // What the server says. Each ForwardMsg is one websocket message: a protobuf whose first field after
  // hash (1) and metadata (2) is its type; newSession (4) opens every script run, scriptFinished (6, an
  // enum; 2 = FINISHED_EARLY_FOR_RERUN) closes it.
  const kind = (b) => {
    let i = 0;
    const varint = () => { let x = 0, m = 1, c; do { c = b[i++]; x += (c & 127) * m; m *= 128; } while (c & 128); return x; };
    while (i < b.length) {
      const tag = varint(), field = Math.floor(tag / 8), wire = tag & 7;
      if (wire === 0) { const v = varint(); if (field > 2) return [field, v]; }
      else if (wire === 2) { const n = varint(); if (field > 2) return [field, -1]; i += n; }
      else return [0, -1];
    }
    return [0, -1];
  };
  const Native = window.WebSocket;
  window.WebSocket = class extends Native {
    constructor(...args) {
      super(...args);
      this.addEventListener('message', (event) => {
        runs.lastMessageAt = runs.frame;
        if (!(event.data instanceof ArrayBuffer)) return;
        const [field, value] = kind(new Uint8Array(event.data));
        if (field === 4) runs.started += 1;
        if (field === 6) { runs.finished += 1; runs.lastStatus = value; runs.finishedAt = runs.frame; }
      });
    }
  };
  // What the page shows: stApp's data-test-script-state turning to 'running'. React may draw a short run's
  // start and end in one commit, so this alone can miss a run; the server's count cannot.
  new MutationObserver(records => {
    for (const r of records) {
      if (r.target.getAttribute('data-test-script-state') === 'running' && r.oldValue !== 'running') runs.shownRunning += 1;
    }
  }).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                        attributeFilter: ['data-test-script-state']});
  const tick = () => { runs.frame += 1; requestAnimationFrame(tick); };
  requestAnimationFrame(tick);
})();"""

IDLE_JS = """() => {
  const app = document.querySelector('[data-testid="stApp"]');
  return !!app
    && app.getAttribute('data-test-script-state') === 'notRunning'
    && app.getAttribute('data-test-connection-state') === 'CONNECTED'
    && !document.querySelector('[data-stale="true"], [data-testid="stSkeleton"]');
}"""

NOT_STALE = "xpath=//*[not(ancestor-or-self::*[@data-stale='true'])]"


def new_context(browser, timeout: float = TIMEOUT_MS, **context_kwargs):
    """A browser context (no cookies or session shared with others) whose every tab has the run watcher
    installed; ``timeout`` bounds each action (a click, a fill) in it."""
    context_kwargs.setdefault("viewport", {"width": 1440, "height": 1000})
    context = browser.new_context(**context_kwargs)
    context.set_default_timeout(timeout)
    context.add_init_script(RUN_WATCH_JS)
    return context


def new_page(browser, **context_kwargs):
    """A tab in a new browser context, with the run watcher installed and generous timeouts."""
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    return new_context(browser, **context_kwargs).new_page()


def runs_started(page) -> int:
    """How many script runs the server has started for this tab (0 before the first)."""
    return page.evaluate("() => window.__jlRuns ? window.__jlRuns.started : 0")


def _state(page) -> str:
    """What the page looks like now, for a timeout's message."""
    try:
        return str(page.evaluate("""() => {
            const app = document.querySelector('[data-testid="stApp"]');
            return {runs: window.__jlRuns, state: app && app.getAttribute('data-test-script-state'),
                    connection: app && app.getAttribute('data-test-connection-state'),
                    stale: document.querySelectorAll('[data-stale="true"]').length,
                    skeletons: document.querySelectorAll('[data-testid="stSkeleton"]').length};
        }"""))
    except Exception as exc:  # noqa: BLE001 (the page may be gone): the timeout is the news
        return f"(page state unavailable: {exc})"


def _wait(page, script: str, arg, timeout: float, what: str) -> None:
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    try:
        page.wait_for_function(script, arg=arg, timeout=timeout)
    except PlaywrightTimeout:
        raise AssertionError(f"{what}: not within {timeout / 1000:.0f} s. Page: {_state(page)}") from None


def wait_for_app(page, timeout: float = TIMEOUT_MS) -> None:
    """Wait until the app is mounted and idle (see the module docstring for what idle means)."""
    _wait(page, IDLE_JS, None, timeout, "the app did not become idle")


RERUN_DONE_JS = f"""([started, shown]) => {{
  const r = window.__jlRuns;
  if (!r || !(r.started > started) || !({IDLE_JS})()) return false;
  if (r.finished >= r.started && r.lastStatus !== 2) {{
    // The page has drawn it: it showed the run, or a few frames passed since the last message (one commit).
    return r.shownRunning > shown || r.frame >= r.finishedAt + 3;
  }}
  // Seen once under load: a run's newSession arrived but no scriptFinished, and the page went idle. Then
  // accept an idle page after ~2 s (120 frames) without any message from the server.
  return r.frame >= r.lastMessageAt + 120;
}}"""


def open_app(page, url: str, timeout: float = TIMEOUT_MS) -> None:
    """Load ``url`` (a new Streamlit session) and wait until its first script run has finished on the server
    (a run that stopped early for a rerun does not count: the one it started must finish) and the page is
    idle and drawn: the same condition as ``wait_for_rerun``, counted from the new document's zero."""
    page.goto(url)
    _wait(page, RERUN_DONE_JS, [0, 0], timeout, "the page's first script run did not finish")


def wait_for_rerun(page, action, timeout: float = TIMEOUT_MS) -> None:
    """Run ``action()`` (which must make Streamlit rerun: a widget change, a button, Enter in a text field,
    a page link) and wait until that rerun has started and finished on the server, and the page is idle."""
    before = page.evaluate("() => window.__jlRuns ? [window.__jlRuns.started, window.__jlRuns.shownRunning] : [0, 0]")
    action()
    _wait(page, RERUN_DONE_JS, before, timeout, "the rerun after the action did not finish")


def fresh(locator):
    """``locator`` without the copies Streamlit marked stale during a rerun (they sit inside an element
    container with ``data-stale="true"``)."""
    return locator.and_(locator.page.locator(NOT_STALE))


def grid_cell(page, pattern: str | re.Pattern):
    """A cell of a current (not stale) dataframe with exactly this text (the grids' accessible tables are
    hidden: expect it attached, not visible)."""
    text = pattern if isinstance(pattern, re.Pattern) else re.compile(f"^{re.escape(pattern)}$")
    return fresh(page.get_by_test_id("stDataFrame")).locator("table td").filter(has_text=text).first


def click_and_wait(locator, timeout: float = TIMEOUT_MS) -> None:
    """Click the one fresh element ``locator`` names and wait for the rerun the click triggers."""
    target = fresh(locator)
    wait_for_rerun(locator.page, lambda: target.click(timeout=timeout), timeout=timeout)


def open_expander(page, label: str, where: str = "stMain", timeout: float = TIMEOUT_MS) -> None:
    """Open the (first) lazy expander whose title holds ``label``: its content is drawn only once it is open, in
    the rerun the click starts, which this waits for."""
    summary = fresh(page.get_by_test_id(where).get_by_test_id("stExpander").locator("summary").filter(
        has_text=label)).first
    wait_for_rerun(page, lambda: summary.click(timeout=timeout), timeout=timeout)


def open_judge_endpoint(page, timeout: float = TIMEOUT_MS) -> None:
    """Open the sidebar's "Judge endpoint" form (a lazy expander: its fields exist only once it is open)."""
    open_expander(page, "Judge endpoint", "stSidebar", timeout)


def type_and_commit(page, field, text: str, key: str = "Enter") -> None:
    """Type into a text field and commit it (Enter, or Tab for a text area): one rerun, waited for. Filling
    the next field while this one's rerun is still running would race with it."""
    fresh(field).fill(text)
    wait_for_rerun(page, lambda: page.keyboard.press(key))


def set_judge_endpoint(page, base_url: str, api_key: str, model: str | None = None) -> None:
    """Open the sidebar's judge endpoint form, fill the base URL, the model (when given) and the key, and wait
    until the form says the key is found."""
    from playwright.sync_api import expect

    open_judge_endpoint(page)
    sidebar = page.get_by_test_id("stSidebar")
    type_and_commit(page, sidebar.get_by_label("Base URL", exact=True), base_url)
    if model is not None:
        type_and_commit(page, sidebar.get_by_label("Model", exact=True), model)
    type_and_commit(page, sidebar.get_by_label("API key (kept in this browser session only)"), api_key)
    expect(page.get_by_text("Key: found")).to_be_visible()
