"""What an answer text is, the one home of each rule: Japanese share, length, code block, ``<think>``, refusal.

Every rule has a Python form (``features(text)``, ``japanese_share``, ``is_japanese``) and a DuckDB twin
(``FEATURES_SQL``, used by ``fill_answer_features`` at import); ``tests/ingest/test_text_features.py`` checks that both give
the same values on the same texts. The rules read the *visible* text: ``<think>`` blocks removed by
``lib.vocab``'s think rule (the judge rates the answer, not the reasoning).

- **japanese_share**: Japanese characters (hiragana, katakana, half-width katakana, CJK ideographs incl. extension
  A and compatibility, 々〆〇; ``JAPANESE_RANGES``) over the non-whitespace characters (whitespace:
  ``WHITESPACE_RANGES``, what Python's ``str.split()`` splits on, the ideographic space included). Punctuation
  (。、) and full-width ASCII do not count as Japanese. None for an empty (or only-whitespace) visible text.
- **is_japanese**: share at least ``JAPANESE_MIN`` (0.5): the rule the bundled same-models judge applies for its −2.
  A question (``lib.probes`` picks a canary's language from it) may mix code and English: ``QUESTION_JAPANESE_MIN``.
- **length**: characters (code points) of the visible text.
- **has_code**: the visible text holds a ````` fence.
- **has_think**: the text holds a ``<think>`` block (``lib.vocab.THINK_RE``; an unclosed one counts).
- **refusal**: the visible text holds a refusal phrase (``REFUSAL``, English and Japanese, case-insensitive).

``fill_answer_features(cur)``: the ``answer_features`` table (one row per stored answer, store schema) for every
source whose answers have none yet, inside the caller's transaction (the store's writers call it with the search
index; a regenerated run deletes its source's rows before it rewrites the answers).
"""
from __future__ import annotations

import re

from lib.vocab import THINK_RE, THINK_SQL, strip_think

JAPANESE_RANGES = ((0x3041, 0x309F), (0x30A0, 0x30FF), (0xFF66, 0xFF9F),   # hiragana, katakana, half-width
                   (0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0xF900, 0xFAFF), (0x3005, 0x3007))  # ideographs, 々〆〇
WHITESPACE_RANGES = ((0x09, 0x0D), (0x1C, 0x20), (0x85, 0x85), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A),
                     (0x2028, 0x2029), (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000))
JAPANESE_MIN = 0.5
QUESTION_JAPANESE_MIN = 0.2
REFUSAL = (r"(?i)(i cannot|i can't|i can’t|i'm sorry|i’m sorry|i am sorry|as an ai|申し訳(ありません|ございません)|"
           r"お答えできません|できかねます|回答できません)")
CODE_FENCE = "```"


def _py_class(ranges, negate: bool = False) -> str:
    return "[" + ("^" if negate else "") + "".join(
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}" for a, b in ranges) + "]"


def _sql_class(ranges, negate: bool = False) -> str:
    return "[" + ("^" if negate else "") + "".join(
        f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in ranges) + "]"


JAPANESE_RE = re.compile(_py_class(JAPANESE_RANGES))
WHITESPACE_RE = re.compile(_py_class(WHITESPACE_RANGES))
REFUSAL_RE = re.compile(REFUSAL)


def japanese_share(text: str | None) -> float | None:
    """Japanese characters / non-whitespace characters of the visible text (None if it has none)."""
    body = WHITESPACE_RE.sub("", strip_think(text or ""))
    if not body:
        return None
    return len(JAPANESE_RE.findall(body)) / len(body)


def is_japanese(text: str | None, at_least: float = JAPANESE_MIN) -> bool:
    share = japanese_share(text)
    return share is not None and share >= at_least


def features(text: str | None) -> dict:
    """japanese_share, length, has_code, has_think, refusal of one answer text."""
    visible = strip_think(text or "")
    return {"japanese_share": japanese_share(text), "length": len(visible), "has_code": CODE_FENCE in visible,
            "has_think": bool(THINK_RE.search(text or "")), "refusal": bool(REFUSAL_RE.search(visible))}


# -- the DuckDB twin -------------------------------------------------------------------------------------------
COLUMNS = ("japanese_share", "length", "has_code", "has_think", "refusal")


def features_sql(text: str = "text") -> str:
    """SELECT terms computing ``COLUMNS`` from the column ``text``; parameters ``$think``, ``$not_ja``, ``$ws``,
    ``$refusal`` (``SQL_PARAMS``)."""
    visible = f"regexp_replace(coalesce({text}, ''), $think, '', 'g')"
    body = f"regexp_replace({visible}, $ws, '', 'g')"
    return (f"CASE WHEN length({body}) = 0 THEN NULL ELSE "
            f"length(regexp_replace({body}, $not_ja, '', 'g')) / length({body}) END AS japanese_share, "
            f"length({visible}) AS length, contains({visible}, '{CODE_FENCE}') AS has_code, "
            f"regexp_matches(coalesce({text}, ''), $think) AS has_think, "
            f"regexp_matches({visible}, $refusal) AS refusal")


SQL_PARAMS = {"think": THINK_SQL, "not_ja": _sql_class(JAPANESE_RANGES, negate=True),
              "ws": _sql_class(WHITESPACE_RANGES), "refusal": REFUSAL}
KEY = ("source_id", "bench", "model", "question_id", "turn", "sample")


def fill_answer_features(cur) -> int:
    """Add the features of every stored answer that has none yet (and drop those of removed answers), inside the
    caller's transaction. Returns the rows added. A store without the table (an old one mid-upgrade) is left alone."""
    if not cur.execute("SELECT 1 FROM information_schema.tables WHERE table_name = 'answer_features' "
                       "AND table_catalog = current_database()").fetchone():
        return 0
    cur.execute("DELETE FROM answer_features WHERE source_id NOT IN (SELECT source_id FROM sources)")
    # a source's answers are written in one transaction (an import; a regenerated run drops its rows first), so
    # the sources without a row here are the ones to do: no join over every stored answer at each write
    return cur.execute(
        f"""INSERT INTO answer_features ({', '.join(KEY)}, model_id, file_model, {', '.join(COLUMNS)})
            SELECT {', '.join('a.' + k for k in KEY)}, a.model_id, a.file_model, {features_sql('a.text')}
            FROM answers a WHERE a.source_id IN (SELECT source_id FROM sources EXCEPT
                                                 SELECT DISTINCT source_id FROM answer_features)""",
        SQL_PARAMS).fetchone()[0]
