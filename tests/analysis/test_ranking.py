"""Per-judge ranks with intervals, ties with the leader, rank flips and the minimum detectable difference."""
from __future__ import annotations

import math

import numpy as np
import pytest

from lib.analysis import ranking as rk
from lib.analysis.deltas import cluster_t


def simulate_board(rng, true_means, questions=80, turns=2, question_sd=1.0, noise_sd=1.5):
    q = rng.normal(0, question_sd, (questions, 1, 1))
    scores = np.asarray(true_means)[None, :, None] + q + rng.normal(0, noise_sd, (questions, len(true_means), turns))
    return scores.sum(-1), np.full((questions, len(true_means)), float(turns))


def test_ranks_are_one_plus_how_many_are_higher_with_ties_and_nan_last():
    """The ranks (by sorting) are what comparing every model with every other gives (the rule they replaced): ties
    share the best rank, a model without questions (NaN) ranks after every other; the bootstrap's rank intervals
    too."""
    from lib.analysis.agreement_ci import seeded_cluster_weights

    def pairwise(means):
        filled = np.where(np.isnan(means), -np.inf, means)
        return (filled[..., None, :] > filled[..., :, None]).sum(-1) + 1

    rng = np.random.default_rng(5)
    totals = rng.integers(8, 21, size=(30, 40)).astype(float)   # whole totals over 2 items: many ties
    counts = np.full(totals.shape, 2.0)
    totals[:, [3, 17]] = counts[:, [3, 17]] = 0                  # two models without a question: NaN means
    totals[:, 5] = totals[:, 6]                                  # and two models tied throughout
    res = rk.board_ranks(totals, counts, n_boot=300)
    with np.errstate(invalid="ignore"):  # 0 / 0: the two models without a question
        means = totals.sum(0) / counts.sum(0)
    assert res["rank"].tolist() == pairwise(means).tolist()
    assert res["rank"][5] == res["rank"][6] and res["rank"][3] == res["rank"][17] == 39
    with np.errstate(invalid="ignore", divide="ignore"):
        w = seeded_cluster_weights(30, 300, 0)
        boot = pairwise((w @ totals) / (w @ counts))
    assert res["rank_low"].tolist() == np.quantile(boot, 0.025, axis=0, method="lower").tolist()
    assert res["rank_high"].tolist() == np.quantile(boot, 0.975, axis=0, method="higher").tolist()


def test_ranks_ties_and_intervals_on_a_planted_board():
    rng = np.random.default_rng(3)
    true = [7.0, 7.0, 6.0, 4.0]          # two co-leaders, one a point behind, one far behind
    hold, tied_equal, tied_far = 0, 0, 0
    reps = 60
    for _ in range(reps):
        totals, counts = simulate_board(rng, true)
        res = rk.board_ranks(totals, counts, n_boot=300)
        leader = res["leader"]
        assert leader in (0, 1) and res["tied"][leader]
        other = 1 - leader
        tied_equal += bool(res["tied"][other])
        tied_far += bool(res["tied"][3])
        hold += int(res["rank_low"][3] <= 4 <= res["rank_high"][3])
    assert tied_equal / reps >= 0.85        # a model equal to the leader is tied (winner's curse makes it < 95%)
    assert tied_far == 0                     # three points behind is never tied
    assert hold == reps


def test_board_ranks_agree_with_means_and_the_compare_test():
    totals = np.array([[16.0, 14, 10], [18, 12, 11], [15, 15, 12], [17, 13, 9]])
    counts = np.full(totals.shape, 2.0)
    res = rk.board_ranks(totals, counts, n_boot=200)
    assert res["mean"].tolist() == pytest.approx((totals.sum(0) / 8).tolist())
    assert res["rank"].tolist() == [1, 2, 3] and res["leader"] == 0
    d = totals[:, 0] / 2 - totals[:, 1] / 2
    ref = cluster_t(d[None, :], np.ones((1, 4)))
    assert res["diff"][1] == pytest.approx(ref["delta"][0])
    assert res["diff_ci_low"][1] == pytest.approx(ref["ci_low"][0])
    assert math.isnan(res["diff_ci_low"][0])


def test_minimum_detectable_difference_has_its_power():
    """A true difference equal to ``detectable`` is found significant about 80% of the time by the t test on
    question deltas (simulation, 2,000 comparisons); one equal to ``noise`` about half the time."""
    rng = np.random.default_rng(11)
    g, sd = 80, 1.3
    se = sd / math.sqrt(g)
    mde = rk.minimum_detectable_difference(g, se)
    assert mde["noise"] < mde["detectable"]
    for shift, expected in ((mde["detectable"], 0.80), (mde["noise"], 0.50)):
        d = rng.normal(shift, sd, (2000, g))
        res = cluster_t(d, np.ones_like(d))
        assert (res["p_value"] < 0.05).mean() == pytest.approx(expected, abs=0.035)
    assert rk.mde_sentence(80, se).startswith("With 80 questions a difference under 0.29 cannot be told from noise")


def test_rankings_on_the_sample(sample_store):
    df = rk.judge_rankings(sample_store, n_boot=300)
    ja = df[df["bench"] == "ja_mt_bench"]
    assert set(ja["judge"]) == {"gpt-4o", "gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14"}
    top = ja[ja["rank"] == 1]
    assert set(top["model"]) == {"shisa-ai/shisa-v2-llama3.3-70b"} and top["tied_with_leader"].all()
    assert not ja["rank_flip"].any()
    wide = rk.side_by_side(df, "ja_mt_bench")
    assert wide.iloc[0]["model"] == "shisa-ai/shisa-v2-llama3.3-70b" and wide.iloc[0]["gpt-4o"].endswith("*")
    sw = df[df["bench"] == "japanese_mt_bench"].set_index("model")
    means = sw["mean"].sort_values(ascending=False)
    assert sw.loc[means.index, "rank"].tolist() == [1, 2, 3, 4]


def test_cli_ranks_json(sample_store, capsys):
    import json

    from lib.cli import main

    db = str(sample_store.path)
    sample_store.close()
    assert main(["ranks", "--db", db, "--bench", "japanese_mt_bench", "--boot", "200", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["rank"] for r in rows] == [1, 2, 3, 4]
    assert rows[0]["tied_with_leader"] is True and all(r["rank_low"] <= r["rank"] <= r["rank_high"] for r in rows)
