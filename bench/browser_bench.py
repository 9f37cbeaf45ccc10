"""Benchmark: what the user waits for, page by page and click by click, in a real browser, on every kind of store.

Not a test. Builds (once; reused from ``bench/out/`` or ``--out``) synthetic stores (bench/stores.py: a DuckDB
file built with ``pages_bench.build``, FastChat-shaped: judges x models x 80 questions x 2 turns, rationale
and judge-prompt text of realistic length, an answer for every model; and the same store copied with
``lib.store.migrate`` into a DuckLake store with a SQLite catalog and one with a PostgreSQL catalog, whose
server the benchmark starts and stops itself). Starts the real app on each store at once
(``tests/browser_support.running_app``; a lake through ``JUDGELENS_STORE`` / ``JUDGELENS_DATA_PATH``, as in
the README's "Team store") and a Streamlit hello-world app next to them, and times in headless Chromium from
navigation (or click) until the script run it started has finished on the server and the page is idle and
drawn (no stale or loading element): the test suite's own waits (tests/browser_support.py ``open_app`` /
``wait_for_rerun``):

- the first load of every page (a fresh browser session: nothing in session state);
- every page's main interactions: filters, tabs, Next / Previous / Next biggest disagreement, picking
  another model or judge, chart options, paging, opening the report.

Floors, all measured in the same run, interleaved per round with the pages (every page on every store in
turn, the stores' order rotating per round): the hello-world page (a title, a line of text, a button) opened
in a new tab, its button clicked (a rerun), a move through its sidebar, a page with one small Plotly chart,
and per page the hello app drawing the same kinds and numbers of elements as that page (a census of its main
area and its sidebar's own content: 7 metrics, 3 select boxes, 20 columns over 6 column blocks, 11 help icons,
..., trivially filled), opened in a new tab, opened cold (a fresh browser) and reached through the hello app's
sidebar from a page drawing Overview's widgets, and that page rerun by a click (one more button: Streamlit's own
cost of rerunning the page's elements, shown beside the table, not judged). Each floor page's census is checked
against its page's (``check_floor``: ``widgets_mismatch`` in the JSON and a WARNING if they differ). Each row is
judged against one floor (the table's "floor" column; bench/browser_bench_table.py):

- a page's new tab against its same-widgets floor: what remains is the page's own content (texts, tables,
  figures, queries), the rest is Streamlit's cost of those elements in a new tab;
- a click, a choice or a tab (any step once a page is open) against the hello page's own click;
- a page opened from Overview's sidebar against the hello app's sidebar move into its same widgets
  ("same widgets, from the sidebar"; before: the move to a nearly empty page, "hello sidebar", still shown);
- the first open after a server start (cold) against its same widgets opened cold ("same widgets, cold";
  before: the cold hello page, without the page's widgets or Plotly, still shown), by issue 11's bound only
  (no run over floor + 1.5 s).

Goals (issue 26): median - floor <= +0.3 s at 100k judgments, <= +0.5 s at 1M; on a lake, no row more than
1.3x the file store's same row (the "lake / file" column). A row with a single run over floor + 1.5 s
(issue 11's bound) is flagged "max > +1.5".

The steps write nothing to a store (no verdict, re-judge, probe run or import is made; Workbench, Probes and
Import are only opened and browsed): each store's rows per table and write clock are compared before and
after the run (``stores.<size>.stores.<store>.unchanged`` in the JSON; a change is printed as a WARNING), so
the pooled stores are used in place, not copied.

    .venv/bin/python bench/browser_bench.py --quick                  # 100k only, 3 repeats, all three stores
    .venv/bin/python bench/browser_bench.py                          # 100k and 1M (wide shape), 5 repeats
    .venv/bin/python bench/browser_bench.py --sizes 1000000 --repeat 1 --out /work/benchstores   # the pooled 1M
    .venv/bin/python bench/browser_bench.py --stores file,lake-sqlite --only item_view   # some stores, one page
    .venv/bin/python bench/browser_bench.py --shapes templates       # few models x many re-judge templates
    .venv/bin/python bench/browser_bench.py --sizes 1000000 --build-only --out /work/benchstores   # build, time nothing
    .venv/bin/python bench/browser_bench.py --out /tmp/b --sizes 12000 --repeat 1   # elsewhere, small
    .venv/bin/python bench/browser_bench.py --out /tmp/b --sizes 12000 --repeat 1 --only overview import_data \
        --lake-only overview --floors-once             # the test: Import on the file store only, each floor once

Shapes: ``wide`` = 5 judges x (rows / 800) models (1,250 models at 1M); ``templates`` = 8 models judged by
(rows / 1,280) re-judge templates (harness ``judgelens``, judge names like re-judge labels).
Stores (gitignored): see bench/stores.py for their files; delete one to rebuild it.
Writes ``OUT/browser_bench_<UTC time>.json`` with every run's seconds (``runs_s``, keys
``size|store|page|what``; floors: store "hello", page "floor") and the table (``summary``), and prints the
table of bench/browser_bench_results.md; ``--table-from JSON`` prints it again from a results file:

    .venv/bin/python bench/browser_bench.py --table-from bench/out/browser_bench_20261125T190000Z.json
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import signal
import sys
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from browser_support import (launch_chromium, new_context, open_app, running_app, wait_for_app,  # noqa: E402
                             wait_for_rerun)
from browser_bench_table import (COLD, FLOOR_CHART, FLOOR_CLICK, FLOOR_OPEN, FLOOR_SELECT, FLOOR_SIDEBAR,  # noqa: E402
                                 FLOOR_WIDGETS, FLOOR_WIDGETS_COLD, FLOOR_WIDGETS_RERUN, FLOOR_WIDGETS_SIDEBAR,
                                 HELLO_STORE, LAKE_RATIO,
                                 markdown, print_table, summarise)
from stores import OUT, STORES, fingerprint, parse_stores, stores_for  # noqa: E402

from app_pages._widgets import ONE_CLICK_MOST, SUBSET_WAYS  # noqa: E402  (which choices are radios)
from lib.analysis.deltas import LEVEL_LABELS  # noqa: E402  (the Rows choices' labels)
from lib.errors import redact  # noqa: E402

HELLO = '''import streamlit as st


def hello():
    st.title("Hello")
    st.write("The floor: Streamlit's own cost of a page and a click on this machine, right now.")
    st.button("Click me")


def other():
    st.title("Another page")
    st.write("Reached from the sidebar.")


def pick():
    st.title("Pick one")
    st.selectbox("Model", [f"model-{i}" for i in range(int(st.query_params.get("n", 100)))], key="pick")


def chart():
    import plotly.express as px

    st.title("One chart")
    st.plotly_chart(px.bar(x=[1, 2, 3], y=[3, 1, 2]))


def small_chart(key, tip):
    import plotly.express as px

    st.plotly_chart(px.bar(x=[1, 2, 3], y=[3, 1, 2]), key=key)


def heading(key, tip):
    if key.endswith("_0"):  # a page's first heading is its title
        st.title("A title", help=tip)
    else:
        st.subheader("A heading", help=tip)


TABLE = {"model": ["a", "b", "c"], "score": [7.5, 6.0, 8.25]}
DRAW = {  # one element of each kind a census can name (bench/browser_bench.py CENSUS), trivially filled
    "stHeading": heading,
    "stMarkdown": lambda k, h: st.markdown("Some **bold** text."),
    "stText": lambda k, h: st.text("Some plain text."),
    "stMetric": lambda k, h: st.metric("A number", "1,000", help=h),
    "stAlert": lambda k, h: st.info("A note."),
    "stSelectbox": lambda k, h: st.selectbox("Pick one", ["a", "b"], key=k, help=h),
    "stMultiSelect": lambda k, h: st.multiselect("Pick some", ["a", "b", "c"], key=k, help=h),
    "stNumberInput": lambda k, h: st.number_input("A number", 1, 10, 5, key=k, help=h),
    "stTextInput": lambda k, h: st.text_input("Some text", key=k, help=h),
    "stTextArea": lambda k, h: st.text_area("Some text", key=k, help=h),
    "stRadio": lambda k, h: st.radio("One of", [1, 2], horizontal=True, key=k, help=h),
    "stCheckbox": lambda k, h: st.checkbox("Yes or no", key=k, help=h),
    "stButtonGroup": lambda k, h: st.segmented_control("One of", ["a", "b"], key=k, help=h),
    "stSlider": lambda k, h: st.slider("A value", 0, 10, 5, key=k, help=h),
    "stButton": lambda k, h: st.button("A button", key=k),
    "stDownloadButton": lambda k, h: st.download_button("Download", "a,b", "t.csv", on_click="ignore", key=k),
    "stPageLink": lambda k, h: st.page_link(PAGES[1], label="Another page"),
    "stFileUploader": lambda k, h: st.file_uploader("Files", key=k, help=h),
    "stExpander": lambda k, h: st.expander("Closed"),
    "stTabs": lambda k, h: st.tabs(["One", "Two"]),
    "stHorizontalBlock": lambda k, h: st.columns(2),
    "stProgress": lambda k, h: st.progress(0.5),
    "stCode": lambda k, h: st.code("x = 1", language=None),
    "stHtml": lambda k, h: st.html("<b>bold</b>"),
    "stPlotlyChart": small_chart,
    "stDataFrame": lambda k, h: st.dataframe(TABLE, hide_index=True, key=k),
    "stTable": lambda k, h: st.table(TABLE),
}
# Parts a census counts that are not elements of their own: the columns of all column blocks, the tabs of all tab
# groups, the help icons (widgets with ``help=``); spread over the blocks, groups and labelled widgets drawn.
PARTS = {"stColumn": "stHorizontalBlock", "stTab": "stTabs", "stTooltipIcon": None}
HELPED = ("stHeading", "stMetric", "stSelectbox", "stMultiSelect", "stNumberInput", "stTextInput", "stTextArea",
          "stRadio", "stCheckbox", "stButtonGroup", "stSlider", "stFileUploader")


def draw(counts, where=""):
    """Draw ``counts`` (kind -> number) in the current container, the parts spread over their elements (keys
    prefixed ``where``: the sidebar's widgets are other widgets than the main area's)."""
    tips = counts.pop("stTooltipIcon", 0)
    spread = {}
    for part, owner in PARTS.items():
        if owner and counts.get(owner):
            total, n = counts.pop(part, 2 * counts[owner]), counts[owner]
            spread[owner] = [total // n + (i < total % n) for i in range(n)]
        counts.pop(part, None)
    for kind, count in counts.items():
        for i in range(count):
            tip = "A tip." if tips and kind in HELPED else None
            tips -= tip is not None
            if kind == "stHorizontalBlock":
                st.columns(max(1, spread[kind][i]))
            elif kind == "stTabs":
                st.tabs([f"Tab {j + 1}" for j in range(max(1, spread[kind][i]))])
            else:
                DRAW[kind](f"{where}{kind}_{i}", tip)


def widgets():
    """Streamlit's own cost of a page's elements: the kinds and numbers a page drew (``?w=stMetric:7,...``, the
    census the benchmark took of it; ``sb.`` kinds in the sidebar), each with trivial content. Reached from
    the sidebar, the census is the one the Start page was given (``start?w=...``). ``&rerun=1``: one more button
    first, whose click reruns the page (the page's own rerun floor)."""
    if st.query_params.get("rerun"):
        st.button("Rerun the page")
    draw_census(st.query_params.get("w") or st.session_state.get("same_widgets", ""))


def start():
    """Where the same-widgets floor's sidebar move starts, as a page opened from Overview's sidebar does: Overview's
    widgets (``?s=``; its Plotly chart loaded in the tab), and the census Widgets will draw (``?w=``)."""
    st.session_state["same_widgets"] = st.query_params.get("w", "")
    draw_census(st.query_params.get("s", ""))


def draw_census(census):
    main, side = {}, {}
    for part in filter(None, census.split(",")):
        kind, _, count = part.partition(":")
        where, kind = (side, kind[3:]) if kind.startswith("sb.") else (main, kind)
        where[kind] = int(count or 1)
    draw(main)
    with st.sidebar:
        draw(side, "sb.")


PAGES = [st.Page(hello, title="Hello", default=True), st.Page(other, title="Another page", url_path="other"),
         st.Page(chart, title="One chart", url_path="chart"),
         st.Page(pick, title="Pick one", url_path="pick"), st.Page(widgets, title="Widgets", url_path="widgets"),
         st.Page(start, title="Start", url_path="start")]
st.navigation(PAGES).run()
'''

# What a page drew, by kind: the test ids of the elements in the main area that the hello app's DRAW can draw and
# of the parts it spreads over them (PARTS); in the sidebar's own content (not its page list) prefixed "sb.".
CENSUS = """() => {
  const kinds = %s, seen = {};
  for (const [root, prefix] of [['stMain', ''], ['stSidebarUserContent', 'sb.']]) {
    for (const el of document.querySelectorAll('[data-testid="' + root + '"] [data-testid]')) {
      const id = el.getAttribute('data-testid');
      if (kinds.includes(id) && !el.closest('[data-stale="true"]')) seen[prefix + id] = (seen[prefix + id] || 0) + 1;
    }
  }
  return Object.entries(seen).sort().map(([k, n]) => k + ':' + n).join(',');
}"""
CENSUS_KINDS = re.findall(r'^    "(st\w+)": ', HELLO, re.MULTILINE) + ["stColumn", "stTab", "stTooltipIcon"]

ERRORS = '[data-testid="stException"]'
# Found only in rationales ('…述べます。' + an md5), in 1 of 256 of them: ~390 hits at 100k, ~3,900 at 1M.
RARE = "ます。ab"
ACTION_TIMEOUT_MS = 20_000


# --------------------------------------------------------------------------------------------------
# Driving the page

def selectbox(page, label: str, option: str) -> None:
    """Open the select box labelled ``label``, type ``option`` and pick it."""
    box = page.get_by_test_id("stSelectbox").filter(has=page.get_by_text(label, exact=True)).first
    box.locator("input").click()
    box.locator("input").fill(option)
    page.get_by_role("option", name=option, exact=True).first.click()


def radio(page, label: str, option: str) -> None:
    group = page.get_by_test_id("stRadio").filter(has=page.get_by_text(label, exact=True)).first
    group.get_by_text(option, exact=True).click()


def segmented(page, label: str, option: str) -> None:
    group = page.get_by_test_id("stButtonGroup").filter(has=page.get_by_text(label, exact=True)).first
    group.get_by_role("radio", name=option, exact=True).click()


def button(page, name: str) -> None:
    """Click the button whose text (after its icon's ligature, if any) is ``name``."""
    pattern = re.compile(rf"(^|[a-z_]\s*){re.escape(name)}(\s*[A-Z])?$")  # icon ligature, shortcut key
    page.get_by_role("button").filter(has_text=pattern).first.click()


def text_input(page, label: str, value: str, where: str = "stMain") -> None:
    """Type ``value`` into the text field labelled ``label`` and press Enter (Streamlit commits on Enter)."""
    box = page.get_by_test_id(where).get_by_test_id("stTextInput").filter(
        has=page.get_by_text(label, exact=True)).first.locator("input")
    box.fill(value)
    box.press("Enter")


def number_input(page, label: str, value: str) -> None:
    box = page.get_by_test_id("stNumberInput").filter(has=page.get_by_text(label, exact=True)).first.locator("input")
    box.fill(value)
    box.press("Enter")


def step_up(page, label_start: str) -> None:
    """The + button of the number field whose label starts with ``label_start`` (e.g. "Page (of 12)")."""
    field = page.get_by_test_id("stNumberInput").filter(has=page.get_by_text(re.compile("^" + re.escape(label_start))))
    field.first.get_by_test_id("stNumberInputStepUp").click()


def tab(page, name: str) -> None:
    page.get_by_role("tab", name=name, exact=True).first.click()


@dataclass
class Step:
    name: str
    act: Callable  # (page) -> None: the click or choice
    download: bool = False  # the step downloads a file instead of rerunning the script
    rerun: bool = True  # False: the browser alone reacts (e.g. a tab): wait only until nothing is loading
    select: bool = False  # a pick in a select box: its own floor is measured beside the click's (FLOOR_SELECT)


def pick_step(name: str, label: str, option: str) -> Step:
    """A step that picks ``option`` in the select box labelled ``label``."""
    return Step(name, lambda p: selectbox(p, label, option), select=True)


def choice_step(name: str, label: str, option: str, options: int) -> Step:
    """A step that chooses ``option`` of ``options`` where the page shows ``one_of``'s widget: a row of radio
    buttons (one click) for a few options, a select box for more (``ONE_CLICK_MOST``). A wrong count fails the
    step loudly (the widget it looks for is not there), never times the other widget."""
    if options <= ONE_CLICK_MOST:
        return Step(name, lambda p: radio(p, label, option))
    return pick_step(name, label, option)


@dataclass
class Scenario:
    page: str  # URL path ("" = the default page)
    title: str  # also the sidebar link's text
    steps: list[Step] = field(default_factory=list)
    charts: bool = False  # shows a Plotly chart on first load: a new tab pays Plotly's own load


def scenarios(info: dict) -> list[Scenario]:
    models, judges = info["models"], info["judges"]
    other_model = f"model-{min(7, models - 1)}"
    third_model = f"model-{min(11, models - 1)}"
    judge = (lambda j: f"gpt-4o-mini + single-v1-edit@v{j + 1}") if info.get("shape") == "templates" \
        else (lambda j: f"judge-{j}")
    return [
        Scenario("", "Overview", charts=True, steps=[
            # "mean over judges", the judges of bench_x and the Swallow run's judge on the second bench (bench_y)
            choice_step("sort the leaderboard by another judge", "Rank models by", judge(1), 2 + judges),
            Step("next page of the leaderboard", lambda p: button(p, "Next page")),
            choice_step("chart: top models", "Which models", "top", len(SUBSET_WAYS)),
        ]),
        Scenario("agreement", "Judge agreement", charts=True, steps=[
            pick_step("filter to one model", "Model", other_model),
            Step("heatmap of pearson", lambda p: segmented(p, "Heatmap of", "pearson")),
            Step("tab: largest disagreements", lambda p: tab(p, "Largest disagreements")),  # lazy tabs: a rerun
            Step("tab: pairwise verdicts", lambda p: tab(p, "Pairwise verdicts")),  # lazy tabs: a rerun
            Step("tab: parse failures", lambda p: tab(p, "Parse failures")),  # lazy tabs: a rerun
            Step("open the report", lambda p: button(p, "Report (self-contained HTML)"), download=True),
        ]),
        Scenario("item_view", "Item view", [
            Step("Next", lambda p: button(p, "Next")),
            Step("Next", lambda p: button(p, "Next")),
            Step("Previous", lambda p: button(p, "Previous")),
            Step("Next biggest disagreement", lambda p: button(p, "Next biggest disagreement")),
            pick_step("pick another model", "Model", other_model),
            Step("turn 2", lambda p: radio(p, "Turn", "2")),
            Step(f"search box: {RARE!r} (opens Search)", lambda p: text_input(
                p, "Search questions, answers, rationales, prompts and references", RARE)),
        ]),
        Scenario("search", "Search", [
            Step(f"find {RARE!r} (rationales)", lambda p: text_input(p, "Find", RARE)),
            Step("next page of results", lambda p: step_up(p, "Page (of")),
            Step("score at least 9", lambda p: number_input(p, "Score at least", "9")),
        ]),
        Scenario("review", "Review", [
            Step("set my name (the queue appears)", lambda p: text_input(p, "Your name (for your verdicts)", "bench",
                                                                        where="stSidebar")),
            Step("tab: all verdicts", lambda p: tab(p, "All verdicts")),  # lazy tabs: a rerun
            Step("tab: my review queue", lambda p: tab(p, "My review queue")),
            Step("open the next undecided item", lambda p: p.get_by_text("Open the first undecided item").click()),
        ]),
        Scenario("distributions", "Distributions", charts=True, steps=[
            Step("count single judgments", lambda p: radio(p, "Count", "single judgments (each sample)")),
            choice_step("colour by turn", "Colour by", "turn", 5),
            choice_step("panels by category", "Split into panels by", "category", 5),
            Step("radar: one line per judge", lambda p: radio(p, "Radar: one line per", "judge")),
            choice_step("chart: top 20 models", "Which models on bench_x", "top", len(SUBSET_WAYS)),
            Step("open length bias", lambda p: p.get_by_text("Does a judge score longer answers higher?").click()),
            choice_step("length bias of another judge", "Length bias of judge", judge(1), judges),
            Step("open the JA overall table", lambda p: p.get_by_text("Table: T1, T2, overall", exact=False).click()),
        ]),
        Scenario("compare", "Compare", charts=True, steps=[
            pick_step("pick another model", "Answers of", other_model),
            Step("rows: all", lambda p: segmented(p, "Rows", LEVEL_LABELS["all"])),
            Step("two models under one judge", lambda p: radio(p, "Compare", "two models under one judge")),
            pick_step("pick another model B", "Model B", third_model),
            # the stores' second bench: model-7 under a Swallow-shaped harness (linked questions, 5 samples)
            Step("view: one model under two harnesses",
                 lambda p: segmented(p, "View", "one model under two harnesses (linked questions)")),
            Step("harness view, rows: all", lambda p: segmented(p, "Rows", LEVEL_LABELS["all"])),
            pick_step("harness view, run A: another judge", "Run A", f"fastchat · bench_x · {judge(1)} · model-7"),
        ]),
        Scenario("workbench", "Workbench", [
            pick_step("pick another model", "Model", other_model),
            Step("turn 2", lambda p: radio(p, "Turn", "2")),
        ]),
        Scenario("probes", "Probes", []),
        Scenario("import_data", "Import", [
            Step("tab: sources", lambda p: tab(p, "Sources")),  # lazy tabs: a rerun
        ]),
    ]


def hello_scenario() -> Scenario:
    return Scenario("", "Hello", [Step("click", lambda p: button(p, "Click me"))])


def bench_context(browser):
    """One browser context for a round of tabs (static files cached, as for a returning user), with the test
    suite's run watcher in every tab (tests/browser_support.py: the benchmark waits exactly as the tests do)."""
    return new_context(browser, ACTION_TIMEOUT_MS, accept_downloads=True)  # finding and clicking a widget


def open_page(ctx, base: str, scen: Scenario, timeout_ms: float):
    """A new tab (a new Streamlit session: nothing in session state), navigate, wait until its first run has
    finished and the page is idle. -> (page, s)."""
    page = ctx.new_page()
    t0 = time.perf_counter()
    open_app(page, f"{base}/{scen.page}", timeout_ms)
    return page, time.perf_counter() - t0


def do_step(page, step: Step, timeout_ms: float) -> float:
    if step.download:
        t0 = time.perf_counter()
        with page.expect_download(timeout=timeout_ms) as dl:
            step.act(page)
        dl.value.path()  # wait until the file is complete
        return time.perf_counter() - t0
    t0 = time.perf_counter()
    if step.rerun:
        wait_for_rerun(page, lambda: step.act(page), timeout_ms)
    else:
        step.act(page)
        wait_for_app(page, timeout_ms)
    return time.perf_counter() - t0


def errors_on(page) -> list[str]:
    return [e.inner_text()[:300] for e in page.locator(ERRORS).all()]


# --------------------------------------------------------------------------------------------------
# One run

def sidebar(page, title: str, timeout_ms: float) -> float:
    """Go to another page through the sidebar (same tab, same session) and wait until idle."""
    link = page.get_by_test_id("stSidebarNav").get_by_text(title, exact=True).first
    t0 = time.perf_counter()
    wait_for_rerun(page, link.click, timeout_ms)
    return time.perf_counter() - t0


def census(page) -> str:
    """The kinds and numbers of elements ``page`` shows, as the hello app's widgets page reads them."""
    return page.evaluate(CENSUS % json.dumps(CENSUS_KINDS))


def record(results: dict, key: str, fn) -> object:
    """Append fn()'s seconds (None if it failed) under key; return what fn returned besides the time."""
    try:
        out = fn()
    except Exception as exc:
        print(f"  {key}: failed: {str(exc).splitlines()[0]}", flush=True)
        results.setdefault(key, []).append(None)
        return None
    value, extra = out if isinstance(out, tuple) else (out, None)
    results.setdefault(key, []).append(value)
    return extra if extra is not None else True


def check_floor(info: dict, label: str, title: str, how: str, floor_page, results: dict) -> None:
    """The same-widgets floor page ``floor_page`` (reached ``how``) must draw what ``title`` drew: its census,
    kinds and numbers, equals the page's (``info["widgets"]``). A difference is kept in
    ``info["widgets_mismatch"][title][how]`` and printed; an error on the floor page is one of the run's errors."""
    if errs := errors_on(floor_page):
        results.setdefault(f"{label}|errors", []).append(f"widgets of {title} ({how}): {errs}")
    drawn, wanted = census(floor_page), info["widgets"][title]
    info.setdefault("widgets_floor", {}).setdefault(title, {})[how] = drawn
    if drawn != wanted and how not in info.get("widgets_mismatch", {}).get(title, {}):
        info.setdefault("widgets_mismatch", {}).setdefault(title, {})[how] = drawn
        print(f"  WARNING: the same-widgets floor of {title} ({how}) drew {drawn}, the page {wanted}", flush=True)


def run_size(browser, label: str, apps: dict[str, str], hello_url: str, info: dict, repeat: int,
             only: set[str] | None, timeout_ms: float, results: dict, lake_only: set[str] | None = None,
             floors_once: bool = False) -> None:
    """Time every page on every store in ``apps`` (store kind -> the URL of an app server on it).

    First every page once in a fresh browser (cold HTTP cache) right after the servers started the way
    scripts/run-app.sh starts them (its start-up opens every page once, warming imports and query caches; the
    seconds that took are each store's ``server_start_s``): the worst case, reported apart, beside the cold hello
    page and the cold same-widgets page (each in a fresh browser too). Then ``repeat`` rounds in one browser
    context (static files cached, as for any returning user). Per page and round: the floors (hello new tab, its
    click, its sidebar, the one-chart page, the same widgets as the page in a new tab and through the hello
    app's sidebar), then on each store in turn (the order rotates every round, so no store always follows the
    floors) the page opened in a new tab (a new session), and the page opened from the sidebar of a tab that
    opened on Overview (how a user moves around), followed by its steps. Result keys: ``size|store|page|what``
    (floors: store "hello", page "floor"). Every same-widgets floor page's census is compared with its page's
    (``check_floor``). ``lake_only``: the pages the lakes run (None: every page the file store runs); a page
    skipped on a store has no row there, and its floors are measured beside the stores that run it.
    ``floors_once`` (the suite's test): each floor is measured once per size, not beside every store and page: the
    cold hello page beside the first cold open, a page's cold same-widgets floor beside its first store, and the
    floors no page's widgets change (hello new tab, click, sidebar, select box, one chart) in the first page of
    each round; every row is still produced and judged against them."""
    scens = [s for s in scenarios(info) if not only or (s.page or "overview") in only]

    def runs_on(kind: str, scen: Scenario) -> bool:
        return kind == "file" or lake_only is None or (scen.page or "overview") in lake_only
    # which timed steps pick in a select box, and whether it is their tab's first pick (each page's steps run in
    # one tab, opened on Overview or in a new tab, where no select box was opened before them)
    info["select_steps"] = {}
    for scen in scens:
        picks = [f"{i + 1}. {step.name}" for i, step in enumerate(scen.steps) if step.select]
        info["select_steps"].update({f"{scen.title}|{what}": "first" if j == 0 else "again"
                                     for j, what in enumerate(picks)})
    select = Scenario(f"pick?n={info['models']}", "Pick one")  # as many options as the stores have models
    first_model, other_model = "model-0", f"model-{min(7, info['models'] - 1)}"
    kinds = list(apps)
    tm = timeout_ms
    floor = f"{label}|{HELLO_STORE}|floor"

    def tab_open(ctx, base, scen):
        page, s = open_page(ctx, base, scen, tm)
        return s, page

    def same_widgets(title):  # the hello app's widgets page drawing what ``title`` drew (its census)
        return Scenario(f"widgets?w={info['widgets'][title]}", "Widgets")

    # The hello server imports Plotly on its first chart, as the app's server did before it listened (serve.py)
    ctx = bench_context(browser)
    open_page(ctx, hello_url, Scenario("chart", "One chart"), tm)[0].close()
    ctx.close()
    for n, scen in enumerate(scens):
        for i, kind in enumerate([k for k in kinds if runs_on(k, scen)]):
            ctx = bench_context(browser)
            if not floors_once or n == i == 0:
                record(results, f"{floor}|{FLOOR_OPEN}{COLD}", lambda: tab_open(ctx, hello_url, hello_scenario()))
            page = record(results, f"{label}|{kind}|{scen.title}|open in a new tab{COLD}",
                          lambda: tab_open(ctx, apps[kind], scen))
            if page not in (None, True):  # what the page draws, for its same-widgets floors
                info.setdefault("widgets", {}).setdefault(scen.title, census(page))
                info.setdefault("widgets_by_store", {}).setdefault(kind, {})[scen.title] = census(page)
            ctx.close()
            if scen.title not in info.get("widgets", {}) or (floors_once and i > 0):
                continue
            # Its cold floor, as cold: a fresh browser whose first tab is open on another server of this site
            # (the app's health check: nothing of Streamlit's), as the cold page opened beside a cold hello tab.
            ctx = bench_context(browser)
            ctx.new_page().goto(f"{apps[kind]}/_stcore/health")
            wp = record(results, f"{floor}|{FLOOR_WIDGETS_COLD.format(scen.title)}",
                        lambda: tab_open(ctx, hello_url, same_widgets(scen.title)))
            if wp not in (None, True):
                check_floor(info, label, scen.title, "new tab, cold", wp, results)
            ctx.close()
    if "Overview" not in info.get("widgets", {}):  # not timed (--only), but the sidebar moves start from it
        ctx = bench_context(browser)
        page = record(results, f"{label}|{kinds[0]}|Overview|(untimed: its census)",
                      lambda: tab_open(ctx, apps[kinds[0]], scenarios(info)[0]))
        if page not in (None, True):
            info.setdefault("widgets", {})["Overview"] = census(page)
        ctx.close()
    ctx = bench_context(browser)
    chart = Scenario("chart", "One chart")
    for r in range(repeat):
        order = kinds[r % len(kinds):] + kinds[:r % len(kinds)]
        for n, scen in enumerate(scens):
            hp = True if floors_once and n > 0 else \
                record(results, f"{floor}|{FLOOR_OPEN}", lambda: tab_open(ctx, hello_url, hello_scenario()))
            if hp not in (None, True):
                record(results, f"{floor}|{FLOOR_CLICK}", lambda: do_step(hp, hello_scenario().steps[0], tm))
                record(results, f"{floor}|{FLOOR_SIDEBAR}", lambda: sidebar(hp, "Another page", tm))
                hp.close()
            # A pick in a select box has a floor of its own, shown beside the click's (browser_bench_table's
            # FLOOR_SELECT): the tab's first pick (the widget's code runs for the first time) and one after it
            if not floors_once or n == 0:
                sel = record(results, f"{floor}|(untimed: the select box's page)",
                             lambda: tab_open(ctx, hello_url, select))
                if sel not in (None, True):
                    for which, option in (("first", other_model), ("again", first_model)):
                        record(results, f"{floor}|{FLOOR_SELECT[which]}",
                               lambda: do_step(sel, pick_step("pick", "Model", option), tm))
                    sel.close()
                cp = record(results, f"{floor}|{FLOOR_CHART}", lambda: tab_open(ctx, hello_url, chart))
                if cp not in (None, True):
                    cp.close()
            # Like every floor, with no other tab open: a tab still open keeps the code its elements loaded
            # compiled in the browser's memory, and a new tab drawing the same elements then opens 0.1-0.15 s faster.
            if scen.title in info.get("widgets", {}):
                wp = record(results, f"{floor}|{FLOOR_WIDGETS.format(scen.title)}",
                            lambda: tab_open(ctx, hello_url, same_widgets(scen.title)))
                if wp not in (None, True):
                    check_floor(info, label, scen.title, "new tab", wp, results)
                    wp.close()
                # A rerun of those widgets (one more button, clicked): what a click costs Streamlit on this page,
                # shown beside the hello click the steps stay judged against (browser_bench_table's rerun_lines)
                rp = record(results, f"{floor}|(untimed: the same widgets as {scen.title}, with a rerun button)",
                            lambda: tab_open(ctx, hello_url, Scenario(f"{same_widgets(scen.title).page}&rerun=1",
                                                                      "Widgets")))
                if rp not in (None, True):
                    record(results, f"{floor}|{FLOOR_WIDGETS_RERUN.format(scen.title)}",
                           lambda: do_step(rp, Step("rerun", lambda p: button(p, "Rerun the page")), tm))
                    rp.close()
                if scen.page:  # its page is also opened from Overview's sidebar: from Overview's same widgets, then
                    start = f"start?s={info['widgets'].get('Overview', '')}&w={info['widgets'][scen.title]}"
                    sp = record(results, f"{floor}|(untimed: Overview's widgets, to start from, for {scen.title})",
                                lambda: tab_open(ctx, hello_url, Scenario(start, "Start")))
                    if sp not in (None, True):
                        if record(results, f"{floor}|{FLOOR_WIDGETS_SIDEBAR.format(scen.title)}",
                                  lambda: sidebar(sp, "Widgets", tm)) is not None:
                            check_floor(info, label, scen.title, "from the sidebar", sp, results)
                        sp.close()
            for kind in [k for k in order if runs_on(k, scen)]:
                run_page(ctx, label, kind, apps[kind], scen, info, tm, results)
        print(f"  {label}: repeat {r + 1}/{repeat} done", flush=True)
    ctx.close()


def run_page(ctx, label: str, kind: str, app_url: str, scen: Scenario, info: dict, tm: float, results: dict) -> None:
    """One page on one store: a new tab, then (but Overview) from Overview's sidebar, then its steps."""
    at = f"{label}|{kind}|{scen.title}"

    def tab_open(sc):
        page, s = open_page(ctx, app_url, sc, tm)
        return s, page

    what = "open in a new tab" + (" (Plotly page)" if scen.charts else "")
    page = record(results, f"{at}|{what}", lambda: tab_open(scen))
    if page in (None, True):
        return
    if errs := errors_on(page):
        results.setdefault(f"{label}|errors", []).append(f"{kind} {scen.title}: {errs}")
    if scen.page:  # every page but Overview: also reached from Overview's sidebar, then the steps
        page.close()
        page = record(results, f"{at}|(untimed: Overview, to start from)", lambda: tab_open(scenarios(info)[0]))
        if page in (None, True):
            return
        if record(results, f"{at}|open from the sidebar", lambda: sidebar(page, scen.title, tm)) is None:
            page.close()
            return
    for i, step in enumerate(scen.steps):
        if record(results, f"{at}|{i + 1}. {step.name}", lambda: do_step(page, step, tm)) is None:
            break
    if errs := errors_on(page):
        results.setdefault(f"{label}|errors", []).append(f"{kind} {scen.title} after steps: {errs}")
    page.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000],
                        help="judgment counts (default: 100000 1000000)")
    parser.add_argument("--shapes", nargs="+", default=["wide"], choices=["wide", "templates"])
    parser.add_argument("--stores", type=parse_stores, default=list(STORES),
                        help="which stores, comma-separated (default file,lake-sqlite,lake-pg)")
    parser.add_argument("--repeat", type=int, default=5, help="runs of every page and step (default 5)")
    parser.add_argument("--quick", action="store_true", help="100k only, 3 repeats")
    parser.add_argument("--only", nargs="+", help="page paths to run (overview, agreement, item_view, …)")
    parser.add_argument("--lake-only", nargs="+", metavar="PAGE",
                        help="page paths the DuckLake stores run, of those run on the file store (default: all of "
                             "them; the test runs Overview and Import on the file store, Overview alone on the lakes)")
    parser.add_argument("--floors-once", action="store_true",
                        help="measure each floor once per size, not beside every store and page (the test: every row "
                             "is still produced and judged; the issue's table uses the default)")
    parser.add_argument("--timeout", type=float, default=180, help="seconds before a step counts as failed")
    parser.add_argument("--profile", type=Path, help="JUDGELENS_PROFILE for the app: one cProfile file per script run")
    parser.add_argument("--build-only", action="store_true", help="build (or check) the stores, time nothing")
    parser.add_argument("--out", type=Path, default=OUT,
                        help="folder for the stores, the hello-world script and the results (default bench/out)")
    parser.add_argument("--json", type=Path, help="where to write the results (default OUT/browser_bench_<time>.json)")
    parser.add_argument("--table-from", type=Path, metavar="JSON",
                        help="time nothing: print the table of bench/browser_bench_results.md from a run's results")
    args = parser.parse_args()
    if args.table_from:
        print(markdown(json.loads(args.table_from.read_text())))
        return
    if args.quick:
        args.sizes, args.repeat = [100_000], 3
    # Terminated (a test's timeout, Ctrl-C's cousin): unwind, so the app servers and PostgreSQL are stopped too
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    out_dir = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.build_only:
        for shape in args.shapes:
            for rows in args.sizes:
                with stores_for(shape, rows, args.stores, out_dir):
                    pass
        return
    hello = out_dir / "hello_floor.py"
    hello.write_text(HELLO)
    results: dict = {}
    infos = {}
    goals = {}
    timeout_ms = args.timeout * 1000
    started = dt.datetime.now(dt.timezone.utc)
    interrupted = None
    try:
        measure(args, out_dir, hello, goals, infos, timeout_ms, results)
    except (KeyboardInterrupt, SystemExit) as exc:  # servers stopped; keep and show what was measured
        interrupted = f"interrupted ({type(exc).__name__}) after {sum(map(len, results.values()))} timings"
        print(f"\n{interrupted}: the table below is partial", flush=True)
    rows = summarise(results, goals)
    print_table(rows)
    errors = {k: v for k, v in results.items() if k.endswith("|errors")}
    for k, v in errors.items():
        print(f"\nERRORS ({k}):", *v, sep="\n  ")
    for label, info in infos.items():
        for kind, about in info.get("stores", {}).items():
            if not about.get("unchanged", True):
                print(f"\nWARNING: the run changed the {kind} store of {label} (rows per table, write clock: "
                      f"{about['changed']}): run it on a copy, or rebuild it", flush=True)
    for label, info in infos.items():
        for title, hows in info.get("widgets_mismatch", {}).items():
            print(f"\nWARNING ({label}): the same-widgets floor of {title} drew other widgets than the page "
                  f"({info['widgets'][title]}): {hows}", flush=True)
    out = args.json or out_dir / f"browser_bench_{started:%Y%m%dT%H%M%SZ}.json"
    result = {"started": started.isoformat(), "repeat": args.repeat, "interrupted": interrupted, "stores": infos,
              "goals_over_floor_s": goals, "lake_ratio_goal": LAKE_RATIO, "summary": rows, "runs_s": results}
    out.write_text(json.dumps(result, indent=1, default=str))
    print("\n" + markdown(result))  # the table of bench/browser_bench_results.md (also: --table-from JSON)
    print(f"\nwrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    if interrupted:
        sys.exit(1)


def measure(args, out_dir: Path, hello: Path, goals: dict, infos: dict, timeout_ms: float, results: dict) -> None:
    """Every size and shape asked for: the hello app, the stores (PostgreSQL started here), an app on each."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        try:
            with running_app(out_dir / "hello_floor.duckdb", script=hello) as hello_url:
                for shape in args.shapes:
                    for rows in args.sizes:
                        label = f"{shape} {rows // 1000}k"
                        goals[label] = 0.3 if rows <= 100_000 else 0.5
                        with stores_for(shape, rows, args.stores, out_dir) as (refs, info):
                            infos[label] = info
                            print(f"{label}: {info['rows']:,} judgments, {info['judges']} judges x "
                                  f"{info['models']:,} models, on {', '.join(refs)}", flush=True)
                            run_stores(browser, label, refs, hello_url, info, args, out_dir, timeout_ms, results)
        finally:
            browser.close()


def run_stores(browser, label: str, refs: dict, hello_url: str, info: dict, args, out_dir: Path, timeout_ms: float,
               results: dict) -> None:
    """An app server on each store at once (as scripts/run-app.sh starts it, pages warmed), then ``run_size``.

    The steps write nothing to a store (no verdict, re-judge, probe run or import is made): each store's rows
    per table and write clock are taken before the servers start and after they stop (``unchanged``), so the
    pooled stores can be reused as they are; a change is reported."""
    env = {"JUDGELENS_PROFILE": str(args.profile)} if args.profile else {}
    about = info.setdefault("stores", {})
    with ExitStack() as stack:
        apps = {}
        for kind, ref in refs.items():
            about[kind] = {"target": redact(ref.target), "data_path": ref.data_path, **ref.info,
                           "before": fingerprint(ref)}
            # A lake's app is also given a DuckDB file that must stay unused: JUDGELENS_STORE must win
            db = ref.target if kind == "file" else out_dir / f"must_stay_unused_{kind}.duckdb"
            t_start = time.perf_counter()
            # --only: the timed pages are warmed (and Overview, where the sidebar moves start), not the others
            pages = args.lake_only if kind != "file" and args.lake_only else args.only
            warm = sorted({"overview", *pages}) if pages else True
            apps[kind] = stack.enter_context(running_app(db, env={**env, **ref.app_env()}, timeout=900, warm=warm))
            about[kind]["server_start_s"] = round(time.perf_counter() - t_start, 1)
            print(f"{label} {kind}: server started and warmed in {about[kind]['server_start_s']} s", flush=True)
        run_size(browser, label, apps, hello_url, info, args.repeat, set(args.only) if args.only else None,
                 timeout_ms, results, set(args.lake_only) if args.lake_only else None, args.floors_once)
    for kind, ref in refs.items():
        unused = out_dir / f"must_stay_unused_{kind}.duckdb"
        if kind != "file" and unused.exists():
            raise SystemExit(f"the app on {kind} opened {unused}: it did not use the lake store")
        before, after = about[kind].pop("before"), fingerprint(ref)
        about[kind]["unchanged"] = before == after
        if before != after:  # what changed, for the warning
            about[kind]["changed"] = {k: [before["rows"].get(k), after["rows"].get(k)] for k in
                                      sorted(set(before["rows"]) | set(after["rows"]))
                                      if before["rows"].get(k) != after["rows"].get(k)}
            about[kind]["changed"]["write_clock"] = [before["write_clock"], after["write_clock"]]


if __name__ == "__main__":
    main()
