"""Does the leaderboard depend on the judge? Per-judge ranks with intervals, ties with the leader, rank flips, and
the minimum detectable difference of a comparison.

A leaderboard is one (harness, bench, judge): each model's mean item score (``item_scores``; both turns). The
unit of evidence is the question (as in ``lib.analysis.deltas``):

- **rank interval**: a cluster bootstrap over the leaderboard's questions (every model's items of a drawn
  question come along), ranks per replicate (1 = highest mean, ties share the lower rank), the 2.5 and
  97.5 % quantiles of each model's rank;
- **tied with the leader**: the leader (highest mean) minus the model, per question (mean over the turns
  both scored), has a Student-t 95 % interval that includes 0 (``deltas.cluster_t``, the Compare page's
  calibrated test; no multiplicity correction, so "tied" is the cautious reading);
- **rank flip**: on the same bench another judge ranks the model differently (point ranks).

``minimum_detectable_difference``: for a Compare row with G questions, the half-width of its 95 %
interval is the smallest delta that can be told from noise; the delta detected with 80 % power is
``(t_{G-1, 0.975} + t_{G-1, 0.80}) * se``.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lib.analysis.agreement_ci import seeded_cluster_weights
from lib.analysis.deltas import cluster_t
from lib.store import Store

RANK_COLUMNS = ["harness", "bench", "judge", "model", "mean", "n_questions", "rank", "rank_low", "rank_high",
                "leader", "diff_to_leader", "diff_ci_low", "diff_ci_high", "tied_with_leader", "rank_flip"]
RANK_NOTE = (
    "rank: 1 = highest mean item score under this judge; rank_low-rank_high: 95% interval of the rank (bootstrap "
    "over questions). tied_with_leader: the leader-minus-model difference, question by question, has a 95% t "
    "interval that includes 0 (the Compare page's test; diff_ci_low/high). rank_flip: another judge on the same "
    "bench ranks this model differently.")


def question_means(store: Store, bench: str | None = None) -> pd.DataFrame:
    """Per (harness, bench, judge, model, question): the sum and count of usable item scores."""
    where, params = "score IS NOT NULL", {}
    if bench is not None:
        where += " AND bench = $bench"
        params["bench"] = bench
    with store.read() as cur:
        return cur.execute(f"""
            SELECT harness, bench, judge, model, question_id, sum(score) AS total, count(*) AS items
            FROM item_scores WHERE {where} GROUP BY ALL""", params).df()


def _ranks(means: np.ndarray) -> np.ndarray:
    """Competition ranks along the last axis, highest first (NaN ranked last): 1 + how many are higher, by sorting
    (scipy's "min" ranks of the negated means). Comparing every model with every other made a (2,000, M, M)
    array: 12.8 CPU-s per leaderboard of 1,250 models, a minute for the Overview's ranks at 1M judgments; 0.5 now."""
    from scipy.stats import rankdata

    filled = np.where(np.isnan(means), -np.inf, means)
    return rankdata(-filled, method="min", axis=-1).astype(np.int64)


def board_ranks(totals: np.ndarray, counts: np.ndarray, *, n_boot: int = 2000, alpha: float = 0.05,
                seed: int = 0) -> dict[str, np.ndarray]:
    """One leaderboard from question x model ``totals`` and ``counts`` (G, M): mean, rank, rank_low, rank_high,
    and against the leader: diff (leader - model, item-weighted per question), its t interval and tied."""
    totals, counts = np.asarray(totals, float), np.asarray(counts, float)
    g, m = totals.shape
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = totals.sum(0) / counts.sum(0)
        rank = _ranks(mean)
        if g >= 2:
            w = seeded_cluster_weights(g, n_boot, seed)
            boot = _ranks((w @ totals) / (w @ counts))
            rank_low = np.quantile(boot, alpha / 2, axis=0, method="lower")
            rank_high = np.quantile(boot, 1 - alpha / 2, axis=0, method="higher")
        else:
            rank_low = rank_high = rank.astype(float)
        leader = int(np.nanargmax(mean)) if np.isfinite(mean).any() else 0
        qmean = totals / counts                                     # per question, the model's mean over turns
        d = qmean[:, [leader]] - qmean                              # (G, M), NaN where either lacks the question
        both = np.isfinite(d)
        res = cluster_t(np.where(both, d, 0.0).T, both.T.astype(float), alpha)
    tied = (res["ci_low"] <= 0) & (res["ci_high"] >= 0)
    tied[leader] = True
    for key in ("ci_low", "ci_high"):
        res[key][leader] = np.nan      # the leader against itself: no interval
    return {"mean": mean, "rank": rank, "rank_low": rank_low, "rank_high": rank_high, "leader": leader,
            "diff": res["delta"], "diff_ci_low": res["ci_low"], "diff_ci_high": res["ci_high"],
            "n_questions": (counts > 0).sum(0), "tied": tied}


def judge_rankings(store: Store, *, bench: str | None = None, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Every (harness, bench, judge) leaderboard with rank intervals, ties with the leader and rank flips;
    columns ``RANK_COLUMNS``, ordered by bench, harness, judge, rank."""
    data = question_means(store, bench)
    frames = []
    for (harness, b, judge), part in data.groupby(["harness", "bench", "judge"], sort=True):
        totals = part.pivot_table(index="question_id", columns="model", values="total", aggfunc="sum")
        counts = part.pivot_table(index="question_id", columns="model", values="items", aggfunc="sum")
        models = list(totals.columns)
        res = board_ranks(totals.fillna(0).to_numpy(), counts.fillna(0).to_numpy(), n_boot=n_boot, seed=seed)
        frames.append(pd.DataFrame({
            "harness": harness, "bench": b, "judge": judge, "model": models, "mean": res["mean"],
            "n_questions": res["n_questions"], "rank": res["rank"], "rank_low": res["rank_low"].astype(int),
            "rank_high": res["rank_high"].astype(int), "leader": models[res["leader"]],
            "diff_to_leader": res["diff"], "diff_ci_low": res["diff_ci_low"], "diff_ci_high": res["diff_ci_high"],
            "tied_with_leader": res["tied"]}))
    if not frames:
        return pd.DataFrame(columns=RANK_COLUMNS)
    df = pd.concat(frames, ignore_index=True)
    spread = df.groupby(["bench", "model"])["rank"].transform(lambda r: r.nunique() > 1)
    df["rank_flip"] = spread.astype(bool)
    return df.sort_values(["bench", "harness", "judge", "rank", "model"], ignore_index=True)[RANK_COLUMNS]


def side_by_side(rankings: pd.DataFrame, bench: str) -> pd.DataFrame:
    """One row per model of ``bench``, one column per judge: "rank [low-high]" (a "*" marks a tie with that
    judge's leader), then ``rank_flip``. Rows ordered by the mean rank over judges."""
    part = rankings[rankings["bench"] == bench]
    if part.empty:
        return pd.DataFrame(columns=["model", "rank_flip"])
    part = part.assign(cell=[f"{r} [{lo}-{hi}]{' *' if t else ''}" for r, lo, hi, t in
                             zip(part["rank"], part["rank_low"], part["rank_high"], part["tied_with_leader"])],
                       column=part["judge"] + np.where(part["harness"].nunique() > 1, " (" + part["harness"] + ")", ""))
    wide = part.pivot_table(index="model", columns="column", values="cell", aggfunc="first")
    order = part.groupby("model")["rank"].mean().sort_values().index
    wide = wide.loc[order].reset_index()
    wide.columns.name = None
    wide["rank_flip"] = wide["model"].map(part.groupby("model")["rank_flip"].first())
    return wide


def minimum_detectable_difference(n_questions: int, se: float, alpha: float = 0.05, power: float = 0.80) -> dict:
    """For a comparison on ``n_questions`` questions whose delta has standard error ``se``: ``noise`` (the half-width
    of the 95% interval: smaller deltas cannot be told from noise) and ``detectable`` (the true delta found
    significant with probability ``power``, two-sided t with n_questions - 1 degrees of freedom)."""
    from scipy import stats

    if n_questions < 2 or not math.isfinite(se):
        return {"noise": math.nan, "detectable": math.nan}
    dof = n_questions - 1
    crit = stats.t.ppf(1 - alpha / 2, dof)
    return {"noise": float(crit * se), "detectable": float((crit + stats.t.ppf(power, dof)) * se)}


def mde_sentence(n_questions: int, se: float) -> str:
    res = minimum_detectable_difference(n_questions, se)
    if not math.isfinite(res["noise"]):
        return ""
    return (f"With {n_questions} questions a difference under {res['noise']:.2f} cannot be told from noise; a true "
            f"difference of {res['detectable']:.2f} would be found 80% of the time.")
