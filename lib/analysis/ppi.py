"""Judge vs human on a random sample, and a judge-corrected model mean (prediction-powered inference).

Why a random sample
-------------------
The review queue of the largest disagreements is the best place to find a judge's mistakes and the worst
place to measure its bias: items picked *because* judges disagree are not typical items. Only a
uniformly random sample of items lets "human minus judge" on the sample stand for all items. The random
sample is a fixed pseudo-random order of a bench's judged items (a hash of the item and a seed, so the
same for every analyst and every run); the analyst scores its first n items. Verdicts on items outside
that sample (from the disagreement queue) are left out here.

The corrected mean (Angelopoulos et al. 2023, "Prediction-powered inference")
----------------------------------------------------------------------------
For a model, the judge's mean over all N of its items, plus the mean of (human - judge) over the n
sampled items the analyst scored::

    theta = mean_all(judge) + mean_sample(human - judge)

It estimates the mean the *human* would give over all items, with the judge's bias removed. Its
variance is ``var(judge mean over all items) + var(mean rectifier over the sample)``, each cluster-robust
over questions (both turns of a question move together), and the 95% interval is
``theta +- t_df * se`` with Welch-Satterthwaite degrees of freedom from the two parts (g - 1 for the
sample's g questions, G - 1 for all G). ``halve_with``: how many verdicts in all would
halve the interval's width, at the same variances (the judge-over-all-items part does not shrink with
more verdicts; when it alone is over a quarter of the variance, halving is out of reach).
Coverage of the interval is checked by simulation (``simulate_coverage``, ``tests/analysis/test_ppi.py``).
"""
from __future__ import annotations

import hashlib
import math

import numpy as np
import pandas as pd

from lib import harness as H
from lib.analysis.agreement import item_matrix
from lib.analysis.agreement_ci import pairwise_agreement_ci
from lib.store import Store

SAMPLE_SEED = "judgelens-random-sample-v1"
PPI_COLUMNS = ["judge", "model", "n_items", "n_sampled", "n_questions_sampled", "judge_mean", "correction",
               "corrected_mean", "ci_low", "ci_high", "human_mean_sampled", "halve_with"]
PPI_NOTE = (
    "corrected_mean = the judge's mean over all the model's items + the mean of (human - judge) on the randomly "
    "sampled items you scored (prediction-powered inference): what you would give on average, with the judge's "
    "bias taken out. 95% interval: cluster-robust over questions, t with Welch-Satterthwaite degrees of freedom. halve_with: verdicts in all (on this model's sampled items) that would halve the interval's width; "
    "empty when the judge's own spread alone keeps it wider. Only verdicts on the random sample count: items "
    "picked because judges disagree are not typical items.")


def _order_key(bench: str, question_id: str, model: str, turn: int) -> str:
    return hashlib.sha256(f"{SAMPLE_SEED}\x1f{bench}\x1f{question_id}\x1f{model}\x1f{turn}".encode()).hexdigest()


def random_sample(store: Store, human_judge: str | None, *, bench: str, n: int = 40) -> pd.DataFrame:
    """The first ``n`` items of the bench's fixed random order (items any non-human judge scored), with
    ``decided`` = ``human_judge`` (``human:<author>``) has a score for it. Columns: rank, bench, question_id,
    model, turn, category, decided."""
    with store.read() as cur:
        items = cur.execute(f"""
            SELECT DISTINCT i.bench, i.question_id, i.model, i.turn, q.category
            FROM item_scores i LEFT JOIN current_questions q ON q.bench = i.bench AND q.question_id = i.question_id
            WHERE i.bench = $b AND {H.sql_is_not("i.harness", [H.HUMAN])} AND i.score IS NOT NULL""",
                            {"b": bench}).df()
        scored = cur.execute("SELECT DISTINCT question_id, model, turn FROM item_scores WHERE bench = $b AND judge = $j "
                             "AND score IS NOT NULL", {"b": bench, "j": human_judge or ""}).fetchall()
    if items.empty:
        return pd.DataFrame(columns=["rank", "bench", "question_id", "model", "turn", "category", "decided"])
    items["key"] = [_order_key(b, q, m, int(t)) for b, q, m, t in
                    zip(items["bench"], items["question_id"], items["model"], items["turn"])]
    top = items.sort_values("key").head(int(n)).drop(columns="key").reset_index(drop=True)
    done = {(q, m, int(t)) for q, m, t in scored}
    top.insert(0, "rank", range(1, len(top) + 1))
    top["turn"] = top["turn"].astype(int)
    top["decided"] = [(q, m, int(t)) in done for q, m, t in zip(top["question_id"], top["model"], top["turn"])]
    return top


def bench_judges(store: Store, *, bench: str) -> list[str]:
    """The bench's LLM judges (not human:<author>), sorted."""
    with store.read() as cur:
        return [r[0] for r in cur.execute(f"SELECT DISTINCT judge FROM item_scores WHERE bench = $b AND "
                                          f"{H.sql_is_not('harness', [H.HUMAN])} AND score IS NOT NULL ORDER BY 1",
                                          {"b": bench}).fetchall()]


def _cluster_var_of_mean(values: np.ndarray, clusters: np.ndarray) -> tuple[float, int]:
    """Cluster-robust variance of an item mean (factor g/(g-1)), and the number of clusters g."""
    labels, index = np.unique(clusters, return_inverse=True)
    g = len(labels)
    if g < 2:
        return math.nan, g
    n = len(values)
    centred = values - values.mean()
    sums = np.bincount(index, weights=centred, minlength=g)
    return float(g / (g - 1) * (sums ** 2).sum() / n ** 2), g


def corrected_mean(judge_all, clusters_all, human_all, alpha: float = 0.05) -> dict:
    """The prediction-powered mean and its interval (see the module docstring). ``judge_all``: the judge's score
    of every item; ``clusters_all``: each item's question; ``human_all``: the human's score, NaN where the item
    was not sampled or not scored."""
    from scipy import stats

    judge_all = np.asarray(judge_all, float)
    human_all = np.asarray(human_all, float)
    clusters_all = np.asarray(clusters_all)
    labelled = np.isfinite(human_all)
    n_all, n_lab = len(judge_all), int(labelled.sum())
    rect = human_all[labelled] - judge_all[labelled]
    out = {"n_items": n_all, "n_sampled": n_lab, "judge_mean": float(judge_all.mean()),
           "correction": float(rect.mean()) if n_lab else math.nan}
    out["corrected_mean"] = out["judge_mean"] + out["correction"]
    # theta is the mean over all items of z = judge + (N / n) * [sampled] * (human - judge): its cluster-robust
    # variance carries both parts and their covariance (the sampled items are among all items)
    z = judge_all.copy()
    if n_lab:
        z[labelled] += n_all / n_lab * rect
    v_theta, g_all = _cluster_var_of_mean(z, clusters_all)
    v_all, _ = _cluster_var_of_mean(judge_all, clusters_all)
    v_rect, g = _cluster_var_of_mean(rect, clusters_all[labelled]) if n_lab else (math.nan, 0)
    out["n_questions_sampled"] = g
    half = math.nan
    if g >= 2 and math.isfinite(v_theta):
        parts = v_all ** 2 / (g_all - 1) + v_rect ** 2 / (g - 1)     # Welch-Satterthwaite degrees of freedom
        dof = (v_all + v_rect) ** 2 / parts if parts > 0 else g - 1
        half = stats.t.ppf(1 - alpha / 2, dof) * math.sqrt(v_theta)
    out["ci_low"], out["ci_high"] = out["corrected_mean"] - half, out["corrected_mean"] + half
    target = (v_all + v_rect) / 4 - v_all              # what the rectifier's variance must fall to
    out["halve_with"] = (int(math.ceil(n_lab * v_rect / target)) if math.isfinite(v_rect) and target > 0
                         else None)
    return out


def judge_vs_human(store: Store, judges: list[str], human_judge: str, *, bench: str, n: int = 40,
                   n_boot: int = 2000) -> dict:
    """Per judge, on the random sample's items the human scored: ``agreement`` (the agreement table with
    intervals, judge vs human) and ``corrected`` (``PPI_COLUMNS``, one row per judge and model)."""
    sample = random_sample(store, human_judge, bench=bench, n=n)
    decided = sample[sample["decided"]]
    matrix = item_matrix(store, [*judges, human_judge], bench=bench)
    keys = ["bench", "question_id", "model", "turn"]
    in_sample = matrix.merge(decided[keys], on=keys, how="inner")
    frames, rows = [], []
    for judge in judges:
        both = in_sample.dropna(subset=[judge, human_judge])
        if len(both) >= 2:
            frames.append(pairwise_agreement_ci(both, [judge, human_judge], n_boot=n_boot))
        sampled = set(map(tuple, both[keys].astype(str).to_numpy()))
        for model, part in matrix.dropna(subset=[judge]).groupby("model", sort=True):
            picked = np.array([tuple(k) in sampled for k in part[keys].astype(str).to_numpy()], dtype=bool)
            human_all = np.where(picked, part[human_judge].to_numpy(float), np.nan)
            res = corrected_mean(part[judge].to_numpy(float), part["question_id"].to_numpy(), human_all)
            rows.append({"judge": judge, "model": model, **res,
                         "human_mean_sampled": float(np.nanmean(human_all)) if picked.any() else math.nan})
    agreement = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return {"sample": sample, "agreement": agreement,
            "corrected": pd.DataFrame(rows, columns=PPI_COLUMNS)}


def simulate_coverage(replicates: int, *, questions: int = 80, models: int = 1, sampled: int = 40,
                      bias: float = -0.6, seed: int = 0) -> float:
    """Share of replicates whose corrected-mean interval holds the planted human mean. Items: ``questions`` x 2
    turns; human score = question effect + turn noise (planted mean 6); the judge = human + ``bias`` + a
    judge-question leniency + noise, rounded; ``sampled`` random items get a human verdict."""
    rng = np.random.default_rng(seed)
    hits = 0
    for _ in range(replicates):
        q = rng.normal(0, 1.2, (questions, 1))
        human_latent = 6.0 + q + rng.normal(0, 1.0, (questions, 2))
        judge = np.round(human_latent + bias + rng.normal(0, 0.5, (questions, 1)) + rng.normal(0, 0.8, (questions, 2)))
        human = np.round(human_latent + rng.normal(0, 0.3, (questions, 2)))
        clusters = np.repeat(np.arange(questions), 2)
        # the planted human mean: the population mean of the rounded human score is 6 up to rounding symmetry
        human_all = np.full(questions * 2, np.nan)
        pick = rng.choice(questions * 2, size=sampled, replace=False)
        human_all[pick] = human.ravel()[pick]
        res = corrected_mean(judge.ravel(), clusters, human_all)
        hits += res["ci_low"] <= 6.0 <= res["ci_high"]
    return hits / replicates
