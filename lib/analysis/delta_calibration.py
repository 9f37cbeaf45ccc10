"""Simulated MT-Bench comparisons that check the Compare page's method (``lib.analysis.deltas``).

The design of issue 9: 80 questions in 8 categories of 10, 2 turns, integer 1-10 scores, a question
effect shared by both turns. Each replicate is one A-vs-B comparison; the rows of every level
(overall, turn, category, category x turn) are tested exactly as ``deltas.compare_pairs`` tests them
(``deltas.cluster_t`` on question totals, ``deltas.holm`` over the level's rows), vectorised over
replicates so thousands run in seconds. ``tests/analysis/test_deltas_calibration.py`` checks that a replicate
run through ``compare_pairs`` gives the same numbers.

Designs (``design=``):

- ``"delta"``: item delta = question effect + turn noise, each drawn from {-1, 0, 0, 0, +1}; B's score is
  an integer 3-7 and A = B + delta (so both stay in 1-10). ``shift`` adds a constant to every item delta
  of one category (the planted effect; +1.0 keeps A within 1-10).
- ``"scores"``: A and B score independently and exchangeably: round(quality + judge-question effect +
  noise) clipped to 1-10, quality an integer 3-8 per question, the judge-question effect N(0, 1) shared
  by both turns, noise N(0, 1). A null design with clipping, where the deltas are not the neat
  {-1, 0, +1} sums. ``shift`` adds to A's latent score before rounding and clipping, so the true delta
  of that category is not exactly ``shift``: coverage is then measured only where the true delta is 0.
"""
from __future__ import annotations

import numpy as np

from lib.analysis.deltas import cluster_t, holm

N_CATEGORIES, PER_CATEGORY, TURNS = 8, 10, 2
N_QUESTIONS = N_CATEGORIES * PER_CATEGORY
LEVELS = ("all", "turn", "category", "cell")
LEVEL_NAMES = {"all": "overall", "turn": "turn", "category": "category", "cell": "category x turn"}
_STEPS = np.array([-1, 0, 0, 0, 1])


def simulate_scores(replicates: int, rng: np.random.Generator, *, design: str = "delta", shift: float = 0.0,
                    shift_category: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Integer 1-10 scores ``(a, b)``, each shaped (replicates, 8 categories, 10 questions, 2 turns)."""
    shape = (replicates, N_CATEGORIES, PER_CATEGORY, TURNS)
    planted = np.zeros((1, N_CATEGORIES, 1, 1))
    planted[0, shift_category] = shift
    if design == "delta":
        u = rng.choice(_STEPS, size=shape[:3] + (1,))
        e = rng.choice(_STEPS, size=shape)
        b = rng.integers(3, 8, size=shape).astype(float)
        return b + u + e + planted, b
    if design == "scores":
        quality = rng.integers(3, 9, size=shape[:3] + (1,)).astype(float)

        def judge(extra):
            latent = quality + rng.normal(0, 1, size=shape[:3] + (1,)) + rng.normal(0, 1, size=shape) + extra
            return np.clip(np.round(latent), 1, 10)

        return judge(planted), judge(0.0)
    raise ValueError(f"unknown design {design!r}")


def level_tests(a: np.ndarray, b: np.ndarray, alpha: float = 0.05) -> dict[str, dict[str, np.ndarray]]:
    """Per level, arrays over (replicates, rows): delta, ci_low, ci_high, p_value, p_adjusted, significant.

    Rows: overall (1), turn (2: turn 1, 2), category (8), cell (16: category-major, then turn). Clusters
    are questions; each level is one Holm family, as on the Compare page.
    """
    d = a - b                                                 # (R, C, K, T)
    r = d.shape[0]
    sums = {
        "all": d.sum(axis=3).reshape(r, 1, N_QUESTIONS),
        "turn": np.moveaxis(d, 3, 1).reshape(r, TURNS, N_QUESTIONS),
        "category": d.sum(axis=3),                            # (R, C, K)
        "cell": np.moveaxis(d, 3, 2).reshape(r, N_CATEGORIES * TURNS, PER_CATEGORY),
    }
    items_per_question = {"all": TURNS, "turn": 1, "category": TURNS, "cell": 1}
    out = {}
    for level, s in sums.items():
        res = cluster_t(s, np.full(s.shape, items_per_question[level]), alpha)
        res["p_adjusted"] = holm(res["p_value"], axis=-1)
        res["significant"] = res["p_adjusted"] < alpha
        out[level] = res
    return out


def true_deltas(shift: float, shift_category: int = 0) -> dict[str, np.ndarray]:
    """The expected delta of every row under the ``"delta"`` design (the noise has mean 0)."""
    cat = np.zeros(N_CATEGORIES)
    cat[shift_category] = shift
    return {"all": np.array([cat.mean()]), "turn": np.full(TURNS, cat.mean()), "category": cat,
            "cell": np.repeat(cat, TURNS)}


def calibrate(replicates: int, seed: int = 0, *, design: str = "delta", shift: float = 1.0,
              shift_category: int = 0, alpha: float = 0.05, chunk: int = 2000) -> list[dict]:
    """One dict per level: family-wise rate of >= 1 significant row under the null, interval coverage
    under the null (every row; true delta 0) and under the shift (rows whose true delta is known), and
    power: under the shift, the share of replicates in which the planted category's row (cell level:
    either of its two cells; turn level: either turn; overall: the overall row) is significant after Holm,
    plus the share with a significant row elsewhere (a false positive next to a true effect)."""
    rng = np.random.default_rng(seed)
    acc = {lv: dict(fwer=0, cover_null=0, rows_null=0, cover_shift=0, rows_shift=0, power=0, other=0)
           for lv in LEVELS}
    truth = true_deltas(shift, shift_category)
    planted_rows = {"all": [0], "turn": [0, 1], "category": [shift_category],
                    "cell": [shift_category * TURNS, shift_category * TURNS + 1]}
    done = 0
    while done < replicates:
        n = min(chunk, replicates - done)
        null = level_tests(*simulate_scores(n, rng, design=design), alpha)
        shifted = level_tests(*simulate_scores(n, rng, design=design, shift=shift, shift_category=shift_category),
                              alpha)
        for lv in LEVELS:
            res, hit = null[lv], acc[lv]
            hit["fwer"] += int(res["significant"].any(axis=1).sum())
            hit["cover_null"] += int(((res["ci_low"] <= 0) & (0 <= res["ci_high"])).sum())
            hit["rows_null"] += res["ci_low"].size
            res = shifted[lv]
            if design == "delta":
                t = truth[lv][None, :]
                hit["cover_shift"] += int(((res["ci_low"] <= t) & (t <= res["ci_high"])).sum())
                hit["rows_shift"] += res["ci_low"].size
            rows = planted_rows[lv]
            hit["power"] += int(res["significant"][:, rows].any(axis=1).sum())
            others = np.ones(res["significant"].shape[1], bool)
            others[rows] = False
            hit["other"] += int(res["significant"][:, others].any(axis=1).sum()) if others.any() else 0
        done += n
    out = []
    for lv in LEVELS:
        hit = acc[lv]
        rows = {"all": 1, "turn": TURNS, "category": N_CATEGORIES, "cell": N_CATEGORIES * TURNS}[lv]
        out.append({
            "level": LEVEL_NAMES[lv], "rows": rows,
            "questions_per_row": PER_CATEGORY if lv in ("category", "cell") else N_QUESTIONS,
            "replicates": replicates,
            "fwer_null": hit["fwer"] / replicates,
            "coverage_null": hit["cover_null"] / hit["rows_null"],
            "coverage_shift": hit["cover_shift"] / hit["rows_shift"] if hit["rows_shift"] else float("nan"),
            "power_shift": hit["power"] / replicates,
            "other_rows_flagged": hit["other"] / replicates if lv in ("category", "cell") else float("nan"),
        })
    return out


def old_bootstrap_calibrate(replicates: int, seed: int = 0, *, n_boot: int = 2000, alpha: float = 0.05,
                            chunk: int = 10) -> list[dict]:
    """The method the Compare page used before issue 9, on the null ``"delta"`` design, for contrast:
    a percentile bootstrap of the item mean that redraws questions within each category (stratified),
    p = 2 * min(share of draws <= 0, share >= 0) floored at 1/n_boot, Holm per level. Returns the
    family-wise rate and coverage per level (``fwer_null``, ``coverage_null``)."""
    rng = np.random.default_rng(seed)
    hits = {lv: [0, 0, 0] for lv in LEVELS}                  # replicates with a flag, rows covering 0, rows
    done = 0
    while done < replicates:
        n = min(chunk, replicates - done)
        a, b = simulate_scores(n, rng)
        d = a - b                                             # (R, C, K, T)
        idx = rng.integers(0, PER_CATEGORY, size=(n, n_boot, N_CATEGORIES, PER_CATEGORY))
        rr = np.arange(n)[:, None, None, None]
        cc = np.arange(N_CATEGORIES)[None, None, :, None]
        drawn = d[rr, cc, idx]                                # (R, B, C, K, T): whole questions, both turns
        boots = {"all": drawn.mean(axis=(2, 3, 4))[..., None], "turn": drawn.mean(axis=(2, 3)),
                 "category": drawn.mean(axis=(3, 4)), "cell": drawn.mean(axis=3).reshape(n, n_boot, -1)}
        for lv, boot in boots.items():
            lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2], axis=1)
            p = 2 * np.minimum((boot <= 0).mean(axis=1), (boot >= 0).mean(axis=1))
            p = np.clip(p, 1 / n_boot, 1.0)
            flagged = (holm(p, axis=-1) < alpha).any(axis=-1)
            hits[lv][0] += int(flagged.sum())
            hits[lv][1] += int(((lo <= 0) & (0 <= hi)).sum())
            hits[lv][2] += lo.size
        done += n
    return [{"level": LEVEL_NAMES[lv], "replicates": replicates, "fwer_null": hits[lv][0] / replicates,
             "coverage_null": hits[lv][1] / hits[lv][2]} for lv in LEVELS]
