"""Item view: one question, turn and model. The answer, the references and every judge side by side.

Every choice on this page lives in the URL (st.query_params), so the address bar is a deep link.
All model, judge and file text is shown as text (show_text / st.text), never as Markdown or HTML.
"""
import streamlit as st

from lib.analysis import item_view as iv
from lib.keys import ItemKey
from lib.render.safe_text import md_escape
from lib.analysis.flags import reference_overlap
from lib.analysis.search_view import mark_hits
from lib.render.textdiff import char_diff, diff_html, diff_stats, highlight_html
from lib.vocab import REFERENCE_CATEGORIES
from app_pages._state import keep_valid, publish_to_url, seed_from_url
from app_pages._store import cached_item_query, cached_query, data_version, get_store
from app_pages._widgets import empty_state, show_text
from app_pages._item_view_extras import search_box, verdict_panel

store = get_store()
st.title("Item view")
version = data_version(store)
benches = cached_query(iv.benches, version)  # lists and orders: cached per data version
if not benches:
    empty_state()
    st.stop()

# --- state: seeded once from the URL, then owned by the widgets ------------------------------------
new_link = seed_from_url("iv", {"bench": "iv_bench", "q": "iv_q", "turn": "iv_turn", "model": "iv_model",
                                "sample": "iv_sample", "cols": "iv_cols", "a": "iv_a", "b": "iv_b"},
                         ints=("turn", "sample"), lists=("cols",))
if new_link and ("a" in st.query_params or "b" in st.query_params):
    st.session_state["iv_diff_open"] = True  # a link that names a diff opens it (see the diff below)
if new_link and "cols" in st.query_params:
    st.session_state["_iv_cols_picked"] = True  # a link's columns count as picked (see the verdicts below)
if new_link:  # opened from a Search result: its hits are marked « » in the texts below until another link
    st.session_state["iv_hit"] = ((st.query_params["hit"], st.query_params.get("hit_in", ""),
                                  st.query_params.get("hit_re") == "1") if st.query_params.get("hit") else None)


def marked(text: str | None, field: str) -> str:
    """``text`` with the Search hit between « and » when this item was opened from Search (plain characters)."""
    hit = st.session_state.get("iv_hit")
    if not hit or not text:
        return text or ""
    return mark_hits(text, hit[0], regex=hit[2])[0]


keep_valid("iv_bench", benches)
bench = st.session_state["iv_bench"]
search_box(bench)  # search everything (app_pages/_item_view_extras.py)
qs = cached_query(iv.questions, version, bench=bench)
models = cached_query(iv.models, version, bench=bench)
if qs.empty or not models:
    st.info(f"The bench {bench} has judgments but no questions yet: import its question.jsonl on the Import page.")
    st.stop()
qids = qs["question_id"].tolist()
keep_valid("iv_q", qids)
keep_valid("iv_model", models)
keep_valid("iv_turn", [1, 2], 1)

# --- navigation callbacks (run before widgets are drawn) ------------------------------------------
def go(delta: int) -> None:
    where = {"bench": st.session_state["iv_bench"], "model": st.session_state["iv_model"]}
    order = (iv.item_order_of(cached_item_query(iv.model_keys, data_version(store), **where)) if store.lake
             else cached_query(iv.item_order, data_version(store), **where))
    st.session_state["iv_q"], st.session_state["iv_turn"] = iv.step(
        order, (st.session_state["iv_q"], st.session_state["iv_turn"]), delta)


def go_disagreement() -> None:
    order = cached_query(iv.disagreement_order, data_version(store), bench=st.session_state["iv_bench"])
    found = iv.following(order, st.session_state["iv_q"], st.session_state["iv_turn"], st.session_state["iv_model"])
    if found:
        st.session_state["iv_q"], st.session_state["iv_turn"], st.session_state["iv_model"] = found
    else:
        st.session_state["iv_notice"] = "No item here has scores from two or more judges to compare."


labels = {r.question_id: f"{r.question_id} · {r.category} · {(r.first_turn or '')[:50]}" for r in qs.itertuples()}
c1, c2, c3, c4 = st.columns([1.2, 3, 0.8, 2.2])
c1.selectbox("Bench", benches, key="iv_bench")
c2.selectbox("Question", qids, key="iv_q", format_func=lambda q: labels.get(q, q))
c3.radio("Turn", [1, 2], key="iv_turn", horizontal=True)
c4.selectbox("Model", models, key="iv_model")
key = ItemKey(bench, st.session_state["iv_q"], int(st.session_state["iv_turn"]), st.session_state["iv_model"])
# DuckLake: every query pays catalog look-ups (tens of ms each), so the lake reads a model's item keys (order and
# samples) and a bench's questions and references once per data version; the texts (answer, verdicts) of a small
# block of the model's items at a time (a whole model's texts lie spread over every Parquet page).
lake_items = (cached_item_query(iv.model_keys, version, bench=bench, model=key.model),
              cached_item_query(iv.bench_items, version, bench=bench)) if store.lake else None
sample_options = (iv.item_samples(lake_items[0], key) if lake_items
                  else cached_item_query(iv.samples, version, key=key))
if len(sample_options) > 1:
    keep_valid("iv_sample", sample_options, 0)
    st.segmented_control("Sample (Swallow judges 5 samples per item)", sample_options, key="iv_sample")
    key = ItemKey(key.bench, key.question_id, key.turn, key.model, int(st.session_state["iv_sample"] or 0))

b1, b2, b3, b4 = st.columns([1, 1, 2, 2])
b1.button("Previous", on_click=go, args=(-1,), icon=":material/arrow_back:", width="stretch", shortcut="K")
b2.button("Next", on_click=go, args=(1,), icon=":material/arrow_forward:", width="stretch", shortcut="J")
b3.button("Next biggest disagreement", on_click=go_disagreement, icon=":material/bolt:", width="stretch",
          shortcut="D", help="Jump to the item (any model) where the judges' scores are furthest apart, after this one")
b4.page_link("app_pages/workbench.py", label="Re-judge in Workbench", icon=":material/edit_note:",
             query_params={"bench": key.bench, "q": key.question_id, "turn": str(key.turn), "model": key.model})
if notice := st.session_state.pop("iv_notice", None):
    st.info(notice)

# --- the item ---------------------------------------------------------------------------------------
q = (iv.item_question(lake_items[1], key.question_id) if lake_items
     else cached_item_query(iv.question, version, bench=bench, question_id=key.question_id))
left, right = st.columns(2)
with left:
    st.subheader("Question")
    if q is None:
        st.warning("This question is not in the store (import the bench's question.jsonl).")
    else:
        st.caption(f"category: {md_escape(q['category'])} · question {md_escape(key.question_id)}")
        for i, text in enumerate(q["turns"], 1):
            st.markdown(f"**Turn {i}**" + (" (judged now)" if i == key.turn else ""))
            st.text(marked(text, "question"))
            if q["differs"][i - 1]:
                where = q["question_set"] or "the question file"
                st.warning(f"⚑ The judges saw the text above; {md_escape(where)} says otherwise:", icon="⚠️")
                st.text(q["file_turns"][i - 1])
    refs = (iv.item_references(lake_items[1], key.question_id, key.turn) if lake_items else
            cached_item_query(iv.references, version, bench=bench, question_id=key.question_id, turn=key.turn))
    uses_ref = q is not None and q["category"] in REFERENCE_CATEGORIES
    # Open where the judge saw it, unless you opened or closed it on this question and turn. Lazy: closed (most
    # categories), its text is not drawn.
    ref_item = (bench, key.question_id, key.turn)
    if st.session_state.get("_iv_ref_item") != ref_item:
        st.session_state["iv_ref_open"] = uses_ref
    ref_box = st.expander(f"Reference answer ({'shown to the judge' if uses_ref else 'not used by the judge in this category'})",
                          key="iv_ref_open", on_change=lambda: st.session_state.update(_iv_ref_item=ref_item))
    if ref_box.open:
        with ref_box:
            if refs.empty:
                st.caption("No reference answer for this question and turn.")
            for ref in refs.itertuples():
                st.caption("looked up by judge(s): " + md_escape(", ".join(ref.judges)))
                show_text(marked(ref.text, "reference"))
# DuckLake: the answer and verdicts of a block of the model's items (iv.window_of) in one read, so Next and Previous
# step through the block without reading; the file reads the item shown alone (cheap there)
texts = (cached_item_query(iv.window_texts, version, bench=bench, model=key.model, sample=key.sample,
                           items=iv.window_of(iv.item_order_of(lake_items[0]), key.question_id, key.turn))
         [(key.question_id, int(key.turn))] if lake_items else None)
with right:
    st.subheader("Answer")
    ans = texts["answer"] if texts else cached_item_query(iv.answer, version, key=key)
    if ans is None:
        st.warning("No answer text for this model and question (import its model_answer file).")
    else:
        facts = [f"{ans['length']:,} characters"]
        if ans["truncated"]:
            facts.append(f"cut at {ans['max_chars']:,} characters by the harness")
        if ans["temperature"] is not None:
            facts.append(f"temperature {ans['temperature']}")
        st.caption(" · ".join(facts))
        if ans["truncated"]:
            st.warning(f"The harness cut this answer at {ans['max_chars']:,} characters before the judge saw it.")
        if key.turn == 2 and key.sample > 0 and (ans["temperature"] or 0) > 0:
            st.info(f"Swallow generated every turn-2 sample after sample 0's turn-1 answer, but its judge saw it "
                    f"after sample {key.sample}'s turn-1 answer: this turn-2 answer may not follow the turn 1 "
                    "shown to the judge.")
        if ans["think"]:
            with st.expander(f"Reasoning in <think> ({len(ans['think']):,} characters; the judge saw it)"):
                show_text(ans["think"], height=420)
        hit = st.session_state.get("iv_hit")
        if hit:
            found = mark_hits(ans["visible"], hit[0], regex=hit[2])[1]
            st.caption(f"Opened from Search: hits of «{md_escape(hit[0])}» are marked « » on this page "
                       f"({found} in this answer).")
        show_text(marked(ans["visible"], "answer"), height=420)

verdict_panel(store, key, version)  # the analyst's own verdict, keyboard first (app_pages/_item_view_extras.py)

# --- verdicts, one column each ----------------------------------------------------------------------
st.subheader("Verdicts")
verdicts = texts["verdicts"] if texts else cached_item_query(iv.verdicts, version, key=key, prompts=False)


def with_prompts():
    """This item's verdicts with their rendered judge prompts (read only while a prompt or the diff is shown)."""
    return cached_item_query(iv.verdicts, version, key=key).set_index("column_id")


if verdicts.empty:
    st.info("No judge has scored this item.")
    st.stop()
all_cols = verdicts["column_id"].tolist()
if st.session_state.get("_iv_cols_picked"):  # yours, as far as this item has them
    st.session_state["iv_cols"] = [c for c in st.session_state.get("iv_cols", all_cols) if c in all_cols] or all_cols
else:  # until you pick: every judge of this item, also one imported or re-judged since, or missing on the last item
    st.session_state["iv_cols"] = all_cols
chosen = st.multiselect("Columns (in this order)", all_cols, key="iv_cols",
                        on_change=lambda: st.session_state.update(_iv_cols_picked=True),
                        help="Pick and order the judges to compare; the order you pick is the order shown.")
by_id = verdicts.set_index("column_id")
for start in range(0, len(chosen), 3):
    for col, cid in zip(st.columns(3), chosen[start:start + 3]):
        v = by_id.loc[cid]
        with col.container(border=True):
            # one Markdown block for the name and its provenance (each element costs a new tab a few milliseconds)
            st.markdown(f"**{md_escape(v.judge)}**  \n:gray[{md_escape(v.harness)} · "
                        f"{md_escape(v.prompt_name or 'prompt not recorded')} · source {v.source_id}]")
            if v.parse_status == "ok":
                st.metric("score", f"{v.score:g}")
            else:
                st.metric("score", "none", help=f"stored as {v.raw_score:g}")
                st.warning({"not_parsed": "Rating not parsed (-1): no [[N]] in the judgment.",
                            "api_error": "API error ($ERROR$): the judge call failed.",
                            "out_of_range": f"Rating {v.raw_score:g} is outside 1-10."}.get(v.parse_status, v.parse_status))
            show_text(marked(v.rationale, "rationale"), height=360)
            seen_ref = next((r.text for r in refs.itertuples() if v.judge in r.judges), None)
            if seen_ref is None and not refs.empty:
                seen_ref = refs["text"].iloc[0]
            if seen_ref and ans:
                overlap = reference_overlap(v.rationale, seen_ref, ans["text"])
                if overlap.leak:
                    st.warning(f"Quotes the reference far more than the answer ({overlap.ref_share:.0%} vs "
                               f"{overlap.answer_share:.0%} of its text): did the judge grade the reference?")
                    with st.expander("Show the copied spans (orange: reference, green: answer)"):
                        st.html(highlight_html(v.rationale, overlap.ref_spans, overlap.answer_spans))
            # lazy: drawn only while open (it stays open for this column while you step through items)
            with st.expander("Rendered judge prompt", key=f"iv_prompt_open_{cid}", on_change="rerun") as prompt_box:
                if prompt_box.open:
                    show_text(with_prompts().loc[cid].judge_prompt or "(not recorded)", height=420)

# --- diff (a lazy expander: drawn, and computed, only while open; a deep link naming a diff opens it) ---------
diff_box = st.expander("Character diff (rationales, judge prompts, answers)", key="iv_diff_open", on_change="rerun",
                       icon=":material/difference:")
if diff_box.open:
    with diff_box:
        texts: dict[str, tuple[str, str]] = {}
        for v in with_prompts().reset_index().itertuples():
            texts[f"rationale:{v.column_id}"] = (f"Rationale · {v.column_id}", v.rationale or "")
            texts[f"prompt:{v.column_id}"] = (f"Judge prompt · {v.column_id}", v.judge_prompt or "")
        # Answers: this model's, and those of the models picked here (not all of them: a bench may have 1,250).
        others = [m for m in models if m != key.model]
        for cid in (st.session_state.get("iv_a"), st.session_state.get("iv_b")):  # deep links name an answer
            if cid and cid.startswith("answer:") and cid[7:] in others:
                st.session_state["iv_diff_models"] = list(dict.fromkeys(
                    [*st.session_state.get("iv_diff_models", []), cid[7:]]))
        if "iv_diff_models" in st.session_state:
            st.session_state["iv_diff_models"] = [m for m in st.session_state["iv_diff_models"] if m in others]
        picked = st.multiselect(f"Also offer answers of other models ({len(others):,} on this bench; type to search)",
                                others, key="iv_diff_models", placeholder="Pick models")
        for m, text in iv.answers_of(store, key.bench, key.question_id, key.turn, key.sample,
                                     [key.model, *picked]).items():
            texts[f"answer:{m}"] = (f"Answer · {m}", text)
        ids = list(texts)
        rationales = [i for i in ids if i.startswith("rationale:")]
        keep_valid("iv_a", ids, rationales[0])
        keep_valid("iv_b", ids, rationales[1] if len(rationales) > 1 else ids[-1])
        d1, d2 = st.columns(2)
        d1.selectbox("Left (struck through where it differs)", ids, key="iv_a", format_func=lambda i: texts[i][0])
        d2.selectbox("Right (highlighted where it differs)", ids, key="iv_b", format_func=lambda i: texts[i][0])
        ops = char_diff(texts[st.session_state["iv_a"]][1], texts[st.session_state["iv_b"]][1])
        stats = diff_stats(ops)
        st.caption(f"{stats['similarity']:.0%} similar · {stats['deleted']:,} characters only left · "
                   f"{stats['inserted']:,} only right")
        st.html(diff_html(ops))

# --- deep link --------------------------------------------------------------------------------------------
params = {"bench": bench, "q": key.question_id, "turn": str(key.turn), "model": key.model, "cols": ",".join(chosen)}
if diff_box.open:
    params.update(a=st.session_state["iv_a"], b=st.session_state["iv_b"])
if len(sample_options) > 1:
    params["sample"] = str(key.sample)
publish_to_url("iv", params)
st.caption("The address bar links to exactly this view: item, columns and diff.")
