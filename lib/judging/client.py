"""One call to a judge through any OpenAI-compatible API: the client, the key, retries, a total deadline
and the request cache.

Requests: ``OpenAI(base_url=…, timeout=JudgeConfig.timeout_s, max_retries=0)``; retries are ours
(``send``): up to ``max_retries`` more attempts on 408/409/429/5xx, timeouts and connection errors,
waiting ``backoff_base_s * 2**n`` (capped at ``backoff_cap_s``, +0-25% jitter), or what ``Retry-After`` /
``retry-after-ms`` asks if the server says so. A server that asks for more than ``retry_after_cap_s`` is not
waited for: the call fails at once with a message saying so. Any other status (400, 401, 403, 404, 422…)
and malformed bodies fail at once with a clear error.

``call_judge`` is one call answered from the cache when possible (``lib.judging.cache``). Requests have a
total deadline of ``timeout_s`` each (``lib.judging.deadline``), however slowly the server sends. The
endpoint and the key come from ``lib.judging.config``; many calls at once go through
``lib.judging.dispatch``; re-judge batches live in ``lib.judging.batch``.
"""
from __future__ import annotations

import email.utils
import logging
import random
import threading
import time
from typing import Callable

from lib.errors import JudgeAPIError, MissingAPIKeyError
from lib.judging import cache
from lib.judging.calls import CallResult
from lib.judging.config import JudgeConfig, redact
from lib.judging.deadline import deadline_http_client, total_deadline
from lib.store import Store

log = logging.getLogger("judgelens.judge_client")

RETRYABLE_STATUS = {408, 409, 429}
FATAL_STATUS = {401, 403, 404}


class Cancelled(Exception):
    """Raised by ``send`` when its ``cancel`` event is set while it waits to retry."""


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


def request_preview(config: JudgeConfig, messages: list[dict], params: dict | None = None) -> dict:
    """The JSON body that will be POSTed to {base_url}/chat/completions (no credentials in it); ``params``
    replace ``config.params()`` (a generated answer's temperature, seed, ...)."""
    return {"model": config.model, "messages": messages, **(config.params() if params is None else params)}


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


def send(client, config: JudgeConfig, messages: list[dict], api_key: str | None,
         cancel: threading.Event | None = None, req_hash: str | None = None, params: dict | None = None,
         sleep: Callable[[float], object] = time.sleep) -> CallResult:
    """One request with our retries (see the module docstring), no cache: the answer, or JudgeAPIError with
    the message the user reads; ``Cancelled`` when ``cancel`` is set while waiting to retry. Without
    ``cancel``, the waits between attempts are ``sleep(seconds)`` (tests pass a recorder)."""
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
                                   body=request_preview(config, messages, params))
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
            return _completion(data, config, req_hash or cache.request_hash(config, messages, params), latency,
                               attempts)
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
            sleep(wait)


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
               client=None, force: bool = False, cancel: threading.Event | None = None,
               sleep: Callable[[float], object] = time.sleep) -> CallResult:
    """One judge call, answered from the cache when possible (``force`` skips the cache and
    overwrites it). Raises JudgeAPIError / MissingAPIKeyError with a message for the user. ``sleep``: see
    ``send``."""
    h = cache.request_hash(config, messages)
    if not force:
        hit = cache.fetch(store, [h]).get(h)
        if hit is not None:
            return hit
    if client is None:
        client = make_client(config, api_key)
    result = send(client, config, messages, api_key, cancel, h, sleep=sleep)
    store.transaction(lambda cur: cache.save(cur, config, [(messages, result)]))
    return result
