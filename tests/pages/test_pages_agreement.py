"""The Judge agreement page under AppTest, on the bundled sample: pairs, worst items, pairwise verdicts, parse
failures, intervals, reliability and the variance split; the same numbers as the CLI."""
from __future__ import annotations

import os

import pytest
from conftest import frames

from lib.render.safe_text import md_escape
from lib.analysis import agreement
from lib.store import Store

JUDGES = ["gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14", "gpt-4o"]


@pytest.fixture
def app(sample_app):
    return sample_app


def agreement_tab(at, label: str):
    """Open one of the agreement page's tabs: they are lazy, only the open one is drawn."""
    at.session_state["agr_tab"] = label
    return at.run()


def test_agreement_page_shows_every_judge_pair_and_the_worst_items(app):
    app.switch_page("app_pages/agreement.py").run()
    assert not app.exception
    table = next(f for f in frames(app) if "judge_a" in f.columns)
    assert len(table) == 3 and set(table["n"]) == {320}
    assert len(frames(app)) == 1  # the other tabs wait until opened
    assert len(app.get("plotly_chart")) == 1  # the heatmap; the per-pair scatter waits until its expander opens
    app.session_state["agr_scatter_open"] = True
    app.run()
    assert not app.exception and len(app.get("plotly_chart")) == 2
    agreement_tab(app, "Largest disagreements")
    assert not app.exception
    worst = next(f for f in frames(app) if "spread" in f.columns)
    assert worst["spread"].is_monotonic_decreasing
    top = worst.iloc[0]
    assert top["open"].startswith(f"item_view?bench=ja_mt_bench&q={top['question_id']}&turn={top['turn']}")
    assert not any("judge_a" in f.columns for f in frames(app))  # the agreement tab is not drawn meanwhile


def test_agreement_page_pairwise_and_failures_on_the_english_bench(app):
    app.switch_page("app_pages/agreement.py").run()
    app.selectbox(key="agr_bench").set_value("mt_bench").run()
    assert not app.exception
    assert any(t.value.startswith("Agreement needs two or more judges") for t in app.info)  # one judge here
    agreement_tab(app, "Pairwise verdicts")
    rates = next(f for f in frames(app) if "win_rate_adjusted" in f.columns)
    dpo = rates[rates["model"] == "phi-3-dpo"].iloc[0]
    assert (dpo["win"], dpo["loss"], dpo["tie"]) == (20, 18, 35)
    app.radio(key="agr_policy").set_value("strict").run()
    strict = next(f for f in frames(app) if "win_rate_adjusted" in f.columns)
    assert strict[strict["model"] == "phi-3-dpo"].iloc[0]["tie"] < 35
    agreement_tab(app, "Parse failures")
    assert not app.exception
    # the rules note shows as written: "$ERROR$" is not LaTeX, judge_score_*_turn_k_avg no emphasis
    assert any(c.value == md_escape(agreement.RULES_NOTE) and "\\$ERROR\\$" in c.value for c in app.caption)
    failures = next(f for f in frames(app) if "not_parsed_rate" in f.columns)
    with Store(os.environ["JUDGELENS_DB"]) as s:
        expected = agreement.parse_failures(s, bench="mt_bench")
    expected = expected[expected["judge"].isin(app.multiselect(key="agr_judges").value)]
    assert len(failures) == len(expected) > 0                              # the chosen judges' rows, as the lib counts
    assert failures["not_parsed_rate"].tolist() == pytest.approx(expected["not_parsed_rate"].tolist())
    # the single-bracket count is always there (the flag stored at import: no text scan to switch on)
    assert failures["single_bracket_only"].tolist() == expected["single_bracket_only"].tolist()


def test_agreement_page_pairwise_baseline_matches_the_cli(app, capsys):
    import json

    from lib.cli import main as cli

    app.switch_page("app_pages/agreement.py").run()
    app.selectbox(key="agr_bench").set_value("mt_bench").run()
    agreement_tab(app, "Pairwise verdicts")
    app.selectbox(key="agr_baseline").set_value("phi-3").run()
    assert not app.exception
    page = next(f for f in frames(app) if "win_rate_adjusted" in f.columns)
    assert cli(["pairwise", "--bench", "mt_bench", "--baseline", "phi-3", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["model"] for r in out["win_rates"]] == page["model"].tolist() == ["phi-3-dpo"]
    for col in ("win", "loss", "tie", "win_rate", "loss_rate", "win_rate_adjusted"):
        assert [r[col] for r in out["win_rates"]] == pytest.approx(page[col].tolist()), col


def test_agreement_page_intervals_reliability_and_variance(app):
    """The intervals wait in an expander (a bootstrap per pair); the Reliability tab shows alpha with intervals,
    alpha without each judge, and (opened) the variance split as a stacked bar."""
    app.switch_page("app_pages/agreement.py").run()
    assert not any("pearson_ci_low" in str(list(f.columns)) or "n_questions" in f.columns for f in frames(app))
    app.session_state["agr_ci_open"] = True
    app.run()
    assert not app.exception
    shown = next(f for f in frames(app) if "n_questions" in f.columns)
    assert set(shown["n_questions"]) == {80} and shown["qwk"].str.match(r"^0\.\d{3} \[0\.\d{3}, 0\.\d{3}\]$").all()
    assert not app.warning                         # 80 questions: no few-questions warning
    app.selectbox(key="agr_category").set_value("writing").run()
    assert any("Fewer than 20 questions" in w.value for w in app.warning)
    app.selectbox(key="agr_category").set_value("(all)").run()
    agreement_tab(app, "Reliability")
    assert not app.exception
    overall = next(f for f in frames(app) if "alpha_interval" in f.columns and "group" in f.columns)
    assert overall.iloc[0]["group"] == "all" and overall.iloc[0]["n_units"] == 320
    assert overall.iloc[0]["alpha_interval_ci_low"] < overall.iloc[0]["alpha_interval"]
    without = next(f for f in frames(app) if "without" in f.columns)
    assert sorted(without["without"]) == sorted(JUDGES)
    charts_before = len(app.get("plotly_chart"))
    app.session_state["agr_var_open"] = True
    app.run()
    assert not app.exception and len(app.get("plotly_chart")) == charts_before + 1
    parts = next(f for f in frames(app) if "component" in f.columns)
    assert abs(parts["share"].sum() - 1) < 1e-9


def test_reliability_tab_with_one_judge_still_splits_the_variance(app):
    """Swallow's bench has one judge: no alpha, but the variance split shows the five samples' share."""
    app.switch_page("app_pages/agreement.py").run()
    app.selectbox(key="agr_bench").set_value("japanese_mt_bench").run()
    agreement_tab(app, "Reliability")
    assert not app.exception
    assert any(i.value.startswith("Alpha needs two or more judges") for i in app.info)
    app.session_state["agr_var_open"] = True
    app.run()
    assert not app.exception
    parts = next(f for f in frames(app) if "component" in f.columns).set_index("component")
    assert parts.loc["sample", "share"] > 0 and parts.loc["judge", "variance"] == 0
    assert any(c.value.startswith("One judge:") for c in app.caption)
