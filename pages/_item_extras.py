"""Item view additions, kept apart from the page's own layout: the search box at the top and (below) the
analyst's verdict panel. pages/item_view.py calls them."""
from __future__ import annotations

import streamlit as st


def search_box(bench: str) -> None:
    """Search everything from the Item view: Enter opens the Search page on this bench."""
    def go() -> None:
        st.session_state["_iv_search_go"] = st.session_state.get("iv_search", "")

    st.text_input("Search questions, answers, rationales, prompts and references", key="iv_search", on_change=go,
                  placeholder="type and press Enter: opens Search on this bench", label_visibility="collapsed")
    text = st.session_state.pop("_iv_search_go", None)
    if text:
        st.switch_page("pages/search.py", query_params={"q": text, "bench": bench})


# --- the analyst's verdicts -----------------------------------------------------------------------------------

def author_sidebar() -> str:
    """The analyst's name field in the sidebar (Item view, Review), set once: the name lives in the plain session
    key jl_author, so it survives pages without the field. Default: the logged-in user where the deployment has
    one, else [judgelens] author in secrets. Returns the name ('' until set)."""
    if "jl_author" not in st.session_state:
        st.session_state["jl_author"] = _logged_in_user() or _secrets_author()
    st.session_state["jl_author_input"] = st.session_state["jl_author"]

    def keep() -> None:
        st.session_state["jl_author"] = st.session_state["jl_author_input"].strip()

    st.sidebar.text_input("Your name (for your verdicts)", key="jl_author_input", on_change=keep,
                          help="Your verdicts count as judge human:<name>. Set it once; [judgelens] author in "
                               "secrets sets a default.")
    return author()


def _logged_in_user() -> str:
    """The deployment's logged-in user (Streamlit authentication), if it has one."""
    try:
        if st.user.is_logged_in:
            return str(st.user.get("email") or st.user.get("name") or "")
    except Exception:  # no authentication configured
        pass
    return ""


def _secrets_author() -> str:
    try:
        return str((st.secrets.get("judgelens") or {}).get("author") or "")
    except Exception:  # no secrets file
        return ""


def author() -> str:
    """The analyst's name ('' until set)."""
    return str(st.session_state.get("jl_author") or "").strip()


def labels() -> list[str]:
    """The verdict labels on offer: the defaults until edited (one per line, kept for the session)."""
    from lib.judging.human import DEFAULT_LABELS

    st.session_state.setdefault("jl_labels", "\n".join(DEFAULT_LABELS))
    return [line.strip() for line in st.session_state["jl_labels"].splitlines() if line.strip()]


def _edit_labels() -> None:
    st.session_state["jl_labels_input"] = st.session_state.get("jl_labels", "")

    def keep() -> None:
        st.session_state["jl_labels"] = st.session_state["jl_labels_input"]

    with st.popover("Edit labels", icon=":material/label:"):
        st.text_area("One label per line", key="jl_labels_input", on_change=keep, height=200)


def _save(store, key, score) -> None:
    from lib.errors import JudgeLensError
    from lib.judging import human

    label = st.session_state.get("iv_v_label")
    try:
        row = human.record(store, author=st.session_state.get("jl_author", ""), bench=key.bench,
                           question_id=key.question_id, turn=key.turn, model=key.model, sample=key.sample,
                           score=score, label=None if label in (None, NO_LABEL) else label,
                           note=st.session_state.get("iv_v_note"))
    except JudgeLensError as exc:
        st.session_state["iv_v_error"] = exc.message
        return
    st.session_state["iv_v_saved"] = (f"Saved as {human.judge_name(row['author'])}: "
                                      + (f"score {row['score']:g}" if row["score"] is not None else "no score")
                                      + (f", {row['label']}" if row["label"] else ""))
    st.session_state["iv_v_note"] = ""


def _go_next(store, key, author_name) -> None:
    from lib.judging import human

    queue = human.review_queue(store, author_name, bench=key.bench, n=int(st.session_state.get("jl_queue_n", 20)))
    found = human.next_undecided(queue, (key.question_id, key.turn, key.model))
    if found:
        st.session_state["iv_q"], st.session_state["iv_turn"], st.session_state["iv_model"] = found
    else:
        st.session_state["iv_notice"] = "Every item in your review queue has your verdict."


NO_LABEL = "(no label)"


def verdict_panel(store, key) -> None:
    """Your verdict on this item, keyboard first: 1-9 and 0 (= 10) record a score with the label and note set
    below; U jumps to the next undecided item of your review queue. Every press adds a row (history stays)."""
    from lib.judging import human
    from lib.render.safe_text import md_escape

    name = author_sidebar()
    st.subheader("Your verdict")
    if not name:
        st.info("Set your name in the sidebar to record verdicts: they count as judge human:<name>.")
        return
    if msg := st.session_state.pop("iv_v_saved", None):
        st.success(msg)
    if msg := st.session_state.pop("iv_v_error", None):
        st.error(msg)
    hist = human.history(store, bench=key.bench, question_id=key.question_id, turn=key.turn, model=key.model,
                         sample=key.sample)
    mine = hist[(hist["author"] == name) & hist["latest"]]
    options = [NO_LABEL, *labels()]
    if st.session_state.get("iv_v_label") not in options:
        st.session_state["iv_v_label"] = NO_LABEL
    c1, c2, c3 = st.columns([2, 4, 1], vertical_alignment="bottom")
    c1.selectbox("Label", options, key="iv_v_label")
    c2.text_input("Note", key="iv_v_note", placeholder="optional: why")
    with c3:
        _edit_labels()
    st.caption(f"Press 1-9, or 0 for 10, to record your score as {md_escape(human.judge_name(name))} with this label "
               "and note · U: next undecided item of your review queue")
    buttons = st.columns(11)
    for i, col in enumerate(buttons[:10]):
        score = i + 1
        col.button(str(score), key=f"iv_v_s{score}", on_click=_save, args=(store, key, score),
                   shortcut=str(score % 10), width="stretch",
                   type="primary" if len(mine) and mine.iloc[0]["score"] == score else "secondary")
    buttons[10].button("Label only", key="iv_v_label_only", on_click=_save, args=(store, key, None),
                       help="Record the label and note without a score")
    queue = human.review_queue(store, name, bench=key.bench, n=int(st.session_state.get("jl_queue_n", 20)))
    if len(queue):
        done = int(queue["decided"].sum())
        q1, q2 = st.columns([3, 1])
        q1.progress(done / len(queue), text=f"Review queue: {done} of the {len(queue)} largest disagreements on "
                                            f"{md_escape(key.bench)} decided")
        q2.button("Next undecided", key="iv_v_next", on_click=_go_next, args=(store, key, name), shortcut="U",
                  icon=":material/skip_next:", width="stretch")
    if len(hist):
        with st.expander(f"History of verdicts on this item ({len(hist)})", expanded=False):
            st.dataframe(hist.drop(columns=["bench", "question_id", "turn", "model", "sample"]), hide_index=True,
                         width="stretch")
