"""Shared fixtures. Tests never touch data/judgelens.duckdb: every store lives in tmp_path."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from lib.ingest import ingest
from lib.store import Store

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
JA = SAMPLE / "shisa-ja-mt-bench-harness"          # FastChat JA harness data root
EN = SAMPLE / "stefanstud-fastchat"                # FastChat English fork with pairwise judgments
SWALLOW = SAMPLE / "swallow" / "lighteval" / "outputs"
TEST_DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """No test reads the developer's database or keys."""
    monkeypatch.setenv("JUDGELENS_DB", str(tmp_path / "default.duckdb"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def store(tmp_path) -> Store:
    s = Store(tmp_path / "jl.duckdb")
    yield s
    s.close()


@pytest.fixture(scope="session")
def _sample_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sample") / "sample.duckdb"
    with Store(path) as s:
        ingest(s, [SAMPLE])
    return path


@pytest.fixture
def sample_store(_sample_db, tmp_path) -> Store:
    """A store holding the whole bundled sample (copied per test, so tests may write to it)."""
    path = tmp_path / "sample.duckdb"
    shutil.copy(_sample_db, path)
    s = Store(path)
    yield s
    s.close()
