"""lib.analysis.answer_stats on the bundled same-models pair: what stored answers tell without any endpoint."""
from __future__ import annotations

import json

import pytest

from lib.analysis import answer_stats as A
from lib.analysis.runs import Run
from lib.cli.main import main

SW8 = Run("swallow", "japanese_mt_bench", "gpt-4o-2024-08-06", "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b")
SW70 = Run("swallow", "japanese_mt_bench", "gpt-4o-2024-08-06", "hosted_vllm/shisa-ai/shisa-v2-llama3.3-70b")
FC8 = Run("fastchat", "ja_mt_bench", "gpt-4o", "shisa-ai/shisa-v2-llama3.1-8b")


def test_japanese_rule():
    assert A.japanese_ratio("日本語です。") == pytest.approx(5 / 6)      # 。 is not Japanese
    assert A.japanese_ratio("Hello 世界") == pytest.approx(2 / 7)        # whitespace not counted
    assert A.japanese_ratio("<think>考える</think>Hello") == 0.0          # <think> removed first
    assert A.japanese_ratio("  ") is None and not A.is_japanese("")
    assert A.is_japanese("ｶﾀｶﾅ々") and not A.is_japanese("ＡＢＣ日")       # half-width kana yes, full-width ASCII no


def test_copies_and_language_on_the_same_models_pair(sample_store):
    sw, fc = A.answer_facts(sample_store, SW8), A.answer_facts(sample_store, FC8)
    # 4 of 8 categories run at temperature 0: their samples 1-4 are copies; the others are all distinct
    assert (sw["answers"], sw["items"], sw["samples_per_item"], sw["copy_share"]) == (800, 160, 5, 0.5)
    assert (fc["answers"], fc["samples_per_item"], fc["copy_share"]) == (160, 1, None)
    # Swallow's sample 0 is the JA harness's answer byte for byte: the same not-Japanese share
    assert sw["not_japanese_share_sample0"] == fc["not_japanese_share"] == pytest.approx(35 / 160)


def test_sample0_vs_mean_and_spread(sample_store):
    s = A.sample_scores(sample_store, SW70)
    assert s["samples"] == 5 and s["n_questions"] == 80
    assert s["delta"] == pytest.approx(s["mean_sample0"] - s["mean_all"])
    assert s["ci_low"] < s["delta"] < s["ci_high"]
    assert s["per_sample"][0] == pytest.approx(s["mean_sample0"], abs=0.05)
    assert 0 < s["spread"] < 1 and 0 < s["share_varied"] <= 1   # the planted ±1 noise on samples 1-4
    one = A.sample_scores(sample_store, FC8)
    assert (one["delta"], one["ci_low"], one["ci_high"], one["spread"]) == (0.0, 0.0, 0.0, None)


def test_stored_view_and_cli(sample_store, capsys):
    df = A.stored_view(sample_store, [FC8, SW8])
    assert list(df["samples_per_item"]) == [1, 5]
    code = main(["answer-stats", "--db", str(sample_store.path), "--run", "harness=fastchat,judge=gpt-4o,"
                 "model=shisa-ai/shisa-v2-llama3.1-8b", "--run", "harness=swallow,model=hosted_vllm/shisa-ai/"
                 "shisa-v2-llama3.1-8b", "--format", "json"])
    rows = json.loads(capsys.readouterr().out)
    assert code == 0 and [r["copy_share"] for r in rows] == [None, 0.5]
