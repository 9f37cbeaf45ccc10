"""The item scores, the search index and the judge prompts' questions follow every write exactly, while each write derives only the
sources it changed: after any sequence of writes (imports, a re-judge batch written over several transactions, a
cancelled then resumed batch, a pairwise batch, a regenerated run written twice, a removal), the derived tables and
the search results equal those of a store that derives everything from scratch."""
from __future__ import annotations

import itertools
import threading

import pytest
from fake_openai import FakeOpenAI

from conftest import ROOT, judge_config
from lib.analysis import search as S
from lib.analysis.runs import Run
from lib.generation import plan as gp
from lib.generation.questions import questions_for_run
from lib.generation.setups import GenerationSetup
from lib.generation.storage import generate_run
from lib.ingest.importer import ingest, remove_source
from lib.judging import batch as B
from lib.judging import templates as T
from lib.judging.context import select_items, select_pair_items
from lib.search_index import COLUMNS
from lib.store import refresh_item_scores

KEY = "sk-derived-test-0123456789"
QUERIES = [S.SearchQuery("rating"), S.SearchQuery("Rating: [[", fields=("rationale",)),
           S.SearchQuery("ｒａｔｉｎｇ", fields=("rationale", "prompt")), S.SearchQuery("poem"),
           S.SearchQuery("日本", fields=("prompt", "answer", "question"))]


@pytest.fixture
def judge_responder():
    return lambda body: f"Judgment of the poem. Rating: [[{len(body['messages'][-1]['content']) % 10 + 1}]]"


def _derived(cur) -> dict:
    out = {t: sorted(cur.execute(f"SELECT * FROM {t}").fetchall(), key=repr)
           for t in ("search_text", "search_sources", "judge_prompt_questions", "judge_questions", "item_scores")}
    for table, column, norm in COLUMNS.values():
        out[norm] = sorted(cur.execute(f"SELECT source_id, {column}, {norm} FROM {table}").fetchall(), key=repr)
    return out


def _found(store) -> list:
    """Each query's count and its first page of records."""
    return [(S.count(store, q), S.search(store, q, limit=40).to_dict("records")) for q in QUERIES]


class _RolledBack(Exception):
    pass


def assert_as_from_scratch(store) -> None:
    """The derived tables and the search results equal those derived from scratch (in a transaction rolled back)."""
    S.ensure_index(store)  # what the Search page does first (a pairwise batch indexes nothing of its own)
    with store.read() as cur:
        kept = _derived(cur)
    found = _found(store)
    fresh = {}
    with pytest.raises(_RolledBack):
        with store.write() as cur:
            for t in ("search_text", "search_sources", "judge_prompt_questions", "judge_questions"):
                cur.execute(f"DELETE FROM {t}")
            for table, _, norm in COLUMNS.values():
                cur.execute(f"UPDATE {table} SET {norm} = NULL")
            refresh_item_scores(cur)  # item_scores, then everything that follows it, from scratch
            fresh.update(_derived(cur))
            raise _RolledBack
    for name, rows in fresh.items():
        assert kept[name] == rows, name
    assert len(kept["judge_questions"]) and len(kept["search_text"])
    store.data_version()
    assert _found(store) == found


def _cancelled_then_resumed(store, template, items, label, *, pair=False):
    """A batch written in several transactions, cancelled, then resumed (its source grows in each)."""
    cancel = threading.Event()

    def progress(done, total, eta):
        if done >= 3:
            cancel.set()

    arrivals = itertools.count()

    def held_after_six(body):  # answers beyond the 6th wait for the cancel
        if next(arrivals) >= 6:
            cancel.wait(60)
        return "[[A]]" if pair else "The poem. Rating: [[7]]"

    with FakeOpenAI(latency=0.02) as server:
        server.responder = held_after_six
        first = B.RejudgeBatch(store, template, judge_config(server), items, label).run(
            api_key=KEY, concurrency=2, progress=progress, cancel=cancel)
        assert first.cancelled and first.written < len(items)
        second = B.run_batch(store, template, judge_config(server), items, label, api_key=KEY, concurrency=2)
        assert first.written + second.written == len(items)
    return second.source_id


def test_writes_derive_only_what_they_changed_and_equal_a_fresh_derivation(sample_store, server, monkeypatch):
    monkeypatch.setattr(B, "WRITE_EVERY_ROWS", 3)  # many transactions per batch
    single = T.get_template(sample_store, "ja-single-v1")
    items = select_items(sample_store, bench="ja_mt_bench", turn=1, judged_by="gpt-4o", limit=24)
    first = B.run_batch(sample_store, single, judge_config(server), items[:12], "grow", api_key=KEY)
    assert_as_from_scratch(sample_store)
    B.run_batch(sample_store, single, judge_config(server), items, "grow", api_key=KEY)  # the same source grows
    assert_as_from_scratch(sample_store)
    en = select_items(sample_store, bench="mt_bench", limit=30)
    _cancelled_then_resumed(sample_store, T.get_template(sample_store, "single-v1"), en, "resumed")
    assert_as_from_scratch(sample_store)
    pairs = select_pair_items(sample_store, "phi-3", "phi-3-dpo", bench="mt_bench", limit=10)
    _cancelled_then_resumed(sample_store, T.get_template(sample_store, "pair-v2"), pairs, "pairs", pair=True)
    assert_as_from_scratch(sample_store)
    ingest(sample_store, [ROOT / "tests" / "data" / "fastchat_samples"])  # an import after the batches
    assert_as_from_scratch(sample_store)
    assert remove_source(sample_store, first.source_id)
    assert_as_from_scratch(sample_store)
    B.run_batch(sample_store, single, judge_config(server), items[:5], "after-removal", api_key=KEY)
    assert_as_from_scratch(sample_store)


def test_a_regenerated_run_written_twice_is_indexed_as_from_scratch(sample_store):
    from fake_model import FakeModel

    sw = Run("swallow", "japanese_mt_bench", "gpt-4o", "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b")
    qs = questions_for_run(sample_store, sw, linked_to="ja_mt_bench", limit=4)
    setup = GenerationSetup.from_run(sample_store, sw)
    with FakeModel() as model:
        plan = gp.plan_generation(qs, setup, model=sw.model, base_url=model.url)
        cancel = threading.Event()

        def progress(done, total):
            if done == 3:
                cancel.set()

        sid, first = generate_run(sample_store, plan, answer_model=sw.model, progress=progress, cancel=cancel,
                                  concurrency=1)
        assert first.cancelled
        assert_as_from_scratch(sample_store)
        again, second = generate_run(sample_store, plan, answer_model=sw.model)
        assert again == sid and second.complete
    assert_as_from_scratch(sample_store)
