"""Compare: A vs B per category and turn, paired by item, with t intervals on question-level deltas and Holm."""
import streamlit as st

from lib.analysis import answer_features, coverage, queries
from lib.render import charts
from lib.render.safe_text import md_escape
from lib.analysis import deltas, harness_diff, ranking, setup_warnings
from lib.errors import JudgeLensError
from app_pages._state import keep_valid, seed_from_url
from app_pages._store import cached_chart, cached_query, cached_query_given, kept_query, page_start
from app_pages._widgets import show_chart, show_error, show_table
from app_pages._compare_harness import harness_compare, kept_scores

store, version = page_start("Compare")


def compare_mde(rows) -> str:
    """The minimum detectable difference for the widest row shown (the overall row, or the row with most questions):
    its interval's half-width and the delta found 80% of the time, at this number of questions."""
    from scipy import stats

    usable = rows[rows["n_questions"] >= 2]
    if usable.empty:
        return ""
    row = usable.loc[usable["n_questions"].idxmax()]
    se = (row["ci_high"] - row["ci_low"]) / 2 / stats.t.ppf(0.975, int(row["n_questions"]) - 1)
    return ranking.mde_sentence(int(row["n_questions"]), float(se)) + (
        " (the row with the most questions; a category row has fewer, so its threshold is higher)"
        if len(usable) > 1 else "")


# The bench view and each of its sections are fragments: a widget reruns, sends and redraws only what it changes.
# The pickers change every section below them (their fragment holds the sections); the Rows level and the per-model
# toggle change only the rows section; the feature split only itself. The View control changes everything: a full
# rerun. Widget keys are the ones the page always had (saved state, links and tests keep working).


@st.fragment
def bench_compare(version: tuple) -> None:
    loaded = cached_query(queries.judges_by_harness, version)
    benches = sorted(loaded["bench"].unique())
    bench = st.selectbox("Bench", benches, key="cmp_bench")
    here = loaded[loaded["bench"] == bench]
    cover = cached_query(coverage.judge_items, version, bench=bench)
    judges, models = coverage.rank_judges(here["judge"].unique(), cover), sorted(here["model"].unique())
    default_ab = list(dict.fromkeys(coverage.default_judges(judges, cover, 2) + judges))[:2]  # best covered first
    mode = st.radio("Compare", ["two judges on the same answers", "two models under one judge"], horizontal=True,
                    key="cmp_mode")
    c1, c2, c3 = st.columns(3)
    if mode == "two judges on the same answers":
        if len(judges) < 2:
            st.info("This bench has one judge. Import another judge's judgments, or re-judge on the Workbench.")
            return
        ja = c1.selectbox("Judge A", judges, index=judges.index(default_ab[0]), key="cmp_ja",
                          help="Judges are listed by judged items, most first.")
        jb = c2.selectbox("Judge B", judges, index=judges.index(default_ab[-1]), key="cmp_jb")
        model = c3.selectbox("Answers of", ["(every model, paired per model)", *models], key="cmp_model")
        a, b = {"bench": bench, "judge": ja}, {"bench": bench, "judge": jb}
        if not model.startswith("("):
            a["model"] = b["model"] = model
    else:
        if len(models) < 2:
            st.info("This bench has one model.")
            return
        judge = c1.selectbox("Judge", judges, key="cmp_judge")
        ma = c2.selectbox("Model A", models, index=0, key="cmp_ma")
        mb = c3.selectbox("Model B", models, index=1, key="cmp_mb")
        a, b = {"bench": bench, "judge": judge, "model": ma}, {"bench": bench, "judge": judge, "model": mb}
    if a == b:
        st.info("A and B are the same: pick two different ones.")
        return
    if not delta_rows(version, bench, mode, a, b):
        return
    feature_split(version, bench, mode, a, b)


@st.fragment
def delta_rows(version: tuple, bench: str, mode: str, a: dict, b: dict) -> bool:
    """The rows of A minus B at the level picked, their chart and table; False when nothing is shown (an error, or
    nothing pairs): the page shows nothing below."""
    per_model = False
    if mode == "two judges on the same answers" and "model" not in a:
        per_model = st.toggle("Each model separately (each model its own family for the correction)", value=False,
                              key="cmp_per_model")
    else:
        # The toggle's place, kept: the browser matches a rerun's elements to the drawn ones by position, so without
        # it every element below (the chart, the table) moved up one and was drawn anew, not updated in place (a
        # pick of one model after "every model": half a second of the browser's styling and Plotly at 100k)
        st.empty()
    level = st.segmented_control("Rows", list(deltas.LEVELS), default="category", key="cmp_level",
                                 format_func=deltas.LEVEL_LABELS.get) or "category"
    try:
        table = cached_query_given(deltas.compare, version, kept_scores(version), a=a, b=b, levels=(level,),
                                   per_model=per_model)
    except JudgeLensError as exc:
        show_error(exc)
        return False
    st.subheader(md_escape(table.attrs["label"]))  # judge, model and bench names are data: never Markdown
    if table.empty:
        st.warning(md_escape(table.attrs.get("note") or "Nothing pairs: A and B share no items."))
        return False
    st.caption(
        "Delta = A minus B, per item, averaged (1-10 scale). Questions are the unit: both turns of a question, "
        "every paired model and Swallow's 5 samples move together, because they are not independent. The 95% "
        "interval and the p-value are Student's t on the question-level mean deltas (n_questions − 1 degrees of "
        "freedom). We do not use a bootstrap here: with 10 questions per category a percentile bootstrap flagged a "
        "category as significant in about 1 of 4 comparisons where A and B did not differ; the t method kept that "
        "at 5% and covered the true delta 95% of the time in simulation (bench/calibrate_deltas.py). p_adjusted: "
        "Holm over the rows shown (this level" + ("; each model its own family" if per_model else "") + "). "
        "Red: significant after Holm; orange: the interval excludes 0 but the difference does not survive Holm; "
        "grey: the interval includes 0, the difference is inside the noise. A category has only 10 questions: "
        "expect wide intervals. Same numbers: python -m lib.cli compare.")
    warnings_box = st.empty()  # filled last: the browser draws the chart and the table while the warnings are read
    mde = compare_mde(table)
    if mde:
        st.info(mde, icon=":material/straighten:")
    differs = "judge" if a.get("judge") != b.get("judge") else "model"
    show_chart(cached_chart(charts.delta_forest, table, str(a[differs]), str(b[differs])), f"delta_{bench}")
    shown = table.drop(columns=["level"] + ([] if per_model else ["model"]))
    show_table(shown, f"deltas_{bench}",
               column_config={c: st.column_config.NumberColumn(format="%.3f")
                              for c in ("mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "p_adjusted")})
    if mode == "two judges on the same answers":
        # what no pick changes (the bench's questions, references, judge prompts): kept per data version
        # passed on kept: the warnings' cache hashes its key, not its frames, on every rerun
        context = kept_query(harness_diff.setup_context, version, benches=(bench,))
        # which judge scored which model: kept per data version (a pick reads no item_scores)
        scored = kept_query(setup_warnings.scored_models, version, bench=bench)
        warnings = cached_query(setup_warnings.pair_warnings, version, judges=[a["judge"], b["judge"]], bench=bench,
                                model=a.get("model"), context=context, scored=scored)
        if not warnings.empty:
            with warnings_box.container():
                for row in warnings.itertuples():
                    st.warning(md_escape(row.line) + f" [Setup table]({row.link})", icon=":material/rule:")
    return True


@st.fragment
def feature_split(version: tuple, bench: str, mode: str, a: dict, b: dict) -> None:
    st.subheader("Split by answer feature")
    keep_valid("cmp_feature", ["(none)", *answer_features.FEATURES], "(none)")
    feature = st.selectbox("Split the gap by", ["(none)", *answer_features.FEATURES], key="cmp_feature",
                           format_func=lambda f: "(no split)" if f == "(none)" else answer_features.FEATURES[f],
                           help="Bins of what the answers are (computed once at import; python -m lib.cli features).")
    if feature == "(none)":
        return
    side = "a"
    if mode != "two judges on the same answers":
        side = st.radio("Bin by the answers of", ["a", "b"], horizontal=True, key="cmp_feature_side",
                        format_func=lambda s: f"model {s.upper()}")
    by_bin = cached_query(answer_features.compare_by_feature, version, a=a, b=b, feature=feature, side=side)
    if by_bin.empty:
        st.info("No stored answer text joins these items: import the model_answer files.")
        return
    st.caption(f"A minus B per bin, binned by {md_escape(by_bin.attrs['binned_by'])}; items without a stored "
               "answer fall in '—'. Questions are the unit: 95% t interval on question-level deltas, as above; "
               "p_adjusted is Holm over the bins. The interval covered the true gap 95% of the time in "
               "simulation at 10 and 80 questions per bin (bench/calibrate_feature_bins.py).")
    show_table(by_bin.drop(columns=["feature"]), f"deltas_feature_{bench}",
               column_config={c: st.column_config.NumberColumn(format="%.3f")
                              for c in ("mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "p_adjusted")})


seed_from_url("cmp", {"view": "cmp_view"})
keep_valid("cmp_view", ["bench", "harness"], "bench")
view = st.segmented_control("View", ["bench", "harness"], key="cmp_view", format_func={
    "bench": "within one bench (two judges or two models)",
    "harness": "one model under two harnesses (linked questions)"}.get) or "bench"
if view == "harness":
    harness_compare(store, version)
else:
    bench_compare(version)
