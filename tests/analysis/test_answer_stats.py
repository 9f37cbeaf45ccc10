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


def test_japanese_rule_has_one_home():
    """answer_stats and the probes use lib.text_features' rule (its values are tested in test_text_features)."""
    from lib import text_features
    from lib.probes import canaries

    assert A.is_japanese is text_features.is_japanese and canaries.is_japanese is text_features.is_japanese
    assert A.is_japanese("ｶﾀｶﾅ々") and not A.is_japanese("ＡＢＣ日")       # half-width kana yes, full-width ASCII no


def test_copies_and_language_on_the_same_models_pair(sample_store):
    sw, fc = A.answer_facts(sample_store, SW8), A.answer_facts(sample_store, FC8)
    # 4 of 8 categories run at temperature 0: their samples 1-4 are copies; the others are all distinct
    assert (sw["answers"], sw["items"], sw["samples_per_item"], sw["copy_share"]) == (800, 160, 5, 0.5)
    assert (fc["answers"], fc["samples_per_item"], fc["copy_share"]) == (160, 1, None)
    # Swallow's sample 0 is the JA harness's answer byte for byte: the same not-Japanese share, which is the
    # share of answers the same-models judge's rule (a) fires on (its README), counted here independently
    with sample_store.read() as cur:
        texts = [t for (t,) in cur.execute("SELECT text FROM answers WHERE bench = 'ja_mt_bench' AND model = ?",
                                           [FC8.model]).fetchall()]

    def japanese(c):
        o = ord(c)
        return (0x3041 <= o <= 0x309F or 0x30A0 <= o <= 0x30FF or 0xFF66 <= o <= 0xFF9F or 0x4E00 <= o <= 0x9FFF
                or 0x3400 <= o <= 0x4DBF or 0xF900 <= o <= 0xFAFF or 0x3005 <= o <= 0x3007)

    fired = sum(sum(map(japanese, c)) / len(c) < 0.5 for c in ([x for x in t if not x.isspace()] for t in texts))
    assert len(texts) == 160 and fired > 0
    assert sw["not_japanese_share_sample0"] == fc["not_japanese_share"] == fired / 160


def test_sample0_vs_mean_and_spread(sample_store):
    s = A.sample_scores(sample_store, SW70)
    assert s["samples"] == 5 and s["n_questions"] == 80 and len(s["per_sample"]) == 5
    with sample_store.read() as cur:   # the same means in SQL: items with a valid sample-0 score
        m0, mall, n = cur.execute("""
            WITH i AS (SELECT question_id, turn, avg(score) FILTER (sample = 0) AS s0, avg(score) AS m
                       FROM single_judgments WHERE harness = 'swallow' AND model = ? AND score IS NOT NULL
                       GROUP BY ALL)
            SELECT avg(s0), avg(m), count(*) FROM i WHERE s0 IS NOT NULL""", [SW70.model]).fetchone()
    assert (s["items"], s["mean_sample0"], s["mean_all"]) == (n, pytest.approx(m0), pytest.approx(mall))
    assert s["delta"] == pytest.approx(m0 - mall)
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
