"""``compare``, ``pairwise``: the Compare page's paired deltas and the Judge agreement page's pairwise
verdicts on the command line (same lib functions, same numbers)."""
from __future__ import annotations

import sys

import pandas as pd

from lib.analysis import agreement as agreement_lib
from lib.analysis import deltas
from lib.analysis.selectors import SELECTOR_KEYS, describe, parse_selector
from lib.cli.common import frame_out, json_out, open_store, print_frame, print_note, records
from lib.render.safe_text import csv_text

POSITION_COLUMNS = ["bench", "judge", "n", "consistent", "rate", "favors_first", "favors_second"]


def _across_runs(store, a: dict, b: dict, swallow_samples: str) -> bool:
    """Compare two runs on linked questions (lib.analysis.runs) when they are on different benches (e.g. the JA
    harness's ja_mt_bench and Swallow's japanese_mt_bench) or when Swallow's sample 0 is asked for."""
    from lib.analysis import runs
    from lib.errors import UsageError

    if "bench" in a and "bench" in b and a["bench"] != b["bench"]:
        try:
            runs.resolve_run(store, a, "A"), runs.resolve_run(store, b, "B")
        except UsageError as exc:
            raise UsageError(f"A and B are on different benches ({a['bench']!r} vs {b['bench']!r}): across benches "
                             "one run is compared with another on linked questions, so each side must name one run "
                             f"(harness, judge, model). {exc}") from None
        return True
    try:
        ra, rb = runs.resolve_run(store, a, "A"), runs.resolve_run(store, b, "B")
    except UsageError:
        if swallow_samples != "mean":
            raise
        return False
    return ra.bench != rb.bench or swallow_samples != "mean"


def runs_note(df) -> str:
    from lib.analysis.runs import PAIRING_NOTE

    links = ", ".join(f"{v} {k}" for k, v in (df.attrs.get("links") or {}).items()) or "none"
    return (PAIRING_NOTE + f" Linked questions paired: {links}; Swallow samples: {df.attrs.get('swallow_samples')}"
            + (f"; {df.attrs['excluded']} item(s) excluded" if df.attrs.get("excluded") else "") + ".")


def cmd_compare(args) -> int:
    a, b = parse_selector(args.a), parse_selector(args.b)
    levels = (args.level,) if args.level else deltas.LEVELS
    store = open_store(args, read_only=True)
    across = _across_runs(store, a, b, args.swallow_samples)
    if across:
        from lib.analysis import runs
        from lib.errors import UsageError

        if args.per_model:
            raise UsageError("--per-model compares every model with itself within one bench; across linked benches "
                             "name one model per side.")
        df = runs.compare_runs(store, a, b, levels=levels, swallow_samples=args.swallow_samples,
                               exclude_links=tuple(args.exclude_links.split(",")) if args.exclude_links else ())
    else:
        df = deltas.compare_levels(store, a, b, levels=levels, per_model=args.per_model, seed=args.seed)
    note = (f"A: {describe(a)}. B: {describe(b)}. {df.attrs['label']}.\n"
            + (runs_note(df) + " " if across else "") + deltas.METHOD
            + " Without --level every level is printed, each its own family.")
    if df.empty:
        print(df.attrs.get("note") or "A and B share no items.", file=sys.stderr)
    if args.format == "json":
        print(json_out(records(df)))
    elif args.format == "csv":
        print(csv_text(df).rstrip("\n"))
    else:
        shown = df if args.per_model else df.drop(columns=["model"])
        print(frame_out(shown, "table", note))
    print_note(args.format, note)
    return 0


def position_table(store, *, bench=None, judge=None) -> pd.DataFrame:
    """agreement.position_consistency with the names of the pairwise command: rate = consistency."""
    df = agreement_lib.position_consistency(store, bench=bench, judge=judge).rename(columns={"consistency": "rate"})
    return df[POSITION_COLUMNS]


def cmd_pairwise(args) -> int:
    store = open_store(args, read_only=True)
    rates = agreement_lib.pair_win_rates(store, judge=args.judge, bench=args.bench, policy=args.policy,
                                         baseline=args.baseline)
    if args.baseline:
        rates.insert(3, "baseline", args.baseline)
    rates["policy"] = args.policy
    positions = position_table(store, bench=args.bench, judge=args.judge)
    mode = f"pairwise-baseline (vs {args.baseline})" if args.baseline else "pairwise-all"
    note = (f"Policy {args.policy}: {agreement_lib.PAIR_POLICY_LABELS[args.policy]}. Mode: FastChat show_result.py "
            f"--mode {mode}. One row = one question x turn x model pair. Position consistency: rows without an "
            "error whose two games (A/B swapped) agree; favors_first/favors_second: inconsistent rows leaning to "
            "the model shown first/second.")
    if args.format == "json":
        from lib.analysis.agreement_ci import pairwise_verdict_agreement

        judges = pairwise_verdict_agreement(store, bench=args.bench)
        print(json_out({"policy": args.policy, "baseline": args.baseline, "win_rates": records(rates),
                        "position_consistency": records(positions), "judge_agreement": records(judges)}))
    elif args.format == "csv":  # two tables, one after the other
        print(csv_text(rates) + "\n" + csv_text(positions).rstrip("\n"))
    else:
        print("== win rates\n" + frame_out(rates.drop(columns=["policy"]), "table")
              + "\n\n== position consistency\n" + frame_out(positions, "table", note))
    print_note(args.format, note)
    return 0


def register(sub, parents) -> None:
    db, fmt = parents["db"], parents["fmt"]
    keys = ", ".join(SELECTOR_KEYS)
    p = sub.add_parser("compare", parents=[db, fmt],
                       help="paired A - B deltas per category and turn with t intervals and Holm (the Compare page)")
    p.add_argument("--a", required=True, metavar="SELECTOR",
                   help=f"side A: comma-separated key=value over {keys}, e.g. judge=gpt-4o")
    p.add_argument("--b", required=True, metavar="SELECTOR",
                   help="side B, e.g. judge=gpt-4.1-2025-04-14. A key given on one side only applies to that side; "
                        "items pair on bench, question, turn, and harness, judge and model unless the sides name "
                        "different ones")
    p.add_argument("--per-model", action="store_true",
                   help="compare each model both sides judged separately, each model its own Holm family")
    p.add_argument("--level", choices=deltas.LEVELS,
                   help="only these rows (cell = category x turn); default: every level, each its own family")
    p.add_argument("--seed", type=int, default=0, help="accepted for reproducible scripts; the t method draws nothing")
    p.add_argument("--swallow-samples", choices=("mean", "first"), default="mean",
                   help="Swallow items: the mean of the 5 samples (default) or sample 0 only (like FastChat's one "
                        "sample). Two runs on different benches are paired by linked question (python -m lib.cli "
                        "links)")
    p.add_argument("--exclude-links", metavar="METHODS",
                   help="across linked benches: leave out questions linked this way, e.g. edited,fuzzy")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("pairwise", parents=[db, fmt],
                       help="pairwise verdicts per model (FastChat show_result.py pairwise modes) and position "
                            "consistency per judge (the Judge agreement page)")
    p.add_argument("--bench", help="only this bench")
    p.add_argument("--judge", help="only this judge")
    p.add_argument("--policy", choices=agreement_lib.PAIR_POLICIES, default="fastchat",
                   help="fastchat (default): show_result.py; strict: only swap-consistent verdicts; game: each game")
    p.add_argument("--baseline", metavar="MODEL",
                   help="show_result.py --mode pairwise-baseline: each model against this one")
    p.set_defaults(func=cmd_pairwise)
    register_features(sub, parents)


def cmd_features(args) -> int:
    """Scores split by an answer feature, or (with --a and --b) the paired gap per bin."""
    from lib.analysis import answer_features as feats
    from lib.errors import UsageError

    store = open_store(args, read_only=True)
    names = list(feats.FEATURES) if args.feature == "all" else [args.feature]
    if bool(args.a) != bool(args.b):
        raise UsageError("--a and --b go together: give both for the gap per bin, or neither for the means.")
    parts = []
    if args.a:
        a, b = parse_selector(args.a), parse_selector(args.b)
        across = _across_runs(store, a, b, args.swallow_samples)
        for name in names:
            if across:
                df = feats.harness_gap_by_feature(store, a, b, name, side=args.side,
                                                  swallow_samples=args.swallow_samples)
            else:
                df = feats.compare_by_feature(store, a, b, name, side=args.side)
            parts.append(df)
        note = (f"A: {describe(a)}. B: {describe(b)}. {parts[0].attrs.get('label', '')}. Binned by "
                f"{parts[0].attrs.get('binned_by')}. " + feats.METHOD)
    else:
        with store.read() as cur:
            benches = [args.bench] if args.bench else [r[0] for r in cur.execute(
                "SELECT DISTINCT bench FROM item_scores ORDER BY bench").fetchall()]
        for bench in benches:
            for name in names:
                df = feats.scores_by_feature(store, bench, name, by=args.by)
                parts.append(df.assign(bench=bench)[["bench"] + list(df.columns)])
        note = feats.METHOD
    df = pd.concat(parts, ignore_index=True) if any(len(p) for p in parts) else parts[0]
    if df.empty:
        print((parts[0].attrs.get("note") if parts else "") or "No answer texts joined to scored items.",
              file=sys.stderr)
    print_frame(df, args.format, note)
    return 0


def register_features(sub, parents) -> None:
    from lib.analysis.answer_features import FEATURES

    p = sub.add_parser("features", parents=[parents["db"], parents["fmt"]],
                       help="scores split by what the answers are (Japanese share, length, code block, <think>, "
                            "refusal phrase): means per bin with intervals, or the A - B gap per bin")
    p.add_argument("--feature", choices=[*FEATURES, "all"], default="japanese", help="the answer feature (default japanese)")
    p.add_argument("--by", choices=("judge", "model"), default="judge", help="one row per judge (default) or model")
    p.add_argument("--bench", help="only this bench (default: every bench)")
    p.add_argument("--a", metavar="SELECTOR", help="side A (as for compare): with --b, the paired gap per bin")
    p.add_argument("--b", metavar="SELECTOR", help="side B")
    p.add_argument("--side", choices=("a", "b"), default="a",
                   help="when A and B answered separately (two models, two harnesses): whose answers give the bin")
    p.add_argument("--swallow-samples", choices=("mean", "first"), default="mean",
                   help="Swallow items: the mean of the 5 samples (default) or sample 0 only")
    p.set_defaults(func=cmd_features)
