"""The harness comparison in real Chromium: open one shisa-v2 model under two harnesses from a link, read the
setup table, run the attribution ladder against the local judge server (estimate, confirm) and see the waterfall."""
from __future__ import annotations

import re

import pytest
from fake_openai import FakeOpenAI

from browser_support import wait_for_app

pytestmark = pytest.mark.browser
KEY = "sk-browser-harness-123456789"
FRESH = ':not([data-stale="true"])'  # Streamlit marks elements of the previous run stale until replaced


@pytest.fixture(scope="module")
def judge_server():
    with FakeOpenAI(latency=0.01) as srv:
        srv.responder = lambda body: ("Rating: [[5]]" if "The expected language is Japanese"
                                      in "\n".join(m["content"] for m in body["messages"]) else "Rating: [[8]]")
        yield srv


def cell(page, text: str):
    """A cell of a current (not stale) dataframe with exactly this text."""
    return page.locator(f'[data-testid="stDataFrame"]{FRESH} table td').filter(
        has_text=re.compile(f"^{re.escape(text)}$")).first


def grid_cells(page) -> set[str]:
    cells = set()
    for frame in page.locator(f'[data-testid="stDataFrame"]{FRESH}').all():
        cells |= set(frame.locator("table td").all_text_contents())
    return cells


def test_harness_comparison_setup_table_and_waterfall(page, app_url, judge_server):
    page.set_viewport_size({"width": 1440, "height": 2400})
    page.goto(f"{app_url}/compare?view=harness&model=shisa-ai%2Fshisa-v2-llama3.1-8b")
    wait_for_app(page, timeout=120_000)
    page.get_by_role("heading", name="How the two runs were set up").wait_for()
    page.get_by_text("80 linked questions between ja_mt_bench and japanese_mt_bench").wait_for()
    cell(page, "judge_model").wait_for(state="attached")  # the grids' accessible tables are hidden
    cells = grid_cells(page)
    for expected in ("judge_model", "judge_prompt", "system_prompt", "gpt-4o-2024-08-06"):
        assert expected in cells, f"{expected} not in the setup table"
    assert any(c.startswith("not recorded") for c in cells)

    page.get_by_label("Base URL", exact=True).fill(judge_server.url)
    page.locator('[data-testid="stSidebar"]').get_by_label("Model", exact=True).fill("judge-x")
    page.get_by_label("API key (kept in this browser session only)").fill(KEY)
    page.keyboard.press("Enter")
    wait_for_app(page)
    page.get_by_text("Key: found").wait_for()
    items = page.get_by_label("Items", exact=True)
    items.fill("4")
    items.press("Enter")
    wait_for_app(page)
    page.get_by_role("button", name="Estimate the calls").click()
    wait_for_app(page)
    page.get_by_text("24 to send").wait_for()            # 6 steps x 4 items; nothing sent yet
    assert judge_server.chat_requests() == []
    page.get_by_role("button", name="Run the ladder (24 calls)").click()
    wait_for_app(page, timeout=120_000)
    chart = page.locator(f'[data-testid="stPlotlyChart"]{FRESH}').filter(has_text="residual (answers)")
    chart.wait_for(timeout=60_000)
    for label in ("replay (drift)", "judge prompt", "judge model", "truncation"):  # one bar per step
        assert chart.locator("g.xtick text", has_text=label).count() == 1, label
    assert len(judge_server.chat_requests()) == 24
    cell(page, "residual (the answers)").wait_for(state="attached")
    cells = grid_cells(page)
    assert {"replay (A's setup today)", "judge prompt", "judge model", "B stored"} <= cells
