"""Command line: ``python -m lib.cli {ingest,scores,sources,remove,agreement,report,rejudge,probe,probe-runs,flags}``.

Exit codes: 0 success, 1 bad input (nothing imported), 2 usage or unknown format,
3 the database is in use by another process. ``probe``: 0 every deciding probe passed, 1 a canary or
position-swap probe failed or could not be evaluated (2 and 3 as above; a refused API key is 2).
``flags`` always exits 0 on success: flags are findings to review.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from . import agreement as agreement_lib
from . import queries
from .errors import DatabaseBusyError, FormatError, IngestError, JudgeLensError
from .ingest import ingest, remove_source
from .store import Store, default_db_path


def _frame_out(df, fmt: str, note: str | None = None) -> str:
    if fmt == "json":
        return json.dumps(json.loads(df.to_json(orient="records", date_format="iso")), ensure_ascii=False, indent=1)
    if fmt == "csv":
        return df.to_csv(index=False).rstrip("\n")
    if df.empty:
        return "(nothing)"
    text = df.to_string(index=False, float_format=lambda v: f"{v:.4f}")
    return f"{text}\n\n{note}" if note else text


def cmd_ingest(args) -> int:
    store = Store(args.db)
    report = ingest(store, args.paths, skip_bad_lines=args.skip_bad_lines)
    print(report.summary())
    return 0


def cmd_scores(args) -> int:
    store = Store(args.db)
    by = queries.parse_group_keys(args.by)
    where = {k: v for k, v in (("bench", args.bench), ("harness", args.harness)) if v}
    df = queries.scores(store, by, where)
    print(_frame_out(df, args.format, queries.MEAN_RULE))
    if args.format != "table":
        print(queries.MEAN_RULE, file=sys.stderr)
    return 0


def cmd_sources(args) -> int:
    store = Store(args.db)
    df = queries.sources(store)
    if args.format == "table":
        df = df[["source_id", "harness", "kind", "bench", "file_name", "rows_imported", "rows_skipped", "warnings"]]
    print(_frame_out(df, args.format))
    return 0


def cmd_remove(args) -> int:
    store = Store(args.db)
    if not remove_source(store, args.source_id):
        print(f"No source {args.source_id}. See `python -m lib.cli sources`.", file=sys.stderr)
        return 2
    print(f"Removed source {args.source_id} and everything imported from it.")
    return 0


def cmd_agreement(args) -> int:
    store = Store(args.db)
    judges = [j.strip() for j in args.judges.split(",") if j.strip()]
    agreement_lib.check_judges(store, judges, minimum=2)
    df = agreement_lib.agreement(store, judges, bench=args.bench, model=args.model, turn=args.turn,
                                 category=args.category)
    if args.format == "json":  # full float precision (to_json would round to 10 digits); NaN -> null
        records = [{k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
                   for row in df.astype(object).to_dict(orient="records")]
        print(json.dumps(records, ensure_ascii=False, indent=1))
    else:
        print(_frame_out(df, args.format, agreement_lib.AGREEMENT_NOTE))
    if args.format != "table":
        print(agreement_lib.AGREEMENT_NOTE, file=sys.stderr)
    return 0


def cmd_report(args) -> int:
    from .report import build_report

    store = Store(args.db)
    judges = [j.strip() for j in args.compare.split(",") if j.strip()]
    text = build_report(store, judges, bench=args.bench, model=args.model, turn=args.turn, category=args.category,
                        top=args.top)
    args.out.write_text(text, encoding="utf-8")
    print(f"Wrote {args.out} ({len(text.encode()) / 1e6:.1f} MB): {' vs '.join(judges)}; opens offline.")
    return 0


def cmd_rejudge(args) -> int:
    from .judge_client import cli_rejudge

    return cli_rejudge(args, Store(args.db))


def cmd_probe(args) -> int:
    from .probes import cli_probe

    return cli_probe(args, Store(args.db))


def cmd_probe_runs(args) -> int:
    from .probes import cli_probe_runs

    return cli_probe_runs(args, Store(args.db))


def cmd_flags(args) -> int:
    from .flags import cli_flags

    return cli_flags(args, Store(args.db))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lib.cli", description="JudgeLens: MT-Bench judge outputs in DuckDB.")
    db = argparse.ArgumentParser(add_help=False)
    db.add_argument("--db", type=Path, default=None,
                    help=f"DuckDB file (default: $JUDGELENS_DB or {default_db_path()})")
    fmt = argparse.ArgumentParser(add_help=False)
    fmt.add_argument("--format", choices=("table", "csv", "json"), default="table")
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("ingest", parents=[db], help="import FastChat / Swallow files or folders")
    p.add_argument("paths", nargs="+", help="files or folders (a FastChat data root, a bench folder, lighteval outputs)")
    p.add_argument("--skip-bad-lines", action="store_true",
                   help="import the valid lines and record the bad ones in the source's report")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("scores", parents=[db, fmt], help="mean score and n per group")
    p.add_argument("--by", default="judge,model,turn", help=f"comma-separated: {','.join(queries.GROUP_KEYS)}")
    p.add_argument("--bench", help="only this bench")
    p.add_argument("--harness", choices=("fastchat", "swallow"), help="only this harness")
    p.set_defaults(func=cmd_scores)

    p = sub.add_parser("sources", parents=[db, fmt], help="list imported files")
    p.set_defaults(func=cmd_sources)

    p = sub.add_parser("remove", parents=[db], help="remove one source and all its rows")
    p.add_argument("source_id", type=int)
    p.set_defaults(func=cmd_remove)

    p = sub.add_parser("agreement", parents=[db, fmt], help="how far judges agree on the same items, per judge pair")
    p.add_argument("--judges", required=True, help="comma-separated judge names (at least two), e.g. gpt-4o,gpt-4.1")
    p.add_argument("--bench", help="only this bench")
    p.add_argument("--turn", type=int, choices=(1, 2), help="only this turn")
    p.add_argument("--model", help="only this answering model")
    p.add_argument("--category", help="only this question category")
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

    from .judge_client import add_rejudge_arguments

    p = sub.add_parser("rejudge", parents=[db], help="re-judge items with a template through an OpenAI-compatible "
                                                      "API (key from OPENAI_API_KEY); stored as a new judge")
    add_rejudge_arguments(p)
    p.set_defaults(func=cmd_rejudge)

    from .probes import add_probe_arguments

    p = sub.add_parser("probe", parents=[db, fmt],
                       help="probe a judge template (canaries, section-order ablation, position swap, repeat noise) "
                            "through an OpenAI-compatible API (key from OPENAI_API_KEY); exit 1 if a probe fails")
    add_probe_arguments(p)
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser("probe-runs", parents=[db, fmt], help="list stored probe runs, or compare two")
    p.add_argument("--compare", nargs=2, type=int, metavar=("RUN_A", "RUN_B"),
                   help="what changed from run A to run B (fixed / broke)")
    p.set_defaults(func=cmd_probe_runs)

    p = sub.add_parser("flags", parents=[db, fmt], help="flags on stored data (no API calls): empty answers scored "
                                                       "high, reference leaks, single-bracket and out-of-range "
                                                       "ratings, Swallow turn-2 conditioning and truncation")
    p.add_argument("--flag", help="comma-separated flag names (default: all)")
    p.add_argument("--bench", help="only this bench")
    p.add_argument("--judge", help="only this judge")
    p.add_argument("--limit", type=int, default=10, help="table format: rows shown per flag (default 10)")
    p.set_defaults(func=cmd_flags)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except IngestError as exc:
        print("\n".join(str(p) for p in exc.problems), file=sys.stderr)
        print(f"Nothing was imported. {exc.hint}", file=sys.stderr)
        return 1
    except DatabaseBusyError as exc:
        print(exc.message, file=sys.stderr)
        return 3
    except (FormatError, ValueError) as exc:
        print(str(exc), file=sys.stderr)
        return 2
    except JudgeLensError as exc:
        print(exc.message, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
