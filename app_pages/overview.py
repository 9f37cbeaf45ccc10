"""Overview: what is loaded, and a leaderboard with JudgeLens's means beside each harness's own."""
import streamlit as st

from lib.render import charts
from lib.analysis import aliases, coverage, linking, queries, ranking, runs
from lib.render.safe_text import csv_text, md_escape
from app_pages._state import keep_picks, keep_valid
from app_pages._store import cached_chart, cached_query, page_start
from app_pages._widgets import one_of, paged, readable_dataframe, readable_subset, show_chart, show_table

MAX_CHART_JUDGES = 6

store, version = page_start("Overview")

counts = dict(cached_query(queries.overview_counts, version))
board = cached_query(queries.leaderboard, version)
judge_cover = cached_query(coverage.judge_items, version)
# One row per model: a model's names in the harnesses (joined by aliases, as in the chart and the matrix below).
alias_version = version + linking.links_version(store)  # the data and the aliases: the chart's and matrix's key
# Every stored model's canonical name, cached on the versions alone: passing the 1,250 ranked names as the cache
# key cost each run 0.1-0.3 s at 1M judgments in Streamlit's hashing of them, on a cache hit.
canonical = cached_query(aliases.canonical_map, alias_version)
model_count = coverage.model_counts(board["model"].unique(), canonical)
judge_names = judge_cover["judge"].tolist()
reviewers = int(judge_cover["human"].sum())
counts["models"], counts["judges"] = model_count["models"], len(judge_names) - reviewers
cols = [*st.columns(4), *st.columns(4)]  # two rows: seven numbers in one row cut "1,000,800" to "1,000…"
for col, (label, key, helptext) in zip(cols, [
    ("Sources", "sources", "Imported files"),
    ("Models", "models", coverage.MODELS_RULE + f" {model_count['names']:,} names in the files."),
    ("Judges", "judges", coverage.JUDGES_RULE + f" Reviewers: {reviewers:,}."),
    ("Judged items", "judged_items", "harness x bench x judge x model x question x turn"),
    ("Judgments", "single_judgments", "Single-answer judgment rows (Swallow: 5 samples per item)"),
    ("No usable score", "no_score", "Rating not parsed (-1), \\$ERROR\\$ or out of 1-10; kept, left out of means"),
    ("Duplicated items", "duplicated_items", "FastChat items judged more than once; averaged per item"),
]):
    col.metric(label, f"{counts[key]:,}", help=helptext)

MEAN_OVER_JUDGES = "mean over judges"


# Fragments: a widget inside one reruns only that fragment, so the numbers above and the sections below are
# neither run again nor redrawn in the browser (at 100k judgments most of a click is the browser's redraw).
# The leaderboard's bench and ranking change the table, its ranks and the chart: one fragment; the table's paging
# and the chart's pickers each change only their own part: a fragment inside it.
@st.fragment
def leaderboard() -> None:
    st.subheader("Leaderboard")
    benches = sorted(board["bench"].unique())
    left, mid = st.columns([1, 3])  # the ranking's radio row: room for a few judges' names on one line
    bench = left.selectbox("Bench", ["All benches", *benches], key="overview_bench")
    shown = board if bench == "All benches" else board[board["bench"] == bench]
    judges = coverage.rank_judges(shown["judge"].unique(), judge_cover)  # most judged items first
    keep_valid("overview_rank", [MEAN_OVER_JUDGES, *judges], MEAN_OVER_JUDGES)
    rank_by = one_of("Rank models by", [MEAN_OVER_JUDGES, *judges], "overview_rank", container=mid,
                     help="The order of the table, and what 'top' and 'bottom' mean for the chart.")
    ranked = queries.rank_models(shown, None if rank_by == MEAN_OVER_JUDGES else rank_by)
    shown = queries.order_by_rank(shown, ranked)
    st.caption(
        "**T1 / T2 / Overall**: JudgeLens's means on the 1-10 scale. " + queries.MEAN_RULE.replace("$", "\\$") +
        " **… (h)**: the harness's own number. FastChat: what `show_result.py` computes (mean over rows, -1 "
        "dropped, duplicates counted again; it prints turn 1 only for benches other than `mt_bench`, so T2 and "
        "Overall (harness) follow its `mt_bench` code). Swallow: `results_*.json` × 10 (it averages -1 ratings into a "
        "question's 5-sample mean). Where they differ, the difference is how failures and duplicates are treated.")
    board_table(shown)
    with st.expander("Ranks with 95% intervals, ties with the leader, and rank flips between judges",
                     key="overview_ranks_open", on_change="rerun") as ranks_box:
        if ranks_box.open:  # a bootstrap per leaderboard: computed when opened, cached until the data changes
            ranks = cached_query(ranking.judge_rankings, version, bench=None if bench == "All benches" else bench)
            st.caption(ranking.RANK_NOTE + " In the side-by-side view a * marks a model statistically tied with that "
                       "judge's leader.")
            for b in sorted(ranks["bench"].unique()):
                st.markdown(f"**{md_escape(b)}**: one column per judge")
                st.dataframe(ranking.side_by_side(ranks, b), hide_index=True, width="stretch")
            show_table(ranks, "overview_ranks", column_config={
                c: st.column_config.NumberColumn(format="%.3f")
                for c in ("mean", "diff_to_leader", "diff_ci_low", "diff_ci_high")})

    chart(shown, ranked, judges, rank_by)


@st.fragment
def board_table(shown) -> None:
    """The ranked leaderboard, a page at a time, and its CSV."""
    readable_dataframe(
        paged(shown, "overview_board", "leaderboard rows"), hide_index=True, width="stretch",
        # narrow number columns: at 1440 px the last one ("Overall (harness)") was cut off
        column_config={
            "harness": st.column_config.TextColumn("harness", width=70),
            "bench": st.column_config.TextColumn("bench", width=125),
            "judge": st.column_config.TextColumn("judge", width=150),
            "model": st.column_config.TextColumn("model", width=215),
            "t1": st.column_config.NumberColumn("T1", format="%.3f", width=55),
            "t2": st.column_config.NumberColumn("T2", format="%.3f", width=55),
            "overall": st.column_config.NumberColumn("Overall", format="%.3f", width=60),
            "n_items": st.column_config.NumberColumn("n", width=45, help="judged items"),
            "t1_harness": st.column_config.NumberColumn("T1 (h)", format="%.3f", width=60,
                                                        help="T1 as the harness computes it"),
            "t2_harness": st.column_config.NumberColumn("T2 (h)", format="%.3f", width=60,
                                                        help="T2 as the harness computes it"),
            "overall_harness": st.column_config.NumberColumn("Overall (h)", format="%.3f", width=80,
                                                             help="Overall as the harness computes it"),
        },
    )
    st.download_button("Download leaderboard (CSV)", lambda: csv_text(shown).encode(),
                       "judgelens_leaderboard.csv", "text/csv", icon=":material/download:", on_click="ignore")


@st.fragment
def chart(shown, ranked: list[str], judges: list[str], rank_by: str) -> None:
    """The leaderboard's bar chart of the chosen models and judges."""
    st.markdown("**Chart**")
    names = {m: canonical.get(m, m) for m in ranked}
    models = readable_subset(list(dict.fromkeys(names[m] for m in ranked)), "overview_models",
                             rank_note=f"by overall ({rank_by})")
    default = coverage.default_judges(judges, judge_cover, MAX_CHART_JUDGES)
    keep_picks("overview_chart_judges", judges, default)
    chart_judges = st.multiselect("Judges in the chart", judges, key="overview_chart_judges",
                                  help="First shown: the judges with the most judged items (a partial re-judge and "
                                       "the reviewers are one pick away).") or default
    st.caption(coverage.showing_judges(chart_judges, judges) + " " + coverage.MODELS_RULE)
    if models:
        charted = shown[shown["model"].map(names).isin(models) & shown["judge"].isin(chart_judges)]
        # the names of the charted models only: the chart's cache key is hashed on every run
        show_chart(cached_chart(charts.leaderboard_bars, charted, {m: names[m] for m in charted["model"].unique()}),
                   "leaderboard")
    else:
        st.info("Pick the models to chart above.")


leaderboard()


# Lazy expanders (drawn, and queried, only while open): a new tab draws the leaderboard and its chart first. Each
# is a fragment: opening or closing it, or paging, reruns only its own section.
@st.fragment
def matrix_section() -> None:
    with st.expander("One row per model, one column per run (harness · bench · judge)", key="overview_matrix_open",
                     on_change="rerun", icon=":material/table_view:") as matrix_box:
        if matrix_box.open:
            matrix = cached_query(runs.harness_matrix_wide, alias_version)
            st.caption("Overall mean per model (one row per model: its names in the harnesses are joined by "
                       "aliases) and run (harness · bench · judge). Each run's JudgeLens mean (the rule above) stands "
                       "beside the harness's own number, '(harness)'. To see why two harnesses disagree on a model, "
                       "open Compare → one model under two harnesses.")
            readable_dataframe(paged(matrix, "overview_matrix", "models"), hide_index=True, width="stretch",
                               column_config={c: st.column_config.NumberColumn(format="%.3f") for c in matrix.columns
                                              if c != "model"})


@st.fragment
def loaded_section() -> None:
    with st.expander("One row per harness, bench, judge and model: counts and failures", key="overview_loaded_open",
                     on_change="rerun", icon=":material/inventory_2:") as loaded_box:
        if loaded_box.open:
            readable_dataframe(paged(cached_query(queries.judges_by_harness, version), "overview_loaded", "rows"),
                               hide_index=True, width="stretch")


st.subheader("Harness × model")
matrix_section()

c1, c2, _ = st.columns([1, 1, 2])
c1.page_link("app_pages/agreement.py", label="Where do the judges disagree?", icon=":material/groups:")
c2.page_link("app_pages/compare.py", label="Which differences are real?", icon=":material/difference:")

st.subheader("What is loaded")
loaded_section()
dups = cached_query(queries.duplicate_items, version)
if not dups.empty:
    st.warning(f"{int(dups['items'].sum())} item(s) are judged more than once by the same judge. All rows are "
               "kept; every mean here averages them per item first.", icon=":material/content_copy:")
    st.dataframe(dups, hide_index=True)
