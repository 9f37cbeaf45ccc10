"""One-line warnings when two judges (or two runs) being compared were set up differently.

The setup table (``lib.analysis.harness_diff``) knows how a run was set up: judge prompt, samples per item,
truncation, reference answers, score scale, ... An agreement or a delta between two judges whose setups
differ beyond the judge model measures the setups as much as the judges. ``pair_warnings`` runs the table
for each pair of judges on one model both judged, and keeps the areas that differ (the judge model itself,
parse failures, which are an outcome and not a setup, and the question set, which the pairing handles, are
left out) as one line per pair, with a link to the full table on the Compare page.
"""
from __future__ import annotations

from itertools import combinations
from urllib.parse import urlencode

import pandas as pd

from lib.analysis import harness_diff, runs
from lib.store import Store

IGNORED_AREAS = ("judge_model", "parse_failures", "questions")
WARNING_COLUMNS = ["judge_a", "judge_b", "model", "areas", "line", "link"]


def scored_models(store: Store, bench: str, judges: list[str] | None = None,
                  model: str | None = None) -> dict[str, dict[str, str]]:
    """Per judge, every model it scored on ``bench`` -> its harness (a model under two harnesses: the first by
    name), from one read of item_scores; ``judges`` and ``model`` narrow the read (None: every one). Kept per data
    version by a page (``pair_warnings(..., scored=...)``), picking another model or judge reads no item_scores."""
    conditions = ["bench = $b", "score IS NOT NULL"]
    params: dict = {"b": bench}
    if judges is not None:
        conditions.append("list_contains($judges, judge)")
        params["judges"] = list(judges)
    if model:
        conditions.append("model = $m")
        params["m"] = model
    with store.read() as cur:
        rows = cur.execute(f"SELECT DISTINCT judge, model, harness FROM item_scores WHERE {' AND '.join(conditions)} "
                           "ORDER BY ALL", params).fetchall()
    scored: dict[str, dict[str, str]] = {}
    for judge, m, harness in rows:
        scored.setdefault(judge, {}).setdefault(m, harness)
    return scored


def _shared_models(scored: dict[str, dict[str, str]], judges: list[str], model: str | None) -> dict[tuple, tuple]:
    """Per pair of ``judges``: (harness_a, harness_b, model), the first model (by name) both scored (``model`` if
    given), from ``scored_models``."""
    out = {}
    for ja, jb in combinations(judges, 2):
        a, b = scored.get(ja, {}), scored.get(jb, {})
        both = [model] if model and model in a and model in b else [] if model else sorted(set(a) & set(b))
        if both:
            out[(ja, jb)] = (a[both[0]], b[both[0]], both[0])
    return out


def compare_link(run_a: runs.Run, run_b: runs.Run, canonical: str) -> str:
    """The Compare page's "one model under two harnesses" view of these two runs (a relative link)."""
    return "compare?" + urlencode({"view": "harness", "model": canonical, "a": run_a.label, "b": run_b.label})


def pair_warnings(store: Store, judges: list[str], *, bench: str, model: str | None = None,
                  context: dict | None = None, scored: dict[str, dict[str, str]] | None = None) -> pd.DataFrame:
    """One row per judge pair whose setups differ beyond the judge model: ``WARNING_COLUMNS``; ``line`` reads
    "gpt-4o vs human:ana: set up differently (judge prompt, samples per item): see the setup table".
    ``context``: ``harness_diff.setup_context(store, (bench,))`` and ``scored``: ``scored_models(store, bench)``,
    when the caller keeps them (per data version)."""
    rows = []
    canon = None
    llm = [j for j in judges if not j.startswith("human:")]  # an analyst's verdicts have no harness setup to compare
    if scored is None:
        scored = scored_models(store, bench, llm, model)
    shared = _shared_models(scored, llm, model)
    pairs = [(runs.Run(ha, bench, ja, m), runs.Run(hb, bench, jb, m))
             for (ja, jb), (ha, hb, m) in shared.items()]
    # the two judges of a pair scored one model's answers on one bench: the rows read from those answers (every
    # answer text of the model) are the same on both sides and never warn, so they are not made
    areas = [a for a in harness_diff.AREAS if a not in IGNORED_AREAS + harness_diff.ANSWER_AREAS]
    tables = harness_diff.harness_diffs(store, pairs, areas, context=context) if pairs else []
    for (ra, rb), table in zip(pairs, tables):
        ja, jb, m = ra.judge, rb.judge, ra.model
        differ = table[(table["differs"] == True) & ~table["area"].isin(IGNORED_AREAS)]  # noqa: E712 (None = unknown)
        if differ.empty:
            continue
        if canon is None:
            canon = runs.runs(store).drop_duplicates(["model"]).set_index("model")["canonical"].to_dict()
        areas = [harness_diff.AREA_LABELS[a] for a in differ["area"]]
        rows.append({"judge_a": ja, "judge_b": jb, "model": m, "areas": ", ".join(areas),
                     "line": f"{ja} vs {jb}: set up differently ({', '.join(areas)}); the numbers compare the setups "
                             "as much as the judges. See the setup table.",
                     "link": compare_link(ra, rb, canon.get(m, m))})
    return pd.DataFrame(rows, columns=WARNING_COLUMNS)
