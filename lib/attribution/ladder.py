"""The harness-to-harness waterfall: every cause of the gap between run A and run B gets its own bar.

One **order** starts from side X's stored score and walks to side Y's (A->B: A's answers made B's way; B->A:
B's answers made A's way), one step per row, each step scored on the same linked items:

- ``a``: X's stored mean (per item: the mean over its samples and repeats);
- ``replay``: X's stored answers judged X's way on today's judge endpoint (the judge's drift, on its own);
- ``regenerate``: answers made again with X's generation setup on today's model endpoint, judged X's way (the
  drift of the model/endpoint: never blamed on a factor); only with an answer endpoint;
- one factor at a time, cumulatively, in the chosen order: the generation factors ``system_prompt``,
  ``temperature``, ``samples``, ``turn2_context``, ``max_tokens`` (``lib.generation.setups.FACTORS``: answers
  regenerated with that part of the setup taken from Y) and the judge-side factors ``prompt``, ``judge``,
  ``judge_max_tokens``, ``reference``, ``truncation``, ``reasoning`` (re-judged with that setting taken from Y);
- ``residual``: Y's stored score minus X's answers fully switched to Y's setup (what no factor explains);
- ``b``: Y's stored mean, delta = Y - X (the whole gap).

Each row: mean, delta (the change from the previous row) with a 95% t interval on question-level differences
(``lib.analysis.deltas.compare_pairs``), n items, calls sent (generation + judging) and cached. The replay and
every judge-side step send the judge ``max_tokens`` of the setup in force (2048 FastChat, 4096 Swallow:
``lib.harness``) until ``judge_max_tokens`` switches it.

``Attribution(store, a, b, judge_config, answer=AnswerEndpoint(...), ...)``: ``prepare()`` lays out every step of
every order asked for and counts, before any call, the requests, tokens and money per step for both
endpoints (identical requests across steps and orders counted once: they are sent once, the cache answers
the rest); ``run(progress=, cancel=)`` sends them (the request cache first, then the shared dispatcher) and
returns ``LadderResult``: the waterfall per order, the ``interactions`` between orders (a factor whose effect
changes by more than its interval) and, with ``shapley=N``, each factor's effect averaged over N orders.
Cancelled: ``LadderInterrupted``; running it again resumes from the cache, no request is sent twice.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import random
import threading
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np
import pandas as pd

from lib.analysis import linking
from lib.analysis.runs import Run, resolve_run
from lib.attribution import judge as J
from lib.errors import LadderInterrupted, UnknownSystemPromptError, UsageError
from lib.generation import plan as gp
from lib.generation.questions import questions_for_run
from lib.generation.runner import cached_texts
from lib.generation.setups import (FACTORS as GEN_FACTOR_FIELDS, FASTCHAT_TYPICAL_SYSTEM_PROMPT, GenerationSetup,
                                   setup_to_dict)
from lib.generation.storage import generate_run
from lib.judging.batch import RejudgeBatch, estimate_tokens
from lib.judging.config import JudgeConfig
from lib.keys import ItemKey
from lib.store import Store

GEN_FACTORS = tuple(GEN_FACTOR_FIELDS)            # system_prompt, temperature, samples, turn2_context, max_tokens
JUDGE_FACTORS = J.STEPS                            # prompt, judge, judge_max_tokens, reference, truncation, reasoning
FACTORS = GEN_FACTORS + JUDGE_FACTORS
COLUMNS = ["step", "mean", "delta", "ci_low", "ci_high", "n", "calls", "cached"]
FORWARD, REVERSE, SHAPLEY = "A->B", "B->A", "shapley"
TYPICAL_JUDGE_TOKENS = 400                         # a judgment's expected length, for estimates

STEP_LABELS = {"a": "A stored", "replay": "replay (judge drift)", "regenerate": "regenerate (model drift)",
               "system_prompt": "system prompt", "temperature": "temperature", "samples": "samples",
               "turn2_context": "turn-2 context", "max_tokens": "generation max_tokens", "prompt": "judge prompt",
               "judge": "judge model", "judge_max_tokens": "judge max_tokens", "reference": "reference answers",
               "truncation": "truncation", "reasoning": "reasoning stripped", "residual": "residual", "b": "B stored"}

STEP_MEANING = {
    "a": "The first side's stored score on the linked items (per item the mean over its samples).",
    "replay": "Its stored answers judged its own way again, on today's judge endpoint: how far today's judge "
              "drifts from the stored verdicts. Never blamed on a factor.",
    "regenerate": "Its answers made again with its own generation setup on today's model endpoint, judged its "
                  "own way: the drift of the model or endpoint (quantisation, server, version). Never blamed on "
                  "a factor.",
    "system_prompt": "The model's system prompt taken from the other harness (e.g. FastChat's 'You are a helpful "
                     "assistant.' -> Swallow's Japanese one): answers regenerated.",
    "temperature": "The per-category temperature map (and override) taken from the other harness.",
    "samples": "Samples per turn (1 vs 5 averaged, Swallow copying one call at temperature 0).",
    "turn2_context": "Which turn-1 answer turn 2 follows: each sample's own (FastChat) or sample 0's (Swallow).",
    "max_tokens": "The generation length limit (FastChat's max_tokens vs the backend default and Swallow's "
                  "character cap).",
    "prompt": "The judge prompt templates (e.g. Swallow's Japanese-language rules).",
    "judge": "The judge model named by the other run.",
    "judge_max_tokens": "The judge call's max_tokens (2048 FastChat, 4096 Swallow).",
    "reference": "The reference answers shown for math, reasoning and coding.",
    "truncation": "Answers cut at the other harness's character limit before judging.",
    "reasoning": "<think> blocks stripped (or kept) before judging, as the other harness does.",
    "residual": "The other side's stored score minus the answers fully switched to its setup: what no factor "
                "explains (a setting not modelled, a different endpoint, noise). Large when little is switched.",
    "b": "The other side's stored score; its delta is the whole gap.",
}

NOTE = ("Each bar is the change from the bar before it, on the same linked items, with a 95% t interval on "
        "question-level differences (questions are the unit). Trust a bar when its interval excludes 0 and it "
        "keeps its size in the other order; a factor whose effect changes between orders interacts with another "
        "(the order decides how the shared part is split: the Shapley average splits it evenly); 'interacts' is "
        "flagged when the change between orders exceeds its own 95% interval (about 5% false flags when there is "
        "none, by simulation). replay and "
        "regenerate measure today's endpoints, not a harness difference. residual is what no factor explains.")


@dataclass(frozen=True)
class AnswerEndpoint:
    """The OpenAI-compatible endpoint serving the model under test (for the generation steps)."""

    base_url: str
    model: str
    api_key: str | None = None
    price_per_1k_input: float | None = None
    price_per_1k_output: float | None = None
    timeout_s: float = 600.0
    concurrency: int = 4

    def __post_init__(self):
        JudgeConfig(base_url=self.base_url, model=self.model)   # the same checks and messages
        object.__setattr__(self, "base_url", self.base_url.strip().rstrip("/"))


@dataclass(frozen=True)
class Side:
    run: Run
    judge: J.Setup
    gen: GenerationSetup | None


@dataclass(frozen=True)
class State:
    """What a step judges: which answers (stored, or regenerated with ``gen``) and how (``judge``, ``model``)."""

    gen: GenerationSetup | None
    switched: tuple[str, ...]
    judge: J.Setup
    model: str


@dataclass
class StepRun:
    name: str
    state: State
    answers_model: str = ""
    samples: int = 1
    plan: gp.GenerationPlan | None = None
    batch: RejudgeBatch | None = None
    estimate: dict = field(default_factory=dict)
    calls: int = 0
    cached: int = 0
    scores: dict = field(default_factory=dict)


@dataclass
class Order:
    direction: str          # FORWARD or REVERSE (a Shapley order is FORWARD with another factor order)
    factors: tuple[str, ...]
    x: Side
    y: Side
    items: list             # (category, question_id, turn) of x's bench
    steps: list = field(default_factory=list)


@dataclass
class LadderResult:
    orders: dict            # label -> DataFrame (COLUMNS), label = direction (and the factor order for Shapley)
    interactions: pd.DataFrame
    shapley: pd.DataFrame | None
    estimate: dict

    @property
    def forward(self) -> pd.DataFrame:
        return self.orders[FORWARD]

    @property
    def reverse(self) -> pd.DataFrame | None:
        return self.orders.get(REVERSE)


def parse_order(text: str | list | tuple | None, *, with_answers: bool) -> tuple[str, ...]:
    """The factor order: a comma-separated text or a list; default every factor (the generation ones only
    with an answer endpoint). Each factor at most once."""
    if text is None:
        return FACTORS if with_answers else JUDGE_FACTORS
    items = [s.strip() for s in (text.split(",") if isinstance(text, str) else text) if s and s.strip()]
    unknown = [s for s in items if s not in FACTORS]
    if unknown or len(set(items)) != len(items) or not items:
        raise UsageError(f"order: each of {', '.join(FACTORS)} at most once (got {', '.join(items) or 'none'})")
    if not with_answers and any(s in GEN_FACTORS for s in items):
        gen = ", ".join(s for s in items if s in GEN_FACTORS)
        raise UsageError(f"The generation factors ({gen}) regenerate answers: give the endpoint serving the model "
                         "under test (--answer-base-url and --answer-model), or leave them out of the order.")
    return tuple(items)


class Attribution:
    def __init__(self, store: Store, a: dict | Run, b: dict | Run, config: JudgeConfig, *,
                 answer: AnswerEndpoint | None = None, a_system_prompt: str | None | object = ...,
                 b_system_prompt: str | None | object = ..., order=None, both_orders: bool = False,
                 shapley: int = 0, items: int | None = None, seed: int = 0):
        ra = a if isinstance(a, Run) else resolve_run(store, a, "A")
        rb = b if isinstance(b, Run) else resolve_run(store, b, "B")
        self.store, self.config, self.answer = store, config, answer
        self.factors = parse_order(order, with_answers=answer is not None)
        gen_a = gen_b = None
        if answer is not None:   # a FastChat run without a stated system prompt: UnknownSystemPromptError
            gen_a = _setup_of(store, ra, a_system_prompt, "A")
            gen_b = _setup_of(store, rb, b_system_prompt, "B")
        self.side_a = Side(ra, J.setup_of(store, ra), gen_a)
        self.side_b = Side(rb, J.setup_of(store, rb), gen_b)
        fwd_items = J.pick_items(store, ra, rb, items)
        if not fwd_items:
            raise UsageError(f"{ra.label} and {rb.label} share no scored item on linked questions.")
        self.orders = [Order(FORWARD, self.factors, self.side_a, self.side_b, fwd_items)]
        if both_orders:
            lm = linking.link_map(store, ra.bench, rb.bench)
            wanted = {(lm[q][0], t) for _, q, t in fwd_items}
            rev_items = [k for k in J.pick_items(store, rb, ra, None) if (k[1], k[2]) in wanted]
            self.orders.append(Order(REVERSE, self.factors, self.side_b, self.side_a, rev_items))
        if shapley and shapley > 1:
            rng, seen = random.Random(seed), {self.factors}
            perms = [self.factors]
            for _ in range(200 * shapley):
                if len(perms) >= shapley:
                    break
                p = list(self.factors)
                rng.shuffle(p)
                if tuple(p) not in seen:
                    seen.add(tuple(p))
                    perms.append(tuple(p))
            self.shapley_orders = perms
            for p in perms[1:]:
                self.orders.append(Order(FORWARD, p, self.side_a, self.side_b, fwd_items))
        else:
            self.shapley_orders = []
        self._questions: dict = {}
        self.prepared: dict | None = None
        self.judge_exact: dict | None = None

    # -- steps
    def _states(self, order: Order) -> list[tuple[str, State]]:
        x, y = order.x, order.y
        y_ref = y.judge.reference
        if x.run.bench != y.run.bench and y_ref:
            y_ref = f"{y.run.bench}{J.LINKED_SEP}{y_ref}"
        state = State(None, (), x.judge, self.config.model)
        out = [("replay", state)]
        if self.answer is not None:
            state = replace(state, gen=x.gen)
            out.append(("regenerate", state))
        for f in order.factors:
            if f in GEN_FACTORS:
                switched = tuple(sorted((*state.switched, f)))
                gen = state.gen.switch(y.gen, f)
                name = x.gen.name + "+" + "+".join(switched) + f":{y.gen.name}"
                state = replace(state, gen=dataclasses.replace(gen, name=name), switched=switched)
            elif f == "prompt":
                state = replace(state, judge=replace(state.judge, family=y.judge.family))
            elif f == "judge":
                state = replace(state, model=y.judge.judge)
            elif f == "judge_max_tokens":
                state = replace(state, judge=replace(state.judge, max_tokens=y.judge.max_tokens))
            elif f == "reference":
                state = replace(state, judge=replace(state.judge, reference=y_ref))
            elif f == "truncation":
                state = replace(state, judge=replace(state.judge, truncate=y.judge.truncate))
            elif f == "reasoning":
                state = replace(state, judge=replace(state.judge, strip_think=y.judge.strip_think))
            out.append((f, state))
        return out

    def _questions_of(self, order: Order):
        key = (order.x.run, tuple(order.items))
        if key not in self._questions:
            qids = {q for _, q, _ in order.items}
            qs = questions_for_run(self.store, order.x.run)
            self._questions[key] = [q for q in qs if q.question_id in qids]
        return self._questions[key]

    def _regen_label(self, x: Side, gen: GenerationSetup) -> str:
        ident = json.dumps([setup_to_dict(dataclasses.replace(gen, provenance=())), self.answer.base_url,
                            self.answer.model], sort_keys=True, ensure_ascii=False)
        return f"{x.run.model} [regen: {gen.name} #{hashlib.sha256(ident.encode()).hexdigest()[:6]}]"

    def _stored_samples(self, run: Run) -> int:
        with self.store.read() as cur:
            n = cur.execute("SELECT max(sample) + 1 FROM single_judgments WHERE harness = ? AND bench = ? AND "
                            "judge = ? AND model = ?", list(run.selector.values())).fetchone()[0]
        return int(n or 1)

    def _judge_config(self, state: State) -> JudgeConfig:
        return replace(self.config, model=state.model, max_tokens=int(state.judge.max_tokens or self.config.max_tokens))

    def _batch(self, order: Order, step: StepRun) -> RejudgeBatch:
        s = step.state
        template = J.combined_template(s.judge.family, s.judge.truncate, s.judge.strip_think)
        config = self._judge_config(s)
        keys = [ItemKey(order.x.run.bench, q, int(t), step.answers_model, i)
                for _, q, t in order.items for i in range(step.samples)]
        ident = json.dumps([order.x.run.bench, step.answers_model, config.base_url, config.model, template.name,
                            s.judge.reference, config.params()], sort_keys=True, ensure_ascii=False)
        label = f"ladder-{hashlib.sha256(ident.encode()).hexdigest()[:12]}"
        return RejudgeBatch(self.store, template, config, keys, label, reference_judge=s.judge.reference,
                            judge_hint=order.x.run.judge)

    # -- cost first
    def prepare(self) -> dict:
        """Lay out every step of every order and count what it will send, before any call. Returns the totals
        and one row per (order, step): generation and judge requests, cached, to send, tokens, money."""
        lookup = lambda keys: cached_texts(self.store, keys)  # noqa: E731
        seen_gen: set[str] = set()
        seen_judge: set[str] = set()
        rows = []
        for order in self.orders:
            order.steps = []
            for name, state in self._states(order):
                step = StepRun(name, state)
                est = {"gen_requests": 0, "gen_to_send": 0, "gen_prompt_tokens": 0, "gen_completion_tokens": 0,
                       "gen_cost": None, "judge_requests": 0, "judge_to_send": 0, "judge_prompt_tokens": 0,
                       "judge_completion_tokens": 0, "judge_cost": None, "exact": True}
                ids = None
                if state.gen is None:
                    step.answers_model, step.samples = order.x.run.model, self._stored_samples(order.x.run)
                else:
                    step.answers_model, step.samples = self._regen_label(order.x, state.gen), state.gen.samples
                    step.plan = gp.plan_generation(self._questions_of(order), state.gen, model=self.answer.model,
                                                   base_url=self.answer.base_url)
                    ids, to_send = gp.answer_identities(step.plan, lookup)
                    new = [k for k in to_send if k not in seen_gen]
                    seen_gen.update(new)
                    g = gp.estimate(step.plan, answered=lookup, price_per_1k_input=self.answer.price_per_1k_input,
                                    price_per_1k_output=self.answer.price_per_1k_output)
                    share = len(new) / g.to_send if g.to_send else 0.0
                    est.update(gen_requests=step.plan.requests, gen_to_send=len(new),
                               gen_prompt_tokens=round(g.prompt_tokens * share),
                               gen_completion_tokens=round(g.completion_tokens * share),
                               gen_cost=None if g.cost is None else g.cost * share)
                    if not to_send:   # every answer is in the cache: store the run now (no call) and judge exactly
                        generate_run(self.store, step.plan, answer_model=order.x.run.model, label=step.answers_model)
                        ids = None
                config = self._judge_config(state)
                if ids is None:
                    step.batch = self._batch(order, step)
                    b = step.batch.prepare()
                    hashes = {r.request_hash for u in step.batch.units for r in u.requests if r.result is None}
                    new = [h for h in hashes if h not in seen_judge]
                    seen_judge.update(new)
                    share = len(new) / b.to_send if b.to_send else 0.0
                    est.update(judge_requests=b.requests, judge_to_send=len(new),
                               judge_prompt_tokens=round(b.prompt_tokens * share),
                               judge_completion_tokens=b.completion_tokens_typical * len(new))
                else:                 # the judge requests depend on answers not made yet: counted by identity
                    jkeys = set()
                    jd = dataclasses.asdict(state.judge)
                    cap = state.gen.max_chars
                    if cap is not None and (jd["truncate"] is None or jd["truncate"] >= cap):
                        jd["truncate"] = None          # answers already cut shorter: the same text either way
                    bench = order.x.run.bench
                    for cat, q, t in order.items:
                        shown = dict(jd, reference=jd["reference"] if cat in J.REF_CATEGORIES else None)
                        jstate = json.dumps([shown, config.model, config.params()], sort_keys=True)
                        for i in range(step.samples):
                            a1 = ids.get((bench, q, 1, i), "")
                            a2 = ids.get((bench, q, 2, i), "") if int(t) == 2 else ""
                            jkeys.add("jsym:" + hashlib.sha256(f"{jstate}|{q}|{t}|{a1}|{a2}".encode()).hexdigest())
                    new = [k for k in jkeys if k not in seen_judge]
                    seen_judge.update(new)
                    per = {q.question_id: sum(estimate_tokens(x) for x in q.turns) for q in self._questions_of(order)}
                    typical_answer = gp.TYPICAL_ANSWER_TOKENS
                    mean_q = (sum(per.values()) / len(per)) if per else 0
                    pt = round(len(new) * (mean_q + 2 * typical_answer + 600))
                    est.update(judge_requests=len(order.items) * step.samples, judge_to_send=len(new),
                               judge_prompt_tokens=pt, judge_completion_tokens=TYPICAL_JUDGE_TOKENS * len(new),
                               exact=False)
                est["judge_cost"] = config.cost(est["judge_prompt_tokens"], est["judge_completion_tokens"])
                step.estimate = est
                order.steps.append(step)
                rows.append({"order": self._order_label(order), "step": name, **est})
        frame = pd.DataFrame(rows)
        money = [c for c in ("gen_cost", "judge_cost") if frame[c].notna().any()]
        totals = {"orders": len(self.orders), "steps": len(rows), "items": len(self.orders[0].items),
                  "gen_to_send": int(frame["gen_to_send"].sum()), "judge_to_send": int(frame["judge_to_send"].sum()),
                  "gen_tokens": int(frame["gen_prompt_tokens"].sum() + frame["gen_completion_tokens"].sum()),
                  "judge_tokens": int(frame["judge_prompt_tokens"].sum() + frame["judge_completion_tokens"].sum()),
                  "cost": float(frame[money].fillna(0).to_numpy().sum()) if money else None,
                  "exact": bool(frame["exact"].all()), "per_step": frame}
        totals["to_send"] = totals["gen_to_send"] + totals["judge_to_send"]
        self.prepared = totals
        return totals

    def _order_label(self, order: Order) -> str:
        if order.direction == REVERSE or order.factors == self.factors:
            return order.direction
        return f"{SHAPLEY}:{','.join(order.factors)}"

    # -- running
    def run(self, *, judge_api_key: str | None = None, concurrency: int = 8,
            progress: Callable[[str, int, int], None] | None = None,
            cancel: threading.Event | None = None,
            confirm_judging: Callable[[dict], bool] | None = None) -> LadderResult:
        """Send what the cache does not answer (``progress(text, done, total)``): first every step's answers
        (generation), then, with every answer made, the exact judge count (``self.judge_exact``; given
        ``confirm_judging(judge_exact)`` returning False stops there), then the judging. Returns the waterfalls,
        interactions and Shapley split. ``cancel`` set: ``LadderInterrupted`` (resume: run the same again)."""
        if self.prepared is None:
            self.prepare()
        cancel = cancel if cancel is not None else threading.Event()
        steps = [(order, step) for order in self.orders for step in order.steps]
        where = {id(step): f"{self._order_label(order)} step {k}/{len(steps)} ({step.name})"
                 for k, (order, step) in enumerate(steps, start=1)}
        for order, step in steps:                    # 1. the answers
            step.calls = step.cached = 0
            if step.plan is None:
                continue
            w = where[id(step)]
            gen_progress = (lambda d, t, w=w: progress(f"{w}: generating", d, t)) if progress else None
            _, res = generate_run(self.store, step.plan, answer_model=order.x.run.model, label=step.answers_model,
                                  api_key=self.answer.api_key, progress=gen_progress, cancel=cancel,
                                  concurrency=self.answer.concurrency, timeout_s=self.answer.timeout_s)
            step.calls += res.sent
            step.cached += res.cached
            if res.cancelled or cancel.is_set():
                raise LadderInterrupted(f"Stopped at {w}: the answers that arrived are kept; run the same ladder "
                                        "again to resume (nothing is sent twice).")
            if res.failed:
                key, message = res.failed[0]
                raise UsageError(f"The ladder stopped at {w}: {len(res.failed)} answer(s) could not be made; first: "
                                 f"{key[1]} turn {key[2]} sample {key[3]}: {message}")
        seen: set[str] = set()                       # 2. the exact judge count, every answer known
        for order, step in steps:
            step.batch = self._batch(order, step)
            step.batch.prepare()
            seen |= {r.request_hash for u in step.batch.units for r in u.requests if r.result is None}
        self.judge_exact = {"judge_to_send": len(seen)}
        if confirm_judging is not None and not confirm_judging(self.judge_exact):
            raise LadderInterrupted(f"Stopped before judging: {len(seen)} judge request(s) to send. The answers are "
                                    "kept; run the same ladder again to go on.")
        for order, step in steps:                    # 3. the judging
            w = where[id(step)]
            step.batch.prepare()   # again: the cache now answers what an earlier step already asked
            judge_progress = (lambda d, t, eta, w=w: progress(f"{w}: judging", d, t)) if progress else None
            summary = step.batch.run(api_key=judge_api_key, concurrency=concurrency, progress=judge_progress,
                                     cancel=cancel)
            step.calls += int(summary.calls)
            step.cached += int(summary.cache_hits + summary.skipped_done)
            if summary.cancelled or cancel.is_set():
                raise LadderInterrupted(f"Stopped at {w}: the verdicts that arrived are kept; run the same ladder "
                                        "again to resume (nothing is sent twice).")
            if summary.error:
                raise UsageError(f"The ladder stopped at {w}: {summary.error}")
            if summary.problems and summary.not_renderable >= len(step.batch.items) - summary.skipped_done > 0:
                raise UsageError(f"The ladder stopped at {w}: no item could be judged; first problem: "
                                 f"{summary.problems[0]}")
            step.scores = J.batch_scores(self.store, step.batch.source_id)
        tables = {self._order_label(o): self.table(o) for o in self.orders}
        fwd = tables[FORWARD]
        rev = tables.get(REVERSE)
        shap = shapley_table({lab: t for lab, t in tables.items() if lab == FORWARD or lab.startswith(SHAPLEY)}) \
            if self.shapley_orders else None
        return LadderResult(tables, interactions(fwd, rev, shap_tables={lab: t for lab, t in tables.items()
                                                                           if lab.startswith(SHAPLEY)}),
                            shap, self.prepared)

    # -- the table
    def table(self, order: Order) -> pd.DataFrame:
        x, y = order.x.run, order.y.run
        sx, sy = J.stored_scores(self.store, x), J.stored_scores(self.store, y)
        lm = linking.link_map(self.store, x.bench, y.bench)
        rows = []
        for cat, q, t in order.items:
            key = (q, int(t))
            other = (lm[q][0], int(t)) if q in lm else None
            vals = ([sx.get(key, (None, None))[1]] + [s.scores.get(key) for s in order.steps]
                    + [sy.get(other, (None, None))[1] if other else None])
            if any(v is None or (isinstance(v, float) and np.isnan(v)) for v in vals):
                continue
            rows.append((f"{x.bench}:{q}", cat, int(t), *vals))
        names = ["a", *[s.name for s in order.steps], "b"]
        frame = pd.DataFrame(rows, columns=["question", "category", "turn", *names])
        n = len(frame)
        out = []
        for i, name in enumerate(names):
            mean = float(frame[name].mean()) if n else np.nan
            if name == "a":
                out.append({"step": "a", "mean": mean, "delta": np.nan, "ci_low": np.nan, "ci_high": np.nan,
                            "n": n, "calls": 0, "cached": 0})
            elif name == "b":
                out.append({"step": "residual", **J.paired(frame, "b", names[-2]), "n": n, "calls": 0, "cached": 0,
                            "mean": mean})
                out.append({"step": "b", **J.paired(frame, "b", "a"), "n": n, "calls": 0, "cached": 0, "mean": mean})
            else:
                step = order.steps[i - 1]
                out.append({"step": name, **J.paired(frame, name, names[i - 1]), "n": n, "calls": step.calls,
                            "cached": step.cached, "mean": mean})
        df = pd.DataFrame(out, columns=COLUMNS)
        df.attrs.update(order=self._order_label(order), direction=order.direction, factors=list(order.factors),
                        run_a=x.selector, run_b=y.selector, label_a=x.label, label_b=y.label,
                        reverse=order.direction == REVERSE, items=len(order.items), used=n,
                        setup_a=dataclasses.asdict(order.x.judge), setup_b=dataclasses.asdict(order.y.judge),
                        gen_a=order.x.gen.describe() if order.x.gen else None,
                        gen_b=order.y.gen.describe() if order.y.gen else None)
        return df


def _setup_of(store: Store, run: Run, system_prompt, side: str) -> GenerationSetup:
    try:
        return GenerationSetup.from_run(store, run, system_prompt=system_prompt)
    except UnknownSystemPromptError:
        raise UnknownSystemPromptError(
            f"The system prompt of the run {run.label} (side {side}) is unknown: FastChat answer files do not record "
            "it (it comes from the model adapter's conversation template). State it (python -m lib.cli attribute "
            f"--{side.lower()}-system-prompt TEXT, or '' for none; on the Compare page: {side}'s system prompt); "
            f"the common one is {FASTCHAT_TYPICAL_SYSTEM_PROMPT!r}, but JudgeLens never guesses.") from None


def _effects(table: pd.DataFrame, sign: float = 1.0) -> dict:
    return {r["step"]: (sign * r["delta"], (r["ci_high"] - r["ci_low"]) / 2 if pd.notna(r["ci_high"]) else 0.0)
            for r in table.to_dict(orient="records") if r["step"] in FACTORS}


def interactions(forward: pd.DataFrame, reverse: pd.DataFrame | None, *, shap_tables: dict | None = None,
                 tolerance: float = 1e-9) -> pd.DataFrame:
    """Per factor: its effect in the A->B order, in the B->A order (sign turned so both read A->B), and across
    the other orders asked for; ``interacts`` when the effect changes between orders (highest - lowest) by more
    than the 95% interval of that change, sqrt(hw_lowest^2 + hw_highest^2) from the two orders' t intervals: the
    factor's effect depends on what was switched before it, i.e. it interacts with another factor.

    Calibration (simulation, two orders with the same true effect and independent per-item noise, 20,000 runs):
    4.0% of factors flagged at 16 items, 5.0% at 80 (the larger of the two half-widths alone flagged 11% and 15%);
    a true change of 1 sd is flagged 76% of the time at 16 items, 100% at 80."""
    fwd = _effects(forward)
    rev = _effects(reverse, -1.0) if reverse is not None else {}
    others = [_effects(t) for t in (shap_tables or {}).values()]
    rows = []
    for f, (d, hw) in fwd.items():
        seen = [(d, hw)] + ([rev[f]] if f in rev else []) + [o[f] for o in others if f in o]
        if len(seen) < 2:
            continue
        lo_v, lo_h = min(seen, key=lambda x: x[0])
        hi_v, hi_h = max(seen, key=lambda x: x[0])
        lo, hi, width = lo_v, hi_v, float(np.hypot(lo_h, hi_h))
        rows.append({"factor": f, "forward": d, "reverse": rev[f][0] if f in rev else np.nan,
                     "lowest": lo, "highest": hi, "change": hi - lo, "interval": width,
                     "interacts": bool(hi - lo > width + tolerance)})
    return pd.DataFrame(rows, columns=["factor", "forward", "reverse", "lowest", "highest", "change", "interval",
                                       "interacts"])


def shapley_table(tables: dict) -> pd.DataFrame:
    """Each factor's effect averaged over the orders run (a Shapley-style split of the switched part of the gap;
    exact Shapley values when every order is run): mean, lowest, highest, orders."""
    effects = [_effects(t) for t in tables.values()]
    rows = []
    for f in FACTORS:
        vals = [e[f][0] for e in effects if f in e]
        if vals:
            rows.append({"factor": f, "mean": float(np.mean(vals)), "lowest": float(min(vals)),
                         "highest": float(max(vals)), "orders": len(vals)})
    return pd.DataFrame(rows, columns=["factor", "mean", "lowest", "highest", "orders"])


def records(result: LadderResult | pd.DataFrame) -> list[dict]:
    """The ladder as the CLI's JSON: one row per (order, step) with ``order`` (A->B, B->A, shapley:...); with a
    Shapley split, rows ``order = "shapley"`` whose ``delta`` is the mean effect and ``ci_low``/``ci_high`` the
    lowest and highest over the orders; ``interacts`` on factor rows when orders were compared. NaN -> null."""
    def clean(d: dict) -> dict:
        return {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in d.items()}

    if isinstance(result, pd.DataFrame):
        return [clean(r) for r in result.to_dict(orient="records")]
    flagged = {} if result.interactions.empty else dict(zip(result.interactions["factor"],
                                                            result.interactions["interacts"]))
    out = []
    for label, table in result.orders.items():
        for r in table.to_dict(orient="records"):
            row = {"order": label, **r}
            if r["step"] in flagged:
                row["interacts"] = bool(flagged[r["step"]])
            out.append(clean(row))
    if result.shapley is not None:
        for r in result.shapley.to_dict(orient="records"):
            out.append(clean({"order": SHAPLEY, "step": r["factor"], "mean": np.nan, "delta": r["mean"],
                              "ci_low": r["lowest"], "ci_high": r["highest"], "n": r["orders"], "calls": 0,
                              "cached": 0, "interacts": bool(flagged.get(r["factor"], False))}))
    return out


def estimate_text(est: dict) -> str:
    """The cost, in words, before any call."""
    money = f"; ~${est['cost']:.4f}" if est.get("cost") is not None else "; no prices given, no cost in money"
    return (f"{est['orders']} order(s), {est['steps']} step(s) x {est['items']} item(s): {est['gen_to_send']} "
            f"generation request(s) (~{est['gen_tokens']} tokens) and {est['judge_to_send']} judge request(s) "
            f"(~{est['judge_tokens']} tokens) to send{money}"
            + ("" if est.get("exact", True) else
               " (judge requests on answers not made yet are counted at most: identical answers are judged once)"))
