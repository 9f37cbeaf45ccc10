"""The search index: which texts get a lowered NFKC copy (the marks an import makes in its insert, the rule they
follow, pyarrow's RE2 against DuckDB's own regex), the generated classes and tables search reads, and stores made by
an older index upgraded when opened. Search itself (queries, fields, pages, the CLI): test_search.py."""
from __future__ import annotations

import unicodedata

import pyarrow as pa
import pytest
from search_support import MIXED, SAMPLE, judgment, plain_count, write_jsonl

from lib.analysis import search as S
from lib.ingest.importer import ingest


def test_a_store_with_the_first_index_is_upgraded(tmp_path):
    """A store made when search_text held a copy of every text: opening it adds the norm columns and the first
    search indexes it again."""
    from lib.store import Store

    path = tmp_path / "old.duckdb"
    with Store(path) as s:
        ingest(s, [SAMPLE / "stefanstud-fastchat"])
        with s.write() as cur:  # back to the first index's layout
            cur.execute("DROP VIEW answers_view")
            for table, column in (("answers", "text_norm"), ("single_judgments", "rationale_norm"),
                                  ("single_judgments", "prompt_norm")):
                cur.execute(f"ALTER TABLE {table} DROP COLUMN {column}")
            cur.execute("DROP TABLE search_text")
            cur.execute("CREATE TABLE search_text (source_id INTEGER, field VARCHAR, harness VARCHAR, bench VARCHAR, "
                        "question_id VARCHAR, turn INTEGER, model VARCHAR, sample INTEGER, judge VARCHAR, "
                        "score DOUBLE, parse_status VARCHAR, norm VARCHAR)")
            cur.execute("DELETE FROM meta WHERE key = 'search_index'")
    with Store(path) as s:
        got = S.count_by_field(s, S.SearchQuery("python"))
        with s.read() as cur:
            assert cur.execute("SELECT count(*) FROM answers_view").fetchone()[0] > 0
    expected = plain_count("python", root=SAMPLE / "stefanstud-fastchat")
    assert {f: got.get(f, 0) for f in S.FIELDS} == expected and sum(expected.values()) > 0


def test_the_generated_classes_are_the_rules_output():
    """lib/search_classes.py (what an import reads instead of building the tables) is what the rules give for this
    environment's Unicode data; run scripts/gen_search_classes.py when this fails."""
    import importlib.metadata

    from lib import search_classes
    from lib.search_index import built_classes, built_tables

    assert (search_classes.UNIDATA_VERSION, search_classes.PYARROW_VERSION) == (
        unicodedata.unidata_version, importlib.metadata.version("pyarrow"))
    assert {k: getattr(search_classes, k) for k in ("COPY", "MARKED", "UNSTABLE")} == built_classes()
    assert {k: getattr(search_classes, k) for k in ("LOCAL", "CASES", "CASES_LOCAL")} == built_tables()


def test_a_search_reads_its_tables_from_the_generated_file(monkeypatch):
    """The tables a search makes its patterns from (``query_tables``) are read from lib/search_classes.py when it
    was made from this process's Unicode data (building them cost the first search of every server process ~0.5
    CPU-s), else built: the same tables either way."""
    from lib import search_classes, search_index

    search_index.query_tables.cache_clear()
    try:
        assert search_index.query_tables() == search_index.case_tables()
        assert search_index.stable_match("ます。ab") == ("regex", "ます。[Aa][Bb]")
        search_index.query_tables.cache_clear()
        monkeypatch.setattr(search_classes, "CASES", {"a": "aXY"})  # what a file generated elsewhere may hold
        assert search_index.stable_match("ab") == ("regex", "[XYa]b")  # same versions: the file is read
        search_index.query_tables.cache_clear()
        monkeypatch.setattr(search_classes, "UNIDATA_VERSION", "0.0.0")
        assert search_index.stable_match("ab") == ("regex", "[Aa][Bb]")
    finally:
        search_index.query_tables.cache_clear()


def test_other_unicode_data_builds_the_classes(monkeypatch):
    from lib import search_classes, search_index

    search_index.classes_in_use.cache_clear()
    monkeypatch.setattr(search_classes, "MARKED", "[x]")  # what a file generated elsewhere may hold
    try:
        assert search_index.marked_class() == "[x]"  # same versions: the file is read
        search_index.classes_in_use.cache_clear()
        monkeypatch.setattr(search_classes, "UNIDATA_VERSION", "0.0.0")
        assert search_index.marked_class() == search_index.built_classes()["MARKED"] != "[x]"
    finally:
        search_index.classes_in_use.cache_clear()


def test_the_fast_path_marks_texts_as_the_update_does(tmp_path):
    """A judgment file read by DuckDB (marks computed in the INSERT) and the same file with a BOM (read line by
    line, marked by the index's UPDATE) end with the same norms, copies included."""
    from lib.store import Store

    rows = [judgment(i, "m1", "gpt-4", t + f" Rating: [[{i}]]", i, prompt="[指示] " + t)
            for i, (t, _) in enumerate(MIXED, 1)]
    norms = {}
    for name, bom in (("plain", b""), ("bom", b"\xef\xbb\xbf")):
        path = tmp_path / name / "b" / "model_judgment" / "gpt-4_single.jsonl"
        write_jsonl(path, rows)
        path.write_bytes(bom + path.read_bytes())
        with Store(tmp_path / f"{name}.duckdb") as s:
            result = ingest(s, [path])
            assert [f.fast for f in result.imported] == [not bom]
            with s.read() as cur:
                norms[name] = cur.execute("SELECT question_id, rationale_norm, prompt_norm FROM single_judgments "
                                          "ORDER BY question_id").fetchall()
    assert norms["plain"] == norms["bom"]
    assert {n for _, r, p in norms["plain"] for n in (r, p)} >= {None, ""}  # stable, local-only and copied texts
    assert any(r not in (None, "") for _, r, _ in norms["plain"])


# Texts that must be marked (mark_expression) and texts that must not: a text of only stable non-ASCII characters
# is scanned and found clean, a pure-ASCII one is not scanned.
MUST_MARK = ["１２３ full-width digits", "ｶﾞｲﾄﾞ half-width kana", "the ﬁle ligature", "circled ① one",
             "compatibility ideograph \uF900", "cafe\u0301 combining sequence", "ellipsis … here", "İstanbul",
             "ideographic\u3000space", "x² superscript", "ﾞ a lone half-width voiced-sound mark", "㍻ square era"]
MUST_NOT = ["Plain ASCII Python text", "", "日本語の説明です。理由を述べます", "Straße über naïve", "東京 “quoted” — dash"]


def _marked_by_the_rule(text: str) -> bool:
    """The rule itself, without RE2: the text holds a copied or a local character (``case_tables``)."""
    from lib.search_index import case_tables

    copied, local = case_tables()[:2]
    return any(c in copied or c in local for c in text)


def test_no_ascii_character_is_marked():
    """mark_expression leaves pure-ASCII texts unscanned: exact only while no ASCII character is copied or local."""
    from lib.search_index import case_tables, marked_class

    copied, local = case_tables()[:2]
    assert not [c for c in map(chr, range(128)) if c in copied or c in local]
    assert pa.compute.sum(pa.compute.match_substring_regex(pa.array([chr(c) for c in range(128)]),
                                                           marked_class())).as_py() == 0


@pytest.mark.parametrize("n_ascii", [0, 40])
def test_the_mark_follows_the_rule_with_and_without_ascii_texts(n_ascii):
    """mark_expression (the ASCII test, then RE2 on the rest) marks exactly the texts holding a marked character."""
    import duckdb

    from lib.search_index import MARK_UDF, mark_expression, marked_class, marker

    texts = MUST_MARK + MUST_NOT + [f"ascii text {i} (Rating: [[5]])" for i in range(n_ascii)] + [None]
    con = duckdb.connect()
    with marker(con):
        got = con.execute(f"SELECT {mark_expression('t')}, regexp_matches(t, $marked) FROM (SELECT unnest($texts) "
                          "AS t, generate_subscripts($texts, 1) AS i) ORDER BY i",
                          {"texts": texts, "marked": marked_class()}).fetchall()
    assert [g[0] == "" for g in got[:-1]] == [_marked_by_the_rule(t) for t in texts[:-1]] and got[-1] == (None, None)
    assert sum(g[0] == "" for g in got) == len(MUST_MARK)
    assert [g[0] == "" for g in got[:-1]] == [g[1] for g in got[:-1]]  # pyarrow's RE2 reads the class as DuckDB's
    assert con.execute("SELECT count(*) FROM duckdb_functions() WHERE function_name = ?",
                       [MARK_UDF]).fetchone()[0] == 0  # removed after the block


def test_holds_marked_reads_every_character_as_the_rule_does():
    """holds_marked (pyarrow's RE2, the import's scan) marks a text for exactly the characters of the rule, each one
    alone and inside Japanese text, over every character below U+30000: no range of the class is read differently."""
    from lib.search_index import all_chars, holds_marked

    chars = all_chars()
    expected = [_marked_by_the_rule(c) for c in chars]
    for texts in (chars, [f"日本語の{c}説明" for c in chars]):  # ASCII and other texts mixed; no ASCII text
        assert holds_marked(pa.array(texts, pa.string())).to_pylist() == expected
    mixed = [t for pair in zip(MUST_MARK, MUST_NOT * 3) for t in pair]  # every other text pure ASCII or stable
    assert holds_marked(pa.array(mixed)).to_pylist() == [_marked_by_the_rule(t) for t in mixed]
    for chunks in ([mixed], [mixed[:3], mixed[3:]]):  # DuckDB hands a vector over as one chunk, taken as it is
        chunked = pa.chunked_array([pa.array(c, pa.string()) for c in chunks])
        assert holds_marked(chunked).to_pylist() == [_marked_by_the_rule(t) for t in mixed]
    assert holds_marked(pa.array(["Rating: [[5]]", ""])).to_pylist() == [False, False]  # only ASCII: no scan


@pytest.mark.parametrize("n_ascii", [0, 60])
def test_an_import_marks_texts_as_duckdbs_own_regex_does(tmp_path, n_ascii):
    """The norms an import stores (fast path and the index's UPDATE of answers) are those of DuckDB's
    regexp_matches over the marked class, with or without a majority of pure-ASCII texts beside them."""
    from lib.search_index import marked_class
    from lib.store import Store

    texts = MUST_MARK + MUST_NOT + [f"ascii text {i}" for i in range(n_ascii)]
    bench = tmp_path / "m" / "benchm"
    write_jsonl(bench / "model_answer" / "m1.jsonl", [
        {"question_id": i, "model_id": "m1", "choices": [{"index": 0, "turns": [t, "x"]}]}
        for i, t in enumerate(texts, 1)])
    write_jsonl(bench / "model_judgment" / "gpt-4_single.jsonl", [
        judgment(i, "m1", "gpt-4", t + f" Rating: [[{i % 10 + 1}]]", i % 10 + 1, prompt="[Instruction] " + t)
        for i, t in enumerate(texts, 1)])
    with Store(tmp_path / "s.duckdb") as s:
        assert sorted(f.fast for f in ingest(s, [tmp_path / "m"]).imported) == [False, True]  # answers, judgments
        with s.read() as cur:
            for table, column, norm in (("single_judgments", "rationale", "rationale_norm"),
                                        ("single_judgments", "judge_prompt", "prompt_norm"),
                                        ("answers", "text", "text_norm")):
                wrong = cur.execute(f"SELECT {column} FROM {table} WHERE ({norm} IS NOT NULL) "
                                    f"<> regexp_matches({column}, $m)", {"m": marked_class()}).fetchall()
                assert wrong == []
            marked = cur.execute("SELECT count(*) FROM single_judgments WHERE rationale_norm IS NOT NULL").fetchone()
    assert marked == (len(MUST_MARK),)


def test_a_store_whose_prompts_waited_for_a_search_is_upgraded(tmp_path):
    """Index 2 indexed judge prompts at the first search of them (tracked in search_prompt_sources): opening such a
    store indexes the prompts it had not, and a search finds what the JSONL files hold."""
    from lib.store import Store

    path = tmp_path / "old.duckdb"
    with Store(path) as s:
        ingest(s, [SAMPLE / "stefanstud-fastchat"])
        with s.write() as cur:  # back to index 2 before any search of prompts
            cur.execute("UPDATE single_judgments SET prompt_norm = NULL")
            cur.execute("CREATE TABLE search_prompt_sources (source_id INTEGER NOT NULL)")
            cur.execute("UPDATE meta SET value = '2' WHERE key = 'search_index'")
    with Store(path) as s:
        got = S.count_by_field(s, S.SearchQuery("ＲＡＴＩＮＧ", fields=("prompt",)))
        with s.read() as cur:
            assert cur.execute("SELECT count(*) FROM information_schema.tables "
                               "WHERE table_name = 'search_prompt_sources'").fetchone()[0] == 0
            assert cur.execute("SELECT count(prompt_norm) FROM single_judgments").fetchone()[0] > 0
    assert got.get("prompt", 0) == plain_count("ＲＡＴＩＮＧ", root=SAMPLE / "stefanstud-fastchat")["prompt"] > 0
