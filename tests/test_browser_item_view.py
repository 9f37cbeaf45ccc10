"""Real-browser tests of the item view: deep links reopen the same view, and hostile text stays text.

The hostile item's answer, rationale, judge prompt and judge name carry an <img onerror>, a <script>
and Markdown images pointing at a canary HTTP server on 127.0.0.1. The test asserts that no script
ran and that the canary received no request at all.
"""
from __future__ import annotations

import http.server
import json
import threading
from urllib.parse import quote

import pytest

from browser_support import wait_for_app
from conftest import SAMPLE
from lib.ingest.importer import ingest
from lib.store import Store

pytestmark = pytest.mark.browser


class _Canary(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 (http.server API)
        _Canary.hits.append(self.path)
        self.send_response(200)
        self.send_header("Content-Type", "image/png")
        self.end_headers()

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def canary():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Canary)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Canary.hits.clear()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _payload(canary: str, where: str) -> str:
    return (f"Intro {where}.\n<img src=\"{canary}/{where}-img.png\" onerror=\"window.__xss='{where}'\">\n"
            f"<script>window.__xss='{where}-script'</script>\n"
            f"![pixel]({canary}/{where}-md.png?leak=secret_score_7)\n"
            f"[click](javascript:window.__xss='{where}-link') :red[directive] $x^2$ end of {where}.")


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory, canary):
    root = tmp_path_factory.mktemp("hostile")
    bench = root / "evil_bench"
    (bench / "model_answer").mkdir(parents=True)
    (bench / "model_judgment").mkdir()
    judge = f"![judge]({canary}/judge-name.png)"
    lines = {
        bench / "question.jsonl": [{"question_id": 1, "category": "writing",
                                    "turns": [_payload(canary, "question"), "second turn"]}],
        bench / "model_answer" / "evil.jsonl": [{"question_id": 1, "model_id": "evil", "choices": [
            {"index": 0, "turns": [_payload(canary, "answer"), "turn two"]}]}],
        bench / "model_judgment" / "evil_single.jsonl": [
            {"question_id": 1, "model": "evil", "judge": [judge, "single-v1"], "user_prompt": _payload(canary, "prompt"),
             "judgment": _payload(canary, "rationale") + " Rating: [[9]]", "score": 9, "turn": 1},
            {"question_id": 1, "model": "evil", "judge": ["plain-judge", "single-v1"], "user_prompt": "p",
             "judgment": "Careful. Rating: [[2]]", "score": 2, "turn": 1},
        ],
    }
    for path, records in lines.items():
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    db = root / "hostile.duckdb"
    with Store(db) as store:
        ingest(store, [SAMPLE, bench])
    return db


@pytest.fixture(scope="module")
def app_env(hostile_db):
    return {"JUDGELENS_DB": str(hostile_db)}


def _item_url(app_url: str, **params) -> str:
    return f"{app_url}/item_view?" + "&".join(f"{k}={quote(str(v), safe='')}" for k, v in params.items())


def _select_value(page, label: str) -> str:
    return page.get_by_role("combobox", name=label, exact=True).input_value()


def _tags(page) -> list[str]:
    tags = page.locator('[data-testid="stMultiSelect"] .react-aria-ComboBox [data-tag]')
    return [tags.nth(i).get_attribute("aria-label") for i in range(tags.count())]


def test_deep_link_reopens_the_same_item_columns_and_diff(page, chromium, app_url):
    link = _item_url(app_url, bench="ja_mt_bench", q="31", turn="2", model="shisa-ai/shisa-v2-llama3.1-8b",
                     cols="fastchat:gpt-4o,fastchat:gpt-4.1-2025-04-14",
                     a="rationale:fastchat:gpt-4o", b="prompt:fastchat:gpt-4o")
    page.goto(link)
    wait_for_app(page)
    assert _select_value(page, "Question").startswith("31 · math")
    assert _select_value(page, "Left (struck through where it differs)") == "Rationale · fastchat:gpt-4o"
    assert _select_value(page, "Right (highlighted where it differs)") == "Judge prompt · fastchat:gpt-4o"
    chosen = _tags(page)
    assert chosen == ["fastchat:gpt-4o", "fastchat:gpt-4.1-2025-04-14"]
    assert page.locator('[data-testid="stRadio"] input[type="radio"]').nth(1).is_checked()  # turn 2

    # Next (keyboard: J) moves to question 32, turn 1, and the address bar follows.
    page.get_by_role("heading", name="Item view").click()  # focus the page, not a text field
    page.keyboard.press("j")
    page.wait_for_function("() => location.search.includes('q=32')")
    wait_for_app(page)
    moved = page.url
    assert "turn=1" in moved

    # The moved URL, pasted into a brand-new browser context, opens that same item.
    other = chromium.new_context(viewport={"width": 1440, "height": 1000})
    try:
        tab = other.new_page()
        tab.goto(moved)
        wait_for_app(tab)
        assert _select_value(tab, "Question").startswith("32 · math")
        assert _tags(tab) == chosen
    finally:
        other.close()


def test_hostile_text_is_shown_as_text_and_fetches_nothing(page, app_url, canary):
    page.goto(_item_url(app_url, bench="evil_bench", q="1", turn="1", model="evil"))
    wait_for_app(page)
    page.get_by_text("Character diff").wait_for()
    page.locator('[data-testid="stCode"]').filter(has_text="answer-script").first.wait_for()
    page.wait_for_timeout(1500)  # give any image fetch or script time to happen

    body = page.locator('[data-testid="stMain"]').inner_text().replace("\u2060", "")  # md_escape's word joiner
    assert "<script>window.__xss='answer-script'</script>" in body       # the answer, literally
    assert "<script>window.__xss='rationale-script'</script>" in body    # a rationale, literally
    assert f"![judge]({canary}/judge-name.png)" in body                  # the judge's name, literally
    assert page.evaluate("() => window.__xss === undefined")
    assert page.locator(f'img[src^="{canary}"]').count() == 0
    assert page.locator("a[href^='javascript']").count() == 0
    assert page.locator(f'a[href^="{canary}"]').count() == 0                # not even a clickable link
    assert _Canary.hits == [], f"the page fetched {_Canary.hits}"
