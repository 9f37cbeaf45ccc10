"""Where judge requests go and how: the endpoint configuration (``JudgeConfig``) and the API key.

Key handling: ``resolve_api_key(session_value, secrets_mapping)`` takes the key from the session's
password field, then Streamlit secrets (passed in as a mapping: lib/ never imports streamlit), then
the ``OPENAI_API_KEY`` environment variable. The key is handed to the ``OpenAI`` constructor only
(``lib.judging.client.make_client``): it is never written to the store, to logs, to exports or to
``os.environ``, and any error text that echoes it is redacted (``redact``).

The client, the request cache and the dispatcher read only ``base_url``, ``model``, ``params()`` (sent with
every request and part of the cache key), ``timeout_s``, the retry settings and ``cost()``: any model request
(a judge's, or an answer being generated) goes through them with a ``JudgeConfig``.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from lib.errors import EndpointError

ENV_KEY = "OPENAI_API_KEY"


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
