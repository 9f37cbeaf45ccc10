"""The browser benchmark runs end to end: bench/browser_bench.py on a small store (12,000 judgments: 15
models, enough for Overview's model picker and a second leaderboard page), one page, one
round, writes its JSON summary with the hello-world floor, the page's rows (a first load and every step) and
the page's second floor (the same widgets, trivially filled).

It once broke silently (a helper it calls lost an argument) and nobody knew until the next measurement; this
catches that. Speed is not asserted: only that every row was timed, none failed and no page showed an error.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import ROOT

pytestmark = pytest.mark.browser


def test_the_browser_benchmark_times_the_floor_and_a_page(tmp_path):
    out = tmp_path / "bench-out"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "browser_bench.py"), "--out", str(out),
                           "--sizes", "12000", "--repeat", "1", "--only", "overview", "--timeout", "120"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    [written] = out.glob("browser_bench_*.json")
    result = json.loads(written.read_text())
    assert (out / "browser_wide_12000.duckdb").exists()       # the store was built where --out says
    assert result["stores"]["wide 12k"]["rows"] == 12000

    rows = {(r["page"], r["what"]): r for r in result["summary"]}
    floor = rows[("floor", "open hello-world page (new tab)")]
    assert floor["n"] == 1 and floor["failed"] == 0 and floor["median"] > 0   # failed: past --timeout
    overview = [r for (page, _), r in rows.items() if page == "Overview"]
    whats = [r["what"] for r in overview]
    assert "open in a new tab (Plotly page)" in whats
    assert "open in a new tab, cold (new browser, server just started)" in whats
    assert {"1. sort the leaderboard by another judge", "2. next page of the leaderboard",
            "3. chart: top models"} <= set(whats)
    for row in overview:  # every row timed once, judged against a floor
        assert row["n"] == 1 and row["failed"] == 0, row
        assert row["floor"] and row["median"] > 0 and "meets_goal" in row, row
    # the second floor: the hello app drawing the kinds and numbers of elements the page showed, trivially
    census = {kind: int(n) for kind, n in (part.split(":") for part in
                                           result["stores"]["wide 12k"]["widgets"]["Overview"].split(","))}
    assert census["stMetric"] == 7 and census["stPlotlyChart"] == 1 and census["stSelectbox"] >= 2, census
    same = rows[("floor", "open a page with the same widgets as Overview, trivially filled (new tab)")]
    assert same["n"] == 1 and same["failed"] == 0 and same["median"] > 0   # failed: past --timeout
    new_tab = rows[("Overview", "open in a new tab (Plotly page)")]
    assert new_tab["over_widgets_floor"] == new_tab["median"] - same["median"]
    assert not [k for k in result["runs_s"] if k.endswith("|errors")], result["runs_s"]
    assert "| wide 12k | Overview | open in a new tab (Plotly page) | 1 |" in proc.stdout  # the printed table
