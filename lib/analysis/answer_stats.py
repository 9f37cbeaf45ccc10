"""What stored answers tell without any call: samples, copies, spread and language, per run.

For a model that cannot be served, the stored data still show part of the answer side (issue 21):

- ``sample_scores(store, run)``: Swallow's sample 0 vs its N-sample mean (per item: the item's sample-0
  score and the mean of its valid samples; parse failures left out as everywhere), the delta with a
  question-level t interval (``lib.analysis.deltas.cluster_t``, questions as clusters), the mean per sample
  index, and the spread within items (mean standard deviation of an item's sample scores, share of items
  whose samples were scored differently);
- ``answer_facts(store, run)``: answers per item, the share of samples 1.. that are exact copies of sample 0
  (Swallow at temperature 0), and the share of answers that are not Japanese (``is_japanese``);
- ``stored_view(store, runs)``: one row per run with all of it (a DataFrame for a page or the CLI).

**Not Japanese** (``is_japanese``): ``lib.text_features`` (the one home of the rule): Japanese characters are under
half of the non-whitespace characters after ``<think>`` blocks are removed. This is the rule the bundled same-models
judge applies for its −2 (its README, rule (a)); Swallow's own ``japanese_ratio`` metric (markdown stripped,
punctuation counted) differs and is not this.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from lib.analysis.deltas import cluster_t
from lib.analysis.runs import Run
from lib.store import Store
from lib.text_features import is_japanese
from lib.vocab import model_key_sql

NOTE = ("copy_share: samples 1.. that are exact copies of sample 0; not_japanese_share: answers under half Japanese "
        "characters; sample0_minus_mean with a 95% question-level t interval (ci_low, ci_high).")


def _answers(store: Store, bench: str, model: str) -> pd.DataFrame:
    keys = ", ".join(model_key_sql(f"coalesce(a.{c}, '')") for c in ("model", "model_id", "file_model"))
    with store.read() as cur:
        return cur.execute(
            f"""SELECT a.question_id, a.turn, a.sample, a.text FROM answers a
                WHERE a.bench = $bench AND {model_key_sql('$model')} IN ({keys})
                  AND a.source_id = (SELECT max(source_id) FROM answers b WHERE b.bench = $bench
                                     AND {model_key_sql('$model')} IN ({keys.replace('a.', 'b.')}))""",
            {"bench": bench, "model": model}).df()


def answer_facts(store: Store, run: Run) -> dict:
    """Answers per item, exact-copy share of samples 1.., not-Japanese share (all answers and sample 0)."""
    return model_answer_facts(store, run.bench, run.model)


def model_answer_facts(store: Store, bench: str, model: str) -> dict:
    """``answer_facts`` of every run of ``model`` on ``bench``: they were judged on the same answers (a page keeps
    it per model, so another judge of the model reads no answer again)."""
    df = _answers(store, bench, model)
    if df.empty:
        return {"answers": 0, "items": 0, "samples_per_item": 0, "copy_share": None, "not_japanese_share": None,
                "not_japanese_share_sample0": None}
    first = df[df["sample"] == 0].set_index(["question_id", "turn"])["text"]
    rest = df[df["sample"] > 0]
    copies = None
    if len(rest):
        base = first.reindex(pd.MultiIndex.from_frame(rest[["question_id", "turn"]])).to_numpy()
        copies = float(np.mean(rest["text"].to_numpy() == base))
    not_ja = ~df["text"].map(is_japanese)
    return {"answers": len(df), "items": int(df.groupby(["question_id", "turn"]).ngroups),
            "samples_per_item": int(df.groupby(["question_id", "turn"])["sample"].nunique().max()),
            "copy_share": copies, "not_japanese_share": float(not_ja.mean()),
            "not_japanese_share_sample0": float(not_ja[df["sample"] == 0].mean())}


def sample_scores(store: Store, run: Run, alpha: float = 0.05) -> dict:
    """Sample 0 vs the N-sample mean of ``run``'s judgments (items with a valid sample-0 score)."""
    with store.read() as cur:
        df = cur.execute("""SELECT question_id, turn, sample, avg(score) AS score FROM single_judgments
                            WHERE harness = ? AND bench = ? AND judge = ? AND model = ? AND score IS NOT NULL
                            GROUP BY ALL""", list(run.selector.values())).df()
    empty = {"items": 0, "samples": 0, "mean_sample0": None, "mean_all": None, "delta": None, "ci_low": None,
             "ci_high": None, "n_questions": 0, "per_sample": [], "spread": None, "share_varied": None}
    if df.empty:
        return empty
    items = df.groupby(["question_id", "turn"])
    mean_all = items["score"].mean()
    s0 = df[df["sample"] == 0].set_index(["question_id", "turn"])["score"]
    both = pd.DataFrame({"s0": s0, "all": mean_all}).dropna()
    if both.empty:
        return empty
    d = (both["s0"] - both["all"]).groupby(level="question_id").agg(["sum", "count"])
    t = cluster_t(d["sum"].to_numpy(), d["count"].to_numpy(), alpha)
    sd = items["score"].std(ddof=0)
    multi = items["score"].count() > 1
    return {"items": len(both), "samples": int(df["sample"].nunique()),
            "mean_sample0": float(both["s0"].mean()), "mean_all": float(both["all"].mean()),
            "delta": float(t["delta"]), "ci_low": _f(t["ci_low"]), "ci_high": _f(t["ci_high"]),
            "n_questions": int(t["n_questions"]),
            "per_sample": [float(x) for x in df.groupby("sample")["score"].mean().sort_index()],
            "spread": float(sd[multi].mean()) if multi.any() else None,
            "share_varied": float((sd[multi] > 0).mean()) if multi.any() else None}


def _f(x) -> float | None:
    x = float(x)
    return None if np.isnan(x) else x


def stored_view(store: Store, runs: list[Run]) -> pd.DataFrame:
    """One row per run: answer facts and sample-score facts (no endpoint needed)."""
    return pd.DataFrame([view_row(r, answer_facts(store, r), sample_scores(store, r)) for r in runs])


def view_row(run: Run, a: dict, s: dict) -> dict:
    """``stored_view``'s row of ``run`` from its ``answer_facts`` and ``sample_scores``."""
    return {"run": run.label, "samples_per_item": a["samples_per_item"], "answers": a["answers"],
            "copy_share": a["copy_share"], "not_japanese_share": a["not_japanese_share"],
            "not_japanese_share_sample0": a["not_japanese_share_sample0"], "items_scored": s["items"],
            "mean_sample0": s["mean_sample0"], "mean_all_samples": s["mean_all"],
            "sample0_minus_mean": s["delta"], "ci_low": s["ci_low"], "ci_high": s["ci_high"],
            "mean_per_sample": s["per_sample"], "within_item_sd": s["spread"],
            "share_items_scored_differently": s["share_varied"]}
