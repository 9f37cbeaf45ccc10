"""The Judge agreement page's intervals and Reliability tab in headless Chromium (issue 23).

One app server on a copy of the bundled sample, built once for the module (fixtures in conftest.py, helpers in
browser_support.py). Reading st.dataframe: glide keeps an accessible ``<table role="grid">`` of the rendered
cells; the interval cells read "0.842 [0.767, 0.893]".
"""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from browser_support import fresh, open_app, open_expander, wait_for_rerun

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]


def test_intervals_and_reliability_in_the_browser(page, app_url):
    page.set_viewport_size({"width": 1600, "height": 1400})
    open_app(page, f"{app_url}/agreement")
    expect(page.get_by_role("heading", name="Judge agreement")).to_be_visible()
    open_expander(page, "95% intervals")
    cells = fresh(page.get_by_test_id("stDataFrame")).locator("td").filter(
        has_text=re.compile(r"^\s*0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]\s*$"))
    expect(cells.first).to_be_attached()            # glide's accessible table is attached, not visible
    assert cells.count() >= 3
    wait_for_rerun(page, page.get_by_role("tab", name="Reliability").click)       # lazy tabs: a rerun
    headers = fresh(page.get_by_test_id("stDataFrame")).locator("th, [role=columnheader]")
    expect(headers.filter(has_text="alpha_interval").first).to_be_attached()
    expect(fresh(page.get_by_test_id("stDataFrame")).locator("td").filter(
        has_text=re.compile(r"^\s*category=writing\s*$")).first).to_be_attached()
