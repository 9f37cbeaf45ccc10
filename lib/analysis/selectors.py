"""Selectors: which judged items one side of a comparison takes.

A selector is a dict over ``SELECTOR_KEYS`` (harness, bench, judge, model), each naming one value,
e.g. ``{"judge": "gpt-4o", "model": "shisa-ai/shisa-v2-llama3.1-8b"}``. On the command line it is
written as comma-separated ``key=value`` pairs: ``judge=gpt-4o,model=shisa-ai/shisa-v2-llama3.1-8b``.
A key left out means "any value". How two selectors pair items is up to the comparison
(``lib.analysis.deltas.paired_items`` for two selections of one bench).
"""
from __future__ import annotations

from lib.errors import UsageError

SELECTOR_KEYS = ("harness", "bench", "judge", "model")


def _allowed() -> str:
    return ", ".join(SELECTOR_KEYS)


def parse_selector(text: str) -> dict:
    """``"judge=gpt-4o,model=M"`` -> ``{"judge": "gpt-4o", "model": "M"}``.

    Pairs are separated by commas; a pair splits at its first ``=`` (a value may contain ``=``);
    whitespace around keys and values is dropped. An empty text selects everything (``{}``).
    Raises ``UsageError`` naming the allowed keys for an unknown key, a pair without ``=``, an empty
    key or value, or a key given twice.
    """
    selector: dict[str, str] = {}
    for part in (text or "").split(","):
        part = part.strip()
        if not part:
            continue
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key or not value:
            raise UsageError(f"bad selector part {part!r}: write key=value pairs separated by commas, "
                             f"with keys from {_allowed()} (e.g. judge=gpt-4o,model=M)")
        if key not in SELECTOR_KEYS:
            raise UsageError(f"unknown selector key {key!r} in {text!r}; allowed keys: {_allowed()}")
        if key in selector:
            raise UsageError(f"selector key {key!r} is given twice in {text!r}; allowed keys: {_allowed()}, "
                             "each at most once")
        selector[key] = value
    return selector


def check_selector(selector: dict | None, name: str = "selector") -> dict:
    """A copy of ``selector`` after checking its keys and values (one plain value per key)."""
    selector = dict(selector or {})
    unknown = [k for k in selector if k not in SELECTOR_KEYS]
    if unknown:
        raise UsageError(f"{name}: unknown key(s) {', '.join(map(repr, unknown))}; allowed keys: {_allowed()}")
    for key, value in selector.items():
        if value is None or isinstance(value, (list, tuple, set, dict)):
            raise UsageError(f"{name}: {key} must be one value, not {value!r}")
    return selector


def describe(selector: dict | None) -> str:
    """``{"judge": "gpt-4o", "model": "M"}`` -> ``"judge=gpt-4o, model=M"`` (keys in the order of
    ``SELECTOR_KEYS``); ``{}`` -> ``"everything"``. Round-trips through ``parse_selector``."""
    selector = check_selector(selector)
    parts = [f"{k}={selector[k]}" for k in SELECTOR_KEYS if k in selector]
    return ", ".join(parts) if parts else "everything"
