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

Limits: the text searched for is at most ``MAX_PATTERN_CHARS`` characters; every query of a search runs under a
time limit (``SEARCH_SECONDS``, or the caller's ``time_limit``): a watchdog thread interrupts the DuckDB query
(``interrupt()``) and the search raises ``SearchTooSlow`` ("This search took too long: narrow it ..."). The same
watchdog asks a ``stop_when`` callable (the app: "is this browser session still open?") and interrupts the query
as soon as it says so (``SearchCancelled``): a closed tab does not leave a search running.
"""
from __future__ import annotations

import contextvars
import math
import re
import threading
import time
import unicodedata
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, fields as dataclass_fields, replace
from typing import Callable

import duckdb
import pandas as pd

from lib.analysis import answer_features
from lib.errors import SearchCancelled, SearchTooSlow, UsageError
from lib.search_index import FIELDS, index_new_sources, local_translation, normalise_query, stable_match, unindexed
from lib.store import CONNECT_CONFIG, Store

RESULT_COLUMNS = ["field", "bench", "question_id", "turn", "model", "judge", "sample", "score", "snippet",
                  "harness", "parse_status"]
JUDGMENT_FIELDS = ("rationale", "prompt")
MODEL_FIELDS = ("answer", "rationale", "prompt")
PARSE_STATUSES = ("ok", "not_parsed", "api_error", "out_of_range")
SNIPPET_CHARS = 60  # a hit's context: characters after it; display columns before it (a wide character counts 2)
HIT_OPEN, HIT_CLOSE = "«", "»"
REGEX_HELP = ("RE2 syntax, case-insensitive, on the NFKC-normalised text: classes such as \\d, \\w, \\pL (any "
              "letter), \\p{Han}, \\p{Hiragana}, [[:alpha:]]; no lookarounds (?=…) and no backreferences \\1.")
MAX_PATTERN_CHARS = 1000  # the text (or regular expression) searched for
SEARCH_SECONDS = 30.0  # each query of a search; the caller may give another ``time_limit``
# DuckDB checks for an interrupt between chunks of 2,048 rows, and one RE2 match is never interrupted: a pattern
# whose cost per text is huge (nested counted repetitions such as (\pL.{0,30}){8}: ~17 ms per 1,000 characters,
# 378 s over the sample) would run for minutes past the time limit. Before the search, the pattern runs on a few
# stored texts; one costing more than this per 1,000 characters is refused (a plain word costs ~0.04 ms).
PATTERN_MS_PER_KCHAR = 2.0
_WATCH_EVERY_S = 0.25  # how often the watchdog asks ``stop_when``
CANCELLED_MESSAGE = "The search was stopped: the page that asked for it was closed."
_STOP: contextvars.ContextVar[Callable[[], bool] | None] = contextvars.ContextVar("search_stop", default=None)
_RE2 = threading.local()  # an in-memory DuckDB per thread: checks a pattern with the engine that will run it


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
    # what the judged answer is (lib.text_features; answer, rationale and prompt records): 0-1, characters, yes/no
    japanese_min: float | None = None
    japanese_max: float | None = None
    length_min: float | None = None
    length_max: float | None = None
    has_code: bool | None = None
    has_think: bool | None = None
    refusal: bool | None = None

    def checked(self) -> "SearchQuery":
        fields = tuple(self.fields) or FIELDS
        unknown = [f for f in fields if f not in FIELDS]
        if unknown:
            raise UsageError(f"Unknown field(s) {', '.join(unknown)}; search in: {', '.join(FIELDS)}.")
        if self.parse_status is not None and self.parse_status not in PARSE_STATUSES:
            raise UsageError(f"Unknown parse status {self.parse_status!r}; one of {', '.join(PARSE_STATUSES)}.")
        if len(self.text) > MAX_PATTERN_CHARS:
            raise UsageError(
                f"The search text is {len(self.text):,} characters long; JudgeLens searches for at most "
                f"{MAX_PATTERN_CHARS:,}. Search for something shorter (a regular expression with many alternatives: "
                "split it into several searches).", title="Search text too long")
        for name in ("score_min", "score_max", "disagree_min", "japanese_min", "japanese_max", "length_min",
                     "length_max"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                      or not math.isfinite(value)):
                raise UsageError(f"{name} is a number; got {value!r}.", title="Unusable search filter")
        if self.regex and self.text:
            check_re2(self.text)
        return replace(self, fields=fields, judges=tuple(self.judges), flags=tuple(self.flags))


def _re2_connection() -> duckdb.DuckDBPyConnection:
    """This thread's in-memory DuckDB, one worker thread: a pattern is checked, and its cost measured, by the engine
    that will run it, and all of that engine's work is done by the calling thread (``time.thread_time`` sees it)."""
    con = getattr(_RE2, "con", None)
    if con is None:
        con = _RE2.con = duckdb.connect(config={**CONNECT_CONFIG, "threads": 1})
    return con


def check_re2(pattern: str) -> None:
    """Refuse a pattern RE2 (DuckDB's regular expressions, what the search runs) cannot compile: RE2 syntax, not
    Python's (``\\pL``, ``\\p{Han}``, ``[[:alpha:]]`` work; lookarounds and backreferences do not)."""
    try:
        _re2_connection().execute("SELECT regexp_matches('', $p)",
                                  {"p": "(?i)" + unicodedata.normalize("NFKC", pattern)})
    except duckdb.Error as exc:
        reason = str(exc).removeprefix("Invalid Input Error: ")
        raise UsageError(f"Not a valid regular expression (RE2 syntax): {pattern!r} ({reason}).") from exc


@contextmanager
def stop_when(stop: Callable[[], bool]):
    """Searches run inside this block are interrupted as soon as ``stop()`` returns true (asked every 0.25 s
    from the watchdog thread): the app passes "this browser session has ended"."""
    token = _STOP.set(stop)
    try:
        yield
    finally:
        _STOP.reset(token)


class Watchdog:
    """Interrupts ``cur``'s running query when ``seconds`` have passed or ``stop()`` says so; ``reason`` says
    which. ``close()`` (always, before the cursor is closed) ends the thread: it never interrupts after."""

    def __init__(self, cur, seconds: float | None, stop: Callable[[], bool] | None):
        self.cur, self.seconds, self.stop = cur, seconds, stop
        self.reason: str | None = None
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread = None
        if seconds is not None or stop is not None:
            self._thread = threading.Thread(target=self._run, name="search-watchdog", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        deadline = None if self.seconds is None else time.monotonic() + self.seconds
        while True:
            wait = _WATCH_EVERY_S if deadline is None else max(0.0, min(_WATCH_EVERY_S, deadline - time.monotonic()))
            if self._done.wait(wait):
                return
            reason = None
            if self.stop is not None and self.stop():
                reason = "cancelled"
            elif deadline is not None and time.monotonic() >= deadline:
                reason = "timeout"
            if reason:  # and again every 0.25 s until closed: one interrupt between two queries is not lost
                while True:
                    with self._lock:
                        if self._done.is_set():
                            return
                        self.reason = self.reason or reason
                        self.cur.interrupt()
                    if self._done.wait(_WATCH_EVERY_S):
                        return

    def execute(self, sql: str, params=None):
        """``cur.execute``, refused once the search has been stopped: an interrupt that fell between two queries
        (or in Python work between them) would otherwise be lost until the next tick, and a search a little past
        its limit would run to its end."""
        if self.reason is not None:
            raise duckdb.InterruptException(f"search stopped ({self.reason}) before its next query")
        return self.cur.execute(sql, params)

    def close(self) -> None:
        with self._lock:
            self._done.set()
        if self._thread is not None:
            self._thread.join()

    def error(self) -> Exception:
        if self.reason == "cancelled":
            return SearchCancelled(CANCELLED_MESSAGE)
        return SearchTooSlow(
            f"This search took too long: narrow it. It was stopped after {self.seconds:g} s; search fewer fields, "
            "add a filter (bench, judge, model, turn, ...) or use a simpler pattern.")


def _check_pattern_cost(cur, pattern: str) -> None:
    """Refuse (``SearchTooSlow``) a regular expression too costly per character of text: see
    ``PATTERN_MS_PER_KCHAR``. Measured on up to 8 judge prompts and 8 answers (the long texts), as CPU time of this
    thread running them on a one-thread engine: a busy machine slows the wall clock, not this (a plain ``\\p{Han}+語``
    took 1.8 ms per 1,000 characters of wall time with other work on both cores, and was refused)."""
    texts = [r[0] for r in cur.execute(
        "(SELECT judge_prompt FROM single_judgments WHERE judge_prompt IS NOT NULL LIMIT 8) UNION ALL "
        "(SELECT text FROM answers WHERE text IS NOT NULL LIMIT 8)").fetchall()]
    chars = sum(len(t) for t in texts)
    if chars < 1000:
        return
    con, params = _re2_connection(), {"p": "(?i)" + unicodedata.normalize("NFKC", pattern)}
    t0 = time.thread_time()
    con.execute("SELECT regexp_matches('', $p)", params).fetchall()  # each query compiles the pattern again:
    t1 = time.thread_time()                                           # its compile time is not what is measured
    con.execute("SELECT list_transform($t, x -> regexp_matches(x, $p))", {**params, "t": texts}).fetchall()
    cost = max(0.0, (time.thread_time() - t1) - (t1 - t0)) * 1000 / (chars / 1000)
    if cost > PATTERN_MS_PER_KCHAR:
        raise SearchTooSlow(
            f"This search took too long: narrow it. Its pattern took {cost:.1f} ms per 1,000 characters of text "
            f"(at most {PATTERN_MS_PER_KCHAR:g} are allowed, a plain word takes about 0.04): it would run for "
            "minutes. Use a simpler pattern: fewer or shorter counted repetitions such as .{0,30}, fewer nested groups.")


def index_pending(store: Store) -> int:
    """How many sources wait for the search index (``ensure_index`` indexes them). Depends only on the data: a page
    may cache it per data version and call ``ensure_index`` only while it is not 0."""
    with store.read() as cur:
        return unindexed(cur)


def ensure_index(store: Store) -> None:
    """Index what is not indexed yet (stores made before search or before its current index; an import indexes
    what it brings). Cheap when up to date. On a DuckLake store, once found up to date at the data version this
    process last read, not asked again at that version: every search asked it, a statement whose catalog rounds
    cost ~0.1 s at a million judgments, and only a store made before the index has sources waiting."""
    known = store.known_data_version()
    if known is not None and _INDEXED_AT.get(store) == known:
        return
    if index_pending(store):
        store.transaction(index_new_sources)
    elif known is not None:
        _INDEXED_AT[store] = known


_INDEXED_AT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # lake store -> data version found indexed


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
    answer, answer_params = answer_features.answer_semijoin({k: getattr(q, k) for k in answer_features.FILTER_KEYS})
    if answer is not None:
        if not with_model:
            return None, {}  # question and reference turns are no model's answer
        conditions.append(answer)
        params.update(answer_params)
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
def _reading(store: Store, q: SearchQuery, time_limit: float | None = None):
    """A read cursor's ``execute`` for q's queries (with the flagged items registered when q filters by flags),
    watched by a ``Watchdog`` (what the block gets): past ``time_limit`` seconds (default ``SEARCH_SECONDS``; 0 or
    less: none) or once the ``stop_when`` callable says so, the running query is interrupted, no further one starts
    and ``SearchTooSlow`` / ``SearchCancelled`` is raised. An RE2 error becomes a UsageError."""
    ensure_index(store)
    flagged = _flag_items(store, q) if q.flags else None
    seconds = SEARCH_SECONDS if time_limit is None else (float(time_limit) if time_limit > 0 else None)
    with store.read() as cur:
        if flagged is not None:
            cur.register("_flagged_items", flagged)
        stop = _STOP.get()
        if stop is not None and stop():  # the asker is gone already: start nothing
            raise SearchCancelled(CANCELLED_MESSAGE)
        watchdog = Watchdog(cur, seconds, stop)
        try:
            if q.regex and q.text:
                _check_pattern_cost(watchdog, q.text)
            yield watchdog  # its execute is the cursor's, refused once the search is stopped
        except Exception as exc:
            watchdog.close()
            if watchdog.reason is not None and isinstance(exc, duckdb.InterruptException):
                raise watchdog.error() from None
            if isinstance(exc, duckdb.InvalidInputException) and q.regex:
                raise UsageError(f"Not a valid regular expression (RE2 syntax): {q.text!r} ({exc}).") from exc
            raise
        finally:
            watchdog.close()
            if flagged is not None:
                cur.unregister("_flagged_items")


def count_by_field(store: Store, q: SearchQuery, *, time_limit: float | None = None) -> dict[str, int]:
    """Matching records per field (fields without any left out). ``time_limit``: see ``_reading``."""
    q = q.checked()
    parts, params = [], {}
    for field in q.fields:
        where, p = _where(q, field)
        if where is not None:
            parts.append(f"SELECT '{field}' AS field, count(*) AS n FROM {_FROM[field]} s WHERE {where}")
            params.update(p)
    if not parts:
        return {}
    with _reading(store, q, time_limit) as cur:
        rows = cur.execute(" UNION ALL ".join(parts), params).fetchall()
    return {f: int(n) for f, n in rows if n}


def count(store: Store, q: SearchQuery, *, time_limit: float | None = None) -> int:
    """How many records match (one per question turn, answer turn, reference turn, rationale, prompt)."""
    return sum(count_by_field(store, q, time_limit=time_limit).values())


_PAGE_COLUMNS = ("s.source_id, s.field, s.harness, s.bench, s.question_id, s.turn, s.model, s.sample, s.judge, "
                 "s.score, s.parse_status, s.text")


@dataclass(frozen=True)
class Page:
    """One page of results (``rows``: RESULT_COLUMNS) and the fields whose number of matches the search that read
    it established exactly (``counts``: field -> matches; with the counts it was given)."""

    rows: pd.DataFrame
    counts: dict[str, int]


# A query's filters: everything but what it matches (text, regex) and where (fields). Each combines with AND.
_FILTERS = tuple(f.name for f in dataclass_fields(SearchQuery) if f.name not in ("text", "regex", "fields"))


def carried_counts(q: SearchQuery, earlier: list[tuple[SearchQuery, dict[str, int]]]) -> dict[str, int]:
    """Exact numbers of matches per field of ``q`` known from ``earlier`` searches (query, ``Page.counts``) of the
    same data: all of the same query's, and the fields without any match of a query that matches the same text with
    fewer filters (every filter combines with AND, so a field empty there is empty under more filters)."""
    known: dict[str, int] = {}
    for old, counts in earlier:
        if (old.text, old.regex) != (q.text, q.regex):
            continue
        same = all(getattr(old, f) == getattr(q, f) for f in _FILTERS)
        broader = same or all(getattr(old, f) in (None, ()) or getattr(old, f) == getattr(q, f) for f in _FILTERS)
        if broader:
            known.update({f: n for f, n in counts.items() if f in q.fields and (same or n == 0)})
    return known


def search(store: Store, q: SearchQuery, *, limit: int = 50, offset: int = 0,
           time_limit: float | None = None) -> pd.DataFrame:
    """One page of matching records, each with a snippet around its first hit (the hit between « and »;
    newlines shown as ⏎). Columns: RESULT_COLUMNS.

    Order: by field (FIELDS order), then as stored in the field's table (import order), so page n of a search is
    rows [n * size, (n + 1) * size) of the same order. A field is counted only when a page starts beyond it.
    ``time_limit``: see ``_reading``."""
    return search_page(store, q, limit=limit, offset=offset, time_limit=time_limit).rows


def search_page(store: Store, q: SearchQuery, *, limit: int = 50, offset: int = 0, _known: dict[str, int] | None = None,
                time_limit: float | None = None) -> Page:
    """``search``'s page with the per-field counts it established (``Page``). ``_known``: exact counts per field
    from earlier pages of the same search (``carried_counts``): a field the page starts beyond, or one without any
    match, is skipped instead of read again (at a million judgments, every answer's text for a word no answer
    holds). Only the speed depends on it, never the rows: named with a "_" so a cache keyed on the arguments
    (Streamlit's) leaves it out."""
    q = q.checked()
    limit, offset = int(limit), int(offset)
    known = {f: int(n) for f, n in (_known or {}).items() if f in q.fields}
    counts = dict(known)
    frames, want = [], limit
    with _reading(store, q, time_limit) as cur:
        for field in [f for f in FIELDS if f in q.fields]:
            if want <= 0:
                break
            where, params = _where(q, field)
            if where is None:
                counts[field] = 0
                continue
            if field in known and known[field] <= offset:  # the page starts beyond this field
                offset -= known[field]
                continue
            if field == "question" and q.text and not _any_question_text(cur, q):
                counts[field] = 0
                continue
            sql = f"FROM {_FROM[field]} s WHERE {where}"
            res = cur.execute(f"SELECT {_PAGE_COLUMNS} {sql} LIMIT {want} OFFSET {offset}", params)
            rows = res.fetchall()
            if not rows and offset:
                counts[field] = cur.execute(f"SELECT count(*) {sql}", params).fetchone()[0]
                offset = max(0, offset - counts[field])
                continue
            if len(rows) < want:  # the field ended within the page: its count is known
                counts[field] = offset + len(rows)
            offset = 0
            want -= len(rows)
            frames.append(pd.DataFrame(rows, columns=[d[0] for d in res.description]))
        if not frames:
            return Page(pd.DataFrame(columns=RESULT_COLUMNS), counts)
        page = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
        needle = _needle(q)
        hits = [None] * len(page)
        if q.regex and needle:  # the first hit as RE2 finds it (Python's re knows neither \pL nor [[:alpha:]])
            norms = [_char_map(text or "")[0] for text in page["text"]]
            hits = cur.execute("SELECT list_transform($t, x -> regexp_extract(x, $p))",
                               {"t": norms, "p": "(?i)" + unicodedata.normalize("NFKC", needle)}).fetchone()[0]
    page["snippet"] = [snippet(text, needle, regex=q.regex, hit=hit) for text, hit in zip(page["text"], hits)]
    page.loc[~page["field"].isin(JUDGMENT_FIELDS), "judge"] = None
    return Page(page[RESULT_COLUMNS].reset_index(drop=True), counts)


def _any_question_text(cur, q: SearchQuery) -> bool:
    """Whether any question turn's text matches q's text, shown to a judge or not: when none does (most searches),
    the question field needs no look at which turns pages show (``current_questions``, a join: 0.05-0.15 s on a
    DuckLake store at 1M judgments against 0.02 s for the texts themselves)."""
    params: dict = {}
    condition = _text_condition(q, "question", params)
    return cur.execute(f"SELECT 1 FROM search_text s WHERE s.field = 'question' AND {condition} LIMIT 1",
                       params).fetchone() is not None


def _needle(q: SearchQuery) -> str:
    if not q.text or q.regex:
        return q.text
    return normalise_query(q.text)


def _lower(texts: list[str]) -> list[str]:
    """The index's lower case (pyarrow's: one code point to one, İ -> i), not Python's (İ -> i + ◌̇), of each text:
    one pyarrow call for them all (a call per piece of a long text cost 0.1 s a snippet)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    return pc.utf8_lower(pa.array(texts, pa.string())).to_pylist()


def _char_map(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The text normalised piece by piece (a character with the combining marks after it), and for each
    normalised character the (start, end) of the original piece it came from."""
    if unicodedata.is_normalized("NFKC", text):
        return _lower([text])[0], _Identity(len(text))  # one code point to one: positions are the original's
    pieces: list[list[int]] = []
    for i, ch in enumerate(text):
        first = unicodedata.normalize("NFKC", ch)[:1]
        if pieces and first and (unicodedata.combining(first) or 0x1160 <= ord(first) <= 0x11FF):
            pieces[-1][1] = i + 1
        else:
            pieces.append([i, i + 1])
    parts, spans = _lower([unicodedata.normalize("NFKC", text[a:b]) for a, b in pieces]), []
    for (a, b), n in zip(pieces, parts):
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


def snippet(text: str | None, needle: str, *, regex: bool = False, around: int = SNIPPET_CHARS,
            hit: str | None = None) -> str:
    """Plain text around the first hit, the hit marked «like this»; never markup. Newlines become ⏎. ``hit``: the
    text a regular expression matched first in the normalised text (RE2's answer), found again here.

    ``around`` characters follow the hit; before it, as many as fill ``around`` display columns, a full-width or
    wide character (Japanese) counting two: 60 Japanese characters of context took the whole width of the Search
    page's column, and the hit was cut off after them."""
    text = text or ""
    start = end = None
    if needle:
        norm, index = _char_map(text)
        if regex and hit is not None:
            i = norm.find(hit) if hit else -1
            span = (i, i + len(hit)) if i >= 0 else None
        elif regex:
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
    a, b = _columns_back(text, start, around), min(len(text), end + around)
    return (("…" if a > 0 else "") + _flat(text[a:start]) + HIT_OPEN + _flat(text[start:end]) + HIT_CLOSE
            + _flat(text[end:b]) + ("…" if b < len(text) else ""))


def _columns_back(text: str, start: int, columns: int) -> int:
    """Where the context before ``text[start]`` begins: as many characters as fill ``columns`` display columns
    (East Asian wide and full-width characters take two)."""
    a, used = start, 0
    while a > 0:
        width = 2 if unicodedata.east_asian_width(text[a - 1]) in ("W", "F") else 1
        if used + width > columns:
            break
        used += width
        a -= 1
    return a


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
