"""The search index: what a case- and width-insensitive (lower(NFKC)) search needs besides the texts themselves.

Matching is ``lower(NFKC(query)) in lower(NFKC(text))`` (``lower`` = pyarrow's ``utf8_lower``, one code point to
one code point). Most texts are already NFKC-normalised ("stable": NFKC leaves them as they are), and for those
the match runs on the ORIGINAL column: each character ``x`` of the normalised query becomes the set of the
characters without a copy whose lower case is ``x`` (``[Aa]``, ``[Ξξ]``; most characters only
themselves), an exact RE2 pattern (``stable_match``) that RE2 finds as fast as ``contains()``; a query without
such characters is a plain ``contains()``. So the index is sparse, one ``norm`` per text in
``answers.text_norm``, ``single_judgments.rationale_norm`` and ``single_judgments.prompt_norm``:

- NULL: the text is stable (matched by the pattern above);
- ``''``: NFKC changes only local characters (``LOCAL_RANGES``: full-width ASCII, the ideographic space,
  half-width katakana, super/subscript digits; most of what NFKC changes in real Japanese harness data): matched
  on the original by a pattern with their alternatives (``[AaＡａ]``, several times slower per text, so only
  these texts get it), and a regex through ``translate``;
- else ``lower(NFKC(text))``: the text holds a character of ``copy_class()`` (ligatures, circled numbers,
  half-width voiced-sound marks, combining marks, ..., and the few stable characters whose case folding differs
  from their lower case, e.g. ``İ``), matched by ``contains`` on this copy.

A search reads ``CASE WHEN norm IS NULL THEN … WHEN norm = '' THEN … ELSE contains(norm, needle) END`` in one scan
of the original table, which also hands the original text to the snippet. Question and reference turns (small
tables; a list column and a join would make them awkward to scan) are copied whole into ``search_text``, original
and ``lower(NFKC)``, with keys and filter columns. ``search_sources``: the sources whose texts are indexed, all
five fields.

Built inside the writer's transaction (``refresh_item_scores`` calls ``index_new_sources``), in two steps per text
column: mark (``norm = ''`` where the text holds a character of ``marked_class()``: one RE2 scan of every non-ASCII
text, pyarrow's RE2 through ``holds_marked``) and copy (``normalise`` of the few marked texts holding a character
of ``copy_class()``). The importer's fast path (FastChat judgment files, the largest) marks rationales and prompts in
the INSERT that parses them (``mark_expression``), where DuckDB runs the scan in parallel with the JSON reading:
half the cost of a separate UPDATE. The classes come generated (``lib/search_classes.py``): building them takes
longer than marking 100k texts; so do the tables a search makes its patterns from (``query_tables``).
A source whose rows change after it was indexed (a re-judge source grows while its batch runs and when it resumes;
a regenerated run is written again) is forgotten by the write that changes it (``forget_sources``, through
``lib.store.scores.sources_changed``) and indexed again whole at the next refresh; no other source is redone.

Why not a full copy: it doubled import time and database size (issue 12); NFKC-stable texts (most of them; every
synthetic benchmark text) need none. Why not NFKC per query: DuckDB has none, and ``lower()`` alone is 3-5x
slower than the pattern over the same column.
"""
from __future__ import annotations

import re
import unicodedata
from contextlib import contextmanager
from functools import lru_cache

FIELDS = ("question", "answer", "rationale", "prompt", "reference")
SEARCH_INDEX_VERSION = "3"  # meta 'search_index': 3 = prompts at import too (2: at their first search; 1: search_text held every text)

# The fields searched in their own table: table, text column, norm column.
COLUMNS = {"answer": ("answers", "text", "text_norm"),
           "rationale": ("single_judgments", "rationale", "rationale_norm"),
           "prompt": ("single_judgments", "judge_prompt", "prompt_norm")}

# The fields copied into search_text: the columns of search_text in order, ``text`` last (``norm`` is added).
_SELECTS = {
    "question": """
        SELECT x.source_id, 'question' AS field, s.harness, x.bench, x.question_id, x.turn, NULL::VARCHAR AS judge,
               x.text
        FROM (SELECT source_id, bench, question_id, unnest(turns) AS text,
                     unnest(range(1, len(turns) + 1))::INTEGER AS turn FROM questions) x JOIN sources s USING (source_id)""",
    "reference": """
        SELECT x.source_id, 'reference', s.harness, x.bench, x.question_id, x.turn, x.judge, x.text AS text
        FROM reference_answers x JOIN sources s USING (source_id)""",
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


def all_chars() -> list[str]:
    """Every character that can be decomposable or cased (all below U+30000), surrogates left out."""
    return [chr(c) for c in range(0x30000) if not 0xD800 <= c <= 0xDFFF]


def lower_all(chars: list[str]) -> list[str]:
    """Each character lowered by pyarrow's ``utf8_lower`` (one code point to one): the index's lower case."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.utf8_lower(pa.array(chars, pa.string())).to_pylist()


@lru_cache(maxsize=1)
def unstable_chars() -> frozenset[str]:
    """Every character that can make a text not NFKC-normalised: characters NFKC changes, combining marks, and
    the second halves of canonical compositions (which compose with the character before them, e.g. a Hangul
    vowel or a voiced-sound mark)."""
    composes: set[int] = set()
    flagged: set[str] = set()
    for ch in all_chars():
        decomposition = unicodedata.decomposition(ch)
        if decomposition and not decomposition.startswith("<"):
            parts = decomposition.split()
            if len(parts) == 2:
                composes.add(int(parts[1], 16))
        if unicodedata.normalize("NFKC", ch) != ch or unicodedata.combining(ch):
            flagged.add(ch)
    composes |= set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))  # Hangul jamo that compose
    return frozenset(flagged | {chr(c) for c in composes})


def _simple_fold(ch: str) -> str:
    folded = ch.casefold()
    return folded if len(folded) == 1 else ch


# Characters NFKC maps to one other character on their own, whatever stands around them (none of them, nor what
# they map to, combines with a neighbour): full-width ASCII, the ideographic space, half-width katakana (not the
# half-width voiced-sound marks, which compose with the kana before them), super- and subscript digits. A text
# whose only NFKC-unstable characters are these needs no copy: a search pattern takes them as alternatives
# (``[aAａＡ]``) and a regex reads the text through ``translate``. They are most of what NFKC changes in real
# Japanese harness data (full-width punctuation in judge prompts, ² and ₂ in answers).
LOCAL_RANGES = ((0xFF01, 0xFF5E), (0x3000, 0x3000), (0xFF61, 0xFF9D), (0x00B2, 0x00B3), (0x00B9, 0x00B9),
                (0x2070, 0x2070), (0x2074, 0x2079), (0x2080, 0x2089))


@lru_cache(maxsize=1)
def case_tables():
    """(the characters whose texts get a copy, the local characters -> their lower(NFKC), and twice lower(NFKC)
    character -> every uncopied character with that lower(NFKC), for those not only themselves: without and with
    the local characters).

    Copied: ``unstable_chars()`` except the local ones (``LOCAL_RANGES``), and the few stable characters whose
    case-folding orbit differs from their lower case's (``İ``, ``ẞ``, Greek with iota subscript, ...), so that a
    regex with ``(?i)`` means the same on the original as on the lowered copy."""
    unstable = unstable_chars()
    chars = all_chars()
    lows = lower_all(chars)
    local: dict[str, str] = {}
    for a, b in LOCAL_RANGES:
        for c in map(chr, range(a, b + 1)):
            image = unicodedata.normalize("NFKC", c)
            if len(image) == 1 and image not in unstable:
                local[c] = lower_all([image])[0]
    copied = (set(unstable) - set(local)) | {
        c for c, low in zip(chars, lows) if low != c and c not in unstable and _simple_fold(c) != _simple_fold(low)}
    key = {c: local.get(c, low) for c, low in zip(chars, lows) if c not in copied}  # lower(NFKC(c))
    tables = []
    for with_local in (False, True):
        pre: dict[str, set[str]] = {}
        for c, k in key.items():
            if k != c and (with_local or c not in local):
                pre.setdefault(k, set()).add(c)
        for k, found in pre.items():
            if key.get(k) == k:
                found.add(k)
        tables.append({k: frozenset(v) for k, v in pre.items()})
    return frozenset(copied), local, tables[0], tables[1]


def built_classes() -> dict[str, str]:
    """The three classes an import needs, computed from the rules above (``lib/search_classes.py`` holds them as
    generated for the pinned Unicode data; ``scripts/gen_search_classes.py`` writes that file from this)."""
    copied, local = case_tables()[:2]
    return {"COPY": "[" + _ranges(sorted(ord(c) for c in copied)) + "]",
            "MARKED": "[" + _ranges(sorted(ord(c) for c in copied | set(local))) + "]",
            "UNSTABLE": "[" + _ranges(sorted(ord(c) for c in unstable_chars())) + "]"}


def built_tables() -> dict:
    """What a search reads of ``case_tables`` besides the COPY class, as ``lib/search_classes.py`` holds it:
    ``LOCAL`` (local character -> its lower(NFKC)) and the two tables of alternatives, ``CASES`` and ``CASES_LOCAL``
    (lower(NFKC) character -> the characters without a copy that have it, as one sorted string)."""
    _, local, plain, with_local = case_tables()
    return {"LOCAL": dict(local), "CASES": {k: "".join(sorted(v)) for k, v in sorted(plain.items())},
            "CASES_LOCAL": {k: "".join(sorted(v)) for k, v in sorted(with_local.items())}}


def _generated():
    """``lib/search_classes.py`` when it was made from this process's Unicode data (Python's for NFKC, pyarrow's
    utf8proc for lower case), else None."""
    import importlib.metadata

    from lib import search_classes as generated

    try:
        same = (generated.UNIDATA_VERSION == unicodedata.unidata_version
                and generated.PYARROW_VERSION == importlib.metadata.version("pyarrow"))
    except importlib.metadata.PackageNotFoundError:
        same = False
    return generated if same else None


@lru_cache(maxsize=1)
def classes_in_use() -> dict[str, str]:
    """COPY, MARKED and UNSTABLE as this process uses them: the generated ones when they were made from this
    process's Unicode data, else ``built_classes()`` (cached; ``classes_in_use.cache_clear()`` forgets them)."""
    # Building the tables takes ~0.35 s (every character through pyarrow), a seventh of an import of 100k
    # judgments, and they stay in memory: an import reads the generated classes instead, when they were made from
    # the same Unicode data (Python's for NFKC, pyarrow's utf8proc for lower case) as this process has.
    generated = _generated()
    if generated is not None:
        return {"COPY": generated.COPY, "MARKED": generated.MARKED, "UNSTABLE": generated.UNSTABLE}
    return built_classes()


_RANGE = re.compile(r"\\x\{([0-9A-F]+)\}(?:-\\x\{([0-9A-F]+)\})?")


@lru_cache(maxsize=1)
def query_tables():
    """``case_tables()`` as a search reads them: from the generated file when it was made from this process's
    Unicode data (the copied characters are its COPY class), else built. Building them cost the first search of
    every server process ~0.5 CPU-s (every character through NFKC and pyarrow's lower case); reading them, a few
    milliseconds. Cached; ``query_tables.cache_clear()`` forgets them."""
    generated = _generated()
    if generated is None:
        return case_tables()
    copied = frozenset(chr(c) for a, b in _RANGE.findall(generated.COPY)
                       for c in range(int(a, 16), int(b or a, 16) + 1))
    return (copied, dict(generated.LOCAL), {k: frozenset(v) for k, v in generated.CASES.items()},
            {k: frozenset(v) for k, v in generated.CASES_LOCAL.items()})


def copy_class() -> str:
    """An RE2 character class of the characters whose texts get a normalised copy (see ``case_tables``)."""
    return classes_in_use()["COPY"]


def marked_class() -> str:
    """The characters that give a text a non-NULL norm: copied or local ones (every NFKC-unstable character)."""
    return classes_in_use()["MARKED"]


@lru_cache(maxsize=1)
def local_class() -> str:
    """An RE2 character class of the local characters (``LOCAL_RANGES``) a text without a copy may hold."""
    return "[" + _ranges(sorted(ord(c) for c in query_tables()[1])) + "]"


@lru_cache(maxsize=1)
def local_translation() -> tuple[str, str]:
    """(from, to) for DuckDB's ``translate``: each local character to its lower(NFKC)."""
    local = query_tables()[1]
    return "".join(local), "".join(local.values())


def unstable_class() -> str:
    """The class of characters NFKC may change (a subset of ``marked_class``): the texts ``normalise`` runs NFKC on."""
    return classes_in_use()["UNSTABLE"]


_CLASS_SPECIAL = re.compile(r"[\\\]\[^-]")


def stable_match(needle: str, local: bool = False) -> tuple[str, str | None]:
    """How to find a normalised needle in a text without a copy exactly as ``contains`` finds it in that text's
    lower(NFKC): ``("regex", pattern)``, each character the set of characters whose lower(NFKC) it is (with the
    local ones when ``local``: texts whose norm is ''); ``("contains", needle)`` when every such set is the
    character alone; ``("never", None)`` when the needle holds a character no such text holds (a lone combining
    mark, ...). Without local characters a pattern is a case-folded literal (``[Aa][Bb]12[Cc]``), which RE2 finds
    as fast as ``contains``; alternatives of several bytes (``[AaＡａ]``) make it several times slower."""
    copied, _, plain, with_local = query_tables()
    pre = with_local if local else plain
    parts, cased = [], False
    for ch in needle:
        chars = pre.get(ch)
        if chars is None:
            if ch in copied:
                return "never", None
            parts.append(re.escape(ch))
            continue
        if not chars:
            return "never", None
        cased = True
        parts.append("[" + "".join(_CLASS_SPECIAL.sub(lambda m: "\\" + m.group(0), c) for c in sorted(chars)) + "]")
    return ("regex", "".join(parts)) if cased else ("contains", needle)


def normalise(texts):
    """lower(NFKC(text)) of a pyarrow string array, computed by pyarrow (utf8proc) for index and query alike.
    NFKC runs only on the texts that hold an unstable character: for every other text it is the identity."""
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


def _has_table(cur, name: str) -> bool:
    return bool(cur.execute("SELECT 1 FROM information_schema.tables WHERE table_name = ? "
                            "AND table_catalog = current_database()", [name]).fetchone())


def mark_expression(column: str) -> str:
    """A text's norm before any copy: ``''`` when it holds a marked character, else NULL (stable). An INSERT that
    reads the texts anyway computes it in the same pass, in parallel with the parsing (the importer's fast path,
    inside ``marker(cur)``), and tells ``index_new_sources`` so (``marked``)."""
    return f"CASE WHEN {_marked(column)} THEN '' END"


MARK_UDF = "judgelens_search_marked"


def _marked(column: str) -> str:
    return f"{MARK_UDF}({column})"


def holds_marked(texts):
    """True where a text of a pyarrow string array holds a character of ``marked_class()``: the scan behind
    ``mark_expression``, as a DuckDB function (``marker``; DuckDB passes no NULL to it and answers NULL for one).

    A pure-ASCII text is not scanned: no ASCII character is marked (pinned by ``tests/analysis/test_search.py``),
    and pyarrow's ASCII test costs a fraction of the RE2 scan (English judge texts are mostly pure ASCII; DuckDB's
    ``strlen <> length`` in front of the function cost more and still sent them through it). The rest goes
    through pyarrow's RE2, which runs the class about twice as fast as DuckDB's ``regexp_matches`` (the same RE2
    pattern, so the same answer): the scan is the largest cost an import adds to DuckDB's own JSON load."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(texts, pa.ChunkedArray):  # DuckDB hands each vector over as one chunk: taken as it is (combining
        texts = texts.chunk(0) if texts.num_chunks == 1 else texts.combine_chunks()  # copied every text)
    other = pc.invert(pc.string_is_ascii(texts))
    n_other = pc.sum(other).as_py() or 0
    if n_other == 0:
        return other  # all false
    if n_other == len(texts):
        return pc.match_substring_regex(texts, marked_class())
    found = pc.match_substring_regex(pc.filter(texts, other), marked_class())
    return pc.replace_with_mask(other, other, found)


@contextmanager
def marker(cur):
    """``mark_expression`` usable on ``cur`` inside the block: ``holds_marked`` registered as a DuckDB function
    (removed after). DuckDB streams the texts through it a vector at a time, from each of its threads."""
    import duckdb

    _register(cur, MARK_UDF, holds_marked, "BOOLEAN")
    try:
        yield
    except BaseException:
        try:  # a statement that failed aborted the transaction: DuckDB refuses the removal until its ROLLBACK
            cur.remove_function(MARK_UDF)
        except duckdb.Error:
            pass  # registered anew (``_register`` removes it first) by the next ``marker``
        raise
    cur.remove_function(MARK_UDF)


def _register(cur, name: str, fn, returns: str) -> None:
    import duckdb

    try:
        cur.remove_function(name)
    except (duckdb.InvalidInputException, duckdb.CatalogException):
        pass
    cur.create_function(name, fn, ["VARCHAR"], returns, type="arrow", side_effects=False)


def index_new_sources(cur, *, marked=()) -> None:
    """Bring the index up to date with the sources table, inside the caller's transaction: questions, references,
    answers, rationales and judge prompts of every source not in ``search_sources`` (a new source, or one whose
    rows changed: ``forget_sources``). ``marked``: sources whose texts got their ``mark_expression`` when inserted
    (only their copies are left to make)."""
    if not _has_table(cur, "search_text"):
        return
    cur.execute("DELETE FROM search_text WHERE source_id NOT IN (SELECT source_id FROM sources)")
    cur.execute("DELETE FROM search_sources WHERE source_id NOT IN (SELECT source_id FROM sources)")
    new = [r[0] for r in cur.execute(
        "SELECT source_id FROM sources WHERE source_id NOT IN (SELECT source_id FROM search_sources) "
        "ORDER BY source_id").fetchall()]
    if new:
        done = set(marked)
        _index(cur, new, [s for s in new if s not in done])
        cur.execute("INSERT INTO search_sources SELECT unnest($new)", {"new": new})


def forget_sources(cur, source_ids) -> None:
    """Mark these existing sources as not indexed, inside the transaction that changed their rows (a re-judge
    batch's later writes, a resumed batch, a regenerated run written again): the next ``index_new_sources`` indexes
    them again whole, as it does a new source. A source is in ``search_sources`` only while its indexed texts are
    those of its rows; every other source is left as it is (re-indexing every re-judge and regenerated source at
    every write cost a time growing with the square of their number)."""
    ids = sorted({int(i) for i in source_ids})
    if not ids or not _has_table(cur, "search_sources"):
        return
    if cur.execute("SELECT EXISTS (SELECT 1 FROM search_sources WHERE list_contains($ids, source_id))",
                   {"ids": ids}).fetchone()[0]:  # as in ``lib.store.scores.sources_changed``
        cur.execute("DELETE FROM search_sources WHERE list_contains($ids, source_id)", {"ids": ids})


def unindexed(cur) -> int:
    """How many sources still wait for the index (stores made before search, or before its current version)."""
    return cur.execute("SELECT count(*) FROM sources WHERE source_id NOT IN (SELECT source_id FROM search_sources)"
                       ).fetchone()[0]


def _index(cur, new: list[int], to_mark: list[int]) -> None:
    # Two steps per text column: mark (a scan of every text of the sources in ``to_mark``: RE2 over the marked
    # class, ``holds_marked``, the cost an import pays), then copy (only the few marked texts holding a character of
    # the copy class go through ``normalise``). Both touch only rows whose norm says they are not done yet, so
    # running them again (a re-judge source growing while its batch runs) changes nothing already indexed.
    with _normaliser(cur) as udf, marker(cur):
        for table, column, norm in COLUMNS.values():
            if to_mark:
                cur.execute(f"UPDATE {table} SET {norm} = '' WHERE list_contains($new, source_id) AND {norm} IS NULL "
                            f"AND {_marked(column)}", {"new": to_mark})
            copy = f"list_contains($new, source_id) AND {norm} = '' AND regexp_matches({column}, $copy)"
            params = {"new": new, "copy": copy_class()}
            if cur.execute(f"SELECT EXISTS (SELECT 1 FROM {table} WHERE {copy})", params).fetchone()[0]:
                cur.execute(f"UPDATE {table} SET {norm} = {udf()}({column}) WHERE {copy}", params)
        cur.execute("DELETE FROM search_text WHERE list_contains($new, source_id)", {"new": new})
        for select in _SELECTS.values():
            rows = f"FROM ({select}) WHERE text IS NOT NULL AND list_contains($new, source_id)"
            if cur.execute(f"SELECT EXISTS (SELECT 1 {rows})", {"new": new}).fetchone()[0]:
                cur.execute(f"INSERT INTO search_text SELECT *, {udf()}(text) {rows}", {"new": new})


@contextmanager
def _normaliser(cur):
    """``udf()``: the name of ``normalise`` as a DuckDB function, registered at its first use (most imports make
    no copy) and removed after. DuckDB streams the texts through it a vector at a time, so no table is held in
    Python whole."""
    registered = []

    def udf() -> str:
        if not registered:
            _register(cur, UDF, normalise, "VARCHAR")
            registered.append(UDF)
        return UDF

    try:
        yield udf
    finally:
        if registered:
            cur.remove_function(UDF)
