"""Plotly figures built from the DataFrames of lib.analysis.queries / distributions / deltas / agreement.

Pure functions: a frame in, a ``go.Figure`` out, so pages and the HTML report draw the same charts.
Charts receive aggregates (bins, quantiles, counts), never one point per judgment.
"""
from __future__ import annotations

import html
import itertools
import math
import re
import threading

import numpy as np
import pandas as pd
import plotly.express as px
import plotly.graph_objects as go
import plotly.io as pio

SCORE_AXIS = dict(range=[-0.5, 10.5], dtick=1)  # 0 is a rating on some scales (Nejumi 0-10)
FIXED_MARGIN = {"l": 80, "r": 10, "t": 60, "b": 65}  # _drawn_once: room for ticks up to "100%" and the axis titles
COLORS = px.colors.qualitative.Safe


_PLOTLY_MARKUP = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})
_TEMPLATE_TAGS = re.compile(r"&lt;(?:br|/?extra)&gt;")  # the markup our own hover templates use
_DATA_TEXT = ("x", "y", "theta", "text", "hovertext", "customdata")


def _literal(value):
    """Plotly reads <a href>, <b>, <br>, <span style> in any label, tick or hover text as markup, so a judge
    or model name holding <a href=...> becomes a link. Entities are decoded when drawn: names show as typed."""
    if isinstance(value, str):
        return value.translate(_PLOTLY_MARKUP)
    if value is None or isinstance(value, (int, float)):
        return value
    values = np.asarray(value, dtype=object)
    if not any(isinstance(v, str) for v in values.flat):
        return value
    return np.vectorize(_literal, otypes=[object])(values)


def _plain_text(fig: go.Figure) -> go.Figure:
    """Data text (trace names, category values, hover data and templates, facet titles, axis titles) as
    literal text. Every chart goes through ``_layout``, which calls this last."""
    for trace in fig.data:
        trace.name = _literal(trace.name)
        if "hovertemplate" in trace and isinstance(trace.hovertemplate, str):  # px writes group values into it
            trace.hovertemplate = _TEMPLATE_TAGS.sub(lambda m: html.unescape(m.group(0)), _literal(trace.hovertemplate))
        for attr in _DATA_TEXT:
            if attr in trace and trace[attr] is not None:
                trace[attr] = _literal(trace[attr])
    for note in fig.layout.annotations:
        note.text = _literal(note.text)
    def axis(ax):
        ax.update(title_text=_literal(ax.title.text))
        if ax.categoryarray is not None:  # must stay equal to the (escaped) category values
            ax.categoryarray = list(_literal(list(ax.categoryarray)))
    fig.for_each_xaxis(axis)
    fig.for_each_yaxis(axis)
    return fig


def _layout(fig: go.Figure, height: int | None = None) -> go.Figure:
    fig.update_layout(margin=dict(l=10, r=10, t=40, b=10), legend_title_text="", template=TEMPLATE,
                      **({"height": height} if height else {}))
    return _plain_text(fig)


def facet_title(name: str, value) -> str:
    """A panel's title (or a legend entry of a numeric group) as a reader says it: "turn 1", "writing", "Turn 1"
    (a bare number keeps its column's name), never plotly express's "turn=1"."""
    value = str(value)
    return f"{name} {value}" if value.replace(".", "", 1).isdigit() else value


def _facet_titles(fig: go.Figure) -> go.Figure:
    """``facet_title`` on the panel titles of a plotly express figure ("name=value")."""
    def title(note):
        name, sep, value = (note.text or "").partition("=")
        if sep and name and " " not in name:
            note.text = facet_title(name, value)
    fig.for_each_annotation(title)
    return fig


FACET_SPACING = 0.07  # between panels: at 0.02 the last tick of one panel ("10") and the first of the next ("0") read "100"


def _rows_in_order(fig: go.Figure, rows: list) -> go.Figure:
    """Horizontal bars, one row per category, the first at the top, every row shown. An explicit range: with
    facets (``matches='y'``) plotly.js's react() left the category axis at its default range [-1, 4], so a chart
    of 12 models showed 5 (plotly.js #4826)."""
    rows = [str(r) for r in dict.fromkeys(rows)]
    fig.update_yaxes(categoryorder="array", categoryarray=rows, range=[len(rows) - 0.5, -0.5], autorange=False)
    return fig


def _grouped_bars(frame: pd.DataFrame, *, x: str, y: str, color: str, facet: str | None, wrap: int = 0,
                  orientation: str = "v", labels: dict | None = None, hover: tuple[str, ...] = ()) -> tuple[list, dict]:
    """Grouped bars, one trace per colour value and panel, panels in a grid of ``wrap`` columns (0: one row), as
    plotly express lays them out (titles and tick labels on the outer panels, axes matched), built as plain data
    and layout dicts: ``px.bar`` validated every property through hundreds of ``update`` calls, 0.2-1 s per chart
    and more under load, where one ``go.Figure(data, layout)`` costs a few hundredths. Returns (data, layout) for
    ``_figure``; groups in order of first appearance (px's); numeric colour values read "turn 1" in the legend."""
    labels = labels or {}
    label = lambda col: labels.get(col, col)  # noqa: E731
    keys = [color] + ([facet] if facet else [])
    frame = frame.assign(**{k: frame[k].astype(object).where(frame[k].notna(), "(none)") for k in keys})
    colors = list(dict.fromkeys(frame[color]))
    panels = list(dict.fromkeys(frame[facet])) if facet else [None]
    layout, axis_of = _facet_grid(panels, wrap, facet, label(x), label(y))
    layout.update(barmode="group", legend={"tracegroupgap": 0})
    data = []
    parts = {key if isinstance(key, tuple) else (key,): part for key, part in frame.groupby(keys, sort=False)}
    for c, value in enumerate(colors):
        name = facet_title(label(color), value) if not isinstance(value, str) else value
        shown = False
        for panel in panels:
            part = parts.get((value, panel) if facet else (value,))
            if part is None:
                continue
            tip = [f"{label(color)}={value}"] + ([f"{label(facet)}={panel}"] if facet else []) + \
                [f"{label(x)}=%{{x}}", f"{label(y)}=%{{y}}"] + [f"{h}=%{{customdata[{k}]}}" for k, h in enumerate(hover)]
            trace = {"type": "bar", "name": name, "legendgroup": name, "offsetgroup": name, "alignmentgroup": "True",
                     "orientation": orientation, "showlegend": not shown,
                     "marker": {"color": COLORS[c % len(COLORS)]}, "x": part[x].to_numpy(),
                     "y": part[y].to_numpy(), "xaxis": f"x{axis_of[panel]}", "yaxis": f"y{axis_of[panel]}",
                     "hovertemplate": "<br>".join(tip) + "<extra></extra>"}
            shown = True
            if hover:
                trace["customdata"] = part[list(hover)].to_numpy(dtype=object)
            data.append(trace)
    return data, layout


def _facet_grid(panels: list, wrap: int, facet: str | None, x_title: str, y_title: str) -> tuple[dict, dict]:
    """The layout of ``panels`` in a grid of ``wrap`` columns (0: one row) as plotly express lays out facets:
    axes numbered from the bottom left and matched, titles and tick labels on the outer panels, a title above
    each panel (``facet_title`` of the ``facet`` column's value; none without ``facet``). Returns (layout with
    the axes and annotations, {panel: axis suffix})."""
    cols = min(len(panels), wrap) if wrap else len(panels)
    rows = -(-len(panels) // cols)
    gap_x = gap_y = FACET_SPACING if len(panels) > 1 else 0.0
    width, height = (1 - (cols - 1) * gap_x) / cols, (1 - (rows - 1) * gap_y) / rows
    layout: dict = {"annotations": []}
    axis_of = {}
    for i, panel in enumerate(panels):
        row, col = divmod(i, cols)  # row 0 on top, as px fills a wrapped grid
        n = (rows - 1 - row) * cols + col + 1  # px numbers the axes from the bottom left
        suffix = "" if n == 1 else str(n)
        x0, y0 = col * (width + gap_x), (rows - 1 - row) * (height + gap_y)
        xaxis = {"anchor": f"y{suffix}", "domain": [x0, x0 + width]}
        yaxis = {"anchor": f"x{suffix}", "domain": [y0, y0 + height]}
        if n != 1:
            xaxis["matches"], yaxis["matches"] = "x", "y"
        if row == rows - 1:
            xaxis["title"] = {"text": x_title}
        else:
            xaxis["showticklabels"] = False
        if col == 0:
            yaxis["title"] = {"text": y_title}
        else:
            yaxis["showticklabels"] = False
        layout[f"xaxis{suffix}"], layout[f"yaxis{suffix}"] = xaxis, yaxis
        axis_of[panel] = suffix
        if facet:
            layout["annotations"].append({"text": facet_title(facet, panel), "x": x0 + width / 2, "y": y0 + height,
                                          "xref": "paper", "yref": "paper", "xanchor": "center",
                                          "yanchor": "bottom", "showarrow": False, "font": {}})
    return layout, axis_of


def _plain_dicts(data: list[dict], layout: dict) -> None:
    """``_plain_text`` for a figure still in plain dicts (``_figure``): the same texts made literal, in place."""
    for trace in data:
        for attr in ("name", *_DATA_TEXT):
            if trace.get(attr) is not None:
                trace[attr] = _literal(trace[attr])
        if isinstance(trace.get("hovertemplate"), str):
            trace["hovertemplate"] = _TEMPLATE_TAGS.sub(lambda m: html.unescape(m.group(0)),
                                                        _literal(trace["hovertemplate"]))
    for note in layout.get("annotations", []):
        note["text"] = _literal(note.get("text"))
    for key, axis in layout.items():
        if key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict):
            if isinstance(axis.get("title"), dict):
                axis["title"]["text"] = _literal(axis["title"].get("text"))
            if axis.get("categoryarray") is not None:
                axis["categoryarray"] = list(_literal(list(axis["categoryarray"])))


def _figure(data: list[dict], layout: dict, height: int | None = None) -> go.Figure:
    """One ``go.Figure`` from plain dicts, validated once, with ``_layout``'s margins, template and literal text:
    plotly's ``update_layout`` / ``add_trace`` / property setters parse and validate one path at a time (a tenth of
    a second for a chart of a few dozen traces, several times that on a busy machine)."""
    _plain_dicts(data, layout)
    margin = {"l": 10, "r": 10, "t": 40, "b": 10, **layout.pop("margin", {})}
    legend = {**layout.pop("legend", {}), "title": {"text": ""}}
    layout = {**layout, "margin": margin, "legend": legend, **({"height": height} if height else {})}
    fig = go.Figure(data=data, layout=layout)
    # The template is plotly's own, validated when plotly loaded it: set without validating its few hundred objects
    # again (as plotly sets its default template), which was three quarters of building a small chart.
    fig.layout._validate = False
    try:
        fig.layout.template = TEMPLATE
    finally:
        fig.layout._validate = True
    return fig


def _template() -> go.layout.Template:
    """plotly_white, with every axis's tick labels allowed past the chart's edge (``ticklabeloverflow``; ours never
    reach it): by default plotly.js measures every tick label of every axis against the page to hide the ones that
    pass it, a fifth of the browser's work to draw a histogram split into 8 panels."""
    template = go.layout.Template(pio.templates["plotly_white"])
    template.layout.xaxis.ticklabeloverflow = template.layout.yaxis.ticklabeloverflow = "allow"
    return template


TEMPLATE = _template()


def leaderboard_bars(board: pd.DataFrame, names: dict[str, str] | None = None) -> go.Figure:
    """Mean score per model, one bar per judge, turn 1 and turn 2 side by side. ``names``: stored model name ->
    the name to show (``aliases.canonical_map``), so one model's names in two harnesses share a row and its runs
    stand side by side. A judge name seen under two harnesses says which (``judge (harness)``); two stored names
    of one model in the same run say their own (``judge · name``)."""
    frame = board.assign(stored=board["model"])
    if names:
        frame["model"] = frame["model"].map(lambda m: names.get(m, m))
    runs = frame[["judge", "harness"]].drop_duplicates()
    frame["run"] = frame["judge"].where(~frame["judge"].isin(runs.loc[runs["judge"].duplicated(), "judge"]),
                                        frame["judge"] + " (" + frame["harness"] + ")")
    twice = frame.duplicated(["model", "run"], keep=False)
    frame.loc[twice, "run"] = frame.loc[twice, "run"] + " · " + frame.loc[twice, "stored"]
    long = frame.melt(id_vars=["run", "model"], value_vars=["t1", "t2"], var_name="turn",
                      value_name="mean").dropna()
    long["turn"] = long["turn"].map({"t1": "Turn 1", "t2": "Turn 2"})
    data, layout = _grouped_bars(long, x="mean", y="model", color="run", facet="turn", orientation="h",
                                 labels={"mean": "mean score (1-10)", "model": "", "run": "judge"})
    rows = [str(r) for r in dict.fromkeys(frame["model"])]
    for key in [k for k in layout if k.startswith("xaxis")]:
        layout[key]["range"] = [0, 10]
    for key in [k for k in layout if k.startswith("yaxis")]:  # every row shown, the first on top (_rows_in_order)
        layout[key].update(categoryorder="array", categoryarray=rows, range=[len(rows) - 0.5, -0.5], autorange=False)
    bars = frame.groupby("model")["run"].nunique().max() if len(frame) else 1
    width = max((label_width(r) for r in rows), default=0)
    # drawn in one pass (_drawn_once), the margin for the model names set from their widths: plotly.js measured them
    # and laid the chart out again (107 -> 62 ms of the browser's CPU per mount, bench/plotly_mount.py)
    if width <= MAX_FIXED_LABEL_PX:
        _drawn_once(data, layout)
        layout["margin"]["l"] = width + TICK_LABEL_GAP_PX
    return _figure(data, layout, 160 + max(40 * len(rows), 12 * len(rows) * max(1, bars)))


# Upper bounds of a character's width in em for tick labels (plotly.js: 12 px; Streamlit draws them in Source Sans,
# narrower than Arial, whose widths these are): a label's margin set from them is never too narrow.
_EM_WIDTHS = {**dict.fromkeys("ijl'|", 0.23), **dict.fromkeys(" !,./:;I[\\]ft", 0.28), **dict.fromkeys("()-`r", 0.34),
              **dict.fromkeys("*{}", 0.39), **dict.fromkeys("\"^", 0.47), **dict.fromkeys("Jckvsxyz", 0.5),
              **dict.fromkeys("0123456789#$?_abdeghnopqu+<=>~LF", 0.56), **dict.fromkeys("TZ", 0.62),
              **dict.fromkeys("ABEKPSVXY&", 0.67), **dict.fromkeys("CDHNRUw", 0.73), **dict.fromkeys("GOQ", 0.78),
              **dict.fromkeys("Mm", 0.84), **dict.fromkeys("%", 0.89), **dict.fromkeys("W@", 1.02)}
TICK_FONT_PX = 12
TICK_LABEL_GAP_PX = 14  # between a tick label and the plot (plotly.js's tick label standoff), and the chart's edge
MAX_FIXED_LABEL_PX = 420  # longer labels: plotly.js sizes the margin itself (a second layout pass)


def label_width(text: str, font_px: int = TICK_FONT_PX) -> int:
    """An upper bound of ``text``'s width in pixels as a tick label: ASCII by Arial's widths, an East Asian wide or
    full-width character (Japanese, Chinese, Korean) one em, any other character (accented Latin, Cyrillic, ...) as
    wide as the widest Latin capitals; 5% more for fonts a little wider than Arial."""
    import unicodedata

    em = 0.0
    for ch in str(text):
        width = _EM_WIDTHS.get(ch)
        if width is None:
            width = 1.0 if unicodedata.east_asian_width(ch) in ("W", "F") else 0.0 \
                if unicodedata.combining(ch) else 0.84
        em += width
    return math.ceil(em * font_px * 1.05)


def histogram(hist: pd.DataFrame, color: str | None, facet: str | None = None) -> go.Figure:
    """Share of items per score bin (from distributions.score_histogram): one bar per ``color`` value, side by
    side, a panel per ``facet`` value (three to a row)."""
    frame = hist if color else hist.assign(all="all")
    data, layout = _grouped_bars(frame, x="bin", y="share", color=color or "all", facet=facet, wrap=3,
                                 labels={"bin": "score", "share": "share of items"}, hover=("count", "n", "bin_label"))
    # An explicit share range: with matched panels plotly.js left the y axes at their default range [-1, 4] (the
    # bars a sliver at the bottom of -100%..400%; plotly.js #4826, as with _rows_in_order's axes)
    top = float(frame["share"].max()) * 1.08 if len(frame) and frame["share"].max() > 0 else 1.0
    for key in layout:
        if key.startswith("xaxis"):
            layout[key].update(SCORE_AXIS)
        elif key.startswith("yaxis"):
            layout[key].update(tickformat=".0%", range=[0, top], autorange=False)
    return _figure(_drawn_once(data, layout), layout, 420 if not facet else 260 * ((frame[facet].nunique() + 2) // 3))


def _drawn_once(data: list[dict], layout: dict) -> list[dict]:
    """A chart whose tick labels are short numbers (scores, shares, lengths) laid out in one plotly.js pass: margins
    set (``FIXED_MARGIN``: room for the tick labels and axis titles) and automargin off on every axis, where plotly.js
    drew the whole chart twice (once to measure the labels); a short legend (at most 6 entries, 60 characters) in a
    row above the plot, where at the right it widens the margin, another pass. A longer one (it would wrap over
    the panels' titles) stays at the right. Changes ``layout`` in place; returns ``data``."""
    for key, axis in layout.items():
        if key.startswith(("xaxis", "yaxis")):
            axis["automargin"] = False
    layout["margin"] = dict(FIXED_MARGIN)
    names = [trace["name"] for trace in data if trace.get("showlegend", True) and trace.get("name") is not None]
    if len(names) <= 6 and sum(len(str(n)) for n in names) <= 60:
        layout.setdefault("legend", {}).update(orientation="h", x=1, xanchor="right", y=1, yanchor="top",
                                               yref="container")
    return data


def box_from_summary(summary: pd.DataFrame, x: str, color: str | None = None) -> go.Figure:
    """Box plots drawn from precomputed quartiles (distributions.score_summary): whiskers are min and max."""
    fig = go.Figure()
    groups = summary.groupby(color, sort=True) if color else [(None, summary)]
    for i, (name, part) in enumerate(groups):
        fig.add_trace(go.Box(
            x=part[x].astype(str), q1=part["q1"], median=part["median"], q3=part["q3"],
            lowerfence=part["min"], upperfence=part["max"], mean=part["mean"], name=str(name) if name else "",
            marker_color=COLORS[i % len(COLORS)], boxmean=True))
    fig.update_layout(boxmode="group", yaxis_title="score", yaxis=SCORE_AXIS)
    return _layout(fig, 420)


def radar(frame: pd.DataFrame, series: str) -> go.Figure:
    """Category means around a circle, one trace per value of ``series``. Missing categories are gaps."""
    data = []
    for i, (name, part) in enumerate(frame.groupby(series, sort=True)):
        part = part.sort_values("category")
        theta = part["category"].tolist()
        r = part["score"].tolist()
        data.append({"type": "scatterpolar", "r": r + r[:1], "theta": theta + theta[:1], "name": str(name),
                     "connectgaps": False, "line": {"color": COLORS[i % len(COLORS)]}})
    # room for the category names around the circle ("stem")
    return _figure(data, {"polar": {"radialaxis": {"range": [0, 10]}}, "margin": {"l": 70, "r": 70, "t": 50, "b": 50}},
                   460)


def delta_forest(deltas: pd.DataFrame, label_a: str, label_b: str) -> go.Figure:
    """Delta (A - B) with its interval per row (a ``deltas.compare_pairs`` table): red when significant
    after the correction, orange when only the interval excludes 0, grey when it includes 0."""
    frame = deltas.copy()
    names = []
    for c, t, m in zip(frame["category"], frame["turn"], frame.get("model", [None] * len(frame))):
        where = "all categories" if c is None or (not isinstance(c, str) and pd.isna(c)) else str(c)
        when = f"turn {int(t)}" if pd.notna(t) else "both turns"
        names.append((f"{m} · " if isinstance(m, str) else "") + f"{where} · {when}")
    frame["row"] = names
    frame = frame.iloc[::-1]
    inside = ~((frame["ci_low"] > 0) | (frame["ci_high"] < 0))
    color = np.where(frame["significant"], "#c0392b", np.where(inside, "#999999", "#e67e22"))
    # plain dicts, validated once (``_figure``): built with go.Scatter, add_vline and update_layout, the figure
    # was most of a Compare pick (0.2-0.4 s at 1M judgments on a busy machine)
    data = [{"type": "scatter", "x": frame["delta"].to_numpy(), "y": frame["row"].to_numpy(), "mode": "markers",
             "marker": {"color": color, "size": 9},
             "error_x": {"type": "data", "symmetric": False, "array": (frame["ci_high"] - frame["delta"]).to_numpy(),
                         "arrayminus": (frame["delta"] - frame["ci_low"]).to_numpy(), "color": "#888"},
             "customdata": np.stack([frame["n_questions"], frame["p_adjusted"]], axis=1),
             "hovertemplate": "%{y}<br>delta %{x:.3f}<br>questions %{customdata[0]}<br>Holm p %{customdata[1]:.3f}"
                              "<extra></extra>"}]
    layout = {"shapes": [{"type": "line", "x0": 0, "x1": 0, "xref": "x", "y0": 0, "y1": 1, "yref": "y domain",
                          "line": {"color": "#444", "width": 1}}],
              "xaxis": {"title": {"text": f"{label_a}  minus  {label_b}  (score points)"}},
              "yaxis": {"title": {"text": ""}}}
    return _figure(data, layout, 120 + 22 * len(frame))


def agreement_heatmap(table: pd.DataFrame, stat: str) -> go.Figure:
    """A judges x judges matrix of one statistic from agreement.pairwise_agreement."""
    judges = list(dict.fromkeys([*table["judge_a"], *table["judge_b"]]))
    matrix = pd.DataFrame(np.nan, index=judges, columns=judges)
    for row in table.itertuples():
        matrix.loc[row.judge_a, row.judge_b] = matrix.loc[row.judge_b, row.judge_a] = getattr(row, stat)
    # as px.imshow(text_auto=".2f", color_continuous_scale="RdBu") drew it, from plain dicts (``_figure``)
    scale = px.colors.sequential.RdBu
    coloraxis = {"colorscale": [[i / (len(scale) - 1), c] for i, c in enumerate(scale)], "autocolorscale": False}
    if stat in ("pearson", "spearman", "kendall", "qwk"):
        coloraxis["cmin"] = -1
    if stat in ("pearson", "spearman", "kendall", "qwk", "exact", "within1"):
        coloraxis["cmax"] = 1
    data = [{"type": "heatmap", "coloraxis": "coloraxis", "name": "0", "texttemplate": "%{z:.2f}", "x": judges,
             "y": judges, "z": matrix.to_numpy(float), "xaxis": "x", "yaxis": "y",
             "hovertemplate": "x: %{x}<br>y: %{y}<br>color: %{z}<extra></extra>"}]
    # margins with room for the judge names (left), a row of them (below) and the colour bar (right): plotly.js laid
    # the heatmap out twice, growing its margins to fit them. Automargin stays on: names it must turn to fit widen
    # the margin as before.
    margin = {"l": max((label_width(j) for j in judges), default=0) + TICK_LABEL_GAP_PX, "b": 40, "r": 110}
    layout = {"xaxis": {"anchor": "y", "domain": [0.0, 1.0]},
              "yaxis": {"anchor": "x", "domain": [0.0, 1.0], "autorange": "reversed"}, "coloraxis": coloraxis,
              "margin": margin}
    return _figure(data, layout, 140 + 60 * len(judges))


def scatter_grid(matrix: pd.DataFrame, judges: list[str]) -> go.Figure:
    """Judge vs judge score counts for every pair: bubble area = number of items at that (x, y). The counting
    is lib.analysis.agreement.score_pair_counts's (scores rounded half up); pages pass its cached result to
    ``scatter_grid_counts`` instead."""
    frames = []
    for a, b in itertools.combinations(judges, 2):
        xs, ys = matrix[a].to_numpy(float), matrix[b].to_numpy(float)
        both = ~(np.isnan(xs) | np.isnan(ys))
        # the (x, y) cells sorted by x, then y (the groupby's order), counted on one integer code per item: np.unique
        # over rows (axis=0) sorted 200,000 items as raw bytes, seconds a pair at a million judgments
        vx, ix = np.unique(np.floor(xs[both] + 0.5), return_inverse=True)
        vy, iy = np.unique(np.floor(ys[both] + 0.5), return_inverse=True)
        codes, items = np.unique(ix * len(vy) + iy, return_counts=True)
        frames.append(pd.DataFrame({"x": vx[codes // len(vy)], "y": vy[codes % len(vy)], "items": items,
                                    "pair": f"{a} (x) vs {b} (y)"}))
    return scatter_grid_counts(pd.concat(frames, ignore_index=True) if frames
                               else pd.DataFrame(columns=["x", "y", "items", "pair"]))


def scatter_grid_counts(data: pd.DataFrame) -> go.Figure:
    """``scatter_grid`` from ``agreement.score_pair_counts`` (or ``pair_counts``): one panel per judge pair, three to
    a row, bubble area = items (the largest bubble 28 px across). Built from plain dicts (``_figure``), as
    ``px.scatter(size=, facet_col=)`` drew it: px validated every property one update at a time (most of the
    chart's cost in the report)."""
    x_title, y_title = "score by the judge named first (x)", "score by the judge named second (y)"
    panels = list(dict.fromkeys(data["pair"])) or [None]
    layout, axis_of = _facet_grid(panels, 3, "pair" if len(data) else None, x_title, y_title)
    for key, axis in layout.items():
        if key.startswith(("xaxis", "yaxis")):
            axis.update(SCORE_AXIS)
    layout["legend"] = {"tracegroupgap": 0, "itemsizing": "constant"}
    sizeref = float(data["items"].max()) / 28 ** 2 if len(data) else 1.0
    traces = []
    for pair, part in data.groupby("pair", sort=False):
        suffix = axis_of[pair]
        items = part["items"].to_numpy()
        traces.append({"type": "scatter", "mode": "markers", "name": "", "legendgroup": "", "showlegend": False,
                       "orientation": "v", "x": part["x"].to_numpy(float), "y": part["y"].to_numpy(float),
                       "xaxis": f"x{suffix}", "yaxis": f"y{suffix}", "customdata": items.reshape(-1, 1),
                       "marker": {"color": COLORS[0], "size": items, "sizemode": "area", "sizeref": sizeref,
                                  "symbol": "circle"},
                       "hovertemplate": f"pair={pair}<br>{x_title}=%{{x}}<br>{y_title}=%{{y}}<br>"
                                        "items=%{customdata[0]}<extra></extra>"})
    return _figure(traces, layout, 380 * max(1, (len(panels) + 2) // 3))


def length_scatter(points: pd.DataFrame) -> go.Figure:
    fig = px.scatter(points, x="answer_chars", y="score", color="judge", opacity=0.5, log_x=True,
                     hover_data=["model", "question_id", "turn", "category"], color_discrete_sequence=COLORS,
                     labels={"answer_chars": "answer length (characters, log scale)"})
    fig.update_yaxes(**SCORE_AXIS)
    return _layout(fig, 420)


def length_profile(profile: pd.DataFrame, points: pd.DataFrame | None = None) -> go.Figure:
    """Mean score per length bin (distributions.length_profile), one line per judge, the middle half of
    the scores as a band; ``points`` (few only) are drawn under it with WebGL."""
    data = []
    for i, (judge, part) in enumerate(profile.groupby("judge", sort=True)):
        color = COLORS[i % len(COLORS)]
        if points is not None and len(points):
            mine = points[points["judge"] == judge]
            data.append({"type": "scattergl", "x": mine["answer_chars"].to_numpy(), "y": mine["score"].to_numpy(),
                         "mode": "markers", "name": f"{judge} (answers)", "legendgroup": str(judge),
                         "marker": {"color": color, "size": 4, "opacity": 0.35}, "showlegend": False,
                         "hoverinfo": "skip"})
        data.append({"type": "scatter", "x": list(part["chars_median"]) + list(part["chars_median"])[::-1],
                     "y": list(part["q3"]) + list(part["q1"])[::-1], "fill": "toself", "fillcolor": color,
                     "opacity": 0.15, "line": {"width": 0}, "hoverinfo": "skip", "showlegend": False,
                     "legendgroup": str(judge)})
        data.append({"type": "scatter", "x": part["chars_median"].to_numpy(), "y": part["mean"].to_numpy(),
                     "mode": "lines+markers", "name": str(judge), "legendgroup": str(judge), "line": {"color": color},
                     "customdata": np.stack([part["chars_lo"], part["chars_hi"], part["n"]], axis=1),
                     "hovertemplate": "%{customdata[0]:,}–%{customdata[1]:,} characters<br>mean score %{y:.2f}"
                                      "<br>%{customdata[2]:,} answers<extra>%{fullData.name}</extra>"})
    layout = {"xaxis": {"type": "log", "title": {"text": "answer length (characters, log scale; median of each bin)"}},
              "yaxis": {"title": {"text": "score (mean; band: middle half)"}, **SCORE_AXIS}}
    return _figure(_drawn_once(data, layout), layout, 420)


def win_rate_bars(rates: pd.DataFrame) -> go.Figure:
    long = rates.melt(id_vars=["judge", "model"], value_vars=["win", "tie", "loss"], var_name="outcome",
                      value_name="count")
    fig = px.bar(long, x="count", y="model", color="outcome", facet_col="judge", orientation="h",
                 color_discrete_map={"win": "#2e7d32", "tie": "#9e9e9e", "loss": "#c62828"},
                 facet_col_spacing=FACET_SPACING)
    _facet_titles(fig)
    _rows_in_order(fig, list(rates["model"]))
    return _layout(fig, 160 + 40 * rates["model"].nunique())


def figure_html(fig: go.Figure, title: str) -> str:
    """A standalone interactive HTML page of one chart (plotly.js inlined: opens offline)."""
    return fig.to_html(full_html=True, include_plotlyjs=True, config={"displaylogo": False},
                       default_width="100%", div_id=None).replace("<head>", f"<head><title>{_esc(title)}</title>", 1)


_CHART_SCRIPT = re.compile(r"<script(?: type=\"text/javascript\")?>")
_DEFERRED = '<script type="text/x-judgelens-chart">'  # not run by the browser until the loader below runs it


_PACKED: list[str] = []  # _packed_plotly_js's one result
_PACKING = threading.Lock()


def _packed_plotly_js() -> str:
    """plotly.js (4.8 MB) gzipped and base64-encoded (about 2 MB): what a report inlines instead of the text.
    Packed once per process (gzip -9 of 4.8 MB is 0.2-0.4 CPU-s; every report and probe report inlines it); a call
    while ``pack_plotly_js_soon``'s thread packs it waits for that thread's result."""
    with _PACKING:
        if not _PACKED:
            import base64
            import gzip
            from importlib import resources

            code = resources.files("plotly").joinpath("package_data", "plotly.min.js").read_bytes()
            _PACKED.append(base64.b64encode(gzip.compress(code, 9, mtime=0)).decode("ascii"))
        return _PACKED[0]


def pack_plotly_js_soon() -> None:
    """Pack plotly.js for the reports (``_packed_plotly_js``) in a background thread, once per process: a page that
    offers a report calls this, so its first report does not wait for the packing (zlib lets go of the GIL while it
    compresses: the page's own script run goes on)."""
    if not _PACKED and not _PACKING.locked():
        threading.Thread(target=_packed_plotly_js, name="pack-plotly-js", daemon=True).start()


def report_figures_html(figures: list[tuple[str, go.Figure]], heading=lambda title: f"<h3>{_esc(title)}</h3>") -> str:
    """Several charts for one self-contained HTML report: plotly.js inlined once, compressed (about 2 MB instead
    of 4.8 MB, the bulk of a report); the browser unpacks it (``DecompressionStream``, no network) and then draws
    each chart. Needs a CSP allowing inline scripts and eval, as the reports' does."""
    if not figures:
        return ""
    blocks = []
    for title, fig in figures:
        div = fig.to_html(full_html=False, include_plotlyjs=False, config={"displaylogo": False})
        blocks.append(heading(title) + _CHART_SCRIPT.sub(_DEFERRED, div))
    loader = (
        "<script>(async () => {"
        f"const packed = \"{_packed_plotly_js()}\";"
        "const bytes = Uint8Array.from(atob(packed), c => c.charCodeAt(0));"
        "const code = await new Response(new Blob([bytes]).stream()"
        ".pipeThrough(new DecompressionStream('gzip'))).text();"
        "window.PlotlyConfig = {MathJaxConfig: 'local'};"
        "(0, eval)(code);"
        "for (const s of document.querySelectorAll('script[type=\"text/x-judgelens-chart\"]')) (0, eval)(s.textContent);"
        "})();</script>")
    return "".join(blocks) + loader


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


LADDER_NAMES = {"replay": "replay (judge drift)", "regenerate": "regenerate (model drift)",
                "system_prompt": "system prompt", "temperature": "temperature", "samples": "samples",
                "turn2_context": "turn-2 context", "max_tokens": "gen. max_tokens", "prompt": "judge prompt",
                "judge": "judge model", "judge_max_tokens": "judge max_tokens", "reference": "references",
                "truncation": "truncation", "reasoning": "reasoning stripped", "residual": "residual"}


def _waterfall_trace(ladder: pd.DataFrame, label_a: str, label_b: str) -> tuple[go.Waterfall, list]:
    steps = list(ladder["step"])
    measure, y, text = [], [], []
    for step, mean, delta in zip(steps, ladder["mean"], ladder["delta"]):
        if step == "a":
            measure.append("absolute")
            y.append(float(mean) if pd.notna(mean) else 0.0)
            text.append(f"{mean:.2f}" if pd.notna(mean) else "")
        elif step == "b":
            measure.append("total")
            y.append(0.0)
            text.append(f"{mean:.2f}" if pd.notna(mean) else "")
        else:
            measure.append("relative")
            y.append(float(delta) if pd.notna(delta) else 0.0)
            text.append(f"{delta:+.2f}" if pd.notna(delta) else "n/a")
    names = [{"a": f"{label_a} stored", "b": f"{label_b} stored"}.get(s, LADDER_NAMES.get(s, s)) for s in steps]
    lo = ladder["ci_low"].tolist() if "ci_low" in ladder else [None] * len(steps)
    hi = ladder["ci_high"].tolist() if "ci_high" in ladder else [None] * len(steps)
    hover = [f"{n}<br>{t}" + (f"<br>95% CI {a:+.2f} to {b:+.2f}" if pd.notna(a) and pd.notna(b) and s not in ("a", "b")
                               else "") for n, t, a, b, s in zip(names, text, lo, hi, steps)]
    trace = go.Waterfall(x=names, y=y, measure=measure, text=text, textposition="outside",
                         hovertext=hover, hoverinfo="text",
                         increasing=dict(marker=dict(color="#2e86c1")),
                         decreasing=dict(marker=dict(color="#c0392b")),
                         totals=dict(marker=dict(color="#555555")),
                         connector=dict(line=dict(color="#999", width=1)))
    return trace, [v for v in ladder["mean"] if pd.notna(v)]


def ladder_waterfall(ladder: pd.DataFrame, label_a: str = "A", label_b: str = "B") -> go.Figure:
    """The attribution ladder as a waterfall: the first side's stored mean, one bar per step's change (replay
    drift, regeneration drift, each factor, the residual), ending at the other side's stored mean. ``ladder``
    has the rows of ``lib.attribution`` (step, mean, delta, ci_low, ci_high, n) from "a" to "b"."""
    trace, finite = _waterfall_trace(ladder, label_a, label_b)
    fig = go.Figure(trace)
    if finite:
        fig.update_yaxes(range=[max(0.0, min(finite) - 1.5), min(10.5, max(finite) + 1.0)])
    fig.update_layout(yaxis_title="mean score (1-10)", xaxis_title="", showlegend=False)
    return _layout(fig, 420)


def variance_bar(components: pd.DataFrame, labels: dict[str, str] | None = None) -> go.Figure:
    """One horizontal bar split into the variance components' shares (``lib.analysis.variance``: columns
    component, share, share_ci_low, share_ci_high), largest share labelled with its percentage; the hover
    gives each share's 95 % interval."""
    labels = labels or {}
    fig = go.Figure()
    for row in components.itertuples():
        low, high = getattr(row, "share_ci_low", np.nan), getattr(row, "share_ci_high", np.nan)
        interval = "" if pd.isna(low) else f" (95% interval {low:.0%}-{high:.0%})"
        fig.add_trace(go.Bar(
            x=[row.share], y=["scores"], orientation="h", name=labels.get(row.component, row.component),
            text=[f"{row.share:.0%}" if row.share >= 0.04 else ""], textposition="inside",
            hovertext=[f"{labels.get(row.component, row.component)}: {row.share:.1%}{interval}"],
            hoverinfo="text"))
    fig.update_layout(barmode="stack", xaxis=dict(tickformat=".0%", range=[0, 1], title_text="share of the variance"),
                      yaxis=dict(showticklabels=False), legend=dict(orientation="h", y=-0.4))
    return _layout(fig, 230)


def ladder_waterfalls(ladders: dict) -> go.Figure:
    """Several orders of the ladder side by side (e.g. ``{"A->B": forward, "B->A": reverse}``), one waterfall
    each, sharing the score axis. Each frame as ``ladder_waterfall`` takes it."""
    from plotly.subplots import make_subplots

    labels = list(ladders)
    fig = make_subplots(rows=1, cols=len(labels), shared_yaxes=True, subplot_titles=labels,
                        horizontal_spacing=0.04)
    finite = []
    for i, label in enumerate(labels, start=1):
        first, second = (label.split("->", 1) + ["B"])[:2] if "->" in label else ("A", "B")
        trace, vals = _waterfall_trace(ladders[label], first.strip(), second.strip())
        fig.add_trace(trace, row=1, col=i)
        finite += vals
    if finite:
        fig.update_yaxes(range=[max(0.0, min(finite) - 1.5), min(10.5, max(finite) + 1.0)])
    fig.update_yaxes(title_text="mean score (1-10)", row=1, col=1)
    fig.update_layout(showlegend=False)
    return _layout(fig, 460)
