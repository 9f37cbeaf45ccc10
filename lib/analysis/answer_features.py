"""Scores and gaps split by what the answers are: Japanese share, length, code blocks, ``<think>``, refusal phrases.

The features come from the ``answer_features`` table (``lib.text_features`` holds the rules; filled once at import).
An item (model, question, turn) gets the mean of its samples' Japanese share and length and "yes" for a boolean
when any sample has it (Swallow's samples of one answer turn); items join ``item_scores`` by the model key
(``lib.vocab.model_key``) of the answer's model, model_id or file-name model.

- ``scores_by_feature``: per judge (or model) and bin, the mean item score with a 95% **question-clustered**
  t interval (``lib.analysis.deltas.cluster_t`` on the question totals of scores: the items of one question move
  together), ``n_items`` and ``n_questions``.
- ``gap_by_feature``: for two judges or runs compared, per bin the paired A − B delta with Compare's
  question-level t interval (``deltas.compare_pairs`` with the bin as the row, Holm over the bins).
  Two judges on the same answers: the bin is the shared answer's. Two models, or one model under two harnesses
  (different answers): the bin is side A's answer unless ``side='b'``.

Calibrated by simulation (``lib.analysis.feature_calibration``, ``bench/calibrate_feature_bins.py``): the clustered
interval of a bin mean and the paired interval of a bin delta at 10 and 80 questions per bin, bins cutting across
questions (a question's answers fall in different bins).
"""
from __future__ import annotations

import pandas as pd

from lib.analysis import deltas
from lib.analysis.deltas import cluster_t
from lib.errors import UsageError
from lib.store import Store
from lib.text_features import SQL_PARAMS, features_sql
from lib.vocab import model_key, model_key_sql

FEATURES = {
    "japanese": "share of Japanese characters in the visible answer",
    "length": "visible answer length (characters)",
    "code": "has a ``` code block",
    "think": "has <think> reasoning",
    "refusal": "contains a refusal phrase",
}
COLUMN = {"japanese": "japanese_share", "length": "length", "code": "has_code", "think": "has_think",
          "refusal": "refusal"}
# bins: (label, lower bound inclusive) in order; booleans: no / yes
BINS = {
    "japanese": [("< 50 %", 0.0), ("50-90 %", 0.5), ("≥ 90 %", 0.9)],
    "length": [("< 300", 0), ("300-999", 300), ("1000-2999", 1000), ("≥ 3000", 3000)],
}
MISSING = "—"
MEAN_COLUMNS = ["feature", "bin", "mean", "ci_low", "ci_high", "n_items", "n_questions"]
GAP_COLUMNS = ["feature", "bin", "n_questions", "n_items", "mean_a", "mean_b", "delta", "ci_low", "ci_high",
               "p_value", "p_adjusted", "significant"]
METHOD = ("Bins of an answer feature (lib.text_features; samples of one answer averaged). mean: the bin's mean item "
          "score with a 95% question-clustered t interval (the items of one question move together). delta: paired "
          "A - B with Compare's question-level t interval; p_adjusted: Holm over the bins. Calibrated by simulation "
          "at 10 and 80 questions per bin (bench/calibrate_feature_bins.py).")


def check_feature(feature: str) -> str:
    if feature not in FEATURES:
        raise UsageError(f"unknown answer feature {feature!r}; choose from {', '.join(FEATURES)}")
    return feature


def feature_bin(feature: str, values: pd.Series) -> pd.Series:
    """The bin label of each value (booleans: 'yes' / 'no'; missing: '—')."""
    check_feature(feature)
    if feature not in BINS:
        return values.map(lambda v: MISSING if pd.isna(v) else ("yes" if v else "no"))
    bins = BINS[feature]

    def label(v):
        if pd.isna(v):
            return MISSING
        return [name for name, low in bins if v >= low][-1]
    return values.map(label)


def bin_order(feature: str) -> list[str]:
    return [name for name, _ in BINS[feature]] if feature in BINS else ["no", "yes"]


def features_source(cur) -> tuple[str, dict]:
    """What to read the features from: the ``answer_features`` table, or (a store opened read-only before its first
    writable open has none yet) the same rules computed on the fly from ``answers``. (SQL, parameters)."""
    stored = cur.execute("SELECT 1 FROM information_schema.tables WHERE table_name = 'answer_features' "
                         "AND table_catalog = current_database()").fetchone()
    if stored:
        return "answer_features", {}
    on_the_fly = (f"(SELECT bench, model, model_id, file_model, question_id, turn, sample, {features_sql('text')} "
                  "FROM answers)")
    return on_the_fly, dict(SQL_PARAMS)


def item_features(store: Store, bench: str, model: str | None = None, *, first_sample: bool = False) -> pd.DataFrame:
    """One row per answered item of ``bench`` (of ``model``, by model key, when given): model_key, question_id,
    turn, japanese_share, length (sample means), has_code, has_think, refusal (any sample). ``first_sample``:
    sample 0 only (when the scores are sample 0's: ``--swallow-samples first``)."""
    keys = [model_key_sql(f"coalesce({c}, '')") for c in ("model", "model_id", "file_model")]
    where = f" AND {model_key_sql('$model')} IN ({', '.join(keys)})" if model is not None else ""
    where += " AND sample = 0" if first_sample else ""
    params = {"bench": bench} | ({"model": model} if model is not None else {})
    with store.read() as cur:
        table, extra = features_source(cur)
        params |= extra
        return cur.execute(f"""
            SELECT {keys[0]} AS model_key, question_id, turn, avg(japanese_share) AS japanese_share,
                   avg(length) AS length, bool_or(has_code) AS has_code, bool_or(has_think) AS has_think,
                   bool_or(refusal) AS refusal
            FROM {table} WHERE bench = $bench{where} GROUP BY ALL""", params).df()


def _clustered_means(frame: pd.DataFrame, group: list[str], alpha: float) -> pd.DataFrame:
    per_q = frame.groupby(group + ["question_id"], sort=False).agg(s=("score", "sum"), k=("score", "size"))
    rows = []
    for key, part in per_q.groupby(level=list(range(len(group))), sort=False):
        t = cluster_t(part["s"].to_numpy(), part["k"].to_numpy(), alpha)
        rows.append(dict(zip(group, key if isinstance(key, tuple) else (key,)),
                         mean=float(t["delta"]), ci_low=float(t["ci_low"]), ci_high=float(t["ci_high"]),
                         n_items=int(part["k"].sum()), n_questions=int(t["n_questions"])))
    return pd.DataFrame(rows)


def _ordered(df: pd.DataFrame, feature: str, first: str | None) -> pd.DataFrame:
    order = {b: i for i, b in enumerate(bin_order(feature) + [MISSING])}
    keys = ([first] if first else []) + ["bin"]
    return df.sort_values(keys, key=lambda s: s.map(order) if s.name == "bin" else s.astype(str),
                          kind="mergesort").reset_index(drop=True)


def scores_by_feature(store: Store, bench: str, feature: str, judges: list[str] | None = None, *,
                      by: str = "judge", alpha: float = 0.05) -> pd.DataFrame:
    """Per ``by`` (judge or model) and bin of ``feature``: feature, bin, mean item score, ci_low, ci_high
    (question-clustered t), n_items, n_questions; bins in their order."""
    check_feature(feature)
    if by not in ("judge", "model"):
        raise UsageError(f"--by: choose judge or model, not {by!r}")
    feats = item_features(store, bench)
    with store.read() as cur:
        scores = cur.execute("SELECT judge, model, question_id, turn, score FROM item_scores "
                             "WHERE bench = ? AND score IS NOT NULL", [bench]).df()
    if judges:
        scores = scores[scores["judge"].isin(judges)]
    scores = scores.assign(model_key=scores["model"].map(model_key))
    joined = scores.merge(feats, on=["model_key", "question_id", "turn"], how="inner")
    columns = [by] + MEAN_COLUMNS
    if joined.empty:
        return pd.DataFrame(columns=columns)
    joined["bin"] = feature_bin(feature, joined[COLUMN[feature]])
    out = _clustered_means(joined, [by, "bin"], alpha).assign(feature=feature)
    return _ordered(out[columns], feature, by)


def gap_by_feature(pairs: pd.DataFrame, item_feats: pd.DataFrame, feature: str, *, on: dict[str, str],
                   alpha: float = 0.05) -> pd.DataFrame:
    """Per bin of ``feature``: the paired A − B table (``GAP_COLUMNS``) of an already-paired item frame.

    ``pairs`` as ``deltas.compare_pairs`` takes it (question, score_a, score_b, ...); ``item_feats`` as
    ``item_features`` gives it; ``on`` maps the pairs' columns to the features' (model_key, question_id, turn).
    Items without stored answer text fall in bin '—'."""
    check_feature(feature)
    left = pairs.copy()
    right = item_feats.rename(columns={v: k for k, v in on.items()})[list(on) + [COLUMN[feature]]]
    left = left.merge(right, on=list(on), how="left")
    left["category"] = feature_bin(feature, left[COLUMN[feature]])
    if left.empty:
        return pd.DataFrame(columns=GAP_COLUMNS)
    table = deltas.compare_pairs(left, levels=("category",), alpha=alpha)
    table = table.rename(columns={"category": "bin"}).assign(feature=feature)
    return _ordered(table[GAP_COLUMNS], feature, None)


def compare_by_feature(store: Store, a: dict, b: dict, feature: str, *, side: str = "a",
                       alpha: float = 0.05) -> pd.DataFrame:
    """Two selections of one bench (Compare's ``deltas.paired_items``), per bin of ``feature``. When A and B name
    different models the answers differ: the bin is ``side``'s answer. ``attrs``: label, note, binned_by."""
    pairs = deltas.paired_items(store, a, b)
    fa, fb = pairs.attrs["a"], pairs.attrs["b"]
    models_differ = "model" not in pairs.attrs["pair_keys"]
    if pairs.empty:
        out = pd.DataFrame(columns=GAP_COLUMNS)
    else:
        bench = str(pairs["bench"].iloc[0])
        pairs = pairs.copy()
        model = (fa if side == "a" else fb)["model"] if models_differ else None
        pairs["model_key"] = model_key(model) if model is not None else pairs["model"].map(model_key)
        out = gap_by_feature(pairs, item_features(store, bench, model), feature,
                             on={"model_key": "model_key", "question_id": "question_id", "turn": "turn"}, alpha=alpha)
    out.attrs.update(label=pairs.attrs["label"], note=pairs.attrs.get("note", ""),
                     binned_by=(f"side {side.upper()}'s answers" if models_differ else "the shared answers"))
    return out


def harness_gap_by_feature(store: Store, a, b, feature: str, *, side: str = "a", swallow_samples: str = "mean",
                           exclude_links: tuple[str, ...] = (), alpha: float = 0.05) -> pd.DataFrame:
    """One model under two harnesses (``lib.analysis.runs.paired_runs``, linked questions) per bin of ``feature``
    of ``side``'s answers (the two runs answered separately)."""
    from lib.analysis import runs

    pairs = runs.paired_runs(store, a, b, swallow_samples=swallow_samples, exclude_links=exclude_links)
    run = runs.resolve_run(store, pairs.attrs["run_a" if side == "a" else "run_b"])
    if pairs.empty:
        out = pd.DataFrame(columns=GAP_COLUMNS)
    else:
        qid = "question_id_a" if side == "a" else "question_id_b"
        feats = item_features(store, run.bench, run.model, first_sample=swallow_samples == "first")
        out = gap_by_feature(pairs, feats.drop(columns=["model_key"]), feature,
                             on={qid: "question_id", "turn": "turn"}, alpha=alpha)
    out.attrs.update(label=pairs.attrs.get("label", ""), note=pairs.attrs.get("note", ""),
                     binned_by=f"run {side.upper()}'s answers ({run.label})")
    return out


FILTER_KEYS = ("japanese_min", "japanese_max", "length_min", "length_max", "has_code", "has_think", "refusal")


def feature_filter_sql(filters: dict, alias: str = "f") -> tuple[str, dict]:
    """SQL conditions over ``answer_features`` rows (alias ``alias``) for search filters: ``japanese_max``,
    ``japanese_min`` (0-1), ``length_min``, ``length_max``, ``has_code``, ``has_think``, ``refusal`` (True/False).
    Returns (conditions joined by AND or '', parameters)."""
    conds, params = [], {}
    for key, column, op in (("japanese_min", "japanese_share", ">="), ("japanese_max", "japanese_share", "<="),
                            ("length_min", "length", ">="), ("length_max", "length", "<=")):
        if filters.get(key) is not None:
            conds.append(f"{alias}.{column} {op} $ff_{key}")
            params[f"ff_{key}"] = float(filters[key])
    for key in ("has_code", "has_think", "refusal"):
        if filters.get(key) is not None:
            conds.append(f"{alias}.{key} = $ff_{key}")
            params[f"ff_{key}"] = bool(filters[key])
    return " AND ".join(conds), params


def answer_semijoin(filters: dict, record: str = "s") -> tuple[str | None, dict]:
    """A condition keeping the records (alias ``record``: bench, question_id, turn, model, sample) whose answer
    passes ``filters`` (``FILTER_KEYS``), matched by model key on the answer's model, model_id or file-name model.
    None when no filter is set."""
    conds, params = feature_filter_sql(filters)
    if not conds:
        return None, {}
    keys = " UNION ALL ".join(
        f"SELECT bench, question_id, turn, {model_key_sql(c)} AS k, sample FROM answer_features f WHERE {conds}"
        for c in ("f.model", "f.model_id", "f.file_model"))
    return (f"({record}.bench, {record}.question_id, {record}.turn, {model_key_sql(record + '.model')}, "
            f"{record}.sample) IN (SELECT (bench, question_id, turn, k, sample) FROM ({keys}))"), params
