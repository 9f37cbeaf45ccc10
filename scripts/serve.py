"""Start the JudgeLens server: ``streamlit run app.py``, with the slow imports done while the server starts.

``bash scripts/run-app.sh`` (the README's command) runs this; so does ``tests/browser_support.running_app``.
Extra arguments go to ``streamlit run`` (e.g. ``--server.port 8600``).

Why: Streamlit imports a page's modules when the first visitor opens it. Here that was pandas, Plotly, DuckDB,
scipy.stats and every ``lib`` module: one to two seconds the first visitor of a freshly started server waited
for on top of the page itself. Done here, before the server listens, they cost the same once, when nobody is
waiting. ``streamlit run app.py`` keeps working exactly as before; only its first visitor pays these again.

Nothing Streamlit-specific is imported ahead (not ``pages/``): the pages' own first-run logic stays as it is.
"""
from __future__ import annotations

import importlib
import pkgutil
import sys
import time
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

    for info in pkgutil.walk_packages(lib.__path__, "lib."):
        if not info.name.startswith("lib.cli"):  # the command line (its __main__ would run it)
            importlib.import_module(info.name)
    for name in LAZY:
        importlib.import_module(name)
    import plotly.graph_objects as go
    import plotly.io as pio

    traces = [go.Bar(x=[1], y=[1]), go.Box(y=[1]), go.Scatterpolar(r=[1], theta=["a"]), go.Scatter(x=[1], y=[1]),
              go.Scattergl(x=[1], y=[1]), go.Heatmap(z=[[1]]), go.Waterfall(x=["a"], y=[1])]
    pio.to_json(go.Figure(traces).update_layout(template="plotly_white"), validate=False)
    return time.perf_counter() - t0


def main(argv: list[str]) -> None:
    seconds = warm_imports()
    print(f"JudgeLens: imports warmed in {seconds:.1f} s", file=sys.stderr, flush=True)
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(ROOT / "app.py"), *argv]
    cli.main(prog_name="streamlit")


if __name__ == "__main__":
    main(sys.argv[1:])
