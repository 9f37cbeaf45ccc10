"""The browser benchmark's select-box lines (bench/browser_bench_table.py ``select_lines``): each select-box step
against the hello app's own pick, a tab's first pick against the first and a later one against "again". The
benchmark's own test runs pages whose choices are radio rows (no select-box step), so the lines are pinned here on
rows made up for it."""
from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from browser_bench_table import FLOOR_CLICK, FLOOR_SELECT, HELLO_STORE, select_lines  # noqa: E402


def row(store: str, page: str, what: str, median: float) -> dict:
    return {"size": "wide 100k", "store": store, "page": page, "what": what, "median": median}


def test_select_steps_are_judged_against_the_hello_apps_own_pick_first_and_again():
    rows = [row(HELLO_STORE, "floor", FLOOR_CLICK, 0.20), row(HELLO_STORE, "floor", FLOOR_SELECT["first"], 0.45),
            row(HELLO_STORE, "floor", FLOOR_SELECT["again"], 0.30),
            row("file", "Item view", "5. pick another model", 0.70),      # first: +0.25, within +0.3
            row("file", "Workbench", "1. pick another model", 0.80),      # first: +0.35, over
            row("file", "Compare", "4. pick another model B", 0.55),      # again: +0.25, within
            row("lake-sqlite", "Item view", "5. pick another model", 0.74)]
    steps = {"Item view|5. pick another model": "first", "Workbench|1. pick another model": "first",
             "Compare|4. pick another model B": "again"}
    lines = select_lines(rows, "wide 100k", steps, ["file", "lake-sqlite"], 0.3)
    assert lines[0] == ("Select-box steps (3 rows): the hello app's own pick took 0.45 s as its tab's first and 0.30 s "
                        "again, against 0.20 s for its button click. Judged against that pick instead (a tab's first "
                        "pick against the first), with the same goal (+0.3 s):")
    assert lines[2] == "- file: 2/3 within the goal; over it: Workbench pick another model +0.35"
    assert lines[3] == "- lake-sqlite: 1/1 within the goal"


def test_no_select_step_or_no_select_floor_gives_no_lines():
    rows = [row(HELLO_STORE, "floor", FLOOR_CLICK, 0.20), row(HELLO_STORE, "floor", FLOOR_SELECT["first"], 0.45)]
    assert select_lines(rows, "wide 100k", {}, ["file"], 0.3) == []
    assert select_lines(rows, "wide 100k", {"Item view|5. pick another model": "first"}, ["file"], 0.3) == []
