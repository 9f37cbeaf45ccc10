"""The request cache (``judge_cache``): every answered model request, keyed on the request, so the same
request again costs nothing unless forced.

One cache for every model request: a judge's (parameters: the config's temperature and max tokens) and an
answer being generated (``lib.generation``: per-request parameters ``n``, ``temperature``, ``seed`` and
``max_tokens`` when sent, passed as ``params``). The key (``request_hash``) is the sha256 of the canonical
JSON of (base URL without trailing slash, model, messages, parameters sent). Timeouts and retry settings are not part
of the key (they do not change the answer); the API key never is, and no credentials are stored.

``fetch(store, hashes)`` answers what it can; ``save(cur, config, answered)`` writes answered calls
inside the caller's write transaction (so what was paid for is kept with whatever the caller writes).
"""
from __future__ import annotations

import hashlib
import json
from typing import Iterable

from lib.judging.calls import CallResult
from lib.judging.config import JudgeConfig
from lib.store import Store, insert_rows


def canonical_request(config: JudgeConfig, messages: list[dict], params: dict | None = None) -> dict:
    """What identifies a request: ``params`` (the parameters sent) default to ``config.params()``."""
    return {"base_url": config.base_url, "model": config.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "params": config.params() if params is None else dict(params)}


def request_hash(config: JudgeConfig, messages: list[dict], params: dict | None = None) -> str:
    """sha256 of (base URL, model, messages, parameters): the cache key. Never includes the key."""
    text = json.dumps(canonical_request(config, messages, params), ensure_ascii=False, sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def fetch(store: Store, hashes: Iterable[str]) -> dict[str, CallResult]:
    """The cached answers of these request hashes (``cached`` set), by hash; the others are absent."""
    hashes = list(dict.fromkeys(hashes))
    if not hashes:
        return {}
    with store.read() as cur:
        rows = cur.execute(
            """SELECT request_hash, response_text, prompt_tokens, completion_tokens, latency_s FROM judge_cache
               WHERE request_hash IN (SELECT unnest(?))""", [hashes]).fetchall()
    return {h: CallResult(text, h, True, pt or 0, ct or 0, lat or 0.0) for h, text, pt, ct, lat in rows}


def save(cur, config: JudgeConfig, answered: list[tuple]) -> None:
    """Write answered calls ``(messages, result)`` or ``(messages, result, params)`` (messages as a list or
    already as JSON text; ``params`` when they are not ``config.params()``) to ``judge_cache`` inside the
    caller's write transaction; an answer replaces a cached one for the same request (``force``)."""
    insert_rows(cur, "judge_cache", _rows(config, answered), replace_key="request_hash")


def _rows(config: JudgeConfig, items: list[tuple]) -> list[dict]:
    """judge_cache rows. No credentials."""
    default_head = json.dumps({"model": config.model, **config.params()}, ensure_ascii=False)[:-1]
    out = []
    for msgs, r, *rest in items:
        params = rest[0] if rest else None
        head = default_head if params is None else json.dumps({"model": config.model, **params},
                                                               ensure_ascii=False)[:-1]
        text = msgs if isinstance(msgs, str) else json.dumps(msgs, ensure_ascii=False)
        out.append({"request_hash": r.request_hash, "base_url": config.base_url, "model": config.model,
                    "request": f'{head}, "messages": {text}}}', "response_text": r.text,
                    "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens,
                    "latency_s": r.latency_s})
    return out
