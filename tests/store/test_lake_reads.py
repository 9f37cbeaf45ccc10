"""Reads from a DuckLake store that pay the catalog less: the data version asked with one catalog look-up when
nothing changed, the Item view's whole-model (keys only) / whole-bench reads giving what its per-item queries
give, and the big tables written in small row groups. Each on a SQLite and a PostgreSQL catalog (``lake_store``)."""
from __future__ import annotations

from contextlib import contextmanager

import pandas as pd

from conftest import JA
from lib.analysis import item_view as iv
from lib.ingest.importer import ingest
from lib.keys import ItemKey
from lib.store import Store, migrate
from lib.store.lake import LAKE_LAYOUT, LAKE_ROW_GROUP


@contextmanager
def counted(store: Store):
    """Every statement ``store`` runs through its cursors, in order."""
    seen: list[str] = []
    cursor = store.cursor

    class Counting:
        def __init__(self, cur):
            self.cur = cur

        def execute(self, sql, *args):
            seen.append(" ".join(sql.split()))
            self.cur.execute(sql, *args)
            return self

        def __getattr__(self, name):
            return getattr(self.cur, name)

    store.cursor = lambda: Counting(cursor())
    try:
        yield seen
    finally:
        del store.cursor


def test_an_unchanged_lake_answers_its_data_version_with_one_catalog_look_up(lake_store, tmp_path):
    ingest(lake_store, [JA / "ja_mt_bench" / "question.jsonl"])
    first = lake_store.data_version()
    with counted(lake_store) as seen:
        assert lake_store.data_version() == first
    assert seen == ["SELECT id FROM ducklake_current_snapshot('lake')"]  # no table read
    other = Store(lake_store.path, data_path=lake_store.data_path)
    try:
        with other.write() as cur:  # another process's write: the next call reads the tables again
            other.set_meta(cur, "note", "x")
        with counted(lake_store) as seen:
            changed = lake_store.data_version()
        assert changed != first and changed[:5] == first[:5] and changed[5] == first[5] + 1
        assert len(seen) > 1 and any("FROM sources" in s for s in seen)
    finally:
        other.close()


def test_the_file_answers_its_data_version_from_its_tables(store):
    """On the file, a saved template or a probe run changes the version too (pages cache template lists)."""
    from lib.judging import templates as T

    assert store.data_version() == (0, 0, 0, "0:0", "0:0")
    T.ensure_builtins(store)
    count = len(T.list_templates(store))
    assert store.data_version() == (0, 0, 0, f"{count}:{count}", "0:0")


def test_whole_model_reads_give_what_the_item_queries_give(sample_lake, sample_store):
    """``model_keys`` / ``bench_items`` (what the Item view reads per model and per bench on a lake) against
    ``item_order``, ``samples``, ``question`` and ``references`` item by item, on three questions of two models of
    each bench, Swallow's samples included, on the lake and on the file."""
    lake_store = sample_lake.store
    checked = 0
    for store in (lake_store, sample_store):
        with store.read() as cur:
            picks = cur.execute(
                "SELECT bench, model FROM (SELECT bench, model, row_number() OVER (PARTITION BY bench ORDER BY model) "
                "AS n FROM (SELECT DISTINCT bench, model FROM single_judgments)) WHERE n <= 2 ORDER BY ALL").fetchall()
            items = cur.execute(  # the first three questions of each (bench, model), every turn and sample
                "SELECT bench, model, question_id, turn, sample FROM (SELECT *, dense_rank() OVER (PARTITION BY bench, "
                "model ORDER BY question_id) AS q FROM (SELECT DISTINCT bench, model, question_id, turn, sample "
                "FROM single_judgments)) WHERE q <= 3 ORDER BY ALL").fetchall()
        assert any(sample > 0 for *_, sample in items)  # Swallow's samples are in the sample
        for bench, model in picks:
            by_model, by_bench = iv.model_keys(store, bench, model), iv.bench_items(store, bench)
            assert iv.item_order_of(by_model) == iv.item_order(store, bench, model)
            mine = [(qid, turn, sample) for b, m, qid, turn, sample in items if (b, m) == (bench, model)]
            # each item query once per distinct input it takes (a question's samples and turns share its text)
            for qid, turn, sample in mine:
                key = ItemKey(bench, qid, turn, model, sample)
                assert iv.item_samples(by_model, key) == iv.samples(store, key)
                checked += 1
            for qid in dict.fromkeys(qid for qid, _, _ in mine):
                assert iv.item_question(by_bench, qid) == iv.question(store, bench, qid)
            for qid, turn in dict.fromkeys((qid, turn) for qid, turn, _ in mine):
                pd.testing.assert_frame_equal(  # dtypes aside: an empty query result's text column is object
                    iv.item_references(by_bench, qid, turn), iv.references(store, bench, qid, turn), check_dtype=False)
    assert checked > 30
    key = ItemKey("no_such_bench", "1", 1, "nobody")
    assert iv.item_order_of(iv.model_keys(lake_store, key.bench, key.model)) == []
    assert iv.item_samples(iv.model_keys(lake_store, key.bench, key.model), key) == iv.samples(lake_store, key) == [0]
    assert iv.item_question(iv.bench_items(lake_store, key.bench), "1") is None


def test_a_models_keys_read_no_text(lake_store):
    """Stepping to another model on a lake reads that model's keys, not its rationales, prompts or answers: a model's
    judgments lie spread over the whole table, so their text would decompress every Parquet page of it."""
    ingest(lake_store, [JA / "ja_mt_bench" / "question.jsonl", JA / "ja_mt_bench" / "model_answer",
                        JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"])
    with lake_store.read() as cur:
        model = cur.execute("SELECT min(model) FROM single_judgments").fetchone()[0]
    with counted(lake_store) as seen:
        keys = iv.model_keys(lake_store, "ja_mt_bench", model)
    assert len(seen) == 1 and "FROM single_judgments" in seen[0]
    assert not any(word in seen[0] for word in ("rationale", "judge_prompt", "text", "*"))
    assert len(keys["order"]) == 160 and keys["order"][:2] == [("1", 1), ("1", 2)]


def test_a_migrated_lake_writes_row_groups_of_lake_row_group_rows(lake_store, sample_store):
    """``store migrate`` writes each big table in one insert: into Parquet row groups of at most LAKE_ROW_GROUP rows
    (the lake-wide option), which bounds an import's memory."""
    sample_store.close()  # migrate opens the file itself
    migrate(sample_store.path, lake_store)
    with lake_store.read() as cur:
        assert cur.execute("SELECT value FROM meta WHERE key = 'lake_layout'").fetchone() == (LAKE_LAYOUT,)
        assert cur.execute("SELECT scope, value FROM lake.options() WHERE option_name = 'parquet_row_group_size'"
                           ).fetchall() == [("GLOBAL", str(LAKE_ROW_GROUP))]
        files = [r[0] for r in cur.execute("SELECT data_file FROM ducklake_list_files('lake', 'single_judgments')"
                                           ).fetchall()]
        groups = cur.execute("SELECT max(row_group_num_rows), count(*) FROM parquet_metadata(?)", [files]).fetchone()
        assert files and groups[0] <= LAKE_ROW_GROUP


def test_a_lake_made_before_the_layout_gets_it_when_opened(lake_store):
    with lake_store.write() as cur:  # as a lake made by an older JudgeLens: DuckDB's default row groups
        cur.execute("CALL lake.set_option('parquet_row_group_size', 122880)")
        cur.execute("DELETE FROM meta WHERE key = 'lake_layout'")
    again = Store(lake_store.path, data_path=lake_store.data_path)
    try:
        with again.read() as cur:
            assert cur.execute("SELECT value FROM meta WHERE key = 'lake_layout'").fetchone() == (LAKE_LAYOUT,)
            assert cur.execute("SELECT value FROM lake.options() WHERE option_name = 'parquet_row_group_size'"
                               ).fetchall() == [(str(LAKE_ROW_GROUP),)]
    finally:
        again.close()


def test_the_item_view_on_a_lake_steps_through_a_models_items(lake_store, monkeypatch):
    """On a lake the Item view reads a model's keys and a bench's questions once (``model_keys``, ``bench_items``):
    Next shows the next item's own verdicts and question, the same as the per-item queries give."""
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT

    ingest(lake_store, [JA / "ja_mt_bench" / "question.jsonl", JA / "ja_mt_bench" / "model_answer",
                        JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"])
    monkeypatch.setenv("JUDGELENS_STORE", str(lake_store.path))
    monkeypatch.setenv("JUDGELENS_DATA_PATH", str(lake_store.data_path))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
    at.run()
    at.switch_page("app_pages/item_view.py").run()
    assert not at.exception
    seen = []
    for _ in range(2):
        key = ItemKey(at.session_state["iv_bench"], at.session_state["iv_q"], int(at.session_state["iv_turn"]),
                      at.session_state["iv_model"])
        expected = iv.verdicts(lake_store, key)
        assert [m.value for m in at.metric] == [f"{s:g}" if ok == "ok" else "none"
                                               for s, ok in zip(expected["score"], expected["parse_status"])]
        assert [t.value for t in at.text][:1] == [iv.question(lake_store, key.bench, key.question_id)["turns"][0]]
        seen.append(key)
        [nxt] = [b for b in at.button if b.label == "Next"]
        nxt.click().run()
        assert not at.exception
    assert seen[0] != seen[1]


def test_a_lake_without_verdicts_reads_no_verdict_table_and_shows_the_same(lake_store, monkeypatch):
    """The data version counts the verdicts: a lake that held none at the data version last read shows the Review page's "All verdicts", the Item
    view's verdict panel and the review queue without a statement on the verdict table (each costs its catalog
    rounds, 0.2 s at 1M judgments even empty), the same frames as reading the empty table gives; once a verdict is
    recorded it is read."""
    from lib.judging import human
    from lib.store import read_once

    ingest(lake_store, [JA / "ja_mt_bench" / "question.jsonl", JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl",
                        JA / "ja_mt_bench" / "model_judgment" / "gpt-4.1-2025-04-14_single.jsonl"])
    item = dict(bench="ja_mt_bench", question_id="81", turn=1, model="shisa-ai/shisa-v2-llama3.1-8b")

    def shown():
        return (human.all_verdicts(lake_store), human.item_verdicts(lake_store, author="ana", sample=0, **item),
                human.review_queue(lake_store, "ana", bench="ja_mt_bench", n=5))

    lake_store.data_version()
    with counted(lake_store) as seen:
        kept = shown()
    assert not [s for s in seen if "human_verdicts" in s], seen
    with monkeypatch.context() as m:
        m.setattr(human, "no_verdicts_known", lambda store: False)
        with counted(lake_store) as seen:
            read = shown()
        assert [s for s in seen if "human_verdicts" in s]
    assert kept[0]["authors"] == read[0]["authors"] == [] and kept[0]["records"] == read[0]["records"] == []
    for got, expected in ((kept[0]["latest"], read[0]["latest"]), (kept[0]["history"], read[0]["history"]),
                          (kept[1]["history"], read[1]["history"]), (kept[1]["latest"], read[1]["latest"]),
                          (kept[2], read[2])):
        pd.testing.assert_frame_equal(got, expected)
    assert len(kept[2]) == 5 and not kept[2]["decided"].any()
    with lake_store.read() as cur:  # the empty table has the lake table's columns and types
        columns = [c[:2] for c in cur.execute("DESCRIBE human_verdicts").fetchall()]
    assert read_once(lake_store, "human_verdicts", "", {}, lambda con: [
        c[:2] for c in con.execute("DESCRIBE human_verdicts").fetchall()], empty=True) == columns

    human.record(lake_store, author="ana", score=7, **item)
    assert lake_store.data_version()[2] == 1  # what the page asks first on its next run
    with counted(lake_store) as seen:
        after = shown()
    assert any("human_verdicts" in s for s in seen)
    assert len(after[1]["history"]) == 1 and after[0]["authors"] == ["ana"]
