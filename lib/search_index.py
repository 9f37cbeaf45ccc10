"""The search index: every searchable text once more, NFKC-normalised and lower-cased (``search_text``).

Why a copy: case-insensitive search with Unicode NFKC folding (full-width ``ｐｙｔｈｏｎ`` finds ``Python``,
``１０`` finds ``10``) must not normalise a million texts per query. DuckDB's ``lower()`` alone is ~10x slower
than ``contains()`` over the same column, and DuckDB has no NFKC at all. So the writer stores
``lower(NFKC(text))`` once, with the keys and filter columns (harness, bench, item, judge, score, parse
status) beside it, and a search is one ``contains()`` (or ``regexp_matches``) scan of one table.

How it is built, inside the writer's transaction (``refresh_item_scores`` calls ``index_new_sources``):
``lower(text)`` in DuckDB for every text that is already NFKC-stable (no character NFKC would change,
found by one RE2 character class); Python's ``unicodedata.normalize('NFKC')`` only for the rest
(full-width letters, half-width katakana, ligatures, circled numbers, NBSP, ...), then DuckDB ``lower``.
Sources are indexed once (``search_sources``); removed sources' rows are dropped; re-judge sources (which grow
while a batch runs) are re-indexed whole at each refresh.

A record is one question turn, one answer turn (per sample), one reference turn, one judgment's rationale
or one judgment's rendered prompt. Pairwise judgments are not indexed.
"""
from __future__ import annotations

import sys
import unicodedata
from functools import lru_cache

FIELDS = ("question", "answer", "rationale", "prompt", "reference")

# One SELECT per field: the columns of search_text in order, ``text`` last (normalised on insert).
_SELECTS = {
    "question": """
        SELECT t.source_id, 'question' AS field, s.harness, t.bench, t.question_id, t.turn, NULL AS model,
               NULL AS sample, NULL AS judge, NULL AS score, NULL AS parse_status, t.text
        FROM (SELECT source_id, bench, question_id, unnest(turns) AS text,
                     unnest(range(1, len(turns) + 1)) AS turn FROM questions) t JOIN sources s USING (source_id)""",
    "answer": """
        SELECT x.source_id, 'answer', x.harness, x.bench, x.question_id, x.turn, x.model, x.sample, NULL, NULL,
               NULL, x.text AS text
        FROM answers x""",
    "reference": """
        SELECT x.source_id, 'reference', s.harness, x.bench, x.question_id, x.turn, NULL, NULL, x.judge, NULL,
               NULL, x.text AS text
        FROM reference_answers x JOIN sources s USING (source_id)""",
    "rationale": """
        SELECT x.source_id, 'rationale', x.harness, x.bench, x.question_id, x.turn, x.model, x.sample, x.judge,
               x.score, x.parse_status, x.rationale AS text
        FROM single_judgments x""",
    "prompt": """
        SELECT x.source_id, 'prompt', x.harness, x.bench, x.question_id, x.turn, x.model, x.sample, x.judge,
               x.score, x.parse_status, x.judge_prompt AS text
        FROM single_judgments x""",
}


def _ranges(code_points: list[int]) -> str:
    out, start, prev = [], None, None
    for c in code_points:
        if start is None:
            start = prev = c
        elif c == prev + 1:
            prev = c
        else:
            out.append((start, prev))
            start = prev = c
    if start is not None:
        out.append((start, prev))
    return "".join(f"\\x{{{a:X}}}" if a == b else f"\\x{{{a:X}}}-\\x{{{b:X}}}" for a, b in out)


@lru_cache(maxsize=1)
def unstable_class() -> str:
    """An RE2 character class of every character that can make a text not NFKC-normalised: characters NFKC
    changes, combining marks, and the second halves of canonical compositions (which compose with the
    character before them, e.g. a Hangul vowel or a voiced-sound mark)."""
    composes: set[int] = set()
    flagged: list[int] = []
    for c in range(sys.maxunicode + 1):
        if 0xD800 <= c <= 0xDFFF:
            continue
        ch = chr(c)
        decomposition = unicodedata.decomposition(ch)
        if decomposition and not decomposition.startswith("<"):
            parts = decomposition.split()
            if len(parts) == 2:
                composes.add(int(parts[1], 16))
        if unicodedata.normalize("NFKC", ch) != ch or unicodedata.combining(ch):
            flagged.append(c)
    composes |= set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))  # Hangul jamo that compose
    return "[" + _ranges(sorted(set(flagged) | composes)) + "]"


def normalise_query(cur, text: str) -> str:
    """The form a query string is searched in: NFKC, then DuckDB's lower() (the index's own lower-casing)."""
    return cur.execute("SELECT lower(?)", [unicodedata.normalize("NFKC", text)]).fetchone()[0]


def index_new_sources(cur) -> None:
    """Bring search_text up to date with the sources table, inside the caller's transaction."""
    if not cur.execute("SELECT 1 FROM information_schema.tables WHERE table_name = 'search_text'").fetchone():
        return
    cur.execute("DELETE FROM search_text WHERE source_id NOT IN (SELECT source_id FROM sources)")
    cur.execute("DELETE FROM search_sources WHERE source_id NOT IN (SELECT source_id FROM sources)"
                " OR source_id IN (SELECT source_id FROM sources WHERE kind = 'rejudge')")
    cur.execute("DELETE FROM search_text WHERE source_id IN (SELECT source_id FROM sources WHERE kind = 'rejudge')")
    new = [r[0] for r in cur.execute(
        "SELECT source_id FROM sources WHERE source_id NOT IN (SELECT source_id FROM search_sources) "
        "ORDER BY source_id").fetchall()]
    if not new:
        return
    pattern = unstable_class()
    for field in FIELDS:
        # pending = the text has a character NFKC may change: stored raw here, normalised in Python below
        cur.execute(f"""
            INSERT INTO search_text
            SELECT * EXCLUDE (text, pending), CASE WHEN pending THEN text ELSE lower(text) END, pending
            FROM (SELECT *, regexp_matches(text, $pattern) AS pending FROM ({_SELECTS[field]}) WHERE text IS NOT NULL
                  AND list_contains($new, source_id))""", {"pattern": pattern, "new": new})
    pending = cur.execute("SELECT rowid, norm FROM search_text WHERE pending").fetchall()
    if pending:
        import pyarrow as pa

        fixed = pa.table({"rid": pa.array([r[0] for r in pending], pa.int64()),
                          "nfkc": pa.array([unicodedata.normalize("NFKC", r[1]) for r in pending], pa.string())})
        cur.register("_nfkc_fixed", fixed)
        try:
            cur.execute("UPDATE search_text SET norm = lower(f.nfkc), pending = false FROM _nfkc_fixed f "
                        "WHERE search_text.rowid = f.rid")
        finally:
            cur.unregister("_nfkc_fixed")
    cur.execute("INSERT INTO search_sources SELECT unnest($new)", {"new": new})
