"""``items``: what the Item view shows, per judged item, for scripts and notebooks."""
from __future__ import annotations

import json

from lib.analysis import item_view
from lib.cli.common import open_store
from lib.render.safe_text import csv_text


def flat(item: dict) -> dict:
    """One CSV row: the item's fields, then ``score:<judge>`` and ``rationale:<judge>`` per judge."""
    row = {k: v for k, v in item.items() if k != "judges"}
    for j in item["judges"]:
        row[f"score:{j['judge']}"] = j["score"]
        row[f"rationale:{j['judge']}"] = j["rationale"]
    return row


def cmd_items(args) -> int:
    found = item_view.items(open_store(args, read_only=True), bench=args.bench, harness=args.harness,
                            model=args.model, judge=args.judge, question_id=args.question_id, turn=args.turn)
    if args.format == "jsonl":
        for item in found:
            print(json.dumps(item, ensure_ascii=False))
    elif args.format == "csv":
        import pandas as pd

        print(csv_text(pd.DataFrame([flat(i) for i in found])).rstrip("\n"))
    else:
        print(json.dumps(found, ensure_ascii=False, indent=1))
    return 0


def register(sub, parents) -> None:
    p = sub.add_parser("items", parents=[parents["db"]],
                       help="per judged item: the question the judge saw (and the question file's, if it differs), "
                            "the answer, each judge's score and rationale")
    p.add_argument("--bench")
    p.add_argument("--harness")
    p.add_argument("--model")
    p.add_argument("--judge", help="only items this judge scored (every judge of them is listed)")
    p.add_argument("--question-id")
    p.add_argument("--turn", type=int)
    p.add_argument("--format", choices=("json", "jsonl", "csv"), default="json")
    p.set_defaults(func=cmd_items)
