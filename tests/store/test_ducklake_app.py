"""The app on a DuckLake team store: every page runs (the first start loads the sample into the lake); re-judging,
the analyst's verdicts and the search index write to a lake as to the file, and another process sees them.
(The store itself, its schema, imports and CLI: test_ducklake.py.)"""
from __future__ import annotations

import json

import pandas as pd

from conftest import JA, lake_target
from lib.analysis import queries
from lib.ingest.importer import ingest
from lib.store import Store

GPT4O = JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"


# ------------------------------------------------------------------------------------------------
# Pages

PAGES = ["app_pages/overview.py", "app_pages/agreement.py", "app_pages/item_view.py", "app_pages/distributions.py",
         "app_pages/compare.py", "app_pages/workbench.py", "app_pages/probes.py", "app_pages/import_data.py"]


def test_every_page_runs_on_a_lake(tmp_path, monkeypatch, request, sample_store):
    """The app on a DuckLake store (JUDGELENS_STORE): first start loads the sample into it, every page runs."""
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT

    target, data = lake_target("sqlite", tmp_path, request)
    monkeypatch.setenv("JUDGELENS_STORE", target)
    monkeypatch.setenv("JUDGELENS_DATA_PATH", str(data))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    assert not at.exception, [e.value for e in at.exception]
    n_sources = queries.overview_counts(sample_store)["sources"]  # the bundled sample, imported into a file
    assert [m.value for m in at.metric][:1] == [str(n_sources)]  # Sources: the bundled sample, in the lake
    for page in PAGES[1:]:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.value for e in at.exception])
    with Store(target) as lake:
        assert queries.overview_counts(lake)["sources"] == n_sources
        with lake.read() as cur:  # the Workbench stored the built-in templates with ids of their own
            ids = [r[0] for r in cur.execute("SELECT template_id FROM templates ORDER BY 1").fetchall()]
        assert ids and ids == list(range(1, len(ids) + 1))
    assert not (tmp_path / "default.duckdb").exists()


# ------------------------------------------------------------------------------------------------
# Re-judging and probes write to a lake like to the file

def test_rejudge_batch_on_a_lake_is_seen_by_another_process(tmp_path, request):
    from fake_openai import FakeOpenAI

    from lib.judging.batch import run_batch
    from lib.judging.config import JudgeConfig
    from lib.judging import templates as T
    from lib.judging.context import select_items

    target, data = lake_target("sqlite", tmp_path, request)
    with Store(target, data_path=data) as lake, Store(target) as other, FakeOpenAI() as server:
        ingest(lake, [JA / "ja_mt_bench" / "question.jsonl", JA / "ja_mt_bench" / "model_answer", GPT4O])
        server.responder = lambda body: "Judgment. Rating: [[7]]"
        template = T.get_template(lake, "ja-single-v1")
        items = select_items(lake, bench="ja_mt_bench", turn=1, judged_by="gpt-4o")[:24]
        config = JudgeConfig(base_url=server.url, model="judge-x", timeout_s=5, max_retries=1)
        summary = run_batch(lake, template, config, items, "lake-judge", concurrency=4, api_key="sk-test-123456789",
                              judge_hint="gpt-4o")
        assert (summary.written, summary.ok) == (24, 24)
        again = run_batch(other, template, config, items, "lake-judge-2", concurrency=4, api_key="sk-test-123456789",
                            judge_hint="gpt-4o")  # the other process finds every call in the shared cache
        assert (again.written, again.cache_hits, again.calls) == (24, 24, 0)
        means = queries.scores(lake, ["judge"])
        assert means.set_index("judge").loc[["lake-judge", "lake-judge-2"], "n"].tolist() == [24, 24]
        with lake.read() as cur:
            assert cur.execute("SELECT source_id, kind FROM sources WHERE kind = 'rejudge' ORDER BY 1").fetchall() == [
                (5, "rejudge"), (6, "rejudge")]  # after question, 2 answer files, judgments
            assert cur.execute("SELECT count(*), count(DISTINCT request_hash) FROM judge_cache").fetchone() == (24, 24)


def test_verdicts_and_search_on_a_lake(tmp_path, request):
    """The analyst's verdicts and the search index live in the lake too, and another process sees them."""
    from lib.analysis import search as S
    from lib.judging import human
    from app_pages._store import data_version

    target, data = lake_target("sqlite", tmp_path, request)
    with Store(target, data_path=data) as lake, Store(target) as other:
        ingest(lake, [JA / "ja_mt_bench" / "question.jsonl", GPT4O])
        found = S.count(other, S.SearchQuery("rating", fields=("rationale",)))
        assert found == S.count(lake, S.SearchQuery("rating", fields=("rationale",))) > 0
        before = data_version(other)
        model = queries.scores(lake, ["model"])["model"].iloc[0]
        human.record(lake, author="ana", bench="ja_mt_bench", question_id="1", turn=1, model=model, score=4)
        assert data_version(other) != before
        with other.read() as cur:
            assert cur.execute("SELECT judge, score FROM item_scores WHERE harness = 'human'").fetchall() == [
                ("human:ana", 4.0)]


def test_verdict_clears_on_a_lake_and_a_lake_made_before_them(tmp_path, request):
    """Each field of a verdict is the author's latest value for it on a lake too (no verdict ids there), and a lake
    whose human_verdicts table predates the ``cleared`` column gets it when opened."""
    from datetime import datetime

    from lib.judging import human

    target, data = lake_target("sqlite", tmp_path, request)
    key = dict(author="ana", bench="ja_mt_bench", question_id="1", turn=1, model="m")
    t0 = datetime(2026, 1, 1, 12, 0, 0)
    with Store(target, data_path=data) as lake:
        human.record(lake, **key, score=4, created_at=t0)
        human.record(lake, **key, label="both wrong", created_at=t0.replace(minute=1))
        with lake.read() as cur:
            assert cur.execute("SELECT score FROM item_scores WHERE judge = 'human:ana'").fetchall() == [(4.0,)]
        lake.transaction(lambda cur: cur.execute("ALTER TABLE human_verdicts DROP COLUMN cleared"))
    with Store(target) as reopened:
        human.record(reopened, **key, clear=["score"], created_at=t0.replace(minute=2))
        now = human.latest(reopened)
        assert (pd.isna(now["score"].iloc[0]), now["label"].iloc[0]) == (True, "both wrong")
        with reopened.read() as cur:
            assert cur.execute("SELECT count(*) FROM item_scores WHERE judge = 'human:ana'").fetchone() == (0,)


def test_item_view_steps_through_a_lakes_items(tmp_path, monkeypatch, request):
    """On a lake the Item view reads the texts of a block of the model's items at once (item_view.window_texts):
    each item stepped to with Next and Previous shows its own verdicts, across a block's end, and a judgment
    imported meanwhile (another process) shows on the next rerun."""
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT
    from lib.analysis import item_view as iv
    from lib.keys import ItemKey

    target, data = lake_target("sqlite", tmp_path, request)
    with Store(target, data_path=data) as lake:
        ingest(lake, [JA / "ja_mt_bench" / "question.jsonl", JA / "ja_mt_bench" / "model_answer", GPT4O])
    monkeypatch.setenv("JUDGELENS_STORE", target)
    monkeypatch.setenv("JUDGELENS_DATA_PATH", str(data))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page("app_pages/item_view.py").run()

    def key_shown() -> ItemKey:
        assert not at.exception, [e.value for e in at.exception]
        return ItemKey(at.session_state["iv_bench"], at.session_state["iv_q"], int(at.session_state["iv_turn"]),
                       at.session_state["iv_model"])

    def shown(store, key) -> list[str]:
        """The verdict columns on offer, checked against the item's own verdicts."""
        [columns] = [m for m in at.multiselect if m.label == "Columns (in this order)"]
        assert list(columns.options) == iv.verdicts(store, key, prompts=False)["column_id"].tolist()
        return list(columns.options)

    with Store(target, data_path=data) as lake:
        seen = [key_shown()]
        shown(lake, seen[0])
        for label in ["Next"] * (iv.WINDOW + 1) + ["Previous"]:
            [button] = [b for b in at.button if b.label == label]
            button.click().run()
            seen.append(key_shown())
            shown(lake, seen[-1])
        order = iv.item_order(lake, seen[0].bench, seen[0].model)
        at_ = order.index((seen[0].question_id, seen[0].turn))
        assert [(k.question_id, k.turn) for k in seen] == [*order[at_:at_ + iv.WINDOW + 2], order[at_ + iv.WINDOW]]
        key = seen[-1]
        later = tmp_path / "later" / "ja_mt_bench" / "model_judgment"
        later.mkdir(parents=True)
        rows = [json.loads(line) for line in GPT4O.read_text(encoding="utf-8").splitlines()]
        row = next(r for r in rows if str(r["question_id"]) == key.question_id and int(r["turn"]) == key.turn
                   and r["model"] == key.model)
        row["judge"] = ["judge-from-later", row["judge"][1]]
        (later / "judge-from-later_single.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n",
                                                              encoding="utf-8")
        with Store(target, data_path=data) as other:
            ingest(other, [later.parent.parent])
        at.run()
        assert any("judge-from-later" in c for c in shown(lake, key))  # the same item, the new judge's column
