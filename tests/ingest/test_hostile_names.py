"""File names DuckDB would read as glob patterns (issue 8, defect 1): every file imports its own rows,
whether it sits on disk or arrives in a zip upload, and big judgment files keep the DuckDB fast path."""
from __future__ import annotations

import io
import json
import zipfile

import pytest

import lib.ingest.importer
from lib.ingest.importer import ingest
from lib.ingest.uploads import stage_uploads

# Each hostile name sits next to a sibling its glob would match: a reader that expands patterns imports the
# sibling's rows (or all of them) instead of its own.
NAMES = ["x_single.jsonl", "[x]_single.jsonl", "*_single.jsonl", "?_single.jsonl", "a_single.jsonl",
         "{a,b}_single.jsonl", "b_single.jsonl", "a,b_single.jsonl", "with space_single.jsonl",
         "it's \"quoted\"_single.jsonl", "日本語_single.jsonl", "~home_single.jsonl", "back\\slash_single.jsonl",
         "**_single.jsonl"]


def lines_for(i: int) -> str:
    """Two judgments whose judge names the file they came from (judge-<i>)."""
    return "".join(json.dumps({"question_id": q, "model": "m", "judge": [f"judge-{i}", "single-v1"], "score": 5,
                               "turn": 1, "judgment": "Rating: [[5]]"}) + "\n" for q in (1, 2))


@pytest.fixture
def fast_calls(monkeypatch):
    calls = []
    real = lib.ingest.importer.insert_fast

    def spy(cur, item, source_id):
        n = real(cur, item, source_id)
        calls.append(item.path.name)
        return n

    monkeypatch.setattr(lib.ingest.importer, "insert_fast", spy)
    return calls


def judges_per_file(store) -> dict[str, set[str]]:
    with store.read() as cur:
        rows = cur.execute("SELECT s.file_name, j.judge, count(*) FROM single_judgments j "
                           "JOIN sources s USING (source_id) GROUP BY ALL").fetchall()
    out: dict[str, set[str]] = {}
    for name, judge, n in rows:
        assert n == 2, (name, judge, n)
        out.setdefault(name, set()).add(judge)
    return out


def expected() -> dict[str, set[str]]:
    return {name: {f"judge-{i}"} for i, name in enumerate(NAMES)}


def test_glob_characters_in_file_names_import_the_file_itself(store, tmp_path, fast_calls):
    folder = tmp_path / "bench" / "model_judgment"
    folder.mkdir(parents=True)
    for i, name in enumerate(NAMES):
        (folder / name).write_text(lines_for(i), encoding="utf-8")
    report = ingest(store, [tmp_path / "bench"])
    assert len(report.imported) == len(NAMES)
    assert judges_per_file(store) == expected()
    assert sorted(fast_calls) == sorted(NAMES)  # and the fast path still reads them


def test_a_glob_named_file_given_alone(store, tmp_path, fast_calls):
    folder = tmp_path / "b" / "model_judgment"
    folder.mkdir(parents=True)
    (folder / "x_single.jsonl").write_text(lines_for(0), encoding="utf-8")
    (folder / "[x]_single.jsonl").write_text(lines_for(1), encoding="utf-8")
    ingest(store, [folder / "[x]_single.jsonl"])
    assert judges_per_file(store) == {"[x]_single.jsonl": {"judge-1"}}


def test_glob_characters_in_folder_names(store, tmp_path, fast_calls):
    for folder in ("[b]", "b", "*"):
        path = tmp_path / folder / "model_judgment" / "j_single.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text(lines_for(len(folder) + ord(folder[0])), encoding="utf-8")
    ingest(store, [tmp_path / "[b]"])
    with store.read() as cur:
        assert cur.execute("SELECT DISTINCT bench, judge FROM single_judgments").fetchall() == [
            ("[b]", f"judge-{3 + ord('[')}")]


def test_glob_characters_in_zip_member_names(store, tmp_path, fast_calls):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for i, name in enumerate(NAMES):
            zf.writestr(f"bench/model_judgment/{name}", lines_for(i))
    staged = stage_uploads([("names [1].zip", buf.getvalue())], tmp_path / "upload", "b")
    report = ingest(store, staged.paths)
    assert len(report.imported) == len(NAMES)
    assert judges_per_file(store) == expected()
