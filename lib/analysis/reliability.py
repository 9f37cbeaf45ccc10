"""Krippendorff's alpha over any set of judges (LLM judges, re-judge templates, ``human:<name>``), with
missing ratings, its interval, per category and turn, and alpha without each judge.

Units and values
----------------
A *unit* is a judged item (bench, question, model, turn); a judge's *value* for it is its item score
(``item_scores.score``: repeats and Swallow samples averaged, unusable scores left out, so a judge that
did not score an item, or only failed to, is missing there). A unit with fewer than two values is not
pairable and adds nothing. So a human who scored 40 of 160 items counts on those 40.

The computation (Krippendorff 2011, "Computing Krippendorff's alpha-reliability")
--------------------------------------------------------------------------------
Coincidence matrix ``o[c, k] = sum_u (number of ordered pairs of values (c, k) in u) / (m_u - 1)`` over
pairable units (m_u values), ``n_c = sum_k o[c, k]``, ``n = sum_c n_c``, expected coincidences
``e[c, k] = (n_c n_k - [c = k] n_c) / (n - 1)``, and ``alpha = 1 - sum(o * d) / sum(e * d)`` with the
distance ``d``: interval ``(c - k)^2``; ordinal ``(sum_{g between c and k} n_g - (n_c + n_k) / 2)^2``.
This equals the ``krippendorff`` package 0.9.0 to 1e-9 (``tests/analysis/test_reliability.py``).

The interval
------------
Units of one question share it (both turns, every model), so the interval resamples questions: each
question's own coincidence matrix ``O_q`` is summed with bootstrap counts (``w @ O``), alpha is computed
per replicate (ordinal distances from that replicate's n_c), and the interval is the expanded percentile
one of ``lib.analysis.agreement_ci`` (its coverage is in ``bench/calibrate_agreement.py``).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lib.analysis.agreement import check_choice, item_matrix
from lib.analysis.agreement_ci import FEW_QUESTIONS, N_BOOT, seeded_cluster_weights, interval, question_key
from lib.store import Store

METRICS = ("interval", "ordinal")
RELIABILITY_COLUMNS = ["group", "n_units", "n_pairable", "n_questions", "n_values",
                       "alpha_interval", "alpha_interval_ci_low", "alpha_interval_ci_high",
                       "alpha_ordinal", "alpha_ordinal_ci_low", "alpha_ordinal_ci_high"]
RELIABILITY_NOTE = (
    "Krippendorff's alpha: units are judged items (bench x question x model x turn), a judge's value its item "
    "score (repeats averaged, unusable scores left out); missing ratings are allowed, and only units with two or "
    "more values count (n_pairable). 1 = perfect agreement, 0 = no better than chance. alpha_interval treats "
    "scores as interval data (squared differences), alpha_ordinal only their order. 95% intervals: cluster "
    "bootstrap over questions (n_questions), expanded percentile.")


def unit_values(matrix: pd.DataFrame, raters: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(counts, values, clusters)``: ``counts[u, v]`` = raters who gave unit u the value ``values[v]``;
    ``clusters[u]`` = the unit's question."""
    data = matrix[raters].to_numpy(dtype=float)
    present = ~np.isnan(data)
    values, inverse = np.unique(data[present], return_inverse=True)
    unit = np.nonzero(present)[0]
    counts = np.zeros((len(data), len(values)))
    np.add.at(counts, (unit, inverse), 1)
    return counts, values, question_key(matrix)


def coincidences(counts: np.ndarray) -> np.ndarray:
    """The coincidence matrix of unit value counts (U, V) -> (V, V); units with < 2 values add nothing."""
    m = counts.sum(1)
    scale = np.where(m >= 2, 1.0 / np.maximum(m - 1, 1), 0.0)
    weighted = counts * scale[:, None]
    return weighted.T @ counts - np.diag(weighted.sum(0))


def question_coincidences(counts: np.ndarray, clusters) -> tuple[np.ndarray, np.ndarray]:
    """(G, V, V) coincidence matrices per question, and the question labels."""
    # the questions in np.unique's sorted order, by hashing (np.unique sorts every unit's string key); each
    # question's units in their order, from one stable sort (a mask per question was G passes over every unit)
    index, labels = pd.factorize(np.asarray(clusters), sort=True)
    labels = np.asarray(labels)
    order = np.argsort(index, kind="stable")
    bounds = np.searchsorted(index[order], np.arange(len(labels) + 1))
    out = np.stack([coincidences(counts[order[bounds[g]:bounds[g + 1]]]) for g in range(len(labels))]) \
        if len(labels) else np.zeros((0, counts.shape[1], counts.shape[1]))
    return out, labels


def alpha_from_coincidences(o: np.ndarray, values: np.ndarray, metric: str = "interval") -> np.ndarray:
    """Alpha of coincidence matrices ``o[..., V, V]`` (vectorised over leading axes); NaN when undefined
    (no pairable values, or no expected disagreement: every value the same)."""
    if metric not in METRICS:
        raise ValueError(f"metric must be one of {', '.join(METRICS)}")
    o = np.asarray(o, dtype=float)
    nv = o.sum(-1)
    n = nv.sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        e = (nv[..., :, None] * nv[..., None, :] - nv[..., :, None] * np.eye(len(values))) / (n - 1)[..., None, None]
        if metric == "interval":
            d = (values[:, None] - values[None, :]) ** 2
        else:
            cum = np.cumsum(nv, -1)
            i = np.arange(len(values))
            lo, hi = np.minimum(i[:, None], i[None, :]), np.maximum(i[:, None], i[None, :])
            between = cum[..., hi] - cum[..., lo] + nv[..., lo]
            d = (between - (nv[..., :, None] + nv[..., None, :]) / 2) ** 2
        observed = (o * d).sum((-2, -1))
        expected = (e * d).sum((-2, -1))
        return np.where(expected > 0, 1 - observed / expected, np.nan)


def krippendorff_alpha(matrix: pd.DataFrame, raters: list[str], metric: str = "interval") -> float:
    """Alpha of the raters' columns of an item matrix (NaN = missing)."""
    counts, values, _ = unit_values(matrix, raters)
    if len(values) == 0:
        return math.nan
    return float(alpha_from_coincidences(coincidences(counts), values, metric))


def alpha_with_interval(matrix: pd.DataFrame, raters: list[str], *, n_boot: int = N_BOOT, alpha: float = 0.05,
                        seed: int = 0) -> dict:
    """One group of units: n_units, n_pairable, n_questions, n_values and, per metric, alpha and its interval."""
    counts, values, clusters = unit_values(matrix, raters)
    pairable = counts.sum(1) >= 2
    out = {"n_units": int(len(matrix)), "n_pairable": int(pairable.sum()), "n_values": int(counts[pairable].sum()),
           "n_questions": int(pd.unique(clusters[pairable]).size) if pairable.any() else 0}
    if not pairable.any() or len(values) < 2:
        return out | {f"alpha_{m}{s}": math.nan for m in METRICS for s in ("", "_ci_low", "_ci_high")}
    per_q, _ = question_coincidences(counts[pairable], clusters[pairable])
    g = len(per_q)
    flat = per_q.reshape(g, -1)
    weights = seeded_cluster_weights(g, n_boot, seed) if g >= 2 else None
    # the replicates' coincidence matrices, made once for both metrics (in chunks of 200 replicates)
    replicates = [] if weights is None else [(weights[s:s + 200] @ flat).reshape(-1, *per_q.shape[1:])
                                             for s in range(0, n_boot, 200)]
    for m in METRICS:
        est = alpha_from_coincidences(per_q.sum(0), values, m)
        out[f"alpha_{m}"] = float(est)
        if weights is None:
            out[f"alpha_{m}_ci_low"] = out[f"alpha_{m}_ci_high"] = math.nan
            continue
        boot = np.concatenate([alpha_from_coincidences(o, values, m) for o in replicates])
        lo, hi = interval(est, boot, None, alpha, "expanded", g)
        out[f"alpha_{m}_ci_low"], out[f"alpha_{m}_ci_high"] = float(lo), float(hi)
    return out


def reliability_table(matrix: pd.DataFrame, raters: list[str], *, by: tuple[str, ...] = ("category", "turn"),
                      n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """Alpha with intervals over all units (group "all"), then per value of each column in ``by``
    (group "category=writing", "turn=1", ...). Columns: ``RELIABILITY_COLUMNS``."""
    rows = [{"group": "all", **alpha_with_interval(matrix, raters, n_boot=n_boot, seed=seed)}]
    for col in by:
        for value, part in matrix.groupby(col, sort=True, dropna=False):
            rows.append({"group": f"{col}={value}", **alpha_with_interval(part, raters, n_boot=n_boot, seed=seed)})
    df = pd.DataFrame(rows, columns=RELIABILITY_COLUMNS)
    df.attrs["warning"] = (f"Groups with fewer than {FEW_QUESTIONS} questions: their intervals are likely too narrow."
                           if (df["n_questions"] < FEW_QUESTIONS).any() else "")
    return df


def without_each(matrix: pd.DataFrame, raters: list[str], *, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """Alpha (both metrics, with intervals) without each rater in turn: a rater whose removal raises alpha
    most is the odd one out. Columns: without, then ``RELIABILITY_COLUMNS`` minus group, plus
    ``alpha_interval_change`` (alpha without the rater minus alpha with everyone)."""
    full = krippendorff_alpha(matrix, raters, "interval")
    rows = []
    for r in raters:
        rest = [x for x in raters if x != r]
        res = alpha_with_interval(matrix, rest, n_boot=n_boot, seed=seed) if len(rest) >= 2 else {}
        rows.append({"without": r, **res})
    cols = ["without"] + RELIABILITY_COLUMNS[1:]
    df = pd.DataFrame(rows).reindex(columns=cols)
    df["alpha_interval_change"] = df["alpha_interval"] - full
    return df


def reliability(store: Store, judges: list[str], *, bench: str | None = None, model: str | None = None,
                turn: int | None = None, category: str | None = None, n_boot: int = N_BOOT,
                seed: int = 0) -> dict:
    """Alpha of the judges over the store's items (filters as ``agreement.item_matrix``): ``overall``
    (the reliability table, all units then per category and turn) and ``without`` (``without_each``)."""
    judges = check_choice(judges, minimum=2)  # item_matrix checks the names against the store
    matrix = item_matrix(store, judges, bench=bench, model=model, turn=turn, category=category)
    by = tuple(c for c, v in (("category", category), ("turn", turn)) if v is None)
    return {"overall": reliability_table(matrix, judges, by=by, n_boot=n_boot, seed=seed),
            "without": without_each(matrix, judges, n_boot=n_boot, seed=seed) if len(judges) >= 3 else
            pd.DataFrame(columns=["without"] + RELIABILITY_COLUMNS[1:] + ["alpha_interval_change"])}
