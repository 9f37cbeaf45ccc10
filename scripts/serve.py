"""Start the JudgeLens server: ``streamlit run app.py``, with the slow imports done while the server starts.

``bash scripts/run-app.sh`` (the README's command) runs this; so does ``tests/browser_support.running_app``.
Extra arguments go to ``streamlit run`` (e.g. ``--server.port 8600``).

Why: Streamlit imports a page's modules when the first visitor opens it. Here that was pandas, Plotly, DuckDB,
scipy.stats and every ``lib`` module: one to two seconds the first visitor of a freshly started server waited
for on top of the page itself. Done here, before the server listens, they cost the same once, when nobody is
waiting. ``streamlit run app.py`` keeps working exactly as before; only its first visitor pays these again.

Nothing Streamlit-specific is imported ahead (not ``app_pages/``): the pages' own first-run logic stays as it is.

Then, once the server answers, every page is opened once in the background, like a visitor would (a websocket
session asking for the page; its default view): the store opens and each page's default queries and figures land
in Streamlit's caches, which every later session shares. At 1M judgments that is several seconds of queries
(agreement statistics, parse failures, paired items) that the first visitor of each page waited for. The server
serves visitors meanwhile; they share whatever is already cached. ``JUDGELENS_WARM_PAGES=0`` turns it off;
``JUDGELENS_WARM_PAGES=overview,search`` warms only those pages (with their extra views): the browser benchmark's
``--only`` times a page or two and need not wait for the others. When it is done, stderr says
``JudgeLens: pages warmed``.
"""
from __future__ import annotations

import asyncio
import importlib
import os
import pkgutil
import sys
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Libraries that lib modules import inside functions (to keep `python -m lib.cli` quick), and Plotly's parts
# that load on first use: a page pays them on its first run otherwise.
LAZY = ("scipy.stats", "plotly.express", "plotly.io", "plotly.graph_objects")


def warm_imports() -> float:
    """Import every ``lib`` module (but the command line) and ``LAZY``; build one small figure of each trace type
    the charts use (Plotly loads each type's validators on first use). Returns the seconds it took."""
    t0 = time.perf_counter()
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    import lib

    def walk(package) -> None:  # pkgutil.walk_packages would import lib.cli to look inside it
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            if info.name != "lib.cli":  # the command line: no page needs it (and its __main__ runs it)
                module = importlib.import_module(info.name)
                if info.ispkg:
                    walk(module)

    walk(lib)
    for name in LAZY:
        importlib.import_module(name)
    import plotly.graph_objects as go
    import plotly.io as pio

    traces = [go.Bar(x=[1], y=[1]), go.Box(y=[1]), go.Scatterpolar(r=[1], theta=["a"]), go.Scatter(x=[1], y=[1]),
              go.Scattergl(x=[1], y=[1]), go.Heatmap(z=[[1]]), go.Waterfall(x=["a"], y=[1])]
    pio.to_json(go.Figure(traces).update_layout(template="plotly_white"), validate=False)
    return time.perf_counter() - t0


WARMED = "JudgeLens: pages warmed"


# Views behind a deep link that the default view does not draw (path, query string): warmed too.
EXTRA_VIEWS = (("compare", "view=harness"),  # Compare's "one model under two harnesses" (setup table, links)
               # A search that matches nothing: it counts matches in every text field, so the text columns are read
               # once now. The first search after a start read them from disk for its visitor: ~2 s at 1M judgments.
               ("search", "q=judgelens%20warm-up%20%C2%A7"))


def page_paths() -> list[str]:
    """The URL path of every page app.py routes to (a page's path is its file name), the default page first."""
    stems = [p.stem for p in sorted((ROOT / "app_pages").glob("*.py")) if not p.stem.startswith("_")]
    return [""] + [s for s in stems if s != "overview"]


async def _visit(url: str, path: str, timeout: float, query: str = "") -> None:
    """Open one page in a new session, as the browser does, and wait until its script run has finished."""
    import websockets
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    rerun = ForwardMsg.ScriptFinishedStatus.Value("FINISHED_EARLY_FOR_RERUN")
    async with websockets.connect(url, subprotocols=["streamlit"], max_size=None, open_timeout=timeout) as ws:
        msg = BackMsg()
        msg.rerun_script.query_string = query
        msg.rerun_script.page_name = path
        await ws.send(msg.SerializeToString())
        while True:
            frame = await asyncio.wait_for(ws.recv(), timeout)
            if isinstance(frame, bytes):
                fwd = ForwardMsg.FromString(frame)
                if fwd.WhichOneof("type") == "script_finished" and fwd.script_finished != rerun:
                    return


def warm_views(only: str = "1") -> list[tuple[str, str]]:
    """The (path, query) of each view to open: every page and EXTRA_VIEWS for "1", else those of the pages named in
    ``only`` (comma-separated page paths; the default page is "overview"). An unknown name is an error: a typo would
    otherwise warm nothing and say nothing."""
    views = [(path, "") for path in page_paths()] + list(EXTRA_VIEWS)
    if only == "1":
        return views
    names = {n.strip() for n in only.split(",") if n.strip()}
    unknown = names - {path or "overview" for path in page_paths()}
    if unknown:
        raise SystemExit(f"JUDGELENS_WARM_PAGES names no page: {', '.join(sorted(unknown))} "
                         f"(pages: overview, {', '.join(page_paths()[1:])}; 0 for none, 1 for all)")
    return [(path, query) for path, query in views if (path or "overview") in names]


def warm_pages(views: list[tuple[str, str]], timeout: float = 300) -> None:
    """Wait until this process's server answers, then open each view once (see the module docstring)."""
    from streamlit import config, runtime

    t0 = time.monotonic()
    while not runtime.exists() and time.monotonic() - t0 < timeout:
        time.sleep(0.1)
    host = config.get_option("server.address") or "127.0.0.1"
    host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    base = f"{host}:{config.get_option('server.port')}{('/' + config.get_option('server.baseUrlPath').strip('/')) if config.get_option('server.baseUrlPath') else ''}"
    while time.monotonic() - t0 < timeout:
        try:
            with urllib.request.urlopen(f"http://{base}/_stcore/health", timeout=2) as resp:
                if resp.read().strip() == b"ok":
                    break
        except OSError:
            pass
        time.sleep(0.1)
    t1 = time.monotonic()
    failed = []
    for path, query in views:
        try:
            asyncio.run(_visit(f"ws://{base}/_stcore/stream", path, timeout, query))
        except Exception as exc:  # noqa: BLE001 (a page that fails here fails for its visitor too, who sees why)
            failed.append(f"{path or 'overview'}{'?' + query if query else ''} ({type(exc).__name__})")
    print(f"{WARMED} ({len(views) - len(failed)} of {len(views)} views) in {time.monotonic() - t1:.1f} s"
          + (f"; not warmed: {', '.join(failed)}" if failed else ""),
          file=sys.stderr, flush=True)


def main(argv: list[str]) -> None:
    only = os.environ.get("JUDGELENS_WARM_PAGES", "1")
    views = [] if only == "0" else warm_views(only)  # checked before the imports: a typo stops the start at once
    seconds = warm_imports()
    print(f"JudgeLens: imports warmed in {seconds:.1f} s", file=sys.stderr, flush=True)
    if views:
        threading.Thread(target=warm_pages, args=(views,), name="judgelens-warm-pages", daemon=True).start()
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(ROOT / "app.py"), *argv]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main(sys.argv[1:])
