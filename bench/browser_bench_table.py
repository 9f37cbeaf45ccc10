"""The browser benchmark's table: which floor each row is judged against, the summary rows, and two printers.

Used by bench/browser_bench.py (after a run, and ``--table-from JSON`` for a run's results file). Not a test.

Floors (all measured in the same run as the pages; their names are the ``what`` of the hello app's rows):

- a page's new tab: the hello app drawing the same widgets as that page (its census), trivially filled
  ("same widgets"): what remains is the page's own content (texts, tables, figures, queries);
- a page opened from Overview's sidebar: a sidebar move in the hello app into that same-widgets page ("same
  widgets, from the sidebar"); before, the hello app's move to a page with a title and a line ("hello sidebar"),
  so every page missed by Streamlit's cost of drawing its widgets;
- a click, a choice or a tab (any step once a page is open): the hello page's own click, a rerun ("hello click");
- the first open after a server start (cold: a new browser, nothing cached): the same-widgets page opened cold
  ("same widgets, cold"); before, the cold hello page ("hello new tab, cold"), so a Plotly page paid plotly.js's
  load over its floor. Judged only by issue 11's bound on a single run (max <= floor + 1.5 s).

A row judged against a new floor keeps the old one beside it (``old_floor``, ``old_floor_s``, ``old_over_floor``,
``old_meets_goal``): the tables show both.
"""
from __future__ import annotations

import statistics
from collections import defaultdict

from stores import STORES

LAKE_RATIO = 1.3  # issue 26: no page on a lake more than 1.3x its time on the file store
COLD_BOUND = 1.5  # issue 11: no single cold run more than 1.5 s over its floor

HELLO_STORE = "hello"  # the floors' "store" in a result key: the hello-world app, no store
COLD = ", cold (new browser, server just started)"
FLOOR_OPEN = "open hello-world page (new tab)"
FLOOR_CLICK = "click its button"
FLOOR_SIDEBAR = "go to another page from the sidebar"
FLOOR_CHART = "open a page with one small Plotly chart (new tab)"
FLOOR_WIDGETS = "open a page with the same widgets as {}, trivially filled (new tab)"
FLOOR_WIDGETS_SIDEBAR = "go to a page with the same widgets as {} from the sidebar"
FLOOR_WIDGETS_COLD = FLOOR_WIDGETS + COLD
# A click on that same-widgets page (one more button, which reruns it): Streamlit's own cost of rerunning and redrawing
# a page with those elements. Shown beside the hello click that every step stays judged against (the decision taken on
# issue 11; a page of 40 elements reruns slower than the hello page of 3): ``rerun_lines``.
FLOOR_WIDGETS_RERUN = "click a button on a page with the same widgets as {} (a rerun)"
# A pick in a select box (open it, type, choose) as the hello app's own select box takes it, with as many options as
# the store has models: the tab's first pick (the widget's code runs for the first time: 0.3-0.6 s of browser
# script) and a later one. Shown beside the click floor, which every step stays judged against (the decision taken
# on issue 11): how much of a select-box step is the widget's, not the page's.
FLOOR_SELECT = {"first": "pick in a select box, the tab's first", "again": "pick in a select box again"}
# The short names the tables show for the floor a row is judged against
FLOOR_NAMES = {FLOOR_OPEN: "hello new tab", FLOOR_OPEN + COLD: "hello new tab, cold", FLOOR_CLICK: "hello click",
               FLOOR_SIDEBAR: "hello sidebar", FLOOR_CHART: "hello + 1 chart"}


def floor_name(row_name: str) -> str:
    if row_name in FLOOR_NAMES:
        return FLOOR_NAMES[row_name]
    if row_name.endswith(COLD):
        return "same widgets, cold"
    if row_name.startswith(FLOOR_WIDGETS_SIDEBAR.split("{")[0]):
        return "same widgets, from the sidebar"
    return "same widgets"


def floor_of(row: dict, floors: dict) -> tuple[str, float | None, str, str | None]:
    """-> (the floor's row name, its median, "tab" or "click" or "cold", the old floor's row name or None) for an
    app row. A floor not measured (its page's census failed, or a results file from before it existed) falls back
    to the old one."""
    size, what, page = row["size"], row["what"], row["page"]

    def pick(new: str, old: str, kind: str):
        if (size, new) in floors:
            return new, floors[(size, new)], kind, old
        return old, floors.get((size, old)), kind, None

    if what.endswith(COLD):
        return pick(FLOOR_WIDGETS_COLD.format(page), FLOOR_OPEN + COLD, "cold")
    if what.startswith("open in a new tab"):
        fallback = FLOOR_CHART if "(Plotly page)" in what else FLOOR_OPEN  # no census taken (its cold open failed)
        name, floor, kind, _ = pick(FLOOR_WIDGETS.format(page), fallback, "tab")
        return name, floor, kind, None
    if what == "open from the sidebar":
        return pick(FLOOR_WIDGETS_SIDEBAR.format(page), FLOOR_SIDEBAR, "click")
    return FLOOR_CLICK, floors.get((size, FLOOR_CLICK)), "click", None


def judged(row: dict, floor: float | None, kind: str, goal: float) -> dict:
    """median - floor, the single-run bound and whether the goal is met, against ``floor``."""
    if floor is None or row["median"] is None:
        return {"meets_goal": False}
    out = {"over_floor": row["median"] - floor, "max_over_1_5": row["max"] > floor + COLD_BOUND}
    if kind == "cold":
        out["meets_goal"] = not out["max_over_1_5"] and not row["failed"]
    else:
        out["meets_goal"] = out["over_floor"] <= goal and not row["failed"]
    return out


def summarise(results: dict, goals: dict[str, float]) -> list[dict]:
    """One row per size, store, page and what: n, median, max, the floor it is judged against (module docstring),
    median - floor, the goal, whether it is met and, for a lake row, its ratio to the file store's same row.

    Goal: median - floor <= ``goals[size]`` (0.3 s at 100k, 0.5 s at 1M) and no run failed; a cold row: no run
    over floor + 1.5 s. A lake row also has ``ratio_to_file`` = its median / the file store's median for the same
    row, and ``ratio_ok`` (<= 1.3). ``max_over_1_5`` flags a row with a single run more than 1.5 s over its floor
    (issue 11's bound). A row judged against a new floor also has the ``old_`` fields against the old one."""
    rows, floors = [], {}
    for key, values in results.items():
        if key.endswith("|errors") or "(untimed" in key:
            continue
        label, store, page, what = key.split("|", 3)
        ok = [v for v in values if v is not None]
        row = {"size": label, "store": store, "page": page, "what": what, "n": len(ok), "failed": len(values) - len(ok),
               "first": values[0], "median": statistics.median(ok) if ok else None, "max": max(ok) if ok else None}
        if store == HELLO_STORE:
            floors[(label, what)] = row["median"]
        rows.append(row)
    file_medians = {(r["size"], r["page"], r["what"]): r["median"] for r in rows if r["store"] == "file"}
    for row in rows:
        if row["store"] == HELLO_STORE:
            continue
        name, floor, kind, old = floor_of(row, floors)
        goal = goals.get(row["size"], 0.5)
        row.update(floor=floor_name(name), floor_row=name, floor_s=floor,
                   goal_over_floor_s=None if kind == "cold" else goal, **judged(row, floor, kind, goal))
        if old is not None:
            old_s = floors.get((row["size"], old))
            against_old = judged(row, old_s, kind, goal)
            row.update(old_floor=floor_name(old), old_floor_row=old, old_floor_s=old_s,
                       old_over_floor=against_old.get("over_floor"), old_meets_goal=against_old["meets_goal"])
        file = file_medians.get((row["size"], row["page"], row["what"]))
        if row["store"] != "file" and file and row["median"] is not None:
            row["ratio_to_file"] = row["median"] / file
            row["ratio_ok"] = row["ratio_to_file"] <= LAKE_RATIO
    stores = [HELLO_STORE, *STORES]
    first = {}
    for row in rows:
        first.setdefault((row["size"], row["page"], row["what"]), len(first))
    rows.sort(key=lambda r: (r["size"], r["store"] != HELLO_STORE, first[(r["size"], r["page"], r["what"])],
                             stores.index(r["store"]) if r["store"] in stores else len(stores)))
    return rows


def fmt(v, spec="{:.2f}") -> str:
    return "—" if v is None else spec.format(v)


def print_table(rows: list[dict]) -> None:
    """Every row, floors first: the run's own long table (one line per store)."""
    print("\n| size | store | page | what | n | median s | max s | floor | floor s | median - floor | goal | met "
          "| lake / file | old floor: s, median - floor, met |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        n = f"{r['n']}{' + ' + str(r['failed']) + ' failed' if r['failed'] else ''}"
        if r["store"] == HELLO_STORE:
            print(f"| {r['size']} | floor | | {r['what']} | {n} | {fmt(r['median'])} | {fmt(r['max'])} | | | | | | | |")
            continue
        goal = f"max ≤ +{COLD_BOUND}" if r["goal_over_floor_s"] is None else f"≤ +{r['goal_over_floor_s']:.1f}"
        met = ("yes" if r["meets_goal"] else "**no**") + (" (max > +1.5)" if r.get("max_over_1_5") else "")
        ratio = "" if "ratio_to_file" not in r else \
            f"{r['ratio_to_file']:.2f}×" + ("" if r["ratio_ok"] else f" **> {LAKE_RATIO}**")
        old = "" if "old_floor" not in r else (f"{r['old_floor']} {fmt(r['old_floor_s'])}, "
                                               f"{fmt(r['old_over_floor'], '{:+.2f}')}, "
                                               f"{'yes' if r['old_meets_goal'] else 'no'}")
        print(f"| {r['size']} | {r['store']} | {r['page']} | {r['what']} | {n} | {fmt(r['median'])} | {fmt(r['max'])}"
              f" | {r['floor']} | {fmt(r['floor_s'])} | {fmt(r.get('over_floor'), '{:+.2f}')} | {goal} | {met} "
              f"| {ratio} | {old} |")


def judgments(rows: int) -> str:
    return f"{rows // 1_000_000}M" if rows % 1_000_000 == 0 else f"{rows // 1000}k"


def markdown(result: dict) -> str:
    """The table of bench/browser_bench_results.md from a run's results (``browser_bench_<time>.json``), a
    section per size: one line per page and what, a column per store (median, over its floor, x file), the floor
    it is judged against and, where the floor changed (module docstring), the old floor's figures beside the new;
    then per store the rows that meet their goal (warm, cold, and against the old floors) and the lake ratios.
    The summary is recomputed from the runs (``runs_s``), so an older results file gets today's floors where
    it measured them."""
    goals = result.get("goals_over_floor_s", {})
    rows = summarise(result["runs_s"], goals) if "runs_s" in result else result["summary"]
    out = []
    for size in dict.fromkeys(r["size"] for r in rows):
        app = [r for r in rows if r["size"] == size and r["store"] != HELLO_STORE]
        stores = [s for s in STORES if any(r["store"] == s for r in app)]
        about = result.get("stores", {}).get(size, {})
        head = f"{judgments(about['rows'])} judgments ({about['judges']} judges x {about['models']:,} models)" \
            if "rows" in about else size
        shape = "" if size.startswith("wide ") else f" --shapes {size.split()[0]}"
        flag = f"--sizes {about['rows']}" if "rows" in about else ""
        out += [f"## {head}, `{flag}{shape} --repeat {result.get('repeat', '?')}`", ""]
        if result.get("interrupted"):
            out += [f"Partial: {result['interrupted']}.", ""]
        out.append("| page | what | judged against (s) | " + " | ".join(
            f"{s}: median s (over floor{'' if s == 'file' else ', x file'})" for s in stores) + " |")
        out.append("|---|---|---|" + "---|" * len(stores))
        by_line = defaultdict(dict)
        for r in app:
            by_line[(r["page"], r["what"])][r["store"]] = r
        for (page, what), cells in by_line.items():
            any_row = next(iter(cells.values()))
            against = f"{any_row['floor']} ({fmt(any_row['floor_s'])})"
            if "old_floor" in any_row:
                against += f"; was {any_row['old_floor']} ({fmt(any_row['old_floor_s'])})"
            out.append(f"| {page} | {what} | {against} | " + " | ".join(cell(cells.get(s)) for s in stores) + " |")
        out.append("")
        for s in stores:
            out.append("- " + tally(s, [r for r in app if r["store"] == s]))
        out.append("")
        out += select_lines(rows, size, about.get("select_steps", {}), stores, goals.get(size, 0.5))
        out += rerun_lines(rows, size, stores, goals.get(size, 0.5))
        out += reach_lines(rows, size, about.get("select_steps", {}), stores, goals.get(size, 0.5))
    return "\n".join(out)


def select_lines(rows: list[dict], size: str, steps: dict[str, str], stores: list[str], goal: float) -> list[str]:
    """The select-box steps against the hello app's own pick (``FLOOR_SELECT``): what the widget itself costs,
    beside the click floor they are judged against."""
    floors = {r["what"]: r["median"] for r in rows if r["size"] == size and r["store"] == HELLO_STORE}
    click, first, again = (floors.get(w) for w in (FLOOR_CLICK, FLOOR_SELECT["first"], FLOOR_SELECT["again"]))
    if not steps or first is None or again is None:
        return []
    out = [f"Select-box steps ({len(steps)} rows): the hello app's own pick took {first:.2f} s as its tab's first "
           f"and {again:.2f} s again, against {fmt(click)} s for its button click. Judged against that pick instead "
           f"(a tab's first pick against the first), with the same goal (+{goal:.1f} s):", ""]
    for s in stores:
        mine = [r for r in rows if r["size"] == size and r["store"] == s and f"{r['page']}|{r['what']}" in steps
                and r["median"] is not None]
        out.append(within_line(s, [(r, first if steps[f"{r['page']}|{r['what']}"] == "first" else again)
                                   for r in mine], goal))
    return out + [""]


def rerun_steps(rows: list[dict], size: str, stores: list[str]) -> tuple[dict[str, float], list[dict]]:
    """(the hello app's floors of ``size`` by name, the rows of ``stores`` judged against the hello click whose page's
    rerun floor was measured): what ``rerun_lines`` and ``reach_lines`` set side by side."""
    floors = {r["what"]: r["median"] for r in rows if r["size"] == size and r["store"] == HELLO_STORE}
    steps = [r for r in rows if r["size"] == size and r["store"] in stores and r["floor_row"] == FLOOR_CLICK
             and r["median"] is not None and floors.get(FLOOR_WIDGETS_RERUN.format(r["page"])) is not None]
    return floors, steps


def rerun_lines(rows: list[dict], size: str, stores: list[str], goal: float) -> list[str]:
    """The steps (clicks, choices, tabs) against their page's own rerun floor (``FLOOR_WIDGETS_RERUN``: the same
    widgets rerun by a click), beside the hello click they are judged against: how much of a step is Streamlit's
    cost of the page's elements, not the page's work."""
    floors, steps = rerun_steps(rows, size, stores)
    click = floors.get(FLOOR_CLICK)
    if not steps:
        return []
    pages = dict.fromkeys(r["page"] for r in steps)
    out = [f"Steps against their page's own rerun (the hello app drawing the page's widgets, a button clicked), "
           f"not the goal's floor (hello click {fmt(click)} s): "
           + ", ".join(f"{p} {floors[FLOOR_WIDGETS_RERUN.format(p)]:.2f}" for p in pages)
           + f" s. Judged against it instead, with the same goal (+{goal:.1f} s):", ""]
    for s in stores:
        out.append(within_line(s, [(r, floors[FLOOR_WIDGETS_RERUN.format(r["page"])]) for r in steps
                                   if r["store"] == s], goal))
    return out + [""]


def reach_lines(rows: list[dict], size: str, steps: dict[str, str], stores: list[str], goal: float) -> list[str]:
    """The steps whose goal lies below Streamlit's own cost of the same step on a page drawing the same widgets, before
    any work of the page's: its rerun (``FLOOR_WIDGETS_RERUN``), plus for a pick in a select box what the hello app's
    own pick costs over its click (``FLOOR_SELECT``, first or again). No change to the page's work can bring such a
    step within its goal; each other miss is listed with how far it is over that least (the page's own share)."""
    floors, steps_here = rerun_steps(rows, size, stores)
    click = floors.get(FLOOR_CLICK)
    if click is None or not steps_here:
        return []

    def least(r: dict) -> float | None:
        kind = steps.get(f"{r['page']}|{r['what']}")
        if kind and floors.get(FLOOR_SELECT[kind]) is None:
            return None  # a pick whose floor was not measured: not judged here
        extra = floors[FLOOR_SELECT[kind]] - click if kind else 0.0
        return floors[FLOOR_WIDGETS_RERUN.format(r["page"])] + extra

    lines = {}  # (page, what) -> least, in the table's order
    for r in steps_here:
        if (r["page"], r["what"]) not in lines and (cost := least(r)) is not None:
            lines[(r["page"], r["what"])] = cost
    out_of_reach = {k: v for k, v in lines.items() if v > click + goal}
    out = [f"Out of reach: {len(out_of_reach)} of {len(lines)} steps have a goal (hello click + {goal:.1f} = "
           f"{click + goal:.3f} s) below Streamlit's own cost of the same step on a page with the same widgets (its "
           "rerun; a pick in a select box adds the hello app's pick over its click), before any work of the page's"
           + (": " + ", ".join(f"{step_name(p, w)} {v:.3f}" for (p, w), v in out_of_reach.items()) + " s"
              if out_of_reach else "") + ".", ""]
    for s in stores:
        missed = [r for r in steps_here if r["store"] == s and not r["meets_goal"] and (r["page"], r["what"]) in lines]
        beyond = [r for r in missed if (r["page"], r["what"]) not in out_of_reach]
        shares = [f"{step_name(r['page'], r['what'])} {r['median'] - lines[(r['page'], r['what'])]:+.2f}"
                  for r in beyond]
        out.append(f"- {s}: {len(missed) - len(beyond)} of its {len(missed)} missed steps out of reach"
                   + (f"; the others over that least by: {', '.join(shares)}" if shares else ""))
    return out + [""]


def step_name(page: str, what: str) -> str:
    """"Item view Next biggest disagreement": a step's page and name without its number, for the lines."""
    return f"{page} {what.split('. ', 1)[-1]}"


def within_line(store: str, against: list[tuple[dict, float]], goal: float) -> str:
    """"- store: n/m within the goal; over it: ..." for rows each paired with the floor they are set against here."""
    over = [(step_name(r["page"], r["what"]), r["median"] - floor) for r, floor in against]
    missed = [f"{name} {v:+.2f}" for name, v in over if v > goal]
    return (f"- {store}: {sum(v <= goal for _, v in over)}/{len(over)} within the goal"
            + (f"; over it: {', '.join(missed)}" if missed else ""))


def cell(r: dict | None) -> str:
    if r is None:
        return "—"
    if r["median"] is None:
        return f"failed ({r['failed']})"
    inside = [fmt(r.get("over_floor"), "{:+.2f}")]
    if "old_floor" in r:
        inside[0] += f"; was {fmt(r['old_over_floor'], '{:+.2f}')}"
    if "ratio_to_file" in r:
        inside.append(f"{r['ratio_to_file']:.2f}x" if r["ratio_ok"] else f"**{r['ratio_to_file']:.2f}x**")
    failed = f", {r['failed']} failed" if r["failed"] else ""
    return f"{r['median']:.2f} ({', '.join(inside)}{failed})" + ("" if r["meets_goal"] else " **miss**")


def tally(store: str, rows: list[dict]) -> str:
    warm = [r for r in rows if not r["what"].endswith(COLD)]
    cold = [r for r in rows if r["what"].endswith(COLD)]
    changed = [r for r in rows if "old_floor" in r]
    text = f"{store}: {sum(r['meets_goal'] for r in warm)}/{len(warm)} warm rows meet their goal"
    if cold:
        text += f", {sum(r['meets_goal'] for r in cold)}/{len(cold)} cold rows"
    if changed:
        text += (f" (against the old floors, of the {len(changed)} rows whose floor changed: "
                 f"{sum(r['old_meets_goal'] for r in changed)} met, now {sum(r['meets_goal'] for r in changed)})")
    ratios = [r["ratio_to_file"] for r in warm if "ratio_to_file" in r]
    if ratios:
        text += (f"; within {LAKE_RATIO}x of the file: {sum(x <= LAKE_RATIO for x in ratios)}/{len(ratios)}, "
                 f"median {statistics.median(ratios):.2f}x, max {max(ratios):.2f}x")
    return text
