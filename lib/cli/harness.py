"""``harness-diff``, ``attribute``: how two runs (e.g. the JA harness and Swallow on one model) were set up,
and which judge-side factor moves the score how much."""
from __future__ import annotations

import json

import pandas as pd

from lib.analysis import harness_diff as diff_lib
from lib.analysis.selectors import parse_selector
from lib.cli.common import frame_out, open_store


def cmd_harness_diff(args) -> int:
    store = open_store(args)
    df = diff_lib.harness_diff(store, parse_selector(args.a), parse_selector(args.b))
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
