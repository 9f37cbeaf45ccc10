"""Where a click's time goes in the browser: a Chrome DevTools CPU profile of each step of one page.

Not a test. ``bench/browser_bench.py`` says how long a click takes; this says what the browser does in that time.
Starts the real app on a benchmark store (as browser_bench.py does: ``--out`` holds its stores), opens one page in
headless Chromium and runs that page's steps (browser_bench.py's ``scenarios``). For each step chosen it prints the
wall time and the browser's sampled CPU time by script file and by function (the sampling itself slows the
browser: read the shares, not the sum). "(program)" is the
browser's native work outside JavaScript (the sampling's own cost among it); "(idle)" is waiting (for the server,
or a frame).
``--trace`` records a DevTools trace instead of sampling: the renderer main thread's self time by kind of work
(script: JavaScript and the DOM calls it makes; style, layout, paint, gc). On Overview's sort at 100k judgments it
read script 0.45-0.52 s, style, layout and paint together 0.1 s, where the sampled profile had shown 0.74 s of
"(program)": that was not mostly layout.
Each step also prints the CPU time it cost the app server and the browser together (every process this script
started): on a machine other work keeps busy, wall times grow with the load, CPU times much less. Compare them
for steps that are not profiled (``--steps`` naming none: the sampling costs CPU too).

    .venv/bin/python bench/click_profile.py --size 100000 --page distributions --steps "panels" "top 20"
"""
from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "bench"))

from playwright.sync_api import sync_playwright  # noqa: E402

from browser_bench import scenarios  # noqa: E402
from plotly_mount import cpu  # noqa: E402  (CPU seconds of a list of processes)
from browser_support import launch_chromium, new_context, open_app, running_app, wait_for_app, wait_for_rerun  # noqa: E402
from stores import OUT  # noqa: E402


def by_source(profile: dict, top: int) -> tuple[float, list, list]:
    """(sampled seconds, [(script file, seconds)], [((file, function), seconds)]) of a DevTools CPU profile."""
    nodes = {n["id"]: n["callFrame"] for n in profile["nodes"]}
    files, functions = collections.Counter(), collections.Counter()
    for node, micros in zip(profile["samples"], profile["timeDeltas"]):
        frame = nodes[node]
        where = frame["url"].rsplit("/", 1)[-1]
        files[where or frame["functionName"]] += micros / 1e6
        functions[(where, frame["functionName"])] += micros / 1e6
    return sum(files.values()), files.most_common(top), functions.most_common(top)


TRACE_CATEGORIES = "devtools.timeline,disabled-by-default-devtools.timeline,v8"
# the renderer main thread's own work, by DevTools timeline event (self time: an event's time less its children's)
TRACE_EVENTS = {"UpdateLayoutTree": "style", "Layout": "layout", "PrePaint": "paint", "Paint": "paint",
                "Layerize": "paint", "Commit": "paint", "HitTest": "hit test", "ParseHTML": "parse",
                "FunctionCall": "script", "EvaluateScript": "script", "TimerFire": "script", "EventDispatch": "script",
                "FireAnimationFrame": "script", "RunMicrotasks": "script", "v8.callFunction": "script",
                "MinorGC": "gc", "MajorGC": "gc", "V8.GCScavenger": "gc", "V8.GCFinalizeMC": "gc"}


def by_timeline(events: list[dict]) -> collections.Counter:
    """Seconds of the busiest renderer main thread's self time per kind of work (``TRACE_EVENTS``; what the
    sampled profile calls "(program)" split into style, layout and paint), and the count of each."""
    threads = collections.Counter()
    for e in events:
        if e.get("ph") == "X" and e.get("name") in TRACE_EVENTS:
            threads[(e["pid"], e["tid"])] += e.get("dur", 0)
    if not threads:
        return collections.Counter()
    main = threads.most_common(1)[0][0]
    spans = sorted(((e["ts"], e["ts"] + e.get("dur", 0), e["name"]) for e in events
                    if e.get("ph") == "X" and (e["pid"], e["tid"]) == main and e.get("name") in TRACE_EVENTS),
                   key=lambda span: (span[0], -span[1]))  # a parent before the children starting with it
    out: collections.Counter = collections.Counter()
    stack: list[list] = []  # [end, kind, children's time, duration] of the events still open
    for start, end, name in spans:
        while stack and stack[-1][0] <= start:
            done = stack.pop()
            out[done[1]] += done[3] - done[2]
        if stack:
            stack[-1][2] += end - start
        stack.append([end, TRACE_EVENTS[name], 0, end - start])
        out[f"{TRACE_EVENTS[name]} (count)"] += 1e6
    for done in stack:
        out[done[1]] += done[3] - done[2]
    return collections.Counter({k: v / 1e6 for k, v in out.items()})


def tree_cpu() -> float:
    """CPU seconds (user + system) of the processes this script started and still runs: the app server, the
    Playwright driver and the browser's processes."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:  # gone since listed
                continue
            children[int(fields[1])].append(int(entry))
    tree, todo = [], list(children[os.getpid()])
    while todo:
        pid = todo.pop()
        todo += children[pid]
        tree.append(pid)
    return cpu(tree)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100_000, help="judgments in the benchmark's wide file store")
    ap.add_argument("--out", type=Path, default=OUT, help="where browser_bench.py built its stores")
    ap.add_argument("--page", default="", help="the scenario's URL path, e.g. distributions ('' = Overview)")
    ap.add_argument("--steps", nargs="*", default=[], help="profile only steps whose name contains one of these")
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--trace", action="store_true", help="per chosen step, the renderer main thread's time by kind "
                                                          "(style, layout, paint, script, gc) from a DevTools trace")
    args = ap.parse_args()
    db = args.out / f"browser_wide_{args.size}.duckdb"
    info = json.loads(db.with_suffix(".json").read_text())
    scen = {s.page: s for s in scenarios(info)}[args.page]
    with sync_playwright() as p, running_app(db, warm=True) as url:
        browser = launch_chromium(p)
        ctx = new_context(browser)
        page = ctx.new_page()
        cdp = ctx.new_cdp_session(page)
        t0 = time.perf_counter()
        open_app(page, f"{url}/{scen.page}")
        print(f"-- open {scen.title}: {time.perf_counter() - t0:.3f} s")
        events, done = [], []
        if args.trace:
            cdp.on("Tracing.dataCollected", lambda m: events.extend(m["value"]))
            cdp.on("Tracing.tracingComplete", lambda m: done.append(True))
        for step in scen.steps:
            if step.download:
                continue
            chosen = not args.steps or any(s in step.name for s in args.steps)
            if chosen and args.trace:
                events.clear()
                done.clear()
                cdp.send("Tracing.start", {"categories": TRACE_CATEGORIES, "transferMode": "ReportEvents"})
            elif chosen:
                cdp.send("Profiler.enable")
                cdp.send("Profiler.setSamplingInterval", {"interval": 200})
                cdp.send("Profiler.start")
            t0, c0 = time.perf_counter(), tree_cpu()
            if step.rerun:
                wait_for_rerun(page, lambda: step.act(page))
            else:
                step.act(page)
                wait_for_app(page)
            wall, cpu = time.perf_counter() - t0, tree_cpu() - c0
            if not chosen:
                print(f"-- {step.name}: {wall:.3f} s wall, {cpu:.2f} s CPU (server and browser)")
                continue
            if args.trace:
                cdp.send("Tracing.end")
                while not done:
                    page.wait_for_timeout(50)
                kinds = by_timeline(events)
                print(f"== {step.name}: {wall:.3f} s wall, {cpu:.2f} s CPU (server and browser, tracing included); "
                      "renderer main thread, self time: " + ", ".join(
                          f"{k} {v:.3f} s ({int(kinds[k + ' (count)'])})" for k, v in kinds.most_common()
                          if not k.endswith("(count)")))
                continue
            total, files, functions = by_source(cdp.send("Profiler.stop")["profile"], args.top)
            print(f"== {step.name}: {wall:.3f} s wall, {cpu:.2f} s CPU (server and browser, sampling included), "
                  f"{total:.3f} s sampled in the browser")
            for where, seconds in files:
                print(f"   {seconds:7.3f}  {where}")
            for (where, fn), seconds in functions:
                print(f"      {seconds:7.3f}  {where} {fn}")
        browser.close()


if __name__ == "__main__":
    main()
