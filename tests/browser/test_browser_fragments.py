"""Overview and Judge agreement in fragments (issue 26): a widget inside a section reruns that section alone, so the
rest of the page is neither run again nor redrawn; a filter above the sections still reruns the whole page.

A full script run goes through app.py, which (with JUDGELENS_PROFILE set) writes one profile per run of a page; a
fragment's rerun runs the fragment alone and writes none. So the profiles counted are the page's full runs."""
from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import expect

from browser_support import FIRST_START_MS, fresh, open_app, wait_for_rerun

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def app_env(tmp_path_factory):
    return {"JUDGELENS_PROFILE": str(tmp_path_factory.mktemp("profiles"))}


def full_runs(app_env, title: str) -> int:
    return len(list(Path(app_env["JUDGELENS_PROFILE"]).glob(f"{title.replace(' ', '_')}-*.prof")))


def pick(page, label: str, option: str) -> None:
    box = fresh(page.get_by_test_id("stSelectbox").filter(has=page.get_by_text(label, exact=True))).first
    box.locator("input").click()
    box.locator("input").fill(option)
    page.get_by_role("option", name=option, exact=True).first.click()


def test_overview_sections_rerun_alone(page, app_url, app_env):
    open_app(page, app_url, timeout=FIRST_START_MS)
    runs = full_runs(app_env, "Overview")
    assert runs >= 1
    ranking = fresh(page.get_by_test_id("stRadio").filter(has_text="Rank models by"))  # a few judges: one click
    wait_for_rerun(page, lambda: ranking.get_by_text("gpt-4o", exact=True).click())  # the leaderboard and its chart
    expect(ranking.get_by_role("radio", name="gpt-4o", exact=True)).to_be_checked()
    wait_for_rerun(page, lambda: fresh(page.get_by_test_id("stExpander").locator("summary").filter(
        has_text="One row per harness, bench, judge and model")).click())  # "What is loaded", opened
    expect(fresh(page.get_by_test_id("stExpander").filter(has_text="One row per harness, bench, judge and model")
                 .get_by_test_id("stDataFrame"))).to_be_visible()
    assert full_runs(app_env, "Overview") == runs
    expect(fresh(page.get_by_test_id("stMetric")).first).to_be_visible()  # the numbers above stay


def test_agreement_tabs_and_heatmap_rerun_alone_and_a_filter_reruns_the_page(page, app_url, app_env):
    open_app(page, f"{app_url}/agreement", timeout=FIRST_START_MS)
    runs = full_runs(app_env, "Judge agreement")
    assert runs >= 1
    wait_for_rerun(page, lambda: fresh(page.get_by_test_id("stButtonGroup").filter(has_text="Heatmap of"))
                   .get_by_role("radio", name="pearson", exact=True).click())
    wait_for_rerun(page, lambda: page.get_by_role("tab", name="Parse failures", exact=True).click())
    expect(fresh(page.get_by_text("mean_fastchat_rule: FastChat show_result.py")).first).to_be_visible()  # its tab
    assert full_runs(app_env, "Judge agreement") == runs
    wait_for_rerun(page, lambda: pick(page, "Turn", "2"))  # a filter: every section follows it
    assert full_runs(app_env, "Judge agreement") == runs + 1
