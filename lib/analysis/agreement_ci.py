"""95 % intervals on the judge-pair agreement statistics, by a cluster bootstrap over questions.

The unit
--------
Two turns of a question, every model's answer to it and Swallow's samples share the question: an easy
question makes both judges score high together. Resampling *items* would treat them as independent and
give intervals too narrow, so every bootstrap replicate draws *questions* (bench, question_id) with
replacement, G of G, and takes all of a drawn question's items of the pair along (once per draw).

How it is computed
------------------
Every statistic of ``lib.analysis.agreement`` (Pearson, Spearman, Kendall tau-b, quadratic-weighted
kappa, exact / +-1 agreement of the rounded ratings, mean difference, mean absolute difference) is a
function of the pair's *joint table*: how many items got score x from judge A and y from judge B. A
replicate is a vector of question counts w (multinomial, sum G); its joint table is ``w @ T`` where
``T[g]`` is question g's own table. So 2,000 replicates are one matrix product and a few vectorised
reductions (ties, midranks for Spearman, concordant pairs for Kendall by 2-D cumulative sums), however
many items the questions hold. With w = 1 the table is the data's and the numbers equal
``agreement.pairwise_agreement`` (a test checks it; another checks a replicate against scipy on the
expanded rows).

The interval
------------
``method="expanded"`` (default; Hesterberg 2015): the percentile interval at the wider quantiles
Phi(+-sqrt(G/(G-1)) t_{G-1, 0.975}), which undoes the bootstrap's too-small spread with few questions and
becomes the plain percentile interval as G grows. ``"percentile"`` and ``"bca"`` (bias-corrected and
accelerated, jackknife over questions) are there for comparison. ``bench/calibrate_agreement.py`` measures
coverage by simulation (``lib.analysis.agreement_calibration``). Measured (seed 0; 1,000 / 500 / 200
replicates at 10 / 80 / 800 questions, 1,000 draws each), coverage of the expanded interval:

==========  ============  ============  =============
statistic   10 questions  80 questions  800 questions
==========  ============  ============  =============
pearson     0.951         0.964         0.960
spearman    0.978         0.968         0.965
kendall     0.970         0.968         0.965
qwk         0.913         0.954         0.960
exact       0.933         0.954         0.955
within1     0.940         0.958         0.950
mean_diff   0.951         0.968         0.970
mae         0.925         0.958         0.940
alpha int.  0.915         0.954         0.955
alpha ord.  0.943         0.960         0.970
==========  ============  ============  =============

(alpha: Krippendorff's alpha of the two judges, ``lib.analysis.reliability``, same bootstrap.)

At 10 questions the plain percentile interval covered only 0.85-0.94 and BCa 0.87-0.93; resampling items
instead of questions (the wrong unit) covered 0.84-0.93 at 80 questions. Below ``FEW_QUESTIONS`` questions
the results carry ``FEW_QUESTIONS_NOTE``.
Replicates in which a statistic is undefined (a judge constant on the drawn questions) are left out of
its quantiles; ``{stat}_ci_low``/``_ci_high`` are NaN when fewer than half the replicates define it.
"""
from __future__ import annotations

import functools
import math
from itertools import combinations

import numpy as np
import pandas as pd

from lib.analysis.agreement import check_choice, item_matrix, round_half_up
from lib.errors import JudgeChoiceError, UsageError
from lib.store import Store

CI_STATS = ("pearson", "spearman", "kendall", "qwk", "exact", "within1", "mean_diff", "mae")
METHODS = ("expanded", "bca", "percentile")
METHOD_NAMES = {"expanded": "expanded percentile", "bca": "BCa", "percentile": "percentile"}
N_BOOT = 2000
FEW_QUESTIONS = 20
FEW_QUESTIONS_NOTE = (
    f"Fewer than {FEW_QUESTIONS} questions: intervals rest on few questions and are less reliable (in simulation "
    "at 10 questions they held the true value 91-98% of the time depending on the statistic, quadratic kappa "
    "lowest at 91%, instead of 95%); read them as a rough guide.")
CI_NOTE = (
    "95% intervals: cluster bootstrap over questions (both turns and every model of a drawn question come "
    "along), {n_boot:,} replicates, {method} interval; n_questions = questions the pair's items come from. "
    "Coverage measured by simulation at 10, 80 and 800 questions (bench/calibrate_agreement.py).")


# ---------------------------------------------------------------------------------------------
# Joint tables and the statistics on them (vectorised over leading axes)
# ---------------------------------------------------------------------------------------------

def question_tables(a, b, cluster) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(T, xv, yv, clusters)``: ``T[g, i, j]`` = items of question g with A's score ``xv[i]`` and B's ``yv[j]``.

    ``a``, ``b``: the two judges' item scores (no NaN); ``cluster``: each item's question key."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    xv, xi = np.unique(a, return_inverse=True)
    yv, yi = np.unique(b, return_inverse=True)
    # the questions sorted as np.unique sorts them (the bootstrap's draws follow this order), by hashing: np.unique
    # sorts every item's key, Python strings compared one by one (1.2 s a pair for 200,000 items at 1M judgments)
    gi, clusters = pd.factorize(np.asarray(cluster), sort=True)
    clusters = np.asarray(clusters)
    k, l, g = len(xv), len(yv), len(clusters)
    flat = np.bincount((gi * k + xi) * l + yi, minlength=g * k * l)
    return flat.reshape(g, k, l).astype(float), xv, yv, clusters


def _nan_where(mask, values):
    return np.where(mask, np.nan, values)


def _weighted_pearson(n, rows, cols, table, xs, ys):
    """Pearson of x and y over a weighted joint table; xs (…, k) and ys (…, l) may differ per replicate."""
    mx = (rows * xs).sum(-1) / n
    my = (cols * ys).sum(-1) / n
    xc, yc = xs - mx[..., None], ys - my[..., None]
    sxx = (rows * xc ** 2).sum(-1)
    syy = (cols * yc ** 2).sum(-1)
    sxy = (xc[..., None, :] @ table @ yc[..., :, None])[..., 0, 0]
    return sxy / np.sqrt(sxx * syy)


def _midranks(counts):
    """Average ranks (1-based) of each value given its count along the last axis."""
    return np.cumsum(counts, axis=-1) - counts + (counts + 1) / 2


def table_stats(table: np.ndarray, xv: np.ndarray, yv: np.ndarray) -> dict[str, np.ndarray]:
    """Every ``CI_STATS`` statistic of joint tables ``table[..., i, j]`` (counts: whole numbers), scores ``xv`` (A)
    and ``yv`` (B). NaN where a statistic is undefined: fewer than 2 items, or a judge with one value (correlations,
    kappa).

    The sums of whole numbers (margins, pairs for Kendall, agreement counts) are matrix products over all the
    tables at once: exact in any order, so the same numbers as cell-by-cell sums, at a third of the time for 2,000
    replicates (numpy's per-table loops of 10 x 10 products and its reductions over a last axis of 10 were most of
    a report's bootstrap). Sums of fractions (the correlations, kappa's proportions, the mean differences) keep
    their order."""
    table = np.asarray(table, dtype=float)
    lead, (k, l) = table.shape[:-2], table.shape[-2:]
    flat = table.reshape(-1, k * l)                               # one row per table
    rows = (table.reshape(-1, l) @ np.ones(l)).reshape(*lead, k)
    cols = np.einsum("...kl->...l", table)
    n = rows @ np.ones(k)
    out: dict[str, np.ndarray] = {}
    with np.errstate(invalid="ignore", divide="ignore"):
        constant = ((rows > 0).sum(-1) < 2) | ((cols > 0).sum(-1) < 2) | (n < 2)
        out["pearson"] = _nan_where(constant, _weighted_pearson(n, rows, cols, table, xv, yv))
        out["spearman"] = _nan_where(constant, _weighted_pearson(n, rows, cols, table, _midranks(rows),
                                                                 _midranks(cols)))
        # Kendall tau-b: concordant pairs lie strictly up-right of a cell, discordant strictly down-right, by
        # products with 0/1 triangles (half the time of cumulative sums over flipped axes; the same sums), each one
        # product over every table: the rows below a cell first, then the columns right or left of it
        stacked = flat.reshape(-1, k, l)
        below = (np.triu(np.ones((k, k)), 1) @ stacked.transpose(1, 0, 2).reshape(k, -1))  # sum over i' > i
        below = below.reshape(k, -1, l).transpose(1, 0, 2).reshape(-1, l)
        pad_up = (below @ np.tril(np.ones((l, l)), -1)).reshape(flat.shape)  # and j' > j
        pad_down = (below @ np.triu(np.ones((l, l)), 1)).reshape(flat.shape)  # and j' < j
        concordant = np.vecdot(flat, pad_up).reshape(lead)
        discordant = np.vecdot(flat, pad_down).reshape(lead)
        n0 = n * (n - 1) / 2
        n1 = (rows * (rows - 1) / 2) @ np.ones(k)
        n2 = (cols * (cols - 1) / 2) @ np.ones(l)
        out["kendall"] = _nan_where(constant, (concordant - discordant) / np.sqrt((n0 - n1) * (n0 - n2)))
        # the rounded 1-10 ratings: quadratic-weighted kappa, exact and +-1 agreement
        rx, ry = round_half_up(xv), round_half_up(yv)
        lo, hi = min(1.0, rx.min(), ry.min()), max(10.0, rx.max(), ry.max())
        scale = np.arange(lo, hi + 1)
        if np.array_equal(rx, scale) and np.array_equal(ry, scale):  # whole scores 1-10, each seen: already rounded
            rounded = table
        else:
            mx_ = (rx[:, None] == scale[None, :]).astype(float)
            my_ = (ry[:, None] == scale[None, :]).astype(float)
            rounded = mx_.T @ table @ my_
        p = rounded / n[..., None, None]
        pr, pc = p.sum(-1), p.sum(-2)
        w = (scale[:, None] - scale[None, :]) ** 2
        observed = (p * w).sum((-2, -1))
        expected = ((pr @ w) * pc).sum(-1)
        qwk = 1 - observed / expected
        out["qwk"] = _nan_where(constant | ~(expected > 0), qwk)
        gap = np.abs(rx[:, None] - ry[None, :])
        out["exact"] = (flat @ (gap == 0).ravel().astype(float)).reshape(lead) / n
        out["within1"] = (flat @ (gap <= 1).ravel().astype(float)).reshape(lead) / n
        diff = xv[:, None] - yv[None, :]
        out["mean_diff"] = (table * diff).sum((-2, -1)) / n
        out["mae"] = (table * np.abs(diff)).sum((-2, -1)) / n
    return out


# ---------------------------------------------------------------------------------------------
# The bootstrap
# ---------------------------------------------------------------------------------------------

def cluster_weights(n_clusters: int, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """(n_boot, G) draw counts: each row draws G questions with replacement."""
    return rng.multinomial(n_clusters, np.full(n_clusters, 1.0 / n_clusters), size=n_boot).astype(float)


@functools.lru_cache(maxsize=16)
def seeded_cluster_weights(n_clusters: int, n_boot: int, seed: int) -> np.ndarray:
    """``cluster_weights`` from a fresh ``default_rng(seed)``: the same draws every time, so they are drawn once
    per process (every judge pair of a table with the same number of questions shares them; a report of 5 judges
    drew them 10 times). Read-only: callers share the array."""
    weights = cluster_weights(n_clusters, n_boot, np.random.default_rng(seed))
    weights.setflags(write=False)
    return weights


def one_blas_thread() -> None:
    """From now on, this process runs BLAS (numpy's matrix products) on one thread. The bootstraps' products
    (2,000 replicates x G questions by G x the joint table's cells) are just above the size where OpenBLAS splits
    a product over threads, and its threads wait for work spinning: on the app's two cores, with the browser and
    DuckDB beside it, the intervals of 5 judges took 0.46 CPU-s instead of 0.22 and up to four times the wall
    time, the same numbers (products of whole counts are exact in any order). Call it after numpy is imported
    (before, no BLAS is loaded for it to limit); the app does once per server process."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(1, user_api="blas")


def replicate_stats(tables: np.ndarray, weights: np.ndarray, xv, yv, chunk_cells: int = 20_000_000) -> dict:
    """``table_stats`` of ``weights @ tables`` per row of weights, in chunks that keep memory bounded."""
    g, k, l = tables.shape
    flat = tables.reshape(g, k * l)
    step = max(1, chunk_cells // max(1, k * l))
    parts = []
    for start in range(0, len(weights), step):
        joint = (weights[start:start + step] @ flat).reshape(-1, k, l)
        parts.append(table_stats(joint, xv, yv))
    return {s: np.concatenate([p[s] for p in parts]) for s in CI_STATS}


def interval(estimate, boot, jack=None, alpha: float = 0.05, method: str = "expanded", n_clusters: int | None = None):
    """``(low, high)`` arrays from replicates ``boot[..., B]`` (NaN = undefined, left out).

    ``method="percentile"``: the alpha/2 and 1 - alpha/2 quantiles. ``"expanded"`` (Hesterberg 2015): the
    percentile interval at the wider quantiles Phi(+-sqrt(G / (G - 1)) t_{G-1, 1-alpha/2}), which undoes the
    bootstrap's too-small variance (short by (G-1)/G) and too-thin tails with few questions ``n_clusters``
    and becomes the percentile interval as G grows. ``"bca"`` needs the leave-one-question-out values
    ``jack[..., G]``; it falls back to the percentile interval where the bias correction or acceleration is
    undefined."""
    from scipy.special import ndtr, ndtri

    if method not in METHODS:
        raise UsageError(f"unknown interval method {method!r}; choose from {', '.join(METHODS)}")
    boot = np.asarray(boot, dtype=float)
    estimate = np.asarray(estimate, dtype=float)
    ok = np.isfinite(boot)
    defined = ok.sum(-1)
    lo_q = np.full(estimate.shape, alpha / 2)
    hi_q = np.full(estimate.shape, 1 - alpha / 2)
    if method == "expanded":
        g = n_clusters if n_clusters is not None else np.shape(jack)[-1]
        z = _expanded_z(int(g), alpha)
        lo_q, hi_q = np.full(estimate.shape, ndtr(-z)), np.full(estimate.shape, ndtr(z))
    if method == "bca":
        with np.errstate(invalid="ignore", divide="ignore"):
            below = ((boot < estimate[..., None]) & ok).sum(-1) + 0.5 * ((boot == estimate[..., None]) & ok).sum(-1)
            z0 = ndtri(below / defined)
            jack = np.asarray(jack, dtype=float)
            jm = np.nanmean(jack, axis=-1)
            d = jm[..., None] - jack
            num = np.nansum(d ** 3, axis=-1)
            den = 6 * np.nansum(d ** 2, axis=-1) ** 1.5
            acc = np.where(den > 0, num / np.where(den > 0, den, 1), 0.0)
            za, zb = ndtri(alpha / 2), ndtri(1 - alpha / 2)
            q_lo = ndtr(z0 + (z0 + za) / (1 - acc * (z0 + za)))
            q_hi = ndtr(z0 + (z0 + zb) / (1 - acc * (z0 + zb)))
        good = np.isfinite(q_lo) & np.isfinite(q_hi)
        lo_q = np.where(good, q_lo, lo_q)
        hi_q = np.where(good, q_hi, hi_q)
    filled = np.where(ok, boot, np.inf)
    ordered = np.sort(filled, axis=-1)        # undefined replicates sort last, out of every quantile

    def pick(q):
        pos = q * (defined - 1)
        low = np.clip(np.floor(pos).astype(int), 0, None)
        high = np.clip(np.ceil(pos).astype(int), 0, None)
        frac = pos - np.floor(pos)
        vlow = np.take_along_axis(ordered, low[..., None], -1)[..., 0]
        vhigh = np.take_along_axis(ordered, high[..., None], -1)[..., 0]
        return vlow + frac * (vhigh - vlow) if np.ndim(vlow) else float(vlow + frac * (vhigh - vlow))

    with np.errstate(invalid="ignore"):
        lo, hi = pick(lo_q), pick(hi_q)
    scarce = defined < boot.shape[-1] / 2
    lo = np.where(scarce | ~np.isfinite(estimate), np.nan, lo)
    hi = np.where(scarce | ~np.isfinite(estimate), np.nan, hi)
    return lo, hi


@functools.lru_cache(maxsize=256)
def _expanded_z(g: int, alpha: float) -> float:
    """The expanded interval's z for ``g`` questions: one scipy quantile per table, not one per statistic and pair
    (80 calls, a tenth of a second, for a report of 5 judges)."""
    from scipy import stats

    return math.sqrt(g / (g - 1)) * stats.t.ppf(1 - alpha / 2, g - 1) if g > 1 else math.nan


def jackknife_weights(n_clusters: int) -> np.ndarray:
    """(G, G): row g leaves question g out."""
    return 1.0 - np.eye(n_clusters)


def pair_intervals(a, b, cluster, *, n_boot: int = N_BOOT, alpha: float = 0.05, method: str = "expanded",
                   seed: int = 0) -> dict:
    """One judge pair: ``{stat: (estimate, low, high)}`` for every ``CI_STATS`` plus ``n_questions``."""
    tables, xv, yv, clusters = question_tables(a, b, cluster)
    g = len(clusters)
    out: dict = {"n_questions": g}
    if g == 0:  # no item both scored (a filter to a model one of them never judged): nothing to estimate
        return out | {s: (math.nan, math.nan, math.nan) for s in CI_STATS}
    point = table_stats(tables.sum(0), xv, yv)
    if g < 2:
        return out | {s: (float(point[s]), math.nan, math.nan) for s in CI_STATS}
    boot = replicate_stats(tables, seeded_cluster_weights(g, n_boot, seed), xv, yv)
    jack = replicate_stats(tables, jackknife_weights(g), xv, yv) if method == "bca" else {s: None for s in CI_STATS}
    for s in CI_STATS:
        lo, hi = interval(point[s], boot[s], jack[s], alpha, method, g)
        out[s] = (float(point[s]), float(lo), float(hi))
    return out


def question_key(matrix: pd.DataFrame) -> np.ndarray:
    """One label per row of an item matrix: its question (bench and question id)."""
    return (matrix["bench"].astype(str) + "\x1f" + matrix["question_id"].astype(str)).to_numpy()


def ci_columns() -> list[str]:
    cols = ["judge_a", "judge_b", "n", "n_questions"]
    for s in CI_STATS:
        cols += [s, f"{s}_ci_low", f"{s}_ci_high"]
    return cols


def pairwise_agreement_ci(matrix: pd.DataFrame, judges: list[str], *, n_boot: int = N_BOOT, alpha: float = 0.05,
                          method: str = "expanded", seed: int = 0) -> pd.DataFrame:
    """``agreement.pairwise_agreement`` with, for each statistic S, ``S_ci_low`` and ``S_ci_high`` and the
    pair's ``n_questions``. Each pair's bootstrap draws from its own seed, so adding a judge changes no
    other pair's interval."""
    if len(set(judges)) != len(judges):
        raise JudgeChoiceError(f"Each judge may be named once; got {', '.join(judges)}.")
    rows = []
    keys = question_key(matrix)  # once, not per pair (200,000 strings joined at a million judgments)
    for ja, jb in combinations(judges, 2):
        present = matrix[["bench", "question_id", ja, jb]].notna().all(axis=1)  # the rows dropna() keeps
        both = matrix.loc[present, [ja, jb]]
        res = pair_intervals(both[ja].to_numpy(float), both[jb].to_numpy(float), keys[present.to_numpy()],
                             n_boot=n_boot, alpha=alpha, method=method, seed=seed)
        row = {"judge_a": ja, "judge_b": jb, "n": len(both), "n_questions": res["n_questions"]}
        for s in CI_STATS:
            est, lo, hi = res.get(s, (math.nan, math.nan, math.nan))
            row.update({s: est, f"{s}_ci_low": lo, f"{s}_ci_high": hi})
        rows.append(row)
    df = pd.DataFrame(rows, columns=ci_columns()).astype({"n": "int64", "n_questions": "int64"})
    df.attrs["note"] = CI_NOTE.format(n_boot=n_boot, method=METHOD_NAMES[method])
    few = df[df["n_questions"] < FEW_QUESTIONS]
    df.attrs["warning"] = FEW_QUESTIONS_NOTE if len(few) else ""
    return df


def interval_text(table: pd.DataFrame) -> pd.DataFrame:
    """The intervals table for reading: judge_a, judge_b, n, n_questions, then per statistic "0.842 [0.767, 0.893]"
    (just the value when it has no interval; empty when undefined)."""
    shown = table[["judge_a", "judge_b", "n", "n_questions"]].copy()
    for s in CI_STATS:
        shown[s] = [("" if v != v else f"{v:.3f}") if lo != lo else f"{v:.3f} [{lo:.3f}, {hi:.3f}]"
                    for v, lo, hi in zip(table[s], table[f"{s}_ci_low"], table[f"{s}_ci_high"])]
    return shown


def agreement_ci(store: Store, judges: list[str], *, bench: str | None = None, model: str | None = None,
                 turn: int | None = None, category: str | None = None, n_boot: int = N_BOOT,
                 method: str = "expanded", seed: int = 0) -> pd.DataFrame:
    """``pairwise_agreement_ci`` of the judges' item matrix (same filters as ``agreement.item_matrix``)."""
    judges = check_choice(judges, minimum=2)  # item_matrix checks the names against the store
    matrix = item_matrix(store, judges, bench=bench, model=model, turn=turn, category=category)
    return pairwise_agreement_ci(matrix, list(judges), n_boot=n_boot, method=method, seed=seed)


# ---------------------------------------------------------------------------------------------
# Pairwise verdicts: do two pairwise judges pick the same winner?
# ---------------------------------------------------------------------------------------------

PAIR_VERDICT_COLUMNS = ["judge_a", "judge_b", "n", "n_questions", "agreement", "agreement_ci_low",
                        "agreement_ci_high", "n_without_ties", "agreement_without_ties",
                        "agreement_without_ties_ci_low", "agreement_without_ties_ci_high"]
PAIR_VERDICT_NOTE = (
    "Two pairwise judges on the same rows (bench, question, turn, model pair; the pair's order normalised): a "
    "judge's verdict is FastChat's (errors dropped; games that disagree after the A/B swap = tie; repeated rows "
    "voted). agreement: both gave the same verdict, ties included; without_ties: over rows neither called a tie "
    "(as FastChat's compute_agreement.py). 95% intervals: cluster bootstrap over questions, expanded percentile.")


def pair_verdicts(store: Store, judges: list[str], *, bench: str | None = None) -> pd.DataFrame:
    """One row per (bench, question_id, turn, model_a, model_b) with model_a < model_b, one column per judge:
    +1 model_a wins, -1 model_b wins, 0 tie (the sign of the mean over the judge's repeated rows), NaN if not
    judged (or only with errors)."""
    params = {f"j{i}": j for i, j in enumerate(judges)}
    where = f"judge IN ({', '.join(f'$j{i}' for i in range(len(judges)))}) AND g1_winner <> 'error' " \
            "AND g2_winner <> 'error'"
    if bench is not None:
        where += " AND bench = $bench"
        params["bench"] = bench
    cols = ", ".join(f"sign(avg(v) FILTER (WHERE judge = $j{i})) AS c{i}" for i in range(len(judges)))
    with store.read() as cur:
        df = cur.execute(f"""
            WITH r AS (
                SELECT bench, question_id, turn, judge, least(model_1, model_2) AS model_a,
                       greatest(model_1, model_2) AS model_b,
                       (CASE WHEN g1_winner <> g2_winner OR g1_winner = 'tie' THEN 0
                             WHEN g1_winner = 'model_1' THEN 1 ELSE -1 END)
                       * (CASE WHEN model_1 < model_2 THEN 1 ELSE -1 END) AS v
                FROM pair_judgments WHERE {where})
            SELECT bench, question_id, turn, model_a, model_b, {cols}
            FROM r GROUP BY ALL ORDER BY ALL""", params).df()
    return df.rename(columns={f"c{i}": j for i, j in enumerate(judges)})


def pair_verdict_agreement(verdicts: pd.DataFrame, judges: list[str], *, n_boot: int = N_BOOT,
                           alpha: float = 0.05, seed: int = 0) -> pd.DataFrame:
    """``PAIR_VERDICT_COLUMNS`` for every judge pair over the rows both judged (see ``PAIR_VERDICT_NOTE``)."""
    rows = []
    for ja, jb in combinations(judges, 2):
        both = verdicts.dropna(subset=[ja, jb])
        row = {"judge_a": ja, "judge_b": jb, "n": len(both)}
        keys = question_key(both)
        labels, index = np.unique(keys, return_inverse=True)
        g = len(labels)
        a, b = both[ja].to_numpy(float), both[jb].to_numpy(float)
        same = (a == b).astype(float)
        decisive = ((a != 0) & (b != 0)).astype(float)
        per_q = np.stack([np.bincount(index, weights=w, minlength=g) for w in
                          (same, np.ones(len(both)), same * decisive, decisive)], axis=1)   # (G, 4)
        row["n_questions"], row["n_without_ties"] = g, int(decisive.sum())
        w = seeded_cluster_weights(g, n_boot, seed) if g >= 2 else None
        for name, num, den in (("agreement", 0, 1), ("agreement_without_ties", 2, 3)):
            with np.errstate(invalid="ignore", divide="ignore"):
                est = per_q[:, num].sum() / per_q[:, den].sum() if g else math.nan
                row[name] = float(est)
                if w is None or not np.isfinite(est):
                    row[f"{name}_ci_low"] = row[f"{name}_ci_high"] = math.nan
                    continue
                boot = (w @ per_q[:, num]) / (w @ per_q[:, den])
            lo, hi = interval(est, boot, None, alpha, "expanded", g)
            row[f"{name}_ci_low"], row[f"{name}_ci_high"] = float(lo), float(hi)
        rows.append(row)
    return pd.DataFrame(rows, columns=PAIR_VERDICT_COLUMNS)


def pair_judges(store: Store, *, bench: str | None = None) -> list[str]:
    """The judges with pairwise judgments (on ``bench``), sorted."""
    where, params = ("WHERE bench = $b", {"b": bench}) if bench is not None else ("", {})
    with store.read() as cur:
        return [r[0] for r in cur.execute(f"SELECT DISTINCT judge FROM pair_judgments {where} ORDER BY 1",
                                          params).fetchall()]


def pairwise_verdict_agreement(store: Store, *, bench: str | None = None, judges: list[str] | None = None,
                               n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """``pair_verdict_agreement`` of the pairwise judges (every one on ``bench`` unless named)."""
    judges = list(judges) if judges is not None else pair_judges(store, bench=bench)
    if len(judges) < 2:
        return pd.DataFrame(columns=PAIR_VERDICT_COLUMNS)
    return pair_verdict_agreement(pair_verdicts(store, judges, bench=bench), judges, n_boot=n_boot, seed=seed)
