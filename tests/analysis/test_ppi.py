"""Judge vs human on a random sample and the prediction-powered corrected mean (lib.analysis.ppi)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lib.analysis import ppi
from lib.judging import human

JA_JUDGES = ["gpt-4o", "gpt-4.1-2025-04-14"]


@pytest.mark.parametrize(("questions", "sampled"), [(80, 40), (10, 10), (80, 160)])
def test_corrected_mean_interval_covers_the_planted_human_mean(questions, sampled):
    """The judge scores 0.6 low with its own question leniency; the human's planted mean is 6. At 1,000 replicates
    the coverage's simulation error is about 0.007 (bench: 0.945 / 0.943 / 0.950 with seed 1)."""
    coverage = ppi.simulate_coverage(1000, questions=questions, sampled=sampled, seed=2026)
    assert 0.93 <= coverage <= 0.97, coverage


def test_the_judge_alone_misses_the_human_mean():
    """Without the correction (the judge's mean with the same interval machinery, no human verdicts) the planted
    bias of -0.6 puts 6 outside nearly every interval: the correction is what makes the coverage."""
    rng = np.random.default_rng(3)
    q = rng.normal(0, 1.2, (80, 1))
    latent = 6.0 + q + rng.normal(0, 1.0, (80, 2))
    judge = np.round(latent - 0.6 + rng.normal(0, 0.8, (80, 2))).ravel()
    humans = np.round(latent).ravel()
    clusters = np.repeat(np.arange(80), 2)
    everyone = ppi.corrected_mean(judge, clusters, humans)
    assert everyone["corrected_mean"] == pytest.approx(humans.mean())      # all items scored: the human mean
    assert everyone["correction"] == pytest.approx(humans.mean() - judge.mean())
    nobody = ppi.corrected_mean(judge, clusters, np.full(160, np.nan))
    assert nobody["n_sampled"] == 0 and math.isnan(nobody["ci_low"]) and nobody["halve_with"] is None


def test_halve_with_halves_the_width():
    rng = np.random.default_rng(5)
    clusters = np.repeat(np.arange(400), 2)
    judge = np.round(6 + rng.normal(0, 1.5, 800))
    humans = judge + 0.5 + rng.normal(0, 1.5, 800)
    some = np.full(800, np.nan)
    some[:40] = humans[:40]
    first = ppi.corrected_mean(judge, clusters, some)
    more = np.full(800, np.nan)
    more[:first["halve_with"]] = humans[:first["halve_with"]]
    second = ppi.corrected_mean(judge, clusters, more)
    ratio = (second["ci_high"] - second["ci_low"]) / (first["ci_high"] - first["ci_low"])
    assert first["halve_with"] > 40 and ratio == pytest.approx(0.5, abs=0.12)


def test_random_sample_is_fixed_and_judge_vs_human_on_the_sample(sample_store):
    sample = ppi.random_sample(sample_store, "human:ana", bench="ja_mt_bench", n=30)
    again = ppi.random_sample(sample_store, "human:ana", bench="ja_mt_bench", n=30)
    assert sample.equals(again) and len(sample) == 30 and not sample["decided"].any()
    assert sample["question_id"].nunique() > 15          # spread over the bench, not the first questions
    longer = ppi.random_sample(sample_store, "human:ana", bench="ja_mt_bench", n=60)
    assert longer.head(30)[["question_id", "model", "turn"]].equals(sample[["question_id", "model", "turn"]])
    # the analyst scores the first 20 sampled items (gpt-4o's score + 1) and one item outside the sample
    matrix_rows = []
    for r in sample.head(20).itertuples():
        human.record(sample_store, author="ana", bench=r.bench, question_id=r.question_id, turn=r.turn,
                     model=r.model, score=5.0)
        matrix_rows.append((r.question_id, r.model, r.turn))
    outside = ppi.random_sample(sample_store, None, bench="ja_mt_bench", n=320).iloc[-1]
    human.record(sample_store, author="ana", bench="ja_mt_bench", question_id=outside.question_id,
                 turn=int(outside.turn), model=outside.model, score=1.0)
    res = ppi.judge_vs_human(sample_store, JA_JUDGES, "human:ana", bench="ja_mt_bench", n=30, n_boot=200)
    assert int(res["sample"]["decided"].sum()) == 20
    corrected = res["corrected"]
    assert set(corrected["judge"]) == set(JA_JUDGES) and corrected["n_items"].tolist() == [160] * 4
    assert corrected.groupby("judge")["n_sampled"].sum().tolist() == [20, 20]   # the outside verdict is left out
    for row in corrected.itertuples():
        assert row.human_mean_sampled == 5.0
        assert row.ci_low < row.corrected_mean < row.ci_high or row.n_sampled < 2
    agreement = res["agreement"]
    assert agreement["judge_b"].tolist() == ["human:ana", "human:ana"] and agreement["n"].tolist() == [20, 20]


def test_cli_judge_vs_human(sample_store, capsys):
    import json

    from lib.cli import main

    for r in ppi.random_sample(sample_store, "human:ana", bench="ja_mt_bench", n=12).itertuples():
        human.record(sample_store, author="ana", bench=r.bench, question_id=r.question_id, turn=r.turn, model=r.model,
                     score=7.0)
    expected = ppi.judge_vs_human(sample_store, JA_JUDGES, "human:ana", bench="ja_mt_bench", n=40, n_boot=100)
    db = str(sample_store.path)
    sample_store.close()
    assert main(["judge-vs-human", "--db", db, "--bench", "ja_mt_bench", "--human", "ana",
                 "--judges", ",".join(JA_JUDGES), "--boot", "100", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["human"], out["sampled"], out["scored"]) == ("human:ana", 40, 12)
    got = {(r["judge"], r["model"]): r for r in out["corrected"]}
    for row in expected["corrected"].itertuples():
        assert got[(row.judge, row.model)]["corrected_mean"] == pytest.approx(row.corrected_mean)
        assert got[(row.judge, row.model)]["ci_low"] == pytest.approx(row.ci_low)
    assert main(["judge-vs-human", "--db", db, "--bench", "ja_mt_bench", "--human", "nobody"]) == 2
    assert "Unknown judge(s): human:nobody." in capsys.readouterr().err
