"""Hostile or unlucky file contents (issue 8, defects 8, 10, 14): each is a bad line with its FILE:LINE and
reason, or a note that says what happened; nothing crashes and nothing is imported silently."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import SWALLOW

from lib import cli
from lib.errors import FormatError, IngestError
from lib.ingest.formats.jsonl import TOO_DEEP
from lib.ingest.importer import ingest

GOOD = {"question_id": 1, "model": "m", "judge": ["j", "single-v1"], "score": 5, "turn": 1,
        "judgment": "Rating: [[5]]"}
DEEP = "[" * 100_000 + "]" * 100_000
TOO_DEEP_TEXT = ("a JSON value is nested too deeply (about a thousand levels of [ or {); harness records nest a "
                 "few levels, so this line is not one")


def bench_file(tmp_path: Path, rel: str, text: str) -> Path:
    path = tmp_path / "b" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def deep_line(**fields) -> str:
    """A record whose "judgment" (or another field) is nested 100 000 levels deep."""
    key, = fields
    head = json.dumps({k: v for k, v in GOOD.items() if k != key})[:-1]
    return f'{head}, "{key}": {DEEP}}}'


def sources(store) -> list[tuple]:
    with store.read() as cur:
        return cur.execute("SELECT file_name, rows_imported, rows_skipped, warnings FROM sources "
                           "ORDER BY file_name").fetchall()


# --- defect 8: deep nesting -------------------------------------------------------------------

def test_message_constant():
    assert TOO_DEEP == TOO_DEEP_TEXT


@pytest.mark.parametrize("rel, line", [
    ("model_judgment/j_single.jsonl", deep_line(judgment=None)),          # the fast path's file kind
    ("model_answer/m.jsonl", '{"question_id": 2, "choices": ' + DEEP + "}"),
    ("question.jsonl", '{"question_id": 2, "category": "x", "turns": ' + DEEP + "}"),
])
def test_deep_nesting_is_a_bad_line(store, tmp_path, rel, line):
    first = {"model_judgment/j_single.jsonl": json.dumps(GOOD),
             "model_answer/m.jsonl": json.dumps({"question_id": 1, "choices": [{"index": 0, "turns": ["a"]}]}),
             "question.jsonl": json.dumps({"question_id": 1, "category": "x", "turns": ["q"]})}[rel]
    bench_file(tmp_path, rel, first + "\n" + line + "\n")
    with pytest.raises(IngestError) as info:
        ingest(store, [tmp_path / "b"])
    assert [str(p) for p in info.value.problems] == [f"b/{rel}:2: {TOO_DEEP_TEXT}"]
    report = ingest(store, [tmp_path / "b"], skip_bad_lines=True)
    assert [(f.rows, len(f.skipped)) for f in report.imported] == [(1, 1)]


def test_deep_nesting_in_the_cli(tmp_path, capsys):
    bench_file(tmp_path, "model_judgment/j_single.jsonl", json.dumps(GOOD) + "\n" + deep_line(judgment=None))
    db = str(tmp_path / "x.duckdb")
    assert cli.main(["ingest", "--db", db, str(tmp_path / "b")]) == 1
    assert capsys.readouterr().err.startswith(f"b/model_judgment/j_single.jsonl:2: {TOO_DEEP_TEXT}\nNothing was imported.")
    assert cli.main(["ingest", "--db", db, "--skip-bad-lines", str(tmp_path / "b")]) == 0
    assert "single_judgments, 1 record(s) -> source " in (out := capsys.readouterr().out) and "1 bad line(s) skipped" in out


def test_deep_nesting_in_a_loose_file_and_a_results_file(store, tmp_path):
    loose = tmp_path / "loose.jsonl"
    loose.write_text(deep_line(judgment=None) + "\n")
    with pytest.raises(FormatError) as info:
        ingest(store, [loose])
    assert str(info.value).startswith(f"{loose}: the first record is not valid JSON, so JudgeLens cannot tell")
    results = tmp_path / "results_2026-01-01T00-00-00.000000.json"
    results.write_text('{"results": ' + DEEP + "}")
    with pytest.raises(IngestError) as info:
        ingest(store, [results])
    assert [str(p) for p in info.value.problems] == [
        f"{results}: not a readable lighteval results JSON file ({TOO_DEEP_TEXT})"]


# --- defect 10: NaN and Infinity in Swallow results ---------------------------------------------

def results_copy(tmp_path: Path, replace: dict[str, str]) -> Path:
    src = next((SWALLOW / "results").rglob("results_*.json"))
    dest = tmp_path / "results" / src.relative_to(SWALLOW / "results")
    dest.parent.mkdir(parents=True)
    text = src.read_text(encoding="utf-8")
    for old, new in replace.items():
        assert old in text
        text = text.replace(old, new, 1)
    dest.write_text(text, encoding="utf-8")
    return dest


def test_nan_and_infinity_in_results_are_bad_lines(store, tmp_path):
    path = results_copy(tmp_path, {'"judge_score_overall_turn_1_avg": 0.': '"judge_score_overall_turn_1_avg": NaN, "x": 0.',
                                   '"judge_score_overall_avg": 0.': '"judge_score_overall_avg": -Infinity, "y": 0.'})
    lines = path.read_text().splitlines()
    nan_line = next(i for i, t in enumerate(lines, 1) if '"judge_score_overall_turn_1_avg": NaN' in t)
    inf_line = next(i for i, t in enumerate(lines, 1) if '"judge_score_overall_avg": -Infinity' in t)
    with pytest.raises(IngestError) as info:
        ingest(store, [path])
    task = "swallow|japanese_mt_bench|0"
    assert [str(p) for p in info.value.problems] == [
        f'{path}:{nan_line}: "judge_score_overall_turn_1_avg" of {task} is nan, not a score: a reported metric '
        "must be a finite number (was the run cut short?)",
        f'{path}:{inf_line}: "judge_score_overall_avg" of {task} is -inf, not a score: a reported metric '
        "must be a finite number (was the run cut short?)"]
    report = ingest(store, [path], skip_bad_lines=True)
    assert len(report.imported[0].skipped) == 2
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM reported_metrics WHERE NOT isfinite(value)").fetchone() == (0,)
        assert cur.execute("SELECT count(*) FROM reported_metrics WHERE metric IN "
                           "('judge_score_overall_turn_1_avg', 'judge_score_overall_avg')").fetchone() == (0,)


def test_a_non_finite_stderr_is_stored_as_unknown_with_a_note(store, tmp_path):
    path = results_copy(tmp_path, {'"judge_score_overall_avg_stderr": 0.': '"judge_score_overall_avg_stderr": NaN, "z": 0.'})
    ingest(store, [path])
    with store.read() as cur:
        assert cur.execute("SELECT value IS NOT NULL, stderr FROM reported_metrics "
                           "WHERE metric = 'judge_score_overall_avg'").fetchall() == [(True, None)]
    assert ['"judge_score_overall_avg_stderr" of swallow|japanese_mt_bench|0 is nan: stored as unknown'] == [
        w for w in sources(store)[0][3] if "stderr" in w]


# --- defect 14: blank files, all-bad files ------------------------------------------------------

@pytest.mark.parametrize("rel", ["model_judgment/j_single.jsonl", "model_answer/m.jsonl"])
def test_a_file_of_blank_lines_says_so(store, tmp_path, rel):
    bench_file(tmp_path, rel, "\n  \n\t\n\n")
    report = ingest(store, [tmp_path / "b"])
    assert [f.warnings for f in report.imported] == [["empty file: no records (it holds only blank lines)"]]
    assert "note: empty file: no records (it holds only blank lines)" in report.summary()


def test_an_empty_file_keeps_its_note(store, tmp_path):
    bench_file(tmp_path, "model_judgment/j_single.jsonl", "")
    assert ingest(store, [tmp_path / "b"]).imported[0].warnings == ["empty file: no records"]


@pytest.mark.parametrize("rel", ["model_judgment/j_single.jsonl", "model_answer/m.jsonl"])
def test_skip_bad_lines_on_a_file_with_no_good_line_refuses_it(store, tmp_path, rel):
    path = bench_file(tmp_path, rel, '{"question_id": 1}\n{"nope": \n')
    good = bench_file(tmp_path, "question.jsonl", json.dumps({"question_id": 1, "category": "x", "turns": ["q"]}))
    report = ingest(store, [tmp_path / "b"], skip_bad_lines=True)
    missing = 'missing field "model"' if "judgment" in rel else 'missing field "choices"'
    assert [f.path for f in report.imported] == [good]
    assert [f.path for f in report.refused] == [path]
    assert report.refused[0].line() == (
        f"refused    b/{rel} [b]: every record is bad (2 bad line(s)), so nothing was imported from it; "
        f"the first: line 1: {missing}")
    assert report.summary().startswith("1 file(s) imported, 0 unchanged (already imported), 1 refused\n")
    assert [s[0] for s in sources(store)] == ["question.jsonl"]


def test_skip_bad_lines_on_results_with_no_finite_metric(store, tmp_path):
    path = tmp_path / "results_2026-01-01T00-00-00.000000.json"
    path.write_text(json.dumps({"config_general": {"model_name": "m"},
                                "results": {"swallow|japanese_mt_bench|0": {"a": float("nan")}}}))
    report = ingest(store, [path], skip_bad_lines=True)
    assert report.refused[0].warnings == [
        'every record is bad (1 bad line(s)), so nothing was imported from it; the first: line 1: "a" of '
        "swallow|japanese_mt_bench|0 is nan, not a score: a reported metric must be a finite number (was the run "
        "cut short?)"]
    assert sources(store) == []


# --- defect 14: a parser regex that runs out of time ---------------------------------------------

def test_a_regex_timeout_is_named_in_the_batch_summary(sample_store):
    from fake_openai import FakeOpenAI

    from lib.judging.batch import run_batch
    from lib.judging.config import JudgeConfig
    from lib.judging import templates as T
    from lib.judging.context import select_items

    base = T.get_template(sample_store, "single-v1")
    slow = T.save_template(sample_store, T.Template(name="slow-regex", messages=base.messages,
                                                    parser={"kind": "regex", "pattern": r"^(a+)+$", "scale": [1, 10]}))
    items = select_items(sample_store, bench="mt_bench", turn=1, limit=2)
    with FakeOpenAI() as server:
        server.responder = lambda body: "a" * 40 + "!"
        config = JudgeConfig(base_url=server.url, model="judge-x", timeout_s=5, max_retries=0)
        summary = run_batch(sample_store, slow, config, items, "slow", api_key="sk-test-0123456789")
    assert (summary.not_parsed, summary.regex_timeouts) == (2, 2)
    assert ("verdicts written: 2 (ok 0, not parsed 2, out of range 0, API errors 0)\n2 of the not parsed: the "
            "template's parser regex took too long on the judge's output and was stopped; simplify the pattern (no "
            "nested repeats such as (a+)+) and run the batch again (the answers come from the cache)") in summary.text()
