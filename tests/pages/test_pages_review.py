"""The Review page under AppTest, on the bundled sample: a random sample judged by the reviewer, reruns."""
from __future__ import annotations

from urllib.parse import quote_plus

import pytest
from conftest import frames


@pytest.fixture
def app(sample_app):
    return sample_app


def test_review_random_sample_judge_vs_me(app):
    """The Review page's random sample: scored items count; each judge against the analyst with intervals and the
    prediction-powered corrected means appear once two sampled items are scored."""
    from lib.analysis import ppi
    from lib.judging import human
    from app_pages._store import get_store

    app.session_state["jl_author"] = "ana"
    app.switch_page("app_pages/review.py").run()
    app.session_state["rv_tab"] = "Random sample: judge vs me"
    app.run()
    assert not app.exception
    app.selectbox(key="rv_rand_bench").set_value("ja_mt_bench").run()
    sample = next(f for f in frames(app) if "decided" in f.columns)
    assert len(sample) == 40 and not sample["decided"].any()
    first = sample.iloc[0]                                   # the second column opens the row's item
    assert list(sample.columns).index("open") == 1
    assert first["open"] == (f"item_view?bench=ja_mt_bench&q={first['question_id']}&turn={first['turn']}"
                             f"&model={quote_plus(first['model'])}")
    assert any("Score at least two sampled items" in i.value for i in app.info)
    store = get_store()
    for r in ppi.random_sample(store, "human:ana", bench="ja_mt_bench", n=10).itertuples():
        human.record(store, author="ana", bench=r.bench, question_id=r.question_id, turn=r.turn, model=r.model,
                     score=6.0)
    app.run()
    assert not app.exception
    sample = next(f for f in frames(app) if "decided" in f.columns)
    assert sample["decided"].sum() == 10 and sample["decided"].head(10).all()
    assert not app.warning                                   # scored in order: no warning
    agreement = next(f for f in frames(app) if "qwk_ci_low" in f.columns)
    assert set(agreement["judge_b"]) == {"human:ana"} and set(agreement["n"]) == {10}
    corrected = next(f for f in frames(app) if "corrected_mean" in f.columns)
    assert len(corrected) == 6 and (corrected["human_mean_sampled"] == 6.0).all()


@pytest.mark.parametrize("tab", ["My review queue", "All verdicts"])
def test_a_review_rerun_reads_only_the_data_version(sample_app, tab):
    """With a name set, a rerun of the Review page (the queue, or every verdict with its export) asks the store for
    its data version alone: the bench list, the queue, the authors and the export are cached per data version."""
    from conftest import reads_counted

    from app_pages._store import get_store

    at = sample_app
    at.switch_page("app_pages/review.py").run()
    at.text_input(key="jl_author_input").set_value("rin").run()
    at.session_state["rv_tab"] = tab
    at.run()
    assert not at.exception
    assert ({s.key for s in at.selectbox} >= {"rv_author"}) == (tab == "All verdicts")  # the tab asked for is open
    with reads_counted(get_store()) as seen:
        at.run()
    assert not at.exception
    assert len(seen) == 1  # Store.data_version
