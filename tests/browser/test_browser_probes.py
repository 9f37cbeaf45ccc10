"""The Probes page in real Chromium: run the suite on the order-bug template against the local judge
server, read the verdict in plain words, and download the probe report."""
from __future__ import annotations

import pytest
from fake_openai import FakeOpenAI
from playwright.sync_api import expect
from scripted_judges import confused_judge

from browser_support import FIRST_START_MS, click_and_wait, fresh, open_app, set_judge_endpoint

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]  # generous: a loaded 2-core machine
SUITE_MS = 180_000  # the whole suite: dozens of judge calls, on a loaded machine


def test_probe_suite_from_the_page_and_its_report(page, app_url, tmp_path):
    with FakeOpenAI() as server:
        server.responder = confused_judge
        page.set_viewport_size({"width": 1440, "height": 1600})
        open_app(page, f"{app_url}/probes", timeout=FIRST_START_MS)
        set_judge_endpoint(page, server.url, "sk-probe-browser-0000000")
        click_and_wait(page.get_by_role("button", name="Run the probe suite", exact=True), timeout=SUITE_MS)
        expect(page.get_by_text("scores an EMPTY answer 5/5", exact=False).first).to_be_visible()
        expect(page.get_by_text("the order of the sections is the cause", exact=False).first).to_be_attached()
        assert len(server.chat_requests()) > 0
    with page.expect_download() as info:
        fresh(page.get_by_role("button", name="Probe report (HTML)", exact=True)).click()
    report = tmp_path / "probes.html"
    info.value.save_as(report)
    text = report.read_text(encoding="utf-8")
    assert "order-bug-demo@v1 FAILS" in text and "empty_answer" in text
    assert "default-src 'none'" in text
