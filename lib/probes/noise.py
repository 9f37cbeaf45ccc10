"""Repeat noise: the same request sent several times with the cache bypassed, the judge's own noise floor."""
from __future__ import annotations

import statistics

from lib.judging.parsers import to_ten_scale
from lib.probes.spec import NOISE_MAX_STD, NOISE_MIN_AGREEMENT, PROBES, ProbeResult


def noise_single(reqs, usable, keys, repeats, scale, outcomes, config) -> ProbeResult:
    spec = PROBES["repeat_noise"]
    reps = [r for r in reqs if r.tag["probe"] == "repeat_noise"]
    rule = (f"expected low: fails if the mean standard deviation of {repeats} repeated scores is above "
            f"{NOISE_MAX_STD:g} point on the 1-10 scale (diagnostic)")
    if not reps:
        return ProbeResult("repeat_noise", "noise", "low", "skipped",
                           "repeat noise needs at least 2 repeats and 1 item.", rule=rule, measure=spec.measure,
                           counts=False)
    per, stds = [], []
    for k in usable:
        mine = [r for r in reps if r.tag["item"] == k]
        if not mine:
            continue
        vals = [r.parsed.score for r in mine if r.parsed is not None and r.parsed.ok]
        ten = [to_ten_scale(v, scale) for v in vals]
        sd = statistics.stdev(ten) if len(ten) >= 2 else None
        if sd is not None:
            stds.append(sd)
        per.append({**keys[k], "scores": vals, "std_10": sd, "range_10": (max(ten) - min(ten)) if ten else None,
                    "n": len(mine), "n_scored": len(vals)})
        for r in mine:
            s = r.parsed.score if r.parsed is not None and r.parsed.ok else None
            outcomes.append({**keys[k], "probe": "repeat_noise", "kind": "noise", "layout": "original",
                             "position": None, "repeat": r.tag["repeat"], "expected": "low", "score": s,
                             "score_10": to_ten_scale(s, scale) if s is not None else None, "verdict": None,
                             "real_score": None, "failed": None, "status": "info" if s is not None else "no_score",
                             "rationale": r.result.text if r.result is not None else None,
                             "request_hash": r.hash, "detail": r.error or ""})
    if not stds:
        return ProbeResult("repeat_noise", "noise", "low", "error", "no item got two usable scores.", rule=rule,
                           measure=spec.measure, counts=False, metrics={"per_item": per})
    mean_sd = statistics.fmean(stds)
    max_range = max(p["range_10"] for p in per if p["range_10"] is not None)
    status = "fail" if mean_sd > NOISE_MAX_STD else "pass"
    detail = (f"{repeats} identical requests (cache bypassed, temperature {config.temperature:g}) on {len(per)} "
              f"item(s): the judge's own noise is {mean_sd:.2f} points (mean standard deviation on the 1-10 scale; "
              f"largest range {max_range:g}). Score differences smaller than this on the review pages are within "
              "the judge's noise.")
    return ProbeResult("repeat_noise", "noise", "low", status, detail, rule=rule, measure=spec.measure, counts=False,
                       scale=list(scale), n_items=len(per), scores=[p["scores"] for p in per],
                       metrics={"mean_std_10": mean_sd, "max_range_10": max_range, "repeats": repeats,
                                "per_item": per})


def noise_pairwise(reqs, usable, keys, repeats, verdict, outcomes, config) -> ProbeResult:
    """Repeat noise for pairwise templates: agreement of repeated verdicts with the most common one."""
    reps = [r for r in reqs if r.tag["probe"] == "repeat_noise"]
    rule = (f"expected low: fails if fewer than {NOISE_MIN_AGREEMENT:.0%} of {repeats} repeats agree with the "
            "most common verdict (diagnostic)")
    if not reps:
        return ProbeResult("repeat_noise", "noise", "low", "skipped", "repeat noise needs at least 2 "
                           "repeats and 1 item.", rule=rule, counts=False)
    per, agree = [], []
    for k in usable:
        vs = [verdict(r) for r in reps if r.tag["item"] == k]
        if not vs:
            continue
        common = max(set(vs), key=vs.count)
        share = vs.count(common) / len(vs)
        agree.append(share)
        per.append({**keys[k], "verdicts": vs, "agreement": share})
        for r in reps:
            if r.tag["item"] == k:
                outcomes.append({**keys[k], "probe": "repeat_noise", "kind": "noise", "layout": "original",
                                 "position": "AB", "repeat": r.tag["repeat"], "expected": "low",
                                 "score": None, "score_10": None, "verdict": verdict(r), "real_score": None,
                                 "failed": None, "status": "info",
                                 "rationale": r.result.text if r.result else None, "request_hash": r.hash,
                                 "detail": r.error or ""})
    mean_agree = statistics.fmean(agree)
    status = "fail" if mean_agree < NOISE_MIN_AGREEMENT else "pass"
    return ProbeResult(
        "repeat_noise", "noise", "low", status,
        f"{repeats} identical requests (cache bypassed, temperature {config.temperature:g}) on {len(per)} "
        f"item(s): {mean_agree:.0%} of the repeats agree with the most common verdict.", rule=rule,
        measure=PROBES["repeat_noise"].measure, counts=False, n_items=len(per),
        metrics={"mean_agreement": mean_agree, "repeats": repeats, "per_item": per})
