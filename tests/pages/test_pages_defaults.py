"""Defaults by coverage (lib.analysis.coverage): after three 5-item re-judges (a local scripted judge over HTTP),
the Overview chart, Compare, Distributions and the review queue still preselect the full-coverage judges, and
every count of models and judges says the same thing."""
from __future__ import annotations

import json

import pytest
from fake_openai import FakeOpenAI
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from lib.analysis import coverage
from lib.judging.batch import run_batch
from lib.judging.config import JudgeConfig
from lib.judging import human
from lib.judging import templates as T
from lib.judging.context import select_items
from lib.store import Store

APP = str(ROOT / "app.py")
SCRATCH = ["aaa-scratch-1", "aaa-scratch-2", "aaa-scratch-3"]  # named to sort first alphabetically


@pytest.fixture
def rejudged(app_db):
    db = app_db
    with FakeOpenAI() as server, Store(db) as store:
        server.responder = lambda body: "Rating: [[2]]"
        template = T.get_template(store, "ja-single-v1")
        items = select_items(store, bench="ja_mt_bench", turn=1, judged_by="gpt-4o")[:5]
        cfg = JudgeConfig(base_url=server.url, model="judge-x", timeout_s=5, max_retries=0)
        for label in SCRATCH:
            summary = run_batch(store, template, cfg, items, label, api_key="sk-test-0123456789")
            assert summary.ok == 5
        full = coverage.judge_items(store, "ja_mt_bench")
    return db, full


def test_rank_puts_full_coverage_judges_first(rejudged):
    _, cover = rejudged
    ranked = coverage.rank_judges(cover["judge"], cover)
    assert ranked[-3:] == SCRATCH  # 5 items each: after the 160-item judges, though their names sort first
    assert set(coverage.default_judges(cover["judge"], cover, 6)).isdisjoint(SCRATCH)


def test_overview_chart_keeps_the_full_coverage_judges_and_counts_agree(rejudged):
    at = AppTest.from_file(APP, default_timeout=120).run()
    assert not at.exception
    picked = at.multiselect(key="overview_chart_judges").value
    assert not set(picked) & set(SCRATCH)
    assert {"gpt-4o", "gpt-4o-2024-08-06", "gpt-4.1-2025-04-14"} <= set(picked)
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    charted_models = {y for trace in spec["data"] for y in trace["y"]}
    tiles = {m.label: m.value for m in at.metric}
    assert int(tiles["Models"]) == len(charted_models)  # one count of models: names joined by aliases
    captions = [c.value for c in at.caption]
    assert f"Showing all {len(charted_models)} models." in captions
    judges = int(tiles["Judges"])  # the tile counts LLM judges; the chart's caption counts the same way
    assert any(c.startswith(f"Showing {len(picked)} of {judges} judges" if len(picked) < judges
                            else f"Showing all {judges} judges") for c in captions)


def test_the_judge_caption_counts_reviewers_apart():
    assert coverage.showing_judges(["a", "b"], ["a", "b", "c", "human:ana"]) == \
        "Showing 2 of 3 judges; reviewers: 0 of 1 shown."
    assert coverage.showing_judges(["a", "b"], ["a", "b"]) == "Showing all 2 judges."


def test_compare_distributions_and_review_queue_default_to_full_coverage(rejudged):
    db, _ = rejudged
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("app_pages/compare.py").run()
    at.selectbox(key="cmp_bench").select("ja_mt_bench").run()
    assert not at.exception
    assert {at.selectbox(key="cmp_ja").value, at.selectbox(key="cmp_jb").value}.isdisjoint(SCRATCH)
    at.switch_page("app_pages/distributions.py").run()
    at.selectbox(key="dist_bench").select("ja_mt_bench").run()
    assert not at.exception
    assert set(at.multiselect(key="dist_judges").value).isdisjoint(SCRATCH)
    with Store(db) as store:
        queue = human.review_queue(store, "ana", bench="ja_mt_bench", n=5)
    assert set(queue.columns).isdisjoint(SCRATCH) and len(queue) == 5
