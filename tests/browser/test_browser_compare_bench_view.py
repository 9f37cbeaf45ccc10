"""The Compare page's bench view in real Chromium: its sections are fragments that redraw on their own. A module of
its own: its database is a fresh copy of the sample (the harness tests' module adds a regenerated model, which
would become the default Model B and pair with nothing)."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from browser_support import FIRST_START_MS, click_and_wait, fresh, grid_cell, open_app

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]  # generous: a loaded 2-core machine


def test_the_bench_view_sections_redraw_on_their_own(page, app_url):
    """The bench view's sections are fragments: Rows redraws the delta table alone, the feature split its own table
    below it (the delta table keeps its level), and a picker above redraws both for the new pair."""
    open_app(page, f"{app_url}/compare", timeout=FIRST_START_MS)
    tables = fresh(page.get_by_test_id("stDataFrame"))
    expect(tables).to_have_count(1)
    click_and_wait(page.get_by_role("radio", name="all (every category and turn)"))
    expect(tables).to_have_count(1)
    expect(grid_cell(page, "—")).to_be_attached()  # the one row over every category and turn
    split = fresh(page.get_by_test_id("stSelectbox").filter(has=page.get_by_text("Split the gap by", exact=True)))
    split.locator("input").click()
    split.locator("input").fill("share of Japanese")
    click_and_wait(page.get_by_role("option", name="share of Japanese characters in the visible answer", exact=True))
    expect(fresh(page.get_by_text(re.compile(r"^A minus B per bin, binned by ")))).to_be_visible()
    expect(tables).to_have_count(2)  # the delta table (still one row: its level kept) and the bins
    expect(fresh(page.get_by_test_id("stDataFrame")).first.locator("table tbody tr")).to_have_count(1)
    click_and_wait(page.get_by_text("two models under one judge", exact=True))
    expect(fresh(page.get_by_role("heading", name=re.compile(r" vs .*judged by ")))).to_be_visible()
    expect(fresh(page.get_by_text("Bin by the answers of", exact=True))).to_be_visible()  # a two-models split
    expect(tables).to_have_count(2)  # both sections drawn again for the new pair
