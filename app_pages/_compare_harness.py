"""The Compare page's mode "one model under two harnesses" (any two runs on linked questions): the linked
questions, the per-category gap, how the two runs were set up, and the attribution ladder.

Kept apart from app_pages/compare.py (which owns the within-one-bench modes): compare.py calls
``harness_compare(store, version)``. Thin: widgets in, ``lib`` out, drawn.
"""
from __future__ import annotations

import streamlit as st

from lib import harness as H
from lib.analysis import aliases, answer_features, coverage, harness_diff, linking, runs, score_copy
from lib.analysis.deltas import LEVEL_LABELS, LEVELS
from lib.errors import JudgeLensError
from lib.render import charts
from lib.render.safe_text import cards_html, csv_text, md_escape
from lib.render.textdiff import diff_html
from app_pages._state import keep_valid, publish_to_url, seed_from_url
from app_pages._store import Kept, cached_chart, cached_query, cached_query_given, cached_shared, kept_query
from app_pages._widgets import readable_dataframe, show_chart, show_error, show_table

SAMPLES_LABELS = {"mean": "Swallow: mean of the 5 samples", "first": "Swallow: sample 0 only (like FastChat's one)"}


def kept_scores(version: tuple):
    """For ``cached_query_given``: the store's scored items in memory (``score_copy``), one copy per data version for
    every session, read in the background from the first cache miss on (the default view, warmed at start). Each
    pick of a judge, a model or a run pairs its items there, not in the store (on a DuckLake store a pick's
    statement paid catalog look-ups and unsorted Parquet row groups: 0.2-0.3 s at a million judgments)."""
    return lambda: {"copy": cached_shared(score_copy.score_copy, version, background=True)}


def _default_pair(candidates) -> tuple[int, int]:
    """A = the JA harness's gpt-4o run when there is one, B = the best-covered run of another harness or bench;
    an analyst's verdicts (human:…) or a partial re-judge is never a default (lib.analysis.coverage's rule)."""
    labels = list(candidates["label"])
    judges = list(candidates["judge"])
    order = sorted(range(len(labels)), key=lambda i: (coverage.is_human(judges[i]), -int(candidates["items"].iloc[i]), i))
    a = next((i for i, (h, j) in enumerate(zip(candidates["harness"], judges)) if h == H.DEFAULT.name and j == "gpt-4o"),
             order[0])
    place_a = (candidates["harness"].iloc[a], candidates["bench"].iloc[a])
    b = next((i for i in order if (candidates["harness"].iloc[i], candidates["bench"].iloc[i]) != place_a
              and not coverage.is_human(judges[i])), next((i for i in order if i != a), a))
    return a, b


def harness_compare(store, version: tuple) -> None:
    """The view, drawn as fragments: a pick of the model or a run reruns, sends and redraws this view alone (not the
    page's title, View control and sidebar); the Rows level, the feature split, the setup section's expanders and
    the attribution section's widgets rerun only their own section. The judge endpoint form is in the sidebar,
    outside any fragment: read here, on a full run, and passed on."""
    from app_pages._endpoint import judge_endpoint

    version = tuple(version) + linking.links_version(store)
    seed_from_url("hx", {"model": "hx_model", "a": "hx_a", "b": "hx_b", "samples": "hx_samples"})
    _harness_view(store, version, judge_endpoint())


@st.fragment
def _harness_view(store, version: tuple, endpoint: tuple) -> None:
    table = cached_query(runs.runs, version)
    if table.empty:
        st.info("Nothing judged yet.")
        return
    table = table.assign(label=table["harness"] + " · " + table["bench"] + " · " + table["judge"] + " · " + table["model"])
    places = table.drop_duplicates(["canonical", "harness", "bench"])["canonical"].value_counts()
    models = sorted(places[places > 1].index) or sorted(table["canonical"].unique())  # under two harnesses or benches
    keep_valid("hx_model", models, next((m for m in models if "shisa-v2-llama3.1-8b" in m), models[0]))
    model = st.selectbox("Model", models, key="hx_model",
                         help="Models judged under more than one harness or bench. One model's names in the "
                              "harnesses are joined by aliases (provider routes such as hosted_vllm/, '__' for '/').")
    cands = table[table["canonical"] == model].reset_index(drop=True)
    if len(cands) < 2:
        st.info("This model has one run. Import the other harness's files for it.")
        return
    labels = list(cands["label"])
    ia, ib = _default_pair(cands)
    keep_valid("hx_a", labels, labels[ia])
    keep_valid("hx_b", labels, labels[ib])
    c1, c2 = st.columns(2)
    la = c1.selectbox("Run A", labels, key="hx_a")
    lb = c2.selectbox("Run B", labels, key="hx_b")
    if la == lb:
        st.info("A and B are the same run: pick two different ones.")
        return
    # Runs, not selectors, go to lib: they are the runs the store holds (picked from runs.runs), so no query
    # resolves them again (each resolution read every run of item_scores: 6 reads per rerun)
    ra = runs.Run(*cands.loc[labels.index(la), ["harness", "bench", "judge", "model"]])
    rb = runs.Run(*cands.loc[labels.index(lb), ["harness", "bench", "judge", "model"]])
    o1, o2 = st.columns([3, 2])
    keep_valid("hx_samples", list(runs.SAMPLE_MODES), "mean")
    samples = o1.radio("Scores", list(runs.SAMPLE_MODES), key="hx_samples", format_func=SAMPLES_LABELS.get,
                       horizontal=True)
    exclude = o2.toggle("Exclude edited and fuzzy links", key="hx_exclude",
                        help="Leave out questions whose text differs between the two benches.")
    publish_to_url("hx", {"view": "harness", "model": model, "a": la, "b": lb, "samples": samples})
    excl = ("edited", "fuzzy") if exclude else ()

    # What no pick of a run changes, for every bench of the model's runs (questions, references, links both ways,
    # ...): picking another run A or B reads none of it again; passed on kept (its key is hashed, not its frames)
    context = kept_query(harness_diff.setup_context, version, benches=tuple(sorted(set(cands["bench"]))))
    if ra.bench != rb.bench:
        s = harness_diff.link_summary_of(context.value, ra.bench, rb.bench)
        st.caption(f"{s['linked']} linked questions between {md_escape(ra.bench)} and {md_escape(rb.bench)}: {s['exact']} exact, "
                   f"{s['edited']} edited, {s['fuzzy']} fuzzy, {s['manual']} manual "
                   f"({s['questions_a']} and {s['questions_b']} questions).")
        _links_editor(store, version, ra.bench, rb.bench)
    else:
        # Their places, kept (the caption's and the links editor's): the browser matches a rerun's elements to the
        # drawn ones by position, and without them a pick of two runs on one bench drew every section below anew
        st.empty()
        st.empty()

    try:
        head = cached_query_given(runs.compare_runs, version, kept_scores(version), a=ra, b=rb,
                                  levels=("all", "category"), swallow_samples=samples, exclude_links=excl,
                                  context=context)
    except JudgeLensError as exc:
        show_error(exc)
        return
    _gap(version, ra, rb, samples, excl, context, head)
    _feature_gap(version, ra, rb, samples, excl)
    try:  # read after the gap is sent: the browser draws its chart and table meanwhile
        # the answers per model and bench, kept: another judge of run A or B reads none again
        answers = Kept.of_all(*(kept_query(harness_diff.model_answers, version, bench=r.bench, model=r.model)
                                for r in (ra, rb)))
        setup = cached_query(harness_diff.harness_diff, version, a=ra, b=rb, answers=answers, context=context)
    except JudgeLensError as exc:
        show_error(exc)
        return
    _setup_section(version, ra, rb, setup)

    from app_pages._compare_attribution import attribution_section

    attribution_section(store, version, ra, rb, endpoint)

    from lib.reports import harness_report

    def report() -> str:  # the ladder of these two runs, if one has run (read on download: the attribution section
        result = st.session_state.get("hx_ladder_result")  # is a fragment and runs one without this run)
        if result is not None and sorted(map(str, (result.forward.attrs.get("run_a"),
                                                   result.forward.attrs.get("run_b")))) \
                != sorted(map(str, (ra.selector, rb.selector))):
            result = None  # a ladder of two other runs
        return harness_report(store, ra.selector, rb.selector, swallow_samples=samples, exclude_links=excl,
                              attribution=result)

    st.download_button("Download the report (HTML)", data=report, file_name="judgelens_harness_report.html",
                       mime="text/html", on_click="ignore", icon=":material/download:", key="hx_report")


@st.fragment
def _gap(version: tuple, ra, rb, samples: str, excl: tuple, context, head) -> None:
    st.subheader("The gap")
    headline = runs.gap_headline(head)
    if headline:  # the result first, in one line; the rows below say where it comes from
        st.markdown(f"**{md_escape(headline)}**")
    # its own row: beside the other controls its last option ran off the page at 1440 px
    level = st.segmented_control("Rows", list(LEVELS), default="category", key="hx_level",
                                 format_func=LEVEL_LABELS.get) or "category"
    gap = head[head["level"] == level].reset_index(drop=True) if level in ("all", "category") else cached_query_given(
        runs.compare_runs, version, kept_scores(version), a=ra, b=rb, levels=(level,), swallow_samples=samples,
        exclude_links=excl, context=context)
    gap.attrs.update(head.attrs)
    if gap.empty:
        st.warning(md_escape(gap.attrs.get("note") or "Nothing pairs."))
    else:
        links = gap.attrs.get("links", {})
        st.caption(f"A minus B on the 1-10 scale, paired by linked question and turn ({', '.join(f'{v} {k}' for k, v in links.items())} "
                   "questions" + (f"; {gap.attrs['excluded']} items left out (edited/fuzzy)" if gap.attrs.get("excluded") else "")
                   + "). Questions are the unit; 95% t interval; p_adjusted is Holm over the rows shown. "
                   "Red: significant after Holm; grey: inside the noise.")
        show_chart(cached_chart(charts.delta_forest, gap, "A", "B"), "harness_gap")
        with st.expander("Paired items (edited and fuzzy links marked in the link column)", key="hx_pairs_open",
                         on_change="rerun") as pairs_box:
            if pairs_box.open:  # read and drawn when opened, not on every pick of a run
                pairs = cached_query(runs.paired_runs, version, a=ra, b=rb, swallow_samples=samples,
                                     exclude_links=excl, context=context)
                show_table(pairs.drop(columns=["question"]), "harness_pairs",
                           column_config={"link": st.column_config.TextColumn("link",
                                                                              help="exact, edited, fuzzy, manual")})
        show_table(gap.drop(columns=["model", "level"]), "harness_gap",
                   column_config={c: st.column_config.NumberColumn(format="%.3f")
                                  for c in ("mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "p_adjusted")})


@st.fragment
def _setup_section(version: tuple, ra, rb, setup) -> None:
    st.subheader("How the two runs were set up")
    st.caption("Computed from the imported files: judge, judge prompt, answers' system prompt, samples, temperature, "
               "truncation, reasoning, references, parse failures, scale, questions. differs: yes / no / "
               "cannot tell (one harness does not record it). The rows that differ come first.")
    shown = setup.assign(differs=setup["differs"].map({True: "yes", False: "no", None: "cannot tell"}))
    # One card per row, values wrapped: in a table the long values pushed differs and evidence off the page.
    differing = shown[shown["differs"] == "yes"]
    _setup_cards(differing)
    rest = shown[shown["differs"] != "yes"]
    if not rest.empty:
        with st.expander(f"The same in both, or cannot tell ({len(rest)})", key="hx_setup_rest_open",
                         on_change="rerun") as rest_box:
            if rest_box.open:
                _setup_cards(rest)
    with st.expander("As a table (with a link to an example item per row)", key="hx_setup_table_open",
                     on_change="rerun") as table_box:
        if table_box.open:
            readable_dataframe(shown, hide_index=True, width="stretch", key="hx_setup",
                         column_config={"example": st.column_config.LinkColumn("example", display_text="open item"),
                                        "evidence": st.column_config.TextColumn("evidence", width="large")})
    st.download_button("Setup table as CSV", csv_text(shown).encode(), "harness_setup.csv", "text/csv",
                       on_click="ignore", icon=":material/download:", key="hx_setup_csv")
    with st.expander("Judge prompt templates, A vs B (rebuilt from the stored prompts)", key="hx_prompts_open",
                     on_change="rerun") as prompts_box:
        # computed when opened: rebuilding both templates reads every stored prompt of both runs (a second at 1M)
        for p in cached_query(harness_diff.judge_prompt_diff, version, a=ra, b=rb) if prompts_box.open else ():
            st.markdown(f"**{md_escape(p['kind'])}** · red struck through: only in A; green: only in B")
            st.html(diff_html(p["ops"]))
            if p["only_b"]:
                st.caption("Sentences only in B:")
                st.text("\n".join(p["only_b"]))


def _setup_cards(rows) -> None:
    """One bordered card per setup row: what, whether it differs, A and B side by side, the evidence; every value
    is data from the files, shown escaped and wrapped. All the rows' cards are one HTML element (``cards_html``)."""
    def shown(value) -> str:
        return "—" if value is None or str(value) in ("", "nan", "None") else str(value)

    if not rows.empty:
        st.html(cards_html([{"title": row.area, "note": f"differs: {row.differs}",
                             "sides": [("A", shown(row.a)), ("B", shown(row.b))], "footer": row.evidence}
                            for row in rows.itertuples()]))


def _links_editor(store, version, bench_a: str, bench_b: str) -> None:
    with st.expander("Linked questions (confirm, change or remove)", key="hx_links_open", on_change="rerun") as box:
        if not box.open:  # the links and the alias suggestions (names compared pairwise) when opened
            return
        df = cached_query(linking.links, version, bench_a=bench_a, bench_b=bench_b)
        loose = df[df["method"].isin(["edited", "fuzzy"])]
        if not loose.empty:
            st.warning(f"{len(loose)} link(s) join questions whose text differs: check them.")
        show_table(df, f"links_{bench_a}_{bench_b}")
        if not loose.empty:
            pick = st.selectbox("Show the diff of", [f"{a} ↔ {b}" for a, b in zip(loose["question_id_a"],
                                                                                 loose["question_id_b"])], key="hx_diff_pick")
            qa, qb = pick.split(" ↔ ")
            for d in linking.link_diff(store, bench_a, qa, bench_b, qb):
                st.caption(f"turn {d['turn']}: " + ("same" if d["same"] else f"similarity {d['similarity']:.2f}"))
                st.html(diff_html(d["ops"]))
        c1, c2, c3 = st.columns([2, 2, 3])
        qa = c1.text_input(f"Question in {md_escape(bench_a)}", key="hx_link_a")
        qb = c2.text_input(f"Question in {md_escape(bench_b)}", key="hx_link_b")
        b1, b2 = c3.columns(2)
        if b1.button("Link (confirm) by hand", key="hx_link_set", disabled=not (qa and qb)):
            try:
                linking.set_link(store, f"{bench_a}:{qa}", f"{bench_b}:{qb}")
                st.rerun()
            except JudgeLensError as exc:
                show_error(exc)
        if b2.button("Remove this link", key="hx_link_rm", disabled=not (qa and qb)):
            if not linking.remove_link(store, f"{bench_a}:{qa}", f"{bench_b}:{qb}"):
                st.info("There is no such link.")
            else:
                st.rerun()
        al = cached_query(aliases.aliases, version)
        if not al.empty:
            st.caption("Model aliases (one model under several names) and suggestions to confirm: "
                       "python -m lib.cli aliases set NAME CANONICAL / aliases remove NAME.")
            readable_dataframe(al, hide_index=True, width="stretch")


@st.fragment
def _feature_gap(version, ra, rb, samples: str, excl: tuple) -> None:
    """The gap split by an answer feature (issue 25 point 11): a self-contained block of the two-harness view."""
    with st.expander("The gap by answer feature (Japanese share, length, code block, <think>, refusal phrase)",
                     key="hx_feature_open", on_change="rerun") as box:
        if not box.open:
            return
        keep_valid("hx_feature", list(answer_features.FEATURES), "japanese")
        f1, f2 = st.columns([3, 2])
        feature = f1.selectbox("Answer feature", list(answer_features.FEATURES), key="hx_feature",
                               format_func=answer_features.FEATURES.get)
        side = f2.radio("Bin by the answers of", ["a", "b"], horizontal=True, key="hx_feature_side",
                        format_func=lambda s: f"run {s.upper()}")
        try:
            by_bin = cached_query(answer_features.harness_gap_by_feature, version, a=ra.selector, b=rb.selector,
                                  feature=feature, side=side, swallow_samples=samples, exclude_links=excl)
        except JudgeLensError as exc:
            show_error(exc)
            return
        if by_bin.empty:
            st.info("No stored answer text joins these items: import the model_answer files.")
            return
        st.caption(f"A minus B per bin, binned by {md_escape(by_bin.attrs['binned_by'])} (the runs answered "
                   "separately); '—': no stored answer. Questions are the unit, 95% t interval, Holm over the bins "
                   "(coverage 95% in simulation at 10 and 80 questions per bin: bench/calibrate_feature_bins.py).")
        show_table(by_bin.drop(columns=["feature"]), "harness_gap_feature",
                   column_config={c: st.column_config.NumberColumn(format="%.3f")
                                  for c in ("mean_a", "mean_b", "delta", "ci_low", "ci_high", "p_value", "p_adjusted")})
