"""Position swap (pairwise templates): each item judged as (A, B) and as (B, A)."""
from __future__ import annotations

from lib.probes.spec import POSITION_CONSISTENCY_MIN, PROBES, ProbeResult, fmt_pct


def position_result(usable, keys, got, verdict, outcomes) -> ProbeResult:
    spec = PROBES["position_swap"]
    rule = (f"expected low: fails if the winner survives the A/B swap on fewer than {POSITION_CONSISTENCY_MIN:.0%} "
            "of the items")
    per, consistent, decisive, first = [], 0, 0, 0
    flips = []
    for k in usable:
        r1, r2 = got.get(("position_swap", 1, k)), got.get(("position_swap", 2, k))
        v1, v2 = verdict(r1), verdict(r2)
        for game, r, v in ((1, r1, v1), (2, r2, v2)):
            outcomes.append({**keys[k], "probe": "position_swap", "kind": "position", "layout": "original",
                             "position": "AB" if game == 1 else "BA", "repeat": None, "expected": "low",
                             "score": None, "score_10": None, "verdict": v, "real_score": None, "failed": None,
                             "status": "info" if v else ("error" if r is None or r.error else "no_score"),
                             "rationale": r.result.text if r is not None and r.result else None,
                             "request_hash": r.hash if r is not None else None,
                             "detail": (r.error or "") if r is not None else "not rendered"})
            if v in ("A", "B"):
                decisive += 1
                first += v == "A"
        if v1 is None or v2 is None:
            per.append({**keys[k], "verdict_ab": v1, "verdict_ba": v2, "winner_ab": None, "winner_ba": None,
                        "consistent": None})
            continue
        w1 = {"A": keys[k]["model"], "B": keys[k]["model_b"], "tie": "tie"}[v1]
        w2 = {"A": keys[k]["model_b"], "B": keys[k]["model"], "tie": "tie"}[v2]
        same = w1 == w2
        consistent += same
        if not same:
            flips.append({**keys[k], "winner_ab": w1, "winner_ba": w2})
        per.append({**keys[k], "verdict_ab": v1, "verdict_ba": v2, "winner_ab": w1, "winner_ba": w2,
                    "consistent": same})
    n = sum(1 for p in per if p["consistent"] is not None)
    if n == 0:
        return ProbeResult("position_swap", "position", "low", "error", "no item got a verdict in both positions.",
                           rule=rule, measure=spec.measure, counts=True, items=per)
    consistency = consistent / n
    first_rate = first / decisive if decisive else None
    status = "fail" if consistency < POSITION_CONSISTENCY_MIN else "pass"
    bias = ("none measurable" if first_rate is None else
            "toward the first position" if first_rate > 0.6 else
            "toward the second position" if first_rate < 0.4 else "none to speak of")
    detail = (f"The winner survives the A/B swap on {consistent} of {n} item(s) (consistency {consistency:.0%}); "
              f"position A wins {fmt_pct(first_rate)} of decisive verdicts (bias {bias}). Rule: {rule}.")
    if flips:
        detail += " Flips: " + "; ".join(f"q{f['question_id']} turn {f['turn']} ({f['winner_ab']} -> {f['winner_ba']})"
                                         for f in flips[:5]) + ("…" if len(flips) > 5 else "")
    return ProbeResult("position_swap", "position", "low", status, detail, rule=rule, measure=spec.measure,
                       counts=True, n_items=n, n_failed=n - consistent, items=per, evidence=flips[:5],
                       metrics={"consistency": consistency, "first_position_rate": first_rate,
                                "flip_rate": 1 - consistency, "flips": flips, "decisive_verdicts": decisive})
