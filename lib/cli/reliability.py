"""``reliability``, ``variance``, ``ranks``, ``judge-vs-human``: how far a set of judges can be trusted
(Krippendorff's alpha with intervals, alpha without each judge), where the spread of scores comes from (the
variance decomposition), how a leaderboard depends on the judge (ranks with intervals, ties, flips) and how a
judge compares with the analyst's verdicts on a random sample (prediction-powered corrected means)."""
from __future__ import annotations

from lib.analysis import reliability as reliability_lib
from lib.analysis.agreement import check_judges
from lib.cli.common import frame_out, json_out, open_store, print_frame, print_note, records, split_list
from lib.render.safe_text import csv_text


def cmd_reliability(args) -> int:
    store = open_store(args, read_only=True)
    judges = split_list(args.judges)
    res = reliability_lib.reliability(store, judges, bench=args.bench, model=args.model, turn=args.turn,
                                      category=args.category, n_boot=args.boot, seed=args.seed)
    table, without = res["overall"], res["without"]
    note = " ".join(x for x in (reliability_lib.RELIABILITY_NOTE, table.attrs.get("warning")) if x)
    if args.format == "json":
        overall = records(table.iloc[:1])[0]
        overall.pop("group")
        print(json_out({"judges": judges, **overall, "without": records(without), "groups": records(table.iloc[1:])}))
    elif args.format == "csv":
        print(csv_text(table).rstrip("\n"))
    else:
        print(frame_out(table, "table") + "\n\n== alpha without each judge\n"
              + frame_out(without, "table", note))
    print_note(args.format, note)
    return 0


def cmd_variance(args) -> int:
    from lib.analysis import variance as variance_lib

    store = open_store(args, read_only=True)
    df = variance_lib.variance_decomposition(store, split_list(args.judges), bench=args.bench,
                                             category=args.category, n_boot=args.boot, seed=args.seed)
    print_frame(df, args.format, df.attrs.get("note", ""))
    return 0


def cmd_ranks(args) -> int:
    from lib.analysis import ranking

    df = ranking.judge_rankings(open_store(args, read_only=True), bench=args.bench, n_boot=args.boot, seed=args.seed)
    print_frame(df, args.format, ranking.RANK_NOTE)
    return 0


def cmd_judge_vs_human(args) -> int:
    from lib.analysis import ppi

    store = open_store(args, read_only=True)
    human = args.human if args.human.startswith("human:") else f"human:{args.human}"
    judges = split_list(args.judges) or ppi.bench_judges(store, bench=args.bench)
    check_judges(store, [*judges, human], minimum=2)
    res = ppi.judge_vs_human(store, judges, human, bench=args.bench, n=args.n, n_boot=args.boot)
    done = int(res["sample"]["decided"].sum())
    note = f"{done} of {len(res['sample'])} sampled items scored by {human}. {ppi.PPI_NOTE}"
    if args.format == "json":
        print(json_out({"human": human, "sampled": len(res["sample"]), "scored": done,
                        "agreement": records(res["agreement"]), "corrected": records(res["corrected"])}))
    else:
        print(frame_out(res["corrected"], args.format, note))
    print_note(args.format, note)
    return 0


def _bootstrap_options(p) -> None:
    p.add_argument("--boot", type=int, default=2000, help="bootstrap replicates (default 2000)")
    p.add_argument("--seed", type=int, default=0)


def register(sub, parents) -> None:
    db, fmt = parents["db"], parents["fmt"]
    p = sub.add_parser("reliability", parents=[db, fmt],
                       help="Krippendorff's alpha (interval and ordinal) over several judges, human:NAME included, "
                            "with 95%% intervals, per category and turn, and alpha without each judge")
    p.add_argument("--judges", required=True,
                   help="comma-separated judges (at least two), e.g. gpt-4o,gpt-4.1-2025-04-14,human:ana")
    p.add_argument("--bench", help="only this bench")
    p.add_argument("--turn", type=int, choices=(1, 2), help="only this turn")
    p.add_argument("--model", help="only this answering model")
    p.add_argument("--category", help="only this question category")
    _bootstrap_options(p)
    p.set_defaults(func=cmd_reliability)

    p = sub.add_parser("variance", parents=[db, fmt],
                       help="where the spread of scores comes from: model, question, answer, judge, judge x model, "
                            "judge x question, residual and sample variance with 95%% intervals")
    p.add_argument("--judges", required=True, help="comma-separated judges (one is enough: its judge parts then merge into the answer part)")
    p.add_argument("--bench", help="only this bench (recommended: questions are never pooled across benches)")
    p.add_argument("--category", help="only this question category")
    _bootstrap_options(p)
    p.set_defaults(func=cmd_variance)

    p = sub.add_parser("ranks", parents=[db, fmt],
                       help="per-judge leaderboards with 95%% rank intervals, ties with the leader and rank flips")
    p.add_argument("--bench", help="only this bench")
    _bootstrap_options(p)
    p.set_defaults(func=cmd_ranks)

    p = sub.add_parser("judge-vs-human", parents=[db, fmt],
                       help="each judge against your verdicts on the random sample (the Review page's), with "
                            "prediction-powered corrected model means")
    p.add_argument("--bench", required=True)
    p.add_argument("--human", required=True, metavar="NAME", help="the analyst: NAME or human:NAME")
    p.add_argument("--judges", help="comma-separated LLM judges (default: every judge of the bench)")
    p.add_argument("--n", type=int, default=40, help="the random sample's size (default 40, as on the Review page)")
    p.add_argument("--boot", type=int, default=2000, help="bootstrap replicates for the agreement intervals")
    p.set_defaults(func=cmd_judge_vs_human)
