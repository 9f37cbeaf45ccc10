"""The Workbench round trip in real Chromium, against the project's local OpenAI-compatible server:
item view -> Re-judge in Workbench -> edit -> re-judge -> new beside stored with a diff -> batch ->
the new judge on the Compare page. The key is typed into the password field only."""
from __future__ import annotations

import re

import pytest
from fake_openai import FakeOpenAI
from playwright.sync_api import expect

from browser_support import (FIRST_START_MS, click_and_wait, fresh, open_app, open_expander, set_judge_endpoint,
                             type_and_commit, wait_for_app)

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]  # generous: a loaded 2-core machine
KEY = "sk-browser-workbench-123456789"


@pytest.fixture(scope="module")
def judge_server():
    with FakeOpenAI(latency=0.02) as srv:
        srv.responder = lambda body: ("Strict look: the area is wrong. Rating: [[2]]"
                                      if "Be strict" in body["messages"][-1]["content"] else "Fine. Rating: [[8]]")
        yield srv


BATCH_MS = 180_000  # a small batch of judge calls on a loaded machine


def test_workbench_round_trip(page, app_url, judge_server):
    page.set_viewport_size({"width": 1440, "height": 1600})
    open_app(page, f"{app_url}/item_view?bench=ja_mt_bench&q=31&turn=1&model=shisa-ai%2Fshisa-v2-llama3.1-8b",
             timeout=FIRST_START_MS)
    click_and_wait(page.get_by_text("Re-judge in Workbench"))
    page.wait_for_url("**/workbench?**")
    wait_for_app(page)
    assert "q=31" in page.url

    set_judge_endpoint(page, judge_server.url, KEY, model="judge-x")
    editor = fresh(page.get_by_label("Message 2 (user)"))
    type_and_commit(page, editor, editor.input_value() + "\nBe strict.", key="Tab")

    click_and_wait(page.get_by_role("button", name="Re-judge", exact=True))
    expect(page.get_by_text("Strict look: the area is wrong.").first).to_be_visible()
    expect(fresh(page.get_by_test_id("stMetricValue")).last).to_have_text("2")   # the new verdict
    expect(fresh(page.locator(".jl-diff"))).to_be_visible()                      # stored vs new rationale diff
    sent = judge_server.chat_requests()[-1]
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    assert "Be strict." in sent.body["messages"][-1]["content"]

    open_expander(page, "Re-judge a batch")
    type_and_commit(page, page.get_by_label("At most (items)"), "4")
    type_and_commit(page, page.get_by_label("Label (the new judge's name)"), "strict-browser")
    # The batch runs in a thread; a fragment polls it every second until it is stored, then reruns the page.
    n_sent = len(judge_server.chat_requests())
    click_and_wait(page.get_by_role("button", name="Estimate", exact=True))
    expect(fresh(page.get_by_text(re.compile(r"^4 item\(s\) as judge strict-browser: 4 request\(s\) to send")))).to_be_visible()
    assert len(judge_server.chat_requests()) == n_sent                           # nothing sent before the confirmation
    fresh(page.get_by_role("button", name="Run 4 request(s)")).click()
    expect(page.get_by_text("Stored as judge strict-browser.")).to_be_visible(timeout=BATCH_MS)
    wait_for_app(page)

    open_app(page, f"{app_url}/compare")
    fresh(page.get_by_role("combobox", name="Judge B", exact=True)).click()  # opens the list, no rerun
    expect(page.get_by_role("option", name="strict-browser", exact=True)).to_be_visible()
