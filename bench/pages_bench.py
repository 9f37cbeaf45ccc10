"""Benchmark: each page's main interaction on a store with up to a million judgment rows.

Not a test. Builds a synthetic store with SQL (FastChat-shaped rows: judges x models x 80 questions x
2 turns, rationale and judge prompt text of realistic length, answers for every model), then times
the data function behind each page's main interaction next to a plain ``SELECT count(*)`` and a full
scan of the same table, in the same run. Goal from the issue: every interaction under 0.5 s at 1M rows; on a DuckLake store no more than
1.3x the file's (issue 26). The store is a dimension: the same synthetic store (bench/stores.py, shared with
bench/browser_bench.py: built once, reused from ``--out``) as the DuckDB file, copied into a DuckLake store with
a SQLite catalog and into one with a PostgreSQL catalog (a server the benchmark starts and stops), every
interaction timed on each in turn in the same run, with the ratio lake / file per row. Nothing is written.

    .venv/bin/python bench/pages_bench.py --out /work/benchstores   # 1M rows (5 judges x 1,250 models), pooled
    .venv/bin/python bench/pages_bench.py --rows 100000   # smaller
    .venv/bin/python bench/pages_bench.py --repeat 7 --json bench/out/pages.json
    .venv/bin/python bench/pages_bench.py --rows 100000 --stores file,lake-pg --only "item view"

Times are medians of --repeat runs after one warm-up run (DuckDB's buffer cache warm, as in the app).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from lib.analysis import agreement, deltas, distributions, harness_diff, item_view, linking, queries, runs  # noqa: E402
from lib.keys import ItemKey  # noqa: E402
from lib.store import Store, refresh_item_scores  # noqa: E402
from lib.vocab import single_bracket_only_sql  # noqa: E402

CATEGORIES = ["coding", "extraction", "humanities", "math", "reasoning", "roleplay", "stem", "writing"]


def build(path: Path, rows: int, judges: int, models: int | None = None, judge_names: str = "'judge-' || j",
          harness: str = "fastchat") -> dict:
    """A synthetic store of about ``rows`` judgments: ``judges`` x ``models`` x 80 questions x 2 turns.

    ``models`` defaults to what fills ``rows``. ``judge_names`` is a SQL expression over the judge number
    ``j`` (e.g. re-judge labels); ``harness`` tags the judgment rows.
    """
    models = models or max(1, rows // (judges * 160))
    store = Store(path)
    t0 = time.perf_counter()
    with store.write() as cur:
        cur.execute("INSERT INTO sources (sha256, path, file_name, harness, kind, bench, bytes, rows_imported) "
                    "VALUES ('synthetic', 'synthetic', 'synthetic', 'fastchat', 'single_judgments', 'bench_x', 0, ?)",
                    [rows])
        cur.execute(f"""
            INSERT INTO questions SELECT 1, 'bench_x', CAST(q AS VARCHAR),
                   ({CATEGORIES!r})[((q - 1) // 10) + 1], ['question ' || q || ' turn one', 'turn two']
            FROM range(1, 81) t(q)""")
        cur.execute("""
            INSERT INTO answers SELECT 1, 'fastchat', 'bench_x', 'model-' || m, 'model-' || m, NULL, CAST(q AS VARCHAR),
                   0, turn, repeat('答えの文章です。' || md5(m::VARCHAR || q || turn), 2 + (hash(m, q, turn) % 30)::INT), NULL, NULL, NULL, NULL
            FROM range(?) a(m), range(1, 81) b(q), range(1, 3) c(turn)""", [models])
        cur.execute(f"""
            INSERT INTO single_judgments
            SELECT 1, '{harness}', 'bench_x', {judge_names}, CASE WHEN turn = 2 THEN 'single-v1-multi-turn' ELSE 'single-v1' END,
                   'model-' || m, CAST(q AS VARCHAR), turn, 0, s, CASE WHEN s = -1 THEN NULL ELSE s END,
                   CASE WHEN s = -1 THEN 'not_parsed' ELSE 'ok' END,
                   repeat('評価の理由を述べます。' || md5(j::VARCHAR || m || q || turn), 12) || ' Rating: [[' || s || ']]',
                   '[Instruction] Please act as an impartial judge. ' || repeat(md5(m::VARCHAR || q || turn), 40), NULL, NULL, NULL, NULL
            FROM (SELECT j, m, q, turn,
                         CASE WHEN hash(j, m, q, turn) % 100 = 0 THEN -1
                              ELSE 1 + ((hash(m, q) % 7) + (hash(j, m, q, turn) % 4))::INT END AS s
                  FROM range(?) a(j), range(?) b(m), range(1, 81) c(q), range(1, 3) d(turn))""", [judges, models])
        n = cur.execute("SELECT count(*) FROM single_judgments").fetchone()[0]
        # a second harness on a second bench: model-7 under Swallow's layout (5 samples, 'hosted_vllm/' route)
        cur.execute("""INSERT INTO questions SELECT 1, 'bench_y', question_id, category, turns FROM questions
                       WHERE bench = 'bench_x'""")
        cur.execute("""
            INSERT INTO answers SELECT 1, 'swallow', 'bench_y', 'hosted_vllm/model-7', NULL, NULL, CAST(q AS VARCHAR),
                   s, turn, '答え' || md5(q::VARCHAR || turn || s), 0.7, 'あなたは誠実で優秀な日本人のアシスタントです。', 8192, NULL
            FROM range(1, 81) b(q), range(1, 3) c(turn), range(0, 5) d(s)""")
        cur.execute("""
            INSERT INTO single_judgments
            SELECT 1, 'swallow', 'bench_y', 'gpt-4o-2024-08-06', 'swallow-single-v1', 'hosted_vllm/model-7',
                   CAST(q AS VARCHAR), turn, s, r, r, 'ok', 'Rating: [[' || r || ']]',
                   '[{"role": "system", "content": "You are a helpful assistant."}, {"role": "user", "content": "x"}]', NULL, NULL, NULL, NULL
            FROM (SELECT q, turn, s, 1 + (hash(q, turn, s) % 10)::INT AS r
                  FROM range(1, 81) b(q), range(1, 3) c(turn), range(0, 5) d(s))""")
        # the flag every writer derives on insert (lib.store.bulk.DERIVED): only the rows it holds for are set
        cur.execute(f"UPDATE single_judgments SET single_bracket = true WHERE {single_bracket_only_sql('rationale')}")
        t1 = time.perf_counter()
        refresh_item_scores(cur)  # what ingest does after writing judgments
        refresh_s = time.perf_counter() - t1
    from lib.ingest.importer import relink

    t2 = time.perf_counter()
    relink(store)  # what ingest does next: link the benches' questions, alias the model names
    info_relink = time.perf_counter() - t2
    store.close()
    return {"rows": n, "models": models, "judges": judges, "build_s": time.perf_counter() - t0, "refresh_s": refresh_s,
            "relink_s": info_relink}


def timed(fn, repeat: int) -> float:
    fn()  # warm-up
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs)


def scalar(store: Store, sql: str):
    with store.read() as cur:
        return cur.execute(sql).fetchone()


def interactions(store: Store, judges: list[str]) -> dict[str, callable]:
    key = ItemKey("bench_x", "31", 2, "model-7")
    j2 = judges[:2]
    return {
        "baseline: SELECT count(*)": lambda: scalar(store, "SELECT count(*) FROM single_judgments"),
        "baseline: scan of score and rationale": lambda: scalar(
            store, "SELECT sum(score), sum(length(rationale)) FROM single_judgments"),
        "overview: counts": lambda: queries.overview_counts(store),
        "overview: leaderboard": lambda: queries.leaderboard(store),
        "overview: what is loaded": lambda: queries.judges_by_harness(store),
        "scores --by judge,model,turn": lambda: queries.scores(store),
        "agreement: table (all judges)": lambda: agreement.agreement(store, judges, bench="bench_x"),
        "agreement: top 200 disagreements": lambda: agreement.disagreements(store, judges, bench="bench_x", limit=200),
        "agreement: parse failures (single-bracket flag stored)": lambda: agreement.parse_failures(store,
                                                                                                 bench="bench_x"),
        "item view: one item (question, answer, verdicts)": lambda: (
            item_view.question(store, "bench_x", "31"), item_view.answer(store, key), item_view.verdicts(store, key)),
        "item view: previous/next order": lambda: item_view.item_order(store, "bench_x", "model-7"),
        "item view: next biggest disagreement": lambda: item_view.next_disagreement(store, "bench_x", "31", 2, "model-7"),
        "distributions: histogram by judge": lambda: distributions.score_histogram(store, ["judge"], filters={"bench": "bench_x"}),
        "distributions: box summary by judge": lambda: distributions.score_summary(store, ["judge"], filters={"bench": "bench_x"}),
        "distributions: JA overall": lambda: distributions.ja_overall(store, bench="bench_x"),
        "compare: paired deltas, 2 judges on one model": lambda: deltas.compare_levels(
            store, {"bench": "bench_x", "judge": j2[0], "model": "model-7"}, {"bench": "bench_x", "judge": j2[1], "model": "model-7"}),
        "compare: paired deltas, 2 models under one judge": lambda: deltas.compare_levels(
            store, {"bench": "bench_x", "judge": j2[0], "model": "model-7"}, {"bench": "bench_x", "judge": j2[0], "model": "model-8"}),
        "harness: runs of every model (model picker)": lambda: runs.runs(store),
        "harness: one model across linked benches (category rows)": lambda: runs.compare_runs(
            store, {"harness": "fastchat", "judge": j2[0], "model": "model-7"}, {"harness": "swallow", "model": "model-7"},
            levels=("category",)),
        "harness: setup table": lambda: harness_diff.harness_diff(
            store, {"harness": "fastchat", "judge": j2[0], "model": "model-7"}, {"harness": "swallow", "model": "model-7"}),
        "harness: link summary": lambda: linking.link_summary(store, "bench_x", "bench_y"),
        "overview: harness x model matrix": lambda: runs.matrix_wide(runs.harness_matrix(store)),
    }


LAKE_RATIO = 1.3  # issue 26: a lake no more than 1.3x the file store


def ratio_cell(lake: float, file: float) -> str:
    if not file:
        return "—"
    ratio = lake / file
    return f"{ratio:.2f}×" if ratio <= LAKE_RATIO else f"**{ratio:.2f}×**"


def main() -> None:
    from stores import OUT, STORES, parse_stores, stores_for

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--stores", type=parse_stores, default=list(STORES),
                        help="which stores, comma-separated (default file,lake-sqlite,lake-pg)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--only", help="time only the interactions whose name contains this text")
    parser.add_argument("--out", type=Path, default=OUT, help="folder of the stores (bench/stores.py; default bench/out)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    with stores_for("wide", args.rows, args.stores, args.out.resolve()) as (refs, info):
        print(f"{info['rows']:,} judgment rows ({info['judges']} judges x {info['models']:,} models x 80 x 2), "
              f"file {info.get('file_mb')} MB; " + "; ".join(
                  f"{k}: {r.info.get('data_files')} Parquet file(s), {r.info.get('data_mb')} MB" for k, r in refs.items()
                  if k != "file"), flush=True)
        stores = {kind: ref.open(read_only=True) for kind, ref in refs.items()}
        judges = [f"judge-{j}" for j in range(info["judges"])]
        results: dict[str, dict[str, float]] = {kind: {} for kind in stores}
        lakes = [k for k in stores if k != "file"]
        head = " | ".join(f"{kind} median s" for kind in stores)
        ratios = "".join(f" {k} / file |" for k in lakes) if "file" in stores else ""
        print(f"\n| interaction (n={args.repeat}) | {head} |{ratios} goal < 0.5 s (lake: ≤ {LAKE_RATIO}× file) |")
        print(f"|---|{'---|' * len(stores)}{'---|' * len(lakes) if ratios else ''}---|")
        calls = {kind: interactions(store, judges) for kind, store in stores.items()}
        for name in next(iter(calls.values())):
            if args.only and args.only not in name:
                continue
            for kind in stores:  # one after the other, so every store sees the same machine load
                results[kind][name] = timed(calls[kind][name], args.repeat)
            worst = max(results[kind][name] for kind in stores)
            ok = "" if name.startswith("baseline") else ("yes" if worst < 0.5 else "**no**")
            cells = " | ".join(f"{results[kind][name]:.3f}" for kind in stores)
            if ratios:
                cells += " | " + " | ".join(
                    ratio_cell(results[k][name], results["file"][name]) for k in lakes)
            print(f"| {name} | {cells} | {ok} |", flush=True)
        for store in stores.values():
            store.close()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        ratio = {k: {n: v / results["file"][n] for n, v in results[k].items() if results["file"].get(n)}
                 for k in results if k != "file" and "file" in results}
        args.json.write_text(json.dumps({"info": info, "stores": {k: r.info for k, r in refs.items()},
                                         "median_s": results, "ratio_to_file": ratio}, indent=1))


if __name__ == "__main__":
    main()
