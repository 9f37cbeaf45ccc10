"""JudgeLens: open MT-Bench judge outputs from FastChat-style harnesses and Swallow side by side.

This file only routes: it opens the store (loading the bundled sample on first start) and hands
over to the page the user picked. Run with ``bash scripts/run-app.sh`` (see README).
"""
import streamlit as st

from lib.sample import load_sample_if_empty
from pages._common import get_store

st.set_page_config(page_title="JudgeLens", page_icon=":material/balance:", layout="wide")

store = get_store()
if not st.session_state.get("_sample_checked"):
    bar = st.progress(0.0, text="First start: loading the bundled sample data…")
    report = load_sample_if_empty(store, progress=lambda f, msg: bar.progress(min(f, 1.0), text=msg[-90:]))
    bar.empty()
    if report is not None:
        st.toast(f"Loaded the bundled sample: {len(report.imported)} files.", icon=":material/check:")
    st.session_state["_sample_checked"] = True

page = st.navigation([
    st.Page("pages/overview.py", title="Overview", icon=":material/leaderboard:", default=True),
    st.Page("pages/item_view.py", title="Item view", icon=":material/compare:"),
    st.Page("pages/import_data.py", title="Import", icon=":material/upload:"),
])
page.run()
