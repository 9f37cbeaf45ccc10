"""Distributions: how scores spread per judge, model, harness, turn and category; the JA harness's views.

With many models the page shows a readable subset (the top and bottom by mean, plus any picked) and says
so; every figure is drawn from aggregates (bins, quartiles, category means), never one point per judgment.
"""
import streamlit as st

from lib.analysis import answer_features, coverage, distributions, queries
from lib.render import charts
from lib.render.safe_text import md_escape
from app_pages._state import keep_picks, keep_valid
from app_pages._store import cached_chart, cached_query, cached_query_given, cached_shared, page_start
from app_pages._widgets import one_of, readable_subset, show_chart, show_table

MAX_JUDGES = 6  # judges preselected; more are one pick away

store, version = page_start("Distributions")

loaded = cached_query(queries.judges_by_harness, version)
benches = sorted(loaded["bench"].unique())
c1, c2 = st.columns([1.2, 4])
bench = c1.selectbox("Bench", benches, key="dist_bench",
                     help="Question ids and categories only mean the same thing within one bench.")
here = loaded[loaded["bench"] == bench]
cover = cached_query(coverage.judge_items, version, bench=bench)
all_judges = coverage.rank_judges(here["judge"].unique(), cover)  # most judged items first
keep_picks("dist_judges", all_judges, coverage.default_judges(all_judges, cover, MAX_JUDGES))
judges = c2.multiselect("Judges", all_judges, key="dist_judges",
                        help="First shown: the judges with the most judged items on this bench.")
c2.caption(coverage.showing_judges(judges, all_judges))
means = cached_query(queries.scores, version, by=("model",), where={"bench": bench})
ranked = means.sort_values(["mean", "model"], ascending=[False, True])["model"].tolist()
ranked += sorted(set(here["model"]) - set(ranked))
models = readable_subset(ranked, "dist_models", noun=f"models on {md_escape(bench)}", rank_note="by mean score over all judges")
if not judges or not models:
    st.info("Pick at least one judge and one model.")
    st.stop()
filters = {"bench": bench, "judge": judges, "model": models}

# Each section below is a fragment: its widgets change only that section, so a click there reruns, sends and redraws
# that section alone (not the selectors above, nor the other charts), with the bench, judges, models and data
# version of the last whole-page run. A change above reruns the whole page, the fragments with it, with the same
# widget keys.


@st.fragment
def score_distribution(version: tuple, bench: str, filters: dict) -> None:
    d1, d2, d3 = st.columns(3)
    unit = d1.radio("Count", ["item", "judgment"], horizontal=True, key="dist_unit",
                    format_func={"item": "items (repeats and Swallow's 5 samples averaged)",
                                 "judgment": "single judgments (each sample)"}.get)
    color = one_of("Colour by", ["judge", "model", "harness", "turn", "category"], "dist_color", container=d2)
    facet = one_of("Split into panels by", ["(none)", "turn", "category", "model", "judge"], "dist_facet", container=d3)
    by = [color] + ([facet] if facet not in ("(none)", color) else [])
    # The counts per every group key at once, cached per unit and filters: colouring or splitting the bars another
    # way sums them again (milliseconds) instead of querying every judgment again; a rerun that changes neither
    # reads the histogram from its cache, without the counts.
    hist = cached_query_given(
        distributions.score_histogram, version,
        lambda: {"counts": cached_query(distributions.score_counts, version, unit=unit, filters=filters)},
        by=by, unit=unit, filters=filters)
    if hist.empty:
        st.info("No scored items for this choice.")
        st.stop()  # in a whole-page run, the rest of the page too (as before the sections were fragments)
    show_chart(cached_chart(charts.histogram, hist, color, None if facet in ("(none)", color) else facet),
               f"histogram_{bench}")
    st.caption(distributions.HISTOGRAM_RULE)
    # A lazy expander (drawn, and queried, only while open): a new tab draws the histogram first, not a second
    # chart and a table below it.
    with st.expander("Quartiles: box plot and table (mean, std, q1, median, q3 per group)", key="dist_box_open",
                     on_change="rerun", icon=":material/candlestick_chart:") as box_box:
        if box_box.open:
            summary = cached_query(distributions.score_summary, version, by=by, unit=unit, filters=filters)
            show_chart(cached_chart(charts.box_from_summary, summary, by[-1], color if len(by) > 1 else None),
                       f"box_{bench}")
            show_table(summary, f"score_summary_{bench}", column_config={
                k: st.column_config.NumberColumn(format="%.3f") for k in ("mean", "std", "q1", "median", "q3")})


@st.fragment
def radar(version: tuple, bench: str, judges: list, models: list) -> None:
    r1, r2 = st.columns([1, 2])
    series = r1.radio("Radar: one line per", ["model", "judge"], horizontal=True, key="dist_radar",
                      help="One radar for the chosen set: the models shown under one judge, or every chosen judge "
                           "on one model.")
    frame = cached_query(distributions.radar_frame, version, bench=bench, filters={"judge": judges, "model": models})
    if series == "model":
        keep_valid("dist_radar_judge", judges)
        fixed = one_of("Judge", judges, "dist_radar_judge", container=r2)
        part = frame[frame["judge"] == fixed]
    else:
        keep_valid("dist_radar_model", models)
        fixed = r2.selectbox("Model", models, key="dist_radar_model")
        part = frame[frame["model"] == fixed]
    show_chart(cached_chart(charts.radar, part, series), f"radar_{bench}")


@st.fragment
def ja_overall(version: tuple, bench: str, judges: list, models: list) -> None:
    # A lazy expander too: the radar above shows the same category means; the table (a data grid, the page's only
    # one at first sight) costs a new tab about a tenth of a second, so it waits for a click.
    with st.expander("Table: T1, T2, overall, per-category means and macro scores, as the harness's scripts compute "
                     "them", key="dist_overall_open", on_change="rerun", icon=":material/table_view:") as overall_box:
        if overall_box.open:
            # Its category means are the radar's (cached above, the same bench and filters): only the turn and
            # pooled means are read (half the statements: each costs a lake its catalog look-ups).
            overall = cached_query_given(
                distributions.ja_overall, version,
                lambda: {"long": cached_query(distributions.radar_frame, version, bench=bench,
                                              filters={"judge": judges, "model": models})},
                bench=bench, filters={"judge": judges, "model": models})
            st.caption("T1, T2; overall as the mean of the two turn means (visualize-results.py) and pooled over "
                       "items; each category as the mean of its per-turn means; macro = unweighted mean of the "
                       "category means (results-table.py); macro xCM = the same without coding and math. Category "
                       "cells hold 10 questions: differences under about one point are usually noise (see Compare).")
            show_table(overall, f"ja_overall_{bench}",
                       column_config={c: st.column_config.NumberColumn(format="%.3f") for c in overall.columns
                                      if overall[c].dtype.kind == "f"})


@st.fragment
def length_bias(version: tuple, bench: str, judges: list) -> None:
    with st.expander("Does a judge score longer answers higher? (reads every judged answer of one judge)",
                     key="dist_length_open", on_change="rerun") as length_box:
        if not length_box.open:
            return
        keep_valid("dist_length_judge", judges)
        judge = one_of("Length bias of judge", judges, "dist_length_judge")
        # The bench's answer lengths (every model's, whoever judged them) are kept per bench and data version:
        # another judge reads only its own scores and joins them in memory.
        profile, stats, n_points, points = cached_query_given(
            distributions.length_summary, version,
            lambda: {"lengths": cached_shared(distributions.answer_lengths, version, bench=bench)},
            bench=bench, judge=judge)
        if not n_points:
            st.info("No answer texts to measure: import the model_answer files of these models.")
            return
        show_chart(cached_chart(charts.length_profile, profile, points), f"length_bias_{bench}")
        st.caption(f"{n_points:,} judged answers of every model in {len(profile):,} bins of equal count: the "
                   "line is the mean score per bin, the band the middle half of the scores. Spearman's rho "
                   "between answer length and score: a positive rho means longer answers score higher. "
                   "Over all models it mixes 'better models write longer' with 'the judge likes length'.")
        show_table(stats, f"length_bias_{bench}",
                   column_config={c: st.column_config.NumberColumn(format="%.3f")
                                  for c in ("spearman_rho", "spearman_p", "kendall_tau", "kendall_p")})


@st.fragment
def by_feature(version: tuple, bench: str, judges: list) -> None:
    with st.expander("Scores split by an answer feature: Japanese share, length, code block, <think>, refusal phrase",
                     key="dist_feature_open", on_change="rerun") as feature_box:
        if not feature_box.open:
            return
        keep_valid("dist_feature", list(answer_features.FEATURES), "japanese")
        feature = st.selectbox("Answer feature", list(answer_features.FEATURES), key="dist_feature",
                               format_func=answer_features.FEATURES.get)
        table = cached_query(answer_features.scores_by_feature, version, bench=bench, feature=feature,
                             judges=judges)
        if table.empty:
            st.info("No answer texts for these judges' items: import the model_answer files.")
            return
        st.caption("Mean item score per judge and bin of the feature (lib.text_features; computed once at "
                   "import from the visible text, <think> removed; Swallow's samples of an answer averaged), with "
                   "a 95% question-clustered t interval: the items of one question move together, so questions "
                   "are the unit (n_questions). The interval covered the true bin mean 94-95% of the time in "
                   "simulation at 10 and 80 questions per bin (bench/calibrate_feature_bins.py). Same numbers: "
                   "python -m lib.cli features.")
        show_table(table.drop(columns=["feature"]), f"feature_{feature}_{bench}",
                   column_config={c: st.column_config.NumberColumn(format="%.3f") for c in ("mean", "ci_low", "ci_high")})


st.subheader("Score distribution")
score_distribution(version, bench, filters)
st.subheader("Overall, as the JA harness reports it")
radar(version, bench, judges, models)
ja_overall(version, bench, judges, models)
st.subheader("Length bias")
length_bias(version, bench, judges)
st.subheader("By what the answers are")
by_feature(version, bench, judges)
