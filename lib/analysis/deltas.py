"""Paired A - B score differences with calibrated uncertainty.

A and B are two selections of judged items (selectors over harness, bench, judge and model; see
``lib.analysis.selectors``): two judges on the same answers (``a={"judge": "gpt-4o"}``,
``b={"judge": "gpt-4.1-2025-04-14"}``) or two models under one judge (``a={"judge": J, "model": M1}``,
``b={"judge": J, "model": M2}``). ``paired_items`` pairs them item by item within one bench;
``compare_pairs`` turns any paired item frame (also one built across linked benches) into the table.

The method, and why
-------------------
**Unit.** The unit of evidence is the *question*. The two turns of a question share a prompt and an
answer history, every model answers the same question, and Swallow's 5 samples of an item (already
averaged into one item score) share it too: they move together and are not independent. So every row
is tested on question-level data: the items of one question in that row form one cluster.

**Test and interval.** For a row with G questions and N paired items, ``delta = mean(A - B)`` over the
items (= ``mean_a - mean_b``). Its standard error is the cluster-robust (sandwich) one with the usual
small-sample factor G / (G - 1): ``se^2 = G/(G-1) * sum_q (D_q - n_q * delta)^2 / N^2``, where D_q is
the sum of the item deltas of question q and n_q their number. The p-value is two-sided from Student's
t with G - 1 degrees of freedom, and the interval is ``delta +/- t_{G-1, 1-alpha/2} * se``. When every
question has the same number of items in the row (the usual case: both turns, every model) this *is*
the one-sample t-test and t interval on the G question-level mean deltas; with a few items missing it
weights questions by their items, so the interval stays centred on ``mean_a - mean_b``.

**Why not the bootstrap.** The previous percentile bootstrap (resampling questions within categories)
was too optimistic with 10 questions per category: a percentile interval from 10 clusters is too
narrow (its variance is the plug-in one, short by (G-1)/G, and its tails are too thin), and resampling
within category strata of 10 shrinks the variance of pooled rows the same way. In a simulation with
no true difference (80 questions, 2 turns, a question effect shared by the turns) 19-24 % of
replicates had at least one category row "significant after Holm" (goal: 5 %). The t method on
question means holds the nominal rates at every level: in 20,000 null replicates the family-wise
false-positive rate was 4.9 / 4.5 / 4.4 / 4.3 % (overall / turn / category / category x turn) and
interval coverage 0.951-0.955, with 68 % power for a one-point shift in one category
(``bench/calibrate_deltas.py`` measures it; ``tests/analysis/test_deltas_calibration.py`` checks it quickly).
With independent, rounded and clipped 1-10 scores instead (a stress design) the 16-cell level runs
slightly hot, about 5.3 %: the t tail at alpha/16 with 10 integer-valued deltas. Under the null of two interchangeable
sides the question deltas are symmetric, which is where the t-test is accurate even at 10 questions.
An exact sign-flip (permutation) test would be calibrated too but has only 2^10 sign patterns for a
category: its p-values are too coarse to survive a Holm step over 8 rows (about 40 % power for a
one-point shift in one category, against about 70 % for the t-test).

**Multiple comparisons.** ``p_adjusted`` is Holm's step-down correction over one *family*: all rows of
the levels requested in one call (for one model with ``per_model``; each model is its own family).
The Compare page and ``python -m lib.cli compare`` request one level at a time, so there the family is
that level's rows (16 category x turn cells, 8 categories, 2 turns, or the overall row).
``significant = p_adjusted < alpha``.

**Little data.** A category has 10 questions on MT-Bench: expect intervals of a point or more on a
category row, and read a category delta of a few tenths as noise unless it survives Holm.
"""
from __future__ import annotations

import copy

import numpy as np
import pandas as pd

from lib.analysis.score_copy import ScoreCopy
from lib.analysis.selectors import SELECTOR_KEYS, check_selector, describe
from lib.errors import UsageError
from lib.store import Store
from lib.vocab import QID_ORDER

SIDE_KEYS = SELECTOR_KEYS
# Keys that may pair items on top of (bench, question_id, turn).
FREE_KEYS = ("harness", "judge", "model")
LEVELS = ("cell", "category", "turn", "all")
LEVEL_LABELS = {"cell": "category × turn", "category": "category (both turns)", "turn": "turn (all categories)",
                "all": "all (every category and turn)"}
NO_CATEGORY = "(no category)"
COLUMNS = ["model", "level", "category", "turn", "n_questions", "n_items", "mean_a", "mean_b", "delta",
           "ci_low", "ci_high", "p_value", "p_adjusted", "significant"]

METHOD = (
    "Items are paired: the same question and turn of the same bench under A and under B (and the same "
    "harness, judge and model unless A and B name different ones). delta = mean(A - B) over the paired "
    "items, 1-10 scale; positive: A higher. Questions are the unit: both turns of a question, every paired "
    "model and Swallow's 5 samples move together. The 95% interval and the p-value are Student's t on the "
    "question-level mean deltas (n_questions - 1 degrees of freedom; a cluster-robust standard error, which "
    "is exactly the one-sample t-test on question means when every question has the same number of items). "
    "A percentile bootstrap over 10 questions per category was too optimistic (1 in 4 null comparisons "
    "flagged a category); this method holds the nominal rates at 10 questions in simulation. p_adjusted: "
    "Holm over the rows shown (one level at a time; with per-model rows, each model its own family). "
    "significant = p_adjusted < "
    "0.05. A category has 10 questions: expect wide intervals.")


# ---------------------------------------------------------------------------------------------
# The test (vectorised: the calibration script runs it on thousands of replicates at once)
# ---------------------------------------------------------------------------------------------

def cluster_t(sums: np.ndarray, counts: np.ndarray, alpha: float = 0.05) -> dict[str, np.ndarray]:
    """The row test on cluster (question) totals, vectorised over leading axes.

    ``sums[..., g]`` is the sum of the item deltas of question g in the row and ``counts[..., g]`` their
    number (0: the question is not in the row). Returns arrays over the leading axes: ``delta``
    (item mean), ``se`` (cluster-robust, factor G/(G-1)), ``n_questions`` (G), ``ci_low``, ``ci_high``
    (t interval, G-1 df) and ``p_value`` (two-sided t). Rows with fewer than 2 questions get NaN
    interval and p. A row whose question deltas are all equal has se = 0: its interval is
    [delta, delta] and its p is 1 when delta is 0, else 0.
    """
    sums = np.asarray(sums, dtype=float)
    counts = np.asarray(counts, dtype=float)
    n = counts.sum(axis=-1)
    g = (counts > 0).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        delta = sums.sum(axis=-1) / n
        ss = ((sums - counts * delta[..., None]) ** 2).sum(axis=-1)
    return t_summary(delta, ss, g, n, alpha)


def t_summary(delta, ss, g, n, alpha: float = 0.05) -> dict[str, np.ndarray]:
    """``cluster_t`` from a row's moments: item-mean ``delta``, ``ss`` = sum over its questions of
    (D_q - n_q * delta)^2, ``g`` questions and ``n`` items (arrays of one shape)."""
    from scipy import stats  # here, not at the top: scipy.stats takes about a second to import, and every page
    # that imports this module (Overview, Judge agreement through the report) would pay it on a server's first visit

    delta, ss = np.asarray(delta, dtype=float), np.asarray(ss, dtype=float)
    g, n = np.asarray(g), np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(g / (g - 1) * ss) / n
        dof = np.maximum(g - 1, 1)
        tcrit = stats.t.ppf(1 - alpha / 2, dof)
        scale = np.maximum(np.abs(delta), 1.0)
        zero_se = se <= 1e-12 * scale
        t = np.abs(delta) / np.where(zero_se, 1.0, se)
        p = np.where(zero_se, np.where(np.abs(delta) <= 1e-12 * scale, 1.0, 0.0), 2 * stats.t.sf(t, dof))
        half = np.where(zero_se, 0.0, tcrit * se)
    few = g < 2
    return {"delta": delta, "se": np.where(few, np.nan, se), "n_questions": g,
            "ci_low": np.where(few, np.nan, delta - half), "ci_high": np.where(few, np.nan, delta + half),
            "p_value": np.where(few, np.nan, p)}


def holm(p_values, axis: int = -1) -> np.ndarray:
    """Holm step-down adjusted p-values along ``axis`` (NaN stays NaN and is not counted in the family).

    For a 1-D array without NaN: the same numbers as statsmodels ``multipletests(p, method="holm")[1]``
    (which runs ``gc.collect()`` on every call, ~60 ms). Vectorised over the other axes.
    """
    p = np.moveaxis(np.asarray(p_values, dtype=float), axis, -1)
    if p.shape[-1] == 0:
        return np.moveaxis(p.copy(), -1, axis)
    missing = np.isnan(p)
    m = (~missing).sum(axis=-1, keepdims=True)
    filled = np.where(missing, np.inf, p)
    order = np.argsort(filled, axis=-1, kind="mergesort")
    ranked = np.take_along_axis(filled, order, axis=-1)
    factor = m - np.arange(p.shape[-1])                      # m, m-1, ... for the sorted p-values
    with np.errstate(invalid="ignore"):
        scaled = np.where(np.isinf(ranked), 0.0, ranked * np.maximum(factor, 0))
    stepped = np.minimum(np.maximum.accumulate(scaled, axis=-1), 1.0)
    out = np.empty_like(stepped)
    np.put_along_axis(out, order, stepped, axis=-1)
    out[missing] = np.nan
    return np.moveaxis(out, -1, axis)


# ---------------------------------------------------------------------------------------------
# A paired item frame -> the table
# ---------------------------------------------------------------------------------------------

_LEVEL_KEYS = {"cell": ["category", "turn"], "category": ["category"], "turn": ["turn"], "all": []}


def _check_levels(levels) -> tuple[str, ...]:
    levels = tuple([levels] if isinstance(levels, str) else levels)
    unknown = [lv for lv in levels if lv not in LEVELS]
    if unknown or not levels:
        raise UsageError(f"unknown level(s) {', '.join(map(repr, unknown)) or '(none given)'}; "
                         f"choose from {', '.join(LEVELS)}")
    return tuple(dict.fromkeys(levels))


def _level_rows(items: pd.DataFrame, level: str, family: list[str], alpha: float) -> pd.DataFrame:
    """One level's rows for every family at once (vectorised: a thousand models cost one groupby)."""
    keys = family + _LEVEL_KEYS[level]
    # column sums and sizes, not named aggregation: the same sums (the same kernel), without the per-call overhead
    # of agg(name=(column, how)) (a fifth of a Compare table on a pick)
    by_q = items.groupby(keys + ["question"], sort=False, observed=True)
    per_q = by_q[["d", "score_a", "score_b"]].sum().rename(columns={"score_a": "a", "score_b": "b"})
    per_q.insert(1, "k", by_q.size())
    per_q = per_q.reset_index()
    one = np.zeros(len(per_q), dtype=int)  # no keys: every question in one row
    rows = per_q.groupby(keys, sort=False, observed=True) if keys else per_q.groupby(one)
    tot = rows[["d", "k", "a", "b"]].sum().rename(columns={"k": "n"})
    tot.insert(2, "g", rows.size())
    delta = tot["d"] / tot["n"]
    per_q["resid2"] = (per_q["d"] - per_q["k"] * (rows["d"].transform("sum") / rows["k"].transform("sum"))) ** 2
    tot["ss"] = (per_q.groupby(keys, sort=False, observed=True) if keys else per_q.groupby(one))["resid2"].sum()
    r = t_summary(delta.to_numpy(), tot["ss"].to_numpy(), tot["g"].to_numpy(), tot["n"].to_numpy(), alpha)
    out = (tot.reset_index() if keys else tot.reset_index(drop=True))
    out = out.assign(level=level, n_questions=r["n_questions"].astype("int64"), n_items=tot["n"].to_numpy(),
                     mean_a=(tot["a"] / tot["n"]).to_numpy(), mean_b=(tot["b"] / tot["n"]).to_numpy(),
                     delta=r["delta"], ci_low=r["ci_low"], ci_high=r["ci_high"], p_value=r["p_value"])
    for key in ("category", "turn"):
        if key not in out.columns:
            out[key] = None
    if "model" not in out.columns:
        out["model"] = None
    out["_order"] = LEVELS.index(level)
    return out


def compare_pairs(pairs: pd.DataFrame, *, levels=LEVELS, per_model: bool = False, alpha: float = 0.05,
                  seed: int = 0) -> pd.DataFrame:
    """The A - B table of an already-paired item frame.

    ``pairs`` has one row per paired item with columns ``question`` (the cluster key, unique per
    question, e.g. ``"bench:qid"``), ``category``, ``turn``, ``score_a``, ``score_b``, and ``model`` when
    ``per_model``. Rows are made for each requested level: ``cell`` (category x turn), ``category``
    (both turns; ``turn`` null), ``turn`` (all categories; ``category`` null) and ``all`` (both null),
    computed from the items (never averaged from cells). A missing category reads ``"(no category)"``.

    Columns, exactly: model (null unless ``per_model``), level, category, turn, n_questions, n_items,
    mean_a, mean_b, delta (= mean_a - mean_b), ci_low, ci_high (t interval, ``1 - alpha``), p_value
    (two-sided t on question-level deltas; see the module docstring), p_adjusted (Holm over the family),
    significant (p_adjusted < alpha). Rows with one question have no interval or p and are not in the
    family. **Family** = all rows of the requested levels for one model (``per_model``: each model its
    own family; otherwise all rows). ``seed`` is accepted for callers that pass one; the t method draws
    nothing, so results do not depend on it. ``df.attrs`` holds ``method``, ``family`` and ``alpha``.
    """
    levels = _check_levels(levels)
    if not 0 < alpha < 1:
        raise UsageError(f"alpha must be between 0 and 1, not {alpha}")
    need = ["question", "category", "turn", "score_a", "score_b"] + (["model"] if per_model else [])
    missing = [c for c in need if c not in pairs.columns]
    if missing:
        raise ValueError(f"the paired item frame lacks column(s) {', '.join(missing)}")
    items = pairs[need].copy()
    # the pairs' attrs (runs, links, labels) are set on the table once, at the end: carried on the working frame,
    # pandas deep-copied them on each of its ~300 operations (a tenth of the table's time)
    items.attrs = {}
    items = items[items["score_a"].notna() & items["score_b"].notna()]
    items["category"] = items["category"].astype(object).where(items["category"].notna(), NO_CATEGORY)
    items["turn"] = items["turn"].astype(int)
    items["score_a"] = items["score_a"].astype(float)
    items["score_b"] = items["score_b"].astype(float)
    items["d"] = items["score_a"] - items["score_b"]
    if per_model:
        items["model"] = items["model"].astype(object)
    family = ["model"] if per_model else []
    if len(items):
        df = pd.concat([_level_rows(items, level, family, alpha) for level in levels], ignore_index=True)
        df["_model"] = df["model"].astype(str)
        df["_category"] = df["category"].astype(str)
        df["_turn"] = pd.to_numeric(df["turn"]).fillna(0)
        df = df.sort_values(["_model", "_order", "_category", "_turn"], kind="mergesort").reset_index(drop=True)
        p_value, adjusted = df["p_value"].to_numpy(float), np.full(len(df), np.nan)
        families = df.groupby("_model", sort=False).indices.values() if per_model else [np.arange(len(df))]
        for idx in families:
            adjusted[idx] = holm(p_value[idx])
        df["p_adjusted"] = adjusted
        df["significant"] = adjusted < alpha                      # NaN < alpha is False
        df = df[COLUMNS]
        df.attrs = copy.deepcopy(pairs.attrs)  # as the frame made from the pairs carried them
    else:
        df = pd.DataFrame({c: [] for c in COLUMNS})
    df = df.astype({"model": object, "level": object, "category": object, "turn": "Int64", "n_questions": "int64",
                    "n_items": "int64", "mean_a": float, "mean_b": float, "delta": float, "ci_low": float,
                    "ci_high": float, "p_value": float, "p_adjusted": float, "significant": bool})
    df["category"] = df["category"].where(df["category"].notna(), None)
    df["model"] = df["model"].where(df["model"].notna(), None)
    family = (("each model: " if per_model else "") + "all rows of level(s) " + ", ".join(levels))
    df.attrs.update(method=METHOD, family=family, alpha=alpha, levels=levels, per_model=per_model)
    return df


# ---------------------------------------------------------------------------------------------
# Two selectors of one bench -> a paired item frame
# ---------------------------------------------------------------------------------------------

def resolve_sides(a: dict, b: dict) -> tuple[dict, dict, list[str]]:
    """A's and B's filters (each side keeps its own keys) and the columns that pair their items.

    Items pair on bench, question_id, turn, and on each of harness, judge and model unless A and B
    name *different* values of it. A key named on one side only applies to that side; pairing on it
    then keeps the other side's items with the same value (``a={"judge": J, "model": M1},
    b={"model": M2}`` compares M1 and M2 under J). Two different benches raise ``UsageError``: their
    question ids are different questions (linked benches are compared elsewhere).
    """
    fa, fb = check_selector(a, "A"), check_selector(b, "B")
    if "bench" in fa and "bench" in fb and fa["bench"] != fb["bench"]:
        raise UsageError(f"A and B are on different benches ({fa['bench']!r} vs {fb['bench']!r}); question ids "
                         "of two benches are different questions and are never paired here")
    differ = [k for k in FREE_KEYS if k in fa and k in fb and fa[k] != fb[k]]
    pair_keys = ["bench", "question_id", "turn"] + [k for k in FREE_KEYS if k not in differ]
    return fa, fb, pair_keys


def describe_comparison(a: dict, b: dict) -> str:
    """A short label: ``"gpt-4o vs gpt-4.1-2025-04-14 on shisa-ai/shisa-v2-llama3.1-8b"``."""
    fa, fb, pair_keys = resolve_sides(a, b)
    differ = [k for k in SIDE_KEYS if k in fa and k in fb and fa[k] != fb[k]]
    if differ:
        label = " / ".join(str(fa[k]) for k in differ) + " vs " + " / ".join(str(fb[k]) for k in differ)
    else:
        label = f"{describe(fa)} vs {describe(fb)}"
    common = {k: fa.get(k, fb.get(k)) for k in SIDE_KEYS if k not in differ and (k in fa or k in fb)}
    if "model" in common:
        label += f" on {common['model']}"
    if "judge" in common:
        label += f", judged by {common['judge']}"
    if "bench" in common:
        label += f" ({common['bench']})"
    per = [k for k in ("judge", "model") if k in pair_keys and k not in common]
    if per:
        label += ", paired per " + " and ".join(per)
    return label


def paired_items(store: Store, a: dict, b: dict, *, copy: ScoreCopy | None = None) -> pd.DataFrame:
    """One row per paired item of A and B on one bench (see ``resolve_sides`` for the pairing).

    Columns: question (``"bench:question_id"``, the cluster key), bench, question_id, turn, category,
    harness, judge, model (the paired value; A's value where A and B name different ones), score_a,
    score_b. Scores are ``item_scores.score`` (repeats and Swallow's 5 samples averaged per item, parse
    failures left out); items scored on one side only are left out. ``df.attrs``: ``a``, ``b``,
    ``pair_keys``, ``label`` and, when nothing pairs, ``note`` (why). ``copy``: the store's ``score_copy`` (kept
    per data version): the same query runs on it, in memory, instead of the store (when A and B are narrow enough:
    ``ScoreCopy.frame``).
    """
    fa, fb, pair_keys = resolve_sides(a, b)
    params, conds = {}, {"a": [], "b": []}
    for side, filt in (("a", fa), ("b", fb)):
        for key, value in filt.items():
            params[f"{side}_{key}"] = value
            conds[side].append(f"{key} = ${side}_{key}")
    using = ", ".join(pair_keys)
    free = ", ".join(f"a.{k} AS {k}" for k in FREE_KEYS if k not in pair_keys)
    sql = f"""
        WITH a AS (SELECT * FROM item_scores WHERE score IS NOT NULL {''.join(' AND ' + c for c in conds['a'])}),
             b AS (SELECT * FROM item_scores WHERE score IS NOT NULL {''.join(' AND ' + c for c in conds['b'])})
        SELECT bench || ':' || question_id AS question, {using}, {free + ', ' if free else ''}
               coalesce(a.category, b.category) AS category, a.score AS score_a, b.score AS score_b
        FROM a JOIN b USING ({using})
        ORDER BY bench, {QID_ORDER}, turn, {', '.join(
            k for k in FREE_KEYS)}"""
    df = copy.frame(sql, [fa, fb], params) if copy is not None else None
    if df is None:
        with store.read() as cur:
            df = cur.execute(sql, params).df()
    df = df[["question", "bench", "question_id", "turn", "category", *FREE_KEYS, "score_a", "score_b"]]
    df["category"] = df["category"].astype(object)
    df.attrs.update(a=fa, b=fb, pair_keys=pair_keys, label=describe_comparison(fa, fb),
                    note=_why_empty(store, fa, fb, pair_keys) if df.empty else "")
    return df


def compare(store: Store, a: dict, b: dict, *, levels=LEVELS, per_model: bool = False,
            alpha: float = 0.05, seed: int = 0, copy: ScoreCopy | None = None) -> pd.DataFrame:
    """``compare_pairs(paired_items(store, a, b), ...)``: what the Compare page and ``lib.cli compare`` show.

    ``per_model`` compares each model with itself (A and B must not name different models). The
    result's ``attrs`` add ``a``, ``b``, ``pair_keys``, ``label`` and ``note`` from ``paired_items``.
    ``copy``: as in ``paired_items``.
    """
    pairs = paired_items(store, a, b, copy=copy)
    if per_model and "model" not in pairs.attrs["pair_keys"]:
        raise UsageError("--per-model compares every model with itself, but A and B name different models "
                         f"({pairs.attrs['a']['model']!r} vs {pairs.attrs['b']['model']!r})")
    df = compare_pairs(pairs, levels=levels, per_model=per_model, alpha=alpha, seed=seed)
    df.attrs.update({k: pairs.attrs[k] for k in ("a", "b", "pair_keys", "label", "note")})
    return df


def compare_levels(store: Store, a: dict, b: dict, *, levels=LEVELS, per_model: bool = False,
                   alpha: float = 0.05, seed: int = 0) -> pd.DataFrame:
    """``compare`` for each level on its own, stacked: each level (and, with ``per_model``, each model
    within it) is its own Holm family, as on the Compare page, which shows one level at a time.
    This is what ``python -m lib.cli compare`` prints (``--level`` picks one)."""
    levels = _check_levels(levels)
    pairs = paired_items(store, a, b)
    if per_model and "model" not in pairs.attrs["pair_keys"]:
        raise UsageError("--per-model compares every model with itself, but A and B name different models "
                         f"({pairs.attrs['a']['model']!r} vs {pairs.attrs['b']['model']!r})")
    parts = [compare_pairs(pairs, levels=(level,), per_model=per_model, alpha=alpha, seed=seed) for level in levels]
    df = pd.concat(parts, ignore_index=True) if any(len(p) for p in parts) else parts[0]
    df.attrs.update(parts[0].attrs)
    df.attrs.update({k: pairs.attrs[k] for k in ("a", "b", "pair_keys", "label", "note")},
                    levels=levels, family=("each model and level" if per_model else "each level") + " on its own")
    return df


def _why_empty(store: Store, fa: dict, fb: dict, pair_keys: list[str]) -> str:
    """A sentence for a page when A and B share no item."""
    counts = []
    with store.read() as cur:
        for filt in (fa, fb):
            conds = [f"{k} = ${k}" for k in filt]
            counts.append(cur.execute("SELECT count(*) FROM item_scores WHERE score IS NOT NULL"
                                      + "".join(" AND " + c for c in conds), dict(filt)).fetchone()[0])
    if not counts[0] or not counts[1]:
        side = "A" if not counts[0] else "B"
        return f"{side} selects no scored items."
    extra = [k for k in pair_keys if k in FREE_KEYS]
    hint = (f" Items pair only when they have the same {', '.join(extra)}; name it on both sides if A and B "
            "differ in it (a re-judge made in JudgeLens has harness 'judgelens')." if extra else "")
    return (f"A has {counts[0]} scored items and B has {counts[1]}, but none share bench, question and turn"
            f"{' and ' + ', '.join(extra) if extra else ''}.{hint}")
