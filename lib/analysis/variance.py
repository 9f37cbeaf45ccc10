"""Where the spread of scores comes from: a variance decomposition over judges, models and questions.

The design
----------
A single judgment's score is modelled as a sum of independent random effects (a crossed random-effects
model; every factor random, so a component is the variance of its effects):

    score = mu + model + question + answer (model x question) + judge + judge x model
                + judge x question + residual (judge x answer) + sample

- *question*: a prompt (bench, question, turn) is easy or hard for every model and judge;
- *answer*: one model's answer to one prompt is good or bad beyond the model's and the prompt's level;
- *judge*: a judge is lenient or strict overall; *judge x model*: a judge favours some models;
  *judge x question*: a judge finds some prompts easy that others do not;
- *residual*: what is left for one judge on one answer;
- *sample*: Swallow scores each answer 5 times (and FastChat re-runs repeat): the spread of one judge's
  repeated scores of the same answer (pooled within-item variance from ``item_scores.score_std``).

Estimation: ANOVA (expected mean squares, Searle et al. 1992) on the balanced judges x models x prompts
array of item scores: only prompts that every chosen judge scored for every chosen model are used
(``n_prompts`` says how many). With one item score per cell the three-way interaction is the residual;
it holds sample noise divided by the samples per item, which is taken out and reported as *sample*
(per judgment). Negative estimates (sampling noise around a zero component) are shown as 0, as is usual.
``share`` = component / sum of components.

Intervals: a cluster bootstrap over questions (both turns of a drawn question come along; expanded
percentile, as ``lib.analysis.agreement_ci``). They describe the uncertainty from *which questions* were
asked; with 2-3 judges or models the judge and model components rest on 2-3 values each and are
much less certain than their interval says (``note`` says so).
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd

from lib.analysis.agreement import check_choice, item_matrix
from lib.analysis.agreement_ci import N_BOOT, seeded_cluster_weights, interval
from lib.store import Store

COMPONENTS = ("model", "question", "answer", "judge", "judge_x_model", "judge_x_question", "residual", "sample")
COMPONENT_LABELS = {
    "model": "model", "question": "question (prompt)", "answer": "answer (model × question)", "judge": "judge",
    "judge_x_model": "judge × model", "judge_x_question": "judge × question", "residual": "residual (judge × answer)",
    "sample": "sample (repeat scores)"}
VARIANCE_COLUMNS = ["component", "variance", "share", "ci_low", "ci_high", "share_ci_low", "share_ci_high"]


def mean_squares_components(y: np.ndarray) -> dict[str, np.ndarray]:
    """Raw ANOVA estimates of a balanced array ``y[..., J, M, P]`` (vectorised over leading axes): model,
    question, answer, judge, judge_x_model, judge_x_question and the three-way residual (unclipped)."""
    j, m, p = y.shape[-3:]
    grand = y.mean((-3, -2, -1), keepdims=True)
    yj = y.mean((-2, -1), keepdims=True)
    ym = y.mean((-3, -1), keepdims=True)
    yp = y.mean((-3, -2), keepdims=True)
    yjm = y.mean(-1, keepdims=True)
    yjp = y.mean(-2, keepdims=True)
    ymp = y.mean(-3, keepdims=True)

    def ms(effect, df):
        return (effect ** 2).sum((-3, -2, -1)) / df if df > 0 else np.full(y.shape[:-3], np.nan)

    full = np.ones(y.shape)
    ms_j = ms((yj - grand) * full, j - 1)
    ms_m = ms((ym - grand) * full, m - 1)
    ms_p = ms((yp - grand) * full, p - 1)
    ms_jm = ms((yjm - yj - ym + grand) * full, (j - 1) * (m - 1))
    ms_jp = ms((yjp - yj - yp + grand) * full, (j - 1) * (p - 1))
    ms_mp = ms((ymp - ym - yp + grand) * full, (m - 1) * (p - 1))
    ms_e = ms(y - yjm - yjp - ymp + yj + ym + yp - grand, (j - 1) * (m - 1) * (p - 1))
    return {
        "residual": ms_e,
        "judge_x_model": (ms_jm - ms_e) / p,
        "judge_x_question": (ms_jp - ms_e) / m,
        "answer": (ms_mp - ms_e) / j,
        "judge": (ms_j - ms_jm - ms_jp + ms_e) / (m * p),
        "model": (ms_m - ms_jm - ms_mp + ms_e) / (j * p),
        "question": (ms_p - ms_jp - ms_mp + ms_e) / (j * m),
    }


def decompose(y: np.ndarray, clusters, *, sample_var: float = 0.0, samples_per_item: float = 1.0,
              n_boot: int = N_BOOT, alpha: float = 0.05, seed: int = 0) -> pd.DataFrame:
    """The decomposition of a balanced array ``y[J, M, P]`` whose prompts belong to questions ``clusters[P]``,
    with the pooled within-item (sample) variance ``sample_var`` of single judgments and the mean number of
    samples per item. Rows in ``COMPONENTS`` order; columns ``VARIANCE_COLUMNS``."""
    y = np.asarray(y, dtype=float)
    labels, index = np.unique(np.asarray(clusters), return_inverse=True)
    g = len(labels)

    one_judge = y.shape[-3] == 1

    def components(arr) -> dict[str, np.ndarray]:
        if one_judge:   # model x prompt, one score per cell: the answer part holds judge x answer too
            z = arr[..., 0, :, :]
            m, p = z.shape[-2:]
            zm, zp, zz = z.mean(-1, keepdims=True), z.mean(-2, keepdims=True), z.mean((-2, -1), keepdims=True)
            ms_m = ((zm - zz) ** 2).sum((-2, -1)) * p / (m - 1)
            ms_p = ((zp - zz) ** 2).sum((-2, -1)) * m / (p - 1)
            ms_mp = ((z - zm - zp + zz) ** 2).sum((-2, -1)) / ((m - 1) * (p - 1))
            zero = np.zeros(np.shape(ms_m))
            raw = {"model": (ms_m - ms_mp) / p, "question": (ms_p - ms_mp) / m,
                   "answer": ms_mp - sample_var / samples_per_item, "judge": zero, "judge_x_model": zero,
                   "judge_x_question": zero, "residual": zero}
        else:
            raw = mean_squares_components(arr)
            raw["residual"] = raw["residual"] - sample_var / samples_per_item
        out = {c: np.maximum(raw[c], 0.0) for c in COMPONENTS if c != "sample"}
        out["sample"] = np.full(np.shape(raw["residual"]), float(sample_var))
        total = sum(out.values())
        return {c: out[c] for c in COMPONENTS} | {f"share_{c}": out[c] / total for c in COMPONENTS}

    point = components(y)
    boot = None
    if g >= 2:
        weights = seeded_cluster_weights(g, n_boot, seed).astype(int)
        members = [np.flatnonzero(index == q) for q in range(g)]
        reps = []
        for w in weights:   # the drawn questions' prompts, each as often as drawn (a balanced array again)
            cols = np.concatenate([np.tile(members[q], k) for q, k in enumerate(w) if k])
            reps.append(y[..., cols])
        sizes = {r.shape[-1] for r in reps}
        boot = components(np.stack(reps)) if len(sizes) == 1 else {
            key: np.array([components(r)[key] for r in reps]) for key in point}
    rows = []
    for c in COMPONENTS:
        row = {"component": c, "variance": float(point[c]), "share": float(point[f"share_{c}"])}
        for key, name in ((c, ""), (f"share_{c}", "share_")):
            lo = hi = math.nan   # the sample variance is pooled over every item, not redrawn: no interval
            if boot is not None and key != "sample":
                lo, hi = interval(point[key], boot[key], None, alpha, "expanded", g)
            row[f"{name}ci_low"], row[f"{name}ci_high"] = float(lo), float(hi)
        rows.append(row)
    return pd.DataFrame(rows, columns=VARIANCE_COLUMNS)


def balanced_array(matrix: pd.DataFrame, judges: list[str]) -> tuple[np.ndarray, list[str], np.ndarray]:
    """``(y[J, M, P], models, question key per prompt)`` from an item matrix: the prompts (bench, question, turn)
    every judge scored for every model."""
    complete = matrix.dropna(subset=judges)
    models = sorted(complete["model"].unique())
    prompt_keys = ["bench", "question_id", "turn"]
    counts = complete.groupby(prompt_keys)["model"].nunique()
    full = counts[counts == len(models)].index
    kept = complete.set_index(prompt_keys).loc[full].reset_index() if len(full) else complete.iloc[:0]
    kept = kept.sort_values(prompt_keys + ["model"])
    p = len(full)
    y = np.stack([kept[j].to_numpy(float).reshape(p, len(models)).T for j in judges]) if p else \
        np.zeros((len(judges), len(models), 0))
    prompts = kept.drop_duplicates(prompt_keys)
    clusters = (prompts["bench"].astype(str) + "\x1f" + prompts["question_id"].astype(str)).to_numpy()
    return y, models, clusters


def sample_variance(store: Store, judges: list[str], bench: str | None) -> tuple[float, float]:
    """Pooled within-item variance of the judges' usable scores (repeats, Swallow samples) and the mean number
    of usable scores per item. (0, 1) when no item has two."""
    params = {f"j{i}": j for i, j in enumerate(judges)}
    where = f"judge IN ({', '.join(f'$j{i}' for i in range(len(judges)))}) AND n_valid > 0"
    if bench is not None:
        where += " AND bench = $bench"
        params["bench"] = bench
    with store.read() as cur:
        ss, dof, items, scores = cur.execute(f"""
            SELECT sum((n_valid - 1) * coalesce(score_std, 0) ^ 2), sum(n_valid - 1), count(*), sum(n_valid)
            FROM item_scores WHERE {where}""", params).fetchone()
    if not dof:
        return 0.0, 1.0
    return float(ss) / float(dof), float(scores) / float(items)


def variance_decomposition(store: Store, judges: list[str], *, bench: str | None = None,
                           category: str | None = None, n_boot: int = N_BOOT, seed: int = 0) -> pd.DataFrame:
    """``decompose`` of the judges' scores on ``bench`` (the prompts every judge scored for every model).
    ``attrs``: n_judges, n_models, n_prompts, n_questions and a ``note`` on how to read it."""
    judges = check_choice(judges, minimum=1)  # item_matrix checks the names against the store
    matrix = item_matrix(store, judges, bench=bench, category=category)
    y, models, clusters = balanced_array(matrix, judges)
    svar, per_item = sample_variance(store, judges, bench)
    if y.shape[1] < 2 or y.shape[2] < 2:
        df = pd.DataFrame(columns=VARIANCE_COLUMNS)
    else:
        df = decompose(y, clusters, sample_var=svar, samples_per_item=per_item, n_boot=n_boot, seed=seed)
    n_q = len(np.unique(clusters))
    one = ("One judge: judge parts cannot be told apart, so the answer part includes the judge's reading of each "
           "answer (judge x answer). ") if len(judges) == 1 else ""
    plural = "s" if len(judges) > 1 else ""
    note = (one + f"{len(judges)} judge{plural} x {len(models)} models x {y.shape[2]} prompts ({n_q} questions, "
            "both turns) that every judge scored for every model; ANOVA estimates, negative ones shown as 0; 95% "
            "intervals: cluster bootstrap over questions. With few judges or models the judge and model components "
            "rest on that many values: their intervals cover only the question sampling.")
    df.attrs.update(n_judges=len(judges), n_models=len(models), n_prompts=int(y.shape[2]), n_questions=n_q,
                    note=note)
    return df
