"""The DuckLake team store (lib.store): the same tables and numbers as the single DuckDB file, one
transaction per import, and concurrent writers from separate DuckDB instances (as separate processes
would be) that never hand out an id twice or land a file twice. Every test runs on a SQLite and on a
PostgreSQL catalog (the ``lake_store`` fixture). The app's pages, re-judging, verdicts and search on a lake:
test_ducklake_app.py (a file of its own, so two test workers can share the lake tests)."""
from __future__ import annotations

import json
import threading

import pandas as pd
import pytest

from conftest import EN, JA, lake_target
from lib.analysis import agreement, queries
from lib.cli.main import main
from lib.errors import IngestError
from lib.ingest.importer import ingest, remove_source
from lib.store import Store, is_lake, lake_schema, parse_lake

GPT4O = JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"


def columns(store: Store) -> dict[str, list[tuple[str, str]]]:
    with store.read() as cur:
        rows = cur.execute("SELECT table_name, column_name, data_type FROM information_schema.columns "
                           "WHERE table_catalog = current_database() AND table_schema = 'main' "
                           "ORDER BY table_name, ordinal_position").fetchall()
    out: dict[str, list] = {}
    for table, column, kind in rows:
        out.setdefault(table, []).append((column, kind))
    return out


def judgment_file(path, judge: str, n: int = 40, model: str = "model-x"):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"question_id": q, "model": model, "judge": [judge, "single-v1"],
                                        "score": 1 + q % 10, "turn": 1}) + "\n" for q in range(n)))
    return path


def test_lake_schema_drops_only_what_ducklake_lacks():
    text = lake_schema()
    for gone in ("PRIMARY KEY", "UNIQUE", "CREATE SEQUENCE", "nextval", "DEFAULT []", "USING COMPRESSION"):
        assert gone not in text
    assert "CREATE TABLE IF NOT EXISTS sources" in text and "DEFAULT current_timestamp" in text
    assert parse_lake("ducklake:postgres:dbname=x host=y") == ("postgres", "dbname=x host=y")
    assert is_lake("ducklake:sqlite:/a") and not is_lake("data/judgelens.duckdb")


def test_same_tables_and_columns_as_the_file(lake_store, store):
    assert columns(lake_store) == columns(store)


def test_sample_gives_the_same_numbers(sample_lake, sample_store):
    lake_store, report = sample_lake   # the sample imported into an empty lake
    assert len(report.imported) == queries.overview_counts(sample_store)["sources"] > 20
    for fn in (lambda s: queries.scores(s, ["harness", "bench", "judge", "model", "turn"]), queries.leaderboard,
               lambda s: agreement.position_consistency(s), lambda s: agreement.parse_failures(s)):
        ours, theirs = fn(lake_store), fn(sample_store)
        sort = list(ours.columns[:4])
        pd.testing.assert_frame_equal(ours.sort_values(sort).reset_index(drop=True),
                                      theirs.sort_values(sort).reset_index(drop=True), check_dtype=False)
    assert queries.overview_counts(lake_store) == queries.overview_counts(sample_store)
    with lake_store.read() as a, sample_store.read() as b:
        # floats to 9 places: the lake may store rows in another order (its own row groups), so a standard
        # deviation may sum in another order and differ in its last bit
        sql = ("SELECT * REPLACE (round(score, 9) AS score, round(score_std, 9) AS score_std) FROM item_scores "
               "ORDER BY ALL")
        assert a.execute(sql).fetchall() == b.execute(sql).fetchall()
        sql = "SELECT source_id, sha256, kind, bench, rows_imported, warnings FROM sources ORDER BY source_id"
        assert a.execute(sql).fetchall() == b.execute(sql).fetchall()


@pytest.fixture
def sqlite_lake(tmp_path, request) -> Store:
    target, data = lake_target("sqlite", tmp_path, request)
    s = Store(target, data_path=data)
    yield s
    s.close()


def test_reimport_is_unchanged_and_ids_are_never_reused(sqlite_lake):
    lake_store = sqlite_lake
    first = ingest(lake_store, [GPT4O])
    assert [f.source_id for f in first.imported] == [1]
    again = ingest(lake_store, [GPT4O])
    assert again.imported == [] and again.unchanged[0].existing_source == 1
    assert remove_source(lake_store, 1)
    with lake_store.read() as cur:
        assert cur.execute("SELECT count(*) FROM single_judgments").fetchone()[0] == 0
        assert cur.execute("SELECT count(*) FROM item_scores").fetchone()[0] == 0
    assert [f.source_id for f in ingest(lake_store, [GPT4O]).imported] == [2]  # like a sequence: no reuse


def test_a_lake_made_before_content_keys_finds_its_files_unchanged(sqlite_lake):
    """A lake whose sources hold sha256 keys (made before issue 26) still finds a file it holds unchanged."""
    from lib.ingest.importer import sha256_of

    first = ingest(sqlite_lake, [GPT4O]).imported[0]
    with sqlite_lake.write() as cur:  # what a JudgeLens before issue 26 wrote
        cur.execute("UPDATE sources SET sha256 = ? WHERE source_id = ?", [sha256_of(GPT4O)[0], first.source_id])
    again = ingest(sqlite_lake, [GPT4O])
    assert again.imported == [] and again.unchanged[0].existing_source == first.source_id
    with sqlite_lake.read() as cur:
        assert cur.execute("SELECT count(*) FROM single_judgments").fetchone()[0] == first.rows


def test_text_tables_write_small_row_groups(sqlite_lake):
    """An import's memory is bounded by the Parquet row groups DuckDB holds while writing (122,880 rows by default:
    about 0.5 GB of judgments per thread): the lake writes LAKE_ROW_GROUP rows per group, and no table overrides it.
    (A lake made before gets it when opened: tests/store/test_lake_reads.py.)"""
    from lib.store.lake import LAKE_ROW_GROUP

    with sqlite_lake.read() as cur:
        options = cur.execute("SELECT scope, value FROM lake.options() WHERE "
                              "option_name = 'parquet_row_group_size'").fetchall()
    assert options == [("GLOBAL", str(LAKE_ROW_GROUP))]


def test_a_failed_import_leaves_nothing(lake_store, tmp_path):
    good = judgment_file(tmp_path / "b1" / "model_judgment" / "gpt-4_single.jsonl", "gpt-4")
    bad = tmp_path / "b2" / "model_judgment" / "gpt-4_single.jsonl"
    judgment_file(bad, "gpt-4")
    bad.write_text(bad.read_text() + "{not json\n")
    snapshot = lake_store.describe()["snapshot"]
    with pytest.raises(IngestError):
        ingest(lake_store, [good, bad])
    with lake_store.read() as cur:
        assert cur.execute("SELECT count(*) FROM sources").fetchone()[0] == 0
        assert cur.execute("SELECT count(*) FROM single_judgments").fetchone()[0] == 0
    assert lake_store.describe()["snapshot"] == snapshot  # not even an empty commit


def _overlapping(store_a: Store, store_b: Store, paths_a, paths_b):
    """Import in two stores (two DuckDB instances: as two processes would) so that both write
    transactions are open at the same time; returns the two reports."""
    barrier = threading.Barrier(2, timeout=30)
    results, errors = [None, None], []

    def run(i, store, paths):
        first = [True]

        def progress(_, msg):
            if msg.startswith("writing") and first[0]:  # inside the write transaction: wait for the other
                first[0] = False
                barrier.wait()
        try:
            results[i] = ingest(store, paths, progress=progress)
        except BaseException as exc:  # noqa: BLE001 - asserted below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(0, store_a, paths_a)),
               threading.Thread(target=run, args=(1, store_b, paths_b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert errors == []
    return results


def test_the_same_file_imported_twice_at_once_lands_once(lake_store):
    other = Store(lake_store.path, data_path=lake_store.data_path)
    try:
        a, b = _overlapping(lake_store, other, [GPT4O], [GPT4O])
    finally:
        other.close()
    assert sorted([len(a.imported), len(b.imported)]) == [0, 1]
    assert sorted([len(a.unchanged), len(b.unchanged)]) == [0, 1]
    with lake_store.read() as cur:
        assert cur.execute("SELECT count(*) FROM sources").fetchone()[0] == 1
        assert cur.execute("SELECT count(*) FROM single_judgments").fetchone()[0] == 320
        assert cur.execute("SELECT sum(n_rows) FROM item_scores").fetchone()[0] == 320


def test_two_files_imported_at_once_both_land_with_their_own_ids(lake_store, tmp_path):
    one = judgment_file(tmp_path / "b1" / "model_judgment" / "judge-one_single.jsonl", "judge-one")
    two = judgment_file(tmp_path / "b2" / "model_judgment" / "judge-two_single.jsonl", "judge-two")
    other = Store(lake_store.path, data_path=lake_store.data_path)
    try:
        a, b = _overlapping(lake_store, other, [one], [two])
    finally:
        other.close()
    assert len(a.imported) == len(b.imported) == 1
    assert {a.imported[0].source_id, b.imported[0].source_id} == {1, 2}
    with lake_store.read() as cur:
        assert cur.execute("SELECT source_id, bench FROM sources ORDER BY 1").fetchall() in (
            [(1, "b1"), (2, "b2")], [(1, "b2"), (2, "b1")])
        assert cur.execute("SELECT judge, count(*) FROM single_judgments GROUP BY 1 ORDER BY 1").fetchall() == [
            ("judge-one", 40), ("judge-two", 40)]
        # each source's rows carry its own id
        assert cur.execute("SELECT count(*) FROM single_judgments j JOIN sources s USING (source_id) "
                           "WHERE s.bench = j.bench").fetchone()[0] == 80


def test_data_version_changes_when_another_process_writes(lake_store, tmp_path):
    from app_pages._store import data_version

    other = Store(lake_store.path, data_path=lake_store.data_path)
    try:
        before = data_version(lake_store)
        ingest(other, [judgment_file(tmp_path / "b" / "model_judgment" / "gpt-4_single.jsonl", "gpt-4")])
        after = data_version(lake_store)
        assert after != before and after[:2] == (1, 1)
        with other.write() as cur:  # any write, e.g. a verdict or a template, not only a new source
            other.set_meta(cur, "note", "x")
        assert data_version(lake_store) != after
    finally:
        other.close()


# ------------------------------------------------------------------------------------------------
# CLI

def test_cli_store_flag_info_and_migrate(tmp_path, capsys, sample_store):
    lake = f"ducklake:sqlite:{tmp_path / 'cli' / 'catalog.sqlite'}"
    data = tmp_path / "cli-data"
    assert main(["ingest", str(EN), "--store", lake, "--data-path", str(data)]) == 0
    assert "imported" in capsys.readouterr().out
    assert main(["store", "info", "--store", lake]) == 0  # the data path is remembered by the catalog
    out = capsys.readouterr().out
    assert "ducklake (sqlite catalog)" in out and str(data) in out and "Parquet file(s)" in out
    assert "rows:    sources 6," in out and "pair_judgments 75" in out

    # migrate the whole sample file into a new store: the same numbers come out
    with sample_store.read() as cur:
        n_judgments, n_sources = cur.execute("SELECT (SELECT count(*) FROM single_judgments), "
                                             "(SELECT count(*) FROM sources)").fetchone()
    sample_store.close()
    target = f"ducklake:sqlite:{tmp_path / 'migrated.sqlite'}"
    assert main(["store", "migrate", "--from", str(sample_store.path), "--to", target]) == 0
    assert f"single_judgments: {n_judgments}\n" in capsys.readouterr().out
    with Store(target) as migrated, Store(sample_store.path) as original:
        by = ["harness", "bench", "judge", "model", "turn"]
        pd.testing.assert_frame_equal(queries.scores(migrated, by), queries.scores(original, by))
        # ids continue where the file's sequence was (as the file would have numbered the next source)
        with original.read() as cur:
            last = cur.execute("SELECT last_value FROM duckdb_sequences() WHERE sequence_name = 'source_ids'"
                               ).fetchone()[0]
        new = judgment_file(tmp_path / "new" / "model_judgment" / "gpt-4_single.jsonl", "gpt-4")
        assert last >= n_sources and [f.source_id for f in ingest(migrated, [new]).imported] == [last + 1]
    assert main(["store", "migrate", "--from", str(sample_store.path), "--to", target]) == 2
    assert "already holds data" in capsys.readouterr().err


def test_cli_store_errors(tmp_path, capsys):
    assert main(["sources", "--db", str(tmp_path / "x.duckdb"), "--store", "ducklake:sqlite:y"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["sources", "--store", "ducklake:mysql:z"]) == 2
    assert "ducklake:sqlite:FILE" in capsys.readouterr().err


def test_env_selects_the_lake(tmp_path, monkeypatch, capsys, request):
    target, data = lake_target("sqlite", tmp_path, request)
    monkeypatch.setenv("JUDGELENS_STORE", target)
    monkeypatch.setenv("JUDGELENS_DATA_PATH", str(data))
    assert main(["ingest", str(GPT4O)]) == 0
    capsys.readouterr()
    assert main(["store", "info"]) == 0
    assert f"store:   {target}" in capsys.readouterr().out
    assert not (tmp_path / "default.duckdb").exists()  # the DuckDB file was not touched
