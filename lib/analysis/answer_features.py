"""Scores split by what the answers are: Japanese share, length, code blocks, ``<think>``, refusal phrases.

Features are read from the stored answer text (visible text: ``<think>`` removed, as the judge's rating concerns
it), averaged over Swallow's samples of one answer turn, and joined to ``item_scores`` on (bench, model, question,
turn). ``scores_by_feature`` gives, per judge (or run) and feature bin, the mean item score, the items and the
questions behind it. No interval is shown: items of one question are not independent, and the per-bin interval
has not been calibrated by simulation (Compare's question-level t intervals have).
"""
from __future__ import annotations

import pandas as pd

from lib.store import Store

JAPANESE = r"[\x{3040}-\x{30ff}\x{4e00}-\x{9fff}\x{ff66}-\x{ff9f}]"
REFUSAL = (r"(?i)(i cannot|i can't|i'm sorry|i am sorry|as an ai|申し訳(ありません|ございません)|お答えできません|"
           r"できかねます|回答できません)")
FEATURES = {
    "japanese": "share of Japanese characters in the visible answer",
    "length": "visible answer length (characters)",
    "code": "has a ``` code block",
    "think": "has <think> reasoning",
    "refusal": "contains a refusal phrase",
}
# bins: (label, lower bound inclusive) in order; booleans: no / yes
_BINS = {
    "japanese": [("< 50 %", 0.0), ("50-90 %", 0.5), ("≥ 90 %", 0.9)],
    "length": [("< 300", 0), ("300-999", 300), ("1000-2999", 1000), ("≥ 3000", 3000)],
}


def answer_features(store: Store, bench: str) -> pd.DataFrame:
    """One row per answer turn of ``bench``: model, question_id, turn, japanese (0-1), length, code, think, refusal
    (samples averaged; booleans: any sample)."""
    with store.read() as cur:
        return cur.execute("""
            WITH a AS (
                SELECT model, question_id, turn, text_no_think AS t, has_think FROM answers_view WHERE bench = $bench)
            SELECT model, question_id, turn,
                   avg(length(regexp_replace(t, $not_ja, '', 'g'))
                       / nullif(length(regexp_replace(t, '\\s', '', 'g')), 0)) AS japanese,
                   avg(length(t)) AS length,
                   bool_or(contains(t, '```')) AS code,
                   bool_or(has_think) AS think,
                   bool_or(regexp_matches(t, $refusal)) AS refusal
            FROM a GROUP BY ALL""", {"bench": bench, "not_ja": "[^" + JAPANESE[1:-1] + "]",
                                     "refusal": REFUSAL}).df()


def feature_bin(feature: str, values: pd.Series) -> pd.Series:
    """The bin label of each value (booleans: 'yes' / 'no'; missing: '—')."""
    if feature not in FEATURES:
        raise ValueError(f"unknown answer feature {feature!r}; choose from {', '.join(FEATURES)}")
    if feature not in _BINS:
        return values.map(lambda v: "—" if pd.isna(v) else ("yes" if v else "no"))
    bins = _BINS[feature]

    def label(v):
        if pd.isna(v):
            return "—"
        return [name for name, low in bins if v >= low][-1]
    return values.map(label)


def bin_order(feature: str) -> list[str]:
    return [name for name, _ in _BINS[feature]] if feature in _BINS else ["no", "yes"]


def scores_by_feature(store: Store, bench: str, feature: str, judges: list[str] | None = None) -> pd.DataFrame:
    """Per judge and bin of ``feature``: ``mean`` item score, ``items``, ``questions``; bins in their order."""
    feats = answer_features(store, bench)
    with store.read() as cur:
        scores = cur.execute("SELECT harness, judge, model, question_id, turn, score FROM item_scores "
                             "WHERE bench = ? AND score IS NOT NULL", [bench]).df()
    if judges:
        scores = scores[scores["judge"].isin(judges)]
    joined = scores.merge(feats, on=["model", "question_id", "turn"], how="inner")
    if joined.empty:
        return pd.DataFrame(columns=["judge", "bin", "mean", "items", "questions"])
    joined["bin"] = feature_bin(feature, joined[feature])
    out = (joined.groupby(["judge", "bin"], sort=False)
           .agg(mean=("score", "mean"), items=("score", "size"), questions=("question_id", "nunique"))
           .reset_index())
    order = {b: i for i, b in enumerate(bin_order(feature) + ["—"])}
    return out.sort_values(["judge", "bin"], key=lambda s: s.map(order) if s.name == "bin" else s).reset_index(drop=True)
