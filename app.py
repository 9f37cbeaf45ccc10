"""JudgeLens: open MT-Bench judge outputs from FastChat-style harnesses and Swallow side by side.

This file only routes: it declares the pages, opens the store (loading the bundled sample on first
start) and hands over to the page the user picked. Run with ``bash scripts/run-app.sh`` (see README).
"""
import streamlit as st

from app_pages._profile import profiled
from app_pages._store import first_start, get_store

st.set_page_config(page_title="JudgeLens", page_icon="⚖️", layout="wide")  # an emoji favicon is inline; a :material: one is fetched from fonts.gstatic.com

page = st.navigation([
    st.Page("app_pages/overview.py", title="Overview", icon=":material/leaderboard:", default=True),
    st.Page("app_pages/agreement.py", title="Judge agreement", icon=":material/groups:"),
    st.Page("app_pages/item_view.py", title="Item view", icon=":material/compare:"),
    st.Page("app_pages/search.py", title="Search", icon=":material/search:"),
    st.Page("app_pages/review.py", title="Review", icon=":material/rate_review:"),
    st.Page("app_pages/distributions.py", title="Distributions", icon=":material/bar_chart:"),
    st.Page("app_pages/compare.py", title="Compare", icon=":material/difference:"),
    st.Page("app_pages/workbench.py", title="Workbench", icon=":material/edit_note:"),
    st.Page("app_pages/probes.py", title="Probes", icon=":material/science:"),
    st.Page("app_pages/import_data.py", title="Import", icon=":material/upload:"),
])

store = get_store()  # on failure: says why (e.g. the file is open in another process) and stops
first_start(store)  # an empty new store gets the bundled sample; checked once per server process
with profiled(page.title):  # JUDGELENS_PROFILE=DIR: one cProfile file per run (see app_pages/_profile.py)
    page.run()
