"""Judge agreement: how far judges agree on the same items, where they disagree most, pairwise verdicts
and parse failures."""
import streamlit as st

from lib.analysis import queries
from lib.analysis import agreement
from lib.analysis import agreement_ci, harness_diff, reliability, setup_warnings, variance
from lib.render import charts
from lib.analysis import item_view
from lib.reports import build_report
from lib.render.safe_text import csv_text, md_escape
from app_pages._state import keep_picks
from app_pages._store import cached_chart, cached_query, kept_query, page_start
from app_pages._widgets import readable_dataframe, show_chart, show_table



MAX_JUDGES = 6  # judges preselected (pairs grow as n²); more are one pick away

store, version = page_start("Judge agreement")

loaded = cached_query(queries.judges_by_harness, version)
benches = sorted(loaded["bench"].unique())
c1, c2 = st.columns([1, 3])
bench = c1.selectbox("Bench", benches, key="agr_bench")
here = loaded[loaded["bench"] == bench]
all_judges = sorted(here["judge"].unique())
keep_picks("agr_judges", all_judges, all_judges[:MAX_JUDGES])
judges = c2.multiselect("Judges", all_judges, key="agr_judges")
if len(all_judges) > MAX_JUDGES:
    c2.caption(f"Showing {len(judges):,} of {len(all_judges):,} judges: pick others above.")
f1, f2, f3 = st.columns(3)
model = f1.selectbox("Model", ["(all)", *sorted(here["model"].unique())], key="agr_model")
turn = f2.selectbox("Turn", ["(all)", 1, 2], key="agr_turn")
categories = sorted(cached_query(queries.categories, version, bench=bench))
category = f3.selectbox("Category", ["(all)", *categories], key="agr_category")
filters = {"bench": bench, "model": None if model == "(all)" else model, "turn": None if turn == "(all)" else turn,
           "category": None if category == "(all)" else category}


def report() -> str:
    """The report of these judges and filters, its pieces through the page's cache: the agreement table and its
    kappa heatmap are there already, the intervals (a bootstrap per pair) only while "95% intervals" is open (they
    are cached then); otherwise the report computes them from the item matrix it reads anyway, which a cache miss
    here would read a second time (on a lake, the report's slowest part)."""
    table = cached_query(agreement.agreement, version, judges=judges, **filters)
    intervals = cached_query(agreement_ci.agreement_ci, version, judges=judges, **filters) \
        if st.session_state.get("agr_ci_open") else None
    return build_report(store, judges, **filters, table=table,
                        heatmap=cached_chart(charts.agreement_heatmap, table, "qwk"), intervals=intervals)


if len(judges) >= 2:
    st.download_button(
        "Report (self-contained HTML)", icon=":material/summarize:", on_click="ignore", mime="text/html",
        file_name=f"judgelens_report_{bench}.html", data=report,
        help="These judges and filters: headline tables, charts and the largest disagreements with their "
             "rationales, in one file that opens offline (safe to email).")
    charts.pack_plotly_js_soon()  # the report inlines plotly.js packed: packed now, not when the report is opened


def agreement_tab() -> None:
    """The agreement table, its heatmap and (opened) the per-pair scatter."""
    if len(judges) < 2:
        st.info("Agreement needs two or more judges that scored the same items. Import another judge's "
                "judgments, or re-judge on the Workbench.")
    else:
        table = cached_query(agreement.agreement, version, judges=judges, **filters)
        st.caption(agreement.AGREEMENT_NOTE)
        show_table(table, f"agreement_{bench}",
                   column_config={c: st.column_config.NumberColumn(format="%.3f")
                                  for c in ("pearson", "spearman", "kendall", "qwk", "exact", "within1", "mean_diff", "mae")})
        lines = st.empty()  # filled last: the browser draws the heatmap while the setup lines are read
        heatmap(table)
        ci_section()
        scatter_section()
        setup_lines(judges, filters["model"], lines)


# Fragments: a widget inside one reruns only that fragment (the filters, the agreement table and the setup
# warnings are neither run again nor redrawn in the browser, where most of a click's time goes at 100k judgments).
@st.fragment
def heatmap(table) -> None:
    """The agreement heatmap of the chosen statistic."""
    stat = st.segmented_control("Heatmap of", ["pearson", "spearman", "kendall", "qwk", "exact", "within1", "mae"],
                                default="qwk", key="agr_stat")
    show_chart(cached_chart(charts.agreement_heatmap, table, stat or "qwk"), f"agreement_heatmap_{bench}")


@st.fragment
def ci_section() -> None:
    with st.expander("95% intervals and the number of questions behind each pair", key="agr_ci_open",
                     on_change="rerun") as ci_box:
        if ci_box.open:  # a bootstrap per pair: computed when opened, then cached until the data changes
            intervals_table()


@st.fragment
def scatter_section() -> None:
    with st.expander("Score against score, one panel per pair of judges", key="agr_scatter_open",
                     on_change="rerun") as scatter_box:
        if scatter_box.open:  # drawn only when opened: one panel per pair is the page's heaviest figure
            show_chart(cached_chart(charts.scatter_grid_counts,
                                    cached_query(agreement.pair_counts, version, judges=judges, **filters)),
                       f"agreement_scatter_{bench}")


def setup_lines(chosen: list[str], model, where) -> None:
    """One line per judge pair whose setups differ beyond the judge model, with a link to the setup table, in
    ``where`` (an ``st.empty`` placeholder)."""
    # what a filter does not change; passed on by its cache key (hashing the frames cost every rerun tens of ms)
    context = kept_query(harness_diff.setup_context, version, benches=(bench,))
    scored = kept_query(setup_warnings.scored_models, version, bench=bench)  # a model or judge pick reads none
    warnings = cached_query(setup_warnings.pair_warnings, version, judges=chosen, bench=bench, model=model,
                            context=context, scored=scored)
    if not warnings.empty:
        with where.container():
            for row in warnings.itertuples():
                st.warning(md_escape(row.line) + f" [Setup table]({row.link})", icon=":material/rule:")


def intervals_table() -> None:
    """Every pair statistic with its 95% interval (cluster bootstrap over questions) and n_questions."""
    table = cached_query(agreement_ci.agreement_ci, version, judges=judges, **filters)
    st.caption(agreement_ci.CI_NOTE.format(n_boot=agreement_ci.N_BOOT, method="expanded percentile"))
    few = table[table["n_questions"] < agreement_ci.FEW_QUESTIONS]
    if len(few):
        st.warning(agreement_ci.FEW_QUESTIONS_NOTE, icon=":material/warning:")
    st.dataframe(agreement_ci.interval_text(table), hide_index=True, width="stretch")
    st.download_button("Intervals as CSV", csv_text(table).encode(), f"agreement_intervals_{bench}.csv", "text/csv",
                       on_click="ignore", icon=":material/download:", key="agr_ci_csv")


def reliability_tab() -> None:
    """Krippendorff's alpha over the chosen judges (human verdicts too), alpha without each, and the variance split."""
    if len(judges) < 2:
        st.info("Alpha needs two or more judges (your own verdicts, human:<name>, count as a judge).")
    else:
        reliability_tables()
    variance_split()


def reliability_tables() -> None:
    """Alpha with intervals (all, per category and turn) and alpha without each judge."""
    result = cached_query(reliability.reliability, version, judges=judges, **filters)
    st.caption(reliability.RELIABILITY_NOTE)
    table = result["overall"]
    if (table["n_questions"] < agreement_ci.FEW_QUESTIONS).any():
        st.warning("Groups with fewer than 20 questions (each category has about 10): their intervals are likely "
                   "too narrow.", icon=":material/warning:")
    show_table(table, f"reliability_{bench}",
               column_config={c: st.column_config.NumberColumn(format="%.3f") for c in table.columns
                              if c.startswith("alpha")})
    if len(result["without"]):
        st.markdown("**Alpha without each judge**: the judge whose removal raises alpha most is the odd one out.")
        show_table(result["without"], f"reliability_without_{bench}",
                   column_config={c: st.column_config.NumberColumn(format="%.3f") for c in result["without"].columns
                                  if c.startswith("alpha")})


@st.fragment
def variance_split() -> None:
    """The variance decomposition of the chosen judges' scores (lazy: an expander; opening it reruns it alone)."""
    if not judges:
        return
    with st.expander("Where the spread of scores comes from (variance decomposition)", key="agr_var_open",
                     on_change="rerun") as var_box:
        if var_box.open:
            parts = cached_query(variance.variance_decomposition, version, judges=judges, bench=bench,
                                 category=filters["category"])
            if parts.empty:
                st.info("The decomposition needs two or more models and prompts that every chosen judge scored "
                        "for every model.")
            else:
                st.caption(parts.attrs.get("note", ""))
                show_chart(cached_chart(charts.variance_bar, parts, variance.COMPONENT_LABELS),
                           f"variance_{bench}")
                show_table(parts, f"variance_{bench}",
                           column_config={c: st.column_config.NumberColumn(format="%.3f") for c in parts.columns
                                          if c != "component"})


def disagreements_tab() -> None:
    """The items the judges disagree on most; a row opens it in the item view."""
    if len(judges) < 2:
        st.info("Pick two or more judges.")
    else:
        worst = cached_query(agreement.disagreements, version, judges=judges, limit=200, **filters)
        if worst.empty:
            st.info("No item is scored by two of these judges.")
        else:
            worst.insert(0, "open", [item_view.link(item_view.link_params(r.bench, r.question_id, r.turn, r.model, judges))
                                     for r in worst.itertuples()])
            st.caption("Items ranked by spread (highest minus lowest judge score). Click a row to open it in the item "
                       "view; the link column opens it in a new tab.")
            event = readable_dataframe(worst, hide_index=True, width="stretch", on_select="rerun", selection_mode="single-row",
                                 key="agr_worst_table",
                                 column_config={"open": st.column_config.LinkColumn("open", display_text="open ↗")})
            st.download_button("Table as CSV", csv_text(worst.drop(columns=["open"])).encode(),
                               f"disagreements_{bench}.csv", "text/csv", on_click="ignore", icon=":material/download:")
            rows = event.selection.rows if event else []
            if rows:
                r = worst.iloc[rows[0]]
                st.switch_page("app_pages/item_view.py", query_params=item_view.link_params(
                    r["bench"], r["question_id"], r["turn"], r["model"], judges))

def pairwise_tab() -> None:
    """Pairwise verdicts: win rates as show_result.py counts them, position consistency."""
    policy = st.radio("Counting rule", list(agreement.PAIR_POLICIES), horizontal=True, key="agr_policy",
                      format_func=agreement.PAIR_POLICY_LABELS.get)
    rates_all = cached_query(agreement.pair_win_rates, version, bench=bench, policy=policy)
    pair_models = sorted(set(rates_all["model"]))
    against = st.selectbox("Against", ["every opponent (show_result.py --mode pairwise-all)", *pair_models],
                           key="agr_baseline",
                           help="A model here = show_result.py --mode pairwise-baseline: each model against it only.")
    baseline = None if against.startswith("every opponent") else against
    rates = rates_all if baseline is None else cached_query(agreement.pair_win_rates, version, bench=bench,
                                                            policy=policy, baseline=baseline)
    if rates.empty:
        st.info("No pairwise judgments (model_judgment/<judge>_pair.jsonl) on this bench.")
    else:
        show_table(rates, f"pair_win_rates_{bench}",
                   column_config={c: st.column_config.NumberColumn(format="%.3f")
                                  for c in ("win_rate", "loss_rate", "win_rate_adjusted")})
        show_chart(cached_chart(charts.win_rate_bars, rates), f"pair_win_rates_{bench}")
        st.markdown("**Position consistency**: does the verdict survive swapping A and B?")
        st.caption("Same numbers: python -m lib.cli pairwise --bench BENCH --policy POLICY [--baseline MODEL].")
        show_table(cached_query(agreement.position_consistency, version, bench=bench), f"position_consistency_{bench}",
                   column_config={c: st.column_config.NumberColumn(format="%.3f")
                                  for c in ("consistency", "first_position_bias")})
        verdict_agreement = cached_query(agreement_ci.pairwise_verdict_agreement, version, bench=bench)
        if len(verdict_agreement):
            st.markdown("**Do the pairwise judges pick the same winner?**")
            st.caption(agreement_ci.PAIR_VERDICT_NOTE)
            if (verdict_agreement["n_questions"] < agreement_ci.FEW_QUESTIONS).any():
                st.warning(agreement_ci.FEW_QUESTIONS_NOTE, icon=":material/warning:")
            show_table(verdict_agreement, f"pair_verdict_agreement_{bench}",
                       column_config={c: st.column_config.NumberColumn(format="%.3f")
                                      for c in verdict_agreement.columns if c.startswith("agreement")})

def failures_tab() -> None:
    """Parse failures per judge, under each harness's rule."""
    st.caption(md_escape(agreement.RULES_NOTE))  # literally: its "$ERROR$" drew as LaTeX, its * and _ as emphasis
    failures = cached_query(agreement.parse_failures, version, bench=bench)
    show_table(failures[failures["judge"].isin(judges)], f"parse_failures_{bench}",
               column_config={c: st.column_config.NumberColumn(format="%.3f")
                              for c in ("not_parsed_rate", "mean_fastchat_rule", "mean_swallow_rule", "mean_judgelens")})


# Lazy tabs: only the open tab's content runs and is sent, so a new browser tab draws the agreement table alone
# (not the 200 disagreements, the pairwise tables and the parse-failure scan behind the other three). A fragment:
# a tab change reruns only the tabs, not the filters and the report button above them.
@st.fragment
def tabs_section() -> None:
    tabs = st.tabs(["Agreement", "Reliability", "Largest disagreements", "Pairwise verdicts", "Parse failures"],
                   key="agr_tab", on_change="rerun")
    for tab, draw in zip(tabs, (agreement_tab, reliability_tab, disagreements_tab, pairwise_tab, failures_tab)):
        if tab.open:
            with tab:
                draw()


tabs_section()
