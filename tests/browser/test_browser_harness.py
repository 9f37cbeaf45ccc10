"""The harness comparison in real Chromium: open one shisa-v2 model under two harnesses from a link, read the
setup table, run the full waterfall against the local judge and model servers (state A's system prompt, estimate,
confirm) and see both orders side by side."""
from __future__ import annotations

import re

import pytest
from fake_model import FakeModel
from fake_openai import FakeOpenAI
from playwright.sync_api import expect

from browser_support import (FIRST_START_MS, click_and_wait, fresh, grid_cell, open_app, open_expander,
                             set_judge_endpoint, type_and_commit)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]  # generous: a loaded 2-core machine
KEY = "sk-browser-harness-123456789"
LADDER_MS = 300_000  # the answers and verdicts of every step in both orders, on a loaded machine


@pytest.fixture(scope="module")
def judge_server():
    from scripted_judges import planted_judge as judge

    with FakeOpenAI(latency=0.01) as srv:
        srv.responder = judge
        yield srv


@pytest.fixture(scope="module")
def model_server():
    with FakeModel(default_max_tokens=200) as srv:
        yield srv


def test_the_gap_leads_and_every_rows_option_is_reachable_at_1440(page, app_url):
    """At 1440 x 1000: the headline (the gap, its interval, the largest categories) comes first, and the Rows
    control's last option lies inside the page and switches the table to the one all-questions row."""
    page.set_viewport_size({"width": 1440, "height": 1000})
    open_app(page, f"{app_url}/compare?view=harness&model=shisa-ai%2Fshisa-v2-llama3.1-8b", timeout=FIRST_START_MS)
    headline = fresh(page.get_by_text(re.compile(r"^A − B = [+-]\d\.\d\d points \(95% CI .* 80 questions\)\. "
                                                 r"Largest categories: ")))
    expect(headline).to_be_visible()
    last = fresh(page.get_by_role("radio", name="all (every category and turn)"))
    last.scroll_into_view_if_needed()
    box, width = last.bounding_box(), page.evaluate("document.documentElement.clientWidth")
    assert box["x"] >= 0 and box["x"] + box["width"] <= width, (box, width)
    click_and_wait(last)
    # one row over every category and turn: its category and turn read as an em dash, its p-value plainly
    expect(grid_cell(page, "—")).to_be_attached()
    expect(grid_cell(page, "< 0.001")).to_be_attached()
    expect(grid_cell(page, "None")).to_have_count(0)


def test_harness_comparison_setup_table_and_waterfall(page, app_url, judge_server, model_server):
    page.set_viewport_size({"width": 1440, "height": 2400})
    open_app(page, f"{app_url}/compare?view=harness&model=shisa-ai%2Fshisa-v2-llama3.1-8b", timeout=FIRST_START_MS)
    expect(page.get_by_role("heading", name="How the two runs were set up")).to_be_visible()
    expect(page.get_by_text("80 linked questions between ja_mt_bench and japanese_mt_bench")).to_be_visible()
    for area in ("judge_model", "judge_prompt", "truncation"):  # differing rows: one card each, values wrapped
        expect(fresh(page.get_by_text(f"{area} · differs: yes", exact=True)), f"no card for {area}").to_be_visible()
    expect(fresh(page.get_by_text("gpt-4o-2024-08-06", exact=True)).first).to_be_visible()
    open_expander(page, "As a table (with a link to an example item per row)")
    for expected in ("judge_model", "judge_prompt", "system_prompt", "gpt-4o-2024-08-06"):
        expect(grid_cell(page, expected), f"{expected} not in the setup table").to_be_attached()
    expect(grid_cell(page, re.compile(r"^not recorded"))).to_be_attached()

    open_expander(page, "Attribute the gap: every cause gets a bar (replay, regenerate, each factor, residual)")
    expect(page.get_by_text("What the stored answers tell without any call")).to_be_visible()  # no endpoint yet
    set_judge_endpoint(page, judge_server.url, KEY, model="judge-x")
    type_and_commit(page, page.get_by_label("Model endpoint (serving the model under test)"), model_server.url)
    type_and_commit(page, page.get_by_label("Model name at that endpoint"), "shisa")
    expect(page.get_by_text("is unknown: FastChat answer files do not record it").first).to_be_visible()
    type_and_commit(page, page.get_by_role("textbox", name="A's system prompt (fastchat)"), "You are a helpful assistant.")
    type_and_commit(page, page.get_by_label("Items", exact=True), "2")
    click_and_wait(page.get_by_role("button", name="Estimate the cost"))
    expect(page.get_by_text(re.compile(r"\d+ generation request\(s\)"))).to_be_visible()
    assert judge_server.chat_requests() == [] and model_server.chat_requests() == []    # nothing sent yet
    click_and_wait(page.get_by_role("button", name=re.compile(r"^Run the waterfall")), timeout=LADDER_MS)
    chart = fresh(page.get_by_test_id("stPlotlyChart")).filter(has_text="regenerate (model drift)")
    for label in ("A->B", "B->A"):                                     # both orders side by side
        expect(chart.get_by_text(label, exact=True), label).to_have_count(1)
    for label in ("system prompt", "samples", "turn-2 context", "gen. max_tokens", "judge prompt",
                  "judge max_tokens", "residual"):                      # one bar per cause, in each order
        expect(chart.locator("g.xtick text, g.x2tick text", has_text=label), label).to_have_count(2)
    assert model_server.chat_requests() and judge_server.chat_requests()
    expect(page.get_by_text("These factors interact").first).to_be_visible()
    for expected in ("A stored", "regenerate (model drift)", "system prompt", "judge max_tokens"):
        expect(grid_cell(page, expected), expected).to_be_attached()
