"""Full-text search over everything judges saw and wrote: questions, answers, references, rationales, prompts.

Matching: case-insensitive substring by default, after Unicode NFKC normalisation of both sides (full-width
``ｐｙｔｈｏｎ`` finds ``Python``, ``１０`` finds ``10``); no word tokenisation (Japanese has no spaces). With
``regex=True`` the pattern is an RE2 regular expression matched case-insensitively against the normalised
text (the pattern itself is NFKC-normalised, not lower-cased, so ``\\D`` keeps its meaning).

A record is one question turn, one answer turn, one reference turn, one judgment's rationale or one judgment's
rendered prompt; ``count`` counts records, not occurrences. Answers, rationales and prompts are scanned in their own
tables: a text NFKC leaves alone (most) is matched on the original by an exact pattern, a text NFKC changes on its
lowered copy (``lib.search_index``), and the original text is then at hand for the snippet. Question and reference
turns are scanned in ``search_text``.

Filters combine with AND. Filters about a judgment (judge, score range, parse status) apply to a rationale or
prompt record directly; an answer, question or reference record matches them when some judgment of its item
(bench, question, turn, and model for answers) does. ``disagree_min`` keeps items whose judges' item scores
(``item_scores``) span at least that much; ``flags`` keeps items that a stored-data flag (``lib.analysis.flags``)
found.

Results come by field (``FIELDS`` order), then in stored order (import order), so pages are stable: page n of a
search is rows [n * size, (n + 1) * size) of the same order.
"""
from __future__ import annotations

import re
import unicodedata
from contextlib import contextmanager
from dataclasses import dataclass, replace

import pandas as pd

from lib.errors import UsageError
from lib.search_index import FIELDS, index_new_sources, local_translation, normalise_query, stable_match, unindexed
from lib.store import Store

RESULT_COLUMNS = ["field", "bench", "question_id", "turn", "model", "judge", "sample", "score", "snippet",
                  "harness", "parse_status"]
JUDGMENT_FIELDS = ("rationale", "prompt")
MODEL_FIELDS = ("answer", "rationale", "prompt")
PARSE_STATUSES = ("ok", "not_parsed", "api_error", "out_of_range")
SNIPPET_CHARS = 60
HIT_OPEN, HIT_CLOSE = "«", "»"


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
    """Index what is not indexed yet (stores made before search or before its current index; an import indexes
    what it brings). Cheap when up to date."""
    with store.read() as cur:
        stale = unindexed(cur)
    if stale:
        store.transaction(index_new_sources)


# Per field: the rows a search reads (alias s), with the columns of a result and the original text.
_FROM = {
    "question": """(SELECT source_id, field, harness, bench, question_id, turn, NULL::VARCHAR AS model,
                           NULL::INTEGER AS sample, NULL::VARCHAR AS judge, NULL::DOUBLE AS score,
                           NULL::VARCHAR AS parse_status, text, norm
                    FROM search_text WHERE field = 'question' AND (bench, question_id, turn, text) IN (
                        -- only the text pages show: what the judges saw (issue 22), not every question file's
                        SELECT (bench, question_id, turn, text) FROM (
                            SELECT bench, question_id, unnest(range(1, len(turns) + 1))::INTEGER AS turn,
                                   unnest(turns) AS text FROM current_questions)))""",
    "reference": """(SELECT source_id, field, harness, bench, question_id, turn, NULL::VARCHAR AS model,
                            NULL::INTEGER AS sample, judge, NULL::DOUBLE AS score, NULL::VARCHAR AS parse_status,
                            text, norm
                     FROM search_text WHERE field = 'reference')""",
    "answer": """(SELECT source_id, 'answer' AS field, harness, bench, question_id, turn, model, sample,
                         NULL::VARCHAR AS judge, NULL::DOUBLE AS score, NULL::VARCHAR AS parse_status, text,
                         text_norm AS norm
                  FROM answers WHERE text IS NOT NULL)""",
    "rationale": """(SELECT source_id, 'rationale' AS field, harness, bench, question_id, turn, model, sample, judge,
                            score, parse_status, rationale AS text, rationale_norm AS norm
                     FROM single_judgments WHERE rationale IS NOT NULL)""",
    "prompt": """(SELECT source_id, 'prompt' AS field, harness, bench, question_id, turn, model, sample, judge,
                         score, parse_status, judge_prompt AS text, prompt_norm AS norm
                  FROM single_judgments WHERE judge_prompt IS NOT NULL)""",
}
COPIED_FIELDS = ("question", "reference")  # whole in search_text; the others have a norm only where NFKC changes them


def _text_condition(q: SearchQuery, field: str, params: dict) -> str | None:
    """The match: on the lowered copy where there is one, else on the original (``lib.search_index``): norm NULL
    (NFKC leaves the text alone) by a case-folded literal, norm '' (NFKC changes only local characters such as
    full-width ASCII) by a pattern with their alternatives."""
    if not q.text:
        return None
    if q.regex:
        params["pattern"] = "(?i)" + unicodedata.normalize("NFKC", q.text)
        on_norm = "regexp_matches(s.norm, $pattern)"
        if field in COPIED_FIELDS:
            return on_norm
        params["local_from"], params["local_to"] = local_translation()
        on_text = "regexp_matches(s.text, $pattern)"
        on_local = "regexp_matches(translate(s.text, $local_from, $local_to), $pattern)"
    else:
        params["needle"] = normalise_query(q.text)
        on_norm = "contains(s.norm, $needle)"
        if field in COPIED_FIELDS:
            return on_norm
        on_text, on_local = (_stable_condition(params, name, *stable_match(params["needle"], local=local))
                             for name, local in (("stable", False), ("stable_local", True)))
    return f"CASE WHEN s.norm IS NULL THEN {on_text} WHEN s.norm = '' THEN {on_local} ELSE {on_norm} END"


def _stable_condition(params: dict, name: str, kind: str, pattern: str | None) -> str:
    if kind == "contains":
        return "contains(s.text, $needle)"
    if kind == "regex":
        params[name] = pattern
        return f"regexp_matches(s.text, ${name})"
    return "false"


def _where(q: SearchQuery, field: str) -> tuple[str | None, dict]:
    """The WHERE of one field's rows, or None when the filters exclude the whole field."""
    conditions, params = [], {}
    per_item = field not in JUDGMENT_FIELDS  # judgment filters reach it through the judgments of its item
    with_model = field in MODEL_FIELDS
    if q.model is not None and not with_model:
        return None, {}  # question and reference turns belong to no model
    text = _text_condition(q, field, params)
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
    judgment = []  # conditions on a judgment row
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
    if judgment and not per_item:
        conditions.extend(c.format(a="s") for c in judgment)
    elif judgment:
        via = " AND ".join(c.format(a="j") for c in judgment)
        keys = ("bench", "question_id", "turn") + (("model",) if with_model else ())
        conditions.append(f"({', '.join('s.' + k for k in keys)}) IN (SELECT ({', '.join('j.' + k for k in keys)}) "
                          f"FROM single_judgments j WHERE {via})")
    if q.disagree_min is not None:
        conditions.append(_item_semijoin(
            "SELECT bench, question_id, turn, model FROM item_scores WHERE score IS NOT NULL "
            "GROUP BY ALL HAVING count(DISTINCT judge) >= 2 AND max(score) - min(score) >= $disagree_min", with_model))
        params["disagree_min"] = float(q.disagree_min)
    if q.flags:
        conditions.append(_item_semijoin("SELECT bench, question_id, turn, model FROM _flagged_items", with_model))
    if text is not None:
        conditions.append(text)  # last: DuckDB tests the cheap filters first
    return " AND ".join(conditions) or "true", params


def _item_semijoin(items_sql: str, with_model: bool) -> str:
    """Records whose item is in items_sql (bench, question_id, turn, model); question and reference records
    by bench, question and turn (they belong to every model's item)."""
    if with_model:
        return f"""(s.bench, s.question_id, s.turn, s.model) IN (
                   SELECT (bench, question_id, turn, model) FROM ({items_sql}))"""
    return f"""(s.bench, s.question_id, s.turn) IN (SELECT (bench, question_id, turn) FROM ({items_sql}))"""


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


@contextmanager
def _reading(store: Store, q: SearchQuery):
    """A read cursor for q's queries (with the flagged items registered when q filters by flags); an RE2 error
    becomes a UsageError."""
    ensure_index(store)
    flagged = _flag_items(store, q) if q.flags else None
    with store.read() as cur:
        if flagged is not None:
            cur.register("_flagged_items", flagged)
        try:
            yield cur
        except Exception as exc:  # an RE2 pattern Python's re accepted
            import duckdb

            if isinstance(exc, duckdb.InvalidInputException) and q.regex:
                raise UsageError(f"Not a valid regular expression: {q.text!r} ({exc}).") from exc
            raise
        finally:
            if flagged is not None:
                cur.unregister("_flagged_items")


def count_by_field(store: Store, q: SearchQuery) -> dict[str, int]:
    """Matching records per field (fields without any left out)."""
    q = q.checked()
    parts, params = [], {}
    for field in q.fields:
        where, p = _where(q, field)
        if where is not None:
            parts.append(f"SELECT '{field}' AS field, count(*) AS n FROM {_FROM[field]} s WHERE {where}")
            params.update(p)
    if not parts:
        return {}
    with _reading(store, q) as cur:
        rows = cur.execute(" UNION ALL ".join(parts), params).fetchall()
    return {f: int(n) for f, n in rows if n}


def count(store: Store, q: SearchQuery) -> int:
    """How many records match (one per question turn, answer turn, reference turn, rationale, prompt)."""
    return sum(count_by_field(store, q).values())


_PAGE_COLUMNS = ("s.source_id, s.field, s.harness, s.bench, s.question_id, s.turn, s.model, s.sample, s.judge, "
                 "s.score, s.parse_status, s.text")


def search(store: Store, q: SearchQuery, *, limit: int = 50, offset: int = 0) -> pd.DataFrame:
    """One page of matching records, each with a snippet around its first hit (the hit between « and »;
    newlines shown as ⏎). Columns: RESULT_COLUMNS.

    Order: by field (FIELDS order), then as stored in the field's table (import order), so page n of a search is
    rows [n * size, (n + 1) * size) of the same order. A field is counted only when a page starts beyond it."""
    q = q.checked()
    limit, offset = int(limit), int(offset)
    frames, want = [], limit
    with _reading(store, q) as cur:
        for field in [f for f in FIELDS if f in q.fields]:
            if want <= 0:
                break
            where, params = _where(q, field)
            if where is None:
                continue
            sql = f"FROM {_FROM[field]} s WHERE {where}"
            res = cur.execute(f"SELECT {_PAGE_COLUMNS} {sql} LIMIT {want} OFFSET {offset}", params)
            rows = res.fetchall()
            if not rows and offset:
                offset = max(0, offset - cur.execute(f"SELECT count(*) {sql}", params).fetchone()[0])
                continue
            offset = 0
            want -= len(rows)
            frames.append(pd.DataFrame(rows, columns=[d[0] for d in res.description]))
    if not frames:
        return pd.DataFrame(columns=RESULT_COLUMNS)
    page = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    needle = _needle(q)
    page["snippet"] = [snippet(text, needle, regex=q.regex) for text in page["text"]]
    page.loc[~page["field"].isin(JUDGMENT_FIELDS), "judge"] = None
    return page[RESULT_COLUMNS].reset_index(drop=True)


def _needle(q: SearchQuery) -> str:
    if not q.text or q.regex:
        return q.text
    return normalise_query(q.text)


def _lower(text: str) -> str:
    """The index's lower case (pyarrow's: one code point to one, İ -> i), not Python's (İ -> i + ◌̇)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.utf8_lower(pa.scalar(text, pa.string())).as_py()


def _char_map(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The text normalised piece by piece (a character with the combining marks after it), and for each
    normalised character the (start, end) of the original piece it came from."""
    if unicodedata.is_normalized("NFKC", text):
        return _lower(text), _Identity(len(text))  # one code point to one: positions are the original's
    pieces: list[list[int]] = []
    for i, ch in enumerate(text):
        first = unicodedata.normalize("NFKC", ch)[:1]
        if pieces and first and (unicodedata.combining(first) or 0x1160 <= ord(first) <= 0x11FF):
            pieces[-1][1] = i + 1
        else:
            pieces.append([i, i + 1])
    parts, spans = [], []
    for a, b in pieces:
        n = _lower(unicodedata.normalize("NFKC", text[a:b]))
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
