"""``harness-diff``, ``attribute``: how two runs (e.g. the JA harness and Swallow on one model) were set up,
and which judge-side factor moves the score how much."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from lib.analysis import harness_diff as diff_lib
from lib.analysis.selectors import parse_selector
from lib.cli.common import frame_out, open_store
from lib.errors import UsageError


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


def _stated(value):
    """A stated system prompt: None when the option is absent (``...``: not stated), '' = send none."""
    return ... if value is None else (value or None)


def cmd_attribute(args) -> int:
    import os
    import sys

    from lib.attribution import ladder as L
    from lib.cli.common import judge_config
    from lib.errors import LadderInterrupted
    from lib.judging.config import resolve_api_key
    from lib.judging.jobs import BackgroundJob

    store = open_store(args)
    a, b = parse_selector(args.a), parse_selector(args.b)
    pa, pb = _stated(args.a_system_prompt), _stated(args.b_system_prompt)
    if args.reverse:
        a, b, pa, pb = b, a, pb, pa
    if bool(args.answer_base_url) != bool(args.answer_model):
        raise UsageError("Give both --answer-base-url and --answer-model (the endpoint serving the model under "
                         "test), or neither (judge-side steps only).")
    answer = None
    if args.answer_base_url:
        answer = L.AnswerEndpoint(args.answer_base_url, args.answer_model,
                                  api_key=os.environ.get(ANSWER_KEY_ENV) or resolve_api_key(None),
                                  price_per_1k_input=args.answer_price_in, price_per_1k_output=args.answer_price_out,
                                  concurrency=args.answer_concurrency)
    ladder = L.Attribution(store, a, b, judge_config(args), answer=answer, a_system_prompt=pa, b_system_prompt=pb,
                           order=args.order or args.steps, both_orders=args.both_orders, shapley=args.shapley or 0,
                           items=args.items)
    est = ladder.prepare()
    per = est["per_step"]
    print("Cost before any call (per order and step: requests to send; identical ones counted once):",
          file=sys.stderr)
    for r in per.to_dict(orient="records"):
        print(f"  {r['order']:>6} {r['step']:<17} generation {r['gen_to_send']:>5} of {r['gen_requests']:>5}"
              f"   judge {r['judge_to_send']:>5} of {r['judge_requests']:>5}", file=sys.stderr)
    print(L.estimate_text(est), file=sys.stderr)
    if est["to_send"] and not args.yes:
        print(f"Nothing sent. Add --yes to send these {est['to_send']} request(s).", file=sys.stderr)
        return 0
    last = [""]

    def progress(text: str, done: int, total: int) -> None:
        if text != last[0] or done == total:
            last[0] = text
            print(f"  {text} {done}/{total}", file=sys.stderr)

    job = BackgroundJob(lambda report, cancel: ladder.run(judge_api_key=resolve_api_key(None),
                                                          concurrency=args.concurrency, progress=report,
                                                          cancel=cancel),
                        name="judgelens-attribute", on_progress=progress).start()
    interrupted = job.wait_interruptibly(lambda: print(
        "Cancelling: waiting for the requests in flight, then keeping every answer that arrived ...", file=sys.stderr))
    try:
        result = job.outcome()
    except LadderInterrupted as exc:
        print(str(exc), file=sys.stderr)
        return 130
    if interrupted:
        return 130
    if args.report:
        from lib.reports import harness_report

        text = harness_report(store, a, b, swallow_samples="mean", attribution=result)
        args.report.write_text(text, encoding="utf-8")
        print(f"Wrote {args.report}: the gap, the setup tables and the waterfall(s); opens offline.", file=sys.stderr)
    flagged = result.interactions[result.interactions["interacts"]] if not result.interactions.empty else None
    if flagged is not None and len(flagged):
        print("Interactions (a factor's effect changes between orders by more than its interval): "
              + ", ".join(f"{r.factor} {r.lowest:+.2f} to {r.highest:+.2f}" for r in flagged.itertuples()),
              file=sys.stderr)
    if args.format == "json":
        print(json.dumps(L.records(result), ensure_ascii=False, indent=1))
    elif args.format == "csv":
        print(frame_out(pd.DataFrame(L.records(result)), "csv"))
    else:
        parts = []
        for label, table in result.orders.items():
            parts.append(frame_out(table, "table", f"{label}: from {table.attrs['label_a']}\n"
                                                   f"        to   {table.attrs['label_b']}"))
        if result.shapley is not None:
            parts.append(frame_out(result.shapley, "table", "Shapley-style average over the orders run"))
        if not result.interactions.empty:
            parts.append(frame_out(result.interactions, "table", "Effects between orders"))
        print("\n\n".join(parts) + "\n\n" + L.NOTE)
    return 0


ANSWER_KEY_ENV = "ANSWER_API_KEY"


def register_attribute(sub, parents) -> None:
    db, fmt, endpoint = parents["db"], parents["fmt"], parents["endpoint"]
    p = sub.add_parser("attribute", parents=[db, fmt, endpoint],
                       help="put a number on every cause of the gap between two runs: replay, regenerate, then one "
                            "factor at a time (generation: system_prompt, temperature, samples, turn2_context, "
                            "max_tokens; judging: prompt, judge, judge_max_tokens, reference, truncation, "
                            "reasoning), residual. --model/--base-url: the judge endpoint")
    p.add_argument("--a", required=True, help="run A (its answers are re-judged), e.g. harness=fastchat,judge=gpt-4o,model=M")
    p.add_argument("--b", required=True, help="run B (its setup is switched in), e.g. harness=swallow,model=M")
    p.add_argument("--answer-base-url", help="the endpoint serving the model under test (for the generation steps), "
                                             "e.g. http://127.0.0.1:8000/v1; its key: $ANSWER_API_KEY, else "
                                             "$OPENAI_API_KEY")
    p.add_argument("--answer-model", help="the model name that endpoint serves")
    p.add_argument("--answer-price-in", type=float, help="answer endpoint: price per 1k prompt tokens")
    p.add_argument("--answer-price-out", type=float, help="answer endpoint: price per 1k completion tokens")
    p.add_argument("--answer-concurrency", type=int, default=4)
    p.add_argument("--a-system-prompt", help="A's system prompt where its files do not show it ('' for none); a "
                                             "FastChat run needs it for the generation steps")
    p.add_argument("--b-system-prompt", help="B's system prompt where its files do not show it ('' for none)")
    p.add_argument("--order", help="comma-separated factor order (default: " + ",".join(
        ("system_prompt", "temperature", "samples", "turn2_context", "max_tokens", "prompt", "judge",
         "judge_max_tokens", "reference", "truncation", "reasoning")) + "; without an answer endpoint the "
                                                                         "judge-side ones)")
    p.add_argument("--steps", help=argparse_suppress())
    p.add_argument("--both-orders", action="store_true", help="also B's answers made A's way; report interactions")
    p.add_argument("--shapley", type=int, metavar="N", help="also average each factor's effect over N orders "
                                                            "(the cache makes repeated states free)")
    p.add_argument("--items", type=int, help="this many linked items (question by question over the categories)")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--reverse", action="store_true", help="swap A and B: B's answers made A's way")
    p.add_argument("--yes", action="store_true", help="send the requests (without it only the cost is printed)")
    p.add_argument("--report", type=Path, metavar="FILE",
                   help="also write the self-contained HTML report (gap, setup tables, waterfalls)")
    p.set_defaults(func=cmd_attribute)


def argparse_suppress():
    import argparse

    return argparse.SUPPRESS
