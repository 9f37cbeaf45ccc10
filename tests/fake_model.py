"""A scripted OpenAI-compatible MODEL server (the model under test) for generation tests.

``FakeModel`` is ``fake_openai.FakeOpenAI`` (127.0.0.1, a free port, every request recorded
in ``server.requests``) with a responder that answers like a tiny deterministic model. Its planted effects,
all computed by ``answer_for(body)`` so tests can state the expected text exactly:

1. **Language**: it answers in Japanese only when a system message asks for Japanese (contains ``日本``, as
   Swallow's ``あなたは誠実で優秀な日本人のアシスタントです。`` does); otherwise in English (no system
   prompt, or FastChat's "You are a helpful assistant.").
2. **Sampling**: at temperature > 0 the text carries a variant tag derived from the ``seed`` (the same seed
   gives the same text again; no seed: a new variant per request, like a server that ignores seeds); at
   temperature 0 the text is the same whatever the seed.
3. **Turn-2 conditioning**: a turn-2 answer names the hash of the assistant (turn-1) text it was given,
   so which turn-1 sample it followed is visible in the answer.
4. **Length**: the answer is padded to ``length`` characters (one character = one token here), ends with
   ``END_MARK``, and is cut to ``max_tokens`` when the request sends one, else to the server's
   ``default_max_tokens`` (a backend default, like vLLM's; None: not cut). A cut answer has lost ``END_MARK``.
5. **Flourish** (what a judge can reward, seed-dependent): at temperature > 0 an odd seed adds ``FLOURISH``.
6. **Following another sample**: a turn-2 answer whose turn-1 history carries the variant tag of another seed
   (Swallow conditions every sample's turn 2 on sample 0's turn 1) says so with ``OTHER_SAMPLE``.

Usage::

    with FakeModel() as server:
        client = OpenAI(api_key="x", base_url=server.url)
"""
from __future__ import annotations

import hashlib
import itertools

from fake_openai import FakeOpenAI, Reply

DEFAULT_LENGTH = 300
END_MARK = "[END]"
FLOURISH = "✨"
OTHER_SAMPLE = "(continuing another sample)"


def h(*parts) -> str:
    return hashlib.sha256("\0".join(str(p) for p in parts).encode("utf-8")).hexdigest()[:8]


def wants_japanese(messages: list[dict]) -> bool:
    return any(m.get("role") == "system" and "日本" in (m.get("content") or "") for m in messages)


def answer_for(body: dict, *, length: int = DEFAULT_LENGTH, unseeded: int = 0,
               default_max_tokens: int | None = None) -> str:
    """The text ``FakeModel`` answers ``body`` with (``unseeded``: the request counter used when no seed)."""
    msgs = body.get("messages") or []
    users = [m["content"] for m in msgs if m.get("role") == "user"]
    assistants = [m["content"] for m in msgs if m.get("role") == "assistant"]
    ja = wants_japanese(msgs)
    q = h("q", users[0] if users else "")
    text = f"回答{q}：日本語で答えます。" if ja else f"Answer {q}: here is my answer in English."
    seed = body.get("seed")
    temperature = float(body.get("temperature") or 0.0)
    if len(users) >= 2:
        before = assistants[-1] if assistants else ""
        text += (f"二問目、前の答え{h('t1', before)}を受けて。" if ja
                 else f" Second turn after {h('t1', before)}.")
        own = h("seed", seed)
        if ("変化" in before or "variant" in before) and own not in before:
            text += OTHER_SAMPLE
    if temperature > 0:
        tag = h("seed", seed) if seed is not None else h("noseed", unseeded)
        text += f"〔変化{tag}〕" if ja else f" [variant {tag}]"
        if seed is not None and int(seed) % 2 == 1:
            text += FLOURISH
    filler = "あ" if ja else "a"
    text = text + filler * max(0, length - len(text) - len(END_MARK)) + END_MARK
    cap = body.get("max_tokens", default_max_tokens)
    if cap is not None:
        text = text[: int(cap)]
    return text


class FakeModel(FakeOpenAI):
    def __init__(self, length: int = DEFAULT_LENGTH, latency: float = 0.0, default_max_tokens: int | None = None):
        super().__init__(latency=latency)
        self.length = length
        self.default_max_tokens = default_max_tokens
        self._unseeded = itertools.count()
        self.responder = self._answer

    def _answer(self, body: dict) -> Reply:
        text = answer_for(body, length=self.length, unseeded=next(self._unseeded),
                          default_max_tokens=self.default_max_tokens)
        prompt = sum(len(m.get("content") or "") for m in body.get("messages") or [])
        return Reply(text, prompt_tokens=prompt, completion_tokens=len(text))

    def answer_requests(self) -> list[dict]:
        """Bodies of the chat requests received, in arrival order."""
        return [r.body for r in self.chat_requests()]
