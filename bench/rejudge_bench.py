"""Re-judge benchmark: 1,000 judge calls against the local OpenAI-compatible server.

What it does:

1. Loads the bundled sample (data/sample) into a fresh DuckDB file in a temp folder.
2. Starts ``tests/fake_openai.py`` in its own process (so the server does not share this process's
   GIL, like a real remote API) with ``--latency`` per request (default 0.2 s) and a score that
   depends on the prompt.
3. Runs ``lib.judging.batch.RejudgeBatch`` with the built-in ``single-v1`` template on the first
   ``--n`` answer items (default 1,000; ja_mt_bench, mt_bench and Swallow items), ``--concurrency``
   threads (default 16): prepare (contexts, sandboxed rendering, cache lookup, estimate) and run
   (HTTP, parsing, batched writes) are timed separately.
4. Runs the same batch again: every item is already done (resume) -> 0 requests.
5. Runs it once more under a new label: every request is a cache hit -> 0 HTTP calls.

Ideal throughput = concurrency / latency (16 / 0.2 s = 80 requests/s). The goal is >= 0.9x ideal
for the send phase. Prints a table and writes bench/out/rejudge.json.

    .venv/bin/python bench/rejudge_bench.py
    .venv/bin/python bench/rejudge_bench.py --n 2000 --concurrency 32 --latency 0.1
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lib.judging import context as C  # noqa: E402
from lib.judging import templates as T  # noqa: E402
from lib.judging.batch import RejudgeBatch, run_batch  # noqa: E402
from lib.judging.config import JudgeConfig  # noqa: E402
from lib.ingest.importer import ingest  # noqa: E402
from lib.store import Store  # noqa: E402

SERVER = f"""
import sys, hashlib
sys.path.insert(0, {str(ROOT / 'tests')!r})
from fake_openai import FakeOpenAI
srv = FakeOpenAI(latency=float(sys.argv[1]))
srv.responder = lambda body: "Judgment. Rating: [[%d]]" % (
    int(hashlib.md5(body["messages"][-1]["content"].encode()).hexdigest(), 16) % 10 + 1)
srv.start()
print(srv.url, flush=True)
sys.stdin.read()
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "rejudge.json")
    args = ap.parse_args()
    ideal = args.concurrency / args.latency

    tmp = Path(tempfile.mkdtemp(prefix="jl-rejudge-bench-"))
    store = Store(tmp / "bench.duckdb")
    t0 = time.perf_counter()
    ingest(store, [ROOT / "data" / "sample"])
    load_s = time.perf_counter() - t0
    items = C.select_items(store, limit=args.n)
    if len(items) < args.n:
        print(f"only {len(items)} items in the sample", file=sys.stderr)

    server = subprocess.Popen([sys.executable, "-c", SERVER, str(args.latency)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        url = server.stdout.readline().strip()
        config = JudgeConfig(base_url=url, model="bench-judge", timeout_s=30)
        template = T.get_template(store, "single-v1")

        batch = RejudgeBatch(store, template, config, items, label="bench")
        t0 = time.perf_counter()
        est = batch.prepare()
        prepare_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        summary = batch.run(api_key="sk-bench", concurrency=args.concurrency)
        run_s = time.perf_counter() - t0

        t0 = time.perf_counter()
        again = run_batch(store, template, config, items, "bench", api_key="sk-bench", concurrency=args.concurrency)
        resume_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        cached = run_batch(store, template, config, items, "bench-cached", api_key="sk-bench",
                             concurrency=args.concurrency)
        cached_s = time.perf_counter() - t0
    finally:
        server.kill()
        T.shutdown_sandbox()
        store.close()

    send_rate = summary.calls / run_s
    e2e_rate = summary.calls / (prepare_s + run_s)
    result = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "cpus": os.cpu_count(), "python": sys.version.split()[0],
        "items": len(items), "concurrency": args.concurrency, "latency_s": args.latency, "ideal_rps": ideal,
        "sample_load_s": round(load_s, 2), "prepare_s": round(prepare_s, 3), "run_s": round(run_s, 3),
        "calls": summary.calls, "ok": summary.ok, "written": summary.written,
        "send_rps": round(send_rate, 1), "send_vs_ideal": round(send_rate / ideal, 3),
        "end_to_end_rps": round(e2e_rate, 1), "end_to_end_vs_ideal": round(e2e_rate / ideal, 3),
        "estimated_prompt_tokens": est.prompt_tokens, "prompt_tokens": summary.prompt_tokens,
        "resume_s": round(resume_s, 3), "resume_calls": again.calls, "resume_skipped": again.skipped_done,
        "cache_run_s": round(cached_s, 3), "cache_run_calls": cached.calls, "cache_hits": cached.cache_hits,
    }
    print(f"| {len(items)} re-judgments, concurrency {args.concurrency}, server latency {args.latency:g} s "
          f"(ideal {ideal:g} req/s) | |")
    print("|---|---|")
    print(f"| prepare (contexts, sandboxed render, cache lookup; incl. one-time openai import and sandbox start) "
          f"| {prepare_s:.2f} s |")
    print(f"| send phase | {run_s:.2f} s, **{send_rate:.1f} req/s = {send_rate / ideal:.2f}x ideal** |")
    print(f"| end to end (prepare + send) | {e2e_rate:.1f} req/s = {e2e_rate / ideal:.2f}x ideal |")
    print(f"| verdicts written | {summary.written} (ok {summary.ok}) |")
    print(f"| same batch again (resume) | {resume_s:.2f} s, {again.calls} calls, {again.skipped_done} skipped |")
    print(f"| new label, same requests (cache) | {cached_s:.2f} s, {cached.calls} calls, {cached.cache_hits} cache hits |")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"\nwritten {args.out.relative_to(ROOT)}")
    return 0 if send_rate >= 0.9 * ideal else 1


if __name__ == "__main__":
    sys.exit(main())
