"""What it costs the browser to draw one chart: the renderer's CPU time to mount a ``lib.render.charts`` figure.

Not a test. A chart that changes is mounted again in the browser (Streamlit's PlotlyChart: ``newPlot``, then
``react`` once the container's width is known); on a 2-core machine that other work keeps busy, the wall time of
that varies several-fold, the CPU time of the browser's renderer process (``/proc``: user + system) far less. For
each figure this prints that CPU time per mount (the least and the median over the rounds) and saves a screenshot
(``--shots DIR``). The figures are built from synthetic frames of the benchmark stores' shape (8 categories, 2
turns, 5 judges), with the parts of Streamlit's theme that change how plotly.js lays a chart out (automargin on both
axes) merged into their template, as the app's frontend does. Run it against two checkouts to compare.

    .venv/bin/python bench/plotly_mount.py --rounds 4
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

import plotly  # noqa: E402
from playwright.sync_api import sync_playwright  # noqa: E402

from browser_support import launch_chromium  # noqa: E402
from lib.render import charts  # noqa: E402

PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
CATEGORIES = ["coding", "extraction", "humanities", "math", "reasoning", "roleplay", "stem", "writing"]
# What Streamlit's theme (PlotlyChart, theme="streamlit") merges into a figure's template and that changes its layout
STREAMLIT_AXES = {"xaxis": {"automargin": True, "showgrid": False, "zeroline": False, "title": {"standoff": 24}},
                  "yaxis": {"automargin": True, "ticklabelposition": "outside", "title": {"standoff": 32}}}


def figures() -> dict:
    rng = np.random.default_rng(0)
    hist = pd.DataFrame([dict(turn=t, judge=f"judge-{t}", category=c, bin=b, count=int(rng.integers(1, 100)), n=1000,
                              share=rng.random() / 5, bin_label=str(b))
                         for t in (1, 2) for c in CATEGORIES for b in range(1, 11)])
    radar = pd.DataFrame([dict(model=f"model-{m}", category=c, score=float(rng.uniform(3, 9)))
                          for m in range(12) for c in CATEGORIES])
    profile = pd.DataFrame({"judge": "judge-1", "bin": range(1, 11), "chars_lo": np.arange(10) * 300 + 50,
                            "chars_hi": np.arange(10) * 300 + 340, "chars_median": np.geomspace(80, 9000, 10),
                            "n": 20000, "mean": np.linspace(5, 8, 10), "q1": np.linspace(3, 6, 10),
                            "q3": np.linspace(7, 9.5, 10)})
    board = pd.DataFrame([dict(harness="fastchat", bench="bench_x", judge=f"judge-{j}", model=f"model-{m}",
                               t1=float(rng.uniform(3, 9)), t2=float(rng.uniform(3, 9)))
                          for m in range(12) for j in range(5)])  # Overview's chart: 12 models (top and bottom 6)
    long_names = {f"model-{m}": name for m, name in enumerate(
        ["meta-llama/Meta-Llama-3.1-70B-Instruct-Turbo", "東京大学/日本語大規模言語モデル-指示調整版-v2",
         "WWWWWWWWWWWWWWWWWWWW-MMMMMMMMMMMM"])}
    judges = [f"judge-{j}" for j in range(5)]
    pairs = pd.DataFrame([dict(judge_a=a, judge_b=b, qwk=float(rng.uniform(0, 1)))
                          for i, a in enumerate(judges) for b in judges[i + 1:]])
    return {"leaderboard, 12 models": charts.leaderboard_bars(board),
            "leaderboard, long names": charts.leaderboard_bars(board, long_names),
            "agreement heatmap": charts.agreement_heatmap(pairs, "qwk"),
            "histogram, 8 panels": charts.histogram(hist, "turn", "category"),
            "histogram": charts.histogram(hist[hist.category == "math"], "turn"),
            "radar, 12 lines": charts.radar(radar, "model"),
            "length profile": charts.length_profile(profile)}


def themed(fig) -> str:
    spec = fig.to_plotly_json()
    template = spec["layout"].setdefault("template", {}).setdefault("layout", {})
    for axis, values in STREAMLIT_AXES.items():
        template.setdefault(axis, {}).update(values)
    return json.dumps(spec, cls=plotly.utils.PlotlyJSONEncoder)


def renderers() -> list[int]:
    """The pids of the browser renderer processes this script started."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                parent = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except OSError:
                continue
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [os.getpid()]
    while todo:
        for child in children.get(todo.pop(), []):
            todo.append(child)
            try:
                if b"--type=renderer" in Path(f"/proc/{child}/cmdline").read_bytes():
                    found.append(child)
            except OSError:
                pass
    return found


def cpu(pids: list[int]) -> float:
    ticks = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


MOUNT = """async ([spec, reps]) => {
  for (let i = 0; i < reps; i++) {
    const f = JSON.parse(spec), el = document.getElementById('g');
    Plotly.purge(el);
    await Plotly.newPlot(el, f.data, f.layout, {displaylogo: false});
    await Plotly.react(el, f.data, {...f.layout, width: 1100}, {displaylogo: false});
    await new Promise(r => requestAnimationFrame(() => setTimeout(r, 0)));
  }
}"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4, help="rounds over every figure (the least and median shown)")
    ap.add_argument("--reps", type=int, default=4, help="mounts per figure and round")
    ap.add_argument("--shots", type=Path, help="save a screenshot of each figure here")
    args = ap.parse_args()
    specs = {name: themed(fig) for name, fig in figures().items()}
    spent = {name: [] for name in specs}
    with sync_playwright() as p:
        browser = launch_chromium(p)
        page = browser.new_page(viewport={"width": 1200, "height": 900})
        page.set_content("<div id=g style='width:1100px'></div>")
        page.add_script_tag(path=str(PLOTLY_JS))
        pids = renderers()
        for _ in range(args.rounds):
            for name, spec in specs.items():
                before = cpu(pids)
                page.evaluate(MOUNT, [spec, args.reps])
                spent[name].append((cpu(pids) - before) / args.reps)
                if args.shots:
                    args.shots.mkdir(parents=True, exist_ok=True)
                    page.locator("#g").screenshot(path=str(args.shots / f"{name.replace(' ', '_')}.png"))
        browser.close()
    for name, seconds in spent.items():
        print(f"{name:22s} {min(seconds) * 1000:6.0f} ms least, {statistics.median(seconds) * 1000:6.0f} ms median "
              f"renderer CPU per mount")


if __name__ == "__main__":
    main()
