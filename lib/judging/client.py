"""Calling a judge through any OpenAI-compatible API, with a cache in the store, and batches.

Key handling: ``resolve_api_key(session_value, secrets_mapping)`` takes the key from the session's
password field, then Streamlit secrets (passed in as a mapping: lib/ never imports streamlit), then
the ``OPENAI_API_KEY`` environment variable. The key is handed to the ``OpenAI`` constructor only:
it is never written to the store, to logs, to exports or to ``os.environ``, and any error text
that echoes it is redacted.

Requests: ``OpenAI(base_url=…, timeout=JudgeConfig.timeout_s, max_retries=0)``; retries are ours
(``_create_with_retries``): up to ``max_retries`` more attempts on 408/409/429/5xx, timeouts and
connection errors, waiting ``backoff_base_s * 2**n`` (capped at ``backoff_cap_s``, +0-25% jitter),
or what ``Retry-After`` / ``retry-after-ms`` asks if the server says so. A server that asks for more
than ``retry_after_cap_s`` is not waited for: the call fails at once with a message saying so. Any
other status (400, 401, 403, 404, 422…) and malformed bodies fail at once with a clear error.

Cache: ``judge_cache`` keyed by ``request_hash`` = sha256 of the canonical JSON of (base URL without
trailing slash, model, messages, parameters sent: temperature and max tokens). Timeouts and retry
settings are not part of the key (they do not change the answer); the key never is. The same
request again costs nothing unless forced.

Requests have a total deadline of ``timeout_s`` each (``lib.judging.deadline``), however slowly the
server sends. Many calls at once go through ``lib.judging.dispatch``; re-judge batches
(``RejudgeBatch``, ``run_batch``, ``BatchSummary``) live in ``lib.judging.batch`` and are also
importable from here.
"""
from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import os
import random
import threading
import time
from dataclasses import dataclass
from typing import Mapping

from lib.errors import EndpointError, JudgeAPIError, MissingAPIKeyError
from lib.judging.context import build_contexts
from lib.judging.deadline import deadline_http_client, total_deadline
from lib.judging.parsers import parse
from lib.judging.templates import Template, TemplateError, render_many
from lib.store import REJUDGE_HARNESS, Store

log = logging.getLogger("judgelens.judge_client")

ENV_KEY = "OPENAI_API_KEY"
HARNESS = REJUDGE_HARNESS
RETRYABLE_STATUS = {408, 409, 429}
FATAL_STATUS = {401, 403, 404}


class Cancelled(Exception):
    pass


# ------------------------------------------------------------------------------------------------
# Configuration and keys

@dataclass(frozen=True)
class JudgeConfig:
    base_url: str
    model: str
    temperature: float = 0.0
    max_tokens: int = 2048
    timeout_s: float = 60.0
    max_retries: int = 4
    price_per_1k_input: float | None = None
    price_per_1k_output: float | None = None
    backoff_base_s: float = 1.0
    backoff_cap_s: float = 30.0
    retry_after_cap_s: float = 60.0
    max_tokens_param: str = "max_tokens"   # newer OpenAI models want "max_completion_tokens"

    def __post_init__(self):
        url = (self.base_url or "").strip().rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise EndpointError(f"The base URL must start with http:// or https:// (got {self.base_url!r}), "
                             "e.g. https://api.openai.com/v1 or http://127.0.0.1:8000/v1.")
        object.__setattr__(self, "base_url", url)
        if not (self.model or "").strip():
            raise EndpointError("Name the judge model, e.g. gpt-4o-mini.")
        if not 0 < float(self.timeout_s) <= 600:
            raise EndpointError("timeout_s must be between 0 and 600 seconds.")
        if not 0 <= int(self.max_retries) <= 20:
            raise EndpointError("max_retries must be between 0 and 20.")
        if int(self.max_tokens) < 1:
            raise EndpointError("max_tokens must be at least 1.")
        if self.max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise EndpointError("max_tokens_param is max_tokens or max_completion_tokens.")

    def params(self) -> dict:
        """The generation parameters sent with every request (part of the cache key)."""
        return {"temperature": float(self.temperature), self.max_tokens_param: int(self.max_tokens)}

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float | None:
        if self.price_per_1k_input is None and self.price_per_1k_output is None:
            return None
        return (prompt_tokens / 1000 * (self.price_per_1k_input or 0.0)
                + completion_tokens / 1000 * (self.price_per_1k_output or 0.0))


def resolve_api_key(session_value: str | None, secrets_mapping: Mapping | None = None) -> str | None:
    """The key to use: the session's password field, else secrets[OPENAI_API_KEY], else the
    environment variable. Blank values are skipped. Reads only; never sets anything."""
    for candidate in (session_value,
                      _get(secrets_mapping, ENV_KEY),
                      os.environ.get(ENV_KEY)):
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()
    return None


def _get(mapping, key):
    if mapping is None:
        return None
    try:
        return mapping.get(key) if hasattr(mapping, "get") else mapping[key]
    except Exception:  # Streamlit's secrets raise if no secrets file exists
        return None


def redact(text: str, api_key: str | None) -> str:
    if api_key and text:
        text = text.replace(api_key, "***")
    return text


def make_client(config: JudgeConfig, api_key: str | None):
    """An ``openai.OpenAI`` client for this config. The key goes to the constructor and nowhere else."""
    if not api_key:
        raise MissingAPIKeyError(
            "No API key: type one in the password field, add OPENAI_API_KEY under [judgelens] in .streamlit/secrets.toml or set "
            "the OPENAI_API_KEY environment variable. (A local server that needs no key accepts any text.)")
    import openai

    timeout = openai.Timeout(config.timeout_s, connect=min(10.0, config.timeout_s))
    return openai.OpenAI(api_key=api_key, base_url=config.base_url, timeout=timeout, max_retries=0,
                         http_client=deadline_http_client(timeout))


# ------------------------------------------------------------------------------------------------
# One call

def canonical_request(config: JudgeConfig, messages: list[dict]) -> dict:
    return {"base_url": config.base_url, "model": config.model,
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "params": config.params()}


def request_hash(config: JudgeConfig, messages: list[dict]) -> str:
    """sha256 of (base URL, model, messages, parameters): the cache key. Never includes the key."""
    text = json.dumps(canonical_request(config, messages), ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def request_preview(config: JudgeConfig, messages: list[dict]) -> dict:
    """The JSON body that will be POSTed to {base_url}/chat/completions (no credentials in it)."""
    return {"model": config.model, "messages": messages, **config.params()}


@dataclass
class CallResult:
    text: str | None
    request_hash: str
    cached: bool
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 0
    finish_reason: str | None = None


def _cache_get(store: Store, hashes: list[str]) -> dict[str, CallResult]:
    if not hashes:
        return {}
    with store.read() as cur:
        rows = cur.execute(
            """SELECT request_hash, response_text, prompt_tokens, completion_tokens, latency_s FROM judge_cache
               WHERE request_hash IN (SELECT unnest(?))""", [list(hashes)]).fetchall()
    return {h: CallResult(text, h, True, pt or 0, ct or 0, lat or 0.0) for h, text, pt, ct, lat in rows}


def _cache_rows(config: JudgeConfig, items: list[tuple["list[dict] | str", CallResult]]) -> list[dict]:
    """judge_cache rows; messages as a list or already as JSON text. No credentials."""
    head = json.dumps({"model": config.model, **config.params()}, ensure_ascii=False)[:-1]
    out = []
    for msgs, r in items:
        text = msgs if isinstance(msgs, str) else json.dumps(msgs, ensure_ascii=False)
        out.append({"request_hash": r.request_hash, "base_url": config.base_url, "model": config.model,
                    "request": f'{head}, "messages": {text}}}', "response_text": r.text,
                    "prompt_tokens": r.prompt_tokens, "completion_tokens": r.completion_tokens,
                    "latency_s": r.latency_s})
    return out


def _insert(cur, table: str, rows: list[dict], replace_existing: bool = False) -> None:
    """Bulk insert through an Arrow table (row-by-row executemany is ~100x slower in DuckDB)."""
    if not rows:
        return
    import pyarrow as pa

    data = pa.Table.from_pylist(rows)
    name = f"_jl_{table}_{threading.get_ident()}"
    cur.register(name, data)
    try:
        if replace_existing and not _has_primary_key(cur, table):  # DuckLake: no INSERT OR REPLACE
            cur.execute(f"DELETE FROM {table} WHERE request_hash IN (SELECT request_hash FROM {name})")
            replace_existing = False
        verb = "INSERT OR REPLACE" if replace_existing else "INSERT"
        cur.execute(f"{verb} INTO {table} BY NAME SELECT * FROM {name}")
    finally:
        cur.unregister(name)


def _has_primary_key(cur, table: str) -> bool:
    return bool(cur.execute("SELECT count(*) FROM duckdb_constraints() WHERE table_name = ? AND "
                            "database_name = current_database() AND constraint_type = 'PRIMARY KEY'",
                            [table]).fetchone()[0])


def _retry_wait(headers, attempt: int, config: JudgeConfig) -> tuple[float, bool]:
    """(seconds to wait, whether the server asked for it)."""
    value = None
    if headers is not None:
        ms = headers.get("retry-after-ms")
        if ms:
            try:
                value = float(ms) / 1000.0
            except ValueError:
                value = None
        if value is None and headers.get("retry-after"):
            ra = headers.get("retry-after")
            try:
                value = float(ra)
            except ValueError:
                try:
                    when = email.utils.parsedate_to_datetime(ra)
                    value = max(0.0, when.timestamp() - time.time())
                except (TypeError, ValueError):
                    value = None
    if value is not None and value >= 0:
        return value, True
    backoff = min(config.backoff_cap_s, config.backoff_base_s * (2 ** attempt))
    return backoff * (1 + random.random() * 0.25), False


def _describe_status(exc, config: JudgeConfig, api_key: str | None) -> str:
    status = getattr(exc, "status_code", None)
    detail = ""
    try:
        body = exc.body if isinstance(exc.body, dict) else None
        if body:
            err = body.get("error", body)
            detail = err.get("message") if isinstance(err, dict) else str(err)
    except Exception:
        detail = ""
    detail = redact(str(detail or getattr(exc, "message", "") or ""), api_key)[:500]
    what = {401: "the API key was refused (401 Unauthorized). Check the key for this server",
            403: "access denied (403 Forbidden): the key may not have access to this model",
            404: f"not found (404): check the base URL ({config.base_url}) and the model name ({config.model})",
            400: "the server refused the request (400 Bad Request)",
            422: "the server refused the request (422 Unprocessable Entity)",
            429: "rate limited (429 Too Many Requests)"}.get(status, f"HTTP {status}")
    return f"Judge call to {config.base_url} failed: {what}." + (f" Server says: {detail}" if detail else "")


def _create_with_retries(client, config: JudgeConfig, messages: list[dict], api_key: str | None,
                         cancel: threading.Event | None = None, req_hash: str | None = None) -> CallResult:
    import openai

    attempts = 0
    while True:
        attempts += 1
        started = time.perf_counter()
        retryable, msg, headers, status = False, "", None, None
        try:
            # client.post with cast_to=Response: the documented way to send a raw request through the
            # client (same auth, base URL, timeout, error classes) without the SDK's per-request model
            # transforms, which cost about 1 ms of CPU per call; the body is checked in _completion.
            with total_deadline(config.timeout_s):  # the whole request, however slowly the server drips
                resp = client.post("/chat/completions", cast_to=_response_class(),
                                   body={"model": config.model, "messages": messages, **config.params()})
                data = resp.json()
        except openai.APIStatusError as exc:
            status = exc.status_code
            headers = exc.response.headers if exc.response is not None else None
            msg = _describe_status(exc, config, api_key)
            retryable = status in RETRYABLE_STATUS or status >= 500
            if not retryable:
                raise JudgeAPIError(msg, status=status, fatal=status in FATAL_STATUS, attempts=attempts) from None
        except openai.APITimeoutError:
            msg = (f"Judge call to {config.base_url} got no answer within {config.timeout_s:g} s (timeout). "
                   "The limit is for the whole request, up to the last byte of the answer.")
            retryable = True
        except openai.APIConnectionError as exc:
            msg = redact(f"Could not connect to {config.base_url}: {exc.__cause__ or exc}", api_key)
            retryable = True
        except (ValueError, TypeError) as exc:  # json.JSONDecodeError and friends: not JSON at all
            raise JudgeAPIError(f"Judge call to {config.base_url} returned a malformed body (not JSON: "
                                f"{redact(str(exc), api_key)[:200]}). Is the base URL an OpenAI-compatible "
                                "/v1 endpoint?", attempts=attempts) from None
        except openai.APIError as exc:
            raise JudgeAPIError(redact(f"Judge call to {config.base_url} failed: {exc}", api_key)[:800],
                                attempts=attempts) from None
        else:
            latency = time.perf_counter() - started
            return _completion(data, config, req_hash or request_hash(config, messages), latency, attempts)
        # a retryable failure
        if attempts > config.max_retries:
            raise JudgeAPIError(f"{msg} Gave up after {attempts} attempt(s).", status=status, attempts=attempts)
        wait, asked = _retry_wait(headers, attempts - 1, config)
        if asked and wait > config.retry_after_cap_s:
            raise JudgeAPIError(f"{msg} The server asks to wait {wait:g} s before retrying, more than the "
                                f"{config.retry_after_cap_s:g} s this run waits; try again later.",
                                status=status, attempts=attempts)
        log.warning("judge call %s (attempt %d of %d); retrying in %.2f s", msg, attempts,
                    config.max_retries + 1, wait)
        if cancel is not None:
            if cancel.wait(wait):
                raise Cancelled()
        else:
            time.sleep(wait)


def _response_class():
    import httpx2

    return httpx2.Response


def _completion(data, config: JudgeConfig, req_hash: str, latency: float, attempts: int) -> CallResult:
    try:
        choice = data["choices"][0]
        text = choice["message"]["content"]
        finish = choice.get("finish_reason")
    except Exception:
        raise JudgeAPIError(f"Judge call to {config.base_url} returned JSON that is not a chat completion "
                            "(no choices[0].message). Is the base URL an OpenAI-compatible /v1 endpoint?",
                            attempts=attempts) from None
    if text is not None and not isinstance(text, str):
        raise JudgeAPIError(f"Judge call to {config.base_url} returned a non-text message content.", attempts=attempts)
    usage = data.get("usage") if isinstance(data, dict) else None
    usage = usage if isinstance(usage, dict) else {}
    try:
        pt, ct = int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0)
    except (TypeError, ValueError):
        pt = ct = 0
    return CallResult(text, req_hash, False, pt, ct, latency, attempts, finish)


def call_judge(store: Store, config: JudgeConfig, messages: list[dict], *, api_key: str | None = None,
               client=None, force: bool = False, cancel: threading.Event | None = None) -> CallResult:
    """One judge call, answered from the cache when possible (``force`` skips the cache and
    overwrites it). Raises JudgeAPIError / MissingAPIKeyError with a message for the user."""
    h = request_hash(config, messages)
    if not force:
        hit = _cache_get(store, [h]).get(h)
        if hit is not None:
            return hit
    if client is None:
        client = make_client(config, api_key)
    result = _create_with_retries(client, config, messages, api_key, cancel, h)
    store.transaction(lambda cur: _insert(cur, "judge_cache", _cache_rows(config, [(messages, result)]),
                                          replace_existing=True))
    return result


def rejudge_one(store: Store, template: Template, config: JudgeConfig, item, *, api_key: str | None = None,
                force: bool = False, reference_judge: str | None = None, judge_hint: str | None = None) -> dict:
    """Re-judge one item without storing a verdict: the messages sent, the raw output, the parse
    result and the call's cost. (The cache still records the call.)"""
    ctx = build_contexts(store, [item], preprocess=template.preprocess, reference_judge=reference_judge,
                         judge_hint=judge_hint)[0]
    if ctx.context is None:
        raise TemplateError(ctx.error or "no context", kind="undefined")
    rendered = render_many(template, [ctx.context], [ctx.missing or {}])[0]
    if not rendered.ok:
        raise TemplateError(rendered.error, kind=rendered.kind or "error")
    result = call_judge(store, config, rendered.messages, api_key=api_key, force=force)
    parsed = parse(result.text, template.parser)
    return {"messages": rendered.messages, "text": result.text, "parsed": parsed, "cached": result.cached,
            "request_hash": result.request_hash, "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "cost": None if result.cached else config.cost(result.prompt_tokens, result.completion_tokens)}




# The batch API (lib.judging.batch) is also reachable from here, as it always was.
_BATCH_NAMES = {"RejudgeBatch", "run_batch", "BatchSummary", "BatchEstimate", "LabelInUseError", "default_label",
                "run_hash", "estimate_tokens"}


def __getattr__(name: str):
    if name in _BATCH_NAMES:
        from lib.judging import batch

        return getattr(batch, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
