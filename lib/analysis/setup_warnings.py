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
from lib.analysis.score_copy import ScoreCopy
from lib.store import Store

IGNORED_AREAS = ("judge_model", "parse_failures", "questions")
WARNING_COLUMNS = ["judge_a", "judge_b", "model", "areas", "line", "link"]


def _shared_models(store: Store, bench: str, judges: list[str], model: str | None,
                   copy: ScoreCopy | None = None) -> dict[tuple, tuple]:
    """Per pair of ``judges``: (harness_a, harness_b, model), the first model (by name) both scored on the bench
    (``model`` if given), from one read of item_scores (of ``copy`` when given)."""
    where = "bench = $b AND score IS NOT NULL AND list_contains($judges, judge)" + (" AND model = $m" if model else "")
    params = {"b": bench, "judges": list(judges)} | ({"m": model} if model else {})
    sql = f"SELECT DISTINCT judge, model, harness FROM item_scores WHERE {where} ORDER BY ALL"
    found = copy.frame(sql, [{"judge": j} | ({"model": model} if model else {}) for j in judges], params) \
        if copy is not None else None
    if found is not None:
        rows = list(found.itertuples(index=False, name=None))
    else:
        with store.read() as cur:
            rows = cur.execute(sql, params).fetchall()
    scored: dict[str, dict[str, str]] = {}
    for judge, m, harness in rows:
        scored.setdefault(judge, {}).setdefault(m, harness)  # a model under two harnesses: the first by name
    out = {}
    for ja, jb in combinations(judges, 2):
        a, b = scored.get(ja, {}), scored.get(jb, {})
        both = sorted(set(a) & set(b))
        if both:
            out[(ja, jb)] = (a[both[0]], b[both[0]], both[0])
    return out


def compare_link(run_a: runs.Run, run_b: runs.Run, canonical: str) -> str:
    """The Compare page's "one model under two harnesses" view of these two runs (a relative link)."""
    return "compare?" + urlencode({"view": "harness", "model": canonical, "a": run_a.label, "b": run_b.label})


def pair_warnings(store: Store, judges: list[str], *, bench: str, model: str | None = None,
                  context: dict | None = None, copy: ScoreCopy | None = None) -> pd.DataFrame:
    """One row per judge pair whose setups differ beyond the judge model: ``WARNING_COLUMNS``; ``line`` reads
    "gpt-4o vs human:ana: set up differently (judge prompt, samples per item): see the setup table".
    ``context``: ``harness_diff.setup_context(store, (bench,))`` when the caller keeps it (per data version);
    ``copy``: the store's ``score_copy``, when the caller keeps it (which judge scored which model is read there)."""
    rows = []
    canon = None
    llm = [j for j in judges if not j.startswith("human:")]  # an analyst's verdicts have no harness setup to compare
    shared = _shared_models(store, bench, llm, model, copy)
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
