"""Find and decide in real Chromium, on the bundled sample: search rationales for a Japanese phrase with a score
filter, open a hit, record verdicts on five items with the keyboard, and find human:<name> among the judges of the agreement
table.

The grid is a canvas (glide-data-grid) with an accessible ``<table role="grid">`` of its rendered cells; a row is
selected by clicking its row-marker box, as in test_browser_flow.py.
"""
from __future__ import annotations

import re
import time

import pandas as pd
import pytest

from browser_support import TIMEOUT_MS, wait_for_app, wait_for_rerun

pytestmark = pytest.mark.browser
NAME = "tester"


def grid_cells(page) -> list[str]:
    cells = []
    for frame in page.locator('[data-testid="stDataFrame"]').filter(visible=True).all():
        cells += frame.locator("table td").all_text_contents()
    return cells


def wait_for_cells(page, check, what: str) -> list[str]:
    """The visible tables' cells once ``check(cells)`` holds (a grid fills in after the run that drew it)."""
    deadline = time.monotonic() + TIMEOUT_MS / 1000
    while True:
        cells = grid_cells(page)
        if check(cells):
            return cells
        assert time.monotonic() < deadline, f"{what}: {cells[:40]}"
        page.wait_for_timeout(100)


def test_search_open_a_hit_decide_with_the_keyboard_and_see_the_human_judge(page, app_url):
    page.set_viewport_size({"width": 1440, "height": 1400})
    # The rationale filter and score cap come from the address (a search is a deep link); the phrase is typed.
    page.goto(f"{app_url}/search?in=rationale&smax=3")
    wait_for_app(page)
    box = page.get_by_role("textbox", name="Find")
    box.fill("日本語")
    wait_for_rerun(page, lambda: box.press("Enter"))
    page.wait_for_function("() => location.search.includes('q=')")
    wait_for_app(page)
    heading = page.get_by_role("heading", name=re.compile(r"[\d,]+ matching record"))
    heading.wait_for()
    more, total = re.match(r"(More than )?([\d,]+) matching", heading.inner_text()).groups()  # > a page: uncounted
    total = int(total.replace(",", ""))
    assert total > 0
    grid = page.locator('[data-testid="stDataFrame"]').filter(visible=True).first
    grid.wait_for()
    wait_for_cells(page, lambda cells: any("«日本語»" in c for c in cells), "no hit marked as text")
    with page.expect_download() as info:                          # exactly what the table shows
        page.get_by_role("button", name="This page as CSV").click()
    shown = pd.read_csv(info.value.path())
    assert shown["samples"].sum() == (50 if more else min(50, total))                # Swallow's identical samples: one row, counted
    assert (shown["field"] == "rationale").all() and (shown["score"] <= 3).all()
    assert shown["snippet"].str.contains("«日本語»").all()

    # Open the first hit: tick its row-marker box
    frame = grid.bounding_box()
    page.mouse.click(frame["x"] + 18, frame["y"] + 35 + 17)
    page.wait_for_url("**/item_view?**")
    wait_for_app(page)

    # Name once in the sidebar, then decide with number keys; U moves to the next undecided item of the queue
    name_box = page.get_by_role("textbox", name="Your name (for your verdicts)")
    name_box.fill(NAME)
    wait_for_rerun(page, lambda: name_box.press("Enter"))
    page.get_by_text(re.compile(f"record your score as human:{NAME}")).wait_for()
    wait_for_app(page)
    seen = set()
    for key in ("7", "0", "3", "5", "9"):
        page.get_by_role("heading", name="Item view").click()  # focus the page, not a text field
        # the whole run the key starts, not only its "Saved" line (drawn first): until the run has drawn the panel
        # again, U may land on a button that is being replaced
        wait_for_rerun(page, lambda: page.keyboard.press(key))
        expected = "10" if key == "0" else key
        page.get_by_text(re.compile(f"Saved as human:{NAME}: score {expected}")).wait_for()
        item_url = page.url
        seen.add(item_url)
        page.get_by_role("heading", name="Item view").click()
        wait_for_rerun(page, lambda: page.keyboard.press("u"))
        page.wait_for_function("(u) => location.href !== u", arg=item_url)
        wait_for_app(page)
    assert len(seen) == 5  # five different items decided
    progress = page.get_by_text(re.compile(r"Review queue: \d+ of the 20 largest disagreements"))
    assert re.search(r": ([45]) of the 20", progress.inner_text())  # the hit may or may not be in the queue

    page.goto(f"{app_url}/agreement")
    wait_for_app(page)
    tags = page.locator('[data-testid="stMultiSelect"] [data-tag]')
    tags.first.wait_for()
    judges = [tags.nth(i).get_attribute("aria-label") or tags.nth(i).inner_text() for i in range(tags.count())]
    assert any(f"human:{NAME}" in j for j in judges), judges
    cells = wait_for_cells(page, lambda cells: f"human:{NAME}" in cells, "no human judge in the agreement table")
    for judge in ("gpt-4o", "gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14"):
        assert judge in cells
