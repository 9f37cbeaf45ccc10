"""The Distributions page under AppTest, on the bundled sample: its charts draw the lib's numbers."""
from __future__ import annotations

import pytest
from conftest import frames

from lib.store import Store

JUDGES = ["gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14", "gpt-4o"]


@pytest.fixture
def app(sample_app):
    return sample_app


def test_distributions_page(app):
    app.switch_page("app_pages/distributions.py").run()
    assert not app.exception
    assert not any("median" in f.columns for f in frames(app))       # the quartiles wait until opened
    charts_before = len(app.get("plotly_chart"))
    assert charts_before == 2  # the histogram and the radar, at first sight
    app.session_state["dist_box_open"] = True
    app.run()
    assert not app.exception and len(app.get("plotly_chart")) == charts_before + 1  # the box plot
    summary = next(f for f in frames(app) if "median" in f.columns)
    assert set(summary["judge"]) == set(JUDGES)
    assert not any("macro_xcm" in f.columns for f in frames(app))  # the JA table waits until its expander opens
    app.session_state["dist_overall_open"] = True
    app.run()
    assert not app.exception
    overall = next(f for f in frames(app) if "macro_xcm" in f.columns)
    row = overall[(overall["judge"] == "gpt-4o") & (overall["model"] == "shisa-ai/shisa-v2-llama3.3-70b")].iloc[0]
    assert round(row["t1"], 4) == 9.075 and round(row["macro_xcm"], 4) == 8.5583
    app.radio(key="dist_facet").set_value("turn").run()
    app.radio(key="dist_unit").set_value("judgment").run()
    assert not app.exception


def _bars(spec: dict) -> set[tuple]:
    """(trace name, x, y) of every bar in a Plotly spec (arrays may come typed: {"dtype", "bdata"})."""
    import base64

    import numpy as np

    def values(v):
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist() if isinstance(v, dict) else v
    return {(t["name"], x, round(y, 12)) for t in spec["data"] for x, y in zip(values(t["x"]), values(t["y"]))}


def test_distributions_page_draws_the_libs_numbers(app, app_db):
    """The page's histogram bars, length-bias count and statistics are the lib functions' numbers (the page caches
    what it draws: aggregates, never the judged answers themselves)."""
    import json

    from lib.analysis import distributions

    app.switch_page("app_pages/distributions.py").run()
    bench, judges = app.selectbox(key="dist_bench").value, app.multiselect(key="dist_judges").value
    with Store(app_db) as store:
        hist = distributions.score_histogram(store, by=["judge"], filters={"bench": bench, "judge": judges})
        points, stats = distributions.length_bias(store, bench=bench, judge=judges[0])
        other_points, other_stats = distributions.length_bias(store, bench=bench, judge=judges[1])
        by_turn = distributions.score_histogram(store, by=["turn"], filters={"bench": bench, "judge": judges})
    assert any(c.value.startswith("Showing all") for c in app.caption)   # the sample: every model is shown
    spec = json.loads(app.get("plotly_chart")[0].proto.spec)
    assert _bars(spec) == {(j, b, round(s, 12)) for j, b, s in zip(hist["judge"], hist["bin"], hist["share"])}
    app.session_state["dist_length_open"] = True
    app.run()
    assert not app.exception
    assert any(c.value.startswith(f"{len(points):,} judged answers") for c in app.caption)
    shown = next(f for f in frames(app) if "spearman_rho" in f.columns)
    assert shown["n"].tolist() == stats["n"].tolist()
    assert [float(v) for v in shown["spearman_rho"]] == pytest.approx(stats["spearman_rho"].tolist())
    # another judge: the bench's answer lengths kept from the first, that judge's scores joined to them
    app.radio(key="dist_length_judge").set_value(judges[1]).run()
    assert not app.exception
    assert any(c.value.startswith(f"{len(other_points):,} judged answers") for c in app.caption)
    shown = next(f for f in frames(app) if "spearman_rho" in f.columns)
    assert [float(v) for v in shown["spearman_rho"]] == pytest.approx(other_stats["spearman_rho"].tolist())
    # another colouring: the same cached counts, summed by turn
    app.radio(key="dist_color").set_value("turn").run()
    spec = json.loads(app.get("plotly_chart")[0].proto.spec)
    assert _bars(spec) == {(f"turn {t}", b, round(s, 12))
                           for t, b, s in zip(by_turn["turn"], by_turn["bin"], by_turn["share"])}
