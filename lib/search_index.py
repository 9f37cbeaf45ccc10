"""The search index: every searchable text once more, NFKC-normalised and lower-cased (``search_text``).

Why a copy: case-insensitive search with Unicode NFKC folding (full-width ``ｐｙｔｈｏｎ`` finds ``Python``,
``１０`` finds ``10``) must not normalise a million texts per query. DuckDB's ``lower()`` alone is ~10x slower
than ``contains()`` over the same column, and DuckDB has no NFKC at all. So the writer stores
``lower(NFKC(text))`` once, with the keys and filter columns (harness, bench, item, judge, score, parse
status) beside it, and a search is one ``contains()`` (or ``regexp_matches``) scan of one table.

How it is built, inside the writer's transaction (``refresh_item_scores`` calls ``index_new_sources``), by one
``INSERT … SELECT`` per field through a vectorised Python function (``normalise``): pyarrow's ``utf8_lower`` for
every text, and pyarrow's NFKC only for the texts that hold a character NFKC may change (one RE2 character class: full-width letters, half-width katakana,
ligatures, circled numbers, NBSP, combining marks, ...). Queries are normalised by the same function.
Measured on this machine, pyarrow's lower and RE2 were 2-3x faster than DuckDB's ``lower``/``regexp_matches``.
Sources are indexed once (``search_sources``); removed sources' rows are dropped; re-judge sources (which grow
while a batch runs) are re-indexed whole at each refresh.

A record is one question turn, one answer turn (per sample), one reference turn, one judgment's rationale
or one judgment's rendered prompt. Pairwise judgments are not indexed.
"""
from __future__ import annotations

import os
import unicodedata
from functools import lru_cache

FIELDS = ("question", "answer", "rationale", "prompt", "reference")
_TABLES = {"question": "questions", "answer": "answers", "reference": "reference_answers",
           "rationale": "single_judgments", "prompt": "single_judgments"}

# One SELECT per field: the columns of search_text in order, ``text`` last (normalised on insert).
_SELECTS = {
    "question": """
        SELECT x.source_id, 'question' AS field, s.harness, x.bench, x.question_id, x.turn, NULL::VARCHAR AS model,
               NULL::INTEGER AS sample, NULL::VARCHAR AS judge, NULL::DOUBLE AS score,
               NULL::VARCHAR AS parse_status, x.text
        FROM (SELECT rowid, source_id, bench, question_id, unnest(turns) AS text,
                     unnest(range(1, len(turns) + 1))::INTEGER AS turn FROM questions) x JOIN sources s USING (source_id)""",
    "answer": """
        SELECT x.source_id, 'answer', x.harness, x.bench, x.question_id, x.turn, x.model, x.sample, NULL::VARCHAR,
               NULL::DOUBLE, NULL::VARCHAR, x.text AS text
        FROM answers x""",
    "reference": """
        SELECT x.source_id, 'reference', s.harness, x.bench, x.question_id, x.turn, NULL::VARCHAR, NULL::INTEGER,
               x.judge, NULL::DOUBLE, NULL::VARCHAR, x.text AS text
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
    for c in range(0x30000):  # every decomposable character is below U+2FA1E (CJK compatibility supplement)
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


def normalise(texts):
    """lower(NFKC(text)) of a pyarrow string array, computed by pyarrow (utf8proc) for index and query alike.
    NFKC runs only on the texts the RE2 class says it may change: for every other text it is the identity."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    lowered = pc.utf8_lower(texts)
    unstable = pc.match_substring_regex(texts, unstable_class())
    if not pc.any(unstable).as_py():
        return lowered
    fixed = pc.utf8_lower(pc.utf8_normalize(pc.filter(texts, unstable), "NFKC"))
    return pc.replace_with_mask(lowered, unstable, fixed)


def normalise_query(text: str) -> str:
    """The form a query string is searched in (the index's own normalisation)."""
    import pyarrow as pa

    return normalise(pa.array([text], pa.string()))[0].as_py()


UDF = "judgelens_search_norm"


def build_at_import() -> bool:
    """JUDGELENS_SEARCH_INDEX=search defers indexing new sources to the first search after them (imports stay as
    fast as without search; that search pays). Default ``import``: every import indexes what it adds."""
    return os.environ.get("JUDGELENS_SEARCH_INDEX", "import").strip().lower() != "search"


def index_new_sources(cur, *, at_import: bool = False) -> None:
    """Bring search_text up to date with the sources table, inside the caller's transaction. ``at_import``: called
    by a writer's refresh; then new sources are left for the first search when build_at_import() is off (removed
    sources are always dropped)."""
    if not cur.execute("SELECT 1 FROM information_schema.tables WHERE table_name = 'search_text'").fetchone():
        return
    cur.execute("DELETE FROM search_text WHERE source_id NOT IN (SELECT source_id FROM sources)")
    cur.execute("DELETE FROM search_sources WHERE source_id NOT IN (SELECT source_id FROM sources)"
                " OR source_id IN (SELECT source_id FROM sources WHERE kind = 'rejudge')")
    cur.execute("DELETE FROM search_text WHERE source_id IN (SELECT source_id FROM sources WHERE kind = 'rejudge')")
    if at_import and not build_at_import():
        return
    new = [r[0] for r in cur.execute(
        "SELECT source_id FROM sources WHERE source_id NOT IN (SELECT source_id FROM search_sources) "
        "ORDER BY source_id").fetchall()]
    if not new:
        return
    # A vectorised (Arrow) Python function inside one INSERT … SELECT per field: DuckDB streams the texts through
    # it a vector at a time, so the table is scanned once and no field is held in Python whole.
    import duckdb

    try:
        cur.remove_function(UDF)
    except (duckdb.InvalidInputException, duckdb.CatalogException):
        pass
    cur.create_function(UDF, normalise, ["VARCHAR"], "VARCHAR", type="arrow", side_effects=False)
    try:
        for field in FIELDS:
            cur.execute(f"""
                INSERT INTO search_text
                SELECT * EXCLUDE (text), {UDF}(text)
                FROM ({_SELECTS[field]}) WHERE text IS NOT NULL AND list_contains($new, source_id)""", {"new": new})
    finally:
        cur.remove_function(UDF)
    cur.execute("INSERT INTO search_sources SELECT unnest($new)", {"new": new})
