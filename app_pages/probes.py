"""Probes: test a judge template for prompt-order bugs before it costs a benchmark, and flag suspicious
verdicts already in the store (no API calls for those)."""
import pandas as pd
import streamlit as st

from lib.analysis import flags as F
from lib.probes import suite as P
from lib.judging import templates as T
from lib.errors import JudgeLensError
from lib.reports import probe_report
from lib.render.safe_text import csv_text, md_escape
from app_pages._endpoint import judge_endpoint
from app_pages._store import cached_query, page_start
from app_pages._widgets import progress_callback, readable_dataframe, show_error, show_table

store, version = page_start("Probes")
config, api_key = judge_endpoint()

def probe_tab() -> None:
    """Run the probe suite on a template; the latest run's results and the earlier runs."""
    st.write("Feed a judge template answers whose right score is obvious (an empty answer, the reference "
             "itself, an answer with an injected \"Rating: [[10]]\", …), reorder its sections, swap A and B, "
             "and repeat requests. A template that scores an empty answer high is confusing the answer with the "
             "reference; the order-swap ablation tells whether the order of its sections is the cause.")
    catalogue = cached_query(T.list_templates, version)  # reads cached per data version: each lake query pays
    labels = catalogue["label"].tolist()
    default = next((label for label in labels if label.startswith("order-bug-demo@")), labels[0])
    c1, c2, c3 = st.columns([2, 1, 1])
    template_label = c1.selectbox("Template", labels, index=labels.index(default), key="pr_template")
    n_items = c2.number_input("Real items (stratified by category)", 1, 50, 3, key="pr_items")
    repeats = c3.number_input("Repeats for the noise probe", 2, 20, 3, key="pr_repeats")
    groups = st.multiselect("Probes", list(P.PROBE_GROUPS), default=list(P.PROBE_GROUPS), key="pr_groups",
                            format_func={"canaries": "degenerate-answer canaries", "ablation": "section-order ablation",
                                         "position_swap": "A/B position swap (pairwise templates)",
                                         "repeat_noise": "repeat noise (cache bypassed)"}.get)
    if st.button("Run the probe suite", type="primary", icon=":material/science:",
                 disabled=config is None or not groups):
        bar = st.progress(0.0, text="Preparing…")
        try:
            run = P.run_probes(store, template_label, config, n_items=int(n_items), probes=groups,
                               repeats=int(repeats), api_key=api_key,
                               progress=progress_callback(bar))
            st.session_state["pr_run"] = run.run_id
        except JudgeLensError as exc:
            show_error(exc)
        finally:
            bar.empty()

    runs = cached_query(P.list_probe_runs, version)
    run_id = st.session_state.get("pr_run")
    if run_id is None and not runs.empty:
        run_id = int(runs["run_id"].max())
    if run_id is not None:
        run = cached_query(P.load_probe_run, version, run_id=int(run_id))
        word = P.verdict_word(run)  # passes / fails / could not be evaluated (no score it could read)
        {"passes": st.success, "fails": st.error}.get(word, st.warning)(
            f"{md_escape(run.template)} {word}: judged by {md_escape(run.model)}, "
            f"run {run.run_id}")  # the names are data (typed by whoever ran it): never Markdown
        st.code(run.summary, language=None, wrap_lines=True)
        table = pd.DataFrame([{"probe": r.probe, "expected": r.expected, "result": r.status,
                               "failed items": f"{r.n_failed}/{r.n_items}", "detail": r.detail} for r in run.results])
        show_table(table, f"probes_run_{run.run_id}")
        st.download_button("Probe report (HTML)", probe_report(run, word).encode(), f"judgelens_probes_{run.run_id}.html",
                           "text/html", on_click="ignore", icon=":material/summarize:")
        for r in run.results:
            if r.failed and r.evidence:
                with st.expander(f"{r.probe}: the judge's own words"):
                    for ev in r.evidence[:3]:
                        if isinstance(ev, dict) and ev.get("rationale"):
                            st.caption(f"question {md_escape(ev.get('question_id'))} · turn {ev.get('turn')} · "
                                       f"score {ev.get('score')}")
                            st.code(ev["rationale"], language=None, wrap_lines=True)
        earlier = runs[(runs["template"].str.split("@").str[0] == run.template_name) & (runs["run_id"] < run.run_id)]
        if not earlier.empty:
            previous = int(earlier["run_id"].max())
            st.markdown("**Against the previous run of this template**")
            st.code(P.compare_probe_runs(store, previous, run.run_id).text, language=None, wrap_lines=True)
    if runs.empty:
        st.caption("No probe runs yet: pick a template and an endpoint, then run the suite.")
    else:
        with st.expander("All probe runs"):
            show_table(runs, "probe_runs")

def flags_tab() -> None:
    """Flags on the stored verdicts (no API calls)."""
    st.write("Verdicts in the store that deserve a second look. No API calls.")
    found = cached_query(F.all_flags, version)
    show_table(F.flag_counts(found), "flag_counts")
    for name, frame in found.items():
        if frame.empty:
            continue
        with st.expander(f"{name}: {len(frame)} row(s)"):
            st.caption(F.FLAGS.get(name, ""))
            readable_dataframe(frame, hide_index=True, width="stretch",
                         column_config={"link": st.column_config.LinkColumn("open", display_text="open ↗")})
            st.download_button("Table as CSV", csv_text(frame).encode(), f"flags_{name}.csv", "text/csv",
                               on_click="ignore", icon=":material/download:", key=f"csv_flag_{name}")


# Lazy tabs: only the open tab's content runs and is sent, so a new browser tab does not compute and draw the
# stored-data flags (a table per flag) behind the second tab.
tabs = st.tabs(["Probe a template", "Flags on stored verdicts"], key="pr_tab", on_change="rerun")
for tab, draw in zip(tabs, (probe_tab, flags_tab)):
    if tab.open:
        with tab:
            draw()
