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

import json
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


def single_bracket_only_sql(column: str) -> str:
    """SQL, true when the text ``column`` has no ``[[N]]`` but has a ``[N]``: FastChat's backup regex took that
    number as the rating (e.g. a "[1]" list marker). NULL for a NULL text. The one home of the rule: the writers
    store it with every judgment (``single_judgments.single_bracket``, ``lib.store.bulk.DERIVED``), so readers
    never scan the texts for it. The patterns are inlined (no parameters), so any statement can carry it."""
    double, single = (re2_digits(p) for p in (DOUBLE_BRACKET, SINGLE_BRACKET))
    return f"(NOT regexp_matches({column}, '{double}') AND regexp_matches({column}, '{single}'))"


def re2_digits(pattern: str) -> str:
    """``pattern`` for DuckDB's RE2, digits as FastChat's Python regex reads them: Python's ``\\d`` is any Unicode
    decimal digit (a full-width "[８]" is a rating of 8 to FastChat: ``float("８") == 8.0``), RE2's only 0-9."""
    return pattern.replace(r"\d", r"\p{Nd}")


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


# --- the question the judge saw (issue 22): cut out of a stored, rendered judge prompt ---------------------------
# FastChat and the JA templates: turn-1 prompts hold "[Question]\n{question}\n\n[The Start of ..." ("[質問]",
# "[User Question]" for pairwise); multi-turn prompts hold "### User:\n{question_i}\n\n### Assistant A:" (or
# "### Reference answer:") once per turn, the reference block first, so the conversation's turns are the last
# ones. Swallow stores the JSON message list: its message contents are searched the same way. The Python
# functions and the SQL expressions are the same rule (tests/ingest/test_question_seen.py checks they agree).
ASKED_SINGLE = (r"(?s)\[(?:Question|User Question|質問|ユーザーの質問)\]\n(.*?)\n\n"
                r"\[(?:The Start of|The End of|アシスタント|参照|回答)")
ASKED_TURN = r"(?s)### (?:User|ユーザー):\n(.*?)\n\n### (?:Assistant A|Assistant B|Reference answer|アシスタント|参照回答)"
ASKED_SINGLE_RE = re.compile(ASKED_SINGLE)
ASKED_TURN_RE = re.compile(ASKED_TURN)


def prompt_text(prompt: str | None) -> str:
    """A stored judge prompt as text: the rendered text itself, or a JSON message list's contents, one per line."""
    if not prompt:
        return ""
    if prompt.lstrip().startswith("["):
        try:
            messages = json.loads(prompt)
        except (ValueError, RecursionError):
            return prompt
        if isinstance(messages, list) and all(isinstance(m, dict) for m in messages):
            return "\n".join(str(m.get("content", "")) for m in messages)
    return prompt


def question_seen(prompt: str | None, turn: int) -> tuple[str | None, str | None]:
    """(turn 1's text, turn 2's text) as a stored judge prompt of ``turn`` shows them (None where it does not)."""
    text = prompt_text(prompt)
    turns = ASKED_TURN_RE.findall(text)
    if turn >= 2 and len(turns) >= 2:
        return turns[-2], turns[-1]
    single = ASKED_SINGLE_RE.search(text)
    if turn == 1 and single:
        return single.group(1), None
    return None, None


def prompt_text_sql(column: str) -> str:
    """``prompt_text`` in DuckDB SQL."""
    return (f"CASE WHEN starts_with(ltrim({column}), '[') AND json_valid({column}) "
            f"AND json_type({column}) = 'ARRAY' THEN array_to_string("
            f"json_extract_string({column}, '$[*].content'), chr(10)) ELSE {column} END")


def asked_turns_sql(column: str) -> str:
    """The user turns a prompt (already as text) shows, in order: ``ASKED_TURN_RE.findall`` in DuckDB SQL."""
    return f"regexp_extract_all({column}, '{ASKED_TURN}', 1)"


def question_seen_sql(column: str, turn: str, which: int, turns: str | None = None) -> str:
    """``question_seen(prompt, turn)[which - 1]`` in DuckDB SQL (``column`` is a prompt already as text; ``turns``:
    a column holding its ``asked_turns_sql`` already, so that a query asking for both turns cuts them out once)."""
    turns = turns or asked_turns_sql(column)
    if which == 2:
        return f"CASE WHEN {turn} >= 2 AND len({turns}) >= 2 THEN {turns}[-1] END"
    return (f"CASE WHEN {turn} >= 2 AND len({turns}) >= 2 THEN {turns}[-2] "
            f"WHEN {turn} = 1 THEN nullif(regexp_extract({column}, '{ASKED_SINGLE}', 1), '') END")
