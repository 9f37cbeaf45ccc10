"""``harness-diff``, ``attribute``: how two runs (e.g. the JA harness and Swallow on one model) were set up,
and which judge-side factor moves the score how much."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from lib.analysis import harness_diff as diff_lib
from lib.analysis.selectors import parse_selector
from lib.cli.common import frame_out, open_store


def cmd_harness_diff(args) -> int:
    store = open_store(args, read_only=True)
    df = diff_lib.harness_diff(store, parse_selector(args.a), parse_selector(args.b))  # reads only
    records = diff_lib.records(df)
    if args.format == "json":
        print(json.dumps(records, ensure_ascii=False, indent=1))
        return 0
    out = pd.DataFrame(records)
    out["differs"] = out["differs"].map({True: "yes", False: "no", None: "?"})
    if args.format == "csv":
        print(frame_out(out, "csv"))
        return 0
    lines = [f"A: {df.attrs['label_a']}", f"B: {df.attrs['label_b']}", ""]
    for r in records:
        flag = {True: "DIFFERS", False: "same", None: "cannot tell"}[r["differs"]]
        lines += [f"== {r['area']} ({flag})", f"  A: {r['a']}", f"  B: {r['b']}", f"  {r['evidence']}", ""]
    print("\n".join(lines).rstrip())
    return 0


def register(sub, parents) -> None:
    db, fmt = parents["db"], parents["fmt"]
    p = sub.add_parser("harness-diff", parents=[db, fmt],
                       help="how two runs were set up: judge, prompt, samples, truncation, references, ... "
                            "(--a/--b: harness=..,bench=..,judge=..,model=..)")
    p.add_argument("--a", required=True, help="run A, e.g. harness=fastchat,judge=gpt-4o,model=shisa-ai/shisa-v2-llama3.1-8b")
    p.add_argument("--b", required=True, help="run B, e.g. harness=swallow,model=shisa-ai/shisa-v2-llama3.1-8b")
    p.set_defaults(func=cmd_harness_diff)
    register_attribute(sub, parents)


def cmd_attribute(args) -> int:
    import sys

    from lib.cli.common import judge_config, split_list
    from lib.judging import attribution
    from lib.judging.config import resolve_api_key

    store = open_store(args)
    steps = split_list(args.steps) if args.steps else list(attribution.STEPS)
    ladder = attribution.Ladder(store, parse_selector(args.a), parse_selector(args.b), judge_config(args),
                                steps=steps, items=args.items, reverse=args.reverse)
    est = ladder.prepare()
    print(f"{est['steps']} step(s) x {est['items']} item(s): {est['requests']} requests, {est['cached']} from the "
          f"cache, {est['already_judged']} already judged, {est['to_send']} to send"
          + (f", expected cost ~${est['cost_expected']:.4f}" if est["cost_expected"] is not None else ""),
          file=sys.stderr)
    df = ladder.run(api_key=resolve_api_key(None), concurrency=args.concurrency)
    if args.report:
        from lib.reports import harness_report

        text = harness_report(store, parse_selector(args.a), parse_selector(args.b), swallow_samples="first",
                              ladder=None if args.reverse else df,
                              reverse_ladder=df if args.reverse else None)
        args.report.write_text(text, encoding="utf-8")
        print(f"Wrote {args.report}: the gap, the setup table and the ladder; opens offline.", file=sys.stderr)
    if args.format == "json":
        print(json.dumps(attribution.records(df), ensure_ascii=False, indent=1))
    else:
        print(frame_out(df, args.format, f"A: {df.attrs['label_a']}\nB: {df.attrs['label_b']}\n"
                                         + attribution.LADDER_NOTE))
    return 0


def register_attribute(sub, parents) -> None:
    db, fmt, endpoint = parents["db"], parents["fmt"], parents["endpoint"]
    p = sub.add_parser("attribute", parents=[db, fmt, endpoint],
                       help="attribute the gap between two runs by re-judging A's answers one judge-side factor "
                            "at a time (prompt, judge, reference, truncation, reasoning)")
    p.add_argument("--a", required=True, help="run A (its answers are re-judged), e.g. harness=fastchat,judge=gpt-4o,model=M")
    p.add_argument("--b", required=True, help="run B (its setup is switched in), e.g. harness=swallow,model=M")
    p.add_argument("--steps", help="comma-separated order of factors (default prompt,judge,reference,truncation,reasoning)")
    p.add_argument("--items", type=int, help="re-judge this many linked items (question by question over the categories)")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--reverse", action="store_true", help="the reverse ladder: B's answers judged A's way")
    p.add_argument("--report", type=Path, metavar="FILE",
                   help="also write the self-contained HTML report (gap, setup table, ladder waterfall)")
    p.set_defaults(func=cmd_attribute)
