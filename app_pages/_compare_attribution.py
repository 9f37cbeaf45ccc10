"""The full waterfall of the harness comparison: every cause of the gap gets its own bar (issue 21).

A model endpoint (the model under test) next to the judge endpoint of the sidebar; each side's generation setup
(from the files, editable where they do not show it); the cost of every step on both endpoints before any call,
a confirmation, progress; the waterfall in both orders side by side, the interactions, the Shapley split, and
what each bar means. Without a model endpoint: the judge-side steps, and what the stored answers tell alone
(``lib.analysis.answer_stats``). Nothing expensive on a rerun: the stored-data view is a cached query, the
ladder runs only on the button and its result is kept in the session.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from lib.analysis import answer_stats
from lib.attribution import ladder as L
from lib.errors import JudgeLensError, LadderInterrupted, UnknownSystemPromptError
from lib.generation.questions import run_answer_facts
from lib.generation.setups import FASTCHAT_TYPICAL_SYSTEM_PROMPT, GenerationSetup
from lib.render import charts
from lib.render.safe_text import md_escape
from app_pages._state import keep_values
from app_pages._store import cached_chart, cached_query
from app_pages._widgets import show_chart, show_error, show_table


def _stored_view(store, version, ra, rb) -> None:
    st.markdown("**What the stored answers tell without any call**")
    st.caption("Per run: samples per item, the share of samples that are exact copies of sample 0 (Swallow at "
               "temperature 0), sample 0 vs the N-sample mean and the per-sample spread, and the share of answers "
               "that are not Japanese. " + answer_stats.NOTE)
    try:  # the answers' facts per model: another judge of run A (or of B) reads no answer again
        view = pd.DataFrame([answer_stats.view_row(
            run, cached_query(answer_stats.model_answer_facts, version, bench=run.bench, model=run.model),
            cached_query(answer_stats.sample_scores, version, run=run)) for run in (ra, rb)])
    except JudgeLensError as exc:
        show_error(exc)
        return
    shown = view.assign(mean_per_sample=view["mean_per_sample"].map(lambda v: " ".join(f"{x:.2f}" for x in v)))
    show_table(shown, "hx_answer_stats")


def _system_prompt(run, side: str, store, version):
    """The side's stated system prompt (``...``: not stated), from a text field prefilled with what its files
    show; FastChat files show none."""
    facts = cached_query(run_answer_facts, version, run=run) if run.harness == "swallow" else {}
    recorded = (facts.get("system_prompts") or [None])[0] if facts else None
    key = f"hx_sp_{side}"
    label = f"{side}'s system prompt ({run.harness})"
    if run.harness == "fastchat":
        text = st.text_input(label, key=key, placeholder=f"FastChat files do not record it; e.g. "
                                                         f"{FASTCHAT_TYPICAL_SYSTEM_PROMPT}",
                             help="The model adapter's conversation template decides it. JudgeLens never guesses: "
                                  "state it, or tick 'none'.")
    else:
        seeded = f"hx_sp_seeded_{side}"  # prefilled with what this run's files show; a run showing another: again
        if st.session_state.get(seeded, ...) != recorded:
            st.session_state[key], st.session_state[seeded] = recorded or "", recorded
        text = st.text_input(label, key=key, help="As the run's files show it; edit to state another.")
    none = st.checkbox(f"{side} sends no system prompt", key=f"hx_sp_none_{side}")
    if none:
        return None
    return text if text else ...


# The section's fields: kept while the expander is closed (``keep_values``), so their defaults are set in the
# session, never with ``value=`` / ``default=`` (Streamlit warns when a widget has both).
FIELD_DEFAULTS = {"hx_ans_url": "", "hx_ans_model": "", "hx_ans_key": "", "hx_sp_A": "", "hx_sp_B": "",
                  "hx_sp_none_A": False, "hx_sp_none_B": False, "hx_items": 20, "hx_both": True, "hx_shapley": 0}


@st.fragment
def attribution_section(store, version, ra, rb, endpoint: tuple) -> None:
    """A fragment: its fields and buttons rerun this section alone. A lazy expander: its fields, the stored answers'
    view and its queries are drawn (and read) once it is opened, not on every pick of a run; what was typed in them
    is kept while it is closed. ``endpoint``: ``judge_endpoint()``'s (config, api_key), read by the caller outside
    the fragment (its form is in the sidebar)."""
    keep_values(*FIELD_DEFAULTS, "hx_order")
    for key, value in FIELD_DEFAULTS.items():
        st.session_state.setdefault(key, value)
    with st.expander("Attribute the gap: every cause gets a bar (replay, regenerate, each factor, residual)",
                     key="hx_attr_open", on_change="rerun", icon=":material/bar_chart:") as box:
        if box.open:
            _attribution(store, version, ra, rb, endpoint)


def _attribution(store, version, ra, rb, endpoint: tuple) -> None:
    st.caption("Start from A's stored score and walk to B's, one cause at a time, on the same linked items: replay "
               "(A's answers judged A's way today: the judge's drift), regenerate (A's answers made again A's way "
               "on your model endpoint: the model's drift), then each generation factor (system prompt, "
               "temperature, samples, turn-2 context, max_tokens) and each judge-side factor (prompt, judge, judge "
               "max_tokens, references, truncation, reasoning) switched to B's, then the residual (what no factor "
               "explains). Every request goes through the one request cache: a state already reached costs nothing.")
    config, api_key = endpoint
    c1, c2, c3 = st.columns([3, 2, 2])
    answer_url = c1.text_input("Model endpoint (serving the model under test)", key="hx_ans_url",
                               placeholder="http://127.0.0.1:8000/v1 (leave empty: judge-side steps only)")
    answer_model = c2.text_input("Model name at that endpoint", key="hx_ans_model")
    answer_key = c3.text_input("Its API key (this session only)", type="password", key="hx_ans_key")
    with_answers = bool(answer_url.strip() and answer_model.strip())
    if not with_answers:
        st.info("No model endpoint: the generation steps need one (a vLLM or llama.cpp server, an API serving the "
                "model). Shown below: the judge-side steps, and what the stored answers tell alone.",
                icon=":material/info:")
        _stored_view(store, version, ra, rb)
    sp_a = sp_b = ...
    if with_answers:
        s1, s2 = st.columns(2)
        with s1:
            sp_a = _system_prompt(ra, "A", store, version)
        with s2:
            sp_b = _system_prompt(rb, "B", store, version)
        try:
            ga = cached_query(GenerationSetup.from_run, version, run=ra, system_prompt=sp_a)
            gb = cached_query(GenerationSetup.from_run, version, run=rb, system_prompt=sp_b)
            rows = [{"field": x["field"], "A": x["value"], "A source": x["source"], "B": y["value"],
                     "B source": y["source"]} for x, y in zip(ga.describe(), gb.describe())]
            st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch", key="hx_gen_setups")
        except UnknownSystemPromptError as exc:
            show_error(exc)
            return
        except JudgeLensError as exc:
            show_error(exc)
            return
    factors = L.FACTORS if with_answers else L.JUDGE_FACTORS
    if st.session_state.get("hx_order_of") != factors:  # every factor, whenever the choice of factors changes
        st.session_state["hx_order"], st.session_state["hx_order_of"] = list(factors), factors
    o1, o2, o3, o4 = st.columns([4, 1, 1, 1])
    picked = o1.multiselect("Factors, in this order", list(factors), key="hx_order", format_func=L.STEP_LABELS.get)
    items = o2.number_input("Items", 2, 10_000, key="hx_items",
                            help="Linked items, question by question over the categories.")
    both = o3.toggle("Both orders", key="hx_both", help="Also B's answers made A's way: a factor "
                     "whose effect changes between the orders interacts with another.")
    shapley = o4.number_input("Shapley orders", 0, 50, key="hx_shapley",
                              help="Average each factor's effect over this many orders (0: off).")
    if config is None:
        st.info("Set a judge endpoint in the sidebar first.")
        return
    answer = None
    if with_answers:
        try:
            answer = L.AnswerEndpoint(answer_url.strip(), answer_model.strip(), api_key=answer_key or api_key)
        except JudgeLensError as exc:
            show_error(exc)
            return
    wanted = (ra, rb, tuple(picked), int(items), bool(both), int(shapley), config, answer, sp_a, sp_b)
    if st.session_state.get("hx_ladder_for") != wanted:
        st.session_state["hx_ladder"] = None
    if st.button("Estimate the cost", key="hx_estimate", icon=":material/calculate:", disabled=not picked):
        try:
            ladder = L.Attribution(store, ra, rb, config, answer=answer, a_system_prompt=sp_a, b_system_prompt=sp_b,
                                   order=picked, both_orders=both, shapley=int(shapley), items=int(items))
            st.session_state["hx_estimate_result"] = ladder.prepare()
            st.session_state["hx_ladder"], st.session_state["hx_ladder_for"] = ladder, wanted
        except JudgeLensError as exc:
            show_error(exc)
            return
    ladder = st.session_state.get("hx_ladder")
    if ladder is not None:
        est = st.session_state["hx_estimate_result"]
        st.info(md_escape(L.estimate_text(est)) + f" (judge: {md_escape(config.base_url)}"
                + (f"; model: {md_escape(answer.base_url)}" if answer else "") + ").", icon=":material/info:")
        with st.expander("Cost per step"):
            show_table(est["per_step"], "hx_cost_per_step")
        if st.button(f"Run the waterfall ({est['to_send']} requests)", key="hx_run", type="primary",
                     icon=":material/play_arrow:"):
            bar = st.progress(0.0, text="starting")

            def progress(text, done, total):
                bar.progress(min(1.0, done / total) if total else 1.0, text=f"{text}: {done}/{total}")

            try:
                st.session_state["hx_ladder_result"] = ladder.run(judge_api_key=api_key, progress=progress)
            except LadderInterrupted as exc:
                show_error(exc)
            except JudgeLensError as exc:
                show_error(exc)
            finally:
                st.session_state["hx_ladder"] = None
    result = st.session_state.get("hx_ladder_result")
    if result is not None and result.forward.attrs.get("run_a") in (ra.selector, rb.selector):
        show_waterfall(result)


def show_waterfall(result) -> None:
    fwd = result.forward
    st.caption(f"A = {md_escape(fwd.attrs['label_a'])}; B = {md_escape(fwd.attrs['label_b'])}; {fwd.attrs['used']} "
               "items with a score at every step. " + md_escape(L.NOTE))
    main = {k: v for k, v in result.orders.items() if not k.startswith(L.SHAPLEY)}
    show_chart(cached_chart(charts.ladder_waterfalls, main), "attribution_waterfall")
    cols = st.columns(len(main))
    for col, (label, table) in zip(cols, main.items()):
        with col:
            st.markdown(f"**{md_escape(label)}**")
            shown = table.assign(step=table["step"].map(lambda s: L.STEP_LABELS.get(s, s)))
            show_table(shown, f"attribution_ladder_{label}",
                       column_config={c: st.column_config.NumberColumn(format="%.3f")
                                      for c in ("mean", "delta", "ci_low", "ci_high")})
    if not result.interactions.empty:
        flagged = result.interactions[result.interactions["interacts"]]
        if len(flagged):
            st.warning("These factors interact (their effect changes between orders by more than its interval): "
                       + md_escape(", ".join(f"{r.factor} ({r.lowest:+.2f} to {r.highest:+.2f})"
                                             for r in flagged.itertuples())) + ". The order decides how their "
                       "shared part is split; the Shapley average splits it evenly.")
        show_table(result.interactions, "attribution_interactions")
    if result.shapley is not None:
        st.markdown("**Shapley-style split** (each factor's effect averaged over the orders run)")
        show_table(result.shapley, "attribution_shapley")
    with st.expander("What each bar means, and when to trust it"):
        st.dataframe(pd.DataFrame([{"bar": L.STEP_LABELS.get(k, k), "meaning": v} for k, v in L.STEP_MEANING.items()]),
                     hide_index=True, width="stretch")
        st.text(L.NOTE)
