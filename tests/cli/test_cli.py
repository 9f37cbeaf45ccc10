"""``python -m lib.cli``: reports, output formats, exit codes; idempotent import and source removal."""
from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys

import pytest
from conftest import JA, ROOT, SAMPLE

from lib import cli
from lib.analysis import queries
from lib.ingest.importer import DATA_TABLES, ingest, remove_source
from lib.store import Store

JA_BENCH = JA / "ja_mt_bench"
GPT4O = JA_BENCH / "model_judgment" / "gpt-4o_single.jsonl"


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "lib.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def counts(store: Store) -> dict[str, int]:
    with store.read() as cur:
        return {t: cur.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in [*DATA_TABLES, "sources"]}


@pytest.fixture(scope="module")
def _ja_db(tmp_path_factory):
    path = tmp_path_factory.mktemp("ja") / "ja.duckdb"
    with Store(path) as s:
        ingest(s, [JA_BENCH])
    return path


@pytest.fixture
def db(_ja_db, tmp_path):
    """A DuckDB file holding the JA bench (a fresh copy per test)."""
    path = tmp_path / "cli.duckdb"
    shutil.copy(_ja_db, path)
    return path


def test_ingest_subprocess_report(tmp_path, capsys):
    db = tmp_path / "sub.duckdb"
    proc = run("ingest", "--db", str(db), str(JA_BENCH))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "9 file(s) imported, 0 unchanged (already imported)"
    assert "imported   ja_mt_bench/model_judgment/gpt-4o_single.jsonl [ja_mt_bench]: single_judgments, 320 record(s)" \
        " -> source" in proc.stdout
    assert len(lines) == 10 and proc.stderr == ""
    assert cli.main(["ingest", "--db", str(db), str(JA_BENCH)]) == 0
    again = capsys.readouterr().out.splitlines()
    assert again[0] == "0 file(s) imported, 9 unchanged (already imported): nothing changed"
    assert again[1].startswith("unchanged  ja_mt_bench/question.jsonl [ja_mt_bench]: already imported as source ")


def test_scores_json(db, capsys):
    assert cli.main(["scores", "--db", str(db), "--by", "judge,model,turn", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    rows = json.loads(out)
    assert isinstance(rows, list) and len(rows) == 12
    assert all(set(r) == {"judge", "model", "turn", "mean", "n", "rule"} and r["rule"] == "item" for r in rows)
    first = rows[0]  # ordered by the group keys
    assert (first["judge"], first["model"], first["turn"], first["n"]) == (
        "gpt-4.1-2025-04-14", "shisa-ai/shisa-v2-llama3.1-8b", 1, 80)
    assert first["mean"] == pytest.approx(7.4125)
    assert err.strip() == queries.rule_note("item")


def test_scores_csv(db, capsys):
    assert cli.main(["scores", "--db", str(db), "--by", "model", "--format", "csv"]) == 0
    out, err = capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(out)))
    assert [r["model"] for r in rows] == ["shisa-ai/shisa-v2-llama3.1-8b", "shisa-ai/shisa-v2-llama3.3-70b"]
    assert [int(r["n"]) for r in rows] == [480, 480]  # 3 judges x 80 questions x 2 turns
    assert list(rows[0]) == ["model", "mean", "n", "rule"]
    assert "averaged per item" in err


def test_scores_table_states_the_mean_rule(db, capsys):
    assert cli.main(["scores", "--db", str(db), "--by", "judge,turn", "--bench", "ja_mt_bench"]) == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[0].split() == ["judge", "turn", "mean", "n", "rule"]
    assert ["gpt-4o", "1", "8.3562", "160", "item"] in [line.split() for line in out.splitlines()]  # (9.075 + 7.6375) / 2
    assert "Repeated judgments of one item (re-runs, Swallow's 5 samples) are averaged per item first" in out
    assert err == ""


def test_scores_filters(db, capsys):
    assert cli.main(["scores", "--db", str(db), "--by", "harness", "--format", "json", "--harness", "swallow"]) == 0
    assert json.loads(capsys.readouterr().out) == []
    assert cli.main(["scores", "--db", str(db), "--by", "", "--format", "json"]) == 0
    (overall,) = json.loads(capsys.readouterr().out)
    assert overall["n"] == 960


def test_unknown_group_key(db, capsys):
    assert cli.main(["scores", "--db", str(db), "--by", "judge,colour"]) == 2
    out, err = capsys.readouterr()
    assert err.strip() == "unknown group key(s) colour; choose from harness, bench, judge, model, turn, category"
    assert out == ""


def test_sources_json(db, capsys):
    assert cli.main(["sources", "--db", str(db), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 9
    assert {"source_id", "harness", "kind", "bench", "file_name", "rows_imported", "rows_skipped", "warnings",
            "sha256", "path", "bytes", "imported_at"} <= set(rows[0])
    by_name = {r["file_name"]: r for r in rows}
    assert by_name["gpt-4o_single.jsonl"]["rows_imported"] == 320
    assert by_name["gpt-4o_single.jsonl"]["kind"] == "single_judgments"
    assert by_name["question.jsonl"]["rows_imported"] == 80


def test_sources_table(db, capsys):
    assert cli.main(["sources", "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split() == ["source_id", "harness", "kind", "bench", "file_name", "rows_imported",
                                           "rows_skipped", "warnings"]
    assert len(out.splitlines()) == 10


def test_remove(db, capsys):
    with Store(db) as s, s.read() as cur:
        sid = cur.execute("SELECT source_id FROM sources WHERE file_name = 'gpt-4o_single.jsonl'").fetchone()[0]
    assert cli.main(["remove", "--db", str(db), str(sid)]) == 0
    assert capsys.readouterr().out.strip() == f"Removed source {sid} and everything imported from it."
    with Store(db) as s:
        c = counts(s)
    assert (c["sources"], c["single_judgments"]) == (8, 640)
    assert cli.main(["remove", "--db", str(db), str(sid)]) == 2
    assert capsys.readouterr().err.strip() == f"No source {sid}. See `python -m lib.cli sources`."


def test_remove_unknown(db, capsys):
    assert cli.main(["remove", "--db", str(db), "4242"]) == 2
    assert capsys.readouterr().err.strip() == "No source 4242. See `python -m lib.cli sources`."


def test_nothing_to_import(tmp_path, capsys):
    assert cli.main(["ingest", "--db", str(tmp_path / "x.duckdb"), str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.strip() == f"{tmp_path / 'missing'}: no such file or folder"
    (tmp_path / "empty").mkdir()
    assert cli.main(["ingest", "--db", str(tmp_path / "x.duckdb"), str(tmp_path / "empty")]) == 2
    assert capsys.readouterr().err.startswith(f"Found no harness files in {tmp_path / 'empty'}.")


# --- idempotence and removal through the library --------------------------------------------

def test_sample_twice_changes_nothing(sample_store):
    before = counts(sample_store)
    report = ingest(sample_store, [SAMPLE])
    assert report.imported == [] and len(report.unchanged) == before["sources"] == 24
    assert report.summary().splitlines()[0] == ("0 file(s) imported, 24 unchanged (already imported): nothing changed, "
                                                "1 not read")
    # the sample's copy of Swallow's judge prompt templates is documentation, and the import says it did not read it
    assert [name for name, _ in report.not_read] == ["sample/swallow/judge_prompt_templates.json"]
    assert counts(sample_store) == before


def test_one_changed_byte_is_a_new_source(store, tmp_path):
    copy = tmp_path / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"
    copy.parent.mkdir(parents=True)
    shutil.copy(GPT4O, copy)
    first = ingest(store, [copy]).imported[0]
    data = bytearray(copy.read_bytes())
    i = data.index(b'"score": 9')
    data[i + 9] = ord("8")  # one byte: a 9 becomes an 8
    copy.write_bytes(bytes(data))
    report = ingest(store, [copy])
    (second,) = report.imported
    assert second.source_id != first.source_id and second.sha256 != first.sha256
    assert counts(store)["sources"] == 2 and counts(store)["single_judgments"] == 640


def test_same_bytes_twice_in_one_call(store, tmp_path):
    copy = tmp_path / "elsewhere" / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"
    copy.parent.mkdir(parents=True)
    shutil.copy(GPT4O, copy)
    report = ingest(store, [GPT4O, copy])
    assert len(report.imported) == 1 and len(report.unchanged) == 1
    assert report.unchanged[0].existing_source == report.imported[0].source_id
    assert counts(store)["single_judgments"] == 320


def test_remove_source_deletes_every_row(sample_store):
    before = counts(sample_store)
    with sample_store.read() as cur:
        sid, = cur.execute("SELECT source_id FROM sources WHERE kind = 'swallow_details' ORDER BY 1 LIMIT 1").fetchone()
    assert remove_source(sample_store, sid) is True
    after = counts(sample_store)
    assert after["sources"] == before["sources"] - 1
    assert before["single_judgments"] - after["single_judgments"] == 800
    assert before["answers"] - after["answers"] == 800
    assert before["questions"] - after["questions"] == 80
    with sample_store.read() as cur:
        for table in DATA_TABLES:
            assert cur.execute(f"SELECT count(*) FROM {table} WHERE source_id = ?", [sid]).fetchone()[0] == 0
    assert remove_source(sample_store, sid) is False
    # importing it again brings exactly those rows back
    assert len(ingest(sample_store, [SAMPLE]).imported) == 1
    assert counts(sample_store) == {**before, "sources": before["sources"]}
