"""The Probes page in real Chromium: run the suite on the order-bug template against the local judge
server, read the verdict in plain words, and download the probe report."""
from __future__ import annotations

import pytest
from fake_openai import FakeOpenAI
from test_probes import confused_judge

from browser_support import wait_for_app

pytestmark = pytest.mark.browser


def test_probe_suite_from_the_page_and_its_report(page, app_url, tmp_path):
    with FakeOpenAI() as server:
        server.responder = confused_judge
        page.set_viewport_size({"width": 1440, "height": 1600})
        page.goto(f"{app_url}/probes")
        wait_for_app(page)
        page.get_by_label("Base URL", exact=True).fill(server.url)
        page.keyboard.press("Enter")
        wait_for_app(page)
        page.get_by_label("API key (kept in this browser session only)").fill("sk-probe-browser-0000000")
        page.keyboard.press("Enter")
        wait_for_app(page)
        page.get_by_role("button", name="Run the probe suite").click()
        page.get_by_text("scores an EMPTY answer 5/5", exact=False).first.wait_for(timeout=90_000)
        assert page.get_by_text("the order of the sections is the cause", exact=False).count() >= 1
        assert len(server.chat_requests()) > 0
    with page.expect_download() as info:
        page.get_by_role("button", name="Probe report (HTML)").click()
    report = tmp_path / "probes.html"
    info.value.save_as(report)
    text = report.read_text(encoding="utf-8")
    assert "order-bug-demo@v1 FAILS" in text and "empty_answer" in text
    assert "default-src 'none'" in text
