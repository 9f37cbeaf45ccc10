"""The attribution ladder section of the harness comparison: estimate, confirm, re-judge, waterfall.

Nothing is sent before the user confirms the estimate (requests, cache hits, cost). The endpoint comes from the
sidebar form shared with the Workbench and Probes.
"""
from __future__ import annotations

import streamlit as st

from lib.errors import JudgeLensError
from lib.judging import attribution
from lib.render import charts
from lib.render.safe_text import md_escape
from pages._common import judge_endpoint, show_chart, show_error, show_table


def attribution_section(store, version, ra, rb) -> None:
    st.subheader("Attribute the gap")
    st.caption("Re-judge A's answers on the linked items: first with A's own setup against your endpoint (replay: "
               "the judge's drift, measured on its own), then switching one judge-side factor at a time to B's "
               "setting. The last bar, residual, is B's stored score minus A's answers judged B's way: what the "
               "answers themselves contribute. Calls go through the re-judge cache: a step already judged costs "
               "nothing.")
    config, api_key = judge_endpoint()
    c1, c2, c3 = st.columns([3, 1, 1])
    steps = c1.multiselect("Factors, in this order", list(attribution.STEPS), default=list(attribution.STEPS),
                           key="hx_steps", format_func=attribution.STEP_LABELS.get)
    items = c2.number_input("Items", 2, 10_000, 20, key="hx_items",
                            help="Linked items to re-judge, question by question over the categories.")
    reverse = c3.toggle("Reverse", key="hx_reverse", help="B's answers judged A's way, factor by factor.")
    wanted = (ra, rb, tuple(steps), int(items), bool(reverse), config)
    ladder = st.session_state.get("hx_ladder")
    if ladder is not None and st.session_state.get("hx_ladder_for") != wanted:
        ladder = st.session_state["hx_ladder"] = None
    if config is None:
        st.info("Set a judge endpoint in the sidebar first.")
        return
    if st.button("Estimate the calls", key="hx_estimate", icon=":material/calculate:"):
        try:
            ladder = attribution.Ladder(store, ra, rb, config, steps=steps, items=int(items), reverse=reverse)
            st.session_state["hx_estimate_result"] = ladder.prepare()
            st.session_state["hx_ladder"], st.session_state["hx_ladder_for"] = ladder, wanted
        except JudgeLensError as exc:
            show_error(exc)
            return
    if ladder is not None:
        est = st.session_state["hx_estimate_result"]
        cost = (f"; expected cost ~\\${est['cost_expected']:.4f} (at most \\${est['cost_upper']:.4f})"
                if est["cost_expected"] is not None else "; set prices in the sidebar for a cost estimate")
        st.info(f"{est['steps']} steps × {est['items']} items: {est['requests']} requests, {est['cached']} from the "
                f"cache, {est['already_judged']} already judged, **{est['to_send']} to send** to "
                f"{md_escape(config.base_url)} ({md_escape(config.model)} for the replay"
                + (", then B's judge" if "judge" in steps else "")
                + f"){cost}.", icon=":material/info:")
        if st.button(f"Run the ladder ({est['to_send']} calls)", key="hx_run", type="primary",
                     icon=":material/play_arrow:"):
            bar = st.progress(0.0, text="re-judging")

            def progress(i, n, done, total):
                bar.progress(min(1.0, (i + (done / total if total else 1)) / n),
                             text=f"step {i + 1}/{n}: {done}/{total} items")

            try:
                st.session_state["hx_ladder_result"] = ladder.run(api_key=api_key, progress=progress)
            except JudgeLensError as exc:
                show_error(exc)
            finally:
                st.session_state["hx_ladder"] = None
    result = st.session_state.get("hx_ladder_result")
    if result is not None and result.attrs.get("run_a") in (ra.selector, rb.selector):
        st.caption(f"A = {md_escape(result.attrs['label_a'])}; B = {md_escape(result.attrs['label_b'])}; "
                   f"{result.attrs['used']} items "
                   "with a score at every step. " + attribution.LADDER_NOTE)
        show_chart(charts.ladder_waterfall(result), "attribution_waterfall")
        shown = result.assign(step=result["step"].map(lambda s: attribution.STEP_LABELS.get(s, s)))
        show_table(shown, "attribution_ladder",
                   column_config={c: st.column_config.NumberColumn(format="%.3f")
                                  for c in ("mean", "delta", "ci_low", "ci_high")})
