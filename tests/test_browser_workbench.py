"""The Workbench round trip in real Chromium, against the project's local OpenAI-compatible server:
item view -> Re-judge in Workbench -> edit -> re-judge -> new beside stored with a diff -> batch ->
the new judge on the Compare page. The key is typed into the password field only."""
from __future__ import annotations

import pytest
from fake_openai import FakeOpenAI

from browser_support import wait_for_app

pytestmark = pytest.mark.browser
KEY = "sk-browser-workbench-123456789"


@pytest.fixture(scope="module")
def judge_server():
    with FakeOpenAI(latency=0.02) as srv:
        srv.responder = lambda body: ("Strict look: the area is wrong. Rating: [[2]]"
                                      if "Be strict" in body["messages"][-1]["content"] else "Fine. Rating: [[8]]")
        yield srv


def test_workbench_round_trip(page, app_url, judge_server):
    page.set_viewport_size({"width": 1440, "height": 1600})
    page.goto(f"{app_url}/item_view?bench=ja_mt_bench&q=31&turn=1&model=shisa-ai%2Fshisa-v2-llama3.1-8b")
    wait_for_app(page)
    page.get_by_text("Re-judge in Workbench").click()
    page.wait_for_url("**/workbench?**")
    wait_for_app(page)
    assert "q=31" in page.url

    page.get_by_label("Base URL", exact=True).fill(judge_server.url)
    page.locator('[data-testid="stSidebar"]').get_by_label("Model", exact=True).fill("judge-x")
    page.get_by_label("API key (kept in this browser session only)").fill(KEY)
    page.keyboard.press("Enter")
    wait_for_app(page)
    page.get_by_text("Key: found").wait_for()
    editor = page.get_by_label("Message 2 (user)")
    editor.fill(editor.input_value() + "\nBe strict.")
    page.keyboard.press("Tab")
    wait_for_app(page)

    page.get_by_role("button", name="Re-judge", exact=True).click()
    page.get_by_text("Strict look: the area is wrong.").first.wait_for()
    metrics = page.locator('[data-testid="stMetricValue"]').all_inner_texts()
    assert metrics[-1] == "2"                                            # the new verdict
    page.locator(".jl-diff").wait_for()                                  # stored vs new rationale diff
    sent = judge_server.chat_requests()[-1]
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert "Be strict." in sent.body["messages"][-1]["content"]

    page.get_by_label("At most (items)").fill("4")
    label = page.get_by_label("Label (the new judge's name)")
    label.fill("strict-browser")
    page.keyboard.press("Tab")
    wait_for_app(page)
    page.get_by_role("button", name="Estimate and run").click()
    page.get_by_text("Stored as judge strict-browser.").wait_for(timeout=60_000)

    page.goto(f"{app_url}/compare")
    wait_for_app(page)
    page.get_by_role("combobox", name="Judge B", exact=True).click()
    page.get_by_role("option", name="strict-browser").wait_for()
