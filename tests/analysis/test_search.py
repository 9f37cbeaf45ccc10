"""Search: NFKC and case folding, regex, filters, counts against a plain count over the sample's JSONL files,
the index following imports and removals, the CLI, and the Search page under AppTest."""
from __future__ import annotations

import json
import unicodedata
from contextlib import contextmanager

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from lib.analysis import search as S
from lib.analysis.search_view import group_samples
from lib.cli.main import main as cli_main
from lib.ingest.importer import ingest, remove_source
from lib.store import Store
from search_support import MIXED, judgment, plain_count, write_jsonl


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


def test_snippet_context_before_a_hit_fits_the_same_width_in_japanese_and_in_english():
    """60 Japanese characters before a hit took the whole width of the Search page's snippet column: the hit itself
    was cut off. The context before a hit is 60 display columns, a wide character counting two."""
    ja = "日本語の文章です。" * 20 + "「目印」" + "後ろの文章。" * 20
    got = S.snippet(ja, "目印")
    before = got[:got.index("«")]
    assert before.startswith("…") and before[1:] == ja[ja.index("「目印") - 29:ja.index("「目印") + 1]
    assert sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in before[1:]) == 60
    assert got[got.index("»") + 1:] == ja[ja.index("目印」") + 2:][:60] + "…"  # after the hit: 60 characters
    en = "plain english text. " * 10 + "MARK" + " and after" * 20
    got = S.snippet(en, "mark")
    assert got[:got.index("«")] == "…" + en[en.index("MARK") - 60:en.index("MARK")]
    # a half-width katakana counts one column, a full-width letter two; a hit near the start keeps all before it
    assert S.snippet("ｱｲｳＡＢ目印", "目印") == "ｱｲｳＡＢ«目印»"


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

def search_page_with(query: str) -> AppTest:
    """The app, moved to the Search page, with ``query`` typed into its box (no exception on the way)."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("app_pages/search.py").run()
    assert not at.exception
    at.text_input(key="sr_q").set_value(query).run()
    assert not at.exception
    return at


def test_search_page_finds_filters_pages_and_links(app_db):
    at = search_page_with("ｒａｔｉｎｇ")
    by_field = S.count_by_field(_store(app_db), S.SearchQuery("rating"))
    total = sum(by_field.values())
    assert total > 100
    # More than a page: not counted unless asked (counting reads every text); the page says how many at least
    assert [h.value for h in at.subheader if "matching" in h.value] == ["More than 50 matching records"]
    assert at.number_input(key="sr_page").label == "Page (of 2+)"
    table = next(d.value for d in at.dataframe if "snippet" in d.value.columns)
    # 50 records a page; Swallow's identical samples fold into one row each (samples counts them)
    assert table["samples"].sum() == 50 and table["snippet"].str.contains("«rating»", case=False).all()
    assert table["open"].str.startswith("item_view?").all()
    assert at.query_params["q"] == "ｒａｔｉｎｇ"
    at.number_input(key="sr_page").set_value(2).run()
    second = next(d.value for d in at.dataframe if "snippet" in d.value.columns)
    assert second["snippet"].tolist() != table["snippet"].tolist()
    assert at.query_params["page"] == "2"
    at.toggle(key="sr_count").set_value(True).run()  # asked for: the exact total and the count of each field
    assert any(h.value == f"{total:,} matching record(s)" for h in at.subheader)
    assert any(c.value.startswith(" · ".join(f"{f}: {by_field.get(f, 0):,}" for f in S.FIELDS)) for c in at.caption)
    assert at.number_input(key="sr_page").label == f"Page (of {-(-total // 50):,})"
    assert at.number_input(key="sr_page").value == 2
    at.multiselect(key="sr_in").set_value(["rationale"]).run()
    at.number_input(key="sr_smax").set_value(3.0).run()
    filtered = next(d.value for d in at.dataframe if "snippet" in d.value.columns)
    assert (filtered["field"] == "rationale").all() and (filtered["score"] <= 3).all()


def test_search_page_counts_from_its_rows_or_when_asked(app_db, monkeypatch):
    """Counting every match reads every text searched: the page counts only when asked, or from its own rows when
    they all fit on the first page (the same numbers as count_by_field); a changed filter starts on page 1; a page
    past the end (a link) is counted and shows the last page."""
    counted = []
    real = S.count_by_field
    monkeypatch.setattr(S, "count_by_field", lambda store, q, **kw: counted.append(q) or real(store, q, **kw))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.query_params.update({"q": "rating"})
    at.switch_page("app_pages/search.py").run()
    assert not at.exception and counted == []
    at.number_input(key="sr_page").set_value(3).run()
    assert at.query_params["page"] == "3" and counted == []
    at.selectbox(key="sr_cat").set_value("math").run()  # another search: its first page
    assert at.number_input(key="sr_page").value == 1 and "page" not in at.query_params
    at.number_input(key="sr_smax").set_value(1.0).run()
    q = S.SearchQuery("rating", category="math", score_max=1.0)
    expected = real(_store(app_db), q)
    assert 0 < sum(expected.values()) <= 50 and len(expected) > 1, expected  # all on page 1: counted from its rows
    assert counted == []
    assert any(h.value == f"{sum(expected.values()):,} matching record(s)" for h in at.subheader)
    assert any(c.value.startswith(" · ".join(f"{f}: {expected.get(f, 0):,}" for f in S.FIELDS)) for c in at.caption)

    past = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    past.run()
    past.query_params.update({"q": "rating", "page": "999"})
    past.switch_page("app_pages/search.py").run()
    assert not past.exception
    total = sum(real(_store(app_db), S.SearchQuery("rating")).values())
    last = -(-total // 50)
    assert past.number_input(key="sr_page").value == last and past.query_params["page"] == str(last)
    assert any(h.value == f"{total:,} matching record(s)" for h in past.subheader)
    shown = next(d.value for d in past.dataframe if "snippet" in d.value.columns)
    assert shown["samples"].sum() == total - 50 * (last - 1)


def test_search_page_opens_from_a_deep_link(app_db):
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.query_params.update({"q": "英語", "in": "rationale", "smax": "5"})
    at.switch_page("app_pages/search.py").run()
    assert not at.exception
    assert at.text_input(key="sr_q").value == "英語"
    expected = S.count(_store(app_db), S.SearchQuery("英語", fields=("rationale",), score_max=5))
    assert any(f"{expected:,} matching" in h.value for h in at.subheader)


def test_the_search_page_indexes_a_store_made_before_the_index(app_db):
    """Sources without the search index (a store made before it) are indexed when the Search page opens: the check
    is cached per data version, so its reruns ask nothing more, and the page then finds their texts."""
    store = _store(app_db)
    try:
        with store.write() as cur:  # as a store made before search: nothing indexed
            cur.execute("DELETE FROM search_text")
            cur.execute("DELETE FROM search_sources")
        pending = S.index_pending(store)
        with store.read() as cur:
            assert pending == cur.execute("SELECT count(*) FROM sources").fetchone()[0] > 0
    finally:
        store.close()
    at = search_page_with("ｒａｔｉｎｇ")
    assert [h.value for h in at.subheader if "matching" in h.value] == ["More than 50 matching records"]
    store = _store(app_db)
    try:
        assert S.index_pending(store) == 0
    finally:
        store.close()


def test_a_search_rerun_reads_only_the_data_version(app_db):
    """A rerun of a search's page (nothing changed) asks the store for its data version alone: the index check, the
    facets and the page of results are cached per data version."""
    from conftest import reads_counted

    from app_pages._store import get_store

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.switch_page("app_pages/search.py").run()
    at.text_input(key="sr_q").set_value("ｒａｔｉｎｇ").run()
    assert not at.exception and any("snippet" in d.value.columns for d in at.dataframe)
    with reads_counted(get_store()) as seen:
        at.run()
    assert not at.exception
    assert len(seen) == 1  # Store.data_version


def _store(path):
    """A second handle on the page's database, as any other reader would open it."""
    from lib.store import Store

    return Store(str(path))


def test_pages_concatenate_across_fields_into_one_stable_order(sample_store):
    # a word in all three fields, a few hundred hits (98 rationales, 218 answers, 12 questions): every page is read
    # ("rating", in every FastChat rationale, took 200 pages and a minute)
    q = S.SearchQuery("python", fields=("rationale", "answer", "question"))
    total = S.count(sample_store, q)
    whole = S.search(sample_store, q, limit=total + 10)
    assert len(whole) == total > 120
    assert whole["field"].nunique() == 3
    # pages of 50 (and of an odd size, so pages straddle the end of a field) are slices of the one order
    for size in (50, 37):
        paged = pd.concat([S.search(sample_store, q, limit=size, offset=o) for o in range(0, total + size, size)],
                          ignore_index=True)
        pd.testing.assert_frame_equal(paged, whole, check_dtype=False)
    assert whole["field"].tolist() == sorted(whole["field"], key=S.FIELDS.index)  # by field, FIELDS order
    assert whole["snippet"].str.contains("«python»", case=False).all()
    assert S.search(sample_store, q, offset=total).empty


# ----------------------------------------------------------------------------------------------
# The sparse index: NFKC-stable texts are matched on the original column, the others on their lowered copy

@pytest.fixture
def mixed(store, tmp_path):
    """Every MIXED text as a question turn, answer turn, reference turn, rationale and judge prompt."""
    bench = tmp_path / "m" / "benchm"
    texts = [t for t, _ in MIXED]
    write_jsonl(bench / "question.jsonl", [{"question_id": i, "category": "writing", "turns": [t, "second turn"]}
                                           for i, t in enumerate(texts, 1)])
    write_jsonl(bench / "model_answer" / "m1.jsonl", [
        {"question_id": i, "model_id": "m1", "choices": [{"index": 0, "turns": [t, "x"]}]}
        for i, t in enumerate(texts, 1)])
    write_jsonl(bench / "reference_answer" / "gpt-4.jsonl", [
        {"question_id": i, "model_id": "gpt-4", "choices": [{"index": 0, "turns": [t, "y"]}]}
        for i, t in enumerate(texts, 1)])
    write_jsonl(bench / "model_judgment" / "gpt-4_single.jsonl", [
        judgment(i, "m1", "gpt-4", t + f" Rating: [[{i}]]", i, prompt="[Instruction] " + t)
        for i, t in enumerate(texts, 1)])
    ingest(store, [tmp_path / "m"])
    return store


def test_only_texts_nfkc_changes_get_a_copy(mixed):
    # everything, judge prompts included, is indexed by the import itself: the judgments through the fast path
    # (marked in the INSERT), answers through the UPDATE
    with mixed.read() as cur:
        assert cur.execute("SELECT count(*) FROM sources WHERE source_id NOT IN (SELECT source_id FROM search_sources)"
                           ).fetchone()[0] == 0
    with mixed.read() as cur:
        answers = dict(cur.execute("SELECT text, text_norm FROM answers WHERE turn = 1").fetchall())
        judged = cur.execute("SELECT rationale, rationale_norm, judge_prompt, prompt_norm FROM single_judgments"
                             ).fetchall()
    def expected(text, copied):
        return {True: _lowered(text), False: None, None: ""}[copied]

    for text, copied in MIXED:
        assert answers[text] == expected(text, copied), text
    for rationale, r_norm, prompt, p_norm in judged:
        text = rationale.rsplit(" Rating", 1)[0]
        copied = dict(MIXED)[text]
        assert r_norm == (None if copied is False else expected(rationale, copied))
        assert p_norm == (None if copied is False else expected(prompt, copied))


@pytest.mark.parametrize("query, texts", [
    ("python", ["Plain ASCII Python text", "ＰＹＴＨＯＮ（全角）で書かれた文章"]),
    ("ＰＹＴＨＯＮ", ["Plain ASCII Python text", "ＰＹＴＨＯＮ（全角）で書かれた文章"]),  # full-width query, both texts
    ("(全角)", ["ＰＹＴＨＯＮ（全角）で書かれた文章"]),                                   # half-width query, full-width text
    ("ガイド", ["ｶﾞｲﾄﾞ ﾃｷｽﾄ half-width katakana"]),
    ("file", ["ligature ﬁle and №１０"]),
    ("no10", ["ligature ﬁle and №１０"]),
    ("理由を", ["日本語の説明です。理由を述べます"]),
    ("istanbul", []),                     # lower('İ') is 'i̇' for Python but 'i' for the index: see below
    ("strasse", []),
    ("STRASSE", []),
    ("straße", ["Straße über naïve"]),
    ("ÜBER", ["Straße über naïve"]),
    ("café", ["cafe\u0301 combining"]),
    ("cafe", []),                         # NFKC composes e + ◌́ into é
    ("ςοφός", []),                        # final sigma is its own lower case
    ("σοφός", ["İstanbul ẞTRASSE σοφός"]),
])
def test_every_field_finds_stable_and_copied_texts_alike(mixed, query, texts):
    got = S.count_by_field(mixed, S.SearchQuery(query))
    expected = {f: len(texts) for f in S.FIELDS} if texts else {}
    if query == "istanbul":  # the index lowers İ to i (pyarrow's lower case); Python's lower() gives i + ◌̇
        expected = {f: 1 for f in S.FIELDS}
    if query == "strasse":  # ẞ lowers to ß, not ss: no match, like lower() in Python
        expected = {}
    assert got == expected
    # the result rows carry the original text's snippet with the hit marked
    rows = S.search(mixed, S.SearchQuery(query, fields=("rationale",)))
    assert len(rows) == expected.get("rationale", 0)
    assert all("«" in s and "»" in s for s in rows["snippet"])


def test_regex_on_stable_and_copied_texts(mixed):
    # (?i) on the original of a stable text, on the lowered copy of the others
    assert S.count_by_field(mixed, S.SearchQuery(r"python\b", regex=True)) == {f: 2 for f in S.FIELDS}
    assert S.count_by_field(mixed, S.SearchQuery(r"[０-９]{2}", regex=True, fields=("answer",))) == {"answer": 1}
    assert S.count(mixed, S.SearchQuery(r"^ｐｙｔｈｏｎ", regex=True, fields=("prompt",))) == 0  # prompts start [Ins
    assert S.count(mixed, S.SearchQuery(r"^ｐｙｔｈｏｎ", regex=True, fields=("rationale",))) == 1


def test_filters_apply_to_stable_and_copied_texts(mixed):
    def c(**kw):
        return S.count(mixed, S.SearchQuery("python", **kw))

    assert c(fields=("rationale",), score_max=3) == 2 and c(fields=("rationale",), score_min=4) == 0
    assert c(fields=("rationale",), score_min=2) == 1
    assert c(fields=("answer",), score_min=3) == 1           # via the judgment of its item (score 3)
    assert c(fields=("question", "reference"), score_min=3) == 2
    assert c(judges=("gpt-4",), fields=("prompt",)) == 2 and c(judges=("other",)) == 0
    assert c(model="m1") == 6 and c(model="m2") == 0           # questions and references have no model
    assert c(turn=2) == 0 and c(turn=1) == 10
    assert c(bench="benchm", harness="fastchat", category="writing", parse_status="ok") == 10


def _lowered(text: str) -> str:
    from lib.search_index import normalise

    return normalise(pa.array([text]))[0].as_py()


ALPHABET = "aAbBiIİıkKKsSſßẞσςΣ12１２²₂ａＡｂｶﾞｲ゙カがｷﾀe\u0301é ﬁ.[*（(　"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.text(ALPHABET, min_size=1, max_size=12), min_size=1, max_size=6),
       query=st.text(ALPHABET, min_size=1, max_size=3))
def test_the_sparse_match_equals_contains_on_the_full_copy(texts, query):
    """What a search evaluates (the copy where the index keeps one, else the pattern on the original) equals
    ``contains(lower(NFKC(text)), lower(NFKC(query)))``, the full copy's semantics, for any text and query."""
    import duckdb

    from lib.search_index import copy_class, marked_class, normalise_query, stable_match

    needle = normalise_query(query)
    con = duckdb.connect()
    con.execute("CREATE TABLE t (i INTEGER, text VARCHAR, full_copy VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", [[i, x, _lowered(x)] for i, x in enumerate(texts)])
    params = {"needle": needle, "copy": copy_class(), "marked": marked_class()}
    conditions = []
    for name, local in (("p", False), ("pl", True)):
        kind, pattern = stable_match(needle, local=local)
        conditions.append({"contains": "contains(text, $needle)", "regex": f"regexp_matches(text, ${name})",
                           "never": "false"}[kind])
        if kind == "regex":
            params[name] = pattern
    got = con.execute(f"""
        WITH s AS (SELECT *, CASE WHEN NOT regexp_matches(text, $marked) THEN NULL  -- what the index stores
                                  WHEN regexp_matches(text, $copy) THEN full_copy ELSE '' END AS norm FROM t)
        SELECT list(CASE WHEN norm IS NULL THEN {conditions[0]} WHEN norm = '' THEN {conditions[1]}
                         ELSE contains(norm, $needle) END ORDER BY i),
               list(contains(full_copy, $needle) ORDER BY i) FROM s""", params).fetchone()
    assert got[0] == got[1]


REGEXES = [r"\d", r"\d\d", r"[a-c]+2", r"^a", r"a.b", r"\s", r"カ|き", r"\(", r"\bab", r"ss", r"[^a-z]"]


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.text(ALPHABET, min_size=1, max_size=12), min_size=1, max_size=6),
       regex=st.sampled_from(REGEXES))
def test_a_regex_means_the_same_on_the_original_and_on_the_full_copy(texts, regex):
    import duckdb

    from lib.search_index import copy_class, local_translation, marked_class

    con = duckdb.connect()
    con.execute("CREATE TABLE t (i INTEGER, text VARCHAR, full_copy VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", [[i, x, _lowered(x)] for i, x in enumerate(texts)])
    src, dst = local_translation()
    got = con.execute("""
        WITH s AS (SELECT *, CASE WHEN NOT regexp_matches(text, $marked) THEN NULL
                                  WHEN regexp_matches(text, $copy) THEN full_copy ELSE '' END AS norm FROM t)
        SELECT list(CASE WHEN norm IS NULL THEN regexp_matches(text, $p)
                         WHEN norm = '' THEN regexp_matches(translate(text, $src, $dst), $p)
                         ELSE regexp_matches(norm, $p) END ORDER BY i),
               list(regexp_matches(full_copy, $p) ORDER BY i) FROM s""",
                      {"copy": copy_class(), "marked": marked_class(), "src": src, "dst": dst,
                       "p": "(?i)" + regex}).fetchone()
    assert got[0] == got[1]


def test_local_characters_map_to_one_character_whatever_stands_around_them():
    """A text whose only NFKC-changed characters are local ones gets no copy: NFKC must act on each of them alone."""
    from lib.search_index import case_tables, copy_class

    copied, local, _, _ = case_tables()
    assert {"Ａ", "１", "（", "ｶ", "　", "²", "₂"} <= set(local) and not {"ﾞ", "ﾟ", "…"} & set(local)
    neighbours = [chr(c) for c in range(0x20, 0x7F)] + list(local) + [
        chr(c) for c in range(0x3000, 0x3100)] + [chr(c) for c in range(0xAC00, 0xAC40)] + [
        c for c in map(chr, range(0x30000)) if unicodedata.decomposition(c)[:1] not in ("", "<")]
    neighbours = [c for c in neighbours if c not in copied]
    for c in local:
        for n in neighbours:
            for text in (c + n, n + c):
                assert unicodedata.normalize("NFKC", text).lower() == "".join(
                    local.get(x) or unicodedata.normalize("NFKC", x).lower() for x in text) or "İ" in text, text
    import duckdb

    assert duckdb.sql("SELECT list(regexp_matches(t, $c)) FROM (SELECT unnest(['ｶﾞ', 'ｶ１（　²', 'e\u0301', 'ａbc…'])"
                      " AS t)", params={"c": copy_class()}).fetchone()[0] == [True, False, True, True]


def test_case_folding_of_uncopied_characters_matches_their_lower_case():
    """A regex runs with (?i) on the original of an uncopied text and on the lowered copy of the others: every
    cased character without a copy must be RE2-case-equal to its lower case."""
    import duckdb

    from lib.search_index import all_chars, case_tables, lower_all

    copied, _, _, _ = case_tables()
    chars = [c for c in all_chars() if c not in copied and (c.lower() != c or c.upper() != c)]
    pairs = [(c, low) for c, low in zip(chars, lower_all(chars)) if low != c]
    assert len(pairs) > 1000
    con = duckdb.connect()
    bad = con.execute("""SELECT list(c) FROM (SELECT unnest($c) AS c, unnest($low) AS low)
                         WHERE NOT (regexp_matches(c, '(?i)' || low) AND regexp_matches(low, '(?i)' || c))""",
                      {"c": [c for c, _ in pairs], "low": [low for _, low in pairs]}).fetchone()[0]
    assert not bad


def test_search_groups_swallow_samples_and_the_item_view_marks_the_hit(app_db):
    """東京: Swallow's five identical samples of one answer are one row with samples = 5; the hit in context is the
    first column after the link; the link carries the hit, and the Item view it opens marks it « »."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    at.query_params.update({"q": "東京", "in": "answer"})
    at.switch_page("app_pages/search.py").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "snippet" in d.value.columns)
    assert list(table.columns[:3]) == ["open", "snippet", "field"]
    raw = S.search(_store(app_db), S.SearchQuery("東京", fields=("answer",)), limit=50)
    swallow = raw[raw["harness"] == "swallow"]
    assert len(swallow) > len(swallow.drop_duplicates(["bench", "question_id", "turn", "model", "snippet"]))
    assert len(table) < len(raw) and 5 in set(table["samples"])
    assert table[["bench", "question_id", "turn", "model", "snippet"]].duplicated().sum() == 0
    assert not {"None", "nan"} & set(map(str, table.to_numpy().ravel()))
    link = table["open"].iloc[0]
    assert "hit=%E6%9D%B1%E4%BA%AC" in link and "hit_in=answer" in link
    from urllib.parse import parse_qsl

    item = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    item.run()
    item.query_params.update(dict(parse_qsl(link.split("?", 1)[1])))
    item.switch_page("app_pages/item_view.py").run()
    assert not item.exception
    assert any(c.value.startswith("Opened from Search: hits of «東京» are marked") for c in item.caption)
    assert any("«東京»" in t.value for t in item.text)


@contextmanager
def statements_run(monkeypatch):
    """The SQL statements run through any store's read cursors inside the block (a list, filled as they run)."""
    executed, real_read = [], Store.read

    class Counting:
        def __init__(self, cur):
            self.cur = cur

        def execute(self, sql, *args):
            executed.append(sql)
            return self.cur.execute(sql, *args)

        def __getattr__(self, name):
            return getattr(self.cur, name)

    @contextmanager
    def counting(self):
        with real_read(self) as cur:
            yield Counting(cur)

    monkeypatch.setattr(Store, "read", counting)
    try:
        yield executed
    finally:
        monkeypatch.setattr(Store, "read", real_read)


def test_the_question_field_looks_at_the_turns_pages_show_only_when_some_question_text_matches(sample_store,
                                                                                                monkeypatch):
    """Which question turns count (those judges saw: current_questions, a join) is asked only when some question
    text holds the word at all; the rows and counts are those of the full query either way."""
    for text, some in (("zzqx-nowhere", False), ("rating", True)):
        q = S.SearchQuery(text, fields=("question",))
        with statements_run(monkeypatch) as executed:
            page = S.search_page(sample_store, q, limit=100)
        assert any("current_questions" in sql for sql in executed) == some, (text, executed)
        assert len(page.rows) == S.count(sample_store, q) and (len(page.rows) > 0) == some
        assert page.counts == {"question": len(page.rows)}


def test_a_page_skips_the_fields_earlier_pages_counted_and_finds_the_same_rows(sample_store, monkeypatch):
    """Paging does not read again what an earlier page read to its end: a field whose count is known (the next page
    of the same search, or a field without any match under the same text with fewer filters) is skipped. The rows
    are those of a search that knew nothing; only the statements run differ."""
    q = S.SearchQuery("rating", fields=("question", "answer", "rationale"))
    expected = S.count_by_field(sample_store, q)
    assert expected["rationale"] > 80 and 0 < expected["question"] + expected["answer"] < 60, expected
    before = expected["question"] + expected["answer"]
    first = S.search_page(sample_store, q, limit=before + 10)
    # question and answer were read to their end; the rationales were not
    assert first.counts == {"question": expected["question"], "answer": expected["answer"]}
    with statements_run(monkeypatch) as executed:
        second = S.search_page(sample_store, q, limit=20, offset=before + 10,
                               _known=S.carried_counts(q, [(q, first.counts)]))
    searched = [sql for sql in executed if "search_sources" not in sql]  # the index's pending check aside
    assert len(searched) == 1 and "FROM single_judgments" in searched[0], executed  # the rationales alone
    assert second.counts == first.counts  # the rationales go on past this page too
    pd.testing.assert_frame_equal(second.rows, S.search(sample_store, q, limit=20, offset=before + 10))
    # without what the first page knew: the same rows
    pd.testing.assert_frame_equal(second.rows, S.search_page(sample_store, q, limit=20, offset=before + 10).rows)

    # the same text with a filter more: only a field without any match carries over (another's count may drop)
    narrower = S.SearchQuery("rating", fields=("question", "answer", "rationale"), score_max=3.0)
    assert S.carried_counts(narrower, [(q, {"question": 0, "answer": 40})]) == {"question": 0}
    # the same query: every count; fewer filters, another text or a regex: nothing
    assert S.carried_counts(narrower, [(narrower, {"question": 0, "answer": 40})]) == {"question": 0, "answer": 40}
    assert S.carried_counts(q, [(narrower, {"question": 0, "answer": 0})]) == {}
    assert S.carried_counts(S.SearchQuery("ratings"), [(q, {"question": 0})]) == {}
    assert S.carried_counts(S.SearchQuery("rating", regex=True), [(q, {"question": 0})]) == {}
    # a field the query does not search is left out
    assert S.carried_counts(S.SearchQuery("rating", fields=("answer",)), [(q, {"question": 0})]) == {}


def test_search_results_fold_identical_samples_and_leave_single_answers_as_they_are():
    page = pd.DataFrame({"field": ["answer", "answer", "rationale", "question"],
                         "bench": ["b", "b", "b", "b"], "question_id": ["1", "1", "1", "2"], "turn": [1, 1, 1, 1],
                         "model": ["m", "m", "m", None], "judge": [None, None, "j", None], "sample": [1, 2, 1, None],
                         "score": [None, None, 8.0, None], "snippet": ["«x»", "«x»", "«x» y", "«x» q"]},
                        index=[5, 6, 7, 8])
    folded = group_samples(page)
    assert folded["samples"].tolist() == [2, 1, 1] and folded["sample"].tolist()[:2] == [1, 1]
    single = group_samples(page.iloc[1:])  # nothing to fold: the rows as they are, one sample each
    assert single.index.tolist() == [0, 1, 2] and single["samples"].tolist() == [1, 1, 1]
    assert list(single.columns) == ["field", "bench", "question_id", "turn", "model", "judge", "sample", "samples",
                                    "score", "snippet"]
    assert single["score"].tolist()[1] == 8.0 and all(s != s for s in single["score"].tolist()[::2])  # None: NaN
    assert single["snippet"].tolist() == ["«x»", "«x» y", "«x» q"]


def test_the_search_pages_next_page_skips_what_its_first_page_read_to_the_end(app_db, monkeypatch):
    """On the Search page, page 2 of a search does not read the questions and answers again (page 1 read them to
    their end); a filter more then skips only what had no match; the rows are the library's own pages."""
    at = search_page_with("rating")
    q = S.SearchQuery("rating")
    store = _store(app_db)
    first = S.search_page(store, q, limit=51)
    assert first.counts == {"question": first.counts["question"], "answer": first.counts["answer"]}, first.counts
    with statements_run(monkeypatch) as executed:
        at.number_input(key="sr_page").set_value(2).run()
    assert not at.exception and executed and not any("FROM answers" in sql or "FROM search_text" in sql
                                                     for sql in executed), executed
    shown = next(d.value for d in at.dataframe if "snippet" in d.value.columns)
    assert shown["snippet"].tolist() == group_samples(S.search(store, q, limit=50, offset=50))["snippet"].tolist()
    with statements_run(monkeypatch) as executed:
        at.selectbox(key="sr_parse").set_value("ok").run()  # a filter more: the fields with matches are read again
    assert not at.exception and any("FROM answers" in sql for sql in executed)
    store.close()


def test_a_lake_search_checks_the_index_once_per_data_version(lake_store):
    """On a lake every search asked whether sources wait for the index (a statement with catalog rounds): once found
    up to date at the data version the process last read, the check is not asked again at that version; a store
    whose sources are not indexed (made before the index) is checked at its next version, indexed, and found."""
    from conftest import JA, reads_counted

    ingest(lake_store, [JA / "ja_mt_bench" / "question.jsonl",
                        JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"])
    query = S.SearchQuery("ｒａｔｉｎｇ", fields=("rationale",))
    lake_store.data_version()
    with reads_counted(lake_store) as seen:
        S.ensure_index(lake_store)
    assert len(seen) == 1
    with reads_counted(lake_store) as seen:
        S.ensure_index(lake_store)
        found = S.search(lake_store, query)
    assert len(seen) == 1 and len(found)  # the search's own read alone
    with lake_store.write() as cur:  # as a store made before search: nothing indexed
        cur.execute("DELETE FROM search_text")
        cur.execute("DELETE FROM search_sources")
    lake_store.data_version()
    assert S.index_pending(lake_store) > 0
    pd.testing.assert_frame_equal(S.search(lake_store, query), found)
    assert S.index_pending(lake_store) == 0
