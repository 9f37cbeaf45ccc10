"""``verdict``, ``verdicts``: the analyst's own verdicts (judge ``human:<author>``), their history, review queue,
export, and the MT-Bench pairwise agreement of imported human judgments."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from lib.cli.common import frame_out, open_store
from lib.judging import human


def cmd_verdict(args) -> int:
    store = open_store(args)
    clear = [f for f in ("score", "label", "note") if getattr(args, f"clear_{f}")]
    row = human.record(store, author=args.author, bench=args.bench, question_id=args.question, turn=args.turn,
                       model=args.model, sample=args.sample, score=args.score, label=args.label, note=args.note,
                       clear=clear)
    given = human.describe(row)
    what = ", ".join(([given] if given != "nothing" else []) + [f"cleared the {f}" for f in row["cleared"]])
    now = human.latest(store, author=row["author"], bench=row["bench"], question_id=row["question_id"],
                       turn=row["turn"], model=row["model"], sample=row["sample"])
    print(f"Recorded {human.judge_name(row['author'])}: {what} on {row['bench']} question {row['question_id']} "
          f"turn {row['turn']} model {row['model']}" + (f" sample {row['sample']}" if row["sample"] else "")
          + f". Your verdict there now: {human.describe(now.iloc[0] if len(now) else None)}.")
    return 0


def cmd_export(args) -> int:
    if args.inspect:
        if not (args.author and args.bench and args.model):
            print("--inspect needs --author, --bench and --model (one Inspect log is one task and one model)",
                  file=sys.stderr)
            return 2
        records = human.inspect_scores(open_store(args, read_only=True), author=args.author, bench=args.bench,
                                       model=args.model, turn=args.turn)
        args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        print(f"Wrote {len(records)} score(s) to {args.out} for Inspect AI's precomputed_scores scorer, e.g. "
              f"score(log, precomputed_scores({str(args.out)!r})) in Python")
        return 0
    n = human.export_jsonl(open_store(args), args.out, author=args.author)
    print(f"Wrote {n} verdict(s) to {args.out}. Import them elsewhere with: python -m lib.cli ingest {args.out}")
    return 0


def cmd_list(args) -> int:
    store = open_store(args)
    if args.all:
        df = human.history(store, author=args.author, bench=args.bench)
    else:
        df = human.latest(store, author=args.author, bench=args.bench)
    print(frame_out(df, args.format))
    return 0


def cmd_queue(args) -> int:
    q = human.review_queue(open_store(args), args.author, bench=args.bench, n=args.n)
    done = int(q["decided"].sum()) if len(q) else 0
    print(frame_out(q, args.format))
    print(f"{done} of {len(q)} decided by {args.author}.", file=sys.stderr)
    return 0


def cmd_pair_agreement(args) -> int:
    df = human.pair_agreement(open_store(args), bench=args.bench)
    print(frame_out(df, args.format, "As FastChat's compute_agreement.py: votes keyed by question and model pair; "
                                     "'without ties' leaves out pairs where either vote is a tie."))
    return 0


def register(sub, parents) -> None:
    db, fmt = parents["db"], parents["fmt"]
    p = sub.add_parser("verdict", parents=[db], help="record your own verdict on an item (judge human:<author>)",
                       description="Record your verdict on an item. It counts as judge human:<author>. A field you "
                                   "leave out keeps your earlier value on this item (a label alone keeps your "
                                   "score); --clear-score/--clear-label/--clear-note empty one.")
    p.add_argument("--bench", required=True)
    p.add_argument("--question", required=True, help="question_id")
    p.add_argument("--turn", type=int, required=True, choices=(1, 2))
    p.add_argument("--model", required=True, help="the answering model")
    p.add_argument("--sample", type=int, default=0, help="Swallow sample 0-4 (default 0)")
    p.add_argument("--score", type=float, help="1-10")
    p.add_argument("--label", help="e.g. " + ", ".join(repr(x) for x in human.DEFAULT_LABELS[:3]) + ", …")
    p.add_argument("--note")
    for field in ("score", "label", "note"):
        p.add_argument(f"--clear-{field}", action="store_true",
                       help=f"empty your earlier {field} (a verdict without --{field} keeps it)")
    p.add_argument("--author", required=True, help="your name: the verdict counts as judge human:<author>")
    p.set_defaults(func=cmd_verdict)

    p = sub.add_parser("verdicts", help="list, queue, export verdicts; pairwise human agreement")
    vsub = p.add_subparsers(dest="verdicts_command", required=True)
    e = vsub.add_parser("export", parents=[db], help="write verdicts as JSONL (import elsewhere with ingest)")
    e.add_argument("--out", type=Path, required=True)
    e.add_argument("--author", help="only this author's verdicts")
    e.add_argument("--inspect", action="store_true",
                   help="write the author's current scores on one --bench and --model (and --turn) as Inspect AI "
                        "precomputed_scores JSONL (id, value, epoch, explanation, metadata)")
    e.add_argument("--bench")
    e.add_argument("--model")
    e.add_argument("--turn", type=int)
    e.set_defaults(func=cmd_export)
    ls = vsub.add_parser("list", parents=[db, fmt],
                         help="current verdicts: each field the author's latest value for it (--all: every row as "
                              "recorded)")
    ls.add_argument("--author")
    ls.add_argument("--bench")
    ls.add_argument("--all", action="store_true", help="every row, not only the latest per author and item")
    ls.set_defaults(func=cmd_list)
    qu = vsub.add_parser("queue", parents=[db, fmt], help="the N largest disagreements, and which you decided")
    qu.add_argument("--author", required=True)
    qu.add_argument("--bench", required=True)
    qu.add_argument("--n", type=int, default=20)
    qu.set_defaults(func=cmd_queue)
    ag = vsub.add_parser("agreement", parents=[db, fmt],
                         help="agreement of imported pairwise human judgments (MT-Bench paper table, per turn)")
    ag.add_argument("--bench")
    ag.set_defaults(func=cmd_pair_agreement)
