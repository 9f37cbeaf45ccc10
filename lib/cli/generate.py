"""``generate``: make a run's answers again with one generation setup (lib.generation), stored as a run of
their own (model ``M [regen: SETUP]``). The cost is printed first; nothing is sent without ``--yes``. Ctrl-C
stops sending, keeps every answer that arrived, and the same command resumes (no request is sent twice).
``answer-stats``: the stored-data-only view of the answer side (lib.analysis.answer_stats), no endpoint."""
from __future__ import annotations

import sys
import threading

from lib.analysis import answer_stats
from lib.analysis.runs import resolve_run
from lib.analysis.selectors import parse_selector
from lib.cli.common import frame_out, json_out, open_store
from lib.errors import UsageError
from lib.generation import plan as gen_plan
from lib.generation.questions import questions_for_run
from lib.generation.runner import cached_texts
from lib.generation.setups import GenerationSetup
from lib.generation.storage import generate_run, regen_label
from lib.judging.config import resolve_api_key


def _setup(store, run, args) -> GenerationSetup:
    stated = ... if args.system_prompt is None else (args.system_prompt or None)   # '' = no system message
    if args.setup == "run":
        setup = GenerationSetup.from_run(store, run, system_prompt=stated)
    else:
        setup = GenerationSetup.for_harness(args.setup, system_prompt=stated)
    changes = {}
    if args.samples is not None:
        changes["samples"] = args.samples
    if args.max_tokens is not None:
        changes["max_tokens"] = args.max_tokens or None
    return setup.restate(**changes) if changes else setup


def cmd_generate(args) -> int:
    store = open_store(args)
    run = resolve_run(store, parse_selector(args.run), "--run")
    setup = _setup(store, run, args)
    questions = questions_for_run(store, run, linked_to=args.linked_to, limit=args.limit)
    if not questions:
        raise UsageError(f"The run {run.label} has no answered questions"
                         + (f" linked to {args.linked_to}" if args.linked_to else "") + " to answer again.")
    plan = gen_plan.plan_generation(questions, setup, model=args.model, base_url=args.base_url)
    label = args.label or regen_label(run.model, setup)
    est = gen_plan.estimate(plan, answered=lambda keys: cached_texts(store, keys), price_per_1k_input=args.price_in,
                            price_per_1k_output=args.price_out)
    print(f"{label}: {len(questions)} question(s) of {run.label} with the {setup.name} setup", file=sys.stderr)
    for row in setup.describe():
        print(f"  {row['field']}: {row['value']} ({row['source']})", file=sys.stderr)
    print(f"  cost: {est.text()}", file=sys.stderr)
    if est.to_send and not args.yes:
        print(f"Nothing sent. Add --yes to send these {est.to_send} request(s).", file=sys.stderr)
        return 0
    api_key = resolve_api_key(None, None)
    cancel, finished, box = threading.Event(), threading.Event(), {}
    last = [0]

    def progress(done: int, total: int) -> None:
        if done == total or done - last[0] >= max(1, total // 20):
            last[0] = done
            print(f"  {done}/{total} request(s)", file=sys.stderr)

    def work():
        try:
            box["out"] = generate_run(store, plan, answer_model=run.model, label=label, api_key=api_key,
                                      progress=progress, cancel=cancel, concurrency=args.concurrency,
                                      timeout_s=args.timeout)
        except BaseException as exc:  # handed to the main thread
            box["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=work, name="judgelens-generate", daemon=True).start()
    interrupted = False
    while not finished.is_set():
        try:
            finished.wait(0.2)
        except KeyboardInterrupt:
            cancel.set()           # before the message: a reader of "Cancelling" knows no new request starts
            if not interrupted:
                print("Cancelling: waiting for the requests in flight, then storing every answer that arrived ...",
                      file=sys.stderr)
            interrupted = True
    if "error" in box:
        raise box["error"]
    source_id, result = box["out"]
    summary = {"label": label, "source_id": source_id, "setup": setup.name, "requests": plan.requests,
               "sent": result.sent, "cached": result.cached, "answers": len(result.answers),
               "failed": len(result.failed), "complete": result.complete}
    if args.format == "json":
        print(json_out(summary))
    else:
        print(f"{label}: {len(result.answers)} answer(s) stored (source {source_id}); {result.sent} request(s) sent, "
              f"{result.cached} from the cache, {len(result.failed)} failed.")
    for key, message in result.failed[:5]:
        print(f"  failed {key[0]}/{key[1]} turn {key[2]} sample {key[3]}: {message}", file=sys.stderr)
    if interrupted or result.cancelled:
        print("Interrupted: run the same command again to resume.", file=sys.stderr)
        return 130
    return 1 if result.failed else 0


def cmd_answer_stats(args) -> int:
    store = open_store(args, read_only=True)
    runs = [resolve_run(store, parse_selector(sel), "--run") for sel in args.run]
    df = answer_stats.stored_view(store, runs)
    if args.format == "table":
        df = df.assign(mean_per_sample=df["mean_per_sample"].map(lambda v: " ".join(f"{x:.2f}" for x in v)))
    print(frame_out(df, args.format, note=answer_stats.NOTE))
    return 0


def register(sub, parents) -> None:
    db, fmt = parents["db"], parents["fmt"]
    s = sub.add_parser("answer-stats", parents=[db, fmt],
                       help="what stored answers tell without any call: samples, exact copies, sample 0 vs the "
                            "N-sample mean, spread, share of answers not in Japanese (one row per --run)")
    s.add_argument("--run", action="append", required=True, help="a run: harness=..,bench=..,judge=..,model=.. "
                                                                 "(repeat for several)")
    s.set_defaults(func=cmd_answer_stats)
    p = sub.add_parser("generate", parents=[db, fmt],
                       help="answer a run's questions again with one generation setup (fastchat, swallow, or the "
                            "run's own) through an OpenAI-compatible endpoint serving the model under test")
    p.add_argument("--run", required=True, help="the run whose questions to answer: harness=..,bench=..,judge=..,"
                                                "model=.. (e.g. harness=swallow,model=shisa-ai/shisa-v2-llama3.1-8b)")
    p.add_argument("--setup", choices=("run", "fastchat", "swallow"), default="run",
                   help="generation setup: the run's own as its files show it (default), or a harness's")
    p.add_argument("--system-prompt", default=None,
                   help="the model's system prompt ('' for none); required for FastChat setups, whose answer files "
                        "do not record it")
    p.add_argument("--base-url", required=True, help="the endpoint serving the model, e.g. http://127.0.0.1:8000/v1")
    p.add_argument("--model", required=True, help="the model name the endpoint serves")
    p.add_argument("--samples", type=int, help="samples per turn (default: the setup's)")
    p.add_argument("--max-tokens", type=int, help="max_tokens to send (0: none; default: the setup's)")
    p.add_argument("--limit", type=int, help="the first N questions only")
    p.add_argument("--linked-to", metavar="BENCH", help="only questions linked to a question of this bench")
    p.add_argument("--label", help="the stored model name (default: 'MODEL [regen: SETUP]')")
    p.add_argument("--concurrency", type=int, default=4)
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per request (default 600)")
    p.add_argument("--price-in", type=float, help="price per 1k prompt tokens, for the cost estimate")
    p.add_argument("--price-out", type=float, help="price per 1k completion tokens")
    p.add_argument("--yes", action="store_true", help="send the requests (without it only the cost is printed)")
    p.set_defaults(func=cmd_generate)
