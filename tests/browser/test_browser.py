"""The real app in headless Chromium: first start loads the sample, the overview shows it, the Import page opens.

One server (fresh database: ``app_starts_empty``) for this module; fixtures ``app_url``, ``chromium`` and ``page``
are in conftest.py, helpers in browser_support.py.

Reading ``st.dataframe``: it draws on a canvas (glide-data-grid), but glide also keeps an accessible
``<table role="grid">`` of the rendered cells inside ``[data-testid="stDataFrame"]``; its ``td`` texts are
the raw cell values. The leaderboard is small enough that every row is rendered. As a second, complete
check the test also clicks the page's own "Download leaderboard (CSV)" button and reads the file.
"""
from __future__ import annotations

import io
import re
from pathlib import Path

import pandas as pd
import pytest
from playwright.sync_api import expect

from browser_support import fresh, open_app, wait_for_app, wait_for_rerun

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]  # generous: a loaded 2-core machine

ROOT = Path(__file__).resolve().parents[2]
SCREENSHOT = ROOT / "bench" / "out" / "overview.png"
FIRST_START_MS = 180_000  # the first start imports ~14 MB of sample data; allow for a loaded machine
MODELS = ["shisa-ai/shisa-v2-llama3.1-8b", "shisa-ai/shisa-v2-llama3.3-70b", "hosted_vllm/fake-org/Fake-JA-Chat-8B"]


@pytest.fixture(scope="module")
def app_starts_empty() -> bool:
    """This module tests the first start: its server opens an empty database, and the first run loads the sample."""
    return True


def metric(page, label: str):
    """The value element of the metric labelled ``label`` (exact)."""
    label_el = page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True)
    return fresh(page.get_by_test_id("stMetric").filter(has=label_el)).get_by_test_id("stMetricValue")


def exact_text(text: str) -> re.Pattern:
    return re.compile(rf"^\s*{re.escape(text)}\s*$")


def open_overview(page, app_url: str) -> None:
    open_app(page, app_url, timeout=FIRST_START_MS)  # the first run loads the sample (first start)
    expect(page.get_by_test_id("stMetric").first).to_be_visible()


def test_overview_shows_the_bundled_sample(page, app_url):
    open_overview(page, app_url)
    expect(page.get_by_role("heading", name="Overview")).to_be_visible()
    expect(metric(page, "Sources")).to_have_text("24")

    board = fresh(page.get_by_test_id("stDataFrame")).first
    for model in MODELS:  # the grid's accessible table (hidden) holds the raw cell values
        expect(board.locator("table td").filter(has_text=exact_text(model)).first).to_be_attached()

    with page.expect_download() as download:
        fresh(page.get_by_test_id("stDownloadButton").filter(has_text="Download leaderboard (CSV)")).click()
    csv = pd.read_csv(io.BytesIO(Path(download.value.path()).read_bytes()))
    assert set(MODELS) <= set(csv["model"])
    row = csv[(csv["judge"] == "gpt-4o") & (csv["model"] == "shisa-ai/shisa-v2-llama3.1-8b")]
    assert row["t1"].tolist() == pytest.approx([7.6375])

    page.set_viewport_size({"width": 1440, "height": 2200})  # the app scrolls inside its own container:
    expect(page.get_by_test_id("stPlotlyChart").first).to_be_visible()  # a tall viewport shows the whole page
    wait_for_app(page)
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    expect(page.get_by_test_id("stException")).to_have_count(0)


def test_sidebar_link_opens_import_with_its_tabs(page, app_url):
    open_overview(page, app_url)
    link = page.get_by_test_id("stSidebarNavLink").filter(has_text="Import")
    wait_for_rerun(page, link.click)
    expect(page.get_by_role("heading", name="Import")).to_be_visible()
    assert page.url.rstrip("/").endswith("/import_data")
    tabs = fresh(page.get_by_role("tab"))
    expect(tabs).to_have_text(["Upload files", "Server folder", "Sources"])
    wait_for_rerun(page, tabs.filter(has_text="Sources").click)  # lazy tabs: the open one runs and is drawn
    expect(page.get_by_text("Download sources (CSV)")).to_be_visible()
    expect(page.get_by_test_id("stException")).to_have_count(0)
