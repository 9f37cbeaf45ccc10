"""Charts draw names as text: Plotly reads <a href>, <b>, <span style> in labels, ticks and hover text as
markup, so a judge or model name holding one would become a link in the app and the HTML report."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd

from lib.render import charts

EVIL = '<a href="http://127.0.0.1:9/x">judge</a> & <b>co</b>'
OUR_TAGS = re.compile(r"<br>|<extra>|</extra>")
KEYS = {"legendgroup", "offsetgroup", "alignmentgroup"}  # grouping keys, never drawn


def _strings(node):
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            if key not in KEYS:
                yield from _strings(value)
    elif isinstance(node, (list, tuple, np.ndarray)):
        for value in node:
            yield from _strings(value)


def _markup(fig) -> list[str]:
    data = fig.to_plotly_json()
    texts = [*_strings(data["data"]), *_strings(data["layout"].get("annotations", [])),
             *_strings([data["layout"].get(k, {}).get("title", {}) for k in data["layout"] if "axis" in k])]
    return [t for t in texts if "<" in OUR_TAGS.sub("", t)]


def test_names_in_every_kind_of_label_stay_text():
    board = pd.DataFrame({"harness": ["h", "h"], "bench": ["b", "b"], "judge": [EVIL, "plain"],
                          "model": [f"m {EVIL}", "m2"], "t1": [5.0, 6.0], "t2": [4.0, np.nan]})
    points = pd.DataFrame({"answer_chars": [10, 20], "score": [3.0, 4.0], "judge": [EVIL, "p"], "model": [EVIL, "m"],
                           "question_id": [1, 2], "turn": [1, 1], "category": ["c", "c"]})
    deltas = pd.DataFrame({"category": ["c"], "turn": [1], "model": [EVIL], "delta": [0.1], "ci_low": [-0.1],
                           "ci_high": [0.2], "significant": [False], "n_questions": [3], "p_adjusted": [0.5]})
    rates = pd.DataFrame({"judge": [EVIL], "model": [EVIL], "win": [3], "tie": [1], "loss": [2]})
    radar = pd.DataFrame({"judge": [EVIL, EVIL], "model": ["m", "m"], "category": [EVIL, "c"], "score": [5.0, 6.0]})
    figures = {
        "leaderboard": charts.leaderboard_bars(board),
        "heatmap": charts.agreement_heatmap(pd.DataFrame({"judge_a": [EVIL], "judge_b": ["p"], "qwk": [0.5]}), "qwk"),
        "length": charts.length_scatter(points),
        "forest": charts.delta_forest(deltas, EVIL, "b"),
        "win rates": charts.win_rate_bars(rates),
        "radar": charts.radar(radar, "judge"),
    }
    for name, fig in figures.items():
        assert _markup(fig) == [], name
    # The name still reads as typed once Plotly decodes the entities.
    assert figures["leaderboard"].data[0].name == EVIL.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert "<br>" in figures["forest"].data[0].hovertemplate  # our own template markup is kept


def as_plotly_shows(name: str) -> str:
    """A name with Plotly's markup characters escaped (Plotly decodes the entities when it draws)."""
    return name.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def test_horizontal_bar_charts_show_every_row_first_on_top():
    """A faceted horizontal bar chart of 12 models showed 5 in the browser: plotly.js's react() left the category
    axis of matched facets at its default range [-1, 4]. The charts pin the range to every row, in the given order
    (best first, on top), with the category array escaped like the bars' own labels."""
    models = [f"model-{i}" for i in range(11)] + [f"m {EVIL}"]
    board = pd.DataFrame({"harness": "h", "bench": "b", "judge": np.repeat(["j1", "j2"], 12),
                          "model": models * 2, "t1": np.linspace(9, 2, 24), "t2": np.linspace(8, 3, 24)})
    rates = pd.DataFrame({"judge": "j", "model": models, "win": 3, "tie": 1, "loss": 2})
    for fig in (charts.leaderboard_bars(board), charts.win_rate_bars(rates)):
        layout = fig.layout
        for name in [k for k in layout.to_plotly_json() if k.startswith("yaxis")]:
            axis = layout[name]
            if axis.matches:  # a facet sharing the first axis
                continue
            assert list(axis.range) == [11.5, -0.5]
            assert list(axis.categoryarray) == [as_plotly_shows(m) for m in models]
        shown = {y for trace in fig.data for y in trace.y}
        assert shown == set(axis.categoryarray)  # every bar sits on a listed row


def test_leaderboard_rows_join_a_models_names_and_runs_stay_apart():
    """``names`` (stored -> shown, the alias table) puts a model's two harness names on one row. A judge name seen
    under both harnesses says which harness each bar is; two names of one model in the same run say their own."""
    board = pd.DataFrame({"harness": ["fastchat", "swallow", "fastchat", "swallow", "fastchat"],
                          "bench": "b", "judge": ["gpt-4o", "gpt-4o", "gpt-4o", "judge-s", "gpt-4o"],
                          "model": ["org/m", "vllm/org/m", "other", "vllm/org/m", "org__m"],
                          "t1": [7.0, 6.0, 5.0, 4.0, 3.0], "t2": [6.5, 5.5, 4.5, 3.5, 2.5]})
    names = {"vllm/org/m": "org/m", "org__m": "org/m"}
    fig = charts.leaderboard_bars(board, names)
    bars = {(trace.name, y, x) for trace in fig.data for y, x in zip(trace.y, trace.x)
            if trace.xaxis in ("x", None)}  # turn 1
    assert bars == {("gpt-4o (fastchat) · org/m", "org/m", 7.0), ("gpt-4o (swallow)", "org/m", 6.0),
                    ("gpt-4o (fastchat)", "other", 5.0), ("judge-s", "org/m", 4.0),
                    ("gpt-4o (fastchat) · org__m", "org/m", 3.0)}
    assert list(fig.layout.yaxis.categoryarray) == ["org/m", "other"]
    plain = charts.leaderboard_bars(board)  # without names: one row per stored name, as before
    assert list(plain.layout.yaxis.categoryarray) == ["org/m", "vllm/org/m", "other", "org__m"]


def test_facet_titles_axes_and_the_radar_read_plainly():
    board = pd.DataFrame({"harness": ["fastchat"] * 2, "bench": ["b"] * 2, "judge": ["j1", "j2"], "model": ["m", "m"],
                          "t1": [8.0, 7.0], "t2": [7.5, 6.0]})
    fig = charts.leaderboard_bars(board)
    assert sorted(a.text for a in fig.layout.annotations) == ["Turn 1", "Turn 2"]      # not "turn=Turn 1"
    x1, x2 = fig.layout.xaxis.domain, fig.layout.xaxis2.domain
    assert x2[0] - x1[1] >= 0.05                        # the panels' "10" and "0" ticks do not run together
    hist = pd.DataFrame({"bin": [1, 2, 1, 2], "share": [0.5, 0.5, 0.4, 0.6], "count": [1, 1, 2, 3], "n": [2, 2, 5, 5],
                         "bin_label": ["1", "2", "1", "2"], "judge": ["j"] * 4, "turn": [1, 1, 2, 2]})
    assert sorted(a.text for a in charts.histogram(hist, "judge", "turn").layout.annotations) == ["turn 1", "turn 2"]
    counts = pd.DataFrame({"x": [1.0, 2.0], "y": [2.0, 2.0], "items": [3, 4], "pair": ["a (x) vs b (y)"] * 2})
    grid = charts.scatter_grid_counts(counts)
    assert grid.layout.xaxis.title.text == "score by the judge named first (x)"
    assert grid.layout.yaxis.title.text == "score by the judge named second (y)"
    radar = charts.radar(pd.DataFrame({"category": ["stem", "math", "writing"], "score": [7.0, 6.0, 8.0],
                                       "model": ["m"] * 3}), "model")
    assert radar.layout.margin.l >= 60 and radar.layout.margin.r >= 60   # room for "stem" beside the circle


def test_histogram_bars_hold_the_frames_shares_one_trace_per_colour_and_panel():
    """The histogram is built from plain dicts (not plotly express): every bar is a row of the frame, a colour's
    legend entry appears once, panels are titled and laid out three to a row, and a numeric colour (turn) is one
    bar per value side by side, named "turn 1" (plotly express drew it as one trace on a continuous colour scale,
    the two turns' bars on top of each other)."""
    rows = [dict(judge=j, turn=t, category=c, bin=b, count=b + t, n=100, share=(b + t) / 100, bin_label=str(b))
            for j in ("j1", "j2") for t in (1, 2) for c in ("coding", "math", "stem", "writing") for b in (1, 2, 3)]
    hist = pd.DataFrame(rows)
    fig = charts.histogram(hist, "judge", "category")
    assert len(fig.data) == 2 * 4
    assert sorted(a.text for a in fig.layout.annotations) == ["coding", "math", "stem", "writing"]
    panel = {a.text: (a.x, a.y) for a in fig.layout.annotations}
    assert panel["coding"][1] == panel["stem"][1] > panel["writing"][1]     # three to a row, the first on top
    for trace in fig.data:
        axis = fig.layout["xaxis" + trace.xaxis[1:]]
        title = next(a.text for a in fig.layout.annotations if abs(a.x - sum(axis.domain) / 2) < 1e-9
                     and abs(a.y - fig.layout["yaxis" + trace.yaxis[1:]].domain[1]) < 1e-9)
        part = hist[(hist.judge == trace.name) & (hist.category == title)]
        assert list(trace.x) == list(part.bin) and list(trace.y) == list(part.share)
        assert [list(r) for r in trace.customdata] == part[["count", "n", "bin_label"]].values.tolist()
    assert [t.name for t in fig.data if t.showlegend] == ["j1", "j2"]
    for name in [k for k in fig.layout.to_plotly_json() if k.startswith("yaxis")]:   # every bar within the range
        assert fig.layout[name].range[0] == 0 and fig.layout[name].range[1] >= hist["share"].max()
    by_turn = charts.histogram(hist[(hist.judge == "j1") & (hist.category == "math")], "turn")
    assert [t.name for t in by_turn.data] == ["turn 1", "turn 2"]
    assert [list(t.y) for t in by_turn.data] == [[0.02, 0.03, 0.04], [0.03, 0.04, 0.05]]
    assert by_turn.layout.barmode == "group" and len({t.marker.color for t in by_turn.data}) == 2
    assert _markup(charts.histogram(hist.assign(judge=EVIL), "judge", "category")) == []


def test_the_agreement_charts_built_from_plain_dicts_draw_what_plotly_express_drew():
    """The judge-pair scatter grid and the agreement heatmap are built as plain dicts (``_figure``): the scatter
    has one panel per pair, three to a row, titled by the pair, bubble area = items on one shared size scale
    (the largest 28 px across); the heatmap is the symmetric judges x judges matrix, empty on the diagonal, on
    a -1..1 colour scale for correlations and kappa, up to 1 for shares, free for mae."""
    judges = ["a", "b", "c", "d"]
    matrix = pd.DataFrame({"a": [1.0, 2.0, 2.0, 7.5, np.nan], "b": [1.0, 2.0, 2.0, 8.0, 3.0],
                           "c": [2.0, 2.0, np.nan, 8.0, 3.0], "d": [5.0, 5.0, 5.0, 5.0, 5.0]})
    grid = charts.scatter_grid(matrix, judges)
    assert [t.hovertemplate.split("<br>")[0] for t in grid.data] == [
        f"pair={x} (x) vs {y} (y)" for x, y in [("a", "b"), ("a", "c"), ("a", "d"), ("b", "c"), ("b", "d"), ("c", "d")]]
    first = grid.data[0]  # a vs b: (1, 1) once, (2, 2) twice, (8, 8) once (7.5 rounds half up)
    assert list(first.x) == [1.0, 2.0, 8.0] and list(first.y) == [1.0, 2.0, 8.0] and list(first.marker.size) == [1, 2, 1]
    assert first.marker.sizemode == "area" and first.marker.sizeref == 2 / 28 ** 2  # the most items in one cell of any pair: 2
    titles = {a.text: (round(a.x, 3), round(a.y, 3)) for a in grid.layout.annotations}
    assert len(titles) == 6 and titles["a (x) vs b (y)"][1] == titles["a (x) vs d (y)"][1] > titles["b (x) vs c (y)"][1]
    assert grid.layout.height == 760 and grid.layout.xaxis.range == (-0.5, 10.5)
    table = pd.DataFrame({"judge_a": ["a", "a", "b"], "judge_b": ["b", "c", "c"], "qwk": [0.5, 0.25, -0.1],
                          "mae": [1.0, 2.0, 3.0], "exact": [0.5, 0.2, 0.1]})
    heat = charts.agreement_heatmap(table, "qwk")
    z = np.asarray(heat.data[0].z, dtype=float)
    assert list(heat.data[0].x) == list(heat.data[0].y) == ["a", "b", "c"]
    assert np.isnan(np.diag(z)).all() and z[0, 1] == z[1, 0] == 0.5 and z[2, 1] == -0.1
    assert (heat.layout.coloraxis.cmin, heat.layout.coloraxis.cmax) == (-1, 1)
    assert heat.layout.yaxis.autorange == "reversed" and heat.data[0].texttemplate == "%{z:.2f}"
    assert charts.agreement_heatmap(table, "exact").layout.coloraxis.cmin is None
    assert charts.agreement_heatmap(table, "exact").layout.coloraxis.cmax == 1
    assert charts.agreement_heatmap(table, "mae").layout.coloraxis.cmax is None


def test_the_forest_from_plain_dicts_is_the_figure_the_setters_built():
    """``delta_forest`` builds its figure from plain dicts (validated once, as ``_figure`` does): the same figure, to
    the byte Plotly sends, as go.Scatter + add_vline + update_layout + ``_layout`` made (a Compare pick paid those
    setters' validation)."""
    import plotly.graph_objects as go
    import plotly.io as pio

    table = pd.DataFrame({"category": ["coding", None, "writing"], "turn": pd.array([1, None, 2], dtype="Int64"),
                          "model": [None, None, None], "delta": [0.4, -0.2, 1.5], "ci_low": [0.1, -0.5, -0.3],
                          "ci_high": [0.7, 0.1, 3.0], "significant": [True, False, False], "n_questions": [10, 80, 9],
                          "p_adjusted": [0.01, 0.4, 0.2]})
    frame = table.assign(row=["coding · turn 1", "all categories · both turns", "writing · turn 2"]).iloc[::-1]
    inside = ~((frame["ci_low"] > 0) | (frame["ci_high"] < 0))
    fig = go.Figure(go.Scatter(
        x=frame["delta"], y=frame["row"], mode="markers",
        marker=dict(color=np.where(frame["significant"], "#c0392b", np.where(inside, "#999999", "#e67e22")), size=9),
        error_x=dict(type="data", symmetric=False, array=frame["ci_high"] - frame["delta"],
                     arrayminus=frame["delta"] - frame["ci_low"], color="#888"),
        customdata=np.stack([frame["n_questions"], frame["p_adjusted"]], axis=1),
        hovertemplate="%{y}<br>delta %{x:.3f}<br>questions %{customdata[0]}<br>Holm p %{customdata[1]:.3f}"
                      "<extra></extra>"))
    fig.add_vline(x=0, line_color="#444", line_width=1)
    fig.update_layout(xaxis_title="a  minus  b  (score points)", yaxis_title="")
    fig.update_layout(margin=dict(l=10, r=10, t=40, b=10), legend_title_text="", template=charts.TEMPLATE,
                      height=120 + 22 * len(frame))  # every chart's layout (no markup here to make literal)
    assert json.loads(pio.to_json(charts.delta_forest(table, "a", "b"))) == json.loads(pio.to_json(fig))


def test_the_histogram_and_length_profile_are_drawn_in_one_pass_with_the_same_bars():
    """plotly.js drew a histogram twice when a margin had to grow (automargin measuring the tick labels, a legend at
    the right) and measured every tick label against the page: the histogram and the length profile set their
    margins (room for the "100%" ticks and the titles), turn automargin off on every axis, put a short legend in a
    row above the plot and let tick labels pass the chart's edge (every chart's template). A long legend stays at
    the right."""
    rows = [dict(judge=j, category=c, bin=b, count=b, n=10, share=b / 10, bin_label=str(b))
            for j in ("j1", "j2") for c in ("coding", "math", "stem", "writing") for b in (1, 2, 3)]
    hist = pd.DataFrame(rows)
    profile = pd.DataFrame({"judge": "j1", "bin": [1, 2], "chars_lo": [10, 200], "chars_hi": [199, 900],
                            "chars_median": [120.0, 400.0], "n": [5, 5], "mean": [6.0, 7.5], "q1": [5.0, 7.0],
                            "q3": [7.0, 8.0]})
    for fig in (charts.histogram(hist, "judge", "category"), charts.histogram(hist[hist.category == "math"], "judge"),
                charts.length_profile(profile)):
        layout = fig.layout
        axes = [k for k in layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]
        assert axes and all(layout[k].automargin is False for k in axes)
        assert (layout.margin.l, layout.margin.b, layout.margin.t) == (80, 65, 60)
        assert (layout.legend.orientation, layout.legend.yref) == ("h", "container")
        assert layout.template.layout.xaxis.ticklabeloverflow == layout.template.layout.yaxis.ticklabeloverflow == "allow"
    long = hist.assign(judge=hist["judge"].map({"j1": "organisation/a-long-judge-model-name-v1",
                                                 "j2": "organisation/another-long-judge-name-v2"}))
    fig = charts.histogram(long, "judge", "category")
    assert fig.layout.legend.orientation is None and fig.layout.margin.r == 10   # plotly.js widens it for the legend
    assert {(t.name, tuple(t.y)) for t in fig.data} == {
        (n, tuple(p.share)) for (n, _), p in long.groupby(["judge", "category"], sort=False)}


def test_the_leaderboard_is_drawn_in_one_pass_with_room_for_its_longest_model_name():
    """plotly.js laid the leaderboard out twice (automargin measuring the model names): its left margin is set from
    the longest name's width (an upper bound: a Japanese character one em, Latin by Arial's widths), automargin off.
    A name too long for a set margin leaves the margin to plotly.js, as before."""
    def board(models):
        return pd.DataFrame([dict(harness="h", bench="b", judge=f"judge-{j}", model=m, t1=5.0 + j, t2=4.0)
                             for m in models for j in range(3)])

    short = charts.leaderboard_bars(board(["model-1", "org/a-model-name-v2"]))
    layout = short.layout
    axes = [k for k in layout.to_plotly_json() if k.startswith(("xaxis", "yaxis"))]
    assert axes and all(layout[k].automargin is False for k in axes)
    assert layout.margin.l == charts.label_width("org/a-model-name-v2") + charts.TICK_LABEL_GAP_PX
    assert (layout.margin.b, layout.margin.t) == (65, 60) and layout.legend.orientation == "h"
    assert {(t.name, tuple(t.y)) for t in short.data if t.xaxis == "x"} == {
        (f"judge-{j}", ("model-1", "org/a-model-name-v2")) for j in range(3)}
    japanese = charts.leaderboard_bars(board(["東京大学/日本語モデル-v2"])).layout.margin.l
    assert japanese == charts.label_width("東京大学/日本語モデル-v2") + charts.TICK_LABEL_GAP_PX
    assert charts.label_width("東京大学/日本語モデル-v2") >= 10 * 12 + charts.label_width("/-v2")  # 10 wide: 12 px each
    assert charts.label_width("WWW") > charts.label_width("iii") * 3
    long = charts.leaderboard_bars(board(["organisation/" + "a-very-long-model-name-" * 4])).layout
    assert long.yaxis.automargin is None and long.margin.l == 10           # plotly.js sizes it, as before


def test_the_heatmap_has_room_for_the_judge_names_and_its_colour_bar_before_plotly_js_measures():
    """plotly.js laid the agreement heatmap out twice, growing its margins for the judge names and the colour bar:
    they are set (room for the longest name at the left, a row of names below, the bar at the right); automargin
    stays on, so names plotly.js must turn widen the margin as before."""
    table = pd.DataFrame({"judge_a": ["judge-0", "judge-0", "東京/審査員"], "judge_b": ["東京/審査員", "j", "j"],
                          "qwk": [0.5, 0.25, 0.75]})
    fig = charts.agreement_heatmap(table, "qwk")
    assert (fig.layout.margin.l, fig.layout.margin.b, fig.layout.margin.r) == (
        charts.label_width("東京/審査員") + charts.TICK_LABEL_GAP_PX, 40, 110)
    assert fig.layout.xaxis.automargin is None and fig.layout.yaxis.automargin is None
    assert list(fig.data[0].x) == list(fig.data[0].y) == ["judge-0", "東京/審査員", "j"]
