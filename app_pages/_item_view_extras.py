"""Item view additions, kept apart from the page's own layout: the search box at the top and (below) the
analyst's verdict panel. app_pages/item_view.py calls them."""
from __future__ import annotations

import streamlit as st

from app_pages._store import cached_item_query, cached_query, data_version


def search_box(bench: str) -> None:
    """Search everything from the Item view: Enter opens the Search page on this bench."""
    def go() -> None:
        st.session_state["_iv_search_go"] = st.session_state.get("iv_search", "")

    st.text_input("Search questions, answers, rationales, prompts and references", key="iv_search", on_change=go,
                  placeholder="type and press Enter: opens Search on this bench", label_visibility="collapsed")
    text = st.session_state.pop("_iv_search_go", None)
    if text:
        st.switch_page("app_pages/search.py", query_params={"q": text, "bench": bench})


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


def _save(store, key, score, clear=()) -> None:
    """Record the pressed score (None: label and note only) or clear, with the label and note set below. Fields
    left empty keep the author's earlier values (lib.judging.human: each field is the latest value for it)."""
    from lib.errors import JudgeLensError
    from lib.judging import human

    label = st.session_state.get("iv_v_label")
    try:
        row = human.record(store, author=st.session_state.get("jl_author", ""), bench=key.bench,
                           question_id=key.question_id, turn=key.turn, model=key.model, sample=key.sample,
                           score=score, label=None if label in (None, NO_LABEL) or clear else label,
                           note=None if clear else st.session_state.get("iv_v_note"), clear=clear)
    except JudgeLensError as exc:
        st.session_state["iv_v_error"] = exc.message
        return
    now = human.latest(store, author=row["author"], bench=key.bench, question_id=key.question_id, turn=key.turn,
                       model=key.model, sample=key.sample)
    done = "Cleared the " + " and ".join(row["cleared"]) if row["cleared"] else "Saved"
    st.session_state["iv_v_saved"] = (f"{done} as {human.judge_name(row['author'])}: "  # your verdict after it
                                      f"{human.describe(now.iloc[0] if len(now) else None)}")
    if not clear:
        st.session_state["iv_v_note"] = ""


def review_queue(store, version: tuple, author_name: str, bench: str):
    """The analyst's review queue on this bench, cached per data version (a verdict changes the version): the same
    cache entry as the Review page's. Uncached, every rerun of the Item view ranked the bench's disagreements anew."""
    from lib.judging import human

    return cached_query(human.review_queue, version, author=author_name, bench=bench,
                        n=int(st.session_state.get("jl_queue_n", 20)))


def _go_next(store, key, author_name) -> None:
    from lib.judging import human

    queue = review_queue(store, data_version(store), author_name, key.bench)
    found = human.next_undecided(queue, (key.question_id, key.turn, key.model))
    if found:
        st.session_state["iv_q"], st.session_state["iv_turn"], st.session_state["iv_model"] = found
    else:
        st.session_state["iv_notice"] = "Every item in your review queue has your verdict."


NO_LABEL = "(no label)"


def verdict_panel(store, key, version: tuple) -> None:
    """Your verdict on this item (on the sample shown, for Swallow), keyboard first: 1-9 and 0 (= 10) record a
    score with the label and note set below; "Label only" records them without touching your score; U jumps to
    the next undecided item of your review queue. Every press adds a row (history stays); each field of your
    verdict is your latest value for it, so only "Clear score" / "Clear label" empty one."""
    from lib.judging import human
    from lib.render.safe_text import md_escape
    from app_pages._widgets import readable_dataframe

    name = author_sidebar()
    st.subheader("Your verdict")
    if not name:
        st.info("Set your name in the sidebar to record verdicts: they count as judge human:<name>.")
        return
    if msg := st.session_state.pop("iv_v_saved", None):
        st.success(md_escape(msg))
    if msg := st.session_state.pop("iv_v_error", None):
        st.error(msg)
    # per data version (a verdict changes it): a rerun on the same item reads neither again
    shown = cached_item_query(human.item_verdicts, version, author=name, bench=key.bench, question_id=key.question_id,
                              turn=key.turn, model=key.model, sample=key.sample)  # one read
    hist, item = shown["history"], shown["latest"]  # item: every sample of the item
    here = item[item["sample"] == key.sample]
    mine = here.iloc[0] if len(here) else None
    st.caption(f"Your verdict{f' on sample {key.sample}' if key.sample else ''} now: "
               + md_escape(human.describe(mine)))
    others = item[item["sample"] != key.sample]
    if len(others):
        st.caption("Swallow judges 5 samples; your verdict is on the sample shown. Your other samples of this item: "
                   + md_escape("; ".join(f"sample {int(r.sample)}: {human.describe(r._asdict())}"
                                         for r in others.itertuples()))
                   + ". The item's score is the mean over the samples you scored; it counts as decided once any "
                     "sample has your score or label.")
    options = [NO_LABEL, *labels()]
    if st.session_state.get("iv_v_label") not in options:
        st.session_state["iv_v_label"] = NO_LABEL
    c1, c2, c3 = st.columns([2, 4, 1], vertical_alignment="bottom")
    c1.selectbox("Label", options, key="iv_v_label", help=f"{NO_LABEL}: keep your current label")
    c2.text_input("Note", key="iv_v_note", placeholder="optional: why")
    with c3:
        _edit_labels()
    st.caption(f"Press 1-9, or 0 for 10, to record your score as {md_escape(human.judge_name(name))} with this label "
               "and note · what you leave empty keeps its earlier value · U: next undecided item of your review "
               "queue")
    current_score = None if mine is None or mine["score"] != mine["score"] else mine["score"]  # NaN: no score
    # rows of buttons in one horizontal container each, not a column apiece: a column is an element of its own that
    # every rerun sends and the browser lays out again (the panel's 14 columns were a ninth of the page's elements)
    with st.container(horizontal=True, gap="small"):
        for score in range(1, 11):
            st.button(str(score), key=f"iv_v_s{score}", on_click=_save, args=(store, key, score),
                      shortcut=str(score % 10), width="stretch",
                      type="primary" if current_score is not None and current_score == score else "secondary")
        st.button("Label only", key="iv_v_label_only", on_click=_save, args=(store, key, None),
                  help="Record the label and note; your score stays as it is")
    with st.container(horizontal=True, gap="small"):
        st.button("Clear score", key="iv_v_clear_score", on_click=_save, args=(store, key, None, ["score"]),
                  disabled=current_score is None, icon=":material/backspace:",
                  help="Remove your score on this item (your label and note stay)")
        st.button("Clear label", key="iv_v_clear_label", on_click=_save, args=(store, key, None, ["label"]),
                  disabled=mine is None or not isinstance(mine["label"], str), icon=":material/label_off:",
                  help="Remove your label on this item (your score and note stay)")
    queue = review_queue(store, version, name, key.bench)
    if len(queue):
        done = int(queue["decided"].sum())
        q1, q2 = st.columns([3, 1])
        q1.progress(done / len(queue), text=f"Review queue: {done} of the {len(queue)} largest disagreements on "
                                            f"{md_escape(key.bench)} decided")
        q2.button("Next undecided", key="iv_v_next", on_click=_go_next, args=(store, key, name), shortcut="U",
                  icon=":material/skip_next:", width="stretch")
    if len(hist):
        with st.expander(f"History of verdicts on this item ({len(hist)}, every row as recorded)", expanded=False):
            readable_dataframe(hist.drop(columns=["bench", "question_id", "turn", "model", "sample"]), hide_index=True,
                         width="stretch")
