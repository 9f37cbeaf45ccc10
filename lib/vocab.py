"""The shared vocabulary: rules every layer must apply the same way, written once.

- Two model-name keys, for two different jobs:
  - ``model_key`` (the storage key): two spellings of one model name in the SAME harness run match when
    ``lower(replace(name, '__', '/'))`` agree (the JA harness writes ``org__model`` in file names, answers say
    ``org/model``). It joins stored rows (answers to judgments, re-judging context, flags); ``model_key_sql`` /
    ``MODEL_KEY_SQL`` is its DuckDB twin, so Python and SQL joins agree.
  - ``model_alias_key`` (the alias key): looser, for recognising one model under the names DIFFERENT harnesses
    give it (``lib.analysis.aliases``): NFKC, case folded, ``__`` read as ``/``, leading LiteLLM provider routes
    (``hosted_vllm/``, ``openai/``, ...; ``PROVIDER_PREFIXES``) dropped. Never used to join rows directly: names
    with equal alias keys become aliases (``model_aliases``), which the user can undo.
- The question order: ids sort as numbers when they are numbers ("2" before "10"), other ids after them
  as text (``qid_order``).
- The ``<think>`` rule: a ``<think>…</think>`` block is reasoning, not the answer; an unclosed ``<think>``
  runs to the end of the text (a model cut off mid-thought shows no answer). ``THINK_RE`` (Python) and
  ``THINK_SQL`` (DuckDB's RE2) are the same pattern; ``split_think`` applies it.
- The mark of a JudgeLens verdict export record (``VERDICT_EXPORT_MARK``): written by ``lib.judging.human``,
  recognised by ``lib.ingest.formats.human``.
- The reference categories: FastChat judges math, reasoning and coding with a reference answer.
- FastChat's rating rule (``common.py``): ``[[N]]``, else the first ``[N]`` (the backup pattern);
  ``fastchat_rating`` applies it (the parsers of ``lib.judging.parsers`` whose kind is in ``FASTCHAT_CHAIN_KINDS``
  end in it, and ``lib.analysis.flags`` asks it which of the two patterns a stored rating came from).
"""
from __future__ import annotations

import re
import unicodedata

# -- model names -----------------------------------------------------------------------------------------
MODEL_KEY_SQL = "lower(replace({}, '__', '/'))"


def model_key_sql(expr: str) -> str:
    """The SQL expression of the model key of ``expr`` (a column or a parameter such as ``?``)."""
    return MODEL_KEY_SQL.format(expr)


def model_key(name: str | None) -> str:
    """The storage key (joins stored rows; Python twin of ``model_key_sql``): ``Org__Model`` and ``org/model``
    give the same key."""
    return (name or "").replace("__", "/").lower()


# LiteLLM provider routes ("<provider>/<model>") seen in harness outputs. The provider is not part of the model.
PROVIDER_PREFIXES = frozenset({
    "hosted_vllm", "openai", "litellm_proxy", "litellm", "vllm", "huggingface", "text-completion-openai",
    "custom_openai", "openai_like", "azure", "azure_ai", "bedrock", "vertex_ai", "together_ai", "openrouter",
    "ollama", "ollama_chat", "groq", "fireworks_ai", "deepinfra", "anyscale", "perplexity", "nvidia_nim",
    "sagemaker", "replicate", "lm_studio", "llamafile", "sambanova", "cerebras", "xai", "friendliai",
    "text-completion-codestral", "watsonx", "predibase", "cloudflare", "databricks", "nscale",
})


def model_alias_key(name: str | None) -> str:
    """The alias key (for alias detection across harnesses, ``lib.analysis.aliases``; not for joins): NFKC, case
    folded, ``__`` read as ``/``, leading provider routes dropped. ``hosted_vllm/Org/Model``, ``org__model`` and
    ``Ｏｒｇ/Model`` give the same key; a bare provider word (``openai``) is a name, not a route."""
    key = unicodedata.normalize("NFKC", name or "").strip().casefold().replace("__", "/")
    parts = key.split("/")
    while len(parts) > 1 and parts[0] in PROVIDER_PREFIXES:
        parts.pop(0)
    return "/".join(parts)


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


# -- the analyst's verdicts -------------------------------------------------------------------------------------
VERDICT_EXPORT_MARK = "judgelens_verdict"  # {"judgelens_verdict": 1, "author": ...}: one exported verdict


# -- categories ------------------------------------------------------------------------------------------------
REFERENCE_CATEGORIES = frozenset({"math", "reasoning", "coding"})

# -- FastChat's rating regexes -------------------------------------------------------------------------------
RATING_NUMBER = r"(\d+\.?\d*)"
DOUBLE_BRACKET = r"\[\[" + RATING_NUMBER + r"\]\]"      # [[8]], [[8.5]]
SINGLE_BRACKET = r"\[" + RATING_NUMBER + r"\]"          # the backup: [8]
DOUBLE_BRACKET_RE = re.compile(DOUBLE_BRACKET)
SINGLE_BRACKET_RE = re.compile(SINGLE_BRACKET)


# parser kinds (lib.judging.parsers) whose last step is FastChat's chain: [[N]], else [N]
FASTCHAT_CHAIN_KINDS = frozenset({"fastchat_single", "ja_rating"})


def find_match(pattern: re.Pattern, text: str, take: str) -> re.Match | None:
    """The first (``take='first'``) or last (``'last'``) match of ``pattern`` in ``text``; None when none."""
    if take == "first":
        return pattern.search(text)
    found = None
    for found in pattern.finditer(text):
        pass
    return found


def fastchat_rating(text: str | None, take: str = "first") -> tuple[str, re.Match] | None:
    """FastChat's rating rule: ``[[N]]``, else ``[N]`` (the backup pattern). Returns (method, match) with method
    ``double_bracket`` or ``single_bracket_fallback``, None when neither pattern matches. ``take='last'`` takes
    the last match of the first pattern that matches (FastChat takes the first)."""
    for method, pattern in (("double_bracket", DOUBLE_BRACKET_RE), ("single_bracket_fallback", SINGLE_BRACKET_RE)):
        m = find_match(pattern, text or "", take)
        if m:
            return method, m
    return None
