"""Distributions: how scores spread per judge, model, harness, turn and category; the JA harness's views."""
import streamlit as st

from lib.analysis import queries
from lib.render import charts
from lib.analysis import distributions
from lib.render.safe_text import md_escape
from pages._common import cached_query, page_start, show_chart, show_table

store, version = page_start("Distributions")

loaded = cached_query(queries.judges_by_harness, version)
benches = sorted(loaded["bench"].unique())
c1, c2, c3 = st.columns([1.2, 2, 2])
bench = c1.selectbox("Bench", benches, key="dist_bench",
                     help="Question ids and categories only mean the same thing within one bench.")
here = loaded[loaded["bench"] == bench]
judges = c2.multiselect("Judges", sorted(here["judge"].unique()), default=sorted(here["judge"].unique()), key="dist_judges")
models = c3.multiselect("Models", sorted(here["model"].unique()), default=sorted(here["model"].unique()), key="dist_models")
if not judges or not models:
    st.info("Pick at least one judge and one model.")
    st.stop()
filters = {"bench": bench, "judge": judges, "model": models}

st.subheader("Score distribution")
d1, d2, d3 = st.columns(3)
unit = d1.radio("Count", ["item", "judgment"], horizontal=True, key="dist_unit",
                format_func={"item": "items (repeats and Swallow's 5 samples averaged)",
                             "judgment": "single judgments (each sample)"}.get)
color = d2.selectbox("Colour by", ["judge", "model", "harness", "turn", "category"], key="dist_color")
facet = d3.selectbox("Split into panels by", ["(none)", "turn", "category", "model", "judge"], key="dist_facet")
by = [color] + ([facet] if facet not in ("(none)", color) else [])
hist = distributions.score_histogram(store, by, unit=unit, filters=filters)
if hist.empty:
    st.info("No scored items for this choice.")
    st.stop()
show_chart(charts.histogram(hist, color, None if facet in ("(none)", color) else facet), f"histogram_{bench}")
st.caption(distributions.HISTOGRAM_RULE)
summary = distributions.score_summary(store, by, unit=unit, filters=filters)
show_chart(charts.box_from_summary(summary, by[-1], color if len(by) > 1 else None), f"box_{bench}")
show_table(summary, f"score_summary_{bench}",
           column_config={k: st.column_config.NumberColumn(format="%.3f") for k in ("mean", "std", "q1", "median", "q3")})

st.subheader("Overall, as the JA harness reports it")
overall = distributions.ja_overall(store, bench=bench, filters={"judge": judges, "model": models})
st.caption("T1, T2; overall as the mean of the two turn means (visualize-results.py) and pooled over items; each "
           "category as the mean of its per-turn means; macro = unweighted mean of the category means "
           "(results-table.py); macro xCM = the same without coding and math. Category cells hold 10 questions: "
           "differences under about one point are usually noise (see Compare).")
show_table(overall, f"ja_overall_{bench}",
           column_config={c: st.column_config.NumberColumn(format="%.3f") for c in overall.columns
                          if overall[c].dtype.kind == "f"})
series = st.radio("Radar: one line per", ["model", "judge"], horizontal=True, key="dist_radar")
frame = distributions.radar_frame(store, bench=bench, filters={"judge": judges, "model": models})
for name, part in frame.groupby("judge" if series == "model" else "model", sort=True):
    st.markdown(f"**{'judge' if series == 'model' else 'model'}:** {md_escape(name)}")
    show_chart(charts.radar(part, series), f"radar_{bench}_{name}".replace("/", "_"))

st.subheader("Length bias")
points, stats = distributions.length_bias(store, bench=bench)
points = points[points["judge"].isin(judges) & points["model"].isin(models)]
if points.empty:
    st.info("No answer texts to measure: import the model_answer files of these models.")
else:
    show_chart(charts.length_scatter(points), f"length_bias_{bench}")
    st.caption("Spearman's rho between answer length and score per judge; a positive rho means longer answers "
               "score higher. p < 0.05 on 160 items is weak evidence, not proof of bias.")
    show_table(stats[stats["judge"].isin(judges)], f"length_bias_{bench}",
               column_config={c: st.column_config.NumberColumn(format="%.3f")
                              for c in ("spearman_rho", "spearman_p", "kendall_tau", "kendall_p")})
