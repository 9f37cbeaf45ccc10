"""Real-browser test at scale: about 100k judgments (8 judges x 80 models x 80 questions x 2 turns).

Every page renders without an error, and the pages that would otherwise list every model or judge say
what they show ("Showing 12 of 80 models") and offer the rest. Speed is measured by
bench/browser_bench.py, not asserted here. The store is generated with DuckDB SQL straight into a Store
(bench/pages_bench.build, the benchmark's own builder), in a few seconds.
"""
from __future__ import annotations

import importlib.util
import re

import pytest

from browser_support import open_app, running_app, wait_for_rerun
from conftest import ROOT

pytestmark = pytest.mark.browser

JUDGES, MODELS = 8, 80


def _builder():
    spec = importlib.util.spec_from_file_location("pages_bench", ROOT / "bench" / "pages_bench.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build


@pytest.fixture(scope="module")
def big_app(tmp_path_factory):
    db = tmp_path_factory.mktemp("scale") / "judgelens.duckdb"
    info = _builder()(db, JUDGES * MODELS * 160, JUDGES, models=MODELS)
    assert info["rows"] == 102_400
    from lib.store import Store

    with Store(db) as store, store.read() as cur:  # before the app holds the file
        everything = cur.execute("SELECT count(DISTINCT model), count(DISTINCT judge), "
                                 "count(DISTINCT (harness, bench, judge, model)) FROM item_scores").fetchone()
    with running_app(db) as url:
        yield url, everything


def _no_error(page, where: str) -> None:
    errors = page.locator('[data-testid="stException"], [data-testid="stAlertContentError"]')
    assert errors.count() == 0, f"{where}: " + " | ".join(e.inner_text()[:300] for e in errors.all())


def _text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


@pytest.mark.parametrize("path, title, cues", [
    # every bench (see big_app); the chart counts models by alias (hosted_vllm/model-7 is model-7): MODELS
    ("", "Overview", [f"Showing 12 of {MODELS} models", "Showing 6 of {judges} judges",
                      "Leaderboard rows 1–50 of {rows:,}"]),
    ("agreement", "Judge agreement", [f"Showing 6 of {JUDGES} judges"]),
    ("item_view?a=answer", "Item view", [f"({MODELS - 1} on this bench"]),  # a link naming a diff opens it
    ("search", "Search", []),
    ("review", "Review", []),
    ("distributions", "Distributions", [f"Showing 12 of {MODELS} models", f"Showing 6 of {JUDGES} judges"]),
    ("compare", "Compare", []),
    ("workbench", "Workbench", []),
    ("probes", "Probes", []),
    ("import_data", "Import", []),
])
def test_every_page_renders_at_100k_judgments_and_says_what_it_shows(big_app, page, path, title, cues):
    url, (models, judges, rows) = big_app
    assert models > MODELS and judges > JUDGES  # the builder's second bench: Overview's "All benches" counts it
    open_app(page, f"{url}/{path}")
    _no_error(page, title)
    assert page.locator('[data-testid="stMain"] h1').first.inner_text().strip() == title
    text = _text(page)
    for cue in (c.format(models=models, judges=judges, rows=rows) for c in cues):
        assert cue in text, f"{title}: no {cue!r} on the page"


def test_the_readable_subset_can_be_changed(big_app, page):
    """Top 5 instead of top and bottom 12, then one picked model on top: the cue follows. The Overview's chart
    counts models by alias (hosted_vllm/model-7 under the second harness is model-7)."""
    url, models = big_app[0], MODELS
    open_app(page, url)
    box = page.get_by_test_id("stNumberInput").filter(has=page.get_by_text("How many", exact=True)).first
    box.locator("input").fill("5")
    wait_for_rerun(page, lambda: box.locator("input").press("Enter"))
    assert f"Showing 5 of {models} models" in _text(page)
    picker = page.get_by_test_id("stMultiSelect").filter(has=page.get_by_text(re.compile("^Also show"))).first
    picker.locator("input").fill("model-42")
    wait_for_rerun(page, lambda: page.get_by_role("option", name="model-42", exact=True).click())
    assert " + picked)" in _text(page)
    shown = re.search(rf"Showing (\d+) of {models} models", _text(page))
    assert shown and int(shown.group(1)) in (5, 6)  # 6 unless model-42 was among the top and bottom 5 already
    _no_error(page, "Overview after changing the subset")
