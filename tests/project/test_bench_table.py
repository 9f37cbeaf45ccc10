"""The browser benchmark's lines beside the table (bench/browser_bench_table.py): ``select_lines``, each select-box step
against the hello app's own pick, a tab's first pick against the first and a later one against "again" (the
benchmark's own test runs pages whose choices are radio rows, no select-box step); ``rerun_lines``, each step against
its page's own rerun; ``reach_lines``, the steps whose goal lies below Streamlit's own cost of them. Pinned here on
rows made up for them."""
from __future__ import annotations

import sys

from conftest import ROOT

sys.path.insert(0, str(ROOT / "bench"))

from browser_bench_table import (FLOOR_CLICK, FLOOR_SELECT, FLOOR_WIDGETS,  # noqa: E402
                                 FLOOR_WIDGETS_RERUN, HELLO_STORE, reach_lines, rerun_lines, select_lines,
                                 summarise)


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


def test_steps_are_shown_against_their_pages_own_rerun_beside_the_hello_click():
    """``rerun_lines``: each step (not a new tab, not a sidebar move) against the rerun of a page drawing its page's
    widgets; rows come from ``summarise`` on made-up runs, so only the steps judged against the hello click count."""
    floor = "wide 100k|hello|floor|"
    runs = {floor + FLOOR_CLICK: [0.20, 0.22, 0.21],
            floor + FLOOR_WIDGETS_RERUN.format("Item view"): [0.30, 0.31, 0.29],
            floor + FLOOR_WIDGETS.format("Item view"): [1.0],
            "wide 100k|file|Item view|open in a new tab": [1.2],            # a new tab: its own floor, not listed
            "wide 100k|file|Item view|open from the sidebar": [0.9],        # a sidebar move: not listed either
            "wide 100k|file|Item view|1. Next": [0.50, 0.55, 0.52],         # +0.22 over the page's rerun
            "wide 100k|file|Item view|4. Next biggest disagreement": [0.70],  # +0.40: over
            "wide 100k|lake-sqlite|Item view|1. Next": [0.58],
            "wide 100k|file|Search|1. find": [0.9]}                          # no rerun floor for Search: left out
    rows = summarise(runs, {"wide 100k": 0.3})
    lines = rerun_lines(rows, "wide 100k", ["file", "lake-sqlite"], 0.3)
    assert lines[0] == ("Steps against their page's own rerun (the hello app drawing the page's widgets, a button "
                        "clicked), not the goal's floor (hello click 0.21 s): Item view 0.30 s. Judged against it "
                        "instead, with the same goal (+0.3 s):")
    assert lines[2] == "- file: 1/2 within the goal; over it: Item view Next biggest disagreement +0.40"
    assert lines[3] == "- lake-sqlite: 1/1 within the goal"
    assert rerun_lines(summarise({floor + FLOOR_CLICK: [0.2], "wide 100k|file|Search|1. find": [0.9]},
                                 {"wide 100k": 0.3}), "wide 100k", ["file"], 0.3) == []


def test_steps_whose_goal_is_below_streamlits_own_cost_are_out_of_reach_the_others_show_the_pages_share():
    """``reach_lines``: a step's least is its page's rerun floor, plus for a select-box pick the hello app's pick over
    its click (first or again); a goal below that least is out of reach whatever the page does. The other misses are
    listed with how far they are over that least."""
    floor = "wide 100k|hello|floor|"
    runs = {floor + FLOOR_CLICK: [0.20],
            floor + FLOOR_SELECT["first"]: [0.45], floor + FLOOR_SELECT["again"]: [0.30],
            floor + FLOOR_WIDGETS_RERUN.format("Item view"): [0.30],
            floor + FLOOR_WIDGETS_RERUN.format("Compare"): [0.25],
            "wide 100k|file|Item view|1. Next": [0.45],                      # meets the goal (0.50): not listed
            "wide 100k|file|Item view|4. Next biggest disagreement": [0.70],  # least 0.30: +0.40 the page's own
            "wide 100k|file|Item view|5. pick another model": [0.80],       # least 0.30 + 0.25 = 0.55 > 0.50
            "wide 100k|file|Compare|4. pick another model B": [0.60],       # again: 0.25 + 0.10 = 0.35, +0.25
            "wide 100k|lake-sqlite|Item view|5. pick another model": [0.85],
            "wide 100k|lake-sqlite|Item view|1. Next": [0.45]}
    steps = {"Item view|5. pick another model": "first", "Compare|4. pick another model B": "again"}
    rows = summarise(runs, {"wide 100k": 0.3})
    lines = reach_lines(rows, "wide 100k", steps, ["file", "lake-sqlite"], 0.3)
    assert lines[0] == ("Out of reach: 1 of 4 steps have a goal (hello click + 0.3 = 0.500 s) below Streamlit's own "
                        "cost of the same step on a page with the same widgets (its rerun; a pick in a select box adds "
                        "the hello app's pick over its click), before any work of the page's: Item view pick another "
                        "model 0.550 s.")
    assert lines[2] == ("- file: 1 of its 3 missed steps out of reach; the others over that least by: Item view Next "
                        "biggest disagreement +0.40, Compare pick another model B +0.25")
    assert lines[3] == "- lake-sqlite: 1 of its 1 missed steps out of reach"
    # no step out of reach: said so, no list; no rerun floor measured: no lines
    within = {k: v for k, v in runs.items() if "pick another model" not in k}
    assert reach_lines(summarise(within, {"wide 100k": 0.3}), "wide 100k", {}, ["file"], 0.3)[0].startswith(
        "Out of reach: 0 of 2 steps have a goal (hello click + 0.3 = 0.500 s) below")
    assert reach_lines(summarise({floor + FLOOR_CLICK: [0.2], "wide 100k|file|Search|1. find": [0.9]},
                                 {"wide 100k": 0.3}), "wide 100k", {}, ["file"], 0.3) == []
