"""Scores and gaps split by answer features (lib.analysis.answer_features): the bundled sample, the calibration,
the CLI, and the Distributions and Compare controls."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from lib.analysis import answer_features as A
from lib.analysis.feature_calibration import calibrate
from lib.cli.main import main
from lib.errors import UsageError

SW8 = {"harness": "swallow", "model": "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b"}
FC8 = {"harness": "fastchat", "judge": "gpt-4o", "model": "shisa-ai/shisa-v2-llama3.1-8b"}


def test_item_features_and_bins(sample_store):
    feats = A.item_features(sample_store, "japanese_mt_bench")
    assert {"japanese_share", "length", "has_code", "has_think", "refusal"} <= set(feats.columns)
    assert feats["japanese_share"].dropna().between(0, 1).all()
    assert feats["has_think"].any() and feats["has_code"].any()   # the sample has a reasoner and code answers
    assert len(feats) == feats[["model_key", "question_id", "turn"]].drop_duplicates().shape[0]  # samples folded
    assert A.feature_bin("japanese", pd.Series([0.1, 0.5, 0.95, None])).tolist() == ["< 50 %", "50-90 %", "≥ 90 %", "—"]
    assert A.feature_bin("think", pd.Series([True, False])).tolist() == ["yes", "no"]


def test_the_language_share_splits_swallows_scores_with_intervals(sample_store):
    """Swallow's judge is told to penalise non-Japanese answers: answers mostly not Japanese score lower."""
    table = A.scores_by_feature(sample_store, "japanese_mt_bench", "japanese").set_index("bin")
    assert list(table.index[:3]) == ["< 50 %", "50-90 %", "≥ 90 %"]
    assert table.loc["< 50 %", "mean"] < table.loc["≥ 90 %", "mean"]
    assert (table["ci_low"] <= table["mean"]).all() and (table["mean"] <= table["ci_high"]).all()
    assert (table["n_questions"] <= table["n_items"]).all()


def test_swallow_vs_fastchat_gap_by_japanese_share(sample_store):
    """Same answers, two harnesses: the gap is all in the answers that are not Japanese (Swallow's -2 rule)."""
    gap = A.harness_gap_by_feature(sample_store, SW8, FC8, "japanese").set_index("bin")
    low, mid = gap.loc["< 50 %"], gap.loc["50-90 %"]
    assert low["ci_high"] < -1 and low["significant"]
    assert mid["ci_low"] < 0 < mid["ci_high"]
    total = A.harness_gap_by_feature(sample_store, SW8, FC8, "code")["n_items"].sum()
    assert gap["n_items"].sum() == total  # every paired item in one bin


def test_two_judges_on_the_same_answers_by_bin(sample_store):
    gap = A.compare_by_feature(sample_store, {"bench": "ja_mt_bench", "judge": "gpt-4o"},
                               {"bench": "ja_mt_bench", "judge": "gpt-4.1-2025-04-14"}, "length")
    assert gap.attrs["binned_by"] == "the shared answers"
    assert list(gap["bin"]) == [b for b in A.bin_order("length") + ["—"] if b in set(gap["bin"])]
    assert (gap["delta"] - (gap["mean_a"] - gap["mean_b"])).abs().max() < 1e-9


def test_intervals_cover_in_simulation():
    """Small and seeded (bench/calibrate_feature_bins.py runs thousands): coverage near 95% at 10 questions."""
    r = calibrate(200, 10, seed=3)
    assert r["replicates"] == 200
    assert 0.89 <= r["mean_coverage"] <= 0.99 and 0.89 <= r["gap_coverage"] <= 0.99


def test_cli_features(sample_store, capsys):
    db = str(sample_store.path)
    assert main(["features", "--db", db, "--by", "judge", "--feature", "japanese", "--bench", "japanese_mt_bench",
                 "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {r["bin"] for r in rows} >= {"< 50 %", "50-90 %", "≥ 90 %"}
    assert set(rows[0]) >= {"feature", "bin", "judge", "mean", "n_items", "n_questions", "ci_low", "ci_high"}
    direct = A.scores_by_feature(sample_store, "japanese_mt_bench", "japanese")
    assert [r["mean"] for r in rows] == list(direct["mean"])
    assert main(["features", "--db", db, "--feature", "japanese", "--format", "json",
                 "--a", ",".join(f"{k}={v}" for k, v in SW8.items()),
                 "--b", ",".join(f"{k}={v}" for k, v in FC8.items())]) == 0
    gap = {r["bin"]: r for r in json.loads(capsys.readouterr().out)}
    assert gap["< 50 %"]["delta"] < -1 and gap["< 50 %"]["ci_high"] < 0


def test_distributions_shows_the_split(sample_app):
    at = sample_app
    at.switch_page("app_pages/distributions.py").run()
    at.selectbox(key="dist_bench").select("japanese_mt_bench").run()
    at.session_state["dist_feature_open"] = True
    at.run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "bin" in d.value.columns and "n_questions" in d.value.columns)
    assert set(table["bin"]) >= {"< 50 %", "50-90 %"}
    assert (table["ci_low"] <= table["ci_high"]).all()
    at.selectbox(key="dist_feature").select("think").run()
    table = next(d.value for d in at.dataframe if "bin" in d.value.columns and "n_questions" in d.value.columns)
    assert set(table["bin"]) == {"no", "yes"}


def test_compare_splits_the_gap_by_a_feature(sample_app):
    at = sample_app
    at.switch_page("app_pages/compare.py").run()
    assert not at.exception
    assert not any("bin" in d.value.columns for d in at.dataframe)   # no split until asked
    at.selectbox(key="cmp_feature").select("japanese").run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "bin" in d.value.columns)
    assert {"delta", "ci_low", "ci_high", "n_questions"} <= set(table.columns)
    assert set(table["bin"]) & {"< 50 %", "50-90 %", "≥ 90 %"}


def test_search_filters_by_answer_features(sample_store, capsys):
    from lib import text_features
    from lib.analysis import search as S

    with sample_store.read() as cur:
        texts = cur.execute("SELECT text FROM answers").fetchall()
    expected = sum(1 for (t,) in texts if (share := text_features.japanese_share(t)) is not None and share <= 0.5)
    q = S.SearchQuery(japanese_max=0.5)
    counts = S.count_by_field(sample_store, q)
    assert counts["answer"] == expected > 0          # the Python rule, record by record
    assert "question" not in counts and "reference" not in counts   # no model's answer
    assert 0 < counts["rationale"] < S.count_by_field(sample_store, S.SearchQuery(fields=("rationale",)))["rationale"]
    hits = S.search(sample_store, S.SearchQuery(fields=("answer",), japanese_max=0.5, has_think=True), limit=5)
    assert len(hits) and set(hits["field"]) == {"answer"}
    assert main(["search", "--db", str(sample_store.path), "--japanese-max", "0.5", "--in", "answer", "--count"]) == 0
    assert json.loads(capsys.readouterr().out) == {"count": expected}


def test_the_two_harness_view_splits_the_gap_by_a_feature(sample_app):
    at = sample_app
    at.switch_page("app_pages/compare.py")
    at.query_params["view"] = "harness"
    at.run()
    at.session_state["hx_feature_open"] = True
    at.run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "bin" in d.value.columns)
    assert {"delta", "ci_low", "ci_high", "n_questions"} <= set(table.columns)
    low = table.set_index("bin").loc["< 50 %"]
    assert low["ci_low"] <= low["delta"] <= low["ci_high"] and abs(low["delta"]) > 1  # the language rule's gap
    at.radio(key="hx_feature_side").set_value("b").run()
    assert not at.exception and any("run B's answers" in c.value for c in at.caption)


def test_search_page_filters_by_japanese_share(sample_app, sample_store):
    from lib.analysis import search as S

    at = sample_app
    at.switch_page("app_pages/search.py").run()
    at.number_input(key="sr_jamax").set_value(0.5).run()
    assert not at.exception
    total = S.count(sample_store, S.SearchQuery(japanese_max=0.5))
    assert total > 50  # more than a page: the page says so without counting every match (counting reads every text)
    assert [h.value for h in at.subheader if "matching" in h.value] == ["More than 50 matching records"]
    at.toggle(key="sr_count").set_value(True).run()
    assert any(h.value == f"{total:,} matching record(s)" for h in at.subheader)
    table = next(d.value for d in at.dataframe if "snippet" in d.value.columns)
    assert set(table["field"]) <= {"answer", "rationale", "prompt"}
    assert at.query_params["jamax"] == "0.5"


def test_cli_features_refuses_one_side_and_an_unknown_feature(sample_store, capsys):
    db = str(sample_store.path)
    assert main(["features", "--db", db, "--a", "judge=gpt-4o"]) == 2
    assert capsys.readouterr().err.strip() == ("--a and --b go together: give both for the gap per bin, or neither "
                                               "for the means.")
    with pytest.raises(UsageError) as info:
        A.check_feature("colour")
    assert str(info.value) == "unknown answer feature 'colour'; choose from japanese, length, code, think, refusal"


def test_two_models_are_binned_by_the_chosen_sides_answers(sample_store):
    a = {"bench": "ja_mt_bench", "judge": "gpt-4o", "model": "shisa-ai/shisa-v2-llama3.1-8b"}
    b = {"bench": "ja_mt_bench", "judge": "gpt-4o", "model": "shisa-ai/shisa-v2-llama3.3-70b"}
    by_a, by_b = (A.compare_by_feature(sample_store, a, b, "japanese", side=s) for s in ("a", "b"))
    assert by_a.attrs["binned_by"] == "side A's answers" and by_b.attrs["binned_by"] == "side B's answers"
    assert by_a["n_items"].sum() == by_b["n_items"].sum() == 160     # every pair in one bin either way
    assert by_a.set_index("bin")["n_items"].to_dict() != by_b.set_index("bin")["n_items"].to_dict()
