"""The Compare page under AppTest, on the bundled sample (two judges, two models, the CLI's numbers), and the
Overview's ranks with ties beside Compare's minimum detectable difference: both say which differences are real."""
from __future__ import annotations

import pytest
from conftest import frames


@pytest.fixture
def app(sample_app):
    return sample_app


def test_compare_page_two_judges_and_two_models(app):
    app.switch_page("app_pages/compare.py").run()
    assert not app.exception
    table = next(f for f in frames(app) if "ci_low" in f.columns)
    assert len(table) == 8 and (table["ci_low"] <= table["delta"]).all() and (table["delta"] <= table["ci_high"]).all()
    assert "p_adjusted" in table.columns and "model" not in table.columns
    app.toggle(key="cmp_per_model").set_value(True).run()
    assert not app.exception
    table = next(f for f in frames(app) if "ci_low" in f.columns)
    assert len(table) == 16 and table["model"].nunique() == 2
    app.radio(key="cmp_mode").set_value("two models under one judge").run()
    assert not app.exception
    table = next(f for f in frames(app) if "ci_low" in f.columns)
    assert set(table["n_questions"]) == {10}


def test_compare_page_and_cli_print_the_same_numbers(app, capsys):
    import json

    from lib.cli import main as cli

    app.switch_page("app_pages/compare.py").run()
    app.toggle(key="cmp_per_model").set_value(True).run()
    app.segmented_control(key="cmp_level").set_value("cell").run()
    assert not app.exception
    page = next(f for f in frames(app) if "ci_low" in f.columns)
    state = app.session_state
    bench, ja, jb = state["cmp_bench"], state["cmp_ja"], state["cmp_jb"]
    assert cli(["compare", "--a", f"bench={bench},judge={ja}", "--b", f"judge={jb}", "--per-model", "--level", "cell",
                "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == len(page) == 32
    for col in ("n_questions", "n_items", "mean_a", "mean_b", "delta", "ci_low", "ci_high"):
        assert [r[col] for r in rows] == pytest.approx(page[col].tolist(), rel=1e-12), col
    from lib.render.tables import format_p

    for col in ("p_value", "p_adjusted"):  # the page reads them as "< 0.001" / "0.012"
        assert [format_p(r[col]) for r in rows] == page[col].tolist(), col
    assert [r["significant"] for r in rows] == page["significant"].tolist()
    assert [r["model"] for r in rows] == page["model"].tolist()


def test_overview_ranks_with_ties_and_compare_minimum_detectable_difference(app):
    app.run()
    assert not app.exception
    assert not any("rank_high" in f.columns for f in frames(app))    # the ranks wait in their expander
    app.selectbox(key="overview_bench").select("japanese_mt_bench").run()
    app.session_state["overview_ranks_open"] = True
    app.run()
    assert not app.exception
    ranks = next(f for f in frames(app) if "rank_high" in f.columns)
    assert set(ranks["bench"]) == {"japanese_mt_bench"} and sorted(ranks["rank"]) == [1, 2, 3, 4]
    assert ranks[ranks["rank"] == 1]["tied_with_leader"].all()
    wide = next(f for f in frames(app) if "rank_flip" in f.columns and "judge" not in f.columns)
    assert wide.iloc[0]["gpt-4o-2024-08-06"].startswith("1 [1-1] *")
    app.switch_page("app_pages/compare.py").run()
    assert not app.exception
    mde = [i.value for i in app.info if i.value.startswith("With 10 questions a difference under")]
    assert len(mde) == 1 and "80% of the time" in mde[0]          # category rows: 10 questions each
    app.segmented_control(key="cmp_level").set_value("all").run()
    mde = [i.value for i in app.info if i.value.startswith("With 80 questions a difference under")]
    assert len(mde) == 1 and "(the row with" not in mde[0]


def _chart_places(node, path=()):
    """Where each Plotly chart sits in the page: its path of positions, block by block."""
    for i, child in getattr(node, "children", {}).items():
        if getattr(child, "type", None) == "plotly_chart":
            yield path + (i,)
        yield from _chart_places(child, path + (i,))


def test_picking_one_model_keeps_the_rows_where_they_were_drawn(app):
    """The browser matches a rerun's elements to the drawn ones by position: picking one model (which takes away the
    per-model toggle) keeps the chart and the table below it in their places, so they are updated, not drawn anew."""
    app.switch_page("app_pages/compare.py").run()
    every = list(_chart_places(app.main))
    assert app.toggle(key="cmp_per_model") is not None
    app.selectbox(key="cmp_model").set_value(app.selectbox(key="cmp_model").options[1]).run()
    assert not app.exception and not [t for t in app.toggle if t.key == "cmp_per_model"]
    assert list(_chart_places(app.main)) == every and len(every) == 1


def test_two_runs_on_one_bench_keep_the_gap_where_it_was_drawn(app):
    """In the two-harness view, runs on two benches show the linked questions (a caption, the links editor); picking
    run B on run A's bench takes them away, and the gap's chart and everything below keep their places."""
    app.switch_page("app_pages/compare.py").run()
    app.segmented_control(key="cmp_view").set_value("harness").run()
    assert not app.exception and any("linked questions between" in c.value for c in app.caption)
    before = list(_chart_places(app.main))
    a = app.selectbox(key="hx_a").value
    same_bench = next(r for r in app.selectbox(key="hx_b").options
                      if r != a and r.split(" · ")[1] == a.split(" · ")[1])
    app.selectbox(key="hx_b").set_value(same_bench).run()
    assert not app.exception and not any("linked questions between" in c.value for c in app.caption)
    assert list(_chart_places(app.main)) == before and len(before) == 1
