"""Issue 27, item 6-10 and the import partial: verdict imports check every field as the CLI ``verdict`` does (turn,
sample within the item's samples, ids only strings or integers, score a real number, author), name items the store
does not hold in a note, recognise an export whose first record is over 64 KB, and list the bad lines of every file
of a refused import, the large judgment files read by the fast path included. Exact messages, FILE:LINE."""
from __future__ import annotations

import json
from datetime import datetime

import pytest

from lib.cli.main import main as cli_main
from lib.errors import IngestError, UsageError
from lib.ingest.formats import human as human_format
from lib.ingest.importer import ingest
from lib.judging import human
from lib.store import Store

FC = {"bench": "ja_mt_bench", "question_id": "16", "model": "shisa-ai/shisa-v2-llama3.3-70b"}  # FastChat: sample 0
SW = {"bench": "japanese_mt_bench", "question_id": "50", "model": "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b"}  # 0-4


def verdict(**fields) -> dict:
    base = {"judgelens_verdict": 1, "author": "ana", "created_at": "2026-01-02T03:04:05.000000", **FC, "turn": 1,
            "sample": 0, "score": 7.0, "label": None, "note": None}
    base.update(fields)
    return base


def write(path, records) -> str:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return str(path)


BAD_FIELDS = [
    (verdict(sample=99), "A verdict's sample is 0-4 (Swallow's samples; FastChat has sample 0 only); got 99."),
    (verdict(**SW, sample=-1), "A verdict's sample is 0-4 (Swallow's samples; FastChat has sample 0 only); got -1."),
    (verdict(turn=2.7), "A verdict's turn is 1 or 2; got 2.7."),
    (verdict(turn=0), "A verdict's turn is 1 or 2; got 0."),
    (verdict(turn=99), "A verdict's turn is 1 or 2; got 99."),
    (verdict(question_id=[16]), "A verdict's question_id is a non-empty string or an integer; got [16]."),
    (verdict(question_id=16.0), "A verdict's question_id is a non-empty string or an integer; got 16.0."),
    (verdict(model=None), "A verdict's model is a non-empty string or an integer; got null."),
    (verdict(bench={"a": 1}), "A verdict's bench is a non-empty string or an integer; got {\"a\": 1}."),
    (verdict(score=True), "A verdict's score is a number 1-10; got true."),
    (verdict(score="7"), "A verdict's score is a number 1-10; got \"7\"."),
    (verdict(score=11), "A verdict's score is 1-10; got 11."),
    (verdict(author=5), "An author name is text; got 5."),
    (verdict(author="a\nb"), "An author name is one line of text."),
    (verdict(label=["x"]), "A verdict's label is text; got [\"x\"]."),
    ({k: v for k, v in verdict().items() if k != "turn"}, "missing turn"),
]


def test_every_bad_field_is_listed_with_its_line_and_nothing_is_imported(sample_store, tmp_path):
    path = write(tmp_path / "v.jsonl", [verdict(), *[r for r, _ in BAD_FIELDS]])
    with pytest.raises(IngestError) as caught:
        ingest(sample_store, [tmp_path / "v.jsonl"])
    assert [str(p) for p in caught.value.problems] == [
        f"{path}:{n}: not a JudgeLens verdict ({why})" for n, (_, why) in enumerate(BAD_FIELDS, 2)]
    assert human.history(sample_store).empty


def test_the_cli_verdict_obeys_the_same_rules(sample_store, capsys):
    db = str(sample_store.path)
    sample_store.close()
    args = ["verdict", "--db", db, "--bench", FC["bench"], "--question", "16", "--model", FC["model"], "--author",
            "ana", "--score", "7"]
    assert cli_main([*args, "--turn", "1", "--sample", "99"]) == 2
    assert capsys.readouterr().err == "A verdict's sample is 0-4 (Swallow's samples; FastChat has sample 0 only); " \
                                      "got 99.\n"
    assert cli_main([*args, "--turn", "1", "--sample", "3"]) == 2
    assert capsys.readouterr().err == ("Cannot record this verdict: sample 3: the store holds sample 0 only of bench "
                                       f"ja_mt_bench question 16 model {FC['model']}.\n")
    with Store(db) as store:
        with pytest.raises(UsageError, match=r"^A verdict's score is a number 1-10; got true\.$"):
            human.record(store, author="ana", **FC, turn=1, score=True)
        assert human.history(store).empty


def test_a_sample_the_stored_item_does_not_have_is_refused_at_import(sample_store, tmp_path):
    path = write(tmp_path / "v.jsonl", [verdict(), verdict(sample=3), verdict(**SW, sample=4),
                                        verdict(**SW, sample=2, turn=2)])
    with pytest.raises(IngestError) as caught:
        ingest(sample_store, [tmp_path / "v.jsonl"])
    assert [str(p) for p in caught.value.problems] == [
        f"{path}:2: not a JudgeLens verdict (sample 3: the store holds sample 0 only of bench ja_mt_bench question "
        f"16 model {FC['model']})"]
    assert caught.value.hint == "Fix these verdicts (or leave them out of the file) and import it again."
    assert human.history(sample_store).empty
    write(tmp_path / "v.jsonl", [verdict(), verdict(**SW, sample=4), verdict(**SW, sample=2, turn=2)])
    report = ingest(sample_store, [tmp_path / "v.jsonl"])
    assert [(f.status, f.rows, f.warnings) for f in report.files] == [("imported", 3, [])]


def test_unknown_items_are_kept_and_named_in_a_note(sample_store, tmp_path, capsys):
    path = write(tmp_path / "v.jsonl", [verdict(), verdict(bench="no_bench"), verdict(question_id=999),
                                        verdict(model="nobody/none")])
    db = str(sample_store.path)
    sample_store.close()
    assert cli_main(["ingest", path, "--db", db]) == 0
    out = capsys.readouterr()
    note = ("3 verdict(s) are on items this store does not hold (line 2: no bench 'no_bench' in this store; line 3: no "
            "question 999 in bench ja_mt_bench; line 4: no answer or judgment of model 'nobody/none' on bench "
            "ja_mt_bench question 16): they are kept and count once the items are imported")
    assert note in out.out + out.err
    with Store(db) as store:
        assert len(human.history(store)) == 4
        with store.read() as cur:
            assert cur.execute("SELECT warnings FROM sources WHERE kind = 'human_verdicts'").fetchone()[0] == [note]


def test_an_export_whose_first_record_is_over_64_kb_is_recognised(sample_store, tmp_path):
    long_note = "長い" * 35_000  # 70,000 characters, ~210 KB of UTF-8
    path = tmp_path / "big.jsonl"
    write(path, [verdict(note=long_note), verdict(score=3.0, created_at="2026-01-02T03:04:06.000000")])
    assert path.stat().st_size > 1 << 16
    assert human_format.sniff(path) == "verdicts"
    report = ingest(sample_store, [path])
    assert [(f.kind, f.status, f.rows) for f in report.files] == [("human_verdicts", "imported", 2)]
    assert human.history(sample_store)["note"].str.len().max() == 70_000
    # the same file exported by JudgeLens round-trips
    human.export_jsonl(sample_store, tmp_path / "again.jsonl")
    assert human_format.sniff(tmp_path / "again.jsonl") == "verdicts"


def test_created_at_must_be_a_date(sample_store, tmp_path):
    path = write(tmp_path / "v.jsonl", [verdict(created_at=5), verdict(created_at="yesterday")])
    with pytest.raises(IngestError) as caught:
        ingest(sample_store, [tmp_path / "v.jsonl"])
    assert [str(p) for p in caught.value.problems] == [
        f"{path}:1: not a JudgeLens verdict (created_at is an ISO date and time; got 5)",
        f"{path}:2: not a JudgeLens verdict (Invalid isoformat string: 'yesterday')"]
    assert isinstance(datetime.fromisoformat(verdict()["created_at"]), datetime)


def test_a_refused_import_lists_the_bad_lines_of_the_fast_path_files_too(store, tmp_path):
    """Issue 27 partial: one file read line by line is bad (an answer file cut off) and a judgment file the DuckDB
    fast path would read has a bad line: the refusal names both, not only the first."""
    import shutil

    from conftest import JA, TEST_DATA

    bench = tmp_path / "ja_mt_bench"
    shutil.copytree(JA / "ja_mt_bench", bench)
    answers = bench / "model_answer" / "shisa-ai__shisa-v2-llama3.1-8b.jsonl"
    lines = answers.read_text(encoding="utf-8").splitlines(keepends=True)
    answers.write_text("".join(lines[:2]) + "{not json\n" + "".join(lines[3:]), encoding="utf-8")
    judgments = bench / "model_judgment" / "gpt-4o_single.jsonl"
    bad = (TEST_DATA / "bad" / "model_judgment" / "score_not_a_number_single.jsonl").read_text(encoding="utf-8")
    judgments.write_text(judgments.read_text(encoding="utf-8") + bad.splitlines(keepends=True)[1], encoding="utf-8")
    n_judgments = len(judgments.read_text(encoding="utf-8").splitlines())
    with pytest.raises(IngestError) as caught:
        ingest(store, [bench])
    assert [str(p) for p in caught.value.problems] == [
        "ja_mt_bench/model_answer/shisa-ai__shisa-v2-llama3.1-8b.jsonl:3: not valid JSON: Expecting property name "
        "enclosed in double quotes at column 2",
        f"ja_mt_bench/model_judgment/gpt-4o_single.jsonl:{n_judgments}: \"score\" must be a number, got \"N/A\""]
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM sources").fetchone()[0] == 0


def test_a_bad_verdict_file_refuses_the_harness_files_of_the_same_import(store, tmp_path):
    """One import is one refusal: a bad verdict record stops the harness files given with it before they are
    written (nothing half-imported)."""
    import shutil

    from conftest import JA

    bench = tmp_path / "ja_mt_bench"
    shutil.copytree(JA / "ja_mt_bench", bench)
    bad = write(tmp_path / "v.jsonl", [verdict(turn=3)])
    with pytest.raises(IngestError) as caught:
        ingest(store, [bench, tmp_path / "v.jsonl"])
    assert [str(p) for p in caught.value.problems] == [
        f"{bad}:1: not a JudgeLens verdict (A verdict's turn is 1 or 2; got 3.)"]
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM sources").fetchone()[0] == 0
