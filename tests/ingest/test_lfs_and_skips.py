"""Issue 22: git-LFS pointers are recognised before any parsing on every path; no folder import is silent about a
file it did not read; judgment files are recognised by content whatever their name; zstd zips upload."""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from zip_support import zstd_zip

from lib import cli
from lib.errors import FormatError, LfsPointerError
from lib.ingest.importer import ingest
from lib.ingest.uploads import stage_uploads
from lib.store import Store, frame

OID = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393"
JUDGMENT = {"question_id": 1, "model": "m", "judge": ["gpt-4", "single-v1"], "score": 5, "turn": 1,
            "judgment": "Rating: [[5]]", "user_prompt": "[Question]\nq\n\n[The Start of Assistant's Answer]\na"}


def pointer(size: int) -> bytes:
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{OID}\nsize {size}\n".encode()


def put(path: Path, data: bytes | str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def lines(*objs) -> str:
    return "".join(json.dumps(o) + "\n" for o in objs)


@pytest.fixture
def lfs_clone(tmp_path) -> Path:
    """shisa-ai's harness cloned without `git lfs pull`: two judgment files and an answer file are pointers."""
    bench = tmp_path / "clone" / "ja_mt_bench"
    put(bench / "question.jsonl", lines({"question_id": 1, "category": "writing", "turns": ["q", "q2"]}))
    put(bench / "model_judgment" / "gpt-5.1-2025-11-13_single.jsonl", pointer(48_213_004))
    put(bench / "model_judgment" / "gpt-4.1-2025-04-14_single.jsonl", pointer(39_100_221))
    put(bench / "model_answer" / "m.jsonl", pointer(1_204_554))
    return tmp_path / "clone"


def test_an_lfs_clone_gets_one_message_and_nothing_is_imported(lfs_clone, tmp_path):
    with Store(tmp_path / "s.duckdb") as s:
        for skip in (False, True):  # --skip-bad-lines changes nothing: no line of a pointer is parsed
            with pytest.raises(LfsPointerError) as info:
                ingest(s, [lfs_clone], skip_bad_lines=skip)
            assert frame(s, "SELECT count(*) AS n FROM sources", plain=True)["n"].tolist() == [0]
    message = info.value.message
    assert message.startswith("3 file(s) are git-LFS pointers, not the data they stand for, so nothing was imported:")
    assert "clone/ja_mt_bench/model_judgment/gpt-5.1-2025-11-13_single.jsonl  (a pointer to 48.2 MB stored in git " \
           "LFS)" in message
    assert "clone/ja_mt_bench/model_answer/m.jsonl  (a pointer to 1.2 MB stored in git LFS)" in message
    assert "run `git lfs pull`" in message and "not valid JSON" not in message


def test_lfs_pointers_given_as_files_uploaded_or_zipped(lfs_clone, tmp_path, capsys):
    one = lfs_clone / "ja_mt_bench" / "model_judgment" / "gpt-5.1-2025-11-13_single.jsonl"
    with Store(tmp_path / "s.duckdb") as s:
        with pytest.raises(LfsPointerError, match="1 file\\(s\\) are git-LFS pointers"):
            ingest(s, [one])
        # an upload: a loose pointer file and a zip whose member is one
        staged = stage_uploads([("x_single.jsonl", pointer(10)),
                                ("h.zip", zstd_zip({"ja/model_answer/m.jsonl": pointer(20)}))],
                               tmp_path / "upload", "ja_mt_bench")
        with pytest.raises(LfsPointerError, match="2 file\\(s\\) are git-LFS pointers"):
            ingest(s, staged.paths)
    code = cli.main(["ingest", str(lfs_clone), "--db", str(tmp_path / "c.duckdb")])
    assert code != 0 and "run `git lfs pull`" in capsys.readouterr().err


def test_no_silent_skips_and_judgments_by_content(tmp_path, capsys):
    bench = tmp_path / "data" / "ja_mt_bench"
    put(bench / "question.jsonl", lines({"question_id": 1, "category": "writing", "turns": ["q", "q2"]}))
    # a fork's judgment files: <judge>_<models>.jsonl, and <model>.jsonl directly under model_judgment/
    put(bench / "model_judgment" / "gpt-4_m1-vs-m2.jsonl", lines(JUDGMENT))
    put(bench / "model_judgment" / "m.jsonl", lines({**JUDGMENT, "judge": ["gpt-4o", "single-v1"]}))
    put(bench / "notes.json", json.dumps({"what": "run notes"}))
    put(bench / "scores.parquet", b"PAR1 not really")
    put(bench / "README.md", "not a data file")
    with Store(tmp_path / "s.duckdb") as s:
        report = ingest(s, [tmp_path / "data"])
        judges = frame(s, "SELECT DISTINCT judge FROM single_judgments ORDER BY 1", plain=True)["judge"].tolist()
    assert judges == ["gpt-4", "gpt-4o"]
    assert [name for name, _ in report.not_read] == ["data/ja_mt_bench/notes.json", "data/ja_mt_bench/scores.parquet"]
    assert all("JudgeLens does not know this file" in why for _, why in report.not_read)
    assert "not read   data/ja_mt_bench/notes.json: JudgeLens does not know this file" in report.summary()
    assert not report.failed


def test_an_import_where_every_data_file_is_refused_exits_non_zero(tmp_path, capsys):
    folder = tmp_path / "out"
    put(folder / "a.json", json.dumps({"x": 1}))
    put(folder / "b.jsonl", lines({"y": 2}))
    code = cli.main(["ingest", str(folder), "--db", str(tmp_path / "c.duckdb")])
    err = capsys.readouterr().err
    assert code != 0 and "Not read:" in err and "out/a.json" in err and "out/b.jsonl" in err
    # every unknown file given on its own is named in one round
    with Store(tmp_path / "s.duckdb") as s, pytest.raises(FormatError) as info:
        ingest(s, [folder / "a.json", folder / "b.jsonl"])
    assert f"{folder / 'a.json'}:" in info.value.message and f"{folder / 'b.jsonl'}:" in info.value.message


def test_a_zstd_zip_uploads_and_imports(tmp_path):
    data = zstd_zip({"h/ja_mt_bench/question.jsonl": lines({"question_id": 1, "category": "w", "turns": ["q"]}).encode(),
                     "h/ja_mt_bench/model_judgment/gpt-4_single.jsonl": lines(JUDGMENT).encode()})
    assert {i.compress_type for i in zipfile.ZipFile(io.BytesIO(data)).infolist()} == {93}
    staged = stage_uploads([("h.zip", data)], tmp_path / "upload", "b")
    with Store(tmp_path / "s.duckdb") as s:
        report = ingest(s, staged.paths)
    assert sorted(f.kind for f in report.imported) == ["questions", "single_judgments"]


def test_an_uploaded_zstd_inspect_log_is_read_not_called_damaged(tmp_path):
    log = next((Path(__file__).resolve().parents[1] / "data" / "inspect_ai" / "logs").glob("*.eval"))
    staged = stage_uploads([(log.name, log.read_bytes())], tmp_path / "upload", "b")
    with Store(tmp_path / "s.duckdb") as s:
        report = ingest(s, staged.paths)
        n = frame(s, "SELECT count(*) AS n FROM single_judgments", plain=True)["n"].tolist()
    assert [(f.kind, f.bench) for f in report.imported] == [("inspect_log", "ja_mt_bench_single")] and n == [7]


def test_skip_bad_lines_with_every_file_refused_exits_non_zero(tmp_path, capsys):
    bench = tmp_path / "data" / "ja_mt_bench" / "model_judgment"
    put(bench / "gpt-4_single.jsonl", lines({**JUDGMENT, "score": "high"}))
    put(bench / "gpt-4o_single.jsonl", "{not json\n")
    code = cli.main(["ingest", str(tmp_path / "data"), "--skip-bad-lines", "--db", str(tmp_path / "c.duckdb")])
    out = capsys.readouterr().out
    assert code == 1 and "0 file(s) imported, 0 unchanged (already imported), 2 refused" in out
