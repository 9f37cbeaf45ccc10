"""The real app in headless Chromium: first start loads the sample, the overview shows it, the Import page opens.

One server (fresh database) for this module; fixtures ``app_url``, ``chromium`` and ``page`` are in
conftest.py, helpers in browser_support.py.

Reading ``st.dataframe``: it draws on a canvas (glide-data-grid), but glide also keeps an accessible
``<table role="grid">`` of the rendered cells inside ``[data-testid="stDataFrame"]``; its ``td`` texts are
the raw cell values. The leaderboard is small enough that every row is rendered. As a second, complete
check the test also clicks the page's own "Download leaderboard (CSV)" button and reads the file.
"""
from __future__ import annotations

import io
from pathlib import Path

import pandas as pd
import pytest

from browser_support import wait_for_app

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
SCREENSHOT = ROOT / "bench" / "out" / "overview.png"
FIRST_START_MS = 60_000  # first start imports ~14 MB of sample data
MODELS = ["shisa-ai/shisa-v2-llama3.1-8b", "shisa-ai/shisa-v2-llama3.3-70b", "hosted_vllm/fake-org/Fake-JA-Chat-8B"]


def metric_value(page, label: str) -> str:
    label_el = page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True)
    metric = page.get_by_test_id("stMetric").filter(has=label_el)
    return metric.get_by_test_id("stMetricValue").inner_text().strip()


def open_overview(page, app_url: str) -> None:
    page.goto(app_url)
    page.get_by_test_id("stMetric").first.wait_for(timeout=FIRST_START_MS)  # after the first-start sample load
    wait_for_app(page, timeout=FIRST_START_MS)


def test_overview_shows_the_bundled_sample(page, app_url):
    open_overview(page, app_url)
    assert page.get_by_role("heading", name="Overview").is_visible()
    assert metric_value(page, "Sources") == "24"

    board = page.get_by_test_id("stDataFrame").first
    board.locator("table td").first.wait_for(state="attached")  # the accessible table is hidden
    cells = set(board.locator("table td").all_text_contents())
    for model in MODELS:
        assert model in cells, f"{model} not in the leaderboard grid"

    with page.expect_download() as download:
        page.get_by_test_id("stDownloadButton").filter(has_text="Download leaderboard (CSV)").click()
    csv = pd.read_csv(io.BytesIO(Path(download.value.path()).read_bytes()))
    assert set(MODELS) <= set(csv["model"])
    row = csv[(csv["judge"] == "gpt-4o") & (csv["model"] == "shisa-ai/shisa-v2-llama3.1-8b")]
    assert row["t1"].tolist() == pytest.approx([7.6375])

    page.set_viewport_size({"width": 1440, "height": 2200})  # the app scrolls inside its own container:
    page.get_by_test_id("stPlotlyChart").first.wait_for()    # a tall viewport shows the whole page
    wait_for_app(page)
    SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT), full_page=True)
    assert not page.get_by_test_id("stException").count()


def test_sidebar_link_opens_import_with_its_tabs(page, app_url):
    open_overview(page, app_url)
    page.get_by_test_id("stSidebarNavLink").filter(has_text="Import").click()
    page.get_by_role("heading", name="Import").wait_for()
    wait_for_app(page)
    assert page.url.rstrip("/").endswith("/import_data")
    tabs = page.get_by_role("tab")
    assert [t.strip() for t in tabs.all_inner_texts()] == ["Upload files", "Server folder", "Sources"]
    tabs.filter(has_text="Sources").click()
    assert page.get_by_text("Download sources (CSV)").is_visible()
    assert not page.get_by_test_id("stException").count()
