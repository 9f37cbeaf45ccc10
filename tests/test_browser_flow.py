"""The analyst's path through the app in real Chromium, on the bundled data:

overview -> the judges' largest disagreements -> open the worst item -> rationales side by side with a
diff -> the link reopens it elsewhere -> download the HTML report.
"""
from __future__ import annotations

import pytest

from browser_support import wait_for_app

pytestmark = pytest.mark.browser


def test_overview_to_worst_disagreement_to_link_and_report(page, chromium, app_url, tmp_path):
    page.set_viewport_size({"width": 1440, "height": 1400})
    page.goto(app_url)
    wait_for_app(page)
    page.get_by_text("Where do the judges disagree?").click()
    page.wait_for_url("**/agreement**")
    wait_for_app(page)

    page.get_by_role("tab", name="Largest disagreements").click()
    grid = page.locator('[data-testid="stDataFrame"]').filter(visible=True).first  # the other tabs' are hidden
    grid.wait_for()
    page.wait_for_timeout(500)  # the canvas grid draws after it is attached
    # The grid is a canvas: tick the first data row's selection box (row marker column, first row).
    box = grid.bounding_box()
    page.mouse.click(box["x"] + 18, box["y"] + 35 + 17)
    page.wait_for_url("**/item_view?**")
    wait_for_app(page)
    url = page.url
    assert "bench=ja_mt_bench" in url and "q=" in url
    page.get_by_text("Character diff").wait_for()
    assert page.locator('[data-testid="stMetric"]').count() == 3            # three judges side by side
    diff = page.locator(".jl-diff")
    diff.wait_for()
    assert diff.locator("span").count() > 0                                  # differences are marked

    other = chromium.new_context(viewport={"width": 1440, "height": 1000})   # the colleague's browser
    try:
        tab = other.new_page()
        tab.goto(url)
        wait_for_app(tab)
        tab.locator(".jl-diff").wait_for()
        assert tab.url == url
        question = tab.get_by_role("combobox", name="Question", exact=True).input_value()
        assert question == page.get_by_role("combobox", name="Question", exact=True).input_value()
    finally:
        other.close()

    page.goto(app_url + "/agreement")
    wait_for_app(page)
    with page.expect_download() as info:
        page.get_by_role("button", name="Report (self-contained HTML)").click()
    report = tmp_path / "report.html"
    info.value.save_as(report)
    text = report.read_text(encoding="utf-8")
    assert "JudgeLens report: gpt-4.1-2025-04-14 vs gpt-4.1-mini-2025-04-14 vs gpt-4o" in text
    assert "Largest disagreements" in text
