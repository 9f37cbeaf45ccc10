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

Batches: ``RejudgeBatch.prepare(...)`` renders every item first (so template problems and the cost
estimate are known before any call), ``.run(...)`` sends the uncached requests with ``concurrency``
threads, reports progress, stops on ``cancel`` (a ``threading.Event``) and writes verdicts as they
arrive. Re-running the same batch (same label, template version, model, URL and parameters)
resumes it: finished items are skipped and the cache answers requests that were already paid for.
The verdicts are a new judge: ``single_judgments`` rows (harness 'judgelens', judge = the label,
prompt_name = name@vN) or ``pair_judgments`` rows for pairwise templates, under a ``sources`` row of
kind 'rejudge' (path ``rejudge:<label>``), plus one ``rejudgments`` row per request recording the
template version and the request hash.
"""
from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import os
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Mapping

from lib.errors import JudgeLensError
from lib.analysis.item_view import ItemKey
from lib.judging.context import PairKey, build_contexts
from lib.judging.parsers import parse, to_ten_scale
from lib.store import Store, refresh_item_scores
from lib.judging.templates import Template, TemplateError, _canon, get_template, render_many, save_template

log = logging.getLogger("judgelens.judge_client")

ENV_KEY = "OPENAI_API_KEY"
HARNESS = "judgelens"
RETRYABLE_STATUS = {408, 409, 429}
FATAL_STATUS = {401, 403, 404}
WRITE_EVERY_S = 0.5          # batch: flush finished verdicts at least this often
WRITE_EVERY_ROWS = 100
CANCEL_GRACE_S = 5.0         # batch: after cancel, wait this long for requests already in flight


class JudgeAPIError(JudgeLensError):
    """A judge call failed. ``status`` is the HTTP status if there was one; ``fatal`` errors (bad key,
    no access, unknown model or URL) stop a batch, others are recorded per item."""

    title = "Judge API error"

    def __init__(self, message: str, status: int | None = None, fatal: bool = False, attempts: int = 1):
        super().__init__(message)
        self.status = status
        self.fatal = fatal
        self.attempts = attempts


class MissingAPIKeyError(JudgeLensError):
    title = "No API key"


class Cancelled(Exception):
    pass


class LabelInUseError(JudgeLensError):
    title = "Label already used"


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
            raise ValueError(f"The base URL must start with http:// or https:// (got {self.base_url!r}), "
                             "e.g. https://api.openai.com/v1 or http://127.0.0.1:8000/v1.")
        object.__setattr__(self, "base_url", url)
        if not (self.model or "").strip():
            raise ValueError("Name the judge model, e.g. gpt-4o-mini.")
        if not 0 < float(self.timeout_s) <= 600:
            raise ValueError("timeout_s must be between 0 and 600 seconds.")
        if not 0 <= int(self.max_retries) <= 20:
            raise ValueError("max_retries must be between 0 and 20.")
        if int(self.max_tokens) < 1:
            raise ValueError("max_tokens must be at least 1.")
        if self.max_tokens_param not in ("max_tokens", "max_completion_tokens"):
            raise ValueError("max_tokens_param is max_tokens or max_completion_tokens.")

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
    return openai.OpenAI(api_key=api_key, base_url=config.base_url, timeout=timeout, max_retries=0)


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
        verb = "INSERT OR REPLACE" if replace_existing else "INSERT"
        cur.execute(f"{verb} INTO {table} BY NAME SELECT * FROM {name}")
    finally:
        cur.unregister(name)


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
            msg = f"Judge call to {config.base_url} got no answer within {config.timeout_s:g} s (timeout)."
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
    with store.write() as cur:
        _insert(cur, "judge_cache", _cache_rows(config, [(messages, result)]), replace_existing=True)
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


# ------------------------------------------------------------------------------------------------
# Batches

@dataclass
class _Request:
    unit: int                 # index of the item
    game: int                 # 1, or 2 for the swapped pairwise game
    messages: list[dict]
    request_hash: str
    messages_json: str = ""   # computed while preparing, so writing verdicts stays cheap
    result: CallResult | None = None
    error: str | None = None


@dataclass
class _Unit:
    item: object
    requests: list[_Request] = field(default_factory=list)
    error: str | None = None  # context or render problem: never sent
    written: bool = False


@dataclass
class BatchSummary:
    label: str
    template: str                      # name@vN
    template_id: int
    source_id: int | None
    mode: str                          # single | pairwise
    items: int                         # items asked for
    skipped_done: int = 0              # already judged in this run before (resume)
    not_renderable: int = 0            # items whose prompt could not be built (see problems)
    requests: int = 0                  # requests this batch needed
    cache_hits: int = 0
    calls: int = 0                     # requests actually sent (answered or failed)
    written: int = 0                   # verdict rows written
    ok: int = 0
    not_parsed: int = 0
    regex_timeouts: int = 0            # of the not parsed: the template's parser regex ran out of time
    out_of_range: int = 0
    api_errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None
    estimated_cost: float | None = None
    elapsed_s: float = 0.0
    cancelled: bool = False
    error: str | None = None           # why the batch stopped early, if it did
    problems: list[str] = field(default_factory=list)

    @property
    def requests_per_s(self) -> float:
        return self.calls / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def text(self) -> str:
        lines = [f"{self.label}: {self.template} ({self.mode}), {self.items} item(s)"
                 + (f", {self.skipped_done} already done" if self.skipped_done else "")
                 + (f", {self.not_renderable} not renderable" if self.not_renderable else ""),
                 f"requests: {self.requests} needed, {self.cache_hits} from cache, {self.calls} sent "
                 f"in {self.elapsed_s:.1f} s ({self.requests_per_s:.1f}/s)",
                 f"verdicts written: {self.written} (ok {self.ok}, not parsed {self.not_parsed}, "
                 f"out of range {self.out_of_range}, API errors {self.api_errors})"
                 + (f"\n{self.regex_timeouts} of the not parsed: the template's parser regex took too long on the "
                    "judge's output and was stopped; simplify the pattern (no nested repeats such as (a+)+) and "
                    "run the batch again (the answers come from the cache)" if self.regex_timeouts else ""),
                 f"tokens: {self.prompt_tokens} in, {self.completion_tokens} out"
                 + (f"; cost ~${self.cost:.4f}" if self.cost is not None else "")
                 + (f" (estimated before: ~${self.estimated_cost:.4f})" if self.estimated_cost is not None else "")]
        if self.cancelled:
            lines.append("cancelled: run the same batch again to resume (finished calls come from the cache)")
        if self.error:
            lines.append(f"stopped: {self.error}")
        for p in self.problems[:10]:
            lines.append(f"  problem: {p}")
        if len(self.problems) > 10:
            lines.append(f"  … and {len(self.problems) - 10} more problem(s)")
        return "\n".join(lines)


@dataclass
class BatchEstimate:
    items: int
    requests: int
    cached: int
    to_send: int
    prompt_tokens: int          # estimated for the requests to send (characters / 4, CJK 1 per character)
    max_completion_tokens: int  # max_tokens x requests to send
    cost_upper: float | None    # with max_completion_tokens
    cost_expected: float | None  # with completion_tokens_typical per request
    completion_tokens_typical: int


def estimate_tokens(text: str) -> int:
    """A rough token count: ASCII ~4 characters per token, other characters ~1 each."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    return ascii_chars // 4 + (len(text) - ascii_chars) + 1


def default_label(config: JudgeConfig, template: Template) -> str:
    return f"{config.model}+{template.label}"


def run_hash(label: str, template: Template, config: JudgeConfig) -> str:
    ident = {"label": label, "template_id": template.template_id, "base_url": config.base_url,
             "model": config.model, "params": config.params()}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()


class RejudgeBatch:
    """A batch: ``prepare`` (render everything, look up the cache, estimate) then ``run``."""

    def __init__(self, store: Store, template: Template, config: JudgeConfig, items: list,
                 label: str | None = None, *, reference_judge: str | None = None, judge_hint: str | None = None,
                 force: bool = False):
        if template.template_id is None:
            template = save_template(store, template)
        elif _canon(get_template(store, template.template_id).content()) != _canon(template.content()):
            template = save_template(store, template.edited())  # changed since loaded: a new version
        self.store, self.template, self.config = store, template, config
        self.label = (label or default_label(config, template)).strip()
        if not self.label:
            raise ValueError("The label (the new judge's name) must not be empty.")
        self.mode = template.mode
        for it in items:
            if self.mode == "pairwise" and not isinstance(it, PairKey):
                raise ValueError(f"{template.label} is a pairwise template: give PairKey items (two models).")
            if self.mode == "single" and not isinstance(it, ItemKey):
                raise ValueError(f"{template.label} grades single answers: give ItemKey items.")
        self.items = list(items)
        self.reference_judge, self.judge_hint, self.force = reference_judge, judge_hint, force
        self.run_sha = run_hash(self.label, template, config)
        self.source_id: int | None = None
        self.units: list[_Unit] = []
        self.skipped_done = 0
        self._redo_keys: list = []
        self.prepared = False
        self._estimate: BatchEstimate | None = None

    # -- preparation
    def _check_label(self) -> None:
        with self.store.read() as cur:
            row = cur.execute("SELECT source_id FROM sources WHERE kind = 'rejudge' AND sha256 = ?",
                              [self.run_sha]).fetchone()
            self.source_id = row[0] if row else None
            others = cur.execute(
                """SELECT DISTINCT s.source_id, s.path, s.harness FROM sources s
                   JOIN (SELECT source_id FROM single_judgments WHERE judge = $l
                         UNION SELECT source_id FROM pair_judgments WHERE judge = $l) j USING (source_id)
                   WHERE s.sha256 <> $sha OR s.kind <> 'rejudge'""", {"l": self.label, "sha": self.run_sha}).fetchall()
            same_path = cur.execute("SELECT source_id FROM sources WHERE kind = 'rejudge' AND path = ? AND sha256 <> ?",
                                    [f"rejudge:{self.label}", self.run_sha]).fetchall()
        if others or same_path:
            sid = (others or same_path)[0][0]
            raise LabelInUseError(
                f"The judge name {self.label!r} is already used by source {sid} (another import or a re-judge run "
                "with a different template version, model, URL or parameters). Choose another label, or remove "
                f"that source first (python -m lib.cli remove {sid}).")

    def _done_keys(self) -> set:
        if self.source_id is None:
            return set()
        with self.store.read() as cur:
            if self.mode == "single":
                rows = cur.execute(
                    """SELECT bench, question_id, turn, model, sample, parse_status FROM single_judgments
                       WHERE source_id = ?""", [self.source_id]).fetchall()
                done = {ItemKey(b, q, int(t), m, int(s)) for b, q, t, m, s, st in rows if st != "api_error"}
                self._redo_keys = [ItemKey(b, q, int(t), m, int(s)) for b, q, t, m, s, st in rows if st == "api_error"]
            else:
                rows = cur.execute(
                    """SELECT bench, question_id, turn, model_1, model_2, g1_winner, g2_winner FROM pair_judgments
                       WHERE source_id = ?""", [self.source_id]).fetchall()
                done = {PairKey(b, q, int(t), m1, m2, 0) for b, q, t, m1, m2, g1, g2 in rows
                        if "error" not in (g1, g2)}
                self._redo_keys = [PairKey(b, q, int(t), m1, m2, 0) for b, q, t, m1, m2, g1, g2 in rows
                                   if "error" in (g1, g2)]
        return done

    def prepare(self) -> BatchEstimate:
        """Build every prompt and look up the cache. Raises TemplateError if the template itself fails."""
        self._check_label()
        done = self._done_keys()
        todo = [it for it in self.items if it not in done]
        self.skipped_done = len(self.items) - len(todo)
        expanded: list[tuple[int, int, object]] = []  # (unit, game, context item)
        self.units = [_Unit(it) for it in todo]
        for u, it in enumerate(todo):
            if self.mode == "pairwise":
                expanded.append((u, 1, it))
                expanded.append((u, 2, PairKey(it.bench, it.question_id, it.turn, it.model_b, it.model_a, it.sample)))
            else:
                expanded.append((u, 1, it))
        contexts = build_contexts(self.store, [e[2] for e in expanded], preprocess=self.template.preprocess,
                                  reference_judge=self.reference_judge, judge_hint=self.judge_hint)
        ok_idx = [k for k, c in enumerate(contexts) if c.context is not None]
        for k, c in enumerate(contexts):
            if c.context is None:
                self.units[expanded[k][0]].error = c.error
        rendered = render_many(self.template, [contexts[k].context for k in ok_idx],
                               [contexts[k].missing or {} for k in ok_idx]) if ok_idx else []
        for k, res in zip(ok_idx, rendered):
            u, game, _ = expanded[k]
            unit = self.units[u]
            if not res.ok:
                unit.error = unit.error or res.error
                continue
            unit.requests.append(_Request(u, game, res.messages, request_hash(self.config, res.messages),
                                          json.dumps(res.messages, ensure_ascii=False)))
        for unit in self.units:
            if unit.error:
                unit.requests = []
        hashes = [r.request_hash for unit in self.units for r in unit.requests]
        cache = {} if self.force else _cache_get(self.store, hashes)
        for unit in self.units:
            for r in unit.requests:
                if r.request_hash in cache:
                    r.result = cache[r.request_hash]
        self.prepared = True
        self._estimate = None
        if any(r.result is None for unit in self.units for r in unit.requests):
            import openai  # noqa: F401  (the SDK takes ~1 s to import: pay it here, not in the send phase)
        return self.estimate()

    def estimate(self) -> BatchEstimate:
        """Requests to send and their cost: prompt tokens estimated from the rendered text, completion
        tokens at most max_tokens each ("upper") or the judge model's average so far ("expected")."""
        if getattr(self, "_estimate", None) is not None:
            return self._estimate
        reqs = [r for unit in self.units for r in unit.requests]
        to_send = [r for r in reqs if r.result is None]
        pt = sum(estimate_tokens(m["content"]) for r in to_send for m in r.messages)
        with self.store.read() as cur:
            typical = cur.execute("SELECT avg(completion_tokens) FROM judge_cache WHERE model = ?",
                                  [self.config.model]).fetchone()[0]
        typical = int(typical) if typical else min(self.config.max_tokens, 400)
        mx = self.config.max_tokens * len(to_send)
        self._estimate = BatchEstimate(len(self.units), len(reqs), len(reqs) - len(to_send), len(to_send), pt, mx,
                                       self.config.cost(pt, mx), self.config.cost(pt, typical * len(to_send)), typical)
        return self._estimate

    # -- running
    def _ensure_source(self, cur) -> int:
        if self.source_id is not None:
            return self.source_id
        benches = {it.bench for it in self.items}
        self.source_id = cur.execute(
            """INSERT INTO sources (sha256, path, file_name, harness, kind, bench, bytes, rows_imported, warnings)
               VALUES (?, ?, ?, ?, 'rejudge', ?, 0, 0, []) RETURNING source_id""",
            [self.run_sha, f"rejudge:{self.label}", self.label, HARNESS,
             next(iter(benches)) if len(benches) == 1 else None]).fetchone()[0]
        return self.source_id

    def _rows(self, unit: _Unit) -> tuple[list[dict], list[dict], dict]:
        """single_judgments/pair_judgments rows, rejudgments rows, and counts for one finished unit."""
        now = time.time()
        counts = {"ok": 0, "not_parsed": 0, "out_of_range": 0, "api_error": 0, "regex_timeouts": 0}
        rej = []
        for r in unit.requests:
            it = unit.item
            model = it.model if self.mode == "single" else (
                f"{it.model_a} vs {it.model_b}" if r.game == 1 else f"{it.model_b} vs {it.model_a}")
            rej.append({"source_id": self.source_id, "bench": it.bench, "question_id": str(it.question_id),
                        "model": model, "turn": int(it.turn), "sample": int(it.sample),
                        "template_id": self.template.template_id, "request_hash": r.request_hash,
                        "judge_model": self.config.model, "base_url": self.config.base_url})
        it = unit.item
        if self.mode == "single":
            r = unit.requests[0]
            if r.error is not None:
                raw, score, status, text = None, None, "api_error", r.error
            else:
                p = parse(r.result.text, self.template.parser)
                status, text = p.status, r.result.text
                counts["regex_timeouts"] += p.method == "regex_timeout"
                raw = p.value
                score = to_ten_scale(p.score, p.scale) if p.ok and p.scale else None
            counts[status] += 1
            row = {"source_id": self.source_id, "harness": HARNESS, "bench": it.bench, "judge": self.label,
                   "prompt_name": self.template.label, "model": it.model, "question_id": str(it.question_id),
                   "turn": int(it.turn), "sample": int(it.sample), "raw_score": raw, "score": score,
                   "parse_status": status, "rationale": text,
                   "judge_prompt": r.messages_json, "tstamp": now}
            return [row], rej, counts
        winners, texts, prompts = [], [], []
        for r in sorted(unit.requests, key=lambda x: x.game):
            if r.error is not None:
                winners.append("error")
                texts.append(r.error)
                counts["api_error"] += 1
            else:
                p = parse(r.result.text, self.template.parser)
                counts[p.status] += 1
                counts["regex_timeouts"] += p.method == "regex_timeout"
                texts.append(r.result.text)
                if not p.ok or p.verdict is None:
                    winners.append("error")
                elif p.verdict == "tie":
                    winners.append("tie")
                else:  # game 1 shows model_1 as A; game 2 shows model_2 as A
                    a_wins = p.verdict == "A"
                    winners.append(("model_1" if a_wins else "model_2") if r.game == 1 else
                                   ("model_2" if a_wins else "model_1"))
            prompts.append(r.messages_json)
        row = {"source_id": self.source_id, "harness": HARNESS, "bench": it.bench, "judge": self.label,
               "prompt_name": self.template.label, "model_1": it.model_a, "model_2": it.model_b,
               "question_id": str(it.question_id), "turn": int(it.turn), "g1_winner": winners[0],
               "g2_winner": winners[1] if len(winners) > 1 else "error", "g1_judgment": texts[0],
               "g2_judgment": texts[1] if len(texts) > 1 else None, "g1_user_prompt": prompts[0],
               "g2_user_prompt": prompts[1] if len(prompts) > 1 else None, "m1_score": None, "m2_score": None,
               "tstamp": now}
        return [row], rej, counts

    def _flush(self, units: list[_Unit], new_results: list[_Request], summary: BatchSummary) -> None:
        if not units and not new_results:
            return
        table = "single_judgments" if self.mode == "single" else "pair_judgments"
        with self.store.write() as cur:
            sid = self._ensure_source(cur)
            _insert(cur, "judge_cache", _cache_rows(self.config, [(r.messages_json, r.result) for r in new_results]),
                    replace_existing=True)
            rows, rej = [], []
            for unit in units:
                r1, r2, counts = self._rows(unit)
                rows += r1
                rej += r2
                for k, v in counts.items():
                    setattr(summary, k if k != "api_error" else "api_errors",
                            getattr(summary, k if k != "api_error" else "api_errors") + v)
            if units:
                self._delete_previous(cur, sid, [u.item for u in units])
            _insert(cur, table, rows)
            _insert(cur, "rejudgments", rej)
            summary.written += len(rows)
            for unit in units:
                unit.written = True

    def _delete_previous(self, cur, sid: int, items: list) -> None:
        """On resume, replace this run's earlier api_error rows for these items."""
        redo = set(self._redo_keys) & set(items)
        for it in redo:
            if self.mode == "single":
                keys = [sid, it.bench, str(it.question_id), int(it.turn), it.model, int(it.sample)]
                cur.execute("""DELETE FROM single_judgments WHERE source_id = ? AND bench = ? AND question_id = ?
                               AND turn = ? AND model = ? AND sample = ?""", keys)
                cur.execute("""DELETE FROM rejudgments WHERE source_id = ? AND bench = ? AND question_id = ?
                               AND turn = ? AND model = ? AND sample = ?""", keys)
            else:
                cur.execute("""DELETE FROM pair_judgments WHERE source_id = ? AND bench = ? AND question_id = ?
                               AND turn = ? AND model_1 = ? AND model_2 = ?""",
                            [sid, it.bench, str(it.question_id), int(it.turn), it.model_a, it.model_b])
                cur.execute("""DELETE FROM rejudgments WHERE source_id = ? AND bench = ? AND question_id = ?
                               AND turn = ? AND model IN (?, ?)""",
                            [sid, it.bench, str(it.question_id), int(it.turn), f"{it.model_a} vs {it.model_b}",
                             f"{it.model_b} vs {it.model_a}"])
        self._redo_keys = [k for k in self._redo_keys if k not in redo]

    def _finish_source(self, summary: BatchSummary | None) -> None:
        if self.source_id is None:
            return
        if self.mode == "single":
            sql = "SELECT count(*), count(*) FILTER (parse_status <> 'ok') FROM single_judgments WHERE source_id = ?"
        else:
            sql = ("SELECT count(*), count(*) FILTER ('error' IN (g1_winner, g2_winner)) FROM pair_judgments "
                   "WHERE source_id = ?")
        with self.store.write() as cur:
            if self.mode == "single":  # the per-item table every page aggregates (lib.store)
                benches = [b for (b,) in cur.execute("SELECT DISTINCT bench FROM single_judgments WHERE source_id = ?",
                                                     [self.source_id]).fetchall()]
                refresh_item_scores(cur, benches)
            n, failed = cur.execute(sql, [self.source_id]).fetchone()
            notes = [f"re-judged with {self.template.label} (template_id {self.template.template_id}) by "
                     f"{self.config.model} at {self.config.base_url}, temperature {self.config.temperature:g}, "
                     f"max tokens {self.config.max_tokens}"]
            if failed:
                notes.append(f"{failed} verdict(s) have no usable score (not parsed, out of range or API error); "
                             "they are kept and left out of means")
            if summary is None or summary.cancelled or summary.error:
                notes.append("the last run stopped early; run it again to resume")
            cur.execute("UPDATE sources SET rows_imported = ?, warnings = ? WHERE source_id = ?",
                        [n, notes, self.source_id])

    def run(self, *, api_key: str | None = None, concurrency: int = 8,
            progress: Callable[[int, int, float | None], None] | None = None,
            cancel: threading.Event | None = None, client=None) -> BatchSummary:
        """Send the uncached requests and store the verdicts. ``progress(done, total, eta_s)`` is called
        from this thread as items finish; setting ``cancel`` stops it (requests in flight are waited
        for up to CANCEL_GRACE_S and kept)."""
        cancel = cancel if cancel is not None else threading.Event()
        try:
            return self._run(api_key, concurrency, progress, cancel, client)
        except BaseException:  # e.g. the progress callback raised (Streamlit stops a script this way)
            cancel.set()  # the worker threads stop taking requests
            self._finish_source(None)  # keep the source's counts and item_scores right for what was written
            raise

    def _run(self, api_key, concurrency, progress, cancel, client) -> BatchSummary:
        if not self.prepared:
            self.prepare()
        started = time.perf_counter()
        est = self.estimate()
        summary = BatchSummary(self.label, self.template.label, self.template.template_id, self.source_id, self.mode,
                               len(self.items), skipped_done=self.skipped_done, estimated_cost=est.cost_expected)
        for unit in self.units:
            if unit.error:
                summary.not_renderable += 1
                summary.problems.append(f"{_item_text(unit.item)}: {unit.error}")
        units = [u for u in self.units if not u.error]
        reqs = [r for u in units for r in u.requests]
        summary.requests = len(reqs)
        summary.cache_hits = sum(1 for r in reqs if r.result is not None)
        total = len(units)
        pending_units = {id(u): u for u in units}
        finished: list[_Unit] = []
        done = 0

        def unit_complete(u: _Unit) -> bool:
            return all(r.result is not None or r.error is not None for r in u.requests)

        for u in units:  # everything answered by the cache
            if unit_complete(u):
                finished.append(u)
                pending_units.pop(id(u), None)
        self._flush(finished, [], summary)
        done += len(finished)
        finished = []
        if progress:
            progress(done, total, None)
        to_send = [r for r in reqs if r.result is None]
        if to_send:
            if client is None:
                client = make_client(self.config, api_key)
            work: queue.Queue = queue.Queue()
            for r in to_send:
                work.put(r)
            results: queue.Queue = queue.Queue()
            fatal = threading.Event()
            n_threads = max(1, min(int(concurrency), len(to_send)))
            in_flight = [0]
            lock = threading.Lock()

            def worker():
                while not cancel.is_set() and not fatal.is_set():
                    try:
                        r = work.get_nowait()
                    except queue.Empty:
                        return
                    with lock:
                        in_flight[0] += 1
                    try:
                        r.result = _create_with_retries(client, self.config, r.messages, api_key, cancel,
                                                        r.request_hash)
                    except Cancelled:
                        r.error = None
                        results.put(("cancelled", r))
                        continue
                    except JudgeAPIError as exc:
                        r.error = exc.message
                        if exc.fatal:
                            fatal.set()
                        results.put(("error", r, exc))
                        continue
                    except Exception as exc:  # keep the batch alive; report it on the item
                        r.error = redact(f"{type(exc).__name__}: {exc}", api_key)
                        results.put(("error", r, None))
                        continue
                    finally:
                        with lock:
                            in_flight[0] -= 1
                    results.put(("ok", r))

            threads = [threading.Thread(target=worker, name=f"judgelens-judge-{i}", daemon=True)
                       for i in range(n_threads)]
            for t in threads:
                t.start()
            new_results: list[_Request] = []
            last_flush = time.perf_counter()
            sent_started = time.perf_counter()
            answered = 0
            cancel_at = None
            while True:
                alive = any(t.is_alive() for t in threads)
                if not alive and results.empty():
                    break
                if (cancel.is_set() or fatal.is_set()) and cancel_at is None:
                    cancel_at = time.perf_counter()
                if cancel_at is not None and time.perf_counter() - cancel_at > CANCEL_GRACE_S:
                    break  # requests still in flight are abandoned
                try:
                    msg = results.get(timeout=0.1)
                except queue.Empty:
                    msg = None
                if msg is not None:
                    kind, r = msg[0], msg[1]
                    if kind == "cancelled":
                        pass
                    else:
                        summary.calls += 1
                        answered += 1
                        if kind == "ok":
                            summary.prompt_tokens += r.result.prompt_tokens
                            summary.completion_tokens += r.result.completion_tokens
                            new_results.append(r)
                        elif kind == "error" and msg[2] is not None and msg[2].fatal and summary.error is None:
                            summary.error = msg[2].message
                        u = self.units[r.unit]
                        if id(u) in pending_units and unit_complete(u):
                            pending_units.pop(id(u))
                            if not (fatal.is_set() and any(x.error for x in u.requests)):
                                finished.append(u)
                now = time.perf_counter()
                if finished or new_results:
                    if now - last_flush >= WRITE_EVERY_S or len(finished) >= WRITE_EVERY_ROWS or msg is None:
                        done += len(finished)
                        self._flush(finished, new_results, summary)
                        finished, new_results = [], []
                        last_flush = now
                        if progress:
                            rate = answered / (now - sent_started) if now > sent_started else 0
                            remaining = len(to_send) - answered
                            progress(done, total, remaining / rate if rate > 0 else None)
            done += len(finished)
            self._flush(finished, new_results, summary)
            if progress:
                progress(done, total, 0.0 if done == total else None)
        summary.cancelled = cancel.is_set() and summary.written < total
        summary.source_id = self.source_id
        summary.cost = self.config.cost(summary.prompt_tokens, summary.completion_tokens)
        summary.elapsed_s = time.perf_counter() - started
        self._finish_source(summary)
        return summary


def _item_text(item) -> str:
    if isinstance(item, PairKey):
        return f"{item.bench} q{item.question_id} t{item.turn} {item.model_a} vs {item.model_b}"
    return f"{item.bench} q{item.question_id} t{item.turn} {item.model} s{item.sample}"


def run_batch(store: Store, template: Template, config: JudgeConfig, items: list, label: str | None = None,
              concurrency: int = 8, progress: Callable[[int, int, float | None], None] | None = None,
              cancel: threading.Event | None = None, force: bool = False, *, api_key: str | None = None,
              reference_judge: str | None = None, judge_hint: str | None = None) -> BatchSummary:
    """Prepare and run a batch in one call (see ``RejudgeBatch``)."""
    batch = RejudgeBatch(store, template, config, items, label, reference_judge=reference_judge,
                         judge_hint=judge_hint, force=force)
    batch.prepare()
    return batch.run(api_key=api_key, concurrency=concurrency, progress=progress, cancel=cancel)
