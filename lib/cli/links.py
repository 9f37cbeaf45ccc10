"""``links``, ``aliases``: the same question across benches and the same model under several names."""
from __future__ import annotations

import json
import sys

from lib.analysis import aliases as aliases_lib
from lib.analysis import linking
from lib.cli.common import frame_out, open_store
from lib.errors import UsageError


def _records(df) -> list[dict]:
    out = []
    for row in df.astype(object).to_dict(orient="records"):
        out.append({k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()})
    return out


def cmd_links(args) -> int:
    store = open_store(args)
    if args.action in ("set", "remove"):
        if len(args.refs) != 2:
            raise UsageError(f"links {args.action} needs two questions: BENCH_A:QID BENCH_B:QID")
        if args.action == "set":
            link = linking.set_link(store, *args.refs)
            if args.format == "json":
                print(json.dumps(link, ensure_ascii=False))
            else:
                print(f"Linked {link['bench_a']}:{link['question_id_a']} and {link['bench_b']}:{link['question_id_b']} "
                      f"(manual; similarity {link['similarity']:.3f}"
                      + (f", turns {link['edited_turns']} differ" if link["edited_turns"] else "") + ").")
            return 0
        if not linking.remove_link(store, *args.refs):
            raise UsageError(f"There is no link between {args.refs[0]} and {args.refs[1]}. "
                             "See python -m lib.cli links --a BENCH --b BENCH.")
        print(f"Removed the link between {args.refs[0]} and {args.refs[1]}; automatic linking will not "
              "link again (links set makes it by hand).")
        return 0
    if args.refs:
        raise UsageError("links takes --a BENCH --b BENCH, or set/remove BENCH_A:QID BENCH_B:QID.")
    if not args.a or not args.b:
        raise UsageError("links needs --a BENCH and --b BENCH (benches: "
                         + ", ".join(linking.benches_with_questions(store)) + ").")
    if args.auto:
        counts = linking.link_benches(store, args.a, args.b)
        print("auto-linked: " + ", ".join(f"{k} {v}" for k, v in counts.items()), file=sys.stderr)
    df = linking.links(store, args.a, args.b)
    if args.format == "json":
        print(json.dumps(_records(df), ensure_ascii=False, indent=1))
    elif args.format == "csv":
        print(frame_out(df.assign(edited_turns=df["edited_turns"].map(lambda v: " ".join(map(str, v)))), "csv"))
    else:
        s = linking.link_summary(store, args.a, args.b)
        note = (f"{s['linked']} linked ({s['exact']} exact, {s['edited']} edited, {s['fuzzy']} fuzzy, {s['manual']} "
                f"manual) of {s['questions_a']} questions in {args.a} and {s['questions_b']} in {args.b}. Edited and "
                "fuzzy links differ in the turns listed: check them (the Compare page shows the diff).")
        print(frame_out(df, "table", note))
    return 0


def cmd_aliases(args) -> int:
    store = open_store(args)
    if args.action == "set":
        if len(args.names) != 2:
            raise UsageError("aliases set needs NAME CANONICAL")
        target = aliases_lib.set_alias(store, *args.names)
        print(f"{args.names[0]} -> {target} (manual)")
        return 0
    if args.action == "remove":
        if len(args.names) != 1:
            raise UsageError("aliases remove needs NAME")
        if aliases_lib.remove_alias(store, args.names[0]):
            print(f"{args.names[0]} stands for itself again; automatic aliasing will leave it so.")
        else:
            print(f"{args.names[0]} has no alias; nothing changed.")
        return 0
    if args.names:
        raise UsageError("aliases takes no names unless set NAME CANONICAL or remove NAME.")
    df = aliases_lib.aliases(store)
    if args.format == "json":
        print(json.dumps(_records(df), ensure_ascii=False, indent=1))
    else:
        print(frame_out(df, args.format, "method auto/manual: in force; suggested: confirm with "
                                         "python -m lib.cli aliases set NAME CANONICAL"))
    return 0


def register(sub, parents) -> None:
    db, fmt = parents["db"], parents["fmt"]
    p = sub.add_parser("links", parents=[db, fmt],
                       help="question links between two benches (links --a A --b B [--auto]; links set|remove "
                            "BENCH_A:QID BENCH_B:QID)")
    p.add_argument("action", nargs="?", choices=("set", "remove"), help="set or remove one link by hand")
    p.add_argument("refs", nargs="*", help="BENCH_A:QID BENCH_B:QID (with set / remove)")
    p.add_argument("--a", help="bench A")
    p.add_argument("--b", help="bench B")
    p.add_argument("--auto", action="store_true", help="compute the automatic links first (manual links are kept)")
    p.set_defaults(func=cmd_links)

    p = sub.add_parser("aliases", parents=[db, fmt],
                       help="model name aliases and suggestions (aliases set NAME CANONICAL; aliases remove NAME)")
    p.add_argument("action", nargs="?", choices=("set", "remove"))
    p.add_argument("names", nargs="*", help="NAME CANONICAL (set) or NAME (remove)")
    p.set_defaults(func=cmd_aliases)
