"""``ingest``, ``sources``, ``remove``, ``scores``: getting data in and reading means out (by either rule)."""
from __future__ import annotations

import sys

from lib import harness as H
from lib.analysis import queries
from lib.cli.common import frame_out, open_store, print_frame
from lib.ingest.importer import ingest, remove_source


def cmd_ingest(args) -> int:
    report = ingest(open_store(args), args.paths, skip_bad_lines=args.skip_bad_lines)
    print(report.summary())
    return 1 if report.failed else 0


def cmd_scores(args) -> int:
    by = queries.parse_group_keys(args.by)
    where = {k: v for k, v in (("bench", args.bench), ("harness", args.harness)) if v}
    df = queries.scores(open_store(args, read_only=True), by, where, rule=args.rule)
    print_frame(df, args.format, queries.rule_note(args.rule))
    return 0


def cmd_sources(args) -> int:
    df = queries.sources(open_store(args, read_only=True))
    if args.format == "table":
        df = df[["source_id", "harness", "kind", "bench", "file_name", "rows_imported", "rows_skipped", "warnings"]]
    print(frame_out(df, args.format))
    return 0


def cmd_remove(args) -> int:
    if not remove_source(open_store(args), args.source_id):
        print(f"No source {args.source_id}. See `python -m lib.cli sources`.", file=sys.stderr)
        return 2
    print(f"Removed source {args.source_id} and everything imported from it.")
    return 0


def register(sub, parents) -> None:
    db, fmt = parents["db"], parents["fmt"]
    p = sub.add_parser("ingest", parents=[db], help="import FastChat / Swallow files or folders")
    p.add_argument("paths", nargs="+", help="files or folders (a FastChat data root, a bench folder, lighteval outputs)")
    p.add_argument("--skip-bad-lines", action="store_true",
                   help="import the valid lines and record the bad ones in the source's report")
    p.set_defaults(func=cmd_ingest)

    p = sub.add_parser("scores", parents=[db, fmt], help="mean score and n per group")
    p.add_argument("--by", default="judge,model,turn", help=f"comma-separated: {','.join(queries.GROUP_KEYS)}")
    p.add_argument("--bench", help="only this bench")
    p.add_argument("--harness", choices=H.names(imported=True), help="only this harness")
    p.add_argument("--rule", choices=queries.RULES, default="item",
                   help="item (default): mean of item scores, repeats and Swallow samples averaged per item, "
                        "failures left out; harness: each harness's own rule (FastChat show_result.py: rows, "
                        "duplicates counted again, -1 dropped; Swallow: its results file x 10)")
    p.set_defaults(func=cmd_scores)

    p = sub.add_parser("sources", parents=[db, fmt], help="list imported files")
    p.set_defaults(func=cmd_sources)

    p = sub.add_parser("remove", parents=[db], help="remove one source and all its rows")
    p.add_argument("source_id", type=int)
    p.set_defaults(func=cmd_remove)
