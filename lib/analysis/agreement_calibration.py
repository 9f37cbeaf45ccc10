"""Simulated judge pairs with planted agreement, to check the intervals of ``lib.analysis.agreement_ci``.

The design (MT-Bench-like): G questions, 2 models, 2 turns (4 items per question). An item's latent
quality is a question effect N(0, 1.3^2) (shared by both turns and both models) + a model effect
(-0.25 / +0.25) + item noise N(0, 0.9^2). Each judge scores round(offset + slope * quality + its own
question leniency + noise), clipped to 1-10:

- judge A: offset 6.0, slope 1.4, leniency N(0, 0.6^2) per question (shared by the question's 4 items),
  noise N(0, 0.8^2);
- judge B: offset 5.6, slope 1.2, leniency N(0, 0.7^2), noise N(0, 1.0^2).

The judges' question leniencies make items of one question move together *in their agreement*, which
is what an item-level bootstrap misses. The planted truth of each statistic is its value on a
population of ``POPULATION`` questions (the limit the estimators converge to). Each replicate draws G
questions, computes every statistic's interval exactly as the page does (``agreement_ci.replicate_stats``
and ``agreement_ci.interval``) and checks whether it holds the truth.
"""
from __future__ import annotations

import numpy as np

from lib.analysis.agreement_ci import (CI_STATS, METHODS, cluster_weights, interval, jackknife_weights,
                                       replicate_stats, table_stats)
from lib.analysis.reliability import METRICS, alpha_from_coincidences

ALPHAS = tuple(f"alpha_{m}" for m in METRICS)   # Krippendorff's alpha of the two judges, same replicates
STATS = CI_STATS + ALPHAS

SCALE = np.arange(1.0, 11.0)
ITEMS_PER_QUESTION = 4      # 2 models x 2 turns
POPULATION = 400_000


def simulate_tables(n_questions: int, rng: np.random.Generator, replicates: int = 1) -> np.ndarray:
    """(replicates, G, 10, 10) per-question joint tables of integer 1-10 scores of judges A and B."""
    shape = (replicates, n_questions, ITEMS_PER_QUESTION)
    question = rng.normal(0, 1.3, size=shape[:2] + (1,))
    model = np.tile([-0.25, -0.25, 0.25, 0.25], (1, 1, 1))
    quality = question + model + rng.normal(0, 0.9, size=shape)

    def judge(offset, slope, lenient, noise):
        latent = offset + slope * quality + rng.normal(0, lenient, size=shape[:2] + (1,)) + rng.normal(0, noise, shape)
        return np.clip(np.round(latent), 1, 10).astype(int)

    a, b = judge(6.0, 1.4, 0.6, 0.8), judge(5.6, 1.2, 0.7, 1.0)
    cell = (a - 1) * 10 + (b - 1)                                          # (R, G, 4)
    base = (np.arange(replicates)[:, None, None] * n_questions + np.arange(n_questions)[None, :, None]) * 100
    flat = np.bincount((base + cell).ravel(), minlength=replicates * n_questions * 100)
    return flat.reshape(replicates, n_questions, 10, 10).astype(float)


def alphas(tables: np.ndarray) -> dict[str, np.ndarray]:
    """Krippendorff's alpha of joint tables (..., 10, 10): two raters, each item a pairable unit, so the
    coincidence matrix is the table plus its transpose."""
    o = tables + np.swapaxes(tables, -1, -2)
    return {f"alpha_{m}": alpha_from_coincidences(o, SCALE, m) for m in METRICS}


def planted_truth(seed: int = 12345, population: int = POPULATION) -> dict[str, float]:
    """Each statistic on a population of ``population`` questions (what the estimators converge to)."""
    rng = np.random.default_rng(seed)
    total = np.zeros((10, 10))
    for start in range(0, population, 50_000):
        total += simulate_tables(min(50_000, population - start), rng)[0].sum(0)
    return {s: float(v) for s, v in (table_stats(total, SCALE, SCALE) | alphas(total)).items()}


def calibrate(n_questions: int, replicates: int, seed: int = 0, *, n_boot: int = 1000, alpha: float = 0.05,
              truth: dict[str, float] | None = None, item_level: bool = False) -> list[dict]:
    """One dict per (statistic, method): coverage (share of replicates whose interval holds the planted
    value), mean width, the share of replicates left without an interval, and below/above misses.

    ``item_level=True`` resamples *items* instead of questions (the wrong unit, for contrast)."""
    truth = truth or planted_truth()
    rng = np.random.default_rng(seed)
    hits = {(s, m): np.zeros(4) for s in STATS for m in METHODS}   # covered, width sum, below, above
    missing = {(s, m): 0 for s in STATS for m in METHODS}
    for _ in range(replicates):
        tables = simulate_tables(n_questions, rng)[0]
        if item_level:   # one cluster per item: split each question's table into its items
            cells = np.repeat(np.arange(100), tables.reshape(n_questions, 100).sum(0).astype(int))
            tables = np.zeros((len(cells), 100))
            tables[np.arange(len(cells)), cells] = 1
            tables = tables.reshape(-1, 10, 10)
        g = tables.shape[0]
        point = table_stats(tables.sum(0), SCALE, SCALE) | alphas(tables.sum(0))
        weights = cluster_weights(g, n_boot, rng)
        flat = tables.reshape(g, 100)
        boot = replicate_stats(tables, weights, SCALE, SCALE) | alphas((weights @ flat).reshape(-1, 10, 10))
        jack = replicate_stats(tables, jackknife_weights(g), SCALE, SCALE) | alphas(
            (jackknife_weights(g) @ flat).reshape(-1, 10, 10))
        for s in STATS:
            for m in METHODS:
                lo, hi = interval(point[s], boot[s], jack[s], alpha, m, g)
                if not (np.isfinite(lo) and np.isfinite(hi)):
                    missing[(s, m)] += 1
                    continue
                t = truth[s]
                hits[(s, m)] += [lo <= t <= hi, hi - lo, t < lo, t > hi]
    out = []
    for (s, m), (covered, width, below, above) in hits.items():
        done = replicates - missing[(s, m)]
        out.append({"statistic": s, "method": m, "n_questions": n_questions, "replicates": replicates,
                    "truth": truth[s], "coverage": covered / done if done else float("nan"),
                    "mean_width": width / done if done else float("nan"),
                    "truth_below": below / done if done else float("nan"),
                    "truth_above": above / done if done else float("nan"),
                    "no_interval": missing[(s, m)] / replicates})
    return out
