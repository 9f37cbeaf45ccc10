"""A PostgreSQL-backed DuckLake store shared by real processes: the app (``streamlit run``) and two CLI
imports at the same time; and an import killed with ``kill -9`` half-way through its transaction."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import ROOT, fresh_pg_database
from waiting import wait_for
from lib.ingest.importer import ingest
from lib.store import Store


def judgments(path: Path, judge: str, n: int, text: str = "") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as fh:
        for i in range(n):
            fh.write(json.dumps({"question_id": i % 80 + 1, "model": f"model-{i // 80}", "judge": [judge, "single-v1"],
                                 "score": 1 + i % 10, "turn": 1 + i % 2, "judgment": text}) + "\n")
    return path


def new_store(postgres: str, tmp_path: Path) -> tuple[dict, Store]:
    env = {"JUDGELENS_STORE": f"ducklake:postgres:{fresh_pg_database(postgres)}",
           "JUDGELENS_DATA_PATH": str(tmp_path / "lake-data")}
    store = Store(env["JUDGELENS_STORE"], data_path=env["JUDGELENS_DATA_PATH"])
    return env, store


def cli(env: dict, *args: str) -> subprocess.Popen:
    child = {**os.environ, **env, "PYTHONUNBUFFERED": "1"}
    child.pop("JUDGELENS_DB", None)
    return subprocess.Popen([sys.executable, "-m", "lib.cli", *args], cwd=ROOT, env=child,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def counts(store: Store) -> tuple:
    with store.read() as cur:
        return (cur.execute("SELECT count(*), coalesce(max(source_id), 0) FROM sources").fetchone(),
                cur.execute("SELECT count(*) FROM single_judgments").fetchone()[0],
                cur.execute("SELECT count(*) FROM item_scores").fetchone()[0],
                cur.execute("SELECT id FROM ducklake_current_snapshot('lake')").fetchone()[0])


@pytest.mark.browser
def test_app_and_two_cli_imports_share_one_store(postgres, tmp_path, page):
    from browser_support import running_app, wait_for_app

    env, store = new_store(postgres, tmp_path)
    with store.write() as cur:  # no first-start sample: this test counts only its own rows
        store.set_meta(cur, "sample_loaded", "yes")
    one = judgments(tmp_path / "bench_a" / "model_judgment" / "judge-one_single.jsonl", "judge-one", 1500)
    two = judgments(tmp_path / "bench_b" / "model_judgment" / "judge-two_single.jsonl", "judge-two", 1500)

    def metric(label: str) -> str:
        label_el = page.get_by_test_id("stMetricLabel").get_by_text(label, exact=True)
        return page.get_by_test_id("stMetric").filter(has=label_el).get_by_test_id("stMetricValue").inner_text()

    with running_app(tmp_path / "unused.duckdb", env=env) as url:
        page.goto(url)
        wait_for_app(page)
        page.get_by_text("No data loaded yet").wait_for()  # the app holds the store open now
        procs = [cli(env, "ingest", str(one)), cli(env, "ingest", str(two))]  # at once, next to the app
        outs = [p.communicate(timeout=120) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        assert all("1 file(s) imported" in out for out, _ in outs)

        (n_sources, max_id), n_rows, n_items, _ = counts(store)
        assert (n_sources, max_id, n_rows) == (2, 2, 3000)  # every row exactly once, ids distinct
        with store.read() as cur:
            assert cur.execute("SELECT judge, count(*), count(DISTINCT source_id) FROM single_judgments "
                               "GROUP BY 1 ORDER BY 1").fetchall() == [("judge-one", 1500, 1), ("judge-two", 1500, 1)]
        page.reload()  # a refresh shows what the other processes wrote
        wait_for_app(page)
        page.get_by_test_id("stMetric").first.wait_for()
        assert metric("Sources") == "2"
        assert metric("Judges") == "2"
        assert metric("Judgments") == "3,000"
        assert metric("Judged items") == f"{n_items:,}"
    store.close()


def test_an_import_killed_half_way_leaves_the_store_unchanged(postgres, tmp_path):
    env, store = new_store(postgres, tmp_path)
    first = judgments(tmp_path / "bench" / "model_judgment" / "judge-zero_single.jsonl", "judge-zero", 200)
    ingest(store, [first])
    before = counts(store)
    data = Path(env["JUDGELENS_DATA_PATH"])
    files_before = set(data.rglob("*.parquet"))
    # one import of two files: the small one is written first, then the big one, then one commit
    small = judgments(tmp_path / "x" / "model_judgment" / "a-judge_single.jsonl", "a-judge", 2000)
    big = judgments(tmp_path / "x" / "model_judgment" / "b-judge_single.jsonl", "b-judge", 150_000, "x" * 400)
    proc = cli(env, "ingest", str(tmp_path / "x"))
    wait_for(lambda: proc.poll() is not None or set(data.rglob("*.parquet")) - files_before, interval=0.01,
             what="the import's transaction to begin writing Parquet files")
    assert proc.poll() is None, proc.communicate()   # still running: killed half way
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    after = counts(store)
    assert after == before  # no source, no row, not even a new snapshot
    # the next import works (and the killed one's orphaned Parquet files are not part of the store)
    report = ingest(store, [small])
    assert [f.source_id for f in report.imported] == [2]
    assert counts(store)[1] == 200 + 2000
    assert big.exists()
    store.close()
