"""The shared vocabulary: rules every layer must apply the same way, written once.

- The model key: two spellings of one model name match when ``lower(replace(name, '__', '/'))`` agree
  (the JA harness writes ``org__model`` in file names, answers say ``org/model``). ``model_key`` is the
  Python twin of ``model_key_sql``.
- The question order: ids sort as numbers when they are numbers ("2" before "10"), other ids after them
  as text (``qid_order``).
- The ``<think>`` rule: a ``<think>…</think>`` block is reasoning, not the answer; an unclosed ``<think>``
  runs to the end of the text (a model cut off mid-thought shows no answer). ``THINK_RE`` (Python) and
  ``THINK_SQL`` (DuckDB's RE2) are the same pattern; ``split_think`` applies it.
- The reference categories: FastChat judges math, reasoning and coding with a reference answer.
- FastChat's rating regexes (``common.py``): ``[[N]]``, else the first ``[N]`` (the backup pattern).
"""
from __future__ import annotations

import re

# -- model names -----------------------------------------------------------------------------------------
MODEL_KEY_SQL = "lower(replace({}, '__', '/'))"


def model_key_sql(expr: str) -> str:
    """The SQL expression of the model key of ``expr`` (a column or a parameter such as ``?``)."""
    return MODEL_KEY_SQL.format(expr)


def model_key(name: str | None) -> str:
    """``Org__Model`` and ``org/model`` give the same key."""
    return (name or "").replace("__", "/").lower()


# -- question order ----------------------------------------------------------------------------------------
def qid_order(table: str = "", column: str = "question_id") -> str:
    """ORDER BY terms sorting question ids as numbers first, then as text: ``qid_order('p')``."""
    col = f"{table}.{column}" if table else column
    return f"TRY_CAST({col} AS BIGINT) NULLS LAST, {col}"


QID_ORDER = qid_order()


# -- <think> blocks ------------------------------------------------------------------------------------------
THINK_PATTERN = r"(?s)<think>(.*?)(?:</think>|$)\s*"
THINK_RE = re.compile(THINK_PATTERN)
THINK_SQL = r"(?s)<think>.*?(?:</think>|$)\s*"   # the same rule for regexp_replace (no capture group)


def split_think(text: str | None) -> tuple[str, str]:
    """(the text inside ``<think>`` blocks joined by blank lines, the text without them)."""
    return "\n\n".join(THINK_RE.findall(text or "")), THINK_RE.sub("", text or "")


def strip_think(text: str | None) -> str:
    return split_think(text)[1]


# -- categories ------------------------------------------------------------------------------------------------
REFERENCE_CATEGORIES = frozenset({"math", "reasoning", "coding"})

# -- FastChat's rating regexes -------------------------------------------------------------------------------
RATING_NUMBER = r"(\d+\.?\d*)"
DOUBLE_BRACKET = r"\[\[" + RATING_NUMBER + r"\]\]"      # [[8]], [[8.5]]
SINGLE_BRACKET = r"\[" + RATING_NUMBER + r"\]"          # the backup: [8]
DOUBLE_BRACKET_RE = re.compile(DOUBLE_BRACKET)
SINGLE_BRACKET_RE = re.compile(SINGLE_BRACKET)
