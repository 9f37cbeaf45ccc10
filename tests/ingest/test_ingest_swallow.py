"""Swallow (lighteval 0.8 fork) results JSON and details parquet."""
from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from conftest import SWALLOW

from lib.errors import IngestError
from lib.ingest.importer import DATA_TABLES, ingest

CHAT = "hosted_vllm/fake-org/Fake-JA-Chat-8B"
REASONER = "hosted_vllm/fake-org/Fake-JA-Reasoner-32B"
SHISA_8B = "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b"    # data/sample/swallow-same-models/
SHISA_70B = "hosted_vllm/shisa-ai/shisa-v2-llama3.3-70b"
CHAT_RUN = "2026-11-22T05-37-47.223639"
CHAT_DETAILS = SWALLOW / "details" / CHAT / CHAT_RUN / f"details_swallow|japanese_mt_bench|0_{CHAT_RUN}.parquet"
CHAT_RESULTS = SWALLOW / "results" / CHAT / f"results_{CHAT_RUN}.json"


def rows_of(store, sql: str, params=None) -> list[tuple]:
    with store.read() as cur:
        return cur.execute(sql, params or []).fetchall()


def total_rows(store) -> int:
    return sum(rows_of(store, f"SELECT count(*) FROM {t}")[0][0] for t in [*DATA_TABLES, "sources"])


def test_details_explode_per_run(sample_store):
    got = rows_of(sample_store, """
        SELECT model, count(*), count(DISTINCT question_id), count(DISTINCT (question_id, turn, sample)),
               min(sample), max(sample), min(turn), max(turn), any_value(judge)
        FROM single_judgments WHERE harness = 'swallow' GROUP BY model ORDER BY model""")
    assert got == [(CHAT, 800, 80, 800, 0, 4, 1, 2, "gpt-4o-2024-08-06"),
                   (REASONER, 800, 80, 800, 0, 4, 1, 2, "gpt-4o-2024-08-06"),
                   (SHISA_8B, 800, 80, 800, 0, 4, 1, 2, "gpt-4o-2024-08-06"),
                   (SHISA_70B, 800, 80, 800, 0, 4, 1, 2, "gpt-4o-2024-08-06")]
    answers = rows_of(sample_store, """SELECT model, count(*), count(DISTINCT (question_id, turn, sample))
                                       FROM answers WHERE harness = 'swallow' GROUP BY model ORDER BY model""")
    assert answers == [(CHAT, 800, 800), (REASONER, 800, 800), (SHISA_8B, 800, 800), (SHISA_70B, 800, 800)]
    # one question row per details row; failures (-1) kept and flagged, as the sample's README counts them
    assert rows_of(sample_store, "SELECT count(*) FROM questions WHERE bench = 'japanese_mt_bench'") == [(320,)]
    assert rows_of(sample_store, """SELECT model, count(*) FILTER (parse_status = 'not_parsed'),
                                           count(*) FILTER (raw_score = -1), count(*) FILTER (score IS NULL)
                                    FROM single_judgments WHERE harness = 'swallow' GROUP BY model ORDER BY model""") == [
        (CHAT, 26, 26, 26), (REASONER, 44, 44, 44), (SHISA_8B, 19, 19, 19), (SHISA_70B, 11, 11, 11)]


def test_answers_carry_system_prompt_temperature_and_truncation(sample_store):
    got = rows_of(sample_store, """
        SELECT model, count(DISTINCT system_prompt), any_value(system_prompt), min(max_chars), max(max_chars),
               count(*) FILTER (length(text) = 8192), max(length(text))
        FROM answers WHERE harness = 'swallow' GROUP BY model ORDER BY model""")
    assert got == [(CHAT, 1, "あなたは誠実で優秀な日本人のアシスタントです。", 8192, 8192, 23, 8192),
                   (REASONER, 1, "あなたは誠実で優秀な日本人のアシスタントです。", 8192, 8192, 0, 239),
                   # same-models: the real JA-harness answers, at most 2,519 characters (its README)
                   (SHISA_8B, 1, "あなたは誠実で優秀な日本人のアシスタントです。", 8192, 8192, 0, 2519),
                   (SHISA_70B, 1, "あなたは誠実で優秀な日本人のアシスタントです。", 8192, 8192, 0, 2416)]
    # temperature per question, as the details say (the fork's per-category temperatures)
    specifics = pq.read_table(CHAT_DETAILS, columns=["specifics"]).column("specifics").to_pylist()
    expected = {(str(s["id"]), s["temperature"]) for s in specifics}
    stored = set(rows_of(sample_store, "SELECT DISTINCT question_id, temperature FROM answers WHERE model = ?", [CHAT]))
    assert stored == expected and {t for _, t in expected} == {0.0, 0.1, 0.7}


def test_judge_prompt_and_prompt_names(sample_store):
    got = rows_of(sample_store, """
        SELECT prompt_name, count(*) FROM single_judgments j JOIN current_questions q USING (bench, question_id)
        WHERE harness = 'swallow' AND model = ? GROUP BY ALL ORDER BY ALL""", [CHAT])
    # math, reasoning and coding (3 x 10 questions) are judged against the reference
    assert got == [("swallow-single-math-v1", 150), ("swallow-single-math-v1-multi-turn", 150),
                   ("swallow-single-v1", 250), ("swallow-single-v1-multi-turn", 250)]
    prompt = rows_of(sample_store, "SELECT judge_prompt FROM single_judgments WHERE harness = 'swallow' LIMIT 1")[0][0]
    assert prompt.startswith('[{"role": "system"') or prompt.startswith('[{"content"')


def test_model_from_folder_layout(store):
    report = ingest(store, [CHAT_DETAILS])
    assert report.imported[0].bench == "japanese_mt_bench"
    assert rows_of(store, "SELECT DISTINCT model FROM single_judgments") == [(CHAT,)]


def test_details_alone_with_results_in_flat_folder(store, tmp_path):
    flat = tmp_path / "flat"
    flat.mkdir()
    shutil.copy(CHAT_DETAILS, flat / CHAT_DETAILS.name)
    shutil.copy(CHAT_RESULTS, flat / CHAT_RESULTS.name)
    report = ingest(store, [flat])
    assert sorted(f.kind for f in report.imported) == ["swallow_details", "swallow_results"]
    assert rows_of(store, "SELECT DISTINCT model FROM single_judgments") == [(CHAT,)]
    assert rows_of(store, "SELECT count(*) FROM single_judgments") == [(800,)]


def test_details_after_results_imported_earlier(store, tmp_path):
    ingest(store, [CHAT_RESULTS])
    lone = tmp_path / CHAT_DETAILS.name
    shutil.copy(CHAT_DETAILS, lone)
    ingest(store, [lone])
    assert rows_of(store, "SELECT DISTINCT model FROM answers") == [(CHAT,)]


def test_details_alone_without_results_is_refused(store, tmp_path):
    lone = tmp_path / CHAT_DETAILS.name
    shutil.copy(CHAT_DETAILS, lone)
    with pytest.raises(IngestError) as info:
        ingest(store, [lone])
    (problem,) = info.value.problems
    assert str(problem) == (
        f"{lone}: cannot tell which model this details file is for. Keep lighteval's folder layout "
        "(details/<model>/<date_id>/details_….parquet) or import the results_<date_id>.json of the same run with it.")
    assert total_rows(store) == 0


def test_upstream_lighteval_details_are_refused_by_name(store, tmp_path):
    run = "2026-01-01T00-00-00.000000"
    path = tmp_path / "details" / "org" / "m" / run / f"details_lighteval|mt_bench|0_{run}.parquet"
    path.parent.mkdir(parents=True)
    pq.write_table(pa.table({"doc": ['{"query": "q"}'], "model_response": ['{"text": ["a"]}'],
                             "metric": ['{"score": 1.0}']}), path)
    with pytest.raises(IngestError) as info:
        ingest(store, [path])
    text = str(info.value)
    assert text.startswith(f"{path}: this is an upstream lighteval >= 0.11 details file (columns doc / model_response "
                           "/ metric). JudgeLens reads the Swallow fork's details")
    assert total_rows(store) == 0


def _with_score_type(table: pa.Table, value_type: pa.DataType) -> pa.Table:
    """The same details with judge_score_overall_turn_{1,2} as list<value_type> (doubles rounded for int)."""
    metrics = table.column("metrics").combine_chunks()
    fields, children = [], []
    for i, field in enumerate(metrics.type):
        child = metrics.field(i)
        if field.name in ("judge_score_overall_turn_1", "judge_score_overall_turn_2"):
            values = child.flatten()
            if pa.types.is_integer(value_type):
                values = pc.round(values)
            child = pa.ListArray.from_arrays(child.offsets, pc.cast(values, value_type))
            field = pa.field(field.name, pa.list_(value_type))
        fields.append(field)
        children.append(child)
    new = pa.StructArray.from_arrays(children, fields=fields)
    return table.set_column(table.schema.get_field_index("metrics"), "metrics", new)


def test_int_and_double_score_lists_both_load(store, tmp_path):
    original = pq.read_table(CHAT_DETAILS)
    as_int = _with_score_type(original, pa.int64())
    as_double = _with_score_type(as_int, pa.float64())
    paths = {}
    for model, table in (("IntScores", as_int), ("DoubleScores", as_double)):
        path = tmp_path / "details" / "org" / model / CHAT_RUN / CHAT_DETAILS.name
        path.parent.mkdir(parents=True)
        pq.write_table(table, path)
        paths[model] = path
    assert pq.read_schema(paths["IntScores"]).field("metrics").type.field("judge_score_overall_turn_1").type == \
        pa.list_(pa.int64())
    ingest(store, [tmp_path / "details"])
    got = {m: rows_of(store, "SELECT question_id, turn, sample, raw_score, score, parse_status FROM single_judgments "
                             "WHERE model = ? ORDER BY 1, 2, 3", [f"org/{m}"]) for m in ("IntScores", "DoubleScores")}
    assert len(got["IntScores"]) == 800 and got["IntScores"] == got["DoubleScores"]
    assert all(r[3] == int(r[3]) for r in got["IntScores"])
    assert sum(r[5] == "not_parsed" for r in got["IntScores"]) == 26


def test_bad_details_row_skipped_whole(store, tmp_path):
    """A details row that cannot be read is refused; with skip_bad_lines none of its rows are imported."""
    table = pq.read_table(CHAT_DETAILS)
    rows = table.to_pylist()
    bad_qid = str(rows[4]["specifics"]["id"])
    rows[4]["metrics"]["judge_score_overall_turn_2"] = None  # turn 1 is fine, turn 2 has no scores
    path = tmp_path / "details" / "org" / "Broken" / CHAT_RUN / CHAT_DETAILS.name
    path.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), path)
    with pytest.raises(IngestError) as info:
        ingest(store, [path])
    assert [str(p) for p in info.value.problems] == [f"{path}:5: row 5: metrics.judge_score_overall_turn_2 is missing"]
    assert total_rows(store) == 0

    report = ingest(store, [path], skip_bad_lines=True)
    assert report.imported[0].rows == 79
    for table_name, per_question in (("questions", 1), ("answers", 10), ("single_judgments", 10)):
        n, with_bad = rows_of(store, f"SELECT count(*), count(*) FILTER (question_id = ?) FROM {table_name}", [bad_qid])[0]
        assert (n, with_bad) == (79 * per_question, 0), table_name
    assert rows_of(store, "SELECT rows_skipped, skipped_lines::VARCHAR FROM sources") == [
        (1, '[{"line": 5, "reason": "row 5: metrics.judge_score_overall_turn_2 is missing"}]')]


def test_results_json_metrics(sample_store):
    got = rows_of(sample_store, """
        SELECT model, run_id, count(*), count(stderr) FROM reported_metrics
        WHERE task = 'swallow|japanese_mt_bench|0' GROUP BY ALL ORDER BY model""")
    assert [(m, r) for m, r, *_ in got] == [(CHAT, CHAT_RUN), (REASONER, "2026-11-22T05-27-50.682239"),
                                            (SHISA_8B, "2026-11-22T20-29-40.350830"),
                                            (SHISA_70B, "2026-11-22T20-56-44.808344")]
    assert all(n > 30 and n_err > 0 for *_, n, n_err in got)
    assert rows_of(sample_store, "SELECT value FROM reported_metrics WHERE model = ? AND "
                                 "metric = 'judge_score_overall_turn_1_avg'", [CHAT]) == [(0.5930379746835442,)]
