"""Sending a generation plan: answers per sample, copies filled in, turn 2 conditioned per the setup's rule.

``run_plan(plan, send, ...)`` sends every slot that makes a request through ``send(request) -> text``, an
injected callable (the shared dispatcher and request cache plug in here; ``openai_send(...)`` is a thin
default on the ``openai`` client). Turn-1 requests go first; a turn-2 request is built once the turn-1 answer
it is conditioned on exists (``Slot.condition_on``), so its history is exactly that text. Copies (Swallow at
temperature 0) take the text of the sample they copy and send nothing.

- ``answered``: request key -> text already answered (a cache, or a stored regenerated run being resumed):
  such a request is not sent again (``GenerationResult.cached``);
- ``on_answer(request, text)``: called as each sent request is answered (store it: that is what resume reads);
- ``progress(done, total)``: ``total`` = requests of the plan (copies excluded), cached ones count as done;
- ``cancel``: a ``threading.Event``; once set nothing more is sent, requests in flight finish and are kept,
  and the result says ``cancelled``. ``concurrency`` requests are in flight at most.

A request that fails (``send`` raises) is recorded in ``failed`` with its message; the samples that depend
on it (its copies, a turn 2 conditioned on it) are left out and listed too.
"""
from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable, Mapping

from lib.generation.plan import GenerationPlan, Slot, request_body, request_key


@dataclass(frozen=True)
class GenRequest:
    """One request to send: ``body`` is the JSON POSTed to ``{base_url}/chat/completions``."""

    key: str
    base_url: str
    body: dict = field(hash=False)
    slot: Slot = field(hash=False)


Send = Callable[[GenRequest], str]


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

    @property
    def complete(self) -> bool:
        return not self.cancelled and not self.failed and len(self.answers) == len(self.plan.slots)

    def texts(self, bench: str, question_id: str, turn: int) -> list[str | None]:
        """The answers of one question and turn, by sample (None where missing)."""
        return [(a.text if (a := self.answers.get((bench, question_id, turn, s))) else None)
                for s in range(self.plan.setup.samples)]


def run_plan(plan: GenerationPlan, send: Send, *, answered: Mapping[str, str] | None = None,
             on_answer: Callable[[GenRequest, str], None] | None = None,
             progress: Callable[[int, int], None] | None = None, cancel: threading.Event | None = None,
             concurrency: int = 4) -> GenerationResult:
    answered = dict(answered or {})
    cancel = cancel or threading.Event()
    result = GenerationResult(plan)
    total = plan.requests
    done = [0]
    cut = plan.setup.max_chars
    lock = threading.Lock()

    def record(slot: Slot, text: str, key: str | None, *, copied=False, cached=False) -> None:
        if cut is not None and len(text) > cut:
            text = text[:cut]          # Swallow keeps the first max_gen_text_length characters
        result.answers[slot.key] = Answer(slot, text, key, copied, cached)

    def tick() -> None:
        done[0] += 1
        if progress:
            progress(done[0], total)

    for turn in sorted({s.turn for s in plan.slots}):
        slots = [s for s in plan.slots if s.turn == turn]
        pending: list[tuple[Slot, GenRequest]] = []
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
            body = request_body(plan, slot, t1)
            req = GenRequest(request_key(plan.base_url, body), plan.base_url, body, slot)
            if req.key in answered:
                record(slot, answered[req.key], req.key, cached=True)
                result.cached += 1
                tick()
            else:
                pending.append((slot, req))
        _send_all(pending, send, concurrency, cancel, lock, result, record, tick, on_answer)
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


def _send_all(pending, send, concurrency, cancel, lock, result, record, tick, on_answer) -> None:
    if not pending:
        return
    queue = list(reversed(pending))
    with ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="generate") as pool:
        futures = {}
        while queue or futures:
            while queue and len(futures) < max(1, concurrency) and not cancel.is_set():
                slot, req = queue.pop()
                futures[pool.submit(send, req)] = (slot, req)
            if cancel.is_set() and queue:
                result.cancelled = True
                queue.clear()
            if not futures:
                break
            finished, _ = wait(list(futures), return_when=FIRST_COMPLETED)
            for fut in finished:
                slot, req = futures.pop(fut)
                try:
                    text = fut.result()
                except Exception as exc:  # noqa: BLE001 - a failed request is reported, the rest go on
                    result.failed.append((slot.key, str(exc) or type(exc).__name__))
                    continue
                text = "" if text is None else str(text)
                with lock:
                    if on_answer:
                        on_answer(req, text)
                    record(slot, text, req.key)
                    result.sent += 1
                    tick()


def openai_send(*, base_url: str, api_key: str | None, timeout_s: float = 600.0, max_retries: int = 2) -> Send:
    """A ``send`` on the ``openai`` client (the only place this package talks HTTP). The key goes to the
    client constructor and nowhere else; a local server that needs no key gets a placeholder."""
    import openai

    client = openai.OpenAI(api_key=api_key or "no-key", base_url=base_url, timeout=timeout_s,
                           max_retries=max_retries)

    def send(req: GenRequest) -> str:
        resp = client.chat.completions.create(**req.body)
        return resp.choices[0].message.content or ""

    return send
