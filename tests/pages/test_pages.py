"""The pages under Streamlit's AppTest: first start, empty state, server-folder import, bad lines, sources.

Every test gets its own empty database (JUDGELENS_DB, set by the autouse fixture in conftest.py).
Uploads cannot be driven through AppTest's st.file_uploader, so ``lib.ingest.uploads.stage_uploads`` (what the
upload button calls) is tested directly, followed by an ingest of what it staged.
"""
from __future__ import annotations

import io
import json
import re
import zipfile
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lib.ingest.importer import ingest, remove_source
from lib.ingest.sample import load_sample
from lib.store import Store, default_db_path
from lib.ingest.uploads import stage_uploads

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
IMPORT_PAGE = "app_pages/import_data.py"
JA_BENCH = ROOT / "data" / "sample" / "shisa-ja-mt-bench-harness" / "ja_mt_bench"
MODEL_8B = "shisa-ai/shisa-v2-llama3.1-8b"
MODEL_70B = "shisa-ai/shisa-v2-llama3.3-70b"
SWALLOW_8B = "hosted_vllm/fake-org/Fake-JA-Chat-8B"
BAD_JUDGMENT = "gpt-4.1-2025-04-14_single.jsonl"


# ----------------------------------------------------------------------------------------------
# Helpers

def head_lines(src: Path, n: int) -> str:
    return "".join(src.read_text(encoding="utf-8").splitlines(keepends=True)[:n])


def small_bench(root: Path, n: int = 5) -> Path:
    """A tiny FastChat harness folder cut from the sample: <root>/harness/ja_mt_bench/… (3 files)."""
    bench = root / "harness" / "ja_mt_bench"
    for rel, lines in [("question.jsonl", n),
                       ("model_answer/shisa-ai__shisa-v2-llama3.1-8b.jsonl", n),
                       ("model_judgment/gpt-4o_single.jsonl", n + 1)]:
        (bench / rel).parent.mkdir(parents=True, exist_ok=True)
        (bench / rel).write_text(head_lines(JA_BENCH / rel, lines), encoding="utf-8")
    return bench.parent


def add_truncated_judgment(harness: Path) -> Path:
    """A judgment file whose 4th (last) line was cut in half, as by an interrupted run."""
    lines = (JA_BENCH / "model_judgment" / BAD_JUDGMENT).read_text(encoding="utf-8").splitlines(keepends=True)[:4]
    path = harness / "ja_mt_bench" / "model_judgment" / BAD_JUDGMENT
    path.write_text("".join(lines[:3]) + lines[3][: len(lines[3]) // 2], encoding="utf-8")
    return path


def mark_sample_loaded() -> None:
    """Make the test database look like one whose first start already happened (no sample load)."""
    with Store(default_db_path()) as s, s.write() as cur:
        cur.execute("INSERT OR REPLACE INTO meta VALUES ('sample_loaded', 'yes')")


def source_count() -> int:
    with Store(default_db_path()) as s, s.read() as cur:
        return cur.execute("SELECT count(*) FROM sources").fetchone()[0]


def button(at: AppTest, label: str):
    matches = [b for b in at.button if b.label == label]
    assert len(matches) == 1, f"expected one {label!r} button, found {[b.label for b in at.button]}"
    return matches[0]


def no_exception(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]


@pytest.fixture
def import_roots(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "import-root"
    root.mkdir()
    monkeypatch.setenv("JUDGELENS_IMPORT_ROOTS", str(root))
    return root


@pytest.fixture
def import_page(import_roots) -> AppTest:
    """The Import page of an app whose first start is over and whose store is empty."""
    mark_sample_loaded()
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.switch_page(IMPORT_PAGE).run()
    no_exception(at)
    assert [t.value for t in at.title] == ["Import"]
    return at


def open_tab(at: AppTest, label: str) -> AppTest:
    """Open one of the Import page's tabs: they are lazy, only the open one is drawn."""
    at.session_state["imp_tab"] = label
    return at.run()


def import_from_server(at: AppTest, folder: str | Path) -> AppTest:
    open_tab(at, "Server folder")
    at.text_input(key="import_folder").set_value(str(folder))
    button(at, "Import from server").click()
    return at.run()


def sources_tab(at: AppTest):
    open_tab(at, "Sources")
    tab = at.tabs[2]
    assert tab.label == "Sources"
    return tab


# ----------------------------------------------------------------------------------------------
# Overview and first start

def test_first_start_loads_the_sample_and_shows_the_leaderboard():
    at = AppTest.from_file(APP, default_timeout=60).run()
    no_exception(at)
    assert [t.value for t in at.title] == ["Overview"]
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Sources"] == "24"
    assert len(at.toast) == 1 and "Loaded the bundled sample: 24 files" in at.toast[0].value

    board = at.dataframe[0].value
    assert {MODEL_8B, MODEL_70B, SWALLOW_8B} <= set(board["model"])
    row = board[(board["judge"] == "gpt-4o") & (board["model"] == MODEL_8B)]
    assert row["t1"].tolist() == pytest.approx([7.6375])
    caption = at.caption[0].value  # "$ERROR$" must not turn into LaTeX
    assert "\\$ERROR\\$" in caption and not re.search(r"(?<!\\)\$", caption)

    at.run()  # a rerun of the same session does not import again
    no_exception(at)
    assert len(at.toast) == 0
    assert {m.label: m.value for m in at.metric}["Sources"] == "24"

    again = AppTest.from_file(APP, default_timeout=60).run()  # a new session on the same database neither
    no_exception(again)
    assert len(again.toast) == 0
    assert {m.label: m.value for m in again.metric}["Sources"] == "24"
    assert source_count() == 24


def test_overview_bench_filter():
    at = AppTest.from_file(APP, default_timeout=60).run()
    at.selectbox(key="overview_bench").select("japanese_mt_bench").run()
    no_exception(at)
    board = at.dataframe[0].value
    assert set(board["bench"]) == {"japanese_mt_bench"} and SWALLOW_8B in set(board["model"])


def test_overview_chart_gives_a_model_one_row_across_harnesses():
    """The sample has shisa-v2-llama3.3-70b under FastChat and as hosted_vllm/shisa-ai/... under Swallow. The
    harness x model matrix joins the two names by alias; the chart does too: one row, both harnesses' judges."""
    at = AppTest.from_file(APP, default_timeout=60).run()
    no_exception(at)
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    rows = {y for trace in spec["data"] for y in trace["y"]}
    assert MODEL_70B in rows and f"hosted_vllm/{MODEL_70B}" not in rows
    assert SWALLOW_8B in rows  # a Swallow-only model keeps its own name
    judges = {trace["name"] for trace in spec["data"] if MODEL_70B in trace["y"]}
    assert {"gpt-4o", "gpt-4o-2024-08-06"} <= judges, judges


def test_overview_of_an_emptied_store_points_to_import():
    with Store(default_db_path()) as s:
        load_sample(s)
        with s.read() as cur:
            ids = [r[0] for r in cur.execute("SELECT source_id FROM sources").fetchall()]
        for sid in ids:
            remove_source(s, sid)
    at = AppTest.from_file(APP, default_timeout=60).run()
    no_exception(at)
    assert len(at.toast) == 0, "the sample must not come back after the user removed it"
    assert source_count() == 0
    assert [t.value for t in at.title] == ["Overview"]
    assert len(at.info) == 1 and "Go to **Import**" in at.info[0].value
    assert len(at.metric) == 0 and len(at.dataframe) == 0


# ----------------------------------------------------------------------------------------------
# Import page: server folder

def test_server_folder_outside_the_import_roots_is_refused(import_page, tmp_path):
    outside = tmp_path / "elsewhere"
    small_bench(outside)
    at = import_from_server(import_page, outside / "harness")
    no_exception(at)
    assert any("outside the import roots" in e.value for e in at.error), [e.value for e in at.error]
    assert any("JUDGELENS_IMPORT_ROOTS" in c.value for c in at.code)
    assert source_count() == 0
    assert "No sources yet" in sources_tab(at).info[0].value


def test_server_folder_import_reports_success(import_page, import_roots):
    harness = small_bench(import_roots)
    at = import_from_server(import_page, harness)
    no_exception(at)
    assert [s.value for s in at.success] == ["3 file(s) imported, 0 unchanged (already imported)"]
    report = at.code[-1].value
    assert "harness/ja_mt_bench/model_judgment/gpt-4o_single.jsonl" in report
    table = sources_tab(at).dataframe[0].value
    assert sorted(table["kind"]) == ["answers", "questions", "single_judgments"]
    assert set(table["bench"]) == {"ja_mt_bench"}

    at = import_from_server(at, harness)  # the same bytes again change nothing
    assert at.success[0].value.endswith(": nothing changed")
    assert source_count() == 3


def test_bad_line_refuses_everything_then_retry_skips_it(import_page, import_roots):
    harness = small_bench(import_roots)
    add_truncated_judgment(harness)
    at = import_from_server(import_page, harness)
    no_exception(at)
    assert any("Import refused: nothing was imported" in e.value and "1 problem(s)" in e.value for e in at.error)
    problems = at.dataframe[0].value
    assert list(problems.columns) == ["file", "line", "problem"]
    assert len(problems) == 1
    assert problems["file"][0].endswith(f"model_judgment/{BAD_JUDGMENT}") and problems["line"][0] == 4
    assert source_count() == 0
    assert "No sources yet" in sources_tab(at).info[0].value

    button(at, "Import again, skipping the bad lines").click()
    at.run()
    no_exception(at)
    assert at.success[0].value.startswith("4 file(s) imported")
    assert f"{BAD_JUDGMENT} [ja_mt_bench]: single_judgments, 3 record(s)" in at.code[-1].value
    assert "1 bad line(s) skipped" in at.code[-1].value
    table = sources_tab(at).dataframe[0].value
    assert len(table) == 4
    assert table.loc[table["file_name"] == BAD_JUDGMENT, "rows_skipped"].tolist() == [1]
    assert not [b for b in at.button if b.label == "Import again, skipping the bad lines"]


def test_sources_tab_removes_a_source_after_confirmation(import_page, import_roots):
    at = import_from_server(import_page, small_bench(import_roots))
    tab = sources_tab(at)
    assert len(tab.dataframe[0].value) == 3
    options = at.multiselect(key="remove_sources").options
    answers = next(o for o in options if "(answers, ja_mt_bench)" in o)
    assert all(not o.endswith(", nan)") for o in options)

    at.multiselect(key="remove_sources").select(int(answers.split(":")[0])).run()  # values are source ids
    assert button(at, "Remove").disabled, "Remove must wait for the confirmation checkbox"
    at.checkbox(key="remove_confirm").check().run()
    assert not button(at, "Remove").disabled
    button(at, "Remove").click()
    at.run()
    no_exception(at)
    assert [s.value for s in at.success] == ["Removed 1 source(s)."]
    table = sources_tab(at).dataframe[0].value
    assert sorted(table["kind"]) == ["questions", "single_judgments"]
    assert source_count() == 2
    assert at.multiselect(key="remove_sources").value == []
    assert at.checkbox(key="remove_confirm").value is False, "the confirmation must not carry over"


def test_sources_label_of_a_file_without_bench(import_page):
    at = open_tab(import_page, "Server folder")
    button(at, "Load the bundled sample").click()
    at.run()
    no_exception(at)
    assert at.success[0].value.startswith("24 file(s) imported")
    options = sources_tab(at).multiselect(key="remove_sources").options
    assert "1: judge_prompts.jsonl (judge_prompts, -)" in options


def test_cached_queries_are_per_database(tmp_path, monkeypatch):
    """Two database files with the same version tuple (1 source, id 1) must not share cached results."""
    for name, rel in [("a", "question.jsonl"), ("b", "model_judgment/gpt-4o_single.jsonl")]:
        monkeypatch.setenv("JUDGELENS_DB", str(tmp_path / f"{name}.duckdb"))
        with Store(default_db_path()) as s:
            ingest(s, [JA_BENCH / rel])
        mark_sample_loaded()
        at = AppTest.from_file(APP, default_timeout=60).run()
        at.switch_page(IMPORT_PAGE).run()
        assert sources_tab(at).dataframe[0].value["file_name"].tolist() == [Path(rel).name]


# ----------------------------------------------------------------------------------------------
# Uploads (stage_uploads is what the "Import uploaded files" button calls)

def zip_bytes(members: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, text in members.items():
            zf.writestr(zipfile.ZipInfo(name), text.encode("utf-8"))
    return buf.getvalue()


def test_zip_upload_keeps_its_layout_and_drops_escaping_members(tmp_path, store):
    question = head_lines(JA_BENCH / "question.jsonl", 3)
    judgment = head_lines(JA_BENCH / "model_judgment" / "gpt-4o_single.jsonl", 4)
    data = zip_bytes({"ja_mt_bench/question.jsonl": question,
                      "ja_mt_bench/model_judgment/gpt-4o_single.jsonl": judgment,
                      "../escaped_single.jsonl": judgment,
                      "ja_mt_bench/../../escaped2.jsonl": judgment,
                      "/abs_single.jsonl": judgment,
                      "__MACOSX/ja_mt_bench/._question.jsonl": "junk"})
    staging = tmp_path / "staging" / "upload"
    staged = stage_uploads([("my harness.zip", data)], staging, "ignored_bench")
    paths = staged.paths
    assert paths == [staging / "my harness"]
    assert staged.skipped == ["../escaped_single.jsonl", "ja_mt_bench/../../escaped2.jsonl", "/abs_single.jsonl"]
    files = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
    assert files == ["my harness/ja_mt_bench/model_judgment/gpt-4o_single.jsonl",
                     "my harness/ja_mt_bench/question.jsonl"]
    assert not any(p.name.startswith(("escaped", "abs")) for p in tmp_path.rglob("*"))

    report = ingest(store, paths)
    assert sorted((f.kind, f.bench) for f in report.imported) == [("questions", "ja_mt_bench"),
                                                                  ("single_judgments", "ja_mt_bench")]
    assert next(f for f in report.imported if f.kind == "single_judgments").rows == 4


def test_loose_uploads_are_placed_by_kind(tmp_path, store):
    uploads = [
        ("gpt-4o_single.jsonl", head_lines(JA_BENCH / "model_judgment" / "gpt-4o_single.jsonl", 4)),
        ("my_questions.jsonl", head_lines(JA_BENCH / "question.jsonl", 3)),
        ("shisa-ai__shisa-v2-llama3.1-8b.jsonl",
         head_lines(JA_BENCH / "model_answer" / "shisa-ai__shisa-v2-llama3.1-8b.jsonl", 3)),
    ]
    staging = tmp_path / "upload"
    paths = stage_uploads([(n, t.encode("utf-8")) for n, t in uploads], staging, "my_bench").paths
    assert [p.relative_to(staging).as_posix() for p in paths] == [
        "my_bench/model_judgment/gpt-4o_single.jsonl",
        "my_bench/question.jsonl",
        "my_bench/model_answer/shisa-ai__shisa-v2-llama3.1-8b.jsonl",
    ]
    assert all(p.is_file() for p in paths)

    report = ingest(store, paths)
    assert sorted((f.kind, f.bench) for f in report.imported) == [
        ("answers", "my_bench"), ("questions", "my_bench"), ("single_judgments", "my_bench")]
    with store.read() as cur:
        assert cur.execute("SELECT count(*), any_value(bench) FROM single_judgments").fetchone() == (4, "my_bench")


def test_loose_judgment_without_suffix_gets_one(tmp_path):
    data = head_lines(JA_BENCH / "model_judgment" / "gpt-4o_single.jsonl", 2).encode("utf-8")
    paths = stage_uploads([("C:\\Users\\me\\judgments.jsonl", data)], tmp_path / "upload", "b").paths  # a Windows name
    assert [p.relative_to(tmp_path / "upload").as_posix() for p in paths] == ["b/model_judgment/judgments_single.jsonl"]
