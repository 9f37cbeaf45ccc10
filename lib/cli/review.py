"""``agreement``, ``report``, ``flags``: reading the judges against each other."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from lib.analysis import agreement as agreement_lib
from lib.analysis import flags as flags_lib
from lib.cli.common import open_store, print_frame, split_list
from lib.render.safe_text import csv_text


def cmd_agreement(args) -> int:
    store = open_store(args, read_only=True)
    judges = split_list(args.judges)
    agreement_lib.check_judges(store, judges, minimum=2)
    note = agreement_lib.AGREEMENT_NOTE
    if args.ci:
        from lib.analysis import agreement_ci

        df = agreement_ci.agreement_ci(store, judges, bench=args.bench, model=args.model, turn=args.turn,
                                       category=args.category, n_boot=args.boot, seed=args.seed)
        note = " ".join(x for x in (note, df.attrs["note"], df.attrs["warning"]) if x)
    else:
        df = agreement_lib.agreement(store, judges, bench=args.bench, model=args.model, turn=args.turn,
                                     category=args.category)
    print_frame(df, args.format, note)  # JSON at full float precision, NaN -> null (``records``)
    return 0


def cmd_report(args) -> int:
    from lib.reports import build_report

    judges = split_list(args.compare)
    text = build_report(open_store(args, read_only=True), judges, bench=args.bench, model=args.model, turn=args.turn,
                        category=args.category, top=args.top)
    args.out.write_text(text, encoding="utf-8")
    print(f"Wrote {args.out} ({len(text.encode()) / 1e6:.1f} MB): {' vs '.join(judges)}; opens offline.")
    return 0


def cmd_flags(args) -> int:
    """Exit code 0 (flags are findings to review, not errors)."""
    found = flags_lib.all_flags(open_store(args, read_only=True), bench=args.bench, judge=args.judge,
                                only=split_list(args.flag) or None)
    if args.format == "json":
        rows = []
        for df in found.values():
            rows.extend(json.loads(df.to_json(orient="records", force_ascii=False)))
        print(json.dumps(rows, ensure_ascii=False, indent=1))
        return 0
    if args.format == "csv":
        frames = [df[flags_lib.BASE_COLUMNS] for df in found.values() if not df.empty]
        out = pd.concat(frames) if frames else pd.DataFrame(columns=flags_lib.BASE_COLUMNS)
        print(csv_text(out).rstrip("\n"))
        return 0
    parts = [flags_lib.flag_counts(found).to_string(index=False)]
    for name, df in found.items():
        if df.empty:
            continue
        parts.append(f"\n== {name}: {len(df)} row(s) — {flags_lib.FLAGS[name]}\n"
                     + flags_lib.summarize(df).to_string(index=False))
        shown = df[["bench", "question_id", "turn", "model", "judge", "sample", "score", "evidence", "link"]].head(
            args.limit)
        parts.append(shown.to_string(index=False, max_colwidth=90))
        if len(df) > args.limit:
            parts.append(f"… {len(df) - args.limit} more (--limit, or --format json for all)")
    print("\n".join(parts))
    return 0


def register(sub, parents) -> None:
    db, fmt = parents["db"], parents["fmt"]
    p = sub.add_parser("agreement", parents=[db, fmt], help="how far judges agree on the same items, per judge pair")
    p.add_argument("--judges", required=True, help="comma-separated judge names (at least two), e.g. gpt-4o,gpt-4.1")
    p.add_argument("--bench", help="only this bench")
    p.add_argument("--turn", type=int, choices=(1, 2), help="only this turn")
    p.add_argument("--model", help="only this answering model")
    p.add_argument("--category", help="only this question category")
    p.add_argument("--ci", action="store_true",
                   help="add 95%% intervals (S_ci_low, S_ci_high per statistic S) and n_questions: a cluster "
                        "bootstrap over questions, calibrated in bench/calibrate_agreement.py")
    p.add_argument("--boot", type=int, default=2000, help="with --ci: bootstrap replicates (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="with --ci: the bootstrap's seed (default 0)")
    p.set_defaults(func=cmd_agreement)

    p = sub.add_parser("report", parents=[db], help="a self-contained HTML report comparing judges")
    p.add_argument("--compare", required=True, help="judges to compare, comma-separated (A,B[,C...])")
    p.add_argument("--out", type=Path, required=True, help="HTML file to write")
    p.add_argument("--bench")
    p.add_argument("--model")
    p.add_argument("--turn", type=int)
    p.add_argument("--category")
    p.add_argument("--top", type=int, default=15, help="how many of the largest disagreements to include")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("flags", parents=[db, fmt], help="flags on stored data (no API calls): empty answers scored "
                                                       "high, reference leaks, single-bracket and out-of-range "
                                                       "ratings, Swallow turn-2 conditioning and truncation")
    p.add_argument("--flag", help="comma-separated flag names (default: all)")
    p.add_argument("--bench", help="only this bench")
    p.add_argument("--judge", help="only this judge")
    p.add_argument("--limit", type=int, default=10, help="table format: rows shown per flag (default 10)")
    p.set_defaults(func=cmd_flags)
