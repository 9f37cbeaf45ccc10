"""The analyst's verdicts travel into Inspect AI: ``verdicts export --inspect`` writes the JSON Lines records of
Inspect's ``precomputed_scores()`` scorer (inspect_ai PR #4599: id, value, optional epoch / explanation / metadata)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lib import cli
from lib.errors import UsageError
from lib.ingest.importer import ingest
from lib.judging import human
from lib.store import Store

LOGS = Path(__file__).resolve().parents[1] / "data" / "inspect_ai"
BENCH, MODEL = "ja_mt_bench_single", "openai/gpt-4o-mini"


def test_verdicts_on_an_inspect_log_export_as_precomputed_scores(tmp_path, capsys):
    db = tmp_path / "s.duckdb"
    with Store(db) as s:
        ingest(s, [LOGS])
        human.record(s, author="ana", bench=BENCH, question_id="1", turn=1, model=MODEL, sample=0, score=9.0,
                     label="judge too harsh", note="詩として十分")
        human.record(s, author="ana", bench=BENCH, question_id="1", turn=1, model=MODEL, sample=1, score=8.0)
        human.record(s, author="ana", bench=BENCH, question_id="3", turn=1, model=MODEL, sample=0, score=4.0)
        human.record(s, author="ana", bench=BENCH, question_id="4", turn=1, model=MODEL, sample=0, label="unsure")
        human.record(s, author="ana", bench="ja_mt_bench", question_id="1", turn=2, model=MODEL, score=5.0)
        human.record(s, author="ana", bench="ja_mt_bench", question_id="1", turn=1, model=MODEL, score=6.0)
        with pytest.raises(UsageError, match="cover turns \\[1, 2\\]"):
            human.inspect_scores(s, author="ana", bench="ja_mt_bench", model=MODEL)
    out = tmp_path / "scores.jsonl"
    assert cli.main(["verdicts", "export", "--db", str(db), "--inspect", "--author", "ana", "--bench", BENCH,
                     "--model", MODEL, "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    # ids are the log's sample ids (numbers), epochs the samples + 1; a label-only verdict has no score: no record
    assert [(r["id"], r["epoch"], r["value"]) for r in records] == [(1, 1, 9.0), (1, 2, 8.0), (3, 1, 4.0)]
    assert records[0]["explanation"] == "judge too harsh: 詩として十分" and "explanation" not in records[1]
    assert records[0]["metadata"]["judgelens"] == {"author": "ana", "bench": BENCH, "model": MODEL,
                                                   "question_id": "1", "turn": 1, "sample": 0}
    assert "precomputed_scores" in capsys.readouterr().out
