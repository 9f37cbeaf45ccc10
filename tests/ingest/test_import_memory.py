"""The memory limit of an import's transaction (``lib.ingest.resources.import_memory_limit``): a file store's import
gets the size of the files it writes, bounded below by a floor per DuckDB thread and above by 2GB, so that at 100k
judgments it holds no more than a plain DuckDB load of the file; ``JUDGELENS_IMPORT_MEMORY`` wins; a DuckLake store
keeps 2GB."""
from __future__ import annotations

import duckdb
import pytest
from conftest import JA

import lib.ingest.importer
from lib.ingest.importer import ingest
from lib.ingest.resources import MEMORY_ENV, import_memory_limit, memory_floor
from lib.store import Store

JUDGMENTS = JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"


def test_the_limit_is_the_input_size_between_the_threads_floor_and_2gb(monkeypatch):
    monkeypatch.delenv(MEMORY_ENV, raising=False)
    assert memory_floor(2) == 384_000_000 and memory_floor(8) == 1_152_000_000
    assert import_memory_limit(389_434_248, 2) == "389MB"  # the benchmark's 100k judgments
    assert import_memory_limit(1_167_552_833, 2) == "1167MB"  # 300k
    assert import_memory_limit(3_895_423_216, 2) == "2000MB"  # 1M: the cap, the default before
    assert import_memory_limit(10_000, 2) == "384MB"  # a small file: the floor of DuckDB's threads
    assert import_memory_limit(10_000, 8) == "1152MB"
    assert import_memory_limit(3_895_423_216, 16) == "2176MB"  # threads whose floor is above the cap
    assert import_memory_limit(None, 2) == "2GB"  # a DuckLake store's import
    monkeypatch.setenv(MEMORY_ENV, "600MB")
    assert import_memory_limit(389_434_248, 2) == "600MB"
    assert import_memory_limit(None, 2) == "600MB"


def _limits_during_imports(monkeypatch) -> list[str]:
    """DuckDB's memory_limit as each import's transaction sees it (read where the import notes a judgment file)."""
    seen: list[str] = []
    real = lib.ingest.importer.judgment_notes

    def spy(cur, source_id):
        seen.append(cur.execute("SELECT current_setting('memory_limit')").fetchone()[0])
        return real(cur, source_id)

    monkeypatch.setattr(lib.ingest.importer, "judgment_notes", spy)
    return seen


def _shown(limit: str) -> str:
    """How DuckDB shows a memory_limit of ``limit``."""
    con = duckdb.connect()
    con.execute(f"SET memory_limit = '{limit}'")
    return con.execute("SELECT current_setting('memory_limit')").fetchone()[0]


def test_a_file_store_import_runs_within_its_scaled_limit(store, monkeypatch):
    monkeypatch.delenv(MEMORY_ENV, raising=False)
    seen = _limits_during_imports(monkeypatch)
    with store.read() as cur:
        threads = int(cur.execute("SELECT current_setting('threads')").fetchone()[0])
        default = cur.execute("SELECT current_setting('memory_limit')").fetchone()[0]
    report = ingest(store, [JUDGMENTS])
    assert report.imported[0].fast and report.imported[0].rows == 320
    assert seen == [_shown(f"{memory_floor(threads) // 1_000_000}MB")]  # a small file: the floor
    with store.read() as cur:  # the limit ends with the transaction
        assert cur.execute("SELECT current_setting('memory_limit')").fetchone()[0] == default


@pytest.mark.parametrize("given", ["", "700MB"])
def test_a_lake_import_keeps_the_default_limit_and_the_environment_wins(tmp_path, monkeypatch, given):
    monkeypatch.setenv(MEMORY_ENV, given)
    seen = _limits_during_imports(monkeypatch)
    with Store(f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}", data_path=tmp_path / "data") as lake:
        assert ingest(lake, [JUDGMENTS]).imported[0].rows == 320
    assert seen == [_shown(given or "2GB")]
