"""``search``: find text in questions, answers, rationales, rendered judge prompts and references."""
from __future__ import annotations

import json
import sys

from lib.analysis import search as search_lib
from lib.cli.common import frame_out, open_store, split_list

JSON_KEYS = ["field", "bench", "question_id", "turn", "model", "judge", "sample", "score", "snippet"]


def query_from_args(args) -> search_lib.SearchQuery:
    return search_lib.SearchQuery(
        text=args.query, fields=tuple(split_list(args.fields)) or search_lib.FIELDS, regex=args.regex,
        bench=args.bench, harness=args.harness, judges=tuple(split_list(args.judge)), model=args.model,
        category=args.category, turn=args.turn, score_min=args.score_min, score_max=args.score_max,
        parse_status=args.parse_status, flags=tuple(split_list(args.flag)), disagree_min=args.disagree_min)


def cmd_search(args) -> int:
    store = open_store(args)
    q = query_from_args(args)
    if args.count:
        print(json.dumps({"count": search_lib.count(store, q, time_limit=args.time_limit)}))
        return 0
    df = search_lib.search(store, q, limit=args.limit, offset=args.offset, time_limit=args.time_limit)
    if args.format == "json":
        records = [{k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
                   for row in df[JSON_KEYS].astype(object).to_dict(orient="records")]
        for r in records:
            r["turn"] = int(r["turn"])
            r["sample"] = None if r["sample"] is None else int(r["sample"])
        print(json.dumps(records, ensure_ascii=False, indent=1))
        return 0
    print(frame_out(df[JSON_KEYS], args.format))
    if args.format == "table" and len(df) == args.limit:
        print(f"\n(first {args.limit} from offset {args.offset}; --count for the total, --offset for more)",
              file=sys.stderr)
    return 0


def register(sub, parents) -> None:
    db, fmt = parents["db"], parents["fmt"]
    p = sub.add_parser("search", parents=[db, fmt],
                       help="find text in questions, answers, rationales, judge prompts and references "
                            "(case-insensitive, NFKC: full-width = half-width)")
    p.add_argument("query", help=f"text to find (a substring; with --regex an RE2 regular expression), at most "
                                      f"{search_lib.MAX_PATTERN_CHARS:,} characters")
    p.add_argument("--in", dest="fields", default=",".join(search_lib.FIELDS),
                   help=f"comma-separated fields (default: all): {','.join(search_lib.FIELDS)}")
    p.add_argument("--regex", action="store_true", help="QUERY is a regular expression: " + search_lib.REGEX_HELP)
    p.add_argument("--time-limit", type=float, default=search_lib.SEARCH_SECONDS, metavar="SECONDS",
                   help=f"stop a query that runs longer (default {search_lib.SEARCH_SECONDS:g}; 0: no limit)")
    p.add_argument("--bench")
    p.add_argument("--harness")
    p.add_argument("--judge", help="judge name(s), comma-separated")
    p.add_argument("--model", help="answering model")
    p.add_argument("--category")
    p.add_argument("--turn", type=int)
    p.add_argument("--score-min", type=float, help="judgment score at least this (1-10)")
    p.add_argument("--score-max", type=float, help="judgment score at most this (1-10)")
    p.add_argument("--parse-status", choices=search_lib.PARSE_STATUSES)
    p.add_argument("--flag", help="only items a stored-data flag found (comma-separated flag names)")
    p.add_argument("--disagree", dest="disagree_min", type=float, metavar="K",
                   help="only items whose judges' scores differ by at least K")
    p.add_argument("--limit", type=int, default=50)
    p.add_argument("--offset", type=int, default=0)
    p.add_argument("--count", action="store_true", help='print {"count": N}: the number of matching records')
    p.set_defaults(func=cmd_search)
