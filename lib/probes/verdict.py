"""The verdict in plain words: what a probe run found and what it means (``summary_text``)."""
from __future__ import annotations

from lib.probes.canaries import CONFUSION_REF_SHARE
from lib.probes.spec import PROBES, ProbeResult, ProbeRun, excerpt, fmt_score


# ------------------------------------------------------------------------------------------------
# Plain words

_CAUSE = {"order_swap": "the order of the sections is the cause",
          "no_reference": "the reference is what the judge grades",
          "answer_first": "the position of the answer is the cause",
          "rubric_first": "the position of the rubric is the cause",
          "rubric_last": "the position of the rubric is the cause"}


def _scores_phrase(scores: list, hi) -> str:
    vals = [s for s in scores if s is not None]
    if vals and len(set(vals)) == 1:
        return f"{vals[0]:g}/{hi:g}"
    return ", ".join(fmt_score(s) for s in scores) + f" (out of {hi:g})"


def unparsed_reason(r: ProbeResult, scale) -> str | None:
    """Why a probe that reads as failed decides nothing: not one of its replies gave a score on the template's
    scale (a 1-5 template and a judge answering 7, or no rating at all) or a pairwise verdict. None otherwise."""
    if r.status != "fail":
        return None
    verdicts = [v for i in r.items for k, v in i.items() if k.startswith("verdict")]
    if verdicts or any(k.startswith("verdict") for i in r.items for k in i):
        return None if any(v is not None for v in verdicts) else "no verdict (A, B or tie) could be parsed"
    if not scale or not r.scores:
        return None
    lo, hi = scale
    vals = [s for s in r.scores if s is not None]
    if any(lo <= s <= hi for s in vals):
        return None
    seen = ", ".join(fmt_score(v) for v in sorted(set(vals)))
    return (f"no rating on the template's {lo:g}-{hi:g} scale could be parsed"
            + (f" (the judge answered {seen})" if vals else ""))


def verdict_word(run: ProbeRun) -> str:
    """'passes', 'fails' (a probe failed on scores it could read) or 'could not be evaluated' (nothing failed, but
    some probe got no score it could read: a 1-5 template and a judge answering 7, an API error)."""
    if run.passed:
        return "passes"
    decided = [r for r in run.results if r.counts and r.status == "fail"]
    if any(unparsed_reason(r, run.scale or r.scale) is None for r in decided):
        return "fails"
    return "could not be evaluated"


def summary_text(run: ProbeRun) -> str:
    """What the run found, in plain words (a few lines). A probe none of whose replies could be scored is
    "could not evaluate", with the reason, never a failure."""
    name = run.template_name
    decided = [r for r in run.results if r.counts and r.status in ("pass", "fail")]
    unscored = {r.probe: reason for r in decided if (reason := unparsed_reason(r, run.scale or r.scale))}
    counted = [r for r in decided if r.probe not in unscored]
    failed = [r for r in counted if r.failed]
    lines = []
    unknown = [r.probe for r in run.results if r.counts and r.status == "error"] + list(unscored)
    reasons = list(dict.fromkeys(unscored.values()))
    why = ("see below" if not reasons else reasons[0] if len(reasons) == 1 and len(unknown) == len(unscored) else
           "; ".join(f"{p}: {reason}" for p, reason in unscored.items()))
    could_not = f"could not evaluate {', '.join(unknown)} ({why})"
    head = (f"{run.template} judged by {run.model} on {len(run.items)} item(s): "
            + (f"FAILS {len(failed)} of {len(counted)} probe(s) ({', '.join(r.probe for r in failed)})"
               + (f"; {could_not}." if unknown else ".")
               if failed else
               (f"{could_not}; the other {len(counted)} probe(s) pass." if counted else f"{could_not}.")
               if unknown else f"passes all {len(counted)} probe(s) that decide it."))
    lines.append(head)
    for r in decided:  # each probe no reply of which gave a rating: say so, never what the judge "scores"
        if r.probe in unscored:
            missing = sum(1 for i in r.items if i.get("score") is None)
            lines.append(f"{name} on {PROBES[r.probe].label}: no rating could be parsed from the judge's reply on "
                         f"{missing} of {r.n_items} item(s): fix the template's output format or its parser "
                         "(the judge's own words below).")
    hi = run.scale[1] if run.scale else None
    ablations = [r for r in run.results if r.kind == "ablation" and r.status in ("pass", "fail")]
    for r in failed:
        if r.kind == "canary" and run.mode == "single":
            fails = [i for i in r.items if i["status"] == "fail"]
            scored = [i for i in fails if i["score"] is not None]
            unparsed = len(fails) - len(scored)  # a canary without a rating fails too: it was not shown to pass
            if not scored:
                lines.append(f"{name} on {PROBES[r.probe].label}: no rating could be parsed from the judge's reply on "
                             f"{unparsed} of {r.n_items} item(s): fix the template's output format or its parser "
                             "(the judge's own words below).")
            fs = [i["score"] for i in scored]
            line = (f"{name} scores {PROBES[r.probe].label} {_scores_phrase(fs, hi)} on {len(scored)} of "
                    f"{r.n_items} item(s)")
            if not scored:
                pass
            elif r.probe in ("empty_answer", "whitespace_answer"):
                line += ": " + ("the judge confuses the reference with the answer"
                                if _confuses_reference(run, r) else "the judge grades an answer it was not given")
            else:
                line += PROBES[r.probe].finding
            if scored:
                if unparsed:
                    line += f"; on {unparsed} more item(s) no rating could be parsed from the judge's reply"
                lines.append(line + ".")
            if r.probe == "empty_answer":
                fixes = [a for a in ablations if a.status == "pass"]
                for a in fixes:
                    lines.append(f"With {a.metrics['description']} ({a.probe}) the empty answer scores "
                                 f"{_scores_phrase(a.scores, hi)}: {_CAUSE.get(a.probe, 'the layout is the cause')}.")
                if ablations and not fixes:
                    lines.append("No section reordering fixed it (" + ", ".join(
                        f"{a.probe}: {_scores_phrase(a.scores, hi)}" for a in ablations) + ").")
            if r.evidence:
                e = r.evidence[0]
                words = " ".join((e["rationale"] or "").split())
                lines.append(f"  Judge's own words ({e['bench']} q{e['question_id']} turn {e['turn']}): "
                             f"\"{excerpt(words, 160)}\"")
        elif r.kind == "canary":
            lines.append(f"{name}: {r.detail}")
        elif r.kind == "position":
            lines.append(f"Position swap: {r.detail}")
    passed = [r.probe for r in counted if r.status == "pass" and r.kind == "canary"]
    if passed:
        lines.append("Passes: " + ", ".join(passed) + ".")
    for r in run.results:
        if r.counts and r.status == "pass" and r.kind == "position":
            lines.append(f"Position swap: {r.detail}")
    for r in ablations:
        m = r.metrics
        if m.get("mean_shift") is not None and not (failed and r.status == "pass" and any(
                f.probe == "empty_answer" for f in failed)):
            lines.append(f"Layout {r.probe} ({m['description']}): real answers move by {m['mean_shift']:+.2f} on "
                         f"average (max |shift| {m['max_abs_shift']:g}); the empty answer scores "
                         f"{_scores_phrase(r.scores, hi)}.")
    noise = run.result("repeat_noise")
    if noise is not None and noise.status in ("pass", "fail"):
        lines.append(f"Repeat noise: {noise.detail}")
    errors = [r for r in run.results if r.status == "error"]
    if errors:
        lines.append("Could not evaluate: " + ", ".join(f"{r.probe} ({r.detail})" for r in errors) + ".")
    cost = f", ~${run.cost:.4f}" if run.cost is not None else ""
    lines.append(f"{run.requests} request(s): {run.calls} sent, {run.cache_hits} from the cache, "
                 f"{run.prompt_tokens} + {run.completion_tokens} tokens{cost}.")
    return "\n".join(lines)


def _confuses_reference(run: ProbeRun, r: ProbeResult) -> bool:
    """The template shows a reference and either swapping or removing it fixes the empty answer, or a
    failing rationale quotes the reference (at least CONFUSION_REF_SHARE of its 8-grams,
    ``lib.analysis.flags.reference_overlap``)."""
    if any(a.kind == "ablation" and a.probe in ("order_swap", "no_reference") and a.status == "pass"
           for a in run.results):
        return True
    return any(i["status"] == "fail" and (i.get("ref_share") or 0) >= CONFUSION_REF_SHARE for i in r.items)
