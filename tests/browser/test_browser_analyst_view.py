"""What the analyst sees at 1440 x 1000 in real Chromium (issue 25): one count of models and judges, Search's hit in
context with Swallow's samples folded, and the hit marked in the Item view opened from it."""
from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from browser_support import FIRST_START_MS, fresh, open_app

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]


def test_overview_counts_say_the_same_as_the_chart(page, app_url):
    page.set_viewport_size({"width": 1440, "height": 1000})
    open_app(page, app_url, timeout=FIRST_START_MS)
    models = fresh(page.get_by_test_id("stMetric").filter(has_text="Models")).get_by_test_id("stMetricValue")
    judges = fresh(page.get_by_test_id("stMetric").filter(has_text="Judges")).get_by_test_id("stMetricValue")
    expect(models).to_have_text("5")        # 7 names in the files, joined by aliases
    expect(judges).to_have_text("5")
    expect(fresh(page.get_by_text("Showing all 5 models."))).to_be_visible()
    expect(fresh(page.get_by_text(re.compile(r"^Showing all 5 judges\.")))).to_be_visible()


def test_search_folds_samples_and_the_item_view_marks_the_hit(page, app_url):
    page.set_viewport_size({"width": 1440, "height": 1000})
    open_app(page, f"{app_url}/search?q=%E6%9D%B1%E4%BA%AC&in=answer", timeout=FIRST_START_MS)
    expect(fresh(page.get_by_text(re.compile(r"identical Swallow sample\(s\) on this page are folded")))).to_be_visible()
    open_app(page, f"{app_url}/item_view?bench=ja_mt_bench&q=15&turn=2&model=shisa-ai%2Fshisa-v2-llama3.1-8b"
                   "&hit=%E6%9D%B1%E4%BA%AC&hit_in=answer")
    expect(fresh(page.get_by_text(re.compile(r"^Opened from Search: hits of «東京» are marked")))).to_be_visible()
    expect(fresh(page.get_by_text(re.compile("«東京»"))).first).to_be_visible()
