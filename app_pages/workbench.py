"""Workbench: edit a judge template, re-judge this item (or a batch) through any OpenAI-compatible API,
and compare the new verdict with the stored one.

The item comes from the URL (the item view's "Re-judge in Workbench" link). The API key is read from
the password field (this browser session only), then Streamlit secrets ([judgelens] OPENAI_API_KEY),
then the OPENAI_API_KEY environment variable. It is never stored.
"""
import streamlit as st

from lib.analysis import queries
from lib.analysis import item_view as iv
from lib.judging.batch import RejudgeBatch, default_label, rejudge_one
from lib.keys import ItemKey
from lib.judging import templates as T
from lib.errors import JudgeLensError
from lib.judging.context import CONTEXT_VARIABLES, bench_texts, build_context, question_item, select_items
from lib.judging.jobs import BackgroundJob
from lib.judging.parsers import KINDS
from lib.render.safe_text import md_escape
from lib.render.textdiff import char_diff, diff_html, diff_stats
from app_pages._endpoint import judge_endpoint
from app_pages._state import keep_valid, keep_values, publish_to_url, seed_from_url
from app_pages._store import cached_item_query, cached_query, data_version, get_store, kept_query
from app_pages._widgets import empty_state, show_error, show_text

BATCH_KEYS = ("wb_b_cat", "wb_b_turn", "wb_b_model", "wb_b_order", "wb_b_limit", "wb_b_conc", "wb_b_label",
              "wb_b_label_auto")

store = get_store()
st.title("Workbench")
version = data_version(store)
benches = cached_query(iv.benches, version)  # lists: cached per data version
if not benches:
    empty_state()
    st.stop()


@st.cache_resource(show_spinner=False)
def _builtins_stored(db: str) -> bool:
    T.ensure_builtins(get_store())
    return True


_builtins_stored(str(store.path))

# --- the item (seeded from the URL once) ------------------------------------------------------------
seed_from_url("wb", {"bench": "wb_bench", "q": "wb_q", "model": "wb_model", "judge": "wb_judge",
                     "turn": "wb_turn", "sample": "wb_sample"}, ints=("turn", "sample"))


keep_valid("wb_bench", benches)
bench = st.session_state["wb_bench"]
qs = cached_query(iv.questions, version, bench=bench)
models = cached_query(iv.models, version, bench=bench)
if qs.empty or not models:
    st.info("This bench has no questions or answers to re-judge: import its question.jsonl and model answers.")
    st.stop()
keep_valid("wb_q", qs["question_id"].tolist())
keep_valid("wb_model", models)
keep_valid("wb_turn", [1, 2], 1)
labels = {r.question_id: f"{r.question_id} · {r.category} · {(r.first_turn or '')[:40]}" for r in qs.itertuples()}
c1, c2, c3, c4 = st.columns([1.2, 3, 0.8, 2.2])
c1.selectbox("Bench", benches, key="wb_bench")
c2.selectbox("Question", qs["question_id"].tolist(), key="wb_q", format_func=lambda q: labels.get(q, q))
c3.radio("Turn", [1, 2], key="wb_turn", horizontal=True)
c4.selectbox("Model", models, key="wb_model")
item = ItemKey(bench, st.session_state["wb_q"], int(st.session_state["wb_turn"]), st.session_state["wb_model"],
                  int(st.session_state.get("wb_sample") or 0))
# The verdicts without the rendered judge prompts and rationales (their texts: on a DuckLake store most of the read):
# the stored verdict's texts are read only beside a new verdict below. The bench's questions and references are read
# once per data version; this model's answers to the question (every turn and sample) and its verdicts once per
# question and model, side by side; the turn's context (its reference, the pre-processing) is made from them in
# memory: another model reads its answers and verdicts alone, another turn nothing
texts = kept_query(bench_texts, version, bench=item.bench)
every_turn, data = cached_item_query(question_item, version, bench=item.bench, question_id=item.question_id,
                                     model=item.model, sample=item.sample, texts=texts)
stored = iv.turn_verdicts(every_turn, item.turn)
judges = stored["judge"].drop_duplicates().tolist()
if judges:
    keep_valid("wb_judge", judges)
publish_to_url("wb", {"bench": item.bench, "q": item.question_id, "turn": str(item.turn), "model": item.model,
                      **({"judge": st.session_state["wb_judge"]} if judges else {})})

# --- the template ---------------------------------------------------------------------------------------
catalogue = cached_query(T.list_templates, version)  # cached per data version: each lake query pays
names = catalogue["label"].tolist()
stored_row = stored[stored["judge"] == st.session_state.get("wb_judge")].head(1)
default = T.suggest_template(names, stored_row["prompt_name"].iloc[0] if len(stored_row) else None, bench,
                             stored_row["harness"].iloc[0] if len(stored_row) else None)
left, right = st.columns([2, 1])
with right:
    st.subheader("Compare with")
    if judges:
        st.selectbox("Stored judge", judges, key="wb_judge")
    else:
        st.caption("No stored verdict for this item.")
    keep_valid("wb_template", names, default if default in names else names[0])
    st.selectbox("Start from template", names, key="wb_template",
                 help="Built-ins are converted from the harnesses' own prompt files; your edits are saved as "
                      "new versions of a name.")
    # Lazy expanders (drawn only while open): a new tab of the Workbench does not pay for their widgets and table.
    with st.expander("Add templates from an imported judge_prompts.jsonl", key="wb_prompts_open",
                     on_change="rerun") as prompts_box:
        if prompts_box.open:
            prompt_files = T.stored_prompt_sources(store)
            if prompt_files.empty:
                st.caption("Import a fork's judge_prompts.jsonl on the Import page; its prompts can then be added "
                           "here.")
            else:
                src = st.selectbox("File", prompt_files["source_id"].tolist(), key="wb_prompt_src",
                                   format_func=lambda i: "{} ({} prompts)".format(
                                       *prompt_files.set_index("source_id").loc[i, ["path", "prompts"]]))
                prefix = st.text_input("Name prefix", f"src{src}-", key="wb_prompt_prefix")
                if st.button("Add as templates", key="wb_prompt_add"):
                    added = T.save_stored_prompts(store, int(src), prefix)
                    st.success(f"Added {len(added)} template(s): " + ", ".join(md_escape(t.label) for t in added))
    base = cached_query(T.get_template, version, ref=st.session_state["wb_template"])
    if base.provenance:
        st.caption("Provenance: " + md_escape(base.provenance)[:300])
    with st.expander("Variables a template can use", key="wb_vars_open", on_change="rerun") as vars_box:
        if vars_box.open:
            st.dataframe([{"variable": k, "meaning": v} for k, v in CONTEXT_VARIABLES.items()], hide_index=True)

with left:
    st.subheader("Template")
    edited_messages = []
    for i, message in enumerate(base.messages):
        text = st.text_area(f"Message {i + 1} ({message['role']})", message["content"], height=220 if i else 120,
                            key=f"wb_msg_{base.template_id}_{i}")
        edited_messages.append({"role": message["role"], "content": text})
    p1, p2, p3, p4 = st.columns(4)
    kind = p1.selectbox("Output parser", KINDS, index=KINDS.index(base.parser.get("kind", "fastchat_single")),
                        key=f"wb_parser_{base.template_id}")
    parser = dict(base.parser, kind=kind)
    if kind == "regex":
        parser["pattern"] = st.text_input("Regex with one capture group", base.parser.get("pattern", r"Score: (\d+)"),
                                          key=f"wb_regex_{base.template_id}")
    pre = dict(base.preprocess or {})
    pre["strip_think"] = p2.toggle("Strip <think>", bool(pre.get("strip_think")), key=f"wb_think_{base.template_id}")
    pre["strip_chat_tokens"] = p3.toggle("Strip chat tokens", bool(pre.get("strip_chat_tokens")),
                                         key=f"wb_tok_{base.template_id}")
    truncate = p4.number_input("Truncate answers to (chars, 0 = no)", 0, 1_000_000, int(pre.get("truncate") or 0),
                               step=1024, key=f"wb_trunc_{base.template_id}")
    pre["truncate"] = int(truncate) or None
    template = base.edited(messages=edited_messages, parser=parser, preprocess=pre)
    changed = template.content() != base.content()

try:
    T.check_template(template)
    missing = T.undeclared_variables(template)
    unknown = [v for v in missing if v not in CONTEXT_VARIABLES and v not in ("data", "response")]
    if unknown:
        st.warning("Not in the item context (rendering will fail): " + ", ".join(md_escape(v) for v in unknown))
    context = build_context(store, item, preprocess=template.preprocess, judge_hint=st.session_state.get("wb_judge"),
                            data=data)
    messages = T.render(template, context)
except JudgeLensError as exc:
    show_error(exc)
    messages = None

if changed:
    s1, s2 = st.columns([2, 1])
    new_name = s1.text_input("Save as a new version of", base.name if not base.builtin else f"{base.name}-edit",
                             key="wb_save_name")
    def save_version(template=template, base=base):
        saved = T.save_template(store, template.edited(name=st.session_state["wb_save_name"].strip()), parent=base)
        st.session_state["wb_template"] = saved.label  # a callback runs before the selectbox is drawn

    s2.button("Save version", icon=":material/save:", disabled=messages is None or not new_name.strip(),
              on_click=save_version)
    with st.expander("What changed (against " + md_escape(base.label) + ")"):
        st.code(T.diff_versions(store, base, template) or "(no change)", language="diff")

with st.expander("Preview: the exact messages that will be sent", expanded=not judges):
    for m in messages or []:
        st.caption(m["role"])
        show_text(m["content"])

# --- the judge endpoint (sidebar) ---------------------------------------------------------------------
config, api_key = judge_endpoint()

# --- re-judge this item -----------------------------------------------------------------------------------
st.subheader("Re-judge this item")
force = st.checkbox("Call the judge even if this exact request is cached", key="wb_force")
if st.button("Re-judge", type="primary", icon=":material/gavel:", disabled=messages is None or config is None):
    try:
        with st.spinner(f"Asking {config.model}…"):
            st.session_state["wb_result"] = (item, rejudge_one(
                store, template, config, item, api_key=api_key, force=force,
                judge_hint=st.session_state.get("wb_judge")))
    except JudgeLensError as exc:
        show_error(exc)

result = st.session_state.get("wb_result")
if result and result[0] == item:
    new = result[1]
    parsed = new["parsed"]
    old = None
    if len(stored_row):  # the stored verdict with its texts: the item's own verdicts, in the same order
        full = cached_item_query(iv.verdicts, version, key=item)
        old = full[full["judge"] == stored_row["judge"].iloc[0]].iloc[0]
    a, b = st.columns(2)
    with a.container(border=True):
        st.markdown("**Stored** · " + (md_escape(old["judge"]) if old is not None else "none"))
        if old is not None:
            st.metric("score", f"{old['score']:g}" if old["parse_status"] == "ok" else "none")
            show_text(old["rationale"] or "", height=320)
    with b.container(border=True):
        st.markdown("**New** · " + md_escape(f"{config.model if config else ''} + {template.label}"))
        value = parsed.score if parsed.ok else parsed.verdict
        st.metric("score" if parsed.score is not None or not parsed.ok else "verdict",
                  "none" if value is None else (f"{value:g}" if isinstance(value, float) else str(value)),
                  help=f"parser: {parsed.method}; status: {parsed.status}" + (f"; {parsed.note}" if parsed.note else ""))
        if not parsed.ok:
            st.warning(f"{parsed.status.replace('_', ' ')}" + (f": read {parsed.value:g}" if parsed.value is not None else ""))
        show_text(new["text"] or "", height=320)
        st.caption(("from the cache (no cost)" if new["cached"] else
                    f"{new['prompt_tokens']} + {new['completion_tokens']} tokens"
                    + (f", ~${new['cost']:.4f}" if new["cost"] is not None else "")))
    if old is not None:
        which = st.segmented_control("Diff", ["rationale", "prompt"], default="rationale", key="wb_diff")
        old_text = old["judge_prompt"] if which == "prompt" else old["rationale"]
        new_text = new["text"] if which != "prompt" else "\n\n".join(m["content"] for m in new["messages"]
                                                                    if m["role"] == "user")
        ops = char_diff(old_text or "", new_text or "")
        st.caption(f"{diff_stats(ops)['similarity']:.0%} similar (stored struck through, new highlighted)")
        st.html(diff_html(ops))

# --- batch --------------------------------------------------------------------------------------------------
def batch_form() -> None:
    """The batch's filters, label and "Estimate and run" (inside the lazy expander below)."""
    st.caption("The new verdicts become a new judge (the label below) that every page compares like any other. "
               "One template judges every chosen item: FastChat itself uses its *-math-* templates (with the "
               "reference) for math, reasoning and coding and single-v1 for the rest, so filter by category to match.")
    f1, f2, f3, f4 = st.columns(4)
    cats = ["(all)", *sorted(qs["category"].dropna().unique())]
    cat = f1.selectbox("Category", cats, key="wb_b_cat")
    turn = f2.selectbox("Turn", ["(all)", 1, 2], key="wb_b_turn")
    bmodel = f3.selectbox("Answers of", ["(all)", *models], key="wb_b_model")
    order = f4.selectbox("Which items", ["judged by the stored judge", "largest disagreements first", "every answer"],
                         key="wb_b_order")
    g1, g2, g3 = st.columns(3)
    limit = g1.number_input("At most (items)", 1, 100_000, 20, key="wb_b_limit")
    concurrency = g2.number_input("Concurrency", 1, 64, 8, key="wb_b_conc")
    # The label follows the endpoint and template (MODEL+TEMPLATE@vN) until the user types their own: a widget
    # keeps its first value otherwise, and verdicts would be stored under a model that did not make them.
    auto_label = default_label(config, template) if config else ""
    if st.session_state.get("wb_b_label") in (None, "", st.session_state.get("wb_b_label_auto")):
        st.session_state["wb_b_label"] = auto_label
    st.session_state["wb_b_label_auto"] = auto_label
    label = g3.text_input("Label (the new judge's name)", key="wb_b_label")
    filters = dict(bench=bench, category=None if cat == "(all)" else cat, turn=None if turn == "(all)" else int(turn),
                   model=None if bmodel == "(all)" else bmodel, limit=int(limit))
    if order == "judged by the stored judge" and judges:
        filters["judged_by"] = st.session_state.get("wb_judge")
    elif order == "largest disagreements first":
        loaded = cached_query(queries.judges_by_harness, data_version(store))
        bench_judges = sorted(loaded.query("bench == @bench")["judge"].unique())
        if len(bench_judges) > 1:
            filters["disagreement_judges"] = bench_judges
        else:
            st.caption("This bench has one judge: items are taken in question order instead.")

    # Two steps, always (prices of 0 included): the estimate, then an explicit confirmation naming requests and
    # tokens. Nothing is sent before the second click.
    if st.button("Estimate", icon=":material/calculate:", disabled=running or messages is None or config is None):
        items = select_items(store, **filters)
        try:
            batch = RejudgeBatch(store, template, config, items, label or None,
                                 judge_hint=st.session_state.get("wb_judge"))
            st.session_state["wb_pending"] = (batch, batch.prepare(), int(concurrency))
        except (JudgeLensError, ValueError) as exc:
            st.session_state.pop("wb_pending", None)
            st.error(str(exc))
    pending = st.session_state.get("wb_pending")
    if pending is None or running:
        return
    batch, estimate, conc = pending
    cost = (f"; cost about ${estimate.cost_expected:.4f}, at most ${estimate.cost_upper:.4f}"
            if estimate.cost_upper is not None else "; no prices set, so no cost estimate")
    st.info(f"{estimate.items:,} item(s) as judge {md_escape(batch.label)}: {estimate.to_send:,} request(s) to send, "
            f"{estimate.cached:,} answered from the cache. About {estimate.prompt_tokens:,} prompt tokens and up to "
            f"{estimate.max_completion_tokens:,} completion tokens (typically "
            f"{estimate.completion_tokens_typical * estimate.to_send:,}){cost}.", icon=":material/receipt_long:")
    r1, r2, _ = st.columns([1, 1, 3])
    go = r1.button(f"Run {estimate.to_send:,} request(s)", type="primary", icon=":material/play_arrow:",
                   key="wb_b_confirm")
    if r2.button("Cancel", key="wb_b_cancel_estimate"):
        st.session_state.pop("wb_pending", None)
        st.rerun()
    if go:
        st.session_state.pop("wb_pending", None)
        run = BackgroundJob(lambda progress, cancel, batch=batch: batch.run(
            api_key=api_key, concurrency=conc, cancel=cancel, progress=progress),
            name="judgelens-batch", progress=(0, estimate.to_send, None))
        st.session_state["wb_job"] = {"run": run.start(), "estimate": estimate, "label": batch.label}
        st.rerun()


job = st.session_state.get("wb_job")
running = bool(job and not job["run"].done)
# A lazy expander: its ten controls are drawn (and its queries run) only while it is open, so a new tab of the
# Workbench draws the single-item re-judge alone. Its fields keep what was typed while it is closed.
keep_values(*BATCH_KEYS)
batch_box = st.expander("Re-judge a batch", key="wb_batch_open", on_change="rerun", icon=":material/playlist_play:")
with batch_box:
    if batch_box.open:
        batch_form()


@st.fragment(run_every=1.0 if running else None)
def batch_status():
    job = st.session_state.get("wb_job")
    if not job:
        return
    est = job["estimate"]
    st.caption(f"{est.items} item(s), {est.requests} request(s): {est.cached} from the cache, {est.to_send} to send"
               + (f"; estimated cost ~\\${est.cost_expected:.4f} (at most ~\\${est.cost_upper:.4f})"
                  if est.cost_expected is not None else ""))
    run = job["run"]
    done, total, eta = run.progress
    if not run.done:
        st.progress(done / total if total else 0.0,
                    text=f"{done}/{total} requests" + (f", about {eta:.0f} s left" if eta else ""))
        if st.button("Cancel", icon=":material/stop:", key="wb_cancel"):
            run.cancel.set()
        return
    if isinstance(run.error, JudgeLensError):  # e.g. another batch with this label is running
        show_error(run.error)
    elif run.error is not None:  # shown on the page; the batch keeps what it wrote
        st.error(str(run.error))
    if run.result is not None:
        st.success(f"Stored as judge {job['label']}.")
        st.code(run.result.text(), language=None, wrap_lines=True)
        st.page_link("app_pages/compare.py", label="Compare it with the stored judges", icon=":material/difference:")
    if not job.get("refreshed"):  # once: let the whole page (and its data version) see the new judge
        job["refreshed"] = True
        st.rerun(scope="app")


batch_status()
