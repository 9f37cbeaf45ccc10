"""Paired A - B score differences with honest uncertainty.

A and B are two selections of judged items, each a filter over harness, bench, judge and model:
two judges on the same answers (``a={"judge": "gpt-4o", "model": M}``, ``b={"judge": "gpt-4.1…",
"model": M}``) or two models under one judge (``a={"judge": J, "model": M1}``,
``b={"judge": J, "model": M2}``). See ``paired_deltas`` for the method.
"""
from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd

from lib.store import Store

SIDE_KEYS = ("harness", "bench", "judge", "model")
# Keys that may pair items on top of (bench, question_id, turn).
FREE_KEYS = ("harness", "judge", "model")
BY_KEYS = ("category", "turn", "harness", "bench", "judge", "model")
ALL = "(all)"
NO_CATEGORY = "(no category)"

METHOD = (
    "Items are paired: the same question and turn of the same bench, scored under A and under B (and, "
    "for every one of harness, judge and model that neither A nor B names, the same value of it on both "
    "sides). Only items scored on both sides count. delta = mean(A - B) over those items, on the 1-10 "
    "scale; a positive delta means A scored higher. The interval (95% by default) is a paired bootstrap that "
    "resamples questions, not items: both turns of a question (and, with Swallow, its 5 samples, which "
    "are already averaged into one item score) move together, because they are not independent. Rows "
    "over several categories draw questions within each category (stratified), so every category keeps "
    "its size. The p-value is the two-sided bootstrap p for delta = 0, and p_holm corrects it for the "
    "number of rows at the same level of the table (Holm). MT-Bench has only 10 questions per category, "
    "so a per-category delta rests on 10 questions (20 items): intervals are wide and a delta of a few "
    "tenths of a point is usually inside the noise.")


def _side(d: dict | None, name: str) -> dict:
    d = dict(d or {})
    unknown = [k for k in d if k not in SIDE_KEYS]
    if unknown:
        raise ValueError(f"{name}: unknown key(s) {', '.join(map(repr, unknown))}; choose from {', '.join(SIDE_KEYS)}")
    for key, value in d.items():
        if value is None or isinstance(value, (list, tuple, set, dict)):
            raise ValueError(f"{name}: {key} must be one value, not {value!r}")
    return d


def resolve_sides(a: dict, b: dict) -> tuple[dict, dict, list[str]]:
    """Effective filters for A and B, and the keys that pair items.

    A key named on one side only applies to both (``a={"judge": J, "model": M1}, b={"model": M2}``
    means B is M2 under judge J). Items pair on bench, question_id, turn and every one of harness,
    judge and model that neither side names. Different benches never pair (question ids of two
    benches are different questions).
    """
    a, b = _side(a, "A"), _side(b, "B")
    fa = {k: a.get(k, b.get(k)) for k in SIDE_KEYS if k in a or k in b}
    fb = {k: b.get(k, a.get(k)) for k in SIDE_KEYS if k in a or k in b}
    if "bench" in fa and fa["bench"] != fb["bench"]:
        raise ValueError(f"A and B are on different benches ({fa['bench']!r} vs {fb['bench']!r}); "
                         "question ids of two benches are different questions and are never paired")
    pair_keys = ["bench", "question_id", "turn"] + [k for k in FREE_KEYS if k not in fa]
    return fa, fb, pair_keys


def describe_comparison(a: dict, b: dict) -> str:
    """A short label: ``"gpt-4o vs gpt-4.1-2025-04-14 on shisa-ai/shisa-v2-llama3.1-8b"``."""
    fa, fb, pair_keys = resolve_sides(a, b)
    differ = [k for k in SIDE_KEYS if k in fa and fa[k] != fb[k]]
    if differ:
        label = " / ".join(str(fa[k]) for k in differ) + " vs " + " / ".join(str(fb[k]) for k in differ)
    else:
        label = "A vs B (the same selection)"
    common = {k: fa[k] for k in SIDE_KEYS if k in fa and k not in differ}
    if "model" in common:
        label += f" on {common['model']}"
    if "judge" in common:
        label += f", judged by {common['judge']}"
    if "bench" in common:
        label += f" ({common['bench']})"
    per = [k for k in ("judge", "model") if k in pair_keys]
    if per:
        label += ", paired per " + " and ".join(per)
    return label


def _paired_items(store: Store, fa: dict, fb: dict, pair_keys: list[str]) -> pd.DataFrame:
    params, conds = {}, {"a": [], "b": []}
    for side, filt in (("a", fa), ("b", fb)):
        for key, value in filt.items():
            params[f"{side}_{key}"] = value
            conds[side].append(f"{key} = ${side}_{key}")
    free = [k for k in pair_keys if k in FREE_KEYS]
    using = ", ".join(pair_keys)
    sql = f"""
        WITH a AS (SELECT * FROM item_scores WHERE score IS NOT NULL {''.join(' AND ' + c for c in conds['a'])}),
             b AS (SELECT * FROM item_scores WHERE score IS NOT NULL {''.join(' AND ' + c for c in conds['b'])})
        SELECT bench, question_id, turn, {''.join(k + ', ' for k in free)}
               coalesce(a.category, b.category) AS category, a.score AS score_a, b.score AS score_b
        FROM a JOIN b USING ({using})
        ORDER BY {using}"""
    with store.read() as cur:
        df = cur.execute(sql, params).df()
    df["category"] = df["category"].fillna(NO_CATEGORY).astype(object)
    # A key that A and B fix is a constant: group by it as A's value.
    for key in FREE_KEYS:
        if key not in df.columns:
            df[key] = fa[key]
    return df


def _bootstrap(diff: np.ndarray, cluster: np.ndarray, stratum: np.ndarray, n_boot: int,
               rng: np.random.Generator) -> np.ndarray:
    """Bootstrap distribution of mean(diff), resampling whole clusters with replacement within strata.

    ``cluster`` and ``stratum`` are integer codes per item. Each draw picks, in every stratum, as many
    clusters as the stratum has, with replacement, and takes the mean over all items of the drawn
    clusters (a cluster drawn twice counts twice). One (n_boot x clusters) matrix of indices per
    stratum; no Python loop over draws.
    """
    sums = np.bincount(cluster, weights=diff)
    counts = np.bincount(cluster).astype(float)
    cl_stratum = np.zeros(len(sums), dtype=np.int64)
    cl_stratum[cluster] = stratum
    present = counts > 0
    num = np.zeros(n_boot)
    den = np.zeros(n_boot)
    for s in np.unique(cl_stratum[present]):
        ids = np.flatnonzero(present & (cl_stratum == s))
        draw = ids[rng.integers(0, len(ids), size=(n_boot, len(ids)))]
        num += sums[draw].sum(axis=1)
        den += counts[draw].sum(axis=1)
    return num / den


def _row_stats(score_a: np.ndarray, score_b: np.ndarray, question: np.ndarray, stratum: np.ndarray,
               n_boot: int, alpha: float, rng: np.random.Generator) -> dict:
    diff = score_a - score_b
    cluster = np.unique(question, return_inverse=True)[1]  # 0..n_questions-1 within this row
    n_q = int(cluster.max()) + 1 if len(cluster) else 0
    out = dict(n_items=len(diff), n_questions=n_q, mean_a=float(score_a.mean()),
               mean_b=float(score_b.mean()), delta=float(diff.mean()),
               ci_low=np.nan, ci_high=np.nan, p_value=np.nan)
    if n_q >= 2:  # one question gives no spread to resample
        boot = _bootstrap(diff, cluster, stratum, n_boot, rng)
        lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2])
        p = 2 * min(np.mean(boot <= 0), np.mean(boot >= 0))
        out.update(ci_low=float(lo), ci_high=float(hi), p_value=float(min(1.0, max(p, 1 / n_boot))))
    return out


COLUMNS = ["level", "n_items", "n_questions", "mean_a", "mean_b", "delta", "ci_low", "ci_high",
           "p_value", "p_holm", "holm_family", "significant", "inside_noise"]


def paired_deltas(store: Store, a: dict, b: dict, *, by=("category", "turn"), n_boot: int = 2000,
                  seed: int = 0, alpha: float = 0.05) -> pd.DataFrame:
    """Paired A - B deltas per group, with bootstrap intervals and Holm-corrected p-values.

    **Pairing.** An item is one judged question-turn. A and B are paired on the same bench,
    question and turn, and on every one of harness, judge and model that neither A nor B names
    (leave ``model`` unset and each model is compared with itself under the two judges). A key
    named on one side only applies to both sides. Items scored on only one side (missing or
    unparseable judgment) are left out; ``n_items`` counts the pairs. Never across benches.

    **Rows.** One row per group of ``by`` (default: each category x turn, ``level="cell"``), then
    summary rows over every coarser grouping: each category over both turns (``level="category"``,
    ``turn`` <NA>), each turn over all categories (``level="turn"``, ``category="(all)"``), and
    everything (``level="all"``). Summary rows are computed from the items, not averaged from cells,
    so their n is larger and their interval narrower.

    **Interval.** ``delta = mean(A - B)`` over the paired items, on the 1-10 scale (positive: A
    higher). ``ci_low``/``ci_high`` are the ``1 - alpha`` percentile interval of a paired
    bootstrap with ``n_boot`` draws. The bootstrap resamples *questions*, not items: the two turns
    of one question share a prompt and an answer history, and Swallow's 5 samples of an item share
    a question, so they are not independent data points; a drawn question carries all its items in
    the row (both turns, every model when models are paired). Rows spanning several categories
    draw questions within each category (stratified) so each category keeps its size. With one
    question in a row there is nothing to resample and the interval is left empty.

    **p-values.** ``p_value`` is the two-sided bootstrap p for delta = 0:
    ``2 * min(share of draws <= 0, share >= 0)``, capped at 1 and floored at ``1/n_boot`` (a
    bootstrap cannot show a smaller p). ``p_holm`` applies Holm's step-down correction
    (``holm``: the numbers of statsmodels ``multipletests(method="holm")``) within one family: the rows of the same
    ``level`` in this table (e.g. the 16 category x turn cells; the 8 category rows; the 2 turn
    rows; the single "all" row is its own family). ``holm_family`` names it. ``significant`` is
    ``p_holm < alpha``; ``inside_noise`` is True when the interval includes 0
    (or when there is no interval).

    **Little data.** MT-Bench has 10 questions per category. A category x turn cell is 10 items
    from 10 questions; expect intervals of a point or more and treat a cell delta of a few tenths
    as noise unless it survives Holm. The "all" row (80 questions) is the one to trust.

    Deterministic for a given ``seed``. ``df.attrs`` holds ``a``, ``b`` (effective filters),
    ``pair_keys``, ``label`` (``describe_comparison``), ``method`` and the bootstrap settings.
    """
    fa, fb, pair_keys = resolve_sides(a, b)
    by = list(by)
    unknown = [k for k in by if k not in BY_KEYS]
    if unknown:
        raise ValueError(f"unknown group key(s) {', '.join(map(repr, unknown))}; choose from {', '.join(BY_KEYS)}")
    if n_boot < 1:
        raise ValueError("n_boot must be at least 1")
    items = _paired_items(store, fa, fb, pair_keys)
    score_a, score_b = items["score_a"].to_numpy(float), items["score_b"].to_numpy(float)
    question = pd.factorize(items["bench"] + "\x00" + items["question_id"])[0]
    stratum = pd.factorize(items["category"])[0]
    rng = np.random.default_rng(seed)
    rows = []
    # Cells first, then every coarser grouping (fewer keys), ending with "all".
    for size in range(len(by), -1, -1):
        for keys in combinations(by, size):
            keys = list(keys)
            level = "cell" if size == len(by) else ("all" if size == 0 else "+".join(keys))
            groups = (sorted(items.groupby(keys, dropna=False).indices.items(), key=lambda kv: str(kv[0]))
                      if keys else [((), np.arange(len(items)))])
            family = []
            for values, idx in groups:
                if not len(idx):
                    continue
                values = dict(zip(keys, values if isinstance(values, tuple) else (values,)))
                row = {k: values[k] if k in keys else (pd.NA if k == "turn" else ALL) for k in by}
                row.update(level=level, **_row_stats(score_a[idx], score_b[idx], question[idx], stratum[idx],
                                                     n_boot, alpha, rng))
                family.append(row)
            _holm(family, level, alpha)
            rows.extend(family)
    df = pd.DataFrame(rows, columns=by + COLUMNS)
    if "turn" in by:
        df["turn"] = df["turn"].astype("Int64")
    df["significant"] = df["significant"].astype(bool)
    df.attrs.update(a=fa, b=fb, pair_keys=pair_keys, label=describe_comparison(a, b), method=METHOD,
                    n_boot=n_boot, seed=seed, alpha=alpha, note=_why_empty(store, fa, fb, pair_keys) if df.empty else "")
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


def holm(p_values) -> np.ndarray:
    """Holm step-down adjusted p-values; the same numbers as statsmodels
    ``multipletests(p, method="holm")[1]`` (which runs ``gc.collect()`` on every call, ~60 ms here)."""
    p = np.asarray(p_values, dtype=float)
    if p.size == 0:
        return p.copy()
    order = np.argsort(p, kind="mergesort")
    stepped = np.maximum.accumulate(p[order] * np.arange(p.size, 0, -1))
    out = np.empty_like(p)
    out[order] = np.minimum(stepped, 1.0)
    return out


def _holm(family: list[dict], level: str, alpha: float) -> None:
    """Holm-adjust the p-values of one family in place (rows without a p-value stay out of it)."""
    tested = [r for r in family if not np.isnan(r["p_value"])]
    adjusted = holm([r["p_value"] for r in tested])
    name = f"{level} rows ({len(tested)})"
    for r in family:
        no_ci = np.isnan(r["ci_low"])
        r.update(p_holm=np.nan, holm_family=name, significant=False,
                 inside_noise=bool(no_ci or r["ci_low"] <= 0 <= r["ci_high"]))
    for r, p in zip(tested, adjusted):
        r.update(p_holm=float(p), significant=bool(p < alpha))
