"""The analyst's path through the app in real Chromium, on the bundled data:

overview -> the judges' largest disagreements -> open the worst item -> rationales side by side with a
diff -> the link reopens it elsewhere -> download the HTML report.
"""
from __future__ import annotations

import pytest
from playwright.sync_api import expect

from browser_support import (FIRST_START_MS, TIMEOUT_MS, fresh, new_page, open_app, open_expander, runs_started,
                             wait_for_app, wait_for_rerun)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]  # generous: a loaded 2-core machine


def _select_first_row(page, grid) -> None:
    """Tick the first data row's selection box. The grid is a canvas (glide-data-grid): click where the row
    marker is. Its hidden accessible table is filled once the grid has data, so wait for that first. If the
    click landed before glide had measured itself, no rerun starts: then, and only then, click again."""
    expect(grid.locator("table tr").nth(1)).to_be_attached()
    for _ in range(5):
        box = grid.bounding_box()
        before = runs_started(page)
        page.mouse.click(box["x"] + 18, box["y"] + 35 + 17)
        try:
            page.wait_for_function("(n) => window.__jlRuns.started > n", arg=before, timeout=30_000)
            return
        except Exception:  # noqa: BLE001 (Playwright's TimeoutError): the click reached no row yet
            continue
    raise AssertionError("clicking the grid's first row never started a rerun")


def test_overview_to_worst_disagreement_to_link_and_report(page, chromium, app_url, tmp_path):
    page.set_viewport_size({"width": 1440, "height": 1400})
    open_app(page, app_url, timeout=FIRST_START_MS)
    wait_for_rerun(page, fresh(page.get_by_text("Where do the judges disagree?")).click)
    page.wait_for_url("**/agreement**")
    expect(page.get_by_role("heading", name="Judge agreement")).to_be_visible()

    wait_for_rerun(page, page.get_by_role("tab", name="Largest disagreements").click)  # lazy tabs: a rerun
    grid = fresh(page.get_by_test_id("stDataFrame")).filter(visible=True).first
    _select_first_row(page, grid)
    page.wait_for_url("**/item_view?**", timeout=TIMEOUT_MS)
    wait_for_app(page)
    assert "bench=ja_mt_bench" in page.url and "q=" in page.url
    expect(fresh(page.get_by_test_id("stMetric"))).to_have_count(3)            # three judges side by side
    expect(page.locator(".jl-diff")).to_have_count(0)                          # the diff waits until opened
    open_expander(page, "Character diff")
    url = page.url
    assert "a=rationale" in url and "b=rationale" in url                       # the link names the diff
    diff = fresh(page.locator(".jl-diff"))
    expect(diff.locator("span").first).to_be_attached()                        # differences are marked

    tab = new_page(chromium)                                                   # the colleague's browser
    try:
        open_app(tab, url)
        expect(tab.locator(".jl-diff")).to_be_visible()
        assert tab.url == url
        question = page.get_by_role("combobox", name="Question", exact=True).input_value()
        expect(tab.get_by_role("combobox", name="Question", exact=True)).to_have_value(question)
    finally:
        tab.context.close()

    open_app(page, app_url + "/agreement")
    with page.expect_download() as info:
        fresh(page.get_by_role("button", name="Report (self-contained HTML)")).click()
    report = tmp_path / "report.html"
    info.value.save_as(report)
    text = report.read_text(encoding="utf-8")
    assert "JudgeLens report: gpt-4.1-2025-04-14 vs gpt-4.1-mini-2025-04-14 vs gpt-4o" in text
    assert "Largest disagreements" in text
