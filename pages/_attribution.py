"""The attribution ladder section of the harness comparison (filled in with lib.judging.attribution)."""
from __future__ import annotations

import streamlit as st


def attribution_section(store, version, ra, rb) -> None:
    st.subheader("Attribute the gap")
    st.caption("Coming next: re-judge A's answers with A's setup, then switch one judge-side factor at a time to "
               "B's setting (prompt, judge model, references, truncation, reasoning).")
