"""Running the probe suite: build every probe request, send them through the judge dispatcher
(``lib.judging.dispatch``: the thread pool, cache, cancel and progress re-judging uses), parse the
answers and hand them to each probe family's rule."""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from lib.keys import ItemKey, PairKey
from lib.errors import ProbeError
from lib.judging import cache
from lib.judging.calls import CallResult, CallStats
from lib.judging.config import JudgeConfig
from lib.judging.context import ContextResult, build_contexts
from lib.judging.dispatch import Dispatcher
from lib.judging.parsers import ParseResult, check_spec, parse, to_ten_scale
from lib.judging.templates import Template, get_template, render_many, save_template
from lib.probes.ablation import ablation_result, ablation_variants
from lib.probes.canaries import (CONFUSION_REF_SHARE, REFERENCE_VARS, aggregate_canary, canary_text,
                                 empty_answer_pairwise, other_item_answer, reference_of, rule_text, single_fail,
                                 with_answer)
from lib.probes.items import sample_items, sample_pair_items
from lib.probes.noise import noise_pairwise, noise_single
from lib.probes.position import position_result
from lib.probes.spec import (ABLATIONS, ALL_PROBES, CANARIES, DEFAULT_ITEMS, DEFAULT_NOISE_ITEMS, DEFAULT_REPEATS,
                             PROBE_GROUPS, PROBES, ProbeResult, ProbeRun, item_keys)
from lib.probes.storage import save_probe_run
from lib.probes.verdict import summary_text
from lib.store import Store


# ------------------------------------------------------------------------------------------------
# Running

@dataclass
class _Req:
    tag: dict                       # probe, variant, item index, canary, game, repeat ...
    messages: list[dict]
    hash: str
    force: bool = False
    result: CallResult | None = None
    error: str | None = None
    parsed: ParseResult | None = None


@dataclass
class _Sender:
    """How this run sends requests: endpoint, key, client, concurrency, progress, cancel; and what it cost."""

    store: Store
    config: JudgeConfig
    api_key: str | None = None
    client: object = None
    concurrency: int = 4
    progress: Callable[[int, int], None] | None = None
    cancel: threading.Event | None = None
    stats: CallStats = field(default_factory=CallStats)

    def send(self, reqs: list[_Req]) -> None:
        """Send the requests (identical unforced requests once, cache first) through the dispatcher,
        filling result/error; answers go to the cache as they arrive. Raises the first fatal API error."""
        unique: dict[str, list[_Req]] = {}
        forced: list[_Req] = []
        for r in reqs:
            (forced.append(r) if r.force else unique.setdefault(r.hash, []).append(r))
        hits = cache.fetch(self.store, list(unique))
        jobs: list[_Job] = []
        for h, group in unique.items():
            if h in hits:
                for r in group:
                    r.result = hits[h]
                self.stats.cache_hits += len(group)
            else:
                jobs.append(_Job(group))
        jobs.extend(_Job([r]) for r in forced)
        total, done = len(jobs), 0
        if self.progress:
            self.progress(0, total)
        if not jobs:
            return
        dispatcher = Dispatcher(self.config, api_key=self.api_key, client=self.client,
                                concurrency=self.concurrency, cancel=self.cancel)
        answered: list[tuple[list[dict], CallResult]] = []
        try:
            for out in dispatcher.run(jobs):
                if out is None:
                    answered = self._to_cache(answered)
                    continue
                group = out.job.group
                self.stats.calls += 1
                if out.result is not None:
                    for r in group:
                        r.result = out.result
                    self.stats.add_answer(out.result)
                    self.stats.cache_hits += len(group) - 1
                    answered.append((group[0].messages, out.result))
                else:
                    for r in group:
                        r.error = out.error
                done += 1
                if self.progress:
                    self.progress(done, total)
        finally:  # what arrived was paid for: keep it, also when interrupted
            self._to_cache(answered)
        for job in jobs:
            for r in job.group:
                if r.result is None and r.error is None:
                    r.error = "not sent (the run stopped)"
        if dispatcher.fatal is not None:
            raise dispatcher.fatal

    def _to_cache(self, answered: list) -> list:
        if answered:
            self.store.transaction(lambda cur: cache.save(cur, self.config, answered))
        return []


@dataclass
class _Job:
    """One request to send for one or more identical probe requests."""

    group: list[_Req]

    @property
    def messages(self) -> list[dict]:
        return self.group[0].messages

    @property
    def request_hash(self) -> str:
        return self.group[0].hash


@dataclass
class _Plan:
    """What a run judges: the template, the items, the probes wanted and the repeat-noise settings."""

    store: Store
    template: Template
    config: JudgeConfig
    items: list
    wanted: set[str]
    repeats: int
    noise_items: int
    reference_judge: str | None
    sender: _Sender


def run_probes(store: Store, template: Template | str, config: JudgeConfig, *, items: list | None = None,
               n_items: int = DEFAULT_ITEMS, bench: str | None = None, turn: int | None = None,
               probes: list[str] | tuple[str, ...] | None = None, repeats: int = DEFAULT_REPEATS,
               noise_items: int = DEFAULT_NOISE_ITEMS, model_a: str | None = None, model_b: str | None = None,
               reference_judge: str | None = None, seed: int = 0, api_key: str | None = None, client=None,
               concurrency: int = 4, progress: Callable[[int, int], None] | None = None,
               cancel: threading.Event | None = None, store_results: bool = True) -> ProbeRun:
    """Run the probe suite (see the module docstring) and, unless ``store_results`` is false, store it.

    ``probes``: names from ``ALL_PROBES`` or groups (``canaries``, ``ablation``, ``position_swap``,
    ``repeat_noise``); default all. ``items``: ItemKeys (single) or PairKeys (pairwise); default
    ``sample_items`` / ``sample_pair_items`` with ``n_items``, ``bench``, ``turn``, ``seed``. Raises
    ProbeError / TemplateError for unusable input, JudgeAPIError for a fatal API error (bad key, unknown
    model or URL) and MissingAPIKeyError when a call is needed and there is no key.
    """
    started = time.perf_counter()
    if isinstance(template, str):
        template = get_template(store, template)
    if template.template_id is None:
        template = save_template(store, template)
    wanted = _wanted(probes)
    mode = template.mode
    spec = check_spec(template.parser)
    scale = spec.get("scale") if mode == "single" else None
    if items is None:
        items = (sample_pair_items(store, template, n_items, model_a=model_a, model_b=model_b, bench=bench,
                                   turn=turn, seed=seed)
                 if mode == "pairwise" else
                 sample_items(store, template, n_items, bench=bench, turn=turn, seed=seed,
                              reference_judge=reference_judge))
    if not items:
        raise ProbeError("No items to probe.")
    for it in items:
        if mode == "pairwise" and not isinstance(it, PairKey):
            raise ProbeError(f"{template.label} is a pairwise template: give PairKey items (two models).")
        if mode == "single" and not isinstance(it, ItemKey):
            raise ProbeError(f"{template.label} grades single answers: give ItemKey items.")
    sender = _Sender(store, config, api_key=api_key, client=client, concurrency=concurrency, progress=progress,
                     cancel=cancel)
    plan = _Plan(store, template, config, items, wanted, repeats, noise_items, reference_judge, sender)
    results, outcomes, reqs = _run_pairwise(plan) if mode == "pairwise" else _run_single(plan, scale)
    stats = sender.stats
    params = {"temperature": config.temperature, "max_tokens": config.max_tokens, "items": len(items),
              "n_items": n_items, "bench": bench, "turn": turn, "seed": seed, "repeats": repeats,
              "noise_items": noise_items, "probes": sorted(wanted), "reference_judge": reference_judge}
    run = ProbeRun(template=template.label, template_id=template.template_id, template_name=template.name,
                   model=config.model, base_url=config.base_url, params=params, results=results, outcomes=outcomes,
                   mode=mode, scale=scale, items=[item_keys(i) for i in items], requests=len(reqs),
                   calls=stats.calls, cache_hits=stats.cache_hits,
                   errors=sum(1 for r in reqs if r.error is not None),
                   prompt_tokens=stats.prompt_tokens, completion_tokens=stats.completion_tokens)
    run.cost = config.cost(run.prompt_tokens, run.completion_tokens)
    run.elapsed_s = time.perf_counter() - started
    run.summary = summary_text(run)
    if store_results:
        save_probe_run(store, run)
    return run


def _wanted(probes) -> set[str]:
    if not probes:
        return set(ALL_PROBES)
    out: set[str] = set()
    for p in probes:
        p = p.strip()
        if p in PROBE_GROUPS:
            out |= set(PROBE_GROUPS[p])
        elif p in PROBES:
            out.add(p)
        elif p:
            raise ProbeError(f"Unknown probe {p!r}; the probes are {', '.join(ALL_PROBES)} (groups: "
                             f"{', '.join(PROBE_GROUPS)}).")
    return out


def _render(template: Template, contexts: list[dict], missing: list[dict]) -> list:
    return render_many(template, contexts, missing) if contexts else []


def _run_single(plan: _Plan, scale) -> tuple[list[ProbeResult], list[dict], list[_Req]]:
    """Canaries, section-order ablations and repeat noise for a single-answer template."""
    store, template, config, items, wanted = plan.store, plan.template, plan.config, plan.items, plan.wanted
    repeats, noise_items, reference_judge = plan.repeats, plan.noise_items, plan.reference_judge
    lo, hi = float(scale[0]), float(scale[1])
    mid = (lo + hi) / 2
    ctxs: list[ContextResult] = build_contexts(store, items, preprocess=template.preprocess,
                                               reference_judge=reference_judge)
    raw_answers = {k: c.context.get("answer") or "" for k, c in enumerate(ctxs) if c.context is not None}
    shows_reference = bool(REFERENCE_VARS.search(" ".join(m["content"] for m in template.messages)))
    keys = [item_keys(i) for i in items]
    usable = [k for k, c in enumerate(ctxs) if c.context is not None]
    reqs: list[_Req] = []
    problems: dict[int, str] = {k: c.error for k, c in enumerate(ctxs) if c.context is None}

    variants, skipped_variants = ([], {})
    wanted_ablations = [a for a in ABLATIONS if a in wanted]
    canaries = [c for c in CANARIES if c in wanted]
    if wanted_ablations:
        variants, skipped_variants = ablation_variants(template, wanted_ablations)
    layouts = [("original", template)] + [(v.name, v.template) for v in variants]

    # what to judge: per layout, the real answer and (original: every canary; variants: the empty answer)
    jobs: list[tuple[str, str, int, dict, str | None]] = []   # (layout, probe, item, context, skip reason)
    other = {k: other_item_answer(k, usable, ctxs, raw_answers) for k in usable}
    need_real = bool(canaries or variants)
    for k in usable:
        ctx = dict(ctxs[k].context)
        ctx["_raw_answer"] = raw_answers.get(k, "")
        for layout, _ in layouts:
            if need_real or (layout == "original" and "repeat_noise" in wanted):
                jobs.append((layout, "real_answer", k, ctxs[k].context, None))
        for name in canaries:
            text, why = canary_text(name, ctx, hi=hi, parser_kind=template.parser.get("kind"),
                                    other_answer=other.get(k))
            jobs.append(("original", name, k, None if text is None else with_answer(ctxs[k].context, text,
                                                                                     template.preprocess), why))
        for v in variants:
            jobs.append((v.name, "empty_answer", k, with_answer(ctxs[k].context, "", template.preprocess), None))
    render_errors: dict[tuple, str] = {}
    for layout, tmpl in layouts:
        todo = [j for j in jobs if j[0] == layout and j[3] is not None]
        rendered = _render(tmpl, [j[3] for j in todo], [ctxs[j[2]].missing or {} for j in todo])
        for j, res in zip(todo, rendered):
            tag = {"layout": layout, "probe": j[1], "item": j[2], "repeat": None}
            if not res.ok:
                render_errors[(layout, j[1], j[2])] = res.error
                continue
            reqs.append(_Req(tag, res.messages, cache.request_hash(config, res.messages)))
    base = {(r.tag["layout"], r.tag["probe"], r.tag["item"]): r for r in reqs}
    if not need_real:  # only repeat noise: its forced calls are the only ones
        reqs = [r for r in reqs if r.tag["probe"] != "real_answer"]
    if "repeat_noise" in wanted and repeats >= 2:
        for k in usable[:max(0, int(noise_items))]:
            r0 = base.get(("original", "real_answer", k))
            if r0 is None:
                continue
            for rep in range(int(repeats)):
                reqs.append(_Req({"layout": "original", "probe": "repeat_noise", "item": k, "repeat": rep},
                                 r0.messages, r0.hash, force=True))
    plan.sender.send(reqs)
    for r in reqs:
        if r.result is not None:
            r.parsed = parse(r.result.text, template.parser)

    got = {(r.tag["layout"], r.tag["probe"], r.tag["item"]): r for r in reqs if r.tag["repeat"] is None}

    def score_of(r: _Req | None) -> float | None:
        return r.parsed.score if r is not None and r.parsed is not None and r.parsed.ok else None

    outcomes: list[dict] = []

    def outcome(probe, kind, k, r, *, expected=None, failed=None, status, real=None, detail="", repeat=None,
                layout="original", position=None, ref_share=None):
        s = score_of(r)
        outcomes.append({**keys[k], "probe": probe, "kind": kind, "layout": layout, "position": position,
                         "ref_share": ref_share,
                         "repeat": repeat, "expected": expected, "score": s,
                         "score_10": to_ten_scale(s, scale) if s is not None else None,
                         "verdict": None, "real_score": real, "failed": failed, "status": status,
                         "rationale": r.result.text if r is not None and r.result is not None else None,
                         "request_hash": r.hash if r is not None else None, "detail": detail})

    for k in usable:
        for layout, _ in layouts:
            if not need_real:
                break
            r = got.get((layout, "real_answer", k))
            outcome("real_answer", "baseline", k, r, status="info" if score_of(r) is not None else "no_score",
                    layout=layout, detail=(r.error or "") if r is not None else
                    render_errors.get((layout, "real_answer", k), ""))

    results: list[ProbeResult] = []
    for name in canaries:
        spec = PROBES[name]
        rule = rule_text(spec.rule, lo, mid)
        per = []
        for k in usable:
            real = score_of(got.get(("original", "real_answer", k)))
            job = next(j for j in jobs if j[0] == "original" and j[1] == name and j[2] == k)
            if job[3] is None:
                outcome(name, "canary", k, None, expected=spec.expected, status="skipped", real=real, detail=job[4])
                continue
            r = got.get(("original", name, k))
            if r is None:
                outcome(name, "canary", k, None, expected=spec.expected, status="error", real=real,
                        detail=render_errors.get(("original", name, k), "not rendered"))
                per.append(outcomes[-1])
                continue
            if r.error is not None:
                outcome(name, "canary", k, r, expected=spec.expected, status="error", real=real, detail=r.error)
            else:
                f = single_fail(spec.rule, score_of(r), real, lo, mid)
                share = None
                ref = reference_of(ctxs[k].context)
                if shows_reference and ref and name != "reference_copy":
                    from lib.analysis.flags import reference_overlap

                    share = reference_overlap(r.result.text, ref, job[3].get("answer")).ref_share
                quoted = (f"the rationale quotes the reference ({share:.0%} of its 8-grams)"
                          if share is not None and share >= CONFUSION_REF_SHARE else "")
                if f is None:
                    outcome(name, "canary", k, r, expected=spec.expected, failed=True, status="fail", real=real,
                            ref_share=share, detail="; ".join(filter(None, [
                                f"no rating could be read from the judge's output ({r.parsed.status})", quoted])))
                else:
                    outcome(name, "canary", k, r, expected=spec.expected, failed=f, status="fail" if f else "pass",
                            real=real, ref_share=share, detail=quoted)
            per.append(outcomes[-1])
        results.append(aggregate_canary(spec, per, rule, scale, problems))

    for name in wanted_ablations:
        results.append(ablation_result(name, variants, skipped_variants, usable, got, score_of, outcome, outcomes,
                                        lo, mid, scale, render_errors))
    if "position_swap" in wanted:
        results.append(ProbeResult("position_swap", "position", "low", "skipped",
                                   f"{template.label} grades single answers; the position swap applies to pairwise "
                                   "templates.", counts=True, measure=PROBES["position_swap"].measure))
    if "repeat_noise" in wanted:
        results.append(noise_single(reqs, usable, keys, repeats, scale, outcomes, config))
    return results, outcomes, reqs


def _run_pairwise(plan: _Plan) -> tuple[list[ProbeResult], list[dict], list[_Req]]:
    """Position swap, the empty-answer canary (one side empty) and repeat noise for a pairwise template."""
    store, template, config, items, wanted = plan.store, plan.template, plan.config, plan.items, plan.wanted
    repeats, noise_items, reference_judge = plan.repeats, plan.noise_items, plan.reference_judge
    keys = [item_keys(i) for i in items]
    swapped = [PairKey(i.bench, i.question_id, i.turn, i.model_b, i.model_a, i.sample) for i in items]
    ctx_ab = build_contexts(store, items, preprocess=template.preprocess, reference_judge=reference_judge)
    ctx_ba = build_contexts(store, swapped, preprocess=template.preprocess, reference_judge=reference_judge)
    usable = [k for k in range(len(items)) if ctx_ab[k].context is not None and ctx_ba[k].context is not None]
    jobs = []  # (probe, game, item, context)
    for k in usable:
        if "position_swap" in wanted or "repeat_noise" in wanted:
            jobs.append(("position_swap", 1, k, ctx_ab[k].context))
            jobs.append(("position_swap", 2, k, ctx_ba[k].context))
        if "empty_answer" in wanted:  # game 1: B empty; game 2: A empty (B's answer is real)
            jobs.append(("empty_answer", 1, k, with_answer(ctx_ab[k].context, "", template.preprocess, side="b")))
            jobs.append(("empty_answer", 2, k, with_answer(ctx_ab[k].context, "", template.preprocess, side="a")
                         | {"answer_b": ctx_ab[k].context["answer_a"],
                            f"answer_b_{ctx_ab[k].context['turn']}": ctx_ab[k].context["answer_a"]}))
    rendered = _render(template, [j[3] for j in jobs], [ctx_ab[j[2]].missing or {} for j in jobs])
    reqs: list[_Req] = []
    for j, res in zip(jobs, rendered):
        if res.ok:
            reqs.append(_Req({"probe": j[0], "game": j[1], "item": j[2], "repeat": None}, res.messages,
                             cache.request_hash(config, res.messages)))
    if "repeat_noise" in wanted and repeats >= 2:
        base = {(r.tag["item"]): r for r in reqs if r.tag["probe"] == "position_swap" and r.tag["game"] == 1}
        for k in usable[:max(0, int(noise_items))]:
            if k in base:
                for rep in range(int(repeats)):
                    reqs.append(_Req({"probe": "repeat_noise", "game": 1, "item": k, "repeat": rep},
                                     base[k].messages, base[k].hash, force=True))
    plan.sender.send(reqs)
    for r in reqs:
        if r.result is not None:
            r.parsed = parse(r.result.text, template.parser)
    got = {(r.tag["probe"], r.tag["game"], r.tag["item"]): r for r in reqs if r.tag["repeat"] is None}

    def verdict(r):
        return r.parsed.verdict if r is not None and r.parsed is not None and r.parsed.ok else None

    outcomes, results = [], []
    if "empty_answer" in wanted:
        results.append(empty_answer_pairwise(usable, keys, got, verdict, outcomes))
    if "position_swap" in wanted:
        results.append(position_result(usable, keys, got, verdict, outcomes))
    if "repeat_noise" in wanted:
        results.append(noise_pairwise(reqs, usable, keys, repeats, verdict, outcomes, config))
    for name in sorted(wanted & (set(CANARIES) - {"empty_answer"}) | (wanted & set(ABLATIONS))):
        kind = "canary" if name in CANARIES else "ablation"
        results.append(ProbeResult(name, kind, PROBES[name].expected, "skipped",
                                   f"{template.label} is a pairwise template: {name} applies to single-answer "
                                   "templates.", counts=kind == "canary", measure=PROBES[name].measure))
    order = {n: i for i, n in enumerate(ALL_PROBES)}
    results.sort(key=lambda r: order.get(r.probe, 99))
    return results, outcomes, reqs
