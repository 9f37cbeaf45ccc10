"""No page renders model, judge, bench or category names as Markdown or HTML (issue 8, defect 5).

Every page runs under AppTest on a store whose names are Markdown/HTML canaries (a remote image, a link, an
<img> tag); the test collects every string Streamlit renders as Markdown (bodies of markdown, captions,
headings, alerts and toasts; widget labels and help; radio and segmented-control options; tab and expander
labels) and asserts that none holds a canary's Markdown or HTML unescaped."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from lib.ingest.importer import ingest
from lib.store import Store

ROOT = Path(__file__).resolve().parents[2]
JA_BENCH = ROOT / "data" / "sample" / "shisa-ja-mt-bench-harness" / "ja_mt_bench"
PAGES = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "app_pages").glob("[!_]*.py"))

MODEL_A = "![m](http://canary.invalid/m.png)"
MODEL_B = "<img src=http://canary.invalid/b.png>[mlink](http://canary.invalid/m)"
JUDGE_A = "![j](http://canary.invalid/j.png)"
JUDGE_B = "<img src=http://canary.invalid/k.png>"
CATEGORY = "[cat](http://canary.invalid/c) ![c](http://canary.invalid/c.png)"
BENCH = "![bench](canary.invalid)"
BENCH_2 = "<img src=canary.invalid>"
MODELS = {"shisa-ai/shisa-v2-llama3.1-8b": MODEL_A, "shisa-ai/shisa-v2-llama3.3-70b": MODEL_B}
JUDGES = {"gpt-4o": JUDGE_A, "gpt-4.1-2025-04-14": JUDGE_B}
N_QUESTIONS = 6


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write(path: Path, recs: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in recs), encoding="utf-8")


@pytest.fixture(scope="module")
def _canary_db(tmp_path_factory) -> Path:
    """A store cut from the sample, every name replaced by a canary."""
    root = tmp_path_factory.mktemp("canary")
    for name in (BENCH, BENCH_2):  # two benches: the Compare page's harness view pairs runs across them
        _canary_bench(root / name)
    db = root / "canary.duckdb"
    with Store(db) as s:
        ingest(s, [root / BENCH, root / BENCH_2])
        with s.write() as cur:
            cur.execute("INSERT OR REPLACE INTO meta VALUES ('sample_loaded', 'yes')")
    return db


def _canary_bench(bench: Path) -> None:
    keep = {r["question_id"] for r in records(JA_BENCH / "question.jsonl")[:N_QUESTIONS]}
    write(bench / "question.jsonl", [{**r, "category": CATEGORY} for r in records(JA_BENCH / "question.jsonl")
                                     if r["question_id"] in keep])
    for real, canary in MODELS.items():
        src = JA_BENCH / "model_answer" / (real.replace("/", "__") + ".jsonl")
        write(bench / "model_answer" / "m_a.jsonl" if canary == MODEL_A else bench / "model_answer" / "m_b.jsonl",
              [{**r, "model_id": canary} for r in records(src) if r["question_id"] in keep])
    for real, canary in JUDGES.items():
        write(bench / "model_judgment" / f"{'a' if canary == JUDGE_A else 'b'}_single.jsonl",
              [{**r, "model": MODELS[r["model"]], "judge": [canary, r["judge"][1]]}
               for r in records(JA_BENCH / "model_judgment" / f"{real}_single.jsonl")
               if r["question_id"] in keep and r["model"] in MODELS])


# ----------------------------------------------------------------------------------------------

MARKDOWN_BODY = {"Markdown", "Heading", "Alert", "Toast", "Caption"}  # protos whose body is Markdown
MARKDOWN_FIELDS = {"label", "help", "caption"}                          # Markdown on every widget / block


def markdown_strings(node) -> list[str]:
    """Every string under ``node`` that Streamlit renders as Markdown."""
    out: list[str] = []
    proto = getattr(node, "proto", None)
    if proto is not None and hasattr(proto, "ListFields"):
        out.extend(_from_proto(proto))
    children = getattr(node, "children", None)
    if isinstance(children, dict):
        for child in children.values():
            out.extend(markdown_strings(child))
    return out


def _from_proto(proto) -> list[str]:
    out = []
    kind = type(proto).__name__
    for field, value in proto.ListFields():
        if field.name == "body" and kind in MARKDOWN_BODY and isinstance(value, str):
            out.append(value)
        elif field.name in MARKDOWN_FIELDS and isinstance(value, str):
            out.append(value)
        elif field.name == "options" and kind == "Radio":
            out.extend(value)
        elif field.name == "options" and kind == "ButtonGroup":
            out.extend(o.content for o in value)
        elif field.message_type is not None:  # nested messages (a block's tab / expander, ...)
            for item in ([value] if hasattr(value, "ListFields") else value):
                if hasattr(item, "ListFields"):
                    out.extend(_from_proto(item))
    return out


def unescaped_canaries(texts: list[str]) -> list[str]:
    """The texts in which a canary's Markdown or HTML survives: after dropping backslash-escaped characters
    (md_escape's work), no image, link or tag syntax may remain next to a canary."""
    bad = []
    for text in texts:
        bare = re.sub(r"\\.", "", text, flags=re.S)
        if "canary" in bare and re.search(r"!\[|<img|\]\(", bare):
            bad.append(text)
    return bad


def test_the_canary_check_catches_raw_names_and_passes_escaped_ones():
    from lib.render.safe_text import md_escape

    raw = [f"{JUDGE_A} vs {JUDGE_B}", MODEL_B, CATEGORY, BENCH]
    assert unescaped_canaries(raw) == raw
    assert unescaped_canaries([md_escape(t) for t in raw]) == []


@pytest.mark.parametrize("page", PAGES)
def test_no_page_renders_names_as_markdown(_canary_db, tmp_path, monkeypatch, page):
    import shutil

    db = tmp_path / "canary.duckdb"
    shutil.copy(_canary_db, db)
    monkeypatch.setenv("JUDGELENS_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=90).run()
    at.switch_page(page).run()
    assert not at.exception, [e.value for e in at.exception]
    seen = markdown_strings(at._tree)
    assert seen, "no Markdown found at all: the scan is broken"
    assert unescaped_canaries(seen) == []
    if page == "app_pages/compare.py":  # the defect: its subheader names both judges
        assert any("canary" in s and s.startswith("\\!\\[j\\]") for s in seen), seen
        at.radio(key="cmp_mode").set_value("two models under one judge").run()
        assert not at.exception
        assert unescaped_canaries(markdown_strings(at._tree)) == []
        at.segmented_control(key="cmp_view").set_value("harness").run()  # one model across the two benches
        assert not at.exception, [e.value for e in at.exception]
        seen = markdown_strings(at._tree)
        assert any("linked questions between" in s and "canary" in s for s in seen), seen
        assert unescaped_canaries(seen) == []
