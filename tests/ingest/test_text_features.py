"""The answer-feature rules (lib.text_features): exact values, the DuckDB twin agrees with Python, the table is
filled inside the import's transaction, and a store made before the table gets it at its next open."""
from __future__ import annotations

import duckdb
import pytest
from conftest import JA

from lib import text_features as T
from lib.ingest.importer import ingest
from lib.store import Store

TEXTS = [
    "日本語です。",                                   # 。 is not Japanese: 5/6
    "Hello 世界",                                     # whitespace not counted: 2/7
    "<think>考える</think>Hello",                      # <think> removed first
    "<think>unclosed 考え",                           # an unclosed block runs to the end: nothing visible
    "  \u3000\n",                                     # only whitespace (the ideographic space too)
    "ｶﾀｶﾅ々 ＡＢＣ",                                   # half-width kana yes, full-width ASCII no
    "I'm sorry, but I cannot help.\n```python\nprint(1)\n```",
    "申し訳ありませんが、お答えできません。",
    "as an AI 🤖 model\u00a0x\u2003y",                  # an emoji, a no-break space and an em space
    None,
    "",
]


def test_exact_values_on_constructed_answers():
    f = T.features("日本語です。")
    assert f == {"japanese_share": pytest.approx(5 / 6), "length": 6, "has_code": False, "has_think": False,
                 "refusal": False}
    assert T.japanese_share("Hello 世界") == pytest.approx(2 / 7)
    assert T.features("<think>考える</think>Hello") == {"japanese_share": 0.0, "length": 5, "has_code": False,
                                                        "has_think": True, "refusal": False}
    assert T.features("<think>unclosed 考え")["japanese_share"] is None
    assert T.japanese_share("  \u3000\n") is None and not T.is_japanese("")
    assert T.japanese_share("ｶﾀｶﾅ々 ＡＢＣ") == pytest.approx(5 / 8)
    code = T.features(TEXTS[6])
    assert code["has_code"] and code["refusal"] and code["length"] == len(TEXTS[6])
    assert T.features(TEXTS[7])["refusal"] and T.features(TEXTS[7])["japanese_share"] == pytest.approx(17 / 19)  # 、 and 。 are not Japanese
    assert T.is_japanese("Pythonで解く", T.QUESTION_JAPANESE_MIN) and not T.is_japanese("Pythonで解く")


def test_sql_twin_agrees_with_python():
    con = duckdb.connect()
    con.execute("CREATE TABLE t (i INTEGER, text VARCHAR)")
    con.executemany("INSERT INTO t VALUES (?, ?)", list(enumerate(TEXTS)))
    rows = con.execute(f"SELECT i, {T.features_sql('text')} FROM t ORDER BY i", T.SQL_PARAMS).fetchall()
    for i, *values in rows:
        sql = dict(zip(T.COLUMNS, values))
        py = T.features(TEXTS[i])
        assert sql.keys() == py.keys()
        for key in T.COLUMNS:
            if isinstance(py[key], float):
                assert sql[key] == pytest.approx(py[key]), (TEXTS[i], key)
            else:
                assert sql[key] == py[key], (TEXTS[i], key)


ANSWERS = JA / "ja_mt_bench" / "model_answer" / "shisa-ai__shisa-v2-llama3.1-8b.jsonl"


def test_import_fills_the_table(store):
    ingest(store, [ANSWERS])
    with store.read() as cur:
        answers = cur.execute("SELECT count(*) FROM answers").fetchone()[0]
        got = cur.execute("SELECT question_id, turn, sample, japanese_share, length, has_code FROM answer_features "
                          "ORDER BY question_id, turn LIMIT 1").fetchone()
        text = cur.execute("SELECT text FROM answers WHERE question_id = ? AND turn = ? AND sample = ?",
                           list(got[:3])).fetchone()[0]
        assert cur.execute("SELECT count(*) FROM answer_features").fetchone()[0] == answers > 0
    f = T.features(text)
    assert got[3] == pytest.approx(f["japanese_share"]) and got[4] == f["length"] and got[5] == f["has_code"]


def test_a_failed_import_leaves_no_features(store, monkeypatch):
    """The features are written in the import's own transaction: when it fails after them, none remain."""
    real, seen = T.fill_answer_features, []

    def fill_then_fail(cur):
        seen.append(real(cur))
        raise RuntimeError("failed after the features were written")

    monkeypatch.setattr(T, "fill_answer_features", fill_then_fail)
    with pytest.raises(RuntimeError, match="failed after the features were written"):
        ingest(store, [ANSWERS])
    assert seen and seen[0] > 0  # the rows were there inside the transaction
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM answer_features").fetchone()[0] == 0
        assert cur.execute("SELECT count(*) FROM answers").fetchone()[0] == 0


def test_an_old_store_gets_the_table_at_its_next_open(tmp_path):
    path = tmp_path / "old.duckdb"
    store = Store(path)
    ingest(store, [ANSWERS])
    store.close()
    con = duckdb.connect(str(path))  # as a store made before the table: no table, no meta key
    con.execute("DROP TABLE answer_features")
    con.execute("DELETE FROM meta WHERE key = 'answer_features'")
    con.close()
    again = Store(path)
    with again.read() as cur:
        assert cur.execute("SELECT count(*) FROM answer_features").fetchone()[0] == \
            cur.execute("SELECT count(*) FROM answers").fetchone()[0] > 0
    again.close()


def test_removing_a_source_drops_its_features(store):
    from lib.ingest.importer import remove_source

    report = ingest(store, [ANSWERS])
    assert remove_source(store, report.imported[0].source_id)
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM answer_features").fetchone()[0] == 0


def test_every_stored_sample_answer_agrees_with_python(sample_store):
    """The table (DuckDB's twin, at import) against the Python rules on every answer of the bundled sample."""
    with sample_store.read() as cur:
        rows = cur.execute(f"""SELECT a.text, {', '.join('f.' + c for c in T.COLUMNS)} FROM answers a
                               JOIN answer_features f USING ({', '.join(T.KEY)})""").fetchall()
        assert len(rows) == cur.execute("SELECT count(*) FROM answers").fetchone()[0] > 3000
    for text, *stored in rows:
        py = T.features(text)
        for key, value in zip(T.COLUMNS, stored):
            assert value == (pytest.approx(py[key]) if isinstance(py[key], float) else py[key]), (key, text[:80])
