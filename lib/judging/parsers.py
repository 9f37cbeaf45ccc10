"""Reading a verdict out of a judge's text.

``parse(text, spec)`` turns one judge output into a ``ParseResult``: a score (single-answer
grading) or a verdict (pairwise), a status and the method that found it. Nothing is clamped or
guessed: a number outside the parser's scale is ``out_of_range`` (the number is kept in ``value``),
no match is ``not_parsed``.

A parser spec is a small JSON-able dict, stored with each template version:

=======================  ========================================================================
kind                     reads
=======================  ========================================================================
``fastchat_single``      FastChat ``[[N]]``, else the first ``[N]`` (common.py's backup pattern)
``rating_double_bracket`` ``Rating: [[N]]``
``score_double_bracket`` ``Score: [[N]]``
``score_colon``          ``Score: N`` (also ``Score：N``, any case)
``ja_rating``            Japanese ``評価：[[N]]`` (Stability's ``[[評価]]`` prompts), else FastChat's
                         ``[[N]]`` / ``[N]``
``pairwise_abc``         ``[[A]]`` / ``[[B]]`` / ``[[C]]`` in FastChat's order (A, then B, then C)
``pairwise_five``        ``[[A>>B]]``, ``[[A>B]]``, ``[[A=B]]``, ``[[B>A]]``, ``[[B>>A]]`` (Arena-Hard)
``fastchat_two_score``   ``[[a, b]]`` (FastChat's ``[[rating_a,rating_b]]``; |a-b| <= 0.1 is a tie)
``regex``                a user regular expression with one capture group: a number, or a label
                         mapped through ``verdicts`` ({"A": "A", "B": "B", "C": "tie"})
=======================  ========================================================================

Full-width digits (``[[８]]``, which Python's ``\\d`` matches) are read, with method ``…_fullwidth``
and a note. Optional keys: ``scale`` ([low, high], default [1, 10]) and ``take`` ("first" | "last" match;
default "first", as FastChat). User regexes run in the sandbox worker process with a time limit
(Python's ``re`` cannot be interrupted and holds the GIL), see ``lib.judging.sandbox.run_regex``.
"""
from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field

from lib.errors import ParserSpecError, RegexTimeout
from lib.judging.sandbox import run_regex
from lib.vocab import RATING_NUMBER, fastchat_rating, find_match

SINGLE_KINDS = ("fastchat_single", "rating_double_bracket", "score_double_bracket", "score_colon", "ja_rating")
PAIR_KINDS = ("pairwise_abc", "pairwise_five", "fastchat_two_score")
KINDS = SINGLE_KINDS + PAIR_KINDS + ("regex",)

MAX_USER_PATTERN = 500
MAX_PARSE_CHARS = 200_000          # judge outputs longer than this are parsed on their first 200k characters

NUM = RATING_NUMBER
_FULLWIDTH = str.maketrans("０１２３４５６７８９．", "0123456789.")

_PATTERNS = {
    "rating_double_bracket": re.compile(r"Rating:\s*\[\[" + NUM + r"\]\]", re.IGNORECASE),
    "score_double_bracket": re.compile(r"Score:\s*\[\[" + NUM + r"\]\]", re.IGNORECASE),
    "score_colon": re.compile(r"Score\s*[:：]\s*\**\s*(-?\d+(?:\.\d+)?)", re.IGNORECASE),
    "ja_label_double_bracket": re.compile(r"評価\s*[:：]?\s*\[\[" + NUM + r"\]\]"),
    "two_score": re.compile(r"\[\[" + NUM + r",\s?" + NUM + r"\]\]"),
    "two_score_fallback": re.compile(r"\[" + NUM + r",\s?" + NUM + r"\]"),
    "five_level": re.compile(r"\[\[([AB<>=]+)\]\]"),
}
FIVE_LEVELS = {"A>>B": "A>>B", "A>B": "A>B", "A=B": "A=B", "B=A": "A=B", "B>A": "B>A", "B>>A": "B>>A",
               "A<<B": "B>>A", "A<B": "B>A", "B<A": "A>B", "B<<A": "A>>B"}
TIE_DELTA = 0.1  # FastChat common.py


@dataclass(frozen=True)
class ParseResult:
    status: str                      # ok | not_parsed | out_of_range
    method: str                      # which rule matched, e.g. double_bracket, single_bracket_fallback, regex
    score: float | None = None       # single: the value when status == ok (on the parser's scale)
    verdict: str | None = None       # pairwise: "A" | "B" | "tie" (five-level: also the label in ``label``)
    value: float | None = None       # the number read, also when out of range
    label: str | None = None         # the text matched, e.g. "[[8]]" or "A>>B"
    note: str | None = None          # anything a reader should know (e.g. "both [[A]] and [[B]] present")
    scale: tuple[float, float] | None = None
    extra: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


def mode_of(spec: dict) -> str:
    """'pairwise' if this parser reads A/B verdicts, else 'single'."""
    kind = spec.get("kind")
    if kind in PAIR_KINDS:
        return "pairwise"
    if kind == "regex" and spec.get("verdicts"):
        return "pairwise"
    return "single"


def check_spec(spec: dict) -> dict:
    """The spec, validated and with defaults filled in. Raises ParserSpecError with a clear message."""
    if not isinstance(spec, dict):
        raise ParserSpecError("A parser spec is an object like {\"kind\": \"fastchat_single\"}.")
    kind = spec.get("kind")
    if kind not in KINDS:
        raise ParserSpecError(f"Unknown parser kind {kind!r}; choose one of {', '.join(KINDS)}.")
    out = dict(spec)
    scale = out.get("scale", [1, 10])
    if mode_of(out) == "single" or kind == "fastchat_two_score":
        try:
            lo, hi = (float(scale[0]), float(scale[1]))
        except (TypeError, ValueError, IndexError):
            raise ParserSpecError(f"scale must be [low, high], got {scale!r}.") from None
        if not (math.isfinite(lo) and math.isfinite(hi)) or lo >= hi:
            raise ParserSpecError(f"scale must be [low, high] with low < high, got {scale!r}.")
        out["scale"] = [lo if not lo.is_integer() else int(lo), hi if not hi.is_integer() else int(hi)]
    if out.get("take", "first") not in ("first", "last"):
        raise ParserSpecError("take must be 'first' or 'last'.")
    if kind == "regex":
        pattern = out.get("pattern")
        if not isinstance(pattern, str) or not pattern:
            raise ParserSpecError("A regex parser needs a non-empty 'pattern' with one capture group.")
        if len(pattern) > MAX_USER_PATTERN:
            raise ParserSpecError(f"The regex is {len(pattern)} characters long; the limit is {MAX_USER_PATTERN}.")
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise ParserSpecError(f"The regex does not compile: {exc}.") from None
        if compiled.groups < 1:
            raise ParserSpecError("The regex needs a capture group around the score or label, e.g. Score: (\\d+).")
        verdicts = out.get("verdicts")
        if verdicts is not None:
            if not isinstance(verdicts, dict) or not verdicts or not all(
                    isinstance(v, str) and v in ("A", "B", "tie") for v in verdicts.values()):
                raise ParserSpecError('verdicts maps labels to "A", "B" or "tie", e.g. {"A": "A", "B": "B", "C": "tie"}.')
    return out


def _number(text: str) -> float | None:
    """FastChat passes the match to ast.literal_eval: '8' -> 8, '8.5' -> 8.5, '8.' -> 8.0."""
    text = text.translate(_FULLWIDTH)
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        try:
            value = float(text)
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _scored(value: float | None, label: str, method: str, scale, note: str | None = None) -> ParseResult:
    lo, hi = scale
    if not label.isascii() and any(c in label for c in "０１２３４５６７８９"):
        # Python's \d also matches full-width digits; FastChat's ast.literal_eval would fail on them
        method, note = method + "_fullwidth", "full-width digits read as ASCII"
    if value is None or not math.isfinite(value):
        return ParseResult("not_parsed", method, label=label, note="the match is not a number", scale=(lo, hi))
    if value < lo or value > hi:
        return ParseResult("out_of_range", method, value=value, label=label, scale=(lo, hi),
                           note=note or f"{value:g} is outside the scale {lo:g}-{hi:g}")
    return ParseResult("ok", method, score=value, value=value, label=label, note=note, scale=(lo, hi))


def _fastchat_chain(text: str, take: str, scale) -> ParseResult:
    """The last step of the kinds in FASTCHAT_CHAIN_KINDS: FastChat's [[N]], else [N] (lib.vocab.fastchat_rating)."""
    found = fastchat_rating(text, take)
    if found is None:
        return ParseResult("not_parsed", "none", scale=scale)
    method, m = found
    return _scored(_number(m.group(1)), m.group(0), method, scale)


def parse(text: str | None, spec: dict) -> ParseResult:
    """Read the judge output ``text`` with the parser ``spec`` (see the module docstring)."""
    spec = check_spec(spec)
    kind, take = spec["kind"], spec.get("take", "first")
    scale = tuple(spec.get("scale", (1, 10)))
    text = (text or "")[:MAX_PARSE_CHARS]

    if kind == "fastchat_single":
        return _fastchat_chain(text, take, scale)

    if kind in ("rating_double_bracket", "score_double_bracket", "score_colon"):
        m = find_match(_PATTERNS[kind], text, take)
        if m:
            return _scored(_number(m.group(1)), m.group(0), kind, scale)
        return ParseResult("not_parsed", "none", scale=scale)

    if kind == "ja_rating":
        m = find_match(_PATTERNS["ja_label_double_bracket"], text, take)
        if m:
            return _scored(_number(m.group(1)), m.group(0), "ja_label_double_bracket", scale)
        return _fastchat_chain(text, take, scale)

    if kind == "pairwise_abc":
        present = [v for v in ("A", "B", "C") if f"[[{v}]]" in text]
        if not present:
            return ParseResult("not_parsed", "none")
        first = present[0]  # FastChat: "[[A]]" in text, elif "[[B]]", elif "[[C]]"
        note = f"several verdicts present ({', '.join(present)}); FastChat's order takes {first}" if len(present) > 1 else None
        return ParseResult("ok", "fastchat_order", verdict={"A": "A", "B": "B", "C": "tie"}[first],
                           label=f"[[{first}]]", note=note)

    if kind == "pairwise_five":
        labels = [m.group(1) for m in _PATTERNS["five_level"].finditer(text)]
        if not labels:
            return ParseResult("not_parsed", "none")
        distinct = list(dict.fromkeys(labels))
        known = [FIVE_LEVELS.get(lab) for lab in distinct]
        if len(set(known)) > 1:  # Arena-Hard: different labels in one judgment count as no verdict
            return ParseResult("not_parsed", "conflicting", note=f"conflicting verdicts {', '.join(distinct)}")
        label = known[0]
        if label is None:
            return ParseResult("out_of_range", "five_level", label=distinct[0],
                               note=f"[[{distinct[0]}]] is not one of A>>B, A>B, A=B, B>A, B>>A")
        verdict = "A" if label.startswith("A>") else "B" if label.startswith("B>") else "tie"
        strength = {"A>>B": 2, "A>B": 1, "A=B": 0, "B>A": -1, "B>>A": -2}[label]
        return ParseResult("ok", "five_level", verdict=verdict, label=label, value=float(strength))

    if kind == "fastchat_two_score":
        for method in ("two_score", "two_score_fallback"):
            m = find_match(_PATTERNS[method], text, take)
            if m:
                a, b = _number(m.group(1)), _number(m.group(2))
                lo, hi = scale
                if a is None or b is None:
                    return ParseResult("not_parsed", method, label=m.group(0))
                if not (lo <= a <= hi and lo <= b <= hi):
                    return ParseResult("out_of_range", method, label=m.group(0), value=a,
                                       note=f"{a:g}, {b:g} outside the scale {lo:g}-{hi:g}", extra={"b": b})
                verdict = "tie" if abs(a - b) <= TIE_DELTA else ("A" if a > b else "B")
                return ParseResult("ok", method, verdict=verdict, label=m.group(0), value=a, extra={"b": b})
        return ParseResult("not_parsed", "none")

    # kind == "regex": run in the sandbox worker with a time limit
    try:
        groups = run_regex(spec["pattern"], text, take)
    except RegexTimeout as exc:
        return ParseResult("not_parsed", "regex_timeout", note=exc.message, scale=scale)
    if groups is None:
        return ParseResult("not_parsed", "none", scale=scale)
    matched, captured = groups
    verdicts = spec.get("verdicts")
    if verdicts:
        verdict = verdicts.get(captured.strip())
        if verdict is None:
            return ParseResult("out_of_range", "regex", label=captured,
                               note=f"{captured!r} is not one of {', '.join(verdicts)}")
        return ParseResult("ok", "regex", verdict=verdict, label=captured)
    return _scored(_number(captured.strip()), matched, "regex", scale)


def to_ten_scale(value: float, scale) -> float:
    """A score on the parser's scale mapped linearly onto JudgeLens's common 1-10 scale.

    [1, 10] is unchanged; [1, 5] maps 1 -> 1, 3 -> 5.5, 5 -> 10; [0, 1] maps 0 -> 1, 1 -> 10.
    """
    lo, hi = float(scale[0]), float(scale[1])
    if (lo, hi) == (1.0, 10.0):
        return float(value)
    return 1.0 + (float(value) - lo) * 9.0 / (hi - lo)
