"""Request planning: the exact chat requests a generation setup sends, before anything is sent.

``plan_generation(questions, setup, model=..., base_url=...)`` lays out, for every question × turn × sample,
a ``Slot``: the temperature, ``max_tokens`` and seed it is sent with, the turn-1 sample its turn-2 history is
conditioned on (``condition_on``), or, for a copy (Swallow at temperature 0: samples 1.. repeat sample 0),
``copy_of`` and no request at all. ``messages_for(slot, turn1_text)`` builds the messages exactly as the
harness would:

- turn 1: ``[system?, user(turns[0])]``
- turn 2: ``[system?, user(turns[0]), assistant(turn-1 answer of sample condition_on), user(turns[1])]``

(FastChat: ``get_conversation_template`` + ``append_message`` per turn; Swallow: the fork's turn contexts,
see ``lib.generation.setups``.) ``request_body(...)`` is the JSON body POSTed to ``/chat/completions`` and
``request_key(base_url, body)`` its key in the one request cache (``lib.judging.cache.request_hash``: base URL,
model, messages, the parameters sent), never an API key.

One request per sample (``n=1``, ``seed`` = the sample index): Swallow's fork asks for its 5 samples with one
``n=5`` call, or 5 ``n=1`` calls when the model's ``max_n`` < 5; the per-sample requests make each sample
reproducible and cacheable on its own and are what the cost estimate counts.

``estimate(plan)``: requests (= slots that are not copies: exactly what the runner sends on an empty cache),
prompt and completion tokens (turn-2 prompts include an assumed turn-1 answer of ``answer_tokens``; the upper
bound uses ``max_tokens`` where one is sent) and money at the given prices.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping

from lib.errors import UsageError
from lib.judging import cache
from lib.judging.client import request_preview
from lib.judging.config import JudgeConfig
from lib.generation.questions import Question
from lib.generation.setups import TURN2_SAMPLE0, GenerationSetup

TYPICAL_ANSWER_TOKENS = 600   # assumed answer length for estimates when no max_tokens caps it lower


@dataclass(frozen=True)
class Slot:
    """One (question, turn, sample) answer to make. ``copy_of`` set: no request, the text of that sample."""

    question: Question
    turn: int                      # 1-based
    sample: int
    temperature: float
    max_tokens: int | None
    seed: int | None
    condition_on: int | None       # turn 2: the turn-1 sample whose answer is the history
    copy_of: int | None            # a copy of this sample of the same turn (no request)

    @property
    def key(self) -> tuple[str, str, int, int]:
        return (self.question.bench, self.question.question_id, self.turn, self.sample)

    @property
    def sends(self) -> bool:
        return self.copy_of is None


@dataclass(frozen=True)
class GenerationPlan:
    setup: GenerationSetup
    model: str
    base_url: str
    slots: tuple[Slot, ...]

    @property
    def requests(self) -> int:
        return sum(1 for s in self.slots if s.sends)

    @property
    def questions(self) -> list[Question]:
        seen: dict[tuple, Question] = {}
        for s in self.slots:
            seen.setdefault((s.question.bench, s.question.question_id), s.question)
        return list(seen.values())


@dataclass(frozen=True)
class Estimate:
    """What a plan will cost on an empty cache (``cached`` requests already answered cost nothing)."""

    requests: int
    cached: int
    to_send: int
    copies: int
    prompt_tokens: int             # of the requests to send
    completion_tokens: int         # expected
    completion_tokens_max: int | None   # with max_tokens; None when a request sends none
    cost: float | None
    cost_max: float | None

    def text(self) -> str:
        money = f"; ~${self.cost:.4f}" if self.cost is not None else ""
        money += f" (at most ${self.cost_max:.4f})" if self.cost_max is not None else ""
        return (f"{self.requests} request(s) ({self.copies} sample(s) are copies, no request), {self.cached} "
                f"answered already, {self.to_send} to send; ~{self.prompt_tokens} prompt and "
                f"~{self.completion_tokens} completion tokens{money}")


def plan_generation(questions: list[Question], setup: GenerationSetup, *, model: str, base_url: str,
                    turns: int | None = None) -> GenerationPlan:
    """Every slot of ``questions`` × turns × ``setup.samples``, in question, turn, sample order."""
    if not model:
        raise UsageError("Name the model under test (--model): the endpoint's model name.")
    slots = []
    for q in questions:
        n_turns = len(q.turns) if turns is None else min(turns, len(q.turns))
        if not n_turns:
            raise UsageError(f"Question {q.bench}/{q.question_id} has no turns to answer.")
        t = setup.temperature_for(q.category, q.required_temperature)
        for turn in range(1, n_turns + 1):
            for s in range(setup.samples):
                copy = 0 if (setup.copy_at_zero and t == 0 and s > 0) else None
                cond = None if turn == 1 else (0 if setup.turn2_context == TURN2_SAMPLE0 else s)
                slots.append(Slot(q, turn, s, t, setup.max_tokens, setup.seed_for(s), cond, copy))
    return GenerationPlan(setup, model, base_url.strip().rstrip("/"), tuple(slots))


def messages_for(setup: GenerationSetup, slot: Slot, turn1_text: str | None = None) -> list[dict]:
    """The chat messages of ``slot``; turn 2 needs the turn-1 answer of sample ``slot.condition_on``."""
    msgs = [] if setup.system_prompt is None else [{"role": "system", "content": setup.system_prompt}]
    q = slot.question
    msgs.append({"role": "user", "content": q.turns[0]})
    if slot.turn >= 2:
        if turn1_text is None:
            raise UsageError(f"Turn 2 of {q.bench}/{q.question_id} needs the turn-1 answer it follows.")
        msgs += [{"role": "assistant", "content": turn1_text}, {"role": "user", "content": q.turns[1]}]
    return msgs


def slot_params(slot: Slot) -> dict:
    """The parameters sent with ``slot``'s request (besides model and messages): part of its cache key."""
    params = {"n": 1, "temperature": slot.temperature}
    if slot.max_tokens is not None:
        params["max_tokens"] = slot.max_tokens
    if slot.seed is not None:
        params["seed"] = slot.seed
    return params


def endpoint(plan: GenerationPlan, *, timeout_s: float = 600.0, max_retries: int = 2) -> JudgeConfig:
    """The endpoint serving the model under test, as the request path (dispatcher, client, cache) reads it."""
    return JudgeConfig(base_url=plan.base_url, model=plan.model, timeout_s=timeout_s, max_retries=max_retries)


def request_body(plan: GenerationPlan, slot: Slot, turn1_text: str | None = None) -> dict:
    """The JSON body POSTed to ``{base_url}/chat/completions`` for ``slot`` (no credentials)."""
    return request_preview(endpoint(plan), messages_for(plan.setup, slot, turn1_text), slot_params(slot))


def request_key(base_url: str, body: dict) -> str:
    """The request cache's key of ``body`` sent to ``base_url`` (``lib.judging.cache.request_hash``)."""
    params = {k: v for k, v in body.items() if k not in ("model", "messages")}
    return cache.request_hash(JudgeConfig(base_url=base_url, model=body["model"]), body["messages"], params)


Lookup = Callable[[list], Mapping[str, str]]   # request keys -> texts the cache holds for them


def as_lookup(answered: Mapping[str, str] | Lookup | None) -> Lookup:
    """The request cache as a lookup ``keys -> {key: text}``: a lookup as it is, a mapping read by key, None empty."""
    if answered is None:
        return lambda keys: {}
    if callable(answered):
        return answered
    return lambda keys: {k: answered[k] for k in keys if k in answered}


def estimate_tokens(text: str) -> int:
    """A rough token count: ASCII ~4 characters per token, other characters ~1 each."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    return ascii_chars // 4 + (len(text) - ascii_chars) + 1


def estimate(plan: GenerationPlan, *, answered: "Mapping[str, str] | Lookup | None" = None,
             answer_tokens: int = TYPICAL_ANSWER_TOKENS, price_per_1k_input: float | None = None,
             price_per_1k_output: float | None = None) -> Estimate:
    """Requests, tokens and money of ``plan``. ``answered``: the request cache (a mapping key -> text, or a
    lookup ``keys -> {key: text}``): a slot whose exact request is in it costs nothing. A turn-2 key is known
    once the turn-1 text it follows is (answered itself), so ``to_send`` is exactly what ``run_plan`` sends
    with the same cache. Identical requests are counted once (they are sent once)."""
    lookup = as_lookup(answered)
    requests = plan.requests
    copies = len(plan.slots) - requests
    expected = answer_tokens if plan.setup.max_tokens is None else min(answer_tokens, plan.setup.max_tokens)
    texts: dict[tuple, str] = {}
    cached = prompt = 0
    seen: set[str] = set()
    unique = 0
    for turn in sorted({s.turn for s in plan.slots}):
        keyed = []
        for slot in plan.slots:
            if slot.turn != turn or not slot.sends:
                continue
            t1 = None
            if turn >= 2:
                t1 = texts.get((slot.question.bench, slot.question.question_id, turn - 1, slot.condition_on))
            key = request_key(plan.base_url, request_body(plan, slot, t1)) if (turn == 1 or t1 is not None) else None
            keyed.append((slot, t1, key))
        hits = lookup([k for _, _, k in keyed if k is not None])
        for slot, t1, key in keyed:
            if key is not None and key in hits:
                texts[slot.key] = hits[key]
                cached += 1
                continue
            if key is not None and key in seen:
                continue
            if key is not None:
                seen.add(key)
            unique += 1
            msgs = messages_for(plan.setup, slot, "" if slot.turn >= 2 else None)
            prompt += sum(estimate_tokens(m["content"]) for m in msgs)
            prompt += (estimate_tokens(t1) if t1 is not None else expected) if slot.turn >= 2 else 0
    to_send = unique
    completion = expected * to_send
    cmax = None if plan.setup.max_tokens is None else plan.setup.max_tokens * to_send

    def money(c):
        if price_per_1k_input is None or price_per_1k_output is None or c is None:
            return None
        return prompt / 1000 * price_per_1k_input + c / 1000 * price_per_1k_output

    return Estimate(requests, cached, to_send, copies, prompt, completion, cmax, money(completion), money(cmax))


def answer_identities(plan: GenerationPlan, answered: "Mapping[str, str] | Lookup | None" = None
                      ) -> tuple[dict, dict]:
    """Before anything is sent: ``(ids, to_send)``. ``ids``: ``Slot.key`` -> the identity of the text the slot
    will hold (a request key; for a turn 2 whose turn-1 text is not cached yet, a key derived from that
    turn-1 request's identity; a copy: its source's). One request gives one text (the cache answers it again),
    so equal identities are equal texts, across plans too. ``to_send``: identity -> True for requests the cache
    does not answer (what will be sent). Lets a ladder count requests over many setups without sending any."""
    import hashlib
    import json

    lookup = as_lookup(answered)
    ids: dict[tuple, str] = {}
    texts: dict[tuple, str] = {}
    to_send: dict[str, bool] = {}
    for turn in sorted({s.turn for s in plan.slots}):
        keyed = []
        for slot in plan.slots:
            if slot.turn != turn or not slot.sends:
                continue
            if turn == 1:
                keyed.append((slot, request_key(plan.base_url, request_body(plan, slot)), True))
                continue
            prev = (slot.question.bench, slot.question.question_id, turn - 1, slot.condition_on)
            if prev in texts:
                keyed.append((slot, request_key(plan.base_url, request_body(plan, slot, texts[prev])), True))
            else:
                body = request_body(plan, slot, "")
                ident = json.dumps([ids.get(prev), plan.base_url, body], ensure_ascii=False, sort_keys=True)
                keyed.append((slot, "sym:" + hashlib.sha256(ident.encode()).hexdigest(), False))
        hits = lookup([k for _, k, real in keyed if real])
        cut = plan.setup.max_chars
        for slot, key, real in keyed:
            ids[slot.key] = key if cut is None else f"{key}|first {cut} characters"
            if real and key in hits:
                texts[slot.key] = hits[key] if cut is None else hits[key][:cut]
            else:
                to_send[key] = True
        for slot in plan.slots:
            if slot.turn == turn and slot.copy_of is not None:
                src = slot.key[:3] + (slot.copy_of,)
                ids[slot.key] = ids.get(src, "")
                if src in texts:
                    texts[slot.key] = texts[src]
    return ids, to_send
