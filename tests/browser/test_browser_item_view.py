"""Real-browser tests of the item view (deep links reopen the same view) and of hostile text on every page.

The hostile item's answer, rationale, judge prompt and judge name carry an <img onerror>, a <script>
and Markdown images pointing at a canary HTTP server on 127.0.0.1. A second model and a second judge carry
the canaries in their NAMES (Markdown image, Markdown link, HTML <img>/<a>, and a Markdown image on a host
outside this machine), and a stored probe run is judged by a model with such a name. The item-view test
asserts that no script ran and the canary received no request; the all-pages test opens each page app.py
registers and asserts that no name became an <img> or a link, no script ran, and every request the browser made
went to 127.0.0.1 (the rest is blocked and recorded, so nothing leaves the machine even when it fails).
"""
from __future__ import annotations

import http.server
import json
import re
import shutil
import threading
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from playwright.sync_api import expect

from browser_support import fresh, new_page, open_app, open_expander, wait_for_app, wait_for_rerun
from fake_openai import FakeOpenAI
from lib.ingest.importer import ingest
from lib.judging.config import JudgeConfig
from lib.probes import suite as probes
from lib.store import Store

pytestmark = [pytest.mark.browser, pytest.mark.timeout(900)]  # generous: a loaded 2-core machine


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


OUTSIDE = "canary.invalid"  # a host outside this machine: a request to it must never even be attempted
SHOWS_A_HOSTILE_NAME = f"""() => {{
  const main = document.querySelector('[data-testid="stMain"]');
  return !!main && (main.textContent.includes('{OUTSIDE}')
    || [...main.querySelectorAll('input, textarea')].some(e => e.value.includes('{OUTSIDE}')));
}}"""
LINKS_TO = """(markers) => {
  const found = [];
  for (const el of document.querySelectorAll('img, image, a, source, video, audio, iframe, object, embed, link, use')) {
    for (const v of [el.getAttribute('src'), el.getAttribute('href'), el.getAttribute('srcset'),
                     el.getAttribute('data'), el.getAttributeNS('http://www.w3.org/1999/xlink', 'href')]) {
      if (v && markers.some(m => v.includes(m))) found.push(el.outerHTML.slice(0, 300));
    }
  }
  return found;
}"""  # HTML and SVG (Plotly draws <a xlink:href> for an <a> tag in a label)


def _app_pages() -> dict[str, str]:
    """Title -> URL path of every page app.py registers (the default page is served at /)."""
    source = (Path(__file__).resolve().parents[2] / "app.py").read_text(encoding="utf-8")
    pages = re.findall(r'st\.Page\("app_pages/(\w+)\.py", title="([^"]+)"([^)]*)\)', source)
    return {title: "" if "default=True" in rest else stem for stem, title, rest in pages}


PAGES = _app_pages()
# Pages whose first view shows a hostile name (the others need a query or a choice first, or list files).
SHOWS_NAMES = {"Overview", "Judge agreement", "Item view", "Distributions", "Compare", "Workbench", "Probes"}


def hostile_name(canary: str, who: str) -> str:
    """A name that is harmless as text and fetches, links or runs something if rendered as Markdown or HTML.
    It starts with "!" so that it sorts first and every page picks it by default."""
    return (f"![{who}]({canary}/{who}-md.png) ![{who}](https://{OUTSIDE}/{who}.png) [{who}-link]({canary}/{who}-link) "
            f"<img src=\"{canary}/{who}-img.png\" onerror=\"window.__xss='{who}'\"><a href=\"{canary}/{who}-a\">{who}</a>")


@pytest.fixture(scope="module")
def hostile_db(tmp_path_factory, canary, _sample_db):
    root = tmp_path_factory.mktemp("hostile")
    bench = root / "evil_bench"
    (bench / "model_answer").mkdir(parents=True)
    (bench / "model_judgment").mkdir()
    judge = f"![judge]({canary}/judge-name.png)"
    evil_judge, evil_model = hostile_name(canary, "judge"), hostile_name(canary, "model")
    lines = {
        bench / "question.jsonl": [{"question_id": 1, "category": "writing",
                                    "turns": [_payload(canary, "question"), "second turn"]}],
        bench / "model_answer" / "evil.jsonl": [{"question_id": 1, "model_id": "evil", "choices": [
            {"index": 0, "turns": [_payload(canary, "answer"), "turn two"]}]}],
        bench / "model_answer" / "evil2.jsonl": [{"question_id": 1, "model_id": evil_model, "choices": [
            {"index": 0, "turns": ["A plain answer.", "turn two"]}]}],
        bench / "model_judgment" / "evil_single.jsonl": [
            {"question_id": 1, "model": "evil", "judge": [judge, "single-v1"], "user_prompt": _payload(canary, "prompt"),
             "judgment": _payload(canary, "rationale") + " Rating: [[9]]", "score": 9, "turn": 1},
            {"question_id": 1, "model": "evil", "judge": ["plain-judge", "single-v1"], "user_prompt": "p",
             "judgment": "Careful. Rating: [[2]]", "score": 2, "turn": 1},
            *({"question_id": 1, "model": m, "judge": [j, "single-v1"], "user_prompt": "p",
               "judgment": f"Fine. Rating: [[{s}]]", "score": s, "turn": 1}
              for m, j, s in [(evil_model, evil_judge, 7), (evil_model, "plain-judge", 4), ("evil", evil_judge, 6)]),
        ],
    }
    for path, records in lines.items():
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    db = root / "hostile.duckdb"
    shutil.copy(_sample_db, db)  # the bundled sample, imported once per session (conftest), then the hostile bench
    with Store(db) as store:
        ingest(store, [bench])
        with FakeOpenAI() as server:  # a stored probe run, judged by a model with a hostile name
            probes.run_probes(store, "single-v1", JudgeConfig(base_url=server.url, model=evil_model, timeout_s=10),
                              n_items=1, probes=["canaries"], api_key="sk-canary-0000", bench="evil_bench")
    return db


@pytest.fixture(scope="module")
def app_env(hostile_db):
    return {"JUDGELENS_DB": str(hostile_db)}


def _item_url(app_url: str, **params) -> str:
    return f"{app_url}/item_view?" + "&".join(f"{k}={quote(str(v), safe='')}" for k, v in params.items())


def _select(page, label: str):
    return fresh(page.get_by_role("combobox", name=label, exact=True))


def _tags(page):
    """The chosen options of the judge-columns multiselect (one element per tag; text = the option)."""
    return fresh(page.locator('[data-testid="stMultiSelect"] .react-aria-ComboBox [data-tag]'))


def test_deep_link_reopens_the_same_item_columns_and_diff(page, chromium, app_url):
    chosen = ["fastchat:gpt-4o", "fastchat:gpt-4.1-2025-04-14"]
    link = _item_url(app_url, bench="ja_mt_bench", q="31", turn="2", model="shisa-ai/shisa-v2-llama3.1-8b",
                     cols=",".join(chosen), a="rationale:fastchat:gpt-4o", b="prompt:fastchat:gpt-4o")
    open_app(page, link)
    expect(_select(page, "Question")).to_have_value(re.compile(r"^31 · math"))
    expect(_select(page, "Left (struck through where it differs)")).to_have_value("Rationale · fastchat:gpt-4o")
    expect(_select(page, "Right (highlighted where it differs)")).to_have_value("Judge prompt · fastchat:gpt-4o")
    expect(_tags(page)).to_have_text(chosen)  # the multiselect is drawn lazily: wait for its tags, do not read once
    expect(fresh(page.get_by_test_id("stRadio")).locator('input[type="radio"]').nth(1)).to_be_checked()  # turn 2

    # Next (keyboard: J) moves to question 32, turn 1, and the address bar follows.
    page.get_by_role("heading", name="Item view").click()  # focus the page, not a text field (no rerun)
    wait_for_rerun(page, lambda: page.keyboard.press("j"))
    expect(page).to_have_url(re.compile(r"[?&]q=32(&|$)"))
    expect(_select(page, "Question")).to_have_value(re.compile(r"^32 · math"))
    moved = page.url
    assert "turn=1" in moved

    # The moved URL, pasted into a brand-new browser context, opens that same item.
    tab = new_page(chromium)
    try:
        open_app(tab, moved)
        expect(_select(tab, "Question")).to_have_value(re.compile(r"^32 · math"))
        expect(_tags(tab)).to_have_text(chosen)
    finally:
        tab.context.close()


def test_hostile_text_is_shown_as_text_and_fetches_nothing(page, app_url, canary):
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    open_app(page, _item_url(app_url, bench="evil_bench", q="1", turn="1", model="evil"))
    open_expander(page, "Character diff")  # the diff (st.html) draws the hostile rationales too
    expect(fresh(page.locator(".jl-diff"))).to_be_visible()
    prompts = fresh(page.get_by_test_id("stExpander").locator("summary").filter(has_text="Rendered judge prompt"))
    for i in range(prompts.count()):  # lazy: each column's prompt is drawn once its expander is open
        wait_for_rerun(page, prompts.nth(i).click)
    expect(fresh(page.get_by_test_id("stText")).filter(has_text="prompt-script").first).to_be_attached()
    expect(fresh(page.get_by_test_id("stText")).filter(has_text="answer-script").first).to_be_visible()
    wait_for_app(page)  # every element drawn: an <img> would have issued its request by now

    body = fresh(page.get_by_test_id("stMain")).inner_text().replace("\u2060", "")  # md_escape's word joiner
    assert "<script>window.__xss='answer-script'</script>" in body       # the answer, literally
    assert "<script>window.__xss='rationale-script'</script>" in body    # a rationale, literally
    assert "<script>window.__xss='prompt-script'</script>" in body       # the judge prompt, literally
    assert f"![judge]({canary}/judge-name.png)" in body                  # the judge's name, literally
    assert page.evaluate("() => window.__xss === undefined")
    assert page.locator(f'img[src^="{canary}"]').count() == 0
    assert page.locator("a[href^='javascript']").count() == 0
    assert page.locator(f'a[href^="{canary}"]').count() == 0                # not even a clickable link
    app_port = urlsplit(app_url).port
    assert [u for u in requested if urlsplit(u).port != app_port] == [], "the page requested another server"
    assert _Canary.hits == [], f"the page fetched {_Canary.hits}"


def test_no_page_renders_a_name_as_markdown_or_html_or_reaches_the_network(page, app_url, canary):
    """Every page, opened as a first-time visitor sees it: the hostile names are picked by default (they sort
    first, and evil_bench is the first bench)."""
    local = {"127.0.0.1", "localhost"}
    outside = []

    def only_local(route):
        if urlsplit(route.request.url).hostname in local:
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    assert set(PAGES) >= SHOWS_NAMES | {"Import"}, f"app.py's pages as read by the test: {PAGES}"
    page.context.route("**/*", only_local)
    requested = []
    page.on("request", lambda r: requested.append(r.url))
    for title, slug in PAGES.items():
        open_app(page, f"{app_url}/{slug}")
        expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible()
        expect(page.get_by_test_id("stException")).to_have_count(0)
        if title in SHOWS_NAMES:
            page.wait_for_function(SHOWS_A_HOSTILE_NAME)  # so the test cannot pass by showing nothing
        made = page.evaluate(LINKS_TO, [canary, f"//{OUTSIDE}"])  # URL-encoded in a page link's query is fine
        assert made == [], f"{title}: a name became an image or a link: {made}"
        assert page.evaluate("() => window.__xss === undefined"), f"{title}: a name ran a script"
    assert outside == [], f"requests to hosts outside 127.0.0.1: {outside}"
    assert [u for u in requested if urlsplit(u).hostname not in local] == []
    assert _Canary.hits == [], f"the pages fetched {_Canary.hits}"
