"""``rejudge``, ``probe``, ``probe-runs``: calls to a judge endpoint and what they found."""
from __future__ import annotations

import json
import sys
import time

from lib.cli.common import judge_config, open_store
from lib.judging.batch import RejudgeBatch
from lib.judging.config import resolve_api_key
from lib.judging.jobs import BackgroundJob
from lib.judging.context import select_items, select_pair_items
from lib.judging.templates import TemplateError, resolve_template_ref
from lib.probes import suite as probes
from lib.render.safe_text import csv_text


def _throttled(fmt) -> callable:
    """A progress callback that prints at most every 2 s (and at the end) to stderr."""
    last = [0.0]

    def progress(done: int, total: int, *rest) -> None:
        now = time.monotonic()
        if total and (now - last[0] >= 2 or done == total):
            last[0] = now
            print(fmt(done, total, *rest), file=sys.stderr)

    return progress


def cmd_rejudge(args) -> int:
    store = open_store(args)
    template = resolve_template_ref(store, args.template)
    config = judge_config(args)
    if template.mode == "pairwise":
        if not (args.answer_model and args.vs):
            raise TemplateError(f"{template.label} is a pairwise template: name both models with "
                                "--answer-model A --vs B.")
        items = select_pair_items(store, args.answer_model, args.vs, bench=args.bench, category=args.category,
                                  turn=args.turn, limit=args.limit)
    else:
        items = select_items(store, bench=args.bench, category=args.category, turn=args.turn,
                             model=args.answer_model, judged_by=args.judged_by, limit=args.limit)
    if not items:
        print("No items match these filters.", file=sys.stderr)
        return 1
    batch = RejudgeBatch(store, template, config, items, args.label, reference_judge=args.reference_judge,
                         judge_hint=args.judged_by, force=args.force)
    est = batch.prepare()
    cost = (f"; estimated cost ~${est.cost_expected:.4f} (at most ${est.cost_upper:.4f})"
            if est.cost_expected is not None else "")
    print(f"{batch.label}: {template.label} on {len(items)} item(s): {est.requests} request(s), {est.cached} from "
          f"the cache, {est.to_send} to send (~{est.prompt_tokens} prompt tokens){cost}", file=sys.stderr)
    api_key = resolve_api_key(None, None) if est.to_send else None
    progress = _throttled(lambda done, total, eta=None: f"  {done}/{total}" + (f", ~{eta:.0f} s left" if eta else ""))
    job = BackgroundJob(lambda report, cancel: batch.run(api_key=api_key, concurrency=args.concurrency,
                                                         progress=report, cancel=cancel),
                        name="judgelens-rejudge", on_progress=progress).start()
    interrupted = job.wait_interruptibly(lambda: print(
        "Cancelling: waiting for the requests in flight, then storing every verdict that arrived ...", file=sys.stderr))
    summary = job.outcome()
    print(summary.text())
    if interrupted:
        print(f"Interrupted: {summary.written} verdict(s) of this run are stored under {summary.label!r}. "
              "Run the same command again to resume.", file=sys.stderr)
        return 130
    if summary.nothing_succeeded:
        print(f"Nothing succeeded: {_every_request_failed(summary)}", file=sys.stderr)
        return 1
    print("See it next to the other judges: python -m lib.cli scores --by judge,model,turn"
          + (f" --db {args.db}" if args.db else ""))
    return 1 if summary.error or (summary.not_renderable and not summary.written) else 0


def _every_request_failed(summary) -> str:
    if summary.error_reasons:
        reasons = sorted(summary.error_reasons.items(), key=lambda kv: -kv[1])
        return ("every request failed: " + "; ".join(f"{reason} ({n} request(s))" for reason, n in reasons[:5])
                + (f"; and {len(reasons) - 5} other reason(s)" if len(reasons) > 5 else ""))
    if summary.error:
        return summary.error
    return "no request could be sent (see the problems above)."


def cmd_probe(args) -> int:
    """Exit code: 0 every deciding probe (canaries, position swap) passed; 1 one failed or could not be
    evaluated. (2: bad input or a fatal API error, 3: database busy, as every command.)"""
    store = open_store(args)
    template = resolve_template_ref(store, args.template)
    run = probes.run_probes(store, template, judge_config(args), n_items=args.items, bench=args.bench,
                            turn=args.turn, probes=[p for p in (args.probes or "").split(",") if p.strip()] or None,
                            repeats=args.repeats, noise_items=args.noise_items, model_a=args.answer_model,
                            model_b=args.vs, reference_judge=args.reference_judge, seed=args.seed,
                            api_key=resolve_api_key(None, None), concurrency=args.concurrency,
                            progress=_throttled(lambda done, total: f"  {done}/{total} request(s)"))
    if args.format == "json":
        print(json.dumps(run.to_json(), ensure_ascii=False, indent=1, default=str))
    elif args.format == "csv":
        print(csv_text(probes.probe_table(run)).rstrip("\n"))
    else:
        table = probes.probe_table(run).drop(columns=["detail", "failed"])
        print(run.summary + "\n\n" + table.to_string(index=False))
    print(f"stored as probe run {run.run_id}; compare two runs with: python -m lib.cli probe-runs --compare A B"
          + (f" --db {args.db}" if args.db else ""), file=sys.stderr)
    return 0 if run.passed else 1


def cmd_probe_runs(args) -> int:
    store = open_store(args)
    if args.compare:
        cmp = probes.compare_probe_runs(store, args.compare[0], args.compare[1])
        if args.format == "json":
            print(json.dumps({"text": cmp.text, "fixed": cmp.fixed, "broken": cmp.broken,
                              "still_failing": cmp.still_failing,
                              "probes": json.loads(cmp.table.to_json(orient="records"))}, ensure_ascii=False,
                             indent=1))
        elif args.format == "csv":
            print(csv_text(cmp.table).rstrip("\n"))
        else:
            print(cmp.text + "\n\n" + cmp.table.drop(columns=["detail_b"]).to_string(index=False))
        return 0
    df = probes.list_probe_runs(store)
    if args.format == "json":
        print(df.to_json(orient="records", date_format="iso", indent=1))
    elif args.format == "csv":
        print(csv_text(df).rstrip("\n"))
    else:
        print(df.to_string(index=False) if not df.empty else "(no probe runs yet: python -m lib.cli probe ...)")
    return 0


def _template_argument(p, examples: str) -> None:
    p.add_argument("--template", required=True,
                   help=f"a template name ({examples}, name@v2, ...), a template .json file, or a judge_prompts "
                        ".jsonl file (FILE#NAME picks one record)")


def register(sub, parents) -> None:
    db, fmt, endpoint = parents["db"], parents["fmt"], parents["endpoint"]
    p = sub.add_parser("rejudge", parents=[db, endpoint],
                       help="re-judge items with a template through an OpenAI-compatible API (key from "
                            "OPENAI_API_KEY); stored as a new judge")
    _template_argument(p, "single-v1, ja-single-v1, swallow-single-v1")
    p.add_argument("--label", help="name of the new judge (default: MODEL+TEMPLATE@vN)")
    p.add_argument("--bench", help="only this bench")
    p.add_argument("--category", help="only this question category")
    p.add_argument("--turn", type=int, help="only this turn")
    p.add_argument("--answer-model", help="only this answering model (pairwise templates: model A)")
    p.add_argument("--vs", help="pairwise templates: model B")
    p.add_argument("--judged-by", help="only items this judge rated (its reference answers are used)")
    p.add_argument("--reference-judge", help="use the reference answers stored under this judge name")
    p.add_argument("--limit", type=int, help="at most this many items")
    p.add_argument("--concurrency", type=int, default=8)
    p.add_argument("--force", action="store_true", help="ignore the cache and call the API again")
    p.set_defaults(func=cmd_rejudge)

    p = sub.add_parser("probe", parents=[db, fmt, endpoint],
                       help="probe a judge template (canaries, section-order ablation, position swap, repeat noise) "
                            "through an OpenAI-compatible API (key from OPENAI_API_KEY); exit 1 if a probe fails")
    _template_argument(p, "order-bug-demo, single-v1")
    p.add_argument("--items", type=int, default=probes.DEFAULT_ITEMS,
                   help=f"how many real items to probe, stratified by category (default {probes.DEFAULT_ITEMS})")
    p.add_argument("--bench", help="take the items from this bench (default: the bench with most usable items)")
    p.add_argument("--turn", type=int, help="judged turn (default: 2 for multi-turn templates, else 1)")
    p.add_argument("--probes", help=f"comma-separated probes or groups ({', '.join(probes.PROBE_GROUPS)}); "
                                    "default: all")
    p.add_argument("--repeats", type=int, default=probes.DEFAULT_REPEATS, help="repeat noise: requests per item")
    p.add_argument("--noise-items", type=int, default=probes.DEFAULT_NOISE_ITEMS, help="repeat noise: items")
    p.add_argument("--answer-model", help="pairwise templates: model A")
    p.add_argument("--vs", help="pairwise templates: model B")
    p.add_argument("--reference-judge", help="use the reference answers stored under this judge name")
    p.add_argument("--seed", type=int, default=0, help="item sampling seed")
    p.add_argument("--concurrency", type=int, default=4)
    p.set_defaults(func=cmd_probe)

    p = sub.add_parser("probe-runs", parents=[db, fmt], help="list stored probe runs, or compare two")
    p.add_argument("--compare", nargs=2, type=int, metavar=("RUN_A", "RUN_B"),
                   help="what changed from run A to run B (fixed / broke)")
    p.set_defaults(func=cmd_probe_runs)
