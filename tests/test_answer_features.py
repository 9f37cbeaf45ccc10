"""Scores split by answer features (lib.analysis.answer_features) and the Distributions section that shows them."""
from __future__ import annotations

import pandas as pd
from streamlit.testing.v1 import AppTest

from conftest import ROOT
from lib.analysis import answer_features as A


def test_features_and_bins(sample_store):
    feats = A.answer_features(sample_store, "japanese_mt_bench")
    assert {"japanese", "length", "code", "think", "refusal"} <= set(feats.columns)
    assert feats["japanese"].dropna().between(0, 1).all()
    assert feats["think"].any() and feats["code"].any()        # the sample has a reasoner and code answers
    assert A.feature_bin("japanese", pd.Series([0.1, 0.5, 0.95, None])).tolist() == ["< 50 %", "50-90 %", "≥ 90 %", "—"]
    assert A.feature_bin("think", pd.Series([True, False])).tolist() == ["yes", "no"]


def test_the_language_share_splits_swallows_scores(sample_store):
    """Swallow's judge is told to penalise non-Japanese answers: answers mostly not Japanese score lower."""
    table = A.scores_by_feature(sample_store, "japanese_mt_bench", "japanese").set_index("bin")
    assert list(table.index[:3]) == ["< 50 %", "50-90 %", "≥ 90 %"]
    assert table.loc["< 50 %", "mean"] < table.loc["≥ 90 %", "mean"]


def test_distributions_shows_the_split(sample_app):
    at = sample_app
    at.switch_page("pages/distributions.py").run()
    at.selectbox(key="dist_bench").select("japanese_mt_bench").run()
    at.session_state["dist_feature_open"] = True
    at.run()
    assert not at.exception
    table = next(d.value for d in at.dataframe if "bin" in d.value.columns and "questions" in d.value.columns)
    assert set(table["bin"]) >= {"< 50 %", "50-90 %"}
    at.selectbox(key="dist_feature").select("think").run()
    table = next(d.value for d in at.dataframe if "bin" in d.value.columns and "questions" in d.value.columns)
    assert set(table["bin"]) == {"no", "yes"}
