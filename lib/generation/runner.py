"""Sending a generation plan: answers per sample, copies filled in, turn 2 conditioned per the setup's rule.

``run_plan(plan, store, ...)`` sends every slot that makes a request down JudgeLens's one request path: the
request cache (``lib.judging.cache``, the same table and key rule as judge calls) is read first, the rest goes
through the shared dispatcher (``lib.judging.dispatch``: threads, retries, deadline, cancel, fatal stop), and
each answer is written to the cache as it arrives. Turn-1 requests go first; a turn-2 request is built once
the turn-1 answer it is conditioned on exists (``Slot.condition_on``), so its history is exactly that text.
Copies (Swallow at temperature 0) take the text of the sample they copy and send nothing; identical
requests are sent once.

- ``write(cur, answered)``: called inside the transaction that writes answered requests to the cache (every
  ``FLUSH_EVERY_S`` and at the end), so a caller's rows (a regenerated run's ``generations``) are kept with
  what was paid for; resume reads the cache: no answered request is sent twice;
- ``progress(done, total)``: ``total`` = requests of the plan (copies excluded), cached ones count as done;
- ``cancel``: a ``threading.Event``; once set nothing more is sent, requests in flight are waited for (up to
  the dispatcher's grace) and kept, and the result says ``cancelled``. ``concurrency`` requests at most.

A request that fails is recorded in ``failed`` with its message; the samples that depend on it (its
copies, a turn 2 conditioned on it) are left out and listed too.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from lib.generation.plan import GenerationPlan, Slot, endpoint, messages_for, request_key, slot_params
from lib.judging import cache
from lib.judging.calls import CallResult
from lib.judging.client import request_preview
from lib.judging.dispatch import Dispatcher
from lib.store import Store

FLUSH_EVERY_S = 0.5


@dataclass(frozen=True)
class GenRequest:
    """One request to send: ``body`` is the JSON POSTed to ``{base_url}/chat/completions``; ``messages``,
    ``params`` and ``request_hash`` are what the dispatcher reads."""

    key: str
    base_url: str
    body: dict = field(hash=False)
    slot: Slot = field(hash=False)

    @property
    def request_hash(self) -> str:
        return self.key

    @property
    def messages(self) -> list[dict]:
        return self.body["messages"]

    @property
    def params(self) -> dict:
        return {k: v for k, v in self.body.items() if k not in ("model", "messages")}


@dataclass(frozen=True)
class Answer:
    slot: Slot
    text: str
    request_key: str | None     # None for a copy
    copied: bool = False
    cached: bool = False


@dataclass
class GenerationResult:
    plan: GenerationPlan
    answers: dict = field(default_factory=dict)     # Slot.key -> Answer
    sent: int = 0
    cached: int = 0
    failed: list = field(default_factory=list)      # (Slot.key, message)
    cancelled: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def complete(self) -> bool:
        return not self.cancelled and not self.failed and len(self.answers) == len(self.plan.slots)

    def texts(self, bench: str, question_id: str, turn: int) -> list[str | None]:
        """The answers of one question and turn, by sample (None where missing)."""
        return [(a.text if (a := self.answers.get((bench, question_id, turn, s))) else None)
                for s in range(self.plan.setup.samples)]


def cached_texts(store: Store, keys) -> dict[str, str]:
    """Request key -> answer text the request cache holds (``plan.estimate``'s ``answered`` lookup)."""
    return {k: r.text for k, r in cache.fetch(store, keys).items() if r.text is not None}


def run_plan(plan: GenerationPlan, store: Store, *, api_key: str | None = None, client=None,
             write: Callable[[object, list], None] | None = None,
             progress: Callable[[int, int], None] | None = None, cancel: threading.Event | None = None,
             concurrency: int = 4, timeout_s: float = 600.0, max_retries: int = 2) -> GenerationResult:
    cancel = cancel if cancel is not None else threading.Event()
    config = endpoint(plan, timeout_s=timeout_s, max_retries=max_retries)
    result = GenerationResult(plan)
    total = plan.requests
    done = [0]
    cut = plan.setup.max_chars

    def record(slot: Slot, text: str, key: str | None, *, copied=False, cached=False) -> None:
        if cut is not None and len(text) > cut:
            text = text[:cut]          # Swallow keeps the first max_gen_text_length characters
        result.answers[slot.key] = Answer(slot, text, key, copied, cached)

    def tick(n: int = 1) -> None:
        done[0] += n
        if progress:
            progress(done[0], total)

    for turn in sorted({s.turn for s in plan.slots}):
        slots = [s for s in plan.slots if s.turn == turn]
        reqs: list[GenRequest] = []
        for slot in slots:
            if not slot.sends:
                continue
            t1 = None
            if turn >= 2:
                prev = result.answers.get((slot.question.bench, slot.question.question_id, turn - 1,
                                           slot.condition_on))
                if prev is None:
                    result.failed.append((slot.key, "not sent: the turn-1 answer it follows is missing"))
                    continue
                t1 = prev.text
            body = request_preview(config, messages_for(plan.setup, slot, t1), slot_params(slot))
            reqs.append(GenRequest(request_key(plan.base_url, body), plan.base_url, body, slot))
        hits = cached_texts(store, [r.key for r in reqs])
        pending: dict[str, list[GenRequest]] = {}
        for r in reqs:
            if r.key in hits:
                record(r.slot, hits[r.key], r.key, cached=True)
                result.cached += 1
                tick()
            else:
                pending.setdefault(r.key, []).append(r)
        if pending and not cancel.is_set():
            _dispatch(store, config, pending, result, record, tick, write, api_key, client, concurrency, cancel)
        elif pending:
            result.cancelled = True
        for slot in slots:            # copies of what was answered
            if slot.copy_of is not None:
                src = result.answers.get(slot.key[:3] + (slot.copy_of,))
                if src is not None:
                    record(slot, src.text, None, copied=True)
                elif not result.cancelled:
                    result.failed.append((slot.key, f"not made: sample {slot.copy_of} it copies is missing"))
        if result.cancelled:
            break
    return result


def _dispatch(store, config, pending, result, record, tick, write, api_key, client, concurrency, cancel) -> None:
    firsts = [group[0] for group in pending.values()]
    dispatcher = Dispatcher(config, api_key=api_key or "no-key", client=client, concurrency=concurrency,
                            cancel=cancel)
    buffer: list[tuple[GenRequest, CallResult]] = []
    last = [time.monotonic()]

    def flush() -> None:
        if not buffer:
            return
        items = buffer[:]
        buffer.clear()

        def tx(cur) -> None:
            cache.save(cur, config, [(r.messages, res, r.params) for r, res in items])
            if write is not None:
                write(cur, [(twin, res.text or "") for r, res in items for twin in pending[r.key]])

        store.transaction(tx)
        last[0] = time.monotonic()

    answered = failed = 0
    seen: set[str] = set()
    try:
        for out in dispatcher.run(firsts):
            if out is not None:
                req = out.job
                group = pending[req.key]
                seen.add(req.key)
                if out.result is not None and out.result.text is not None:
                    result.sent += 1
                    result.prompt_tokens += out.result.prompt_tokens
                    result.completion_tokens += out.result.completion_tokens
                    buffer.append((req, out.result))
                    for twin in group:
                        record(twin.slot, out.result.text, twin.key, cached=twin is not req)
                    result.cached += len(group) - 1
                    answered += 1
                    tick(len(group))
                else:
                    message = out.error or "the endpoint returned no text"
                    result.failed += [(twin.slot.key, message) for twin in group]
                    failed += 1
            if buffer and (out is None or time.monotonic() - last[0] >= FLUSH_EVERY_S):
                flush()
    finally:  # also when interrupted: what arrived is written (it was paid for)
        flush()
    if answered + failed < len(pending):   # stopped before every request was answered
        if dispatcher.fatal is not None and not cancel.is_set():
            for key, group in pending.items():
                if key not in seen:
                    result.failed += [(t.slot.key, f"not sent: {dispatcher.fatal.message}") for t in group]
        else:
            result.cancelled = True
