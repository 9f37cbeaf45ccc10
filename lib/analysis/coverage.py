"""What a page shows before the analyst picks, and what its counts count: one rule for every page.

Defaults by coverage. A judge's coverage is its judged items with a usable score (``item_scores``), and its share:
on the bench where it covers most, its items over the best-covered judge's there. Pages that preselect judges (the
Overview chart, Compare, the review queue, Distributions) take them in ``rank_judges`` order: largest share first,
then most items; on a tie, a judge from an imported harness before a re-judge (``harness.REJUDGE``), then by name.
The analysts' own verdicts (``human:<author>``) are never preselected. A judge with a share under FULL_SHARE (a
5-item Workbench batch beside 160-item judges) is not preselected either, unless fewer than two judges would be
left: so a scratch re-judge never displaces a full-coverage judge unless it is picked.

Counts. ``MODELS_RULE`` and ``JUDGES_RULE`` say what "models" and "judges" count wherever a page shows a count:
models are answering models with a judgment, a model's names in several harnesses joined by aliases into one;
judges are LLM judges (imported and re-judges), and the analysts are counted apart as reviewers.
"""
from __future__ import annotations

from typing import Iterable, Mapping

import pandas as pd

from lib import harness as H
from lib.store import HUMAN_PREFIX, Store

FULL_SHARE = 0.5  # a judge with less than this share of the best-covered judge's items is not preselected

MODELS_RULE = ("Models: answering models with a judgment; one model's names in several harnesses (joined by "
               "aliases, e.g. hosted_vllm/org/name and org/name) count once.")
JUDGES_RULE = ("Judges: LLM judges, imported or re-judged on the Workbench; the analysts' own verdicts "
               "(human:NAME) are counted apart as reviewers.")


def is_human(judge: str) -> bool:
    return str(judge).startswith(HUMAN_PREFIX)


def judge_items(store: Store, bench: str | None = None) -> pd.DataFrame:
    """One row per judge: ``items`` (judged items with a usable score), ``share`` (on the bench where it covers
    most, its items over the best-covered judge's items there: 1.0 = full coverage), ``rejudge`` (a re-judge run),
    ``human`` (an analyst); over every bench or one."""
    where, params = ("WHERE bench = ?", [bench]) if bench is not None else ("", [])
    with store.read() as cur:
        df = cur.execute(f"""
            WITH per_bench AS (
                SELECT judge, bench, count(*) FILTER (score IS NOT NULL) AS items,
                       bool_or(harness = ?) AS rejudge, bool_or(harness = ?) AS human
                FROM item_scores {where} GROUP BY judge, bench),
            best AS (SELECT bench, max(items) AS top FROM per_bench WHERE NOT human GROUP BY bench)
            SELECT judge, CAST(sum(items) AS BIGINT) AS items,
                   coalesce(max(items / nullif(top, 0)), 0.0) AS share,
                   bool_or(rejudge) AS rejudge, bool_or(human) AS human
            FROM per_bench JOIN best USING (bench) GROUP BY judge""",
            [H.REJUDGE.name, H.HUMAN.name, *params]).df()
    df["human"] = df["human"] | df["judge"].map(is_human)
    return df.sort_values("judge").reset_index(drop=True)


def rank_judges(judges: Iterable[str], coverage: pd.DataFrame) -> list[str]:
    """``judges`` in coverage order (see the module docstring); judges missing from ``coverage`` last."""
    info = {r.judge: (float(r.share), int(r.items), bool(r.rejudge), bool(r.human)) for r in coverage.itertuples()}

    def key(judge):
        share, items, rejudge, human = info.get(judge, (0.0, 0, False, is_human(judge)))
        return (human, -round(share, 3), -items, rejudge, judge)

    return sorted(dict.fromkeys(judges), key=key)


def default_judges(judges: Iterable[str], coverage: pd.DataFrame, n: int) -> list[str]:
    """At most ``n`` judges to preselect among ``judges``: the best covered, never an analyst, never one with less
    than FULL_SHARE of the best-covered judge's items on its bench unless fewer than two would be left."""
    ranked = [j for j in rank_judges(judges, coverage) if not is_human(j)]
    share = dict(zip(coverage["judge"], coverage["share"]))
    full = [j for j in ranked if share.get(j, 0.0) >= FULL_SHARE]
    picked = full if len(full) >= 2 else ranked
    return picked[:n]


def showing_judges(shown: Iterable[str], available: Iterable[str]) -> str:
    """'Showing 6 of 8 judges.' / 'Showing all 8 judges; reviewers: 0 of 1 shown.': the captions' words."""
    shown, available = list(dict.fromkeys(shown)), list(dict.fromkeys(available))
    llm_total = sum(not is_human(j) for j in available)
    llm_shown = sum(not is_human(j) for j in shown if j in available)
    text = (f"Showing all {llm_total:,} judge{'s' if llm_total != 1 else ''}" if llm_shown == llm_total
            else f"Showing {llm_shown:,} of {llm_total:,} judges")
    humans = len(available) - llm_total
    if humans:
        text += f"; reviewers: {sum(is_human(j) for j in shown if j in available):,} of {humans:,} shown"
    return text + "."


def model_counts(names: Mapping[str, str] | Iterable[str], canonical: Mapping[str, str] | None = None) -> dict:
    """``models`` (names joined by aliases) and ``names`` (as stored) for the given stored model names."""
    names = list(dict.fromkeys(names))
    canonical = canonical or {}
    return {"models": len({canonical.get(n, n) for n in names}), "names": len(names)}
