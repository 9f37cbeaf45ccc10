"""The review pages under AppTest, on the bundled sample: agreement, item view, distributions, compare."""
from __future__ import annotations

import os
from urllib.parse import quote_plus

import pytest

from lib.render.safe_text import md_escape
from lib.analysis import agreement
from lib.store import Store

JUDGES = ["gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14", "gpt-4o"]
MODEL_8B = "shisa-ai/shisa-v2-llama3.1-8b"


@pytest.fixture
def app(sample_app):
    return sample_app


def frames(at):
    return [d.value for d in at.dataframe]


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


def test_item_view_opens_from_query_params_and_jumps_to_the_biggest_disagreement(app, _sample_db):
    app.query_params.update({"bench": "ja_mt_bench", "q": "31", "turn": "2", "model": MODEL_8B,
                             "cols": "fastchat:gpt-4o", "a": "answer:" + MODEL_8B, "b": "rationale:fastchat:gpt-4o"})
    app.switch_page("app_pages/item_view.py").run()
    assert not app.exception
    assert app.selectbox(key="iv_q").value == "31" and app.radio(key="iv_turn").value == 2
    assert app.multiselect(key="iv_cols").value == ["fastchat:gpt-4o"]
    assert app.selectbox(key="iv_a").value == "answer:" + MODEL_8B
    assert len(app.metric) == 1                                   # only the chosen column
    next(b for b in app.button if b.label == "Next biggest disagreement").click().run()
    with Store(_sample_db) as s:
        ranked = agreement.disagreements(s, JUDGES, bench="ja_mt_bench", limit=1000)
    keys = list(zip(ranked["question_id"], ranked["turn"].astype(int), ranked["model"]))
    expected = keys[keys.index(("31", 2, MODEL_8B)) + 1]  # the next one down the ranking from where we were
    where = (app.selectbox(key="iv_q").value, app.radio(key="iv_turn").value, app.selectbox(key="iv_model").value)
    assert where == expected


def test_item_view_diff_waits_until_opened_and_then_joins_the_link(app):
    app.query_params.update({"bench": "ja_mt_bench", "q": "31", "turn": "2", "model": MODEL_8B})
    app.switch_page("app_pages/item_view.py").run()
    assert not app.exception
    assert {"iv_a", "iv_b"}.isdisjoint(s.key for s in app.selectbox)   # closed: the diff is neither drawn nor sent
    assert not app.get("html") and "a" not in app.query_params
    app.session_state["iv_diff_open"] = True                             # the user opens it
    app.run()
    left, right = app.selectbox(key="iv_a").value, app.selectbox(key="iv_b").value
    assert left.startswith("rationale:") and right.startswith("rationale:") and left != right
    assert len(app.get("html")) == 1 and any("similar" in c.value for c in app.caption)
    assert (app.query_params["a"], app.query_params["b"]) == (left, right)  # the address bar names the diff


def test_item_view_biggest_disagreement_on_a_one_judge_bench_says_why_not(app, _sample_db):
    app.query_params.update({"bench": "mt_bench", "q": "81", "turn": "1", "model": "phi-3-dpo"})
    app.switch_page("app_pages/item_view.py").run()
    next(b for b in app.button if b.label == "Next biggest disagreement").click().run()
    assert any("No item here has scores from two or more judges" in i.value for i in app.info)


def test_item_view_previous_and_next_walk_the_items(app):
    app.switch_page("app_pages/item_view.py").run()
    first = (app.selectbox(key="iv_q").value, app.radio(key="iv_turn").value)
    next(b for b in app.button if b.label == "Next").click().run()
    assert (app.selectbox(key="iv_q").value, app.radio(key="iv_turn").value) == (first[0], 2)
    next(b for b in app.button if b.label == "Previous").click().run()
    assert (app.selectbox(key="iv_q").value, app.radio(key="iv_turn").value) == first


def test_item_view_swallow_item_has_samples_and_a_truncation_note(app):
    app.query_params.update({"bench": "japanese_mt_bench", "q": "1", "turn": "1",
                             "model": "hosted_vllm/fake-org/Fake-JA-Chat-8B"})
    app.switch_page("app_pages/item_view.py").run()
    assert not app.exception
    assert app.get("button_group") or app.get("segmented_control")   # the 0-4 sample picker


def test_distributions_page(app):
    app.switch_page("app_pages/distributions.py").run()
    assert not app.exception
    assert not any("median" in f.columns for f in frames(app))       # the quartiles wait until opened
    charts_before = len(app.get("plotly_chart"))
    assert charts_before == 2  # the histogram and the radar, at first sight
    app.session_state["dist_box_open"] = True
    app.run()
    assert not app.exception and len(app.get("plotly_chart")) == charts_before + 1  # the box plot
    summary = next(f for f in frames(app) if "median" in f.columns)
    assert set(summary["judge"]) == set(JUDGES)
    assert not any("macro_xcm" in f.columns for f in frames(app))  # the JA table waits until its expander opens
    app.session_state["dist_overall_open"] = True
    app.run()
    assert not app.exception
    overall = next(f for f in frames(app) if "macro_xcm" in f.columns)
    row = overall[(overall["judge"] == "gpt-4o") & (overall["model"] == "shisa-ai/shisa-v2-llama3.3-70b")].iloc[0]
    assert round(row["t1"], 4) == 9.075 and round(row["macro_xcm"], 4) == 8.5583
    app.selectbox(key="dist_facet").set_value("turn").run()
    app.radio(key="dist_unit").set_value("judgment").run()
    assert not app.exception


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


def test_item_view_flags_a_rationale_that_quotes_the_reference(app):
    # GPT-4 on phi-3-dpo, mt_bench q128 turn 1: half the rationale is the reference's code (lib.analysis.flags finds it).
    app.query_params.update({"bench": "mt_bench", "q": "128", "turn": "1", "model": "phi-3-dpo"})
    app.switch_page("app_pages/item_view.py").run()
    assert not app.exception
    assert any("Quotes the reference far more than the answer" in w.value for w in app.warning)


def test_item_view_explains_swallow_turn_two_conditioning(app):
    # q71 is a writing question: Swallow samples it at temperature 0.7, so samples 1-4 differ from sample 0.
    app.query_params.update({"bench": "japanese_mt_bench", "q": "71", "turn": "2",
                             "model": "hosted_vllm/fake-org/Fake-JA-Chat-8B", "sample": "3"})
    app.switch_page("app_pages/item_view.py").run()
    assert not app.exception and app.session_state["iv_sample"] == 3
    assert any("after sample 0's turn-1 answer" in i.value for i in app.info)


def test_item_view_says_when_the_harness_cut_the_answer(app):
    # lib.analysis.flags finds the 8,192-character cut on q10 turn 1 of the Swallow chat run.
    app.query_params.update({"bench": "japanese_mt_bench", "q": "10", "turn": "1",
                             "model": "hosted_vllm/fake-org/Fake-JA-Chat-8B"})
    app.switch_page("app_pages/item_view.py").run()
    assert any("cut this answer at 8,192 characters" in w.value for w in app.warning)


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


def test_item_view_reference_answer_opens_where_the_judge_saw_it(app):
    # The reference expander is lazy: open (and drawn) on a reference category, closed and not drawn elsewhere,
    # unless the analyst opened or closed it on this question and turn.
    def reference_captions():
        return [c.value for c in app.caption if c.value.startswith("looked up by judge(s)")]

    app.query_params.update({"bench": "mt_bench", "q": "128", "turn": "1", "model": "phi-3-dpo"})  # coding
    app.switch_page("app_pages/item_view.py").run()
    assert not app.exception
    assert app.session_state["iv_ref_open"] is True and reference_captions()
    app.selectbox(key="iv_q").set_value("81").run()  # mt_bench q81: writing, no reference shown to the judge
    assert not app.exception
    assert app.session_state["iv_ref_open"] is False
    assert not any(c.value == "No reference answer for this question and turn." for c in app.caption)  # not drawn
    assert any(e.label.startswith("Reference answer (not used") for e in app.expander)
    app.session_state["iv_ref_open"] = True  # the analyst opens it here: it stays open on this item
    app.session_state["_iv_ref_item"] = ("mt_bench", app.selectbox(key="iv_q").value, 1)
    app.run()
    assert not app.exception and app.session_state["iv_ref_open"] is True
    assert any(c.value == "No reference answer for this question and turn." for c in app.caption)
    app.selectbox(key="iv_q").set_value("128").run()  # another item: the default again (open: coding)
    assert app.session_state["iv_ref_open"] is True and reference_captions()


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


def _bars(spec: dict) -> set[tuple]:
    """(trace name, x, y) of every bar in a Plotly spec (arrays may come typed: {"dtype", "bdata"})."""
    import base64

    import numpy as np

    def values(v):
        return np.frombuffer(base64.b64decode(v["bdata"]), dtype=v["dtype"]).tolist() if isinstance(v, dict) else v
    return {(t["name"], x, round(y, 12)) for t in spec["data"] for x, y in zip(values(t["x"]), values(t["y"]))}


def test_distributions_page_draws_the_libs_numbers(app, app_db):
    """The page's histogram bars, length-bias count and statistics are the lib functions' numbers (the page caches
    what it draws: aggregates, never the judged answers themselves)."""
    import json

    from lib.analysis import distributions

    app.switch_page("app_pages/distributions.py").run()
    bench, judges = app.selectbox(key="dist_bench").value, app.multiselect(key="dist_judges").value
    with Store(app_db) as store:
        hist = distributions.score_histogram(store, by=["judge"], filters={"bench": bench, "judge": judges})
        points, stats = distributions.length_bias(store, bench=bench, judge=judges[0])
        other_points, other_stats = distributions.length_bias(store, bench=bench, judge=judges[1])
        by_turn = distributions.score_histogram(store, by=["turn"], filters={"bench": bench, "judge": judges})
    assert any(c.value.startswith("Showing all") for c in app.caption)   # the sample: every model is shown
    spec = json.loads(app.get("plotly_chart")[0].proto.spec)
    assert _bars(spec) == {(j, b, round(s, 12)) for j, b, s in zip(hist["judge"], hist["bin"], hist["share"])}
    app.session_state["dist_length_open"] = True
    app.run()
    assert not app.exception
    assert any(c.value.startswith(f"{len(points):,} judged answers") for c in app.caption)
    shown = next(f for f in frames(app) if "spearman_rho" in f.columns)
    assert shown["n"].tolist() == stats["n"].tolist()
    assert [float(v) for v in shown["spearman_rho"]] == pytest.approx(stats["spearman_rho"].tolist())
    # another judge: the bench's answer lengths kept from the first, that judge's scores joined to them
    app.selectbox(key="dist_length_judge").set_value(judges[1]).run()
    assert not app.exception
    assert any(c.value.startswith(f"{len(other_points):,} judged answers") for c in app.caption)
    shown = next(f for f in frames(app) if "spearman_rho" in f.columns)
    assert [float(v) for v in shown["spearman_rho"]] == pytest.approx(other_stats["spearman_rho"].tolist())
    # another colouring: the same cached counts, summed by turn
    app.selectbox(key="dist_color").set_value("turn").run()
    spec = json.loads(app.get("plotly_chart")[0].proto.spec)
    assert _bars(spec) == {(f"turn {t}", b, round(s, 12))
                           for t, b, s in zip(by_turn["turn"], by_turn["bin"], by_turn["share"])}


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
