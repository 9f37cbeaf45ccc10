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
