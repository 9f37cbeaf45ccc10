"""Bad input: one fixture file per failure mode (tests/data/bad/), refused with FILE:LINE: reason and
nothing written, or accepted on purpose (BOM, empty file, duplicate lines) with a note on the source."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest
from conftest import JA, ROOT, TEST_DATA

from lib import cli
from lib.errors import FormatError, IngestError
from lib.ingest.importer import DATA_TABLES, ingest
from lib.analysis.queries import skipped_lines
from lib.store import Store

BAD = TEST_DATA / "bad" / "model_judgment"
# good files of every reader: questions and answers (line by line) and judgments (DuckDB fast path); all are
# written before the bad file in the same transaction (files are written in kind order, then by name)
GOOD = [JA / "ja_mt_bench" / "question.jsonl",
        JA / "ja_mt_bench" / "model_answer" / "shisa-ai__shisa-v2-llama3.1-8b.jsonl",
        JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"]
CUT_OFF = "(the last line looks cut off: was the file still being written?)"

# fixture -> (bad line, the reason a user reads, how many lines of the file are good)
REFUSED = {
    "truncated_last_line_single.jsonl": (4, f"not valid JSON: Unterminated string starting at column 53 {CUT_OFF}", 3),
    "invalid_utf8_single.jsonl": (2, "not valid UTF-8 (byte 0xff at position 145 of the line); save the file as UTF-8", 2),
    "score_not_a_number_single.jsonl": (2, '"score" must be a number, got "N/A"', 2),
    "judge_is_number_single.jsonl": (2, '"judge" must be a list [judge_model, prompt_name] (or a judge model name)', 2),
    "question_id_object_single.jsonl": (2, '"question_id" must be an integer or a string, got {"id": 82}', 2),
    "missing_score_single.jsonl": (2, 'missing field "score"', 2),
    "missing_model_single.jsonl": (3, 'missing field "model"', 3),
    "array_line_single.jsonl": (2, "expected one JSON object per line, got a list", 2),
}


def table_counts(store: Store) -> dict[str, int]:
    with store.read() as cur:
        counts = {t: cur.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in DATA_TABLES}
        counts["sources"] = cur.execute("SELECT count(*) FROM sources").fetchone()[0]
    return counts


def assert_empty(store: Store) -> None:
    assert table_counts(store) == {t: 0 for t in [*DATA_TABLES, "sources"]}


def test_every_fixture_is_covered():
    covered = set(REFUSED) | {"bom_single.jsonl", "empty_single.jsonl", "duplicate_lines_single.jsonl"}
    assert {p.name for p in BAD.iterdir()} == covered


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_alone(store, name):
    line, reason, _ = REFUSED[name]
    path = BAD / name
    with pytest.raises(IngestError) as info:
        ingest(store, [path])
    err = info.value
    assert [str(p) for p in err.problems] == [f"{path}:{line}: {reason}"]
    assert f"{name}:{line}: {reason}" in str(err)
    assert "--skip-bad-lines" in str(err)  # says how to get past it
    assert_empty(store)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_with_good_files_writes_nothing(store, name):
    """Good files and the bad one in one call: the good rows already written in the transaction roll back."""
    line, reason, _ = REFUSED[name]
    with pytest.raises(IngestError) as info:
        ingest(store, [*GOOD, BAD / name])
    assert [(p.path, p.line, p.reason) for p in info.value.problems] == [(str(BAD / name), line, reason)]
    assert_empty(store)


def test_store_usable_after_a_refused_import(store):
    with pytest.raises(IngestError):
        ingest(store, [JA / "ja_mt_bench", BAD / "missing_score_single.jsonl"])
    assert_empty(store)
    report = ingest(store, [JA / "ja_mt_bench"])
    assert len(report.imported) == 9 and table_counts(store)["single_judgments"] == 960


def test_bad_answer_file_read_before_writing(store, tmp_path):
    """A bad file read line by line (not the judgment fast path) is refused before anything is written."""
    bench = tmp_path / "ja_mt_bench"
    shutil.copytree(JA / "ja_mt_bench", bench)
    answers = bench / "model_answer" / "shisa-ai__shisa-v2-llama3.1-8b.jsonl"
    data = answers.read_bytes()
    answers.write_bytes(data[: len(data) - 40])  # the writer died inside line 80
    with pytest.raises(IngestError) as info:
        ingest(store, [bench])
    (problem,) = info.value.problems
    assert problem.line == 80 and problem.path.endswith("shisa-ai__shisa-v2-llama3.1-8b.jsonl")
    assert problem.reason.startswith("not valid JSON: ") and problem.reason.endswith(CUT_OFF)
    assert_empty(store)


def test_all_bad_files_are_listed(store):
    """Two bad judgment files in one import: the error names the bad lines of both."""
    names = ["missing_score_single.jsonl", "score_not_a_number_single.jsonl"]
    with pytest.raises(IngestError) as info:
        ingest(store, [BAD / n for n in names])
    assert sorted((p.path, p.line) for p in info.value.problems) == [(str(BAD / n), 2) for n in names]
    assert_empty(store)


def test_huge_line_refused(store, tmp_path):
    folder = tmp_path / "huge" / "model_judgment"
    folder.mkdir(parents=True)
    path = folder / "gpt-4_single.jsonl"
    good = json.dumps({"question_id": 1, "model": "m", "judge": ["gpt-4", "single-v1"], "score": 5, "turn": 1,
                       "judgment": "Rating: [[5]]"})
    big = json.dumps({"question_id": 2, "model": "m", "judge": ["gpt-4", "single-v1"], "score": 5, "turn": 1,
                      "judgment": "x" * (33 * 2**20)})
    path.write_text(f"{good}\n{big}\n{good}\n")
    with pytest.raises(IngestError) as info:
        ingest(store, [path])
    (problem,) = info.value.problems
    assert str(problem) == f"{path}:2: line is 34.6 MB, over the 32 MiB limit for one record"
    assert_empty(store)
    report = ingest(store, [path], skip_bad_lines=True)
    assert report.imported[0].rows == 2
    assert skipped_lines(store, report.imported[0].source_id) == [
        {"line": 2, "reason": "line is 34.6 MB, over the 32 MiB limit for one record"}]


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_skip_bad_lines(store, name):
    line, reason, good_lines = REFUSED[name]
    report = ingest(store, [BAD / name], skip_bad_lines=True)
    (item,) = report.imported
    assert item.rows == good_lines and [p.line for p in item.skipped] == [line]
    with store.read() as cur:
        row = cur.execute("SELECT rows_imported, rows_skipped, skipped_lines FROM sources WHERE source_id = ?",
                          [item.source_id]).fetchone()
        n = cur.execute("SELECT count(*) FROM single_judgments WHERE source_id = ?", [item.source_id]).fetchone()[0]
        qids = [r[0] for r in cur.execute("SELECT question_id FROM single_judgments ORDER BY question_id").fetchall()]
    assert row[:2] == (good_lines, 1)
    assert json.loads(row[2]) == [{"line": line, "reason": reason}]
    assert skipped_lines(store, item.source_id) == [{"line": line, "reason": reason}]
    assert n == good_lines
    assert str(80 + line) not in qids  # the bad line's question (81 + line - 1) is not there
    assert "1 bad line(s) skipped" in report.summary()


def test_bom_is_accepted_with_a_warning(store):
    report = ingest(store, [BAD / "bom_single.jsonl"])
    (item,) = report.imported
    assert item.rows == 2 and not item.fast  # a BOM sends the file to the line-by-line reader
    with store.read() as cur:
        warnings, = cur.execute("SELECT warnings FROM sources").fetchone()
        qids = cur.execute("SELECT question_id, score FROM single_judgments ORDER BY 1").fetchall()
    assert "the file starts with a UTF-8 byte-order mark (BOM); it was ignored" in warnings
    assert qids == [("81", 7.0), ("82", 7.0)]  # line 1 is read, not lost to the BOM


def test_empty_file_is_accepted_with_a_warning(store):
    report = ingest(store, [BAD / "empty_single.jsonl"])
    (item,) = report.imported
    assert item.rows == 0
    with store.read() as cur:
        assert cur.execute("SELECT rows_imported, warnings FROM sources").fetchone() == (0, ["empty file: no records"])
    assert table_counts(store)["single_judgments"] == 0


def test_duplicate_lines_are_kept_and_noted(store):
    report = ingest(store, [BAD / "duplicate_lines_single.jsonl"])
    assert report.imported[0].rows == 4
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM single_judgments WHERE question_id = '82'").fetchone()[0] == 2
        warnings, = cur.execute("SELECT warnings FROM sources").fetchone()
        assert cur.execute("SELECT n_rows FROM item_scores WHERE question_id = '82'").fetchone()[0] == 2
    assert warnings == ["1 item(s) are judged more than once: all rows are kept and means average them per item"]


def test_loose_file_with_a_list_first_is_not_called_empty(store, tmp_path):
    """A file outside the FastChat layout is classified by its first record; a list there is not "empty"."""
    path = tmp_path / "judgments.jsonl"
    path.write_text('[1, 2]\n{"question_id": 1}\n')
    with pytest.raises(FormatError) as info:
        ingest(store, [path])
    text = str(info.value)
    assert "empty" not in text
    assert text.startswith(f"{path}: the first record is a JSON list, not an object")
    assert_empty(store)


def test_turn_out_of_range_is_a_line_problem(store, tmp_path):
    """A turn too big for the INTEGER column is refused with its line, not a DuckDB traceback."""
    folder = tmp_path / "b" / "model_judgment"
    folder.mkdir(parents=True)
    path = folder / "gpt-4_single.jsonl"
    path.write_text(json.dumps({"question_id": 1, "model": "m", "judge": ["gpt-4", "single-v1"], "score": 5,
                                "turn": 10**10}) + "\n")
    with pytest.raises(IngestError) as info:
        ingest(store, [path])
    assert [str(p) for p in info.value.problems] == [
        f"{path}:1: \"turn\" must be a whole number from 1, got 10000000000"]
    assert_empty(store)


# --- the same through the CLI -----------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(REFUSED))
def test_cli_refuses(tmp_path, capsys, name):
    line, reason, _ = REFUSED[name]
    db = tmp_path / "cli.duckdb"
    code = cli.main(["ingest", "--db", str(db), *map(str, GOOD), str(BAD / name)])
    out, err = capsys.readouterr()
    assert code == 1
    assert f"{BAD / name}:{line}: {reason}\n" in err
    assert "Nothing was imported." in err
    assert out == ""
    with Store(db) as s:
        assert_empty(s)


def test_cli_subprocess_refuses_without_traceback(tmp_path):
    db = tmp_path / "cli.duckdb"
    name = "missing_model_single.jsonl"
    proc = subprocess.run([sys.executable, "-m", "lib.cli", "ingest", "--db", str(db), str(BAD / name)],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1
    assert proc.stderr.startswith(f'{BAD / name}:3: missing field "model"\n')
    assert "Traceback" not in proc.stderr


def test_cli_skip_bad_lines(tmp_path, capsys):
    db = tmp_path / "cli.duckdb"
    name = "score_not_a_number_single.jsonl"
    assert cli.main(["ingest", "--db", str(db), "--skip-bad-lines", str(BAD / name)]) == 0
    out = capsys.readouterr().out
    assert "single_judgments, 2 record(s)" in out and "1 bad line(s) skipped" in out
    with Store(db) as s, s.read() as cur:
        assert cur.execute("SELECT rows_imported, rows_skipped, skipped_lines::VARCHAR FROM sources").fetchone() == (
            2, 1, json.dumps([{"line": 2, "reason": '"score" must be a number, got "N/A"'}]))
