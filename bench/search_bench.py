"""Benchmark: search at a million judgment rows, next to a plain DuckDB ``contains()`` scan in the same run.

Not a test. Builds (or reuses, --db) the page benchmark's synthetic store (bench/pages_bench.py ``build``:
5 judges x 1,250 models x 80 questions x 2 turns, rationale ~0.8 KB of Japanese + hex, judge prompt ~1.3 KB),
whose build now includes the search index (``refresh_item_scores`` -> ``lib.search_index``). Then it times:

- the index build alone (emptied and rebuilt in one write transaction, judge prompts included),
- per query: the first page of 50 hits (``lib.analysis.search.search``: scan + snippets from the original
  text) and the total count (``count``), next to the plain baseline on single_judgments.rationale:
  ``contains(rationale, q) LIMIT 50``, ``count(*) WHERE contains(rationale, q)`` (case-sensitive, no NFKC) and
  ``contains(lower(rationale), lower(q))`` (what case-folding at query time would cost).

Goals from issue 12 at 1M rows: first page < 0.5 s, total count < 2 s.

    .venv/bin/python bench/search_bench.py                        # 1M rows, builds a store (minutes)
    .venv/bin/python bench/search_bench.py --rows 100000
    .venv/bin/python bench/search_bench.py --db /tmp/pages_1m.duckdb   # build once into this file, reuse after

Times are medians of --repeat runs after one warm-up run.

Measured 2026-11-23 ~01:00-01:30 UTC on the 2-core machine, NOT quiet: the shared benchmark lock was stuck, so
these ran unlocked while other sessions ran browser tests (load average 6-16). Only the ratios within a row mean
anything; before = the first index (a lowered copy of every text in search_text), after = the sparse index,
alternated on two stores with the same 1M judgment rows (every synthetic text is NFKC-stable: no copies):

| | build (refresh incl. index) | store file |
|---|---|---|
| before | 146 s (70 s) | 3.1 GB |
| after (prompts still checked at import) | 78 s (25 s) | 1.5 GB |

| query (rationales) | before: page / count | after: page / count | plain contains() LIMIT 50 / count |
|---|---|---|---|
| rare hex substring (29 hits) | 1.67 / 1.37 s | 1.60 / 1.77 s | 1.07-1.19 / 0.90-1.38 s |
| Japanese, every row | 0.051 / 1.06 s | 0.014 / 0.60 s | 0.005-0.009 / 0.92-1.07 s |
| full-width 'ＲＡＴＩＮＧ: [[1]]' (34k hits) | 0.032 / 1.16 s | 0.033 / 1.35 s | 0.007 / 0.65-1.00 s |

A first page needs a scan until 50 hits are found: for a rare substring that is the whole column, like the plain
scan; the sparse index scans the original column with a case-folded literal ([Aa][Bb]12[Cc]), which RE2 finds
about as fast as contains(), and needs no second lookup for the snippet's original text. Case-folding at query
time (lower()) costs 3-5x the plain scan. The lead's quiet figures for the first index (2026-11-23 00:00):
page 0.485 s (0.1 s of it the originals' lookup), count 0.390 s, plain contains() LIMIT 50 0.368 s.

Quiet figures of the sparse index (2026-11-23 ~01:56 UTC, load ~1, under the benchmark lock, the 1M store
bench/browser_bench.py builds; `--db bench/out/browser_wide_1000000.duckdb --repeat 3`): index rebuild 4.0 s
(answers and rationales; prompts at their first search);

| query (rationales) | first page | count | plain contains() LIMIT 50 / count | contains(lower()) count |
|---|---|---|---|---|
| rare hex substring (29 hits) | 0.412 s | 0.391 s | 0.344 / 0.342 s | 1.489 s |
| Japanese, every row | 0.007 s | 0.273 s | 0.001 / 0.264 s | 1.396 s |
| full-width 'ＲＡＴＩＮＧ: [[1]]' (34k hits) | 0.007 s | 0.402 s | 0.001 / 0.267 s | 1.412 s |

Index 3 (judge prompts indexed at import too; 2026-11-23 03:14 UTC, load 1.7, under the lock, same store and
command): index rebuild 4.7 s with prompts; rare hex substring page 0.456 s / count 0.417 s (plain 0.361 /
0.357 s); Japanese every row 0.008 / 0.273 s (plain 0.002 / 0.267 s); full-width 0.009 / 0.404 s (plain
0.002 / 0.268 s). Opening a store of index 2 re-indexed the prompts of its 1M judgments in 4.2 s, once.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pages_bench import build  # noqa: E402

from lib.analysis import search as S  # noqa: E402
from lib.search_index import COLUMNS, index_new_sources  # noqa: E402
from lib.store import Store  # noqa: E402

QUERIES = {
    # (query as typed, what it hits in the synthetic rationales)
    "rare hex substring": "ab12c",
    "Japanese, every row": "理由を述べます",
    "full-width 'ＲＡＴＩＮＧ: [[1]]' (~10 % of rows)": "ＲＡＴＩＮＧ: [[1]]",
}


def timed(fn, repeat: int) -> tuple[float, object]:
    value = fn()
    runs = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), value


def scalar(store: Store, sql: str, params: list):
    with store.read() as cur:
        return cur.execute(sql, params).fetchall()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--judges", type=int, default=5)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--db", type=Path, help="use (or build into) this file instead of a temporary one")
    ap.add_argument("--skip-rebuild", action="store_true", help="do not time a rebuild of the index")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    tmp = tempfile.TemporaryDirectory()
    path = args.db or Path(tmp.name) / "search_bench.duckdb"
    out: dict = {}
    if not path.exists():
        info = build(path, args.rows, args.judges)
        out["build"] = info
        print(f"built {info['rows']:,} judgment rows in {info['build_s']:.1f} s "
              f"(refresh incl. search index {info['refresh_s']:.1f} s); file {path.stat().st_size / 1e6:.0f} MB")
    store = Store(path)
    with store.read() as cur:
        n = cur.execute("SELECT count(*) FROM single_judgments").fetchone()[0]
        copies = {field: cur.execute(f"SELECT count({norm}) FROM {table}").fetchone()[0]
                  for field, (table, _, norm) in COLUMNS.items()}
        copies.update(cur.execute("SELECT field, count(*) FROM search_text GROUP BY 1").fetchall())
    out["copies"] = copies
    print(f"{n:,} judgment rows; texts with a lowered copy: {copies}")
    if not args.skip_rebuild:
        t0 = time.perf_counter()
        with store.write() as cur:
            cur.execute("DELETE FROM search_text")
            cur.execute("DELETE FROM search_sources")
            for table, _, norm in COLUMNS.values():
                cur.execute(f"UPDATE {table} SET {norm} = NULL WHERE {norm} IS NOT NULL")
            index_new_sources(cur)
        out["index_rebuild_s"] = time.perf_counter() - t0
        print(f"search index rebuilt in one transaction: {out['index_rebuild_s']:.1f} s")
    out["queries"] = {}
    print("\n| query | search: first page of 50 | search: total count | plain contains() LIMIT 50 "
          "| plain contains() count | plain contains(lower()) count | hits |\n|---|---|---|---|---|---|---|")
    for name, text in QUERIES.items():
        q = S.SearchQuery(text, fields=("rationale",))
        page_s, page = timed(lambda: S.search(store, q, limit=50), args.repeat)
        count_s, total = timed(lambda: S.count(store, q), args.repeat)
        plain = text.replace("ＲＡＴＩＮＧ", "Rating")  # what a case- and width-sensitive scan must be given
        base_page_s, _ = timed(lambda: scalar(store, "SELECT question_id, model, judge, rationale FROM single_judgments "
                                                     "WHERE contains(rationale, ?) LIMIT 50", [plain]), args.repeat)
        base_count_s, base = timed(lambda: scalar(store, "SELECT count(*) FROM single_judgments "
                                                         "WHERE contains(rationale, ?)", [plain]), args.repeat)
        lower_s, _ = timed(lambda: scalar(store, "SELECT count(*) FROM single_judgments "
                                                 "WHERE contains(lower(rationale), lower(?))", [plain]), max(1, args.repeat // 2))
        out["queries"][name] = {"query": text, "page_s": page_s, "count_s": count_s, "plain_page_s": base_page_s,
                                "plain_count_s": base_count_s, "plain_lower_count_s": lower_s, "hits": total,
                                "plain_hits": base[0][0], "page_rows": len(page)}
        print(f"| {name} | {page_s:.3f} s | {count_s:.3f} s | {base_page_s:.3f} s | {base_count_s:.3f} s "
              f"| {lower_s:.3f} s | {total:,} (plain: {base[0][0]:,}) |")
    store.close()
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1, ensure_ascii=False))
    tmp.cleanup()


if __name__ == "__main__":
    main()
