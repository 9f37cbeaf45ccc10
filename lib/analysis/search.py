"""Full-text search over everything judges saw and wrote: questions, answers, references, rationales, prompts.

Matching: case-insensitive substring by default, after Unicode NFKC normalisation of both sides (full-width
``ｐｙｔｈｏｎ`` finds ``Python``, ``１０`` finds ``10``); no word tokenisation (Japanese has no spaces). With
``regex=True`` the pattern is an RE2 regular expression matched case-insensitively against the normalised
text (the pattern itself is NFKC-normalised, not lower-cased, so ``\\D`` keeps its meaning).

It scans ``search_text`` (see ``lib.search_index``): one row per record (one question turn, one answer turn,
one reference turn, one judgment's rationale, one judgment's rendered prompt). ``count`` counts records, not
occurrences.

Filters combine with AND. Filters about a judgment (judge, score range, parse status) apply to a rationale or
prompt record directly; an answer, question or reference record matches them when some judgment of its item
(bench, question, turn, and model for answers) does. ``disagree_min`` keeps items whose judges' item scores
(``item_scores``) span at least that much; ``flags`` keeps items that a stored-data flag (``lib.analysis.flags``)
found.

Results come in stored order (import order), so pages are stable: page n of a search is rows
[n * size, (n + 1) * size) of the same order.
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, replace

import pandas as pd

from lib.errors import UsageError
from lib.search_index import FIELDS, index_new_sources, normalise_query
from lib.store import Store

RESULT_COLUMNS = ["field", "bench", "question_id", "turn", "model", "judge", "sample", "score", "snippet",
                  "harness", "parse_status"]
JUDGMENT_FIELDS = ("rationale", "prompt")
PARSE_STATUSES = ("ok", "not_parsed", "api_error", "out_of_range")
SNIPPET_CHARS = 60
HIT_OPEN, HIT_CLOSE = "«", "»"
POINT_LOOKUPS = 200  # up to this many texts are fetched by rowid ranges (~8 ms per range at 1M rows)


@dataclass(frozen=True)
class SearchQuery:
    """What to find. Empty ``text`` matches every record the filters keep."""

    text: str = ""
    fields: tuple[str, ...] = FIELDS
    regex: bool = False
    bench: str | None = None
    harness: str | None = None
    judges: tuple[str, ...] = ()
    model: str | None = None
    category: str | None = None
    turn: int | None = None
    score_min: float | None = None
    score_max: float | None = None
    parse_status: str | None = None
    flags: tuple[str, ...] = ()
    disagree_min: float | None = None

    def checked(self) -> "SearchQuery":
        fields = tuple(self.fields) or FIELDS
        unknown = [f for f in fields if f not in FIELDS]
        if unknown:
            raise UsageError(f"Unknown field(s) {', '.join(unknown)}; search in: {', '.join(FIELDS)}.")
        if self.parse_status is not None and self.parse_status not in PARSE_STATUSES:
            raise UsageError(f"Unknown parse status {self.parse_status!r}; one of {', '.join(PARSE_STATUSES)}.")
        if self.regex and self.text:
            try:
                re.compile(self.text)
            except re.error as exc:
                raise UsageError(f"Not a valid regular expression: {self.text!r} ({exc}).") from exc
        return replace(self, fields=fields, judges=tuple(self.judges), flags=tuple(self.flags))


def ensure_index(store: Store) -> None:
    """Index sources a writer left unindexed (stores made before search existed). Cheap when up to date."""
    with store.read() as cur:
        stale = cur.execute("SELECT count(*) FROM sources WHERE source_id NOT IN "
                            "(SELECT source_id FROM search_sources)").fetchone()[0]
    if stale:
        store.transaction(index_new_sources)


def _where(cur, q: SearchQuery) -> tuple[str, dict]:
    conditions, params = [], {}
    # constants, not a list parameter: DuckDB prunes row groups of other fields by their min/max only then
    conditions.append("s.field IN (" + ", ".join(f"'{f}'" for f in q.fields) + ")")
    if q.text:
        if q.regex:
            conditions.append("regexp_matches(s.norm, $pattern)")
            params["pattern"] = "(?i)" + unicodedata.normalize("NFKC", q.text)
        else:
            conditions.append("contains(s.norm, $needle)")
            params["needle"] = normalise_query(q.text)
    for column in ("bench", "harness", "model"):
        value = getattr(q, column)
        if value is not None:
            conditions.append(f"s.{column} = ${column}")
            params[column] = value
    if q.turn is not None:
        conditions.append("s.turn = $turn")
        params["turn"] = int(q.turn)
    if q.category is not None:
        conditions.append("(s.bench, s.question_id) IN (SELECT (bench, question_id) FROM current_questions "
                          "WHERE category = $category)")
        params["category"] = q.category
    judgment = []  # conditions on a judgment row j
    if q.judges:
        judgment.append("list_contains($judges, {a}.judge)")
        params["judges"] = list(q.judges)
    if q.score_min is not None:
        judgment.append("{a}.score >= $score_min")
        params["score_min"] = float(q.score_min)
    if q.score_max is not None:
        judgment.append("{a}.score <= $score_max")
        params["score_max"] = float(q.score_max)
    if q.parse_status is not None:
        judgment.append("{a}.parse_status = $parse_status")
        params["parse_status"] = q.parse_status
    if judgment:
        direct = " AND ".join(c.format(a="s") for c in judgment)
        via = " AND ".join(c.format(a="j") for c in judgment)
        conditions.append(f"""CASE WHEN s.field IN ('rationale', 'prompt') THEN ({direct})
            ELSE (s.bench, s.question_id, s.turn, coalesce(s.model, '')) IN (
                SELECT (j.bench, j.question_id, j.turn, CASE WHEN s.field = 'answer' THEN j.model ELSE '' END)
                FROM single_judgments j WHERE {via}) END""")
    if q.disagree_min is not None:
        conditions.append(_item_semijoin(
            "SELECT bench, question_id, turn, model FROM item_scores WHERE score IS NOT NULL "
            "GROUP BY ALL HAVING count(DISTINCT judge) >= 2 AND max(score) - min(score) >= $disagree_min"))
        params["disagree_min"] = float(q.disagree_min)
    return " AND ".join(conditions), params


def _item_semijoin(items_sql: str) -> str:
    """Records whose item is in items_sql (bench, question_id, turn, model); question and reference records
    by bench, question and turn (they belong to every model's item)."""
    return f"""CASE WHEN s.model IS NULL THEN (s.bench, s.question_id, s.turn) IN (
                   SELECT (bench, question_id, turn) FROM ({items_sql}))
               ELSE (s.bench, s.question_id, s.turn, s.model) IN (
                   SELECT (bench, question_id, turn, model) FROM ({items_sql})) END"""


def _flag_items(store: Store, q: SearchQuery) -> pd.DataFrame:
    from lib.analysis.flags import all_flags

    found = all_flags(store, bench=q.bench, only=list(q.flags))
    frames = [df[["bench", "question_id", "turn", "model"]] for df in found.values() if not df.empty]
    if not frames:
        return pd.DataFrame({"bench": pd.Series(dtype=str), "question_id": pd.Series(dtype=str),
                             "turn": pd.Series(dtype="int64"), "model": pd.Series(dtype=str)})
    out = pd.concat(frames).drop_duplicates()
    out["question_id"] = out["question_id"].astype(str)
    out["turn"] = out["turn"].astype("int64")
    return out


def _run(store: Store, q: SearchQuery, select: str, tail: str = "", extra_params: dict | None = None):
    q = q.checked()
    ensure_index(store)
    flagged = _flag_items(store, q) if q.flags else None
    with store.read() as cur:
        where, params = _where(cur, q)
        if flagged is not None:
            cur.register("_flagged_items", flagged)
            where += " AND " + _item_semijoin("SELECT bench, question_id, turn, model FROM _flagged_items")
        params.update(extra_params or {})
        try:
            res = cur.execute(f"SELECT {select} FROM search_text s WHERE {where} {tail}", params)
            columns = [d[0] for d in res.description]
            return pd.DataFrame(res.fetchall(), columns=columns)
        except Exception as exc:  # an RE2 pattern Python's re accepted
            import duckdb

            if isinstance(exc, duckdb.InvalidInputException) and q.regex:
                raise UsageError(f"Not a valid regular expression: {q.text!r} ({exc}).") from exc
            raise
        finally:
            if flagged is not None:
                cur.unregister("_flagged_items")


def count(store: Store, q: SearchQuery) -> int:
    """How many records match (one per question turn, answer turn, reference turn, rationale, prompt)."""
    return int(_run(store, q, "count(*) AS n").iloc[0, 0])


def count_by_field(store: Store, q: SearchQuery) -> dict[str, int]:
    df = _run(store, q, "s.field, count(*) AS n", "GROUP BY s.field")
    return {f: int(n) for f, n in zip(df["field"], df["n"])}


def search(store: Store, q: SearchQuery, *, limit: int = 50, offset: int = 0) -> pd.DataFrame:
    """One page of matching records in stored order, each with a snippet around its first hit (the hit
    between « and »; newlines shown as ⏎). Columns: RESULT_COLUMNS."""
    q = q.checked()
    page = _run(store, q, "s.source_id, s.field, s.harness, s.bench, s.question_id, s.turn, s.model, s.sample, "
                          "s.judge, s.score, s.parse_status, s.norm",
                "LIMIT $limit OFFSET $offset", {"limit": int(limit), "offset": int(offset)})
    if page.empty:
        return pd.DataFrame(columns=RESULT_COLUMNS)
    originals = _originals(store, page)
    needle = _needle(store, q)
    snippets = []
    for row in page.itertuples(index=False):
        candidates = originals.get(_key(row.source_id, row.field, row.bench, row.question_id, row.turn,
                                        row.model, row.sample, row.judge), [])
        text = _pick(candidates, row.norm)
        snippets.append(snippet(text, needle, regex=q.regex))
    page["snippet"] = snippets
    page.loc[~page["field"].isin(JUDGMENT_FIELDS), "judge"] = None
    return page[RESULT_COLUMNS].reset_index(drop=True)


def _needle(store: Store, q: SearchQuery) -> str:
    if not q.text or q.regex:
        return q.text
    return normalise_query(q.text)


def _key(source_id, fld, bench, question_id, turn, model, sample, judge) -> tuple:
    def plain(v):
        return None if v is None or (isinstance(v, float) and v != v) else v
    sample = plain(sample)
    return (int(source_id), fld, bench, question_id, int(turn), plain(model),
            None if sample is None else int(sample), plain(judge))


_ORIGINAL_SQL = {
    "question": """SELECT x.source_id, 'question' AS field, x.bench, x.question_id, t.turn, NULL AS model,
                          NULL AS sample, NULL AS judge, t.text
                   FROM questions x, LATERAL (SELECT unnest(x.turns) AS text, unnest(range(1, len(x.turns) + 1)) AS turn) t""",
    "answer": """SELECT source_id, 'answer', bench, question_id, turn, model, sample, NULL, text FROM answers""",
    "reference": """SELECT source_id, 'reference', bench, question_id, turn, NULL, NULL, judge, text
                    FROM reference_answers""",
    "rationale": """SELECT source_id, 'rationale', bench, question_id, turn, model, sample, judge, rationale
                    FROM single_judgments""",
    "prompt": """SELECT source_id, 'prompt', bench, question_id, turn, model, sample, judge, judge_prompt
                 FROM single_judgments""",
}


_LOOKUP = {  # table, key columns (beyond source_id, question_id, turn), text column
    "answer": ("answers", ("model", "sample"), "text"),
    "rationale": ("single_judgments", ("model", "sample", "judge"), "rationale"),
    "prompt": ("single_judgments", ("model", "sample", "judge"), "judge_prompt"),
}


def _in_list(column: str, values, params: dict) -> str:
    names = []
    for v in sorted(set(values)):
        names.append(f"$p{len(params)}")
        params[names[-1][1:]] = v
    return f"{column} IN ({', '.join(names)})"


def _rowid_ranges(rowids: list[int], gap: int = 256) -> list[tuple[int, int]]:
    """Sorted rowids as few BETWEEN ranges as possible without reading more than ``gap`` unwanted rows in a row:
    a page of neighbours is one range lookup, a page of scattered hits one lookup each."""
    ranges: list[list[int]] = []
    for r in rowids:
        if ranges and r - ranges[-1][1] <= gap:
            ranges[-1][1] = r
        else:
            ranges.append([r, r])
    return [(a, b) for a, b in ranges]


def _originals(store: Store, page: pd.DataFrame) -> dict[tuple, list[str]]:
    """The original texts of a page's records, by record key.

    Answers and judgments (the big tables) in two steps in one snapshot: the page's keys as constant IN lists over
    the key columns only (cheap), then the matching rows' text by ``rowid BETWEEN a AND b`` ranges (neighbours
    share one), the row lookup DuckDB answers without a scan (an IN list of rowids or a join scans the text
    column: seconds at 1M rows).
    Questions and references (small tables): one query."""
    out: dict[tuple, list[str]] = {}
    with store.read() as cur:
        for fld, rows in page.groupby("field"):
            keys = {_key(*k) for k in rows[["source_id", "field", "bench", "question_id", "turn", "model", "sample",
                                            "judge"]].itertuples(index=False, name=None)}
            if fld not in _LOOKUP:
                params: dict = {}
                where = " AND ".join(_in_list(f"o.{c}", [(int(v) if c != "question_id" else v) for v in rows[c]],
                                              params) for c in ("source_id", "question_id", "turn"))
                for *key, text in cur.execute(f"SELECT o.* FROM ({_ORIGINAL_SQL[fld]}) o WHERE {where}",
                                              params).fetchall():
                    out.setdefault(_key(*key), []).append(text or "")
                continue
            table, extra, text_column = _LOOKUP[fld]
            params = {}
            conditions = [_in_list("source_id", [int(v) for v in rows["source_id"]], params),
                          _in_list("question_id", rows["question_id"], params),
                          _in_list("turn", [int(v) for v in rows["turn"]], params),
                          _in_list("model", rows["model"], params)]
            if "judge" in extra:
                conditions.append(_in_list("judge", rows["judge"], params))
            judge = "judge" if "judge" in extra else "NULL"
            found = cur.execute(
                f"SELECT rowid, source_id, '{fld}', bench, question_id, turn, model, sample, {judge} FROM {table} "
                f"WHERE {' AND '.join(conditions)}", params).fetchall()
            wanted = [(rid, _key(*key)) for rid, *key in found if _key(*key) in keys]
            if not wanted:
                continue
            if len(wanted) <= POINT_LOOKUPS:
                ranges = _rowid_ranges(sorted(int(r) for r, _ in wanted))
                texts = cur.execute(" UNION ALL ".join(
                    f"SELECT rowid AS rid, {text_column} FROM {table} WHERE rowid BETWEEN {a} AND {b}"
                    for a, b in ranges)).fetchall()
            else:  # many rows (an export): one scan beats thousands of lookups
                cur.register("_wanted_rowids", pd.DataFrame({"rid": [int(r) for r, _ in wanted]}))
                try:
                    texts = cur.execute(f"SELECT rowid, {text_column} FROM {table} "
                                        "WHERE rowid IN (SELECT rid FROM _wanted_rowids)").fetchall()
                finally:
                    cur.unregister("_wanted_rowids")
            by_rid = dict(texts)
            for rid, key in wanted:
                out.setdefault(key, []).append(by_rid.get(rid) or "")
    return out


def _pick(candidates: list[str], norm: str) -> str:
    """The original whose normal form is the stored one (several when an item was judged twice in one file)."""
    if len(candidates) == 1:
        return candidates[0]
    for text in candidates:
        if unicodedata.normalize("NFKC", text).lower() == norm:
            return text
    return candidates[0] if candidates else norm


def _char_map(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The text normalised piece by piece (a character with the combining marks after it), and for each
    normalised character the (start, end) of the original piece it came from."""
    if unicodedata.is_normalized("NFKC", text):
        lowered = text.lower()
        if len(lowered) == len(text):  # the usual case: positions are the original's
            return lowered, _Identity(len(text))
    pieces: list[list[int]] = []
    for i, ch in enumerate(text):
        first = unicodedata.normalize("NFKC", ch)[:1]
        if pieces and first and (unicodedata.combining(first) or 0x1160 <= ord(first) <= 0x11FF):
            pieces[-1][1] = i + 1
        else:
            pieces.append([i, i + 1])
    parts, spans = [], []
    for a, b in pieces:
        n = unicodedata.normalize("NFKC", text[a:b]).lower()
        parts.append(n)
        spans.extend([(a, b)] * len(n))
    return "".join(parts), spans


class _Identity:
    """Spans of an unchanged text: character i came from (i, i + 1)."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int) -> tuple[int, int]:
        return (i, i + 1)


def snippet(text: str | None, needle: str, *, regex: bool = False, around: int = SNIPPET_CHARS) -> str:
    """Plain text around the first hit, the hit marked «like this»; never markup. Newlines become ⏎."""
    text = text or ""
    start = end = None
    if needle:
        norm, index = _char_map(text)
        if regex:
            try:
                m = re.search(unicodedata.normalize("NFKC", needle), norm, flags=re.IGNORECASE)
            except re.error:
                m = None
            span = (m.start(), m.end()) if m and m.end() > m.start() else None
        else:
            i = norm.find(needle)
            span = (i, i + len(needle)) if i >= 0 else None
        if span and index:
            start, end = index[span[0]][0], index[span[1] - 1][1]
    if start is None:
        head = text[: 2 * around]
        return _flat(head) + ("…" if len(text) > len(head) else "")
    a, b = max(0, start - around), min(len(text), end + around)
    return (("…" if a > 0 else "") + _flat(text[a:start]) + HIT_OPEN + _flat(text[start:end]) + HIT_CLOSE
            + _flat(text[end:b]) + ("…" if b < len(text) else ""))


def _flat(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\n", " ⏎ ")


def facets(store: Store) -> dict[str, list]:
    """The values the filters offer: benches, harnesses, judges, models, categories."""
    with store.read() as cur:
        def values(sql):
            return [r[0] for r in cur.execute(sql).fetchall()]
        return {
            "bench": values("SELECT DISTINCT bench FROM single_judgments UNION SELECT DISTINCT bench FROM questions "
                            "ORDER BY 1"),
            "harness": values("SELECT DISTINCT harness FROM sources ORDER BY 1"),
            "judge": values("SELECT DISTINCT judge FROM item_scores ORDER BY 1"),
            "model": values("SELECT DISTINCT model FROM single_judgments ORDER BY 1"),
            "category": values("SELECT DISTINCT category FROM current_questions WHERE category IS NOT NULL ORDER BY 1"),
        }
