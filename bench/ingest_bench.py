"""Import benchmark: JudgeLens ``lib.ingest.importer`` against a plain DuckDB ``read_ndjson`` load.

What it does (see shared/docs/performance-baselines.md, sections 0, 2 and 6):

1. Generates FastChat single-judgment files (the record ``play_a_match_single`` writes:
   question_id, model, judge=[judge_model, prompt_name], user_prompt, judgment, score, turn, tstamp)
   with a fixed seed: 20 models x 2 judges x 2 turns x N/80 questions, user_prompt ~2 KB
   (FastChat single-v1 / single-math-v1 / -multi-turn template around Japanese+English text),
   judgment ~1.5 KB mostly Japanese ending with "Rating: [[x]]", scores 1-10 with 1 % -1 and
   3 % half points. Files are cached under --data-dir and reused by later runs.
2. Measures each method in its own child process (peak RSS per method from os.wait4), alternating
   reference / JudgeLens for --repeat rounds:
   - ``reference``: fresh DuckDB file, ``CREATE TABLE j AS SELECT * FROM read_ndjson(path, columns=...)``
     then CHECKPOINT (timed in-process).
   - ``judgelens``: ``Store(fresh file)`` (timed separately), ``ingest(store, [path])`` then CHECKPOINT
     (timed in-process, split into hash / fast insert / notes / rest; a new file's hash overlaps its insert), then a re-import of the same
     file (must report "unchanged").
   - ``ducklake``: the same, into a new DuckLake store (SQLite catalog, Parquet folder next to it;
     no CHECKPOINT: the Parquet files are written by COMMIT), the team store of lib.store.
   - ``sha256``: ``lib.ingest.importer.content_key`` (xxh3-128, the import's key) alone, then ``sha256_of`` (the key
     of stores made before issue 26).
   Ratios are JudgeLens / reference on the same file in the same run: goals are >= 1.0x rows/s and
   <= 1.0x peak RSS. "load CPU s" (process CPU time of the load, all threads) is steadier than wall
   time on a busy machine.
3. Prints markdown tables and merges JSON results into bench/out/ingest.json (keyed by size and
   encoding, so separate runs accumulate).

Run from the project root:

    .venv/bin/python bench/ingest_bench.py --sizes 10k,100k            # raw UTF-8, 3 rounds each
    .venv/bin/python bench/ingest_bench.py --sizes 100k --ascii        # FastChat's escaped JSON
    .venv/bin/python bench/ingest_bench.py --sizes 1m                  # ~3.9 GB file, 1 round
    .venv/bin/python bench/ingest_bench.py --sizes 1m --delete-data    # remove the big file afterwards

The 1M file needs ~4 GB in --data-dir plus ~3 GB for the two DuckDB files (deleted after each run).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DATA = Path("/tmp/judgelens_bench")
DEFAULT_OUT = ROOT / "bench" / "out" / "ingest.json"
GEN_VERSION = 1
SEED = 20240611
BENCH = "mtbench_ja"
JUDGE_FILE = "gpt-4_single.jsonl"

REFERENCE_COLUMNS = ("{question_id:'BIGINT', model:'VARCHAR', judge:'VARCHAR[]', user_prompt:'VARCHAR', "
                     "judgment:'VARCHAR', score:'DOUBLE', turn:'INTEGER', tstamp:'DOUBLE'}")

# ------------------------------------------------------------------------------------------------
# Generator

MODELS = [
    "gpt-4o-mini", "gpt-3.5-turbo", "claude-3-haiku", "llama-3-8b-instruct", "llama-3-70b-instruct",
    "Qwen__Qwen2.5-7B-Instruct", "Qwen__Qwen2.5-72B-Instruct", "tokyotech-llm__Llama-3.1-Swallow-8B-Instruct-v0.3",
    "tokyotech-llm__Llama-3.1-Swallow-70B-Instruct-v0.3", "elyza__Llama-3-ELYZA-JP-8B", "cyberagent__calm3-22b-chat",
    "stabilityai__japanese-stablelm-instruct-gamma-7b", "rinna__llama-3-youko-8b-instruct", "shisa-ai__shisa-v2-llama3.1-8b",
    "google__gemma-2-9b-it", "google__gemma-2-27b-it", "mistralai__Mistral-7B-Instruct-v0.3",
    "microsoft__Phi-3-medium-4k-instruct", "sbintuitions__sarashina2-7b", "llm-jp__llm-jp-3-13b-instruct",
]
JUDGES = [("gpt-4-turbo", 0.0), ("gpt-4o-2024-08-06", 0.3)]
CATEGORIES = ["writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"]
MATH_CATEGORIES = {"reasoning", "math", "coding"}

JA = [
    "この回答はユーザーの質問に対して概ね正確であり、必要な情報が簡潔にまとめられています。",
    "ただし、いくつかの重要な点について説明が不足しており、具体例があればより分かりやすくなったでしょう。",
    "論理の流れは明確で、段階的に結論へ導いている点は評価できます。",
    "一方で、計算の途中に誤りがあり、最終的な答えが参照解答と一致していません。",
    "日本語の表現は自然で、敬語の使い方も適切です。",
    "質問の意図を正しく理解しておらず、関係のない内容が多く含まれています。",
    "創造性があり、読者の興味を引く構成になっています。",
    "コードは正しく動作しますが、エッジケースの処理が考慮されていません。",
    "事実関係に誤りが見られ、特に歴史的な年代の記述が不正確です。",
    "全体として、有用で関連性の高い回答ですが、深さの点で改善の余地があります。",
    "東京都は日本の首都であり、約千四百万人が暮らしています。",
    "富士山の標高は三千七百七十六メートルで、日本で最も高い山です。",
]
EN = [
    "The assistant provides a clear and well-structured answer to the question.",
    "However, the response lacks depth in explaining the underlying reasoning.",
    "The final answer matches the reference solution.",
    "Let x be the number of apples; then 3x + 5 = 20, so x = 5.",
    "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)",
    "Overall, the response is helpful, relevant and accurate.",
    "The explanation of photosynthesis covers the light-dependent reactions only.",
    "It would be better to include a concrete example.",
]

SINGLE_V1 = (
    "[Instruction]\nPlease act as an impartial judge and evaluate the quality of the response provided by an AI "
    "assistant to the user question displayed below. Your evaluation should consider factors such as the "
    "helpfulness, relevance, accuracy, depth, creativity, and level of detail of the response. Begin your "
    "evaluation by providing a short explanation. Be as objective as possible. After providing your explanation, "
    "you must rate the response on a scale of 1 to 10 by strictly following this format: \"[[rating]]\", for "
    "example: \"Rating: [[5]]\".\n\n[Question]\n{question}\n\n[The Start of Assistant's Answer]\n{answer}\n"
    "[The End of Assistant's Answer]"
)
SINGLE_MATH_V1 = (
    "[Instruction]\nPlease act as an impartial judge and evaluate the quality of the response provided by an AI "
    "assistant to the user question displayed below. Your evaluation should consider correctness and helpfulness. "
    "You will be given a reference answer and the assistant's answer. Begin your evaluation by comparing the "
    "assistant's answer with the reference answer. Identify and correct any mistakes. Be as objective as possible. "
    "After providing your explanation, you must rate the response on a scale of 1 to 10 by strictly following this "
    "format: \"[[rating]]\", for example: \"Rating: [[5]]\".\n\n[Question]\n{question}\n\n"
    "[The Start of Reference Answer]\n{ref}\n[The End of Reference Answer]\n\n"
    "[The Start of Assistant's Answer]\n{answer}\n[The End of Assistant's Answer]"
)
MULTI_TURN = (
    "<|The Start of Assistant A's Conversation with User|>\n\n### User:\n{q1}\n\n### Assistant A:\n{a1}\n\n"
    "### User:\n{q2}\n\n### Assistant A:\n{a2}\n\n<|The End of Assistant A's Conversation with User|>"
)
MULTI_TURN_MATH = (
    "<|The Start of Reference Answer|>\n\n### User:\n{q1}\n\n### Reference answer:\n{ref}\n\n"
    "<|The End of Reference Answer|>\n\n\n" + MULTI_TURN
)

SIZES = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}


def _blen(s: str) -> int:
    return len(s.encode("utf-8"))


def _text(rng: random.Random, nbytes: int, ja_share: float) -> str:
    out, n = [], 0
    while n < nbytes:
        s = rng.choice(JA) if rng.random() < ja_share else rng.choice(EN)
        out.append(s)
        n += _blen(s) + 1
    return " ".join(out)


def _user_prompt(rng: random.Random, category: str, turn: int) -> tuple[str, str]:
    math = category in MATH_CATEGORIES
    name = ("single-math-v1" if math else "single-v1") + ("-multi-turn" if turn == 2 else "")
    target = 2030 - (_blen(SINGLE_MATH_V1) if math else _blen(SINGLE_V1))
    if turn == 1:
        q = _text(rng, target // 5, 0.5)
        a = _text(rng, target * 3 // 5 if math else target * 4 // 5, 0.6)
        if math:
            return name, SINGLE_MATH_V1.format(question=q, ref=_text(rng, target // 5, 0.5), answer=a)
        return name, SINGLE_V1.format(question=q, answer=a)
    tpl = MULTI_TURN_MATH if math else MULTI_TURN
    target = 2030 - _blen(tpl) - 200  # FastChat sends the multi-turn template with its own instruction system prompt
    q1, q2 = _text(rng, target // 8, 0.5), _text(rng, target // 8, 0.5)
    a1, a2 = _text(rng, target * 3 // 8, 0.6), _text(rng, target * 2 // 8 if math else target * 3 // 8, 0.6)
    extra = {"ref": _text(rng, target // 8, 0.5)} if math else {}
    return name, tpl.format(q1=q1, a1=a1, q2=q2, a2=a2, **extra)


def _judgment(rng: random.Random, score: float) -> str:
    body = _text(rng, 1510, 0.7)
    if score == -1:
        return body + "\n\n評価: 判定できません。"
    shown = int(score) if score == int(score) else score
    return f"{body}\n\nRating: [[{shown}]]"


def data_path(data_dir: Path, size: str, ascii_: bool) -> Path:
    tag = f"v{GEN_VERSION}-{size}-{'ascii' if ascii_ else 'utf8'}"
    return data_dir / tag / BENCH / "model_judgment" / JUDGE_FILE


def generate(path: Path, n: int, ascii_: bool) -> dict:
    """Write n records to path (cached: an existing complete file is reused)."""
    meta_path = path.with_suffix(".meta.json")
    if path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if meta.get("lines") == n and meta.get("bytes") == path.stat().st_size:
            return meta
    path.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    rng = random.Random(SEED)
    n_q = max(1, n // 80)
    quality = [rng.uniform(3.0, 8.5) for _ in MODELS]
    difficulty = [rng.gauss(0.0, 1.0) for _ in range(n_q)]
    tmp = path.with_suffix(".tmp")
    written = 0
    with open(tmp, "w", encoding="utf-8", newline="\n") as fh:
        buf: list[str] = []
        ts = 1_718_000_000.0
        for judge, bias in JUDGES:
            for m, model in enumerate(MODELS):
                for q in range(n_q):
                    qid = 81 + q
                    category = CATEGORIES[q % len(CATEGORIES)]
                    for turn in (1, 2):
                        if written >= n:
                            break
                        # the same prompt for both judges, as FastChat renders it once per answer
                        prng = random.Random((SEED * 1_000_003 + m) * 100_003 + q * 2 + turn)
                        prompt_name, user_prompt = _user_prompt(prng, category, turn)
                        raw = quality[m] - difficulty[q] + bias + rng.gauss(0.0, 1.2)
                        score: float = float(min(10, max(1, round(raw))))
                        u = rng.random()
                        if u < 0.01:
                            score = -1
                        elif u < 0.04:
                            score = score + 0.5 if score < 10 else 9.5
                        ts += rng.uniform(0.05, 0.6)
                        rec = {
                            "question_id": qid,
                            "model": model,
                            "judge": [judge, prompt_name],
                            "user_prompt": user_prompt,
                            "judgment": _judgment(rng, score),
                            "score": int(score) if score == int(score) else score,
                            "turn": turn,
                            "tstamp": round(ts, 6),
                        }
                        buf.append(json.dumps(rec, ensure_ascii=ascii_))
                        written += 1
                        if len(buf) >= 5000:
                            fh.write("\n".join(buf) + "\n")
                            buf.clear()
        if buf:
            fh.write("\n".join(buf) + "\n")
    if written != n:
        tmp.unlink()
        raise SystemExit(f"generator wrote {written} lines, wanted {n}; use a size that is a multiple of 80")
    tmp.rename(path)
    meta = {"lines": n, "bytes": path.stat().st_size, "ascii": ascii_, "seed": SEED, "gen_version": GEN_VERSION,
            "gen_seconds": round(time.perf_counter() - t0, 1)}
    meta_path.write_text(json.dumps(meta))
    return meta


# ------------------------------------------------------------------------------------------------
# Child processes: one method each, result as JSON on stdout

def _rm_db(db: Path) -> None:
    for p in (db, Path(str(db) + ".wal"), *_lake_files(db)):
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()


def _lake_files(db: Path) -> tuple[Path, Path, Path, Path]:
    """The DuckLake store the ``ducklake`` method writes next to ``db``: SQLite catalog (+ WAL files), Parquet folder."""
    catalog = db.with_suffix(".sqlite")
    return catalog, Path(str(catalog) + "-wal"), Path(str(catalog) + "-shm"), db.with_suffix(".lake")


def _lake_bytes(db: Path) -> int:
    catalog, _, _, data = _lake_files(db)
    return catalog.stat().st_size + sum(p.stat().st_size for p in data.rglob("*") if p.is_file())


def child_reference(path: Path, db: Path) -> dict:
    t0 = time.perf_counter()
    import duckdb
    t_import = time.perf_counter() - t0
    _rm_db(db)
    t1 = time.perf_counter()
    con = duckdb.connect(str(db))
    t2, c2 = time.perf_counter(), time.process_time()
    con.execute(f"CREATE TABLE j AS SELECT * FROM read_ndjson(?, columns={REFERENCE_COLUMNS})", [str(path)])
    t3 = time.perf_counter()
    con.execute("CHECKPOINT")
    t4, c4 = time.perf_counter(), time.process_time()
    rows = con.execute("SELECT count(*) FROM j").fetchone()[0]
    con.close()
    return {"load_s": t4 - t2, "load_cpu_s": c4 - c2, "ctas_s": t3 - t2, "checkpoint_s": t4 - t3, "open_s": t2 - t1,
            "import_s": t_import, "rows": rows, "db_bytes": db.stat().st_size}


def child_judgelens(path: Path, db: Path, lake: bool = False) -> dict:
    t0 = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    import lib.ingest.importer as ing
    from lib.store import Store
    t_import = time.perf_counter() - t0

    phases: dict[str, float] = {}

    def timed(name, fn):
        def wrapper(*a, **k):
            s = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                phases[name] = phases.get(name, 0.0) + time.perf_counter() - s
        return wrapper

    import lib.search_index as si
    import lib.store.scores as scores
    import lib.text_features as tf

    ing.content_key = timed("hash_s", ing.content_key)
    # the derived tables an import fills in its transaction (each timed on its own, not part of "other")
    scores.refresh_judge_questions = timed("judge_questions_s", scores.refresh_judge_questions)
    tf.fill_answer_features = timed("answer_features_s", tf.fill_answer_features)
    si.index_new_sources = timed("search_index_s", si.index_new_sources)
    scores.refresh_item_scores = timed("item_scores_s", scores.refresh_item_scores)
    ing.refresh_item_scores = scores.refresh_item_scores
    ing.insert_fast = timed("insert_fast_s", ing.insert_fast)
    ing.judgment_notes = timed("notes_s", ing.judgment_notes)
    ing.read_item = timed("python_reader_s", ing.read_item)  # the line readers: > 0 means the fast path was NOT used

    _rm_db(db)
    t1 = time.perf_counter()
    if lake:  # a DuckLake store with a SQLite catalog: the Parquet files are written before COMMIT returns
        catalog, _, _, data = _lake_files(db)
        store = Store(f"ducklake:sqlite:{catalog}", data_path=data)
    else:
        store = Store(db)
    t2, c2 = time.perf_counter(), time.process_time()
    report = ing.ingest(store, [path])
    t3 = time.perf_counter()
    if not lake:
        with store.write() as cur:
            cur.execute("CHECKPOINT")
    t4, c4 = time.perf_counter(), time.process_time()
    item = report.files[0]
    assert item.status == "imported", report.summary()
    first = dict(phases)
    phases.clear()
    # re-import of the same bytes: hashes the file, finds the source, writes nothing
    t5 = time.perf_counter()
    again = ing.ingest(store, [path])
    t6 = time.perf_counter()
    assert again.files[0].status == "unchanged", again.summary()
    with store.read() as cur:
        rows = cur.execute("SELECT count(*) FROM single_judgments").fetchone()[0]
    store.close()
    ingest_s = t3 - t2
    # the hash overlaps the insert; item_scores includes the three extras timed inside it
    first["other_s"] = ingest_s - sum(v for k, v in first.items()
                                      if k not in ("hash_s", "judge_questions_s", "answer_features_s", "search_index_s"))
    return {"load_s": t4 - t2, "load_cpu_s": c4 - c2, "ingest_s": ingest_s, "checkpoint_s": t4 - t3, "open_s": t2 - t1,
            "import_s": t_import, "rows": rows, "fast_path": item.fast and "python_reader_s" not in first,
            "phases": first, "reimport_s": t6 - t5, "reimport_hash_s": phases.get("hash_s"),
            "db_bytes": _lake_bytes(db) if lake else db.stat().st_size, "warnings": item.warnings}


def child_lake_reference(path: Path, db: Path) -> dict:
    """The plain-lake reference: the same rows as ``reference`` into a DuckLake table (SQLite catalog, Parquet folder,
    the extensions lib.store loads) by one ``INSERT ... SELECT`` from read_ndjson in one transaction."""
    t0 = time.perf_counter()
    sys.path.insert(0, str(ROOT))
    from lib.store.lake import attach
    t_import = time.perf_counter() - t0
    _rm_db(db)
    catalog, _, _, data = _lake_files(db)
    t1 = time.perf_counter()
    con = attach("sqlite", str(catalog), str(data), str(catalog))
    con.execute("CREATE TABLE j (question_id BIGINT, model VARCHAR, judge VARCHAR[], user_prompt VARCHAR, "
                "judgment VARCHAR, score DOUBLE, turn INTEGER, tstamp DOUBLE)")
    t2, c2 = time.perf_counter(), time.process_time()
    con.execute("BEGIN TRANSACTION")
    con.execute(f"INSERT INTO j SELECT * FROM read_ndjson(?, columns={REFERENCE_COLUMNS})", [str(path)])
    t3 = time.perf_counter()
    con.execute("COMMIT")
    t4, c4 = time.perf_counter(), time.process_time()
    rows = con.execute("SELECT count(*) FROM j").fetchone()[0]
    con.close()
    return {"load_s": t4 - t2, "load_cpu_s": c4 - c2, "ctas_s": t3 - t2, "checkpoint_s": t4 - t3, "open_s": t2 - t1,
            "import_s": t_import, "rows": rows, "db_bytes": _lake_bytes(db)}


def child_ducklake(path: Path, db: Path) -> dict:
    return child_judgelens(path, db, lake=True)


def child_sha256(path: Path, db: Path) -> dict:
    """The import's content key (xxh3-128) alone, and sha256 (the key before issue 26) beside it."""
    sys.path.insert(0, str(ROOT))
    from lib.ingest.importer import content_key, sha256_of
    t0, c0 = time.perf_counter(), time.process_time()
    content_key(path)
    t1, c1 = time.perf_counter(), time.process_time()
    sha256_of(path)
    return {"load_s": t1 - t0, "load_cpu_s": c1 - c0, "sha256_s": time.perf_counter() - t1,
            "sha256_cpu_s": time.process_time() - c1}


CHILDREN = {"reference": child_reference, "lake_reference": child_lake_reference, "judgelens": child_judgelens,
            "ducklake": child_ducklake,
            "sha256": child_sha256}


def run_child(method: str, path: Path, db: Path, script: Path | None = None) -> dict:
    """Run one method in a fresh interpreter; return its result plus wall time and peak RSS."""
    script = script or Path(__file__).resolve()
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(script), "--child", method, "--file", str(path), "--db", str(db)],
                            stdout=subprocess.PIPE, cwd=str(ROOT))
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - t0
    _rm_db(db)
    if proc.returncode != 0:
        raise RuntimeError(f"{method} child failed with exit code {proc.returncode}")
    result = json.loads(out.decode().strip().splitlines()[-1])
    result.update(method=method, process_s=wall, peak_rss_mb=usage.ru_maxrss / 1024,
                  cpu_s=usage.ru_utime + usage.ru_stime)
    return result


# ------------------------------------------------------------------------------------------------
# Parent: drive the rounds, summarise, print and save

def _warm(path: Path) -> None:
    with open(path, "rb") as fh:
        while fh.read(16 * 1024 * 1024):
            pass


def summarise(runs: list[dict], rows: int, nbytes: int) -> dict:
    loads = [r["load_s"] for r in runs]
    med = statistics.median(loads)
    out = {"n": len(runs), "median_s": med, "min_s": min(loads), "max_s": max(loads),
           "rows_per_s": rows / med, "mb_per_s": nbytes / 1e6 / med,
           "peak_rss_mb": statistics.median(r["peak_rss_mb"] for r in runs),
           "process_s": statistics.median(r["process_s"] for r in runs),
           "cpu_s": statistics.median(r["cpu_s"] for r in runs)}
    for key in ("sha256_s", "sha256_cpu_s", "load_cpu_s", "open_s", "ctas_s", "ingest_s", "checkpoint_s", "reimport_s", "reimport_hash_s", "import_s"):
        vals = [r[key] for r in runs if r.get(key) is not None]
        if vals:
            out[key] = statistics.median(vals)
    phases = [r["phases"] for r in runs if "phases" in r]
    if phases:
        out["phases"] = {k: statistics.median(p.get(k, 0.0) for p in phases) for k in phases[0]}
    dbs = [r["db_bytes"] for r in runs if "db_bytes" in r]
    if dbs:
        out["db_mb"] = statistics.median(dbs) / 1e6
    return out


def bench_file(path: Path, meta: dict, methods: list[str], repeat: int, db_dir: Path,
               script: Path | None = None, log=print) -> dict:
    _warm(path)
    db_dir.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict]] = {m: [] for m in methods}
    for i in range(repeat):
        for m in methods:  # alternating A B A B
            r = run_child(m, path, db_dir / f"{m}.duckdb", script)
            runs[m].append(r)
            log(f"  round {i + 1}/{repeat} {m:<22} load {r['load_s']:7.2f} s  process {r['process_s']:7.2f} s  "
                f"peak {r['peak_rss_mb']:7.0f} MB" + (f"  rows {r['rows']}" if "rows" in r else ""))
            if "rows" in r and r["rows"] != meta["lines"]:
                raise RuntimeError(f"{m} loaded {r['rows']} rows, expected {meta['lines']}")
    return {"runs": runs, "summary": {m: summarise(rs, meta["lines"], meta["bytes"]) for m, rs in runs.items()}}


def markdown(key: str, meta: dict, summary: dict, base: str = "reference") -> str:
    ref = summary.get(base)
    lines = [f"### {key}: {meta['lines']:,} lines, {meta['bytes'] / 1e6:,.0f} MB", "",
             "| Method | n | median s (range) | rows/s | MB/s | peak RSS | load CPU s | process s "
             "| x ref rows/s | x ref RSS | x ref CPU | x plain lake rows/s | x plain lake RSS |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    lake_ref = summary.get("lake_reference")
    for m, s in summary.items():
        if m == "sha256":
            continue
        ratio_r = f"{s['rows_per_s'] / ref['rows_per_s']:.2f}" if ref else "-"
        ratio_m = f"{s['peak_rss_mb'] / ref['peak_rss_mb']:.2f}" if ref else "-"
        cpu = s.get("load_cpu_s")
        ratio_c = f"{cpu / ref['load_cpu_s']:.2f}" if ref and cpu and ref.get("load_cpu_s") else "-"
        cpu_text = f"{cpu:.2f}" if cpu else "-"
        lake_r = lake_m = "-"  # the lake's methods against the plain DuckLake INSERT ... SELECT
        if lake_ref and m in ("ducklake", "lake_reference"):
            lake_r = f"{s['rows_per_s'] / lake_ref['rows_per_s']:.2f}"
            lake_m = f"{s['peak_rss_mb'] / lake_ref['peak_rss_mb']:.2f}"
        lines.append(f"| {m} | {s['n']} | {s['median_s']:.2f} ({s['min_s']:.2f}-{s['max_s']:.2f}) | "
                     f"{s['rows_per_s'] / 1e3:,.1f}k | {s['mb_per_s']:,.0f} | {s['peak_rss_mb']:,.0f} MB | "
                     f"{cpu_text} | {s['process_s']:.2f} | {ratio_r} | {ratio_m} | {ratio_c} | {lake_r} | {lake_m} |")
    lines.append("")
    for name, jl in (("JudgeLens", summary.get("judgelens")), ("JudgeLens on DuckLake", summary.get("ducklake"))):
        if not jl:
            continue
        ph = jl.get("phases", {})
        lines.append(
            f"{name}: Store open {jl['open_s']:.3f} s; ingest {jl['ingest_s']:.2f} s: "
            + ", ".join(f"{k.removesuffix('_s')} {v:.2f}" for k, v in ph.items())
            + " (a new file's hash runs during its insert, so the phases overlap)"
            + f"; CHECKPOINT {jl['checkpoint_s']:.2f} s; store {jl.get('db_mb', 0):,.0f} MB; "
            f"re-import {jl['reimport_s']:.2f} s.")
    if ref and "ctas_s" in ref:
        lines.append(f"Reference: CTAS {ref['ctas_s']:.2f} s + CHECKPOINT {ref['checkpoint_s']:.2f} s; "
                     f"DB {ref.get('db_mb', 0):,.0f} MB.")
    if lake_ref:
        lines.append(f"Plain lake: INSERT ... SELECT {lake_ref['ctas_s']:.2f} s + COMMIT {lake_ref['checkpoint_s']:.2f} s; "
                     f"store {lake_ref.get('db_mb', 0):,.0f} MB.")
    if "sha256" in summary:
        sh = summary["sha256"]
        lines.append(f"content key (xxh3-128) alone: {sh['median_s']:.2f} s ({sh['mb_per_s']:,.0f} MB/s); "
                     f"sha256 alone: {sh.get('sha256_s', 0):.2f} s.")
    return "\n".join(lines) + "\n"


def save(out: Path, key: str, entry: dict) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    data = json.loads(out.read_text()) if out.exists() else {}
    data[key] = entry
    out.write_text(json.dumps(data, indent=1, default=str))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="10k,100k", help="comma list of 10k, 100k, 1m (default 10k,100k)")
    ap.add_argument("--ascii", action="store_true", help="write json.dumps(ensure_ascii=True), FastChat's default")
    ap.add_argument("--repeat", type=int, default=None, help="rounds per method (default 3 for <=100k, 1 for 1m)")
    ap.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--methods", default="reference,lake_reference,judgelens,ducklake,sha256",
                    help="ducklake: JudgeLens into a DuckLake store (SQLite catalog, local Parquet folder); "
                         "lake_reference: a plain INSERT ... SELECT of the same rows into such a store")
    ap.add_argument("--delete-data", action="store_true", help="delete generated files after measuring")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)

    if args.child:
        print(json.dumps(CHILDREN[args.child](args.file, args.db)))
        return

    import duckdb
    methods = args.methods.split(",")
    for size in args.sizes.lower().split(","):
        n = SIZES[size]
        path = data_path(args.data_dir, size, args.ascii)
        free = shutil.disk_usage(args.data_dir if args.data_dir.exists() else "/tmp").free
        need = n * 4100 * (1.7 if args.ascii else 1) * (1 if path.exists() else 2)
        if free < need:
            raise SystemExit(f"{size}: need about {need / 1e9:.1f} GB free in {args.data_dir}, have {free / 1e9:.1f}")
        print(f"generating/reusing {path}", flush=True)
        meta = generate(path, n, args.ascii)
        repeat = args.repeat or (1 if n >= 1_000_000 else 3)
        key = f"{size}-{'ascii' if args.ascii else 'utf8'}"
        print(f"{key}: {meta['lines']:,} lines, {meta['bytes'] / 1e6:,.0f} MB; {repeat} round(s)", flush=True)
        res = bench_file(path, meta, methods, repeat, args.data_dir / "db",
                         log=lambda s: print(s, flush=True))
        entry = {"file": str(path), "meta": meta, "repeat": repeat, "duckdb": duckdb.__version__,
                 "python": sys.version.split()[0], "cpus": os.cpu_count(),
                 "loadavg_end": os.getloadavg(), "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **res}
        save(args.out, key, entry)
        print()
        print(markdown(key, meta, res["summary"]), flush=True)
        if args.delete_data:
            shutil.rmtree(path.parents[2])
            print(f"deleted {path.parents[2]}")
    print(f"results merged into {args.out}")


if __name__ == "__main__":
    main()
