"""The variance decomposition (lib.analysis.variance) on simulated data with known components, on the sample,
and through the CLI."""
from __future__ import annotations

import json

import numpy as np
import pytest

from lib.analysis import variance as va
from lib.cli import main

JA_JUDGES = ["gpt-4o", "gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14"]
TRUE_SD = {"model": 0.8, "question": 1.2, "answer": 1.0, "judge": 0.6, "judge_x_model": 0.4,
           "judge_x_question": 0.5, "residual": 0.7}


def simulate(rng, judges=4, models=6, questions=40):
    p = 2 * questions              # two turns per question; a turn's prompt is its own "question" effect
    s = TRUE_SD
    y = (rng.normal(0, s["model"], (1, models, 1)) + rng.normal(0, s["question"], (1, 1, p))
         + rng.normal(0, s["answer"], (1, models, p)) + rng.normal(0, s["judge"], (judges, 1, 1))
         + rng.normal(0, s["judge_x_model"], (judges, models, 1))
         + rng.normal(0, s["judge_x_question"], (judges, 1, p)) + rng.normal(0, s["residual"], (judges, models, p)))
    return y, np.repeat(np.arange(questions), 2)


def test_anova_recovers_planted_components():
    rng = np.random.default_rng(20261125)
    estimates = {c: [] for c in TRUE_SD}
    covered = {c: 0 for c in ("question", "answer", "judge_x_question", "residual")}
    reps = 40
    for _ in range(reps):
        y, clusters = simulate(rng)
        df = va.decompose(y, clusters, n_boot=200).set_index("component")
        for c in TRUE_SD:
            estimates[c].append(df.loc[c, "variance"])
        for c in covered:
            covered[c] += df.loc[c, "ci_low"] <= TRUE_SD[c] ** 2 <= df.loc[c, "ci_high"]
    for c, values in estimates.items():   # ANOVA is unbiased; judge/model rest on 4/6 values: looser
        tolerance = 0.45 if c in ("judge", "model") else 0.12
        assert np.mean(values) == pytest.approx(TRUE_SD[c] ** 2, rel=tolerance), c
    for c, hits in covered.items():       # the components the question bootstrap speaks for
        assert hits / reps >= 0.85, (c, hits)


def test_raw_components_of_a_noise_free_array():
    """Only a judge offset and a question effect: every other component is 0 and shares add to 1."""
    judge = np.array([0.0, 1.0, 3.0])[:, None, None]
    question = np.arange(10.0)[None, None, :]
    y = judge + question + np.zeros((3, 4, 10))
    df = va.decompose(y, np.arange(10), n_boot=50).set_index("component")
    assert df.loc["judge", "variance"] == pytest.approx(np.var([0, 1, 3], ddof=1))
    assert df.loc["question", "variance"] == pytest.approx(np.var(np.arange(10.0), ddof=1))
    for c in ("model", "answer", "judge_x_model", "judge_x_question", "residual", "sample"):
        assert df.loc[c, "variance"] == pytest.approx(0, abs=1e-12)
    assert df["share"].sum() == pytest.approx(1)


def test_sample_noise_is_split_from_the_residual():
    rng = np.random.default_rng(4)
    y, clusters = simulate(rng, questions=60)
    # five repeat scores per item with sd 1.0: their mean carries 1/5 of it into the residual
    noisy = y + rng.normal(0, 1.0, (5,) + y.shape).mean(0)
    df = va.decompose(noisy, clusters, sample_var=1.0, samples_per_item=5, n_boot=50).set_index("component")
    assert df.loc["sample", "variance"] == 1.0
    assert df.loc["residual", "variance"] == pytest.approx(TRUE_SD["residual"] ** 2, rel=0.2)


def test_sample_and_cli(sample_store, capsys):
    df = va.variance_decomposition(sample_store, JA_JUDGES, bench="ja_mt_bench", n_boot=200)
    assert df["component"].tolist() == list(va.COMPONENTS)
    assert df.attrs["n_prompts"] == 160 and df.attrs["n_questions"] == 80 and df.attrs["n_models"] == 2
    assert df["share"].sum() == pytest.approx(1)
    assert df.set_index("component").loc["sample", "variance"] == 0    # one judgment per item in the JA files
    db = str(sample_store.path)
    sample_store.close()
    assert main(["variance", "--db", db, "--judges", ",".join(JA_JUDGES), "--bench", "ja_mt_bench",
                 "--boot", "200", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["component"] for r in rows] == list(va.COMPONENTS)
    for r, expected in zip(rows, df.itertuples()):
        assert r["variance"] == pytest.approx(expected.variance) and r["share"] == pytest.approx(expected.share)
        assert set(r) >= {"component", "variance", "share", "ci_low", "ci_high"}


def test_one_judge_with_five_samples_on_swallow(sample_store):
    """Swallow's bench has one judge and five samples per item: the sample part is the pooled spread of the five
    scores, the judge parts are not separable (0, with a note saying the answer part holds them)."""
    df = va.variance_decomposition(sample_store, ["gpt-4o-2024-08-06"], bench="japanese_mt_bench", n_boot=200)
    parts = df.set_index("component")
    with sample_store.read() as cur:
        ss, dof = cur.execute("SELECT sum((n_valid - 1) * score_std ^ 2), sum(n_valid - 1) FROM item_scores "
                              "WHERE bench = 'japanese_mt_bench' AND n_valid > 1").fetchone()
    assert parts.loc["sample", "variance"] == pytest.approx(ss / dof) and ss > 0
    assert (parts.loc[["judge", "judge_x_model", "judge_x_question", "residual"], "variance"] == 0).all()
    assert df.attrs["n_models"] == 4 and df.attrs["note"].startswith("One judge:")
    assert df["share"].sum() == pytest.approx(1)


def test_one_judge_recovers_model_and_question():
    rng = np.random.default_rng(9)
    est = {"model": [], "question": [], "answer": []}
    for _ in range(40):
        y, clusters = simulate(rng, judges=1, models=8)
        df = va.decompose(y, clusters, n_boot=50).set_index("component")
        for c in est:
            est[c].append(df.loc[c, "variance"])
    s = TRUE_SD
    assert np.mean(est["question"]) == pytest.approx(s["question"] ** 2 + s["judge_x_question"] ** 2, rel=0.12)
    assert np.mean(est["answer"]) == pytest.approx(s["answer"] ** 2 + s["residual"] ** 2,
                                                   rel=0.12)
    assert np.mean(est["model"]) == pytest.approx(s["model"] ** 2 + s["judge_x_model"] ** 2, rel=0.45)
