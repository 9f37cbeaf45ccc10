"""Which real items a probe run judges: a seeded sample stratified by category."""
from __future__ import annotations

import random
import re

from lib.keys import ItemKey, PairKey
from lib.errors import ProbeError
from lib.judging.context import build_contexts, select_items, select_pair_items
from lib.judging.templates import Template, render_many
from lib.probes.spec import DEFAULT_ITEMS
from lib.store import Store


# ------------------------------------------------------------------------------------------------
# Items

def uses_turn_2(template: Template) -> bool:
    text = " ".join(m["content"] for m in template.messages)
    return bool(re.search(r"\b(question|answer|ref_answer|answer_a|answer_b)_2\b", text))


def _stratified(items: list, categories: list[str | None], n: int, seed: int) -> list:
    rng = random.Random(seed)
    by_cat: dict[str, list] = {}
    for it, cat in zip(items, categories):
        by_cat.setdefault(cat or "", []).append(it)
    for v in by_cat.values():
        rng.shuffle(v)
    out, cats = [], sorted(by_cat)
    while len(out) < n and any(by_cat.values()):
        for c in cats:
            if by_cat[c] and len(out) < n:
                out.append(by_cat[c].pop())
    return out


def sample_items(store: Store, template: Template, n: int = DEFAULT_ITEMS, *, bench: str | None = None,
                 turn: int | None = None, model: str | None = None, seed: int = 0,
                 reference_judge: str | None = None, per_bench_cap: int = 400) -> list[ItemKey]:
    """``n`` real items (sample 0) the template renders for, stratified by category (round-robin over
    the categories, seeded). Without ``bench``: the bench where the template renders for the most
    items (ties: alphabetical). Turn: 2 if the template uses a ``*_2`` variable, else 1."""
    if template.mode == "pairwise":
        raise ProbeError(f"{template.label} is a pairwise template: use sample_pair_items.")
    turn = turn if turn is not None else (2 if uses_turn_2(template) else 1)
    cands = select_items(store, bench=bench, turn=turn, model=model, samples="first")
    if not cands:
        raise ProbeError("No answered items match (bench/turn/model); import answers first.")
    rng = random.Random(seed)
    by_bench: dict[str, list[ItemKey]] = {}
    for it in cands:
        by_bench.setdefault(it.bench, []).append(it)
    pool = []
    for b in sorted(by_bench):
        its = by_bench[b]
        pool.extend(its if len(its) <= per_bench_cap else rng.sample(its, per_bench_cap))
    contexts = build_contexts(store, pool, preprocess=template.preprocess, reference_judge=reference_judge)
    ok = [k for k, c in enumerate(contexts) if c.context is not None]
    rendered = render_many(template, [contexts[k].context for k in ok], [contexts[k].missing or {} for k in ok])
    good = [ok[i] for i, r in enumerate(rendered) if r.ok]
    if not good:
        why = next((r.error for r in rendered if not r.ok), None) or next((c.error for c in contexts if c.error), "")
        raise ProbeError(f"{template.label} cannot be rendered for any answered item (turn {turn}"
                         + (f", bench {bench}" if bench else "") + f"). {why}")
    count: dict[str, int] = {}
    for k in good:
        count[pool[k].bench] = count.get(pool[k].bench, 0) + 1
    chosen = bench or sorted(count, key=lambda b: (-count[b], b))[0]
    keep = [k for k in good if pool[k].bench == chosen]
    return _stratified([pool[k] for k in keep], [contexts[k].context.get("category") for k in keep], n, seed)


def sample_pair_items(store: Store, template: Template, n: int = DEFAULT_ITEMS, *, model_a: str | None = None,
                      model_b: str | None = None, bench: str | None = None, turn: int | None = None,
                      seed: int = 0) -> list[PairKey]:
    """``n`` question turns both models answered, stratified by category. Without models: the two
    models with the most question turns in common (in ``bench``, or the bench with most)."""
    turn = turn if turn is not None else (2 if uses_turn_2(template) else 1)
    if not (model_a and model_b):
        cands = select_items(store, bench=bench, turn=turn, samples="first")
        groups: dict[str, dict[str, set]] = {}
        for it in cands:
            groups.setdefault(it.bench, {}).setdefault(it.model, set()).add((it.question_id, it.turn))
        best = None
        for b in sorted(groups):
            models = sorted(groups[b])
            for i, ma in enumerate(models):
                for mb in models[i + 1:]:
                    shared = len(groups[b][ma] & groups[b][mb])
                    if shared and (best is None or shared > best[0]):
                        best = (shared, b, ma, mb)
        if best is None:
            raise ProbeError("No two models answered the same questions; a pairwise probe needs two models "
                             "(give --answer-model A --vs B).")
        _, bench, model_a, model_b = best
    items = select_pair_items(store, model_a, model_b, bench=bench, turn=turn)
    if not items:
        raise ProbeError(f"{model_a} and {model_b} have no answered question turns in common.")
    contexts = build_contexts(store, items, preprocess=template.preprocess)
    cats = [c.context.get("category") if c.context else None for c in contexts]
    keep = [k for k, c in enumerate(contexts) if c.context is not None]
    return _stratified([items[k] for k in keep], [cats[k] for k in keep], n, seed)
