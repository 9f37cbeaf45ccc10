"""Search: NFKC and case folding, regex, filters, counts against a plain count over the sample's JSONL files,
the index following imports and removals, the CLI, and the Search page under AppTest."""
from __future__ import annotations

import json
import re
import shutil
import unicodedata
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from lib.analysis import search as S
from lib.cli.main import main as cli_main
from lib.ingest.importer import ingest, remove_source

SAMPLE = ROOT / "data" / "sample"


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def judgment(qid, model, judge, text, score, turn=1, prompt="[Instruction] judge this"):
    return {"question_id": qid, "model": model, "judge": [judge, "single-v1"], "user_prompt": prompt,
            "judgment": text, "score": score, "turn": turn, "tstamp": 1.0}


@pytest.fixture
def tiny(store, tmp_path):
    """A bench whose texts mix full-width, half-width katakana and case."""
    bench = tmp_path / "h" / "benchx"
    write_jsonl(bench / "question.jsonl", [
        {"question_id": 1, "category": "coding", "turns": ["ＰＹＴＨＯＮで書いてください", "次に１０個"]},
        {"question_id": 2, "category": "writing", "turns": ["ｶﾞｲﾄﾞを書く", "English please"]}])
    write_jsonl(bench / "model_answer" / "m1.jsonl", [
        {"question_id": 1, "model_id": "m1", "choices": [{"index": 0, "turns": ["def f(): pass  # Python", "10 items"]}]},
        {"question_id": 2, "model_id": "m1", "choices": [{"index": 0, "turns": ["ガイドです", "Sure."]}]}])
    write_jsonl(bench / "model_judgment" / "judge-a_single.jsonl", [
        judgment(1, "m1", "judge-a", "The answer uses python. Rating: [[2]]", 2),
        judgment(2, "m1", "judge-a", "英語で答えていない。ガイド。 Rating: [[9]]", 9),
        judgment(1, "m1", "judge-a", "Turn two: 10 items. Rating: [[3]]", 3, turn=2),
        judgment(2, "m1", "judge-a", "no rating here", -1, turn=2)])
    write_jsonl(bench / "model_judgment" / "judge-b_single.jsonl", [
        judgment(1, "m1", "judge-b", "PYTHON code. Rating: [[8]]", 8),
        judgment(2, "m1", "judge-b", "英語 ok. Rating: [[9]]", 9)])
    ingest(store, [tmp_path / "h"])
    return store


def n(store, text, **kw):
    return S.count(store, S.SearchQuery(text, **kw))


def test_nfkc_and_case_fold_both_ways(tiny):
    # full-width query finds half-width text and the other way round; case never matters
    assert n(tiny, "ｐｙｔｈｏｎ", fields=("rationale",)) == 2
    assert n(tiny, "python", fields=("question",)) == 1  # the question says ＰＹＴＨＯＮ
    assert n(tiny, "Python") == n(tiny, "ＰＹＴＨＯＮ") == 4  # question, answer, 2 rationales
    assert n(tiny, "１０", fields=("answer", "rationale")) == 2
    assert n(tiny, "10", fields=("question",)) == 1  # 次に１０個
    # half-width katakana with a voiced mark (ｶﾞ = two characters) is ガ after NFKC
    assert n(tiny, "ガイド", fields=("question",)) == 1
    assert n(tiny, "ｶﾞｲﾄﾞ", fields=("answer", "rationale")) == 2
    # no word tokenisation: any substring inside Japanese text
    assert n(tiny, "答えて") == 1


def test_snippet_marks_the_hit_in_the_original_text(tiny):
    rows = S.search(tiny, S.SearchQuery("python", fields=("question",)))
    assert rows["snippet"].tolist() == ["«ＰＹＴＨＯＮ»で書いてください"]
    assert rows.iloc[0]["judge"] is None and rows.iloc[0]["score"] is None or rows.iloc[0]["score"] != rows.iloc[0]["score"]
    rows = S.search(tiny, S.SearchQuery("ガイド", fields=("question",)))
    assert rows["snippet"].tolist() == ["«ｶﾞｲﾄﾞ»を書く"]
    assert S.snippet("a\nb <img src=x> c", "<img") == "a ⏎ b «<img» src=x> c"


def test_regex_is_case_insensitive_on_normalised_text(tiny):
    assert n(tiny, r"\[\[[89]\]\]", regex=True, fields=("rationale",)) == 3
    assert n(tiny, r"^python", regex=True, fields=("rationale",)) == 1  # "PYTHON code."
    with pytest.raises(Exception, match="regular expression"):
        n(tiny, "(", regex=True)


def test_filters_combine(tiny):
    assert n(tiny, "python", fields=("rationale",), score_max=3) == 1
    assert n(tiny, "python", fields=("rationale",), judges=("judge-b",)) == 1
    assert n(tiny, "", fields=("rationale",), parse_status="not_parsed") == 1
    assert n(tiny, "", fields=("rationale",), turn=2) == 2
    assert n(tiny, "", fields=("rationale",), category="writing") == 3
    # an answer matches a judgment filter when some judgment of its item does
    assert n(tiny, "python", fields=("answer",), score_max=3) == 1
    assert n(tiny, "python", fields=("answer",), score_min=9) == 0
    # judges disagree by >= 6 only on question 1 turn 1 (2 vs 8)
    assert n(tiny, "", fields=("rationale",), disagree_min=6) == 2
    assert n(tiny, "", fields=("question", "answer"), disagree_min=6) == 2
    assert n(tiny, "", bench="nope") == 0


def test_index_follows_removal(tiny):
    before = n(tiny, "英語")
    with tiny.read() as cur:
        sid = cur.execute("SELECT source_id FROM sources WHERE file_name = 'judge-b_single.jsonl'").fetchone()[0]
    remove_source(tiny, sid)
    assert n(tiny, "英語") == before - 1


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def plain_count(needle: str, regex: str | None = None, root: Path = SAMPLE) -> dict[str, int]:
    """Count records containing the needle by reading the sample's FastChat JSONL files directly."""
    counts = dict.fromkeys(S.FIELDS, 0)

    def hit(text):
        text = _nfkc(text or "")
        return bool(re.search(regex, text, re.I)) if regex else _nfkc(needle) in text

    for path in root.rglob("*.jsonl"):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if path.name == "question.jsonl":
            counts["question"] += sum(hit(t) for r in rows for t in r["turns"])
        elif path.parent.name in ("model_answer", "reference_answer"):
            field = "answer" if path.parent.name == "model_answer" else "reference"
            counts[field] += sum(hit(t) for r in rows for c in r["choices"] for t in c["turns"])
        elif path.name.endswith("_single.jsonl"):
            counts["rationale"] += sum(hit(r["judgment"]) for r in rows)
            counts["prompt"] += sum(hit(r["user_prompt"]) for r in rows)
    return counts


@pytest.mark.parametrize("needle", ["英語", "python", "ｒａｔｉｎｇ：", "[[1]]"])
def test_count_equals_a_plain_count_over_the_jsonl_files(sample_store, needle):
    expected = plain_count(needle)
    got = S.count_by_field(sample_store, S.SearchQuery(needle, harness="fastchat"))
    assert {f: got.get(f, 0) for f in S.FIELDS} == expected
    assert sum(expected.values()) > 0


def test_regex_count_equals_a_plain_count(sample_store):
    pattern = r"rating: \[\[(1|2|3)\]\]"
    assert S.count(sample_store, S.SearchQuery(pattern, regex=True, fields=("rationale",), harness="fastchat")) \
        == plain_count("", regex=pattern)["rationale"] > 0


def test_cli_search_json_and_count(sample_store, capsys):
    db = str(sample_store.path)
    sample_store.close()
    assert cli_main(["search", "日本語", "--db", db, "--in", "rationale", "--score-max", "3", "--count"]) == 0
    count = json.loads(capsys.readouterr().out)
    assert list(count) == ["count"] and count["count"] > 0
    assert cli_main(["search", "日本語", "--db", db, "--in", "rationale", "--score-max", "3", "--format", "json",
                     "--limit", "500"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == count["count"]
    assert all(list(r) == ["field", "bench", "question_id", "turn", "model", "judge", "sample", "score", "snippet"]
               for r in rows)
    assert all(r["score"] <= 3 and "«日本語»" in r["snippet"] for r in rows)
    assert cli_main(["search", "English", "--db", db, "--in", "question", "--format", "json"]) == 0
    assert all(r["judge"] is None and r["score"] is None for r in json.loads(capsys.readouterr().out))
    assert cli_main(["search", "(", "--regex", "--db", db]) == 2


# ----------------------------------------------------------------------------------------------
# The page

@pytest.fixture
def page_db(_sample_db, tmp_path, monkeypatch):
    db = tmp_path / "search.duckdb"
    shutil.copy(_sample_db, db)
    monkeypatch.setenv("JUDGELENS_DB", str(db))
    return db


def test_search_page_finds_filters_pages_and_links(page_db):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("pages/search.py").run()
    assert not at.exception
    at.text_input(key="sr_q").set_value("ｒａｔｉｎｇ").run()
    assert not at.exception
    total = S.count(_store(page_db), S.SearchQuery("rating"))
    assert any(f"{total:,} matching" in h.value for h in at.subheader)
    table = next(d.value for d in at.dataframe if "snippet" in d.value.columns)
    assert len(table) == 50 and table["snippet"].str.contains("«rating»", case=False).all()
    assert table["open"].str.startswith("item_view?").all()
    assert at.query_params["q"] == "ｒａｔｉｎｇ"
    at.number_input(key="sr_page").set_value(2).run()
    second = next(d.value for d in at.dataframe if "snippet" in d.value.columns)
    assert second["snippet"].tolist() != table["snippet"].tolist()
    assert at.query_params["page"] == "2"
    at.multiselect(key="sr_in").set_value(["rationale"]).run()
    at.number_input(key="sr_smax").set_value(3.0).run()
    filtered = next(d.value for d in at.dataframe if "snippet" in d.value.columns)
    assert (filtered["field"] == "rationale").all() and (filtered["score"] <= 3).all()


def test_search_page_opens_from_a_deep_link(page_db):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.query_params.update({"q": "英語", "in": "rationale", "smax": "5"})
    at.switch_page("pages/search.py").run()
    assert not at.exception
    assert at.text_input(key="sr_q").value == "英語"
    expected = S.count(_store(page_db), S.SearchQuery("英語", fields=("rationale",), score_max=5))
    assert any(f"{expected:,} matching" in h.value for h in at.subheader)


def _store(path):
    from pages._common import _open_store

    return _open_store(str(path))


def test_a_large_page_reads_the_same_originals_as_small_ones(sample_store, monkeypatch):
    q = S.SearchQuery("rating", fields=("rationale", "answer"))
    small = pd.concat([S.search(sample_store, q, limit=50, offset=o) for o in range(0, 300, 50)], ignore_index=True)
    monkeypatch.setattr(S, "POINT_LOOKUPS", 10)
    big = S.search(sample_store, q, limit=300)
    assert big["snippet"].tolist() == small["snippet"].tolist()
    assert big["snippet"].str.contains("«rating»", case=False).all()


def test_index_can_wait_for_the_first_search(store, tmp_path, monkeypatch):
    monkeypatch.setenv("JUDGELENS_SEARCH_INDEX", "search")
    ingest(store, [SAMPLE / "stefanstud-fastchat"])
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM search_text").fetchone()[0] == 0
    got = S.count_by_field(store, S.SearchQuery("python"))  # builds the index, then searches
    expected = plain_count("python", root=SAMPLE / "stefanstud-fastchat")
    assert {f: got.get(f, 0) for f in S.FIELDS} == expected and sum(expected.values()) > 0
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM search_sources").fetchone()[0] == \
            cur.execute("SELECT count(*) FROM sources").fetchone()[0]
