"""FastChat-family files: the quirks of fastchat-format.md §10-12, and the DuckDB fast path for
single-judgment files giving exactly the rows of the line-by-line reader."""
from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from conftest import EN, JA, SAMPLE

import lib.ingest.importer
from lib.analysis import queries
from lib.errors import IngestError
from lib.ingest.formats import fastchat
from lib.ingest.formats.jsonl import parse_file
from lib.ingest.importer import TABLE_COLUMNS, discover, ingest

SINGLE_COLS = ", ".join(c for c, _ in TABLE_COLUMNS["single_judgments"])
REAL_SINGLE_FILES = sorted(SAMPLE.rglob("model_judgment/*_single.jsonl"))


def write_jsonl(path: Path, records: list, ensure_ascii: bool = True) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=ensure_ascii) + "\n" for r in records), encoding="utf-8")
    return path


def judgment(qid=1, model="m", score=7, turn=1, prompt="single-v1", judge="gpt-4", **extra) -> dict:
    rec = {"question_id": qid, "model": model, "judge": [judge, prompt], "user_prompt": f"prompt {qid}",
           "judgment": f"Rating: [[{score}]]", "score": score, "turn": turn, "tstamp": 1700000000.25}
    rec.update(extra)
    return rec


def rows_of(store, sql: str, params=None) -> list[tuple]:
    with store.read() as cur:
        return cur.execute(sql, params or []).fetchall()


def hashable(row: tuple) -> tuple:
    return tuple(tuple(v) if isinstance(v, list) else v for v in row)


def python_rows(path: Path, bench: str) -> list[tuple]:
    parsed = parse_file(path, path.name, lambda o: fastchat.single_judgment_rows(o, bench))
    assert parsed.problems == []
    return parsed.rows


def stored_rows(store, source_id: int) -> list[tuple]:
    return rows_of(store, f"SELECT {SINGLE_COLS} FROM single_judgments WHERE source_id = ?", [source_id])


@pytest.fixture
def fast_spy(monkeypatch):
    """Records every use of the DuckDB fast path: (file name, 'ok' or 'refused')."""
    calls: list[tuple[str, str]] = []
    real = lib.ingest.importer.insert_fast

    def spy(cur, item, source_id):
        try:
            n = real(cur, item, source_id)
        except lib.ingest.importer.FastPathRefused:
            calls.append((item.path.name, "refused"))
            raise
        calls.append((item.path.name, "ok"))
        return n

    monkeypatch.setattr(lib.ingest.importer, "insert_fast", spy)
    return calls


# --- the fast path ------------------------------------------------------------------------------

def test_real_single_files_are_all_found():
    assert [p.name for p in REAL_SINGLE_FILES] == [
        "gpt-4.1-2025-04-14_single.jsonl", "gpt-4.1-mini-2025-04-14_single.jsonl", "gpt-4o_single.jsonl",
        "gpt-4_single.jsonl"]


@pytest.mark.parametrize("path", REAL_SINGLE_FILES, ids=lambda p: p.name)
def test_fast_path_equals_line_reader_on_real_files(store, fast_spy, path):
    report = ingest(store, [path])
    (item,) = report.imported
    assert item.fast and fast_spy == [(path.name, "ok")]
    bench = path.parent.parent.name
    expected = python_rows(path, bench)
    got = stored_rows(store, item.source_id)
    assert len(got) == len(expected) == item.rows > 0
    assert Counter(got) == Counter(expected)


EDGE_RECORDS = [
    judgment(qid="11", model="0", score="7"),                                    # string id, string score
    judgment(qid=10, model="org/model", prompt="single-v1-multi-turn", turn=None),  # turn from the prompt name
    {k: v for k, v in judgment(qid=12, prompt="single-math-v1-multi-turn").items() if k != "turn"},
    judgment(qid=13, user_prompt=None, judgment="$ERROR$", score=-1),             # API error
    judgment(qid=14, judgment="no rating here", score=-1),                        # rating not parsed
    judgment(qid=15, score=11),                                                   # out of range
    {**judgment(qid=16), "judge": "gpt-4"},                                       # judge as a plain name
    {**judgment(qid=17), "judge": ["gpt-4"]},                                     # judge without a prompt name
    {k: v for k, v in judgment(qid=18, score=7.5).items() if k != "tstamp"},
    judgment(qid=" 19 ", score=" 8 ", turn="2", prompt="single-v1-multi-turn"),
    judgment(qid=20, model=" spaced name ", judgment="$ERROR$\n", score=-1),
    judgment(qid=21, tstamp="1700000000.5", judgment="評価：[[6]] 😀 {{x}} <script>", score=6),
    judgment(qid=22, model=7, score=1.0),
    {**judgment(qid=23), "user_prompt": None, "judgment": None, "extra_key": {"a": [1]}},
]


def test_fast_path_equals_line_reader_on_edge_cases(store, fast_spy, tmp_path):
    path = write_jsonl(tmp_path / "edge" / "model_judgment" / "gpt-4_single.jsonl", EDGE_RECORDS)
    report = ingest(store, [path])
    assert fast_spy == [("gpt-4_single.jsonl", "ok")]  # the fast path took it, no fallback
    expected = python_rows(path, "edge")
    assert Counter(stored_rows(store, report.imported[0].source_id)) == Counter(expected)
    by_qid = {r[5]: r for r in expected}
    # what both readers agreed on, spelled out
    assert by_qid["11"][4] == "0" and by_qid["11"][8:11] == (7.0, 7.0, "ok")
    assert by_qid["10"][4] == "org/model" and by_qid["10"][6] == 2
    assert by_qid["12"][6] == 2
    assert by_qid["13"][8:11] == (-1.0, None, "api_error") and by_qid["13"][12] is None
    assert by_qid["14"][8:11] == (-1.0, None, "not_parsed")
    assert by_qid["15"][8:11] == (11.0, None, "out_of_range")
    assert by_qid["16"][2:4] == ("gpt-4", None) and by_qid["16"][6] == 1
    assert by_qid["17"][2:4] == ("gpt-4", None)
    assert by_qid["18"][13] is None and by_qid["18"][9] == 7.5
    assert by_qid["19"][6] == 2 and by_qid["19"][9] == 8.0
    assert by_qid["20"][4] == " spaced name " and by_qid["20"][10] == "api_error"
    assert by_qid["21"][13] == 1700000000.5 and by_qid["21"][11] == "評価：[[6]] 😀 {{x}} <script>"
    assert by_qid["22"][4] == "7"


def test_fast_path_falls_back_to_line_reader(store, fast_spy, tmp_path):
    """An id the SQL path will not take (too big for its integer types) goes through the line reader."""
    records = [judgment(qid=10**30), judgment(qid=2)]
    path = write_jsonl(tmp_path / "b" / "model_judgment" / "gpt-4_single.jsonl", records)
    report = ingest(store, [path])
    assert fast_spy == [("gpt-4_single.jsonl", "refused")]
    assert not report.imported[0].fast and report.imported[0].rows == 2
    assert Counter(stored_rows(store, report.imported[0].source_id)) == Counter(python_rows(path, "b"))
    assert ("1" + "0" * 30,) in rows_of(store, "SELECT question_id FROM single_judgments")


def test_fallback_keeps_same_bytes_verdicts_right(store, fast_spy, tmp_path):
    """Same bytes twice in one import, then a file the fast path hands back: the rolled-back transaction is redone
    and the second copy's "already imported as source N" names the source that really exists."""
    copies = []
    for folder in ("a", "b"):
        copy = tmp_path / folder / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"
        copy.parent.mkdir(parents=True)
        shutil.copy(JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl", copy)
        copies.append(copy)
    odd = write_jsonl(tmp_path / "c" / "ja_mt_bench" / "model_judgment" / "x_single.jsonl", [judgment(qid=10**30)])
    report = ingest(store, [*copies, odd])
    assert ("x_single.jsonl", "refused") in fast_spy
    (unchanged,) = report.unchanged
    assert unchanged.path == copies[1]
    first = next(f for f in report.imported if f.path == copies[0])
    assert unchanged.existing_source == first.source_id
    assert rows_of(store, "SELECT source_id FROM sources ORDER BY 1") == sorted(
        [(f.source_id,) for f in report.imported])
    assert rows_of(store, "SELECT count(*) FROM single_judgments") == [(321,)]


def test_a_new_file_is_hashed_while_it_is_inserted(store, monkeypatch, tmp_path):
    """A file whose size no stored source has is inserted while its hash runs in the background; the source row
    gets the same content key as hashing first would, and a second import of it (same size now) hashes first and finds
    it unchanged without inserting anything."""
    path = JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"
    inserted = []
    real = lib.ingest.importer.insert_fast
    monkeypatch.setattr(lib.ingest.importer, "insert_fast",
                        lambda cur, item, sid: inserted.append(item.hashing is not None) or real(cur, item, sid))
    report = ingest(store, [path])
    assert inserted == [True]
    assert rows_of(store, "SELECT sha256, bytes FROM sources") == [lib.ingest.importer.content_key(path)]
    again = ingest(store, [path])
    assert inserted == [True] and [f.status for f in again.files] == ["unchanged"]
    assert again.files[0].existing_source == report.imported[0].source_id


def test_a_store_made_before_content_keys_still_finds_its_files_unchanged(store, monkeypatch):
    """Stores made before issue 26 keyed each file by its sha256 (the column's old content). A file of the size of
    such a source is hashed both ways: found unchanged, nothing written; a file of another size is not sha256'd."""
    path = JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"
    other = JA / "ja_mt_bench" / "question.jsonl"
    first = ingest(store, [path])
    key, size = lib.ingest.importer.content_key(path)
    assert key.startswith("xxh128:") and len(key) == len("xxh128:") + 32
    old_key = lib.ingest.importer.sha256_of(path)[0]
    with store.write() as cur:  # what a JudgeLens before issue 26 wrote
        cur.execute("UPDATE sources SET sha256 = ? WHERE source_id = ?", [old_key, first.imported[0].source_id])
    hashed = []
    real = lib.ingest.importer.sha256_of
    monkeypatch.setattr(lib.ingest.importer, "sha256_of", lambda p: hashed.append(Path(p).name) or real(p))
    again = ingest(store, [path, other])
    assert [(f.path, f.status) for f in again.files] == [(other, "imported"), (path, "unchanged")]
    assert again.files[1].existing_source == first.imported[0].source_id
    assert hashed == [path.name]  # only the file whose size an old source has
    assert rows_of(store, "SELECT count(*) FROM single_judgments") == [(first.imported[0].rows,)]
    assert rows_of(store, "SELECT sha256 FROM sources WHERE source_id = ?", [first.imported[0].source_id]) == [
        (old_key,)]


def test_a_file_another_session_imported_meanwhile_is_undone(store, monkeypatch, tmp_path):
    """The hash of a file inserted before its hash was known matches a source written meanwhile (another session
    of the app committed the same bytes after this import read the sources table): its rows are taken out again
    and the file is reported unchanged."""
    path = JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"
    first = ingest(store, [path]).imported[0]
    before = rows_of(store, "SELECT count(*) FROM single_judgments")
    real = lib.ingest.importer.hash_later
    monkeypatch.setattr(lib.ingest.importer, "hash_later",  # as if the sources table had been read before
                        lambda items, known_sizes, hasher, legacy_sizes: real(items, set(), hasher, set()))
    report = ingest(store, [path])
    assert [(f.status, f.existing_source) for f in report.files] == [("unchanged", first.source_id)]
    assert rows_of(store, "SELECT count(*) FROM single_judgments") == before
    assert rows_of(store, "SELECT count(*) FROM sources") == [(1,)]


def test_loose_judgment_file_is_sniffed(store, tmp_path):
    path = write_jsonl(tmp_path / "somewhere" / "judgments.jsonl", [judgment(qid=1), judgment(qid=2)])
    report = ingest(store, [path])
    assert [(f.kind, f.rows) for f in report.imported] == [("single_judgments", 2)]


JUDGE_REASON = '"judge" must be a list [judge_model, prompt_name] (or a judge model name)'
BAD_RECORDS = {
    "tstamp not a number": ({**judgment(), "tstamp": "abc"}, '"tstamp" must be a number, got "abc"'),
    "tstamp boolean": ({**judgment(), "tstamp": True}, '"tstamp" must be a number, got true'),
    "score hex": (judgment(score="0x10"), '"score" must be a number, got "0x10"'),
    "score infinity": (judgment(score="Infinity"), '"score" must be a finite number, got inf'),
    "score null": (judgment(score=None), 'missing field "score"'),
    "model empty": (judgment(model=""), '"model" is empty'),
    "model blank": (judgment(model="  "), '"model" is empty'),
    "model boolean": (judgment(model=True), '"model" must be a string, got true'),
    "judge empty list": ({**judgment(), "judge": []}, JUDGE_REASON),
    "judge list of numbers": ({**judgment(), "judge": [1, 2]}, JUDGE_REASON),
    "judge empty string": ({**judgment(), "judge": ""}, JUDGE_REASON),
    "question_id float": (judgment(qid=7.5), '"question_id" must be an integer or a string, got 7.5'),
    "question_id boolean": (judgment(qid=True), '"question_id" must be an integer or a string, got true'),
    "question_id blank": (judgment(qid=" "), '"question_id" is empty'),
    "turn zero": (judgment(turn=0), '"turn" must be a whole number from 1, got 0'),
    "turn fraction": (judgment(turn=1.5), '"turn" must be a whole number from 1, got 1.5'),
    "turn boolean": (judgment(turn=True), '"turn" must be a number, got true'),
    "judgment a number": (judgment(judgment=5), '"judgment" must be a string, got 5'),
    "user_prompt a list": (judgment(user_prompt=["a"]), '"user_prompt" must be a string, got ["a"]'),
}


@pytest.mark.parametrize("case", sorted(BAD_RECORDS))
def test_fast_path_refuses_what_the_line_reader_refuses(store, tmp_path, case):
    bad, reason = BAD_RECORDS[case]
    path = write_jsonl(tmp_path / "b" / "model_judgment" / "gpt-4_single.jsonl",
                       [judgment(qid=1), bad, judgment(qid=3)])
    with pytest.raises(IngestError) as info:
        ingest(store, [path])
    assert [str(p) for p in info.value.problems] == [f"{path}:2: {reason}"]
    assert rows_of(store, "SELECT count(*) FROM single_judgments") == [(0,)]


NOT_STRING_TEXTS = {"judgment": [-3, 0.5, True, False, {"a": 1}, [1]], "user_prompt": [7, {"b": [2]}, ["x"], False]}


@pytest.mark.parametrize("field", sorted(NOT_STRING_TEXTS))
def test_fast_path_refuses_every_text_that_is_not_a_string(store, fast_spy, tmp_path, field):
    """A judgment or prompt given as a number, boolean, object or list (DuckDB hands its JSON text over, starting with
    one of fastchat.JSON_FIRST_CHARS) sends the file to the line reader, which names every such line."""
    values = NOT_STRING_TEXTS[field]
    path = write_jsonl(tmp_path / "b" / "model_judgment" / "gpt-4_single.jsonl",
                       [judgment(qid=1)] + [judgment(qid=2 + i, **{field: v}) for i, v in enumerate(values)])
    with pytest.raises(IngestError) as info:
        ingest(store, [path])
    assert fast_spy == [("gpt-4_single.jsonl", "refused")]
    assert [p.line for p in info.value.problems] == list(range(2, 2 + len(values)))
    assert all(f'"{field}" must be a string' in p.reason for p in info.value.problems)


def test_fast_path_takes_texts_that_start_like_json(store, fast_spy, tmp_path):
    """Texts starting with a character JSON values start with are still texts (json_valid decides), and a text that
    is itself valid JSON goes to the line reader, which takes it: both ways the rows are the line reader's."""
    texts = ["1. 正確性: good", "[[5]] is the rating", "{not json", " leading space", "true story", "-", "Infinity war",
             "NaN or not", "\tTabbed", '"quoted" text']
    path = write_jsonl(tmp_path / "b" / "model_judgment" / "gpt-4_single.jsonl",
                       [judgment(qid=i, judgment=t, user_prompt=t) for i, t in enumerate(texts)])
    report = ingest(store, [path])
    assert fast_spy == [("gpt-4_single.jsonl", "ok")]
    assert Counter(stored_rows(store, report.imported[0].source_id)) == Counter(python_rows(path, "b"))
    whole = write_jsonl(tmp_path / "c" / "model_judgment" / "gpt-4_single.jsonl",
                        [judgment(qid=1, judgment="[[5]]"), judgment(qid=2, user_prompt=" 12 ")])
    report = ingest(store, [whole])
    assert fast_spy[-1] == ("gpt-4_single.jsonl", "refused") and report.imported[0].rows == 2
    assert Counter(stored_rows(store, report.imported[0].source_id)) == Counter(python_rows(whole, "c"))


def test_json_first_chars_are_every_first_character_json_valid_accepts():
    """The fast select asks json_valid only about texts starting with fastchat.JSON_FIRST_CHARS: no text starting
    with another character may be valid JSON to this DuckDB (a newer one taking more would fail here)."""
    import duckdb

    tails = ["", "1", "a", "]", "}", '"', " 1", "rue", "alse", "ull", "aN", "nf", "nfinity", "Infinity", "NaN", "inf",
             "nan", ".5", "1e5", "0x10", "/", "* */ 1", "/ x\n1", "1]", '"a"}', '""', "]]", "{}", "[]", '"a":1}', " ",
             "\n", "true", "null", "[1]", '{"a":1}']
    firsts = [chr(c) for c in range(0x800)] + [chr(c) for c in range(0x2000, 0x2070)] + ["\u3000", "\ufeff", "\uff3b"]
    con = duckdb.connect()
    pairs = [(c, c + t) for c in firsts for t in tails]  # ~80,000 texts, handed over as two lists in one statement
    con.execute("CREATE TABLE t AS SELECT unnest($c) AS c, unnest($s) AS s",
                {"c": [c for c, _ in pairs], "s": [s for _, s in pairs]})
    assert con.execute("SELECT count(*), count(DISTINCT c) FROM t").fetchone() == (len(pairs), len(firsts))
    accepted = {c for (c,) in con.execute("SELECT DISTINCT c FROM t WHERE json_valid(s)").fetchall()}
    assert accepted == set(fastchat.JSON_FIRST_CHARS)


# --- quirks of the real files -------------------------------------------------------------------

def test_escaped_and_raw_utf8_files_give_identical_rows(store, tmp_path):
    """lm-sys/JA write \\uXXXX escapes, Stability writes raw UTF-8: the same records either way."""
    src = JA / "ja_mt_bench"
    for bench, ensure_ascii in (("escaped", True), ("raw", False)):
        for rel in ("model_judgment/gpt-4o_single.jsonl", "model_answer/shisa-ai__shisa-v2-llama3.1-8b.jsonl",
                    "question.jsonl"):
            records = [json.loads(line) for line in (src / rel).read_text().splitlines() if line.strip()]
            write_jsonl(tmp_path / bench / rel, records, ensure_ascii=ensure_ascii)
    raw_bytes = (tmp_path / "raw" / "model_judgment" / "gpt-4o_single.jsonl").read_bytes()
    assert raw_bytes != (tmp_path / "escaped" / "model_judgment" / "gpt-4o_single.jsonl").read_bytes()
    assert "日本".encode() in raw_bytes or "の".encode() in raw_bytes  # really raw UTF-8
    ingest(store, [tmp_path / "escaped", tmp_path / "raw"])
    for table in ("single_judgments", "answers", "questions"):
        cols = ", ".join(c for c, _ in TABLE_COLUMNS[table] if c != "bench")
        escaped = [hashable(r) for r in rows_of(store, f"SELECT {cols} FROM {table} WHERE bench = 'escaped'")]
        raw = [hashable(r) for r in rows_of(store, f"SELECT {cols} FROM {table} WHERE bench = 'raw'")]
        assert len(escaped) > 0 and Counter(escaped) == Counter(raw), table
    # and the escaped copy is the real file's content exactly
    original = rows_of(store, "SELECT count(*) FROM single_judgments WHERE bench = 'escaped' AND rationale LIKE '%の%'")
    assert original[0][0] > 0


def test_int_and_string_question_ids_are_the_same_id(store, tmp_path):
    bench = tmp_path / "b"
    write_jsonl(bench / "question.jsonl", [{"question_id": 11, "category": "writing", "turns": ["q1", "q2"]}])
    write_jsonl(bench / "model_judgment" / "gpt-4_single.jsonl", [judgment(qid="11", score=4), judgment(qid=11, score=6)])
    ingest(store, [bench])
    assert rows_of(store, "SELECT DISTINCT question_id FROM single_judgments") == [("11",)]
    assert rows_of(store, "SELECT question_id, category, score, n_rows FROM item_scores") == [("11", "writing", 5.0, 2)]


def test_empty_judgment_file(store, tmp_path):
    """Stability's gpt-4_pair.jsonl is 0 bytes: it imports with 0 rows and a note."""
    path = tmp_path / "b" / "model_judgment" / "gpt-4_pair.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"")
    report = ingest(store, [tmp_path / "b"])
    (item,) = report.imported
    assert (item.kind, item.rows, item.warnings) == ("pair_judgments", 0, ["empty file: no records"])
    assert rows_of(store, "SELECT rows_imported, warnings FROM sources") == [(0, ["empty file: no records"])]
    assert "0 record(s)" in report.summary() and "note: empty file: no records" in report.summary()


def test_duplicate_judgments_are_kept_and_averaged_per_item(store, tmp_path):
    records = [judgment(qid=1, score=4), judgment(qid=2, score=8), judgment(qid=1, score=7)]
    path = write_jsonl(tmp_path / "b" / "model_judgment" / "gpt-4_single.jsonl", records)
    report = ingest(store, [path])
    assert report.imported[0].warnings == [
        "1 item(s) are judged more than once: all rows are kept and means average them per item"]
    assert rows_of(store, "SELECT warnings FROM sources")[0][0] == report.imported[0].warnings
    assert rows_of(store, "SELECT count(*) FROM single_judgments") == [(3,)]
    assert rows_of(store, "SELECT question_id, score, n_rows FROM item_scores ORDER BY 1") == [("1", 5.5, 2), ("2", 8.0, 1)]
    df = queries.scores(store, ["model"])
    assert df.to_dict("records") == [{"model": "m", "mean": 6.75, "n": 2, "rule": "item"}]  # (5.5 + 8) / 2, item 1 once
    harness = queries.scores(store, ["model"], rule="harness")          # show_result.py: every row, (4 + 8 + 7) / 3
    assert harness.to_dict("records") == [{"harness": "fastchat", "model": "m", "mean": 19 / 3, "n": 3,
                                           "rule": "fastchat show_result.py"}]
    dup = queries.duplicate_items(store)
    assert dup[["model", "items", "judgments"]].to_dict("records") == [{"model": "m", "items": 1, "judgments": 2}]


def test_model_names_with_slash_and_double_underscore(store, tmp_path):
    bench = tmp_path / "b"
    answer = {"question_id": 1, "answer_id": "x", "model_id": "org/model-7b",
              "choices": [{"index": 0, "turns": ["a1", "a2"]}], "tstamp": 1.0}
    write_jsonl(bench / "model_answer" / "org__model-7b.jsonl", [answer])
    write_jsonl(bench / "model_judgment" / "gpt-4_single.jsonl", [judgment(model="org/model-7b")])
    report = ingest(store, [bench])
    assert all(f.warnings == [] for f in report.imported)
    assert rows_of(store, "SELECT model, model_id, file_model, turn, text FROM answers ORDER BY turn") == [
        ("org/model-7b", "org/model-7b", "org/model-7b", 1, "a1"), ("org/model-7b", "org/model-7b", "org/model-7b", 2, "a2")]
    joined = rows_of(store, "SELECT count(*) FROM single_judgments j JOIN answers a USING (model, question_id, turn)")
    assert joined == [(1,)]


def test_answer_model_id_differs_from_file_name(store, tmp_path):
    answer = {"question_id": 1, "model_id": "vicuna-13b-hao-0515", "choices": [{"index": 0, "turns": ["a"]}]}
    path = write_jsonl(tmp_path / "b" / "model_answer" / "vicuna-13b-v1.3.jsonl", [answer])
    report = ingest(store, [path])
    assert report.imported[0].warnings == [
        "model_id 'vicuna-13b-hao-0515' differs from the file name (vicuna-13b-v1.3); judgments may use either "
        "name and JudgeLens matches both"]
    assert rows_of(store, "SELECT model, model_id, file_model FROM answers") == [
        ("vicuna-13b-hao-0515", "vicuna-13b-hao-0515", "vicuna-13b-v1.3")]


def test_per_model_judgment_layout_is_discovered(store, tmp_path):
    bench = tmp_path / "mt_bench"
    write_jsonl(bench / "model_judgment" / "gpt-4_single" / "org__questionable-7b__1turn.jsonl",
                [judgment(model="org/questionable-7b")])
    write_jsonl(bench / "model_judgment" / "gpt-4_pair" / "a__2turn.jsonl",
                [{"question_id": 1, "model_1": "a", "model_2": "b", "g1_winner": "tie", "g2_winner": "tie",
                  "judge": ["gpt-4", "pair-v2-multi-turn"], "turn": 2}])
    found = discover([tmp_path])
    assert [(f.kind, f.bench) for f in found] == [("single_judgments", "mt_bench"), ("pair_judgments", "mt_bench")]
    ingest(store, [tmp_path])
    assert rows_of(store, "SELECT bench, model FROM single_judgments") == [("mt_bench", "org/questionable-7b")]


def test_data_root_bench_folder_and_single_file_are_accepted():
    root = discover([JA])
    bench = discover([JA / "ja_mt_bench"])
    single = discover([JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"])
    assert Counter(f.kind for f in root) == {"judge_prompts": 1, "questions": 1, "reference_answers": 3, "answers": 2,
                                             "single_judgments": 3}
    assert [f.path for f in bench] == [f.path for f in root if f.kind != "judge_prompts"]
    assert {f.bench for f in bench} == {"ja_mt_bench"}
    assert [(f.kind, f.bench) for f in single] == [("single_judgments", "ja_mt_bench")]


def test_judge_prompt_files_are_found(store, tmp_path):
    shutil.copy(JA / "judge_prompts.jsonl", tmp_path / "judge_prompts.jsonl")
    write_jsonl(tmp_path / "judge_ja_prompts.jsonl", [
        {"name": "single-v1", "type": "single", "system_prompt": "あなたは有益な助手です。",
         "prompt_template": "[指示]\n{question}\n{answer}", "description": "ja", "category": "general",
         "output_format": "[[評価]]"}], ensure_ascii=False)
    assert sorted(f.path.name for f in discover([tmp_path])) == ["judge_ja_prompts.jsonl", "judge_prompts.jsonl"]
    ingest(store, [tmp_path])
    assert rows_of(store, "SELECT count(*) FROM judge_prompts") == [(9,)]
    assert rows_of(store, "SELECT system_prompt, output_format FROM judge_prompts WHERE output_format = '[[評価]]'") == [
        ("あなたは有益な助手です。", "[[評価]]")]


def test_pair_judgments_winners(store, tmp_path):
    base = {"model_1": "a", "model_2": "b", "judge": ["gpt-4", "pair-v2"], "turn": 1}
    records = [
        {**base, "question_id": 1, "g1_winner": "model_1", "g2_winner": "model_2"},
        {**base, "question_id": 2, "winner": "model_a"},                      # older lm-sys files: one winner
        {**base, "question_id": 3, "g1_winner": "tie", "g2_winner": "error", "g2_judgment": "$ERROR$"},
        {k: v for k, v in {**base, "question_id": 4, "winner": "tie", "m1_score": 7, "m2_score": 7,
                           "judge": ["gpt-4", "single-v1-multi-turn"]}.items() if k != "turn"},
    ]
    path = write_jsonl(tmp_path / "b" / "model_judgment" / "gpt-4_pair.jsonl", records)
    ingest(store, [path])
    assert rows_of(store, "SELECT question_id, turn, g1_winner, g2_winner, g2_judgment, m1_score FROM pair_judgments "
                          "ORDER BY question_id") == [
        ("1", 1, "model_1", "model_2", None, None), ("2", 1, "model_1", "model_1", None, None),
        ("3", 1, "tie", "error", "$ERROR$", None), ("4", 2, "tie", "tie", None, 7.0)]


def test_real_pair_file(sample_store):
    rows = rows_of(sample_store, "SELECT count(*), count(*) FILTER (g1_winner = 'error' OR g2_winner = 'error'), "
                                 "any_value(model_1), any_value(model_2) FROM pair_judgments")
    assert rows == [(75, 2, "phi-3", "phi-3-dpo")]


def test_think_blocks_are_hidden_in_answers_view(store, tmp_path):
    answer = {"question_id": 1, "model_id": "r", "choices": [{"index": 0, "turns": [
        "<think>\nplan it\n</think>\n\nThe answer is 4.", "no think here"]}]}
    write_jsonl(tmp_path / "b" / "model_answer" / "r.jsonl", [answer])
    ingest(store, [tmp_path / "b"])
    assert rows_of(store, "SELECT turn, text_no_think, has_think FROM answers_view ORDER BY turn") == [
        (1, "The answer is 4.", True), (2, "no think here", False)]


def test_score_statuses_and_string_values(store, tmp_path):
    records = [judgment(qid=1, score="-1", judgment="I cannot rate this"),
               judgment(qid=2, score=-1, judgment="$ERROR$"),
               judgment(qid=3, score="7", model="0"),
               judgment(qid=4, score=0)]
    ingest(store, [write_jsonl(tmp_path / "b" / "model_judgment" / "gpt-4_single.jsonl", records)])
    assert rows_of(store, "SELECT question_id, model, raw_score, score, parse_status FROM single_judgments ORDER BY 1") == [
        ("1", "m", -1.0, None, "not_parsed"), ("2", "m", -1.0, None, "api_error"), ("3", "0", 7.0, 7.0, "ok"),
        ("4", "m", 0.0, None, "out_of_range")]
    assert queries.scores(store, ["model"]).to_dict("records") == [{"model": "0", "mean": 7.0, "n": 1, "rule": "item"}]
    assert rows_of(store, "SELECT warnings FROM sources")[0][0] == [
        "3 judgment(s) have no usable score (rating not parsed, API error or out of range); they are kept and "
        "left out of means"]


def test_en_fork_sample(sample_store):
    """The English fork: 80 questions, GPT-4 single judgments of phi-3-dpo, reference answers for 30."""
    assert rows_of(sample_store, "SELECT count(*) FROM current_questions WHERE bench = 'mt_bench'") == [(80,)]
    assert rows_of(sample_store, "SELECT DISTINCT model FROM single_judgments WHERE bench = 'mt_bench'") == [("phi-3-dpo",)]
    assert rows_of(sample_store, "SELECT count(DISTINCT question_id) FROM reference_answers WHERE bench = 'mt_bench'") == [(30,)]
    assert (EN / "mt_bench" / "model_judgment" / "gpt-4_single.jsonl").exists()


def test_out_of_memory_stops_the_import_with_a_titled_error(store, fast_spy, monkeypatch):
    """DuckDB running out of the import's memory limit (a real file, a real 32MB limit) is no reason to read the
    file line by line (the line reader holds every row: 14 GB at 1M judgments): the import stops with a titled
    error naming the file and the fix, nothing is written, and the same import within the default limit works."""
    from lib.errors import ImportResourceError

    path = JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"
    read_by_lines = []
    monkeypatch.setattr(lib.ingest.importer, "read_item", lambda *a: read_by_lines.append(a[0].display))
    monkeypatch.setenv("JUDGELENS_IMPORT_MEMORY", "32MB")
    with pytest.raises(ImportResourceError) as info:
        ingest(store, [path])
    assert info.value.title == "Import stopped: out of memory; nothing was imported"
    assert info.value.message == (
        f"{path}: the import ran out of memory within its limit of 32MB, so nothing was imported. Import again "
        "with a higher limit, e.g. JUDGELENS_IMPORT_MEMORY=4GB in the environment of the app or the CLI, or on a "
        "machine with more free memory.")
    assert fast_spy == [] and read_by_lines == []  # the fast path raised it as it is; no line reader
    assert rows_of(store, "SELECT (SELECT count(*) FROM sources), (SELECT count(*) FROM single_judgments)") == [
        (0, 0)]
    monkeypatch.delenv("JUDGELENS_IMPORT_MEMORY")
    monkeypatch.undo()
    report = ingest(store, [path])
    assert report.imported[0].fast and report.imported[0].rows == 320
