"""Score distributions, the JA harness's summary tables, radar data and length bias.

Everything is aggregated in SQL and returned as pandas DataFrames, so a page can draw a histogram
or a box plot of a million judgments without shipping the points.

Two units of counting, chosen with ``unit=``:

- ``"item"`` (default): one value per judged item (harness, bench, judge, model, question, turn)
  from the ``item_scores`` table: repeats and Swallow's 5 samples averaged, parse failures left out
  (``lib.analysis.queries.MEAN_RULE``). Item means can be fractions such as 7.4.
- ``"judgment"``: one value per ``single_judgments`` row that has a usable score, so a Swallow item
  counts 5 times (once per sample) and a FastChat re-run counts twice.

Filters are ``{column: value}`` (or ``{column: [values]}``) over harness, bench, judge, model,
turn, category and question_id.
"""
from __future__ import annotations

import threading
from typing import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
from lib.errors import UsageError
from lib.store import Store, frame, in_memory
from lib.vocab import model_key_sql

GROUP_KEYS = ("harness", "bench", "judge", "model", "turn", "category")
FILTER_KEYS = GROUP_KEYS + ("question_id",)
UNITS = ("item", "judgment")
# Categories the JA harness's results-table.py leaves out of "Overall xCM".
XCM_EXCLUDED = ("coding", "math")

HISTOGRAM_RULE = ("Bins have width 1: bin k holds scores in [k, k+1) for k = 1..9, so 7.5 and an item "
                  "mean of 7.9 fall in bin 7; the last bin, 10, holds exactly 10 (nothing is higher).")


def _check_keys(keys: Iterable[str], allowed: tuple[str, ...], what: str) -> list[str]:
    keys = list(keys)
    unknown = [k for k in keys if k not in allowed]
    if unknown:
        raise UsageError(f"unknown {what} {', '.join(map(repr, unknown))}; choose from {', '.join(allowed)}")
    return keys


def _where(filters: dict | None, params: dict, prefix: str = "f") -> list[str]:
    """SQL conditions for ``filters``; values may be scalars or lists (IN)."""
    conditions = []
    for i, (key, value) in enumerate((filters or {}).items()):
        _check_keys([key], FILTER_KEYS, "filter")
        name = f"{prefix}{i}"
        if isinstance(value, (list, tuple, set, frozenset)):
            if not value:  # no value: no row (and no parameter: an unused one is refused)
                conditions.append("false")
                continue
            params[name] = [str(v) if key == "question_id" else v for v in value]
            # list_contains, not = ANY: the same rows (NULL and false both drop one), a vectorised look-up where ANY
            # became a join per row: half the CPU of a page's filtered counts at a million judgments.
            conditions.append(f"list_contains(${name}, {key})")
        elif value is None:
            conditions.append(f"{key} IS NULL")
        else:
            params[name] = str(value) if key == "question_id" else value
            conditions.append(f"{key} = ${name}")
    return conditions


# Where a question's category is read: ``file_questions``, whose category ``current_questions`` shows as it is (one row
# per question in both); that view adds the turns the judges saw, another table a DuckLake store looks up in its
# catalog on every statement (30-40 ms of CPU at 1M), for nothing read here.
CATEGORIES = "file_questions"


def _scored_rows(unit: str) -> str:
    """A relation with the grouping columns and ``score`` (non-NULL) for one unit of counting."""
    if unit == "item":
        return ("(SELECT harness, bench, judge, model, question_id, turn, category, score "
                "FROM item_scores WHERE score IS NOT NULL)")
    if unit == "judgment":
        return ("(SELECT j.harness, j.bench, j.judge, j.model, j.question_id, j.turn, j.sample, q.category, j.score "
                f"FROM single_judgments j LEFT JOIN {CATEGORIES} q "
                "ON q.bench = j.bench AND q.question_id = j.question_id WHERE j.score IS NOT NULL)")
    raise UsageError(f"unknown unit {unit!r}; choose from {', '.join(UNITS)}")


COUNT_KEYS = GROUP_KEYS  # score_counts' grouping: every key a histogram can be drawn by


def score_counts(store: Store, *, unit: str = "item", filters: dict | None = None) -> pd.DataFrame:
    """How many scores fall in each bin per every group key at once: ``harness, bench, judge, model, turn,
    category, bin, count`` (only bins with a count; ``bin`` = floor(score), 10 for a 10). Every histogram of
    these filters is a sum over it (``histogram_of_counts``): a page caches this, not one query per way of
    colouring or splitting the bars (a query over a million judgments per click)."""
    params: dict = {}
    where = _where(filters, params)
    df = frame(store, f"""
        SELECT {', '.join(COUNT_KEYS)}, CAST(least(10, floor(score)) AS INTEGER) AS bin, count(*) AS count
        FROM {_scored_rows(unit)} {'WHERE ' + ' AND '.join(where) if where else ''}
        GROUP BY ALL""", params)
    df["count"] = df["count"].astype("int64")
    df.attrs["unit"] = unit
    return df


def histogram_of_counts(counts: pd.DataFrame, by: Iterable[str] = ()) -> pd.DataFrame:
    """``score_histogram`` from ``score_counts``' frame: counts per score bin per group, ``by…, bin, bin_label,
    count, n, share``.

    Every group gets all 10 bins (count 0 where empty), so bars line up across groups: bins 1-10, from 0 (or lower)
    when a scale starting at 0 (Nejumi, Inspect graders) gave one. ``n`` is the group's total (the sum of its counts)
    and ``share = count / n``. Groups and bins in order, a missing key (NULL) last. See ``HISTOGRAM_RULE``.
    """
    by = _check_keys(by, GROUP_KEYS, "group key")
    if counts.empty or counts["count"].sum() == 0:  # no scores: no groups, not 10 empty bins
        empty = pd.DataFrame({**{k: counts[k].iloc[0:0] for k in by}, "bin": pd.Series(dtype="int32"),
                              "bin_label": pd.Series(dtype=object), "count": pd.Series(dtype="int64"),
                              "n": pd.Series(dtype="int64"), "share": pd.Series(dtype="float64")})
        empty.attrs.update(rule=HISTOGRAM_RULE, unit=counts.attrs.get("unit", "item"))
        return empty
    lo = min(1, int(counts["bin"].min()))
    bins = np.arange(lo, 11, dtype="int32")
    if by:
        per_bin = counts.groupby(by + ["bin"], dropna=False, sort=False)["count"].sum()
        groups = per_bin.index.droplevel("bin").unique().sort_values(na_position="last")
        grid = pd.MultiIndex.from_tuples([(*(g if len(by) > 1 else (g,)), b) for g in groups for b in bins],
                                         names=by + ["bin"])
        df = per_bin.reindex(grid, fill_value=0).reset_index()
        df = df.astype({k: counts[k].dtype for k in by})  # the index made a turn of int32 one of int64
    else:
        per_bin = counts.groupby("bin")["count"].sum()
        df = per_bin.reindex(bins, fill_value=0).rename_axis("bin").reset_index()
    df["bin"] = df["bin"].astype("int32")
    df.insert(len(by) + 1, "bin_label", [("10" if b == 10 else f"[{b},{b + 1})") for b in df["bin"]])
    df["count"] = df["count"].astype("int64")
    df["n"] = df.groupby(by, dropna=False)["count"].transform("sum") if by else df["count"].sum()
    df["share"] = df["count"] / df["n"]
    df.attrs["rule"] = HISTOGRAM_RULE
    df.attrs["unit"] = counts.attrs.get("unit", "item")
    return df


def score_histogram(store: Store, by: Iterable[str] = (), *, unit: str = "item",
                    filters: dict | None = None, counts: pd.DataFrame | None = None) -> pd.DataFrame:
    """Counts per score bin per group: ``by…, bin, bin_label, count, n, share`` (``histogram_of_counts`` of
    ``score_counts``). ``counts``: ``score_counts`` of this unit and these filters, when the caller kept them."""
    by = _check_keys(by, GROUP_KEYS, "group key")
    return histogram_of_counts(score_counts(store, unit=unit, filters=filters) if counts is None else counts, by)


def score_summary(store: Store, by: Iterable[str] = (), *, unit: str = "item",
                  filters: dict | None = None) -> pd.DataFrame:
    """Box-plot numbers per group: ``by…, n, mean, std, min, q1, median, q3, max`` (quantile_cont)."""
    by = _check_keys(by, GROUP_KEYS, "group key")
    params: dict = {}
    where = _where(filters, params)
    keys = ", ".join(by)
    sql = f"""
        SELECT {keys + ', ' if by else ''}count(*) AS n, avg(score) AS mean, stddev_samp(score) AS std,
               min(score) AS min, quantile_cont(score, 0.25) AS q1, quantile_cont(score, 0.5) AS median,
               quantile_cont(score, 0.75) AS q3, max(score) AS max
        FROM {_scored_rows(unit)} {'WHERE ' + ' AND '.join(where) if where else ''}
        {f'GROUP BY {keys} ORDER BY {keys}' if by else ''}"""
    df = frame(store, sql, params)
    if not by and len(df) and df["n"].iloc[0] == 0:
        return df.iloc[0:0]
    df.attrs["unit"] = unit
    return df


# --------------------------------------------------------------------------------------------------
# The JA harness's summary numbers (its show_result.py tables)

KEYS = ["harness", "bench", "judge", "model"]


_CELLS = """
    cells AS (
        -- per harness, bench, judge, model, category, turn: the sum and count of item scores; every number of
        -- ja_overall and radar_frame is exact arithmetic on these
        SELECT harness, bench, judge, model, category, turn, sum(score) AS total, count(score) AS n
        FROM item_scores {where} GROUP BY ALL)"""


def _category_frame(store: Store, filters: dict | None, categories=None) -> pd.DataFrame:
    """Every judge x model (of the filtered items) x every category of its bench (from the bench's questions, plus
    any category seen in its judgments; only ``categories`` when given): the mean of the per-turn category means
    (``score``, NULL when none is scored) and ``n_items``. In SQL: the pandas pivots and merges this replaced
    cost a click on Distributions more than the query (0.05-0.1 s of CPU for a few hundred cells)."""
    params: dict = {}
    where = _where(filters, params)
    wanted = ""
    if categories is not None:
        params["wanted"] = list(categories)
        wanted = "WHERE category = ANY($wanted)"
    df = frame(store, f"""
        WITH {_CELLS.format(where='WHERE ' + ' AND '.join(where) if where else '')},
        judged AS (SELECT DISTINCT harness, bench, judge, model FROM cells),
        bench_categories AS (
            SELECT * FROM (SELECT DISTINCT bench, category FROM {CATEGORIES} WHERE category IS NOT NULL
                           UNION SELECT DISTINCT bench, category FROM cells WHERE category IS NOT NULL) {wanted}),
        means AS (
            SELECT harness, bench, judge, model, category, avg(total / n) AS score, sum(n) AS n_items
            FROM cells WHERE n > 0 AND category IS NOT NULL GROUP BY ALL)
        SELECT j.harness, j.bench, j.judge, j.model, c.category, m.score, coalesce(m.n_items, 0) AS n_items
        FROM judged j JOIN bench_categories c ON c.bench = j.bench
        LEFT JOIN means m ON m.harness = j.harness AND m.bench = j.bench AND m.judge = j.judge AND m.model = j.model
                         AND m.category = c.category
        ORDER BY j.harness, j.bench, j.judge, j.model, c.category""", params)
    df["category"] = df["category"].astype(object)
    df["score"] = df["score"].astype("float64")
    df["n_items"] = df["n_items"].astype("int64")
    return df


def ja_overall(store: Store, *, bench: str | None = None, filters: dict | None = None,
               long: pd.DataFrame | None = None) -> pd.DataFrame:
    """The JA harness's headline numbers per harness, bench, judge, model (item means, -1 left out).

    Columns:

    - ``t1``, ``t2``: mean item score per turn;
    - ``overall_turn_mean`` = (t1 + t2) / 2: visualize-results.py's "Overall" (NaN if a turn is missing);
    - ``overall_pooled``: mean over all items (show_result.py's "Average" only when every item was judged
      once: show_result counts a duplicated row again, and prints the Average for ``mt_bench`` only;
      ``queries.scores(rule="harness")`` follows it exactly);
    - one column per category of the benches shown: the mean of that category's per-turn means
      (visualize-results.py); NaN, never 0, when the model has no scored item in it;
    - ``macro``: the unweighted mean of the category means present (results-table.py "Overall");
    - ``macro_xcm``: the same without coding and math (results-table.py "Overall xCM");
    - ``n_items``; ``n_no_category``: items whose question has no category (in the turn and pooled
      means, in no category column).

    The category names are in ``df.attrs["categories"]``. Categories are per bench, so compare
    category columns only within one bench. With 10 questions per category and both turns scored,
    ``macro`` equals ``overall_pooled``; they part only when items are missing or failed.

    ``long``: ``radar_frame(store, bench=bench, filters=filters)`` (filters without a category), when the caller
    kept it: the category columns are its scores, and only the turn and pooled means are read here (on a DuckLake
    store each statement costs catalog look-ups besides its scan).
    """
    filters = dict(filters or {})
    if bench is not None:
        filters["bench"] = bench
    params: dict = {}
    where = _where(filters, params)
    head = frame(store, f"""
        WITH {_CELLS.format(where='WHERE ' + ' AND '.join(where) if where else '')}
        SELECT harness, bench, judge, model,
               sum(total) FILTER (turn = 1) / sum(n) FILTER (turn = 1) AS t1,
               sum(total) FILTER (turn = 2) / sum(n) FILTER (turn = 2) AS t2,
               sum(total) / sum(n) AS overall_pooled, sum(n) AS n_items,
               coalesce(sum(n) FILTER (category IS NULL), 0) AS n_no_category
        FROM cells WHERE n > 0 GROUP BY ALL""", params)
    for col in ("t1", "t2", "overall_pooled"):
        head[col] = head[col].astype("float64")
    head["overall_turn_mean"] = (head["t1"] + head["t2"]) / 2
    head["n_items"] = head["n_items"].astype("int64")
    head["n_no_category"] = head["n_no_category"].astype("int64")
    if long is None:
        long = _category_frame(store, filters)
    long = long[long["bench"].isin(head["bench"])]
    categories = sorted(set(long["category"]))
    if len(long):
        wide = long.pivot(index=KEYS, columns="category", values="score").reset_index()
        wide.columns.name = None
        head = head.merge(wide, on=KEYS, how="left")
    for category in categories:
        head[category] = head[category].astype("float64") if category in head.columns else np.nan
    head["macro"] = head[categories].mean(axis=1, skipna=True) if categories else np.nan
    xcm = [c for c in categories if c not in XCM_EXCLUDED]
    head["macro_xcm"] = head[xcm].mean(axis=1, skipna=True) if xcm else np.nan
    cols = KEYS + ["t1", "t2", "overall_turn_mean", "overall_pooled"] + categories + \
        ["macro", "macro_xcm", "n_items", "n_no_category"]
    out = head[cols].sort_values(KEYS).reset_index(drop=True)
    out.attrs["categories"] = categories
    return out


def radar_frame(store: Store, *, bench: str | None = None, judge: str | None = None,
                model: str | None = None, filters: dict | None = None) -> pd.DataFrame:
    """Long form for radar charts: ``harness, bench, judge, model, category, score, n_items``.

    ``score`` is the category score of ``ja_overall`` (mean of the per-turn means). Every judge x
    model gets every category of its bench (from the bench's questions, plus any category seen in
    its judgments). A category with no scored items has ``score`` NaN and ``n_items`` 0, never 0
    points (visualize-results.py's known flaw plots it as 0).
    """
    filters = dict(filters or {})
    for key, value in (("bench", bench), ("judge", judge), ("model", model)):
        if value is not None:
            filters[key] = value
    wanted = filters.pop("category", None)
    if wanted is not None:
        wanted = list(wanted) if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted]
    return _category_frame(store, filters, wanted).reset_index(drop=True)[KEYS + ["category", "score", "n_items"]]


# --------------------------------------------------------------------------------------------------
# Length bias

LENGTH_RULE = ("One point per judged answer: FastChat (question, turn) with repeats averaged; Swallow per "
               "sample, with that sample's answer and score. Length = characters (Unicode code points) of the "
               "stored answer text the judge saw, <think> blocks included when the judge saw them.")


_norm = model_key_sql


POINT_COLUMNS = ("harness", "bench", "judge", "model", "question_id", "turn", "sample", "category", "answer_chars",
                 "score")
POINT_KEYS = POINT_COLUMNS[:7]  # a judged answer's key: the points come in this order


def answer_lengths(store: Store, *, bench: str | None = None):
    """Every stored answer (of ``bench``, or of every bench) under every name a judgment may use for it ('__' = '/',
    case-insensitive), with its length: an Arrow table of ``bench, question_id, turn, sample, name, harness, model,
    source_id, answer_chars``. The part of ``length_points`` that does not
    depend on the judge: a page keeps it per bench and data version, and another judge then costs a read of that
    judge's scores and a join (``length_points(lengths=...)``)."""
    params: dict = {}
    if bench is not None:
        params["bench"] = bench
    # The names are worked out once per distinct (model, model_id, file_model) of the answers (about one per model),
    # not per answer: the per-answer unnest and DISTINCT were most of this query at a million judgments.
    sql = f"""
        WITH triples AS (SELECT DISTINCT model, model_id, file_model FROM answers),
        names AS (
            SELECT DISTINCT t.model, t.model_id, t.file_model, n.name
            FROM triples t,
                 unnest(list_distinct([{_norm('t.model')}, {_norm('t.model_id')}, {_norm('t.file_model')}])) AS n(name)
            WHERE n.name IS NOT NULL),
        -- Each answer's length from answer_features (filled at import) where it equals length(text): no <think>
        -- block and not empty (a NULL text counts 0 there); the texts of the others are read (no text at all when
        -- there are none): reading every text was most of this query at a million judgments.
        keyed AS (
            SELECT a.source_id, a.harness, a.bench, a.question_id, a.turn, a.sample, a.model, a.model_id,
                   a.file_model, CASE WHEN NOT f.has_think AND f.length > 0 THEN f.length END AS known_chars
            FROM answers a LEFT JOIN answer_features f
              ON f.source_id = a.source_id AND f.bench = a.bench AND f.model = a.model
             AND f.question_id = a.question_id AND f.turn = a.turn AND f.sample = a.sample
            {'WHERE a.bench = $bench' if bench is not None else ''}),
        read_texts AS (
            SELECT a.source_id, a.bench, a.model, a.question_id, a.turn, a.sample, length(a.text) AS chars
            FROM answers a SEMI JOIN (SELECT * FROM keyed WHERE known_chars IS NULL) k
              ON k.source_id = a.source_id AND k.bench = a.bench AND k.model = a.model
             AND k.question_id = a.question_id AND k.turn = a.turn AND k.sample = a.sample)
        SELECT k.bench, k.question_id, k.turn, k.sample, x.name, k.harness, k.model, k.source_id,
               coalesce(k.known_chars, r.chars) AS answer_chars
        FROM keyed k JOIN names x
          ON x.model IS NOT DISTINCT FROM k.model AND x.model_id IS NOT DISTINCT FROM k.model_id
         AND x.file_model IS NOT DISTINCT FROM k.file_model
        LEFT JOIN read_texts r
          ON r.source_id = k.source_id AND r.bench = k.bench AND r.model = k.model
         AND r.question_id = k.question_id AND r.turn = k.turn AND r.sample = k.sample"""
    with store.read() as cur:
        return cur.execute(sql, params).to_arrow_table()


def length_points(store: Store, *, judge: str | None = None, bench: str | None = None,
                  model: str | None = None, columns: tuple[str, ...] = POINT_COLUMNS, lengths=None) -> pd.DataFrame:
    """Per judged answer: keys, category, ``answer_chars`` (NULL when no answer matched) and ``score``; only
    ``columns`` of them (in the same row order) when fewer are needed: at a million judgments, fetching the keys of
    200,000 points costs more than the numbers. ``lengths``: ``answer_lengths`` of this store and data (of
    ``bench``, or of every bench), when the caller kept it; read here otherwise."""
    unknown = [c for c in columns if c not in POINT_COLUMNS]
    if unknown:
        raise UsageError(f"unknown column {', '.join(map(repr, unknown))}; choose from {', '.join(POINT_COLUMNS)}")
    if lengths is None:
        lengths = answer_lengths(store, bench=bench)
    read = _joined_points(store, judge=judge, bench=bench, model=model, category="category" in columns,
                          lengths=lengths)
    if isinstance(read, pd.DataFrame):
        df = read[list(columns)]
    else:
        joined, order, _ = read
        df = in_memory({"joined": joined.take(order)}, f"SELECT {', '.join(columns)} FROM joined")
    df.attrs["rule"] = LENGTH_RULE
    return df


def _joined_points(store: Store, *, judge: str | None, bench: str | None, model: str | None, category: bool,
                   lengths) -> tuple[pa.Table, np.ndarray, list[np.ndarray]] | pd.DataFrame:
    """``length_points``' rows with every column (``category`` too, if asked): (an Arrow table of them in no
    order, the order sorting them by ``POINT_KEYS``, the keys as numbers: ``_key_order``); a DataFrame in that
    order where some judged answer has several stored answers (the best one picked)."""
    params: dict = {}
    where = ["j.score IS NOT NULL"]
    for key, value in (("judge", judge), ("bench", bench), ("model", model)):
        if value is not None:
            params[key] = value
            where.append(f"j.{key} = ${key}")
    judged_sql = f"""
        SELECT j.harness, j.bench, j.judge, j.model, j.question_id, j.turn, j.sample, avg(j.score) AS score
        FROM single_judgments j WHERE {' AND '.join(where)} GROUP BY ALL"""
    if category:
        judged_sql = f"""
            SELECT g.*, q.category FROM ({judged_sql}) g
            LEFT JOIN {CATEGORIES} q ON q.bench = g.bench AND q.question_id = g.question_id"""
    on = f"""x.bench = j.bench AND x.question_id = j.question_id AND x.turn = j.turn AND x.sample = j.sample
             AND x.name = {_norm('j.model')}"""
    # One read: the judged answers joined to the lengths in the store's own connection (the lengths registered
    # there), in no order, with their keys, put in key order here from the keys' ranks: sorting 200,000 rows by
    # seven strings in SQL was a third of this at a million judgments, reading the judged rows into memory to join
    # them there another third. Almost always each judged answer has one stored answer under its name, or none: a
    # plain join, one row per judged answer. Each model's name is worked out once, not per judged answer (-10%).
    name = f"_jl_lengths_{threading.get_ident()}"
    with store.read() as cur:
        cur.register(name, lengths)
        try:
            joined = cur.execute(f"""
                WITH j AS ({judged_sql}),
                names AS (SELECT model, {_norm('model')} AS name FROM (SELECT DISTINCT model FROM j))
                SELECT j.*, x.answer_chars FROM j JOIN names n ON n.model = j.model
                LEFT JOIN {name} x ON x.bench = j.bench AND x.question_id = j.question_id AND x.turn = j.turn
                                  AND x.sample = j.sample AND x.name = n.name""", params).to_arrow_table()
        finally:
            cur.unregister(name)
    order, repeated, ranked = _key_order(joined, POINT_KEYS)
    if not repeated:
        return joined, order, ranked
    # Some have several (two sources or harnesses): the best match, same harness first, then the same stored
    # model name, then the newest source (ranking every judged answer was a third of the query's time at 1M).
    with store.read() as cur:
        judged = cur.execute(f"{judged_sql} ORDER BY {', '.join(POINT_KEYS)}", params).to_arrow_table()
    judged = judged.append_column("i", pa.array(np.arange(judged.num_rows, dtype="int64")))
    return in_memory({"judged": judged, "lengths": lengths}, f"""
        WITH picked AS (
            SELECT j.i, arg_max(x.answer_chars, [coalesce(CAST(x.harness = j.harness AS INTEGER), -1),
                                                 coalesce(CAST(x.model = j.model AS INTEGER), -1),
                                                 coalesce(x.source_id, -1)]) AS answer_chars
            FROM judged j JOIN lengths x ON {on} GROUP BY j.i)
        SELECT j.* EXCLUDE (i), x.answer_chars AS answer_chars
        FROM judged j LEFT JOIN picked x ON x.i = j.i ORDER BY j.i""")


def _key_order(table: pa.Table, keys: Iterable[str]) -> tuple[np.ndarray, bool, list[np.ndarray]]:
    """The row order of ``table`` sorted by ``keys`` (no NULLs; text in code point order, as SQL's ORDER BY sorts
    it), whether two rows have the same keys, and the keys as numbers in the same order as their values (``_ranks``;
    rows in the table's order). Each text column is ranked over its distinct values (a few thousand at most), then
    the rows are sorted by the ranks' numbers."""
    columns = [_ranks(table[key]) for key in keys]
    if not table.num_rows:
        return np.arange(0), False, columns
    order = np.lexsort(columns[::-1])
    same = np.ones(len(order) - 1, dtype=bool)
    for column in columns:
        ordered = column[order]
        same &= ordered[1:] == ordered[:-1]
    return order, bool(same.any()), columns


def _ranks(column) -> np.ndarray:
    """A column's values as numbers in the same order: text as its rank among the column's distinct values."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
        return column.to_numpy(zero_copy_only=False)
    coded = pc.dictionary_encode(column)
    values = coded.dictionary.to_pylist()
    rank = np.empty(len(values), dtype=np.int64)
    rank[sorted(range(len(values)), key=values.__getitem__)] = np.arange(len(values))
    return rank[coded.indices.to_numpy(zero_copy_only=False)]


def length_bias(store: Store, *, judge: str | None = None, bench: str | None = None,
                model: str | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Does the judge reward longer answers? Returns ``(points, stats)``.

    ``points``: one row per judged answer with a matched answer text (see ``LENGTH_RULE``):
    harness, bench, judge, model, question_id, turn, sample, category, answer_chars, score.

    ``stats``: per harness, bench, judge: ``n`` (points), ``n_without_answer`` (judged answers whose
    text was not found; left out), ``spearman_rho``, ``spearman_p`` (scipy.stats.spearmanr),
    ``kendall_tau``, ``kendall_p`` (scipy.stats.kendalltau, tau-b). Correlation over all models of
    a judge mixes "better models write longer" with "the judge likes length"; filter by ``model``
    to look within one model.
    """
    return _length_stats(length_points(store, judge=judge, bench=bench, model=model))


STATS_KEYS = ["harness", "bench", "judge"]  # length_bias's stats: one row per run of a judge
STATS_COLUMNS = STATS_KEYS + ["n", "n_without_answer", "spearman_rho", "spearman_p", "kendall_tau", "kendall_p"]


def _length_stats(allpoints: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``length_bias``'s (points, stats) from ``length_points`` (harness, bench, judge, answer_chars, score at
    least)."""
    missing = allpoints["answer_chars"].isna()
    points = allpoints[~missing].reset_index(drop=True)
    points["answer_chars"] = points["answer_chars"].astype("int64")
    points.attrs["rule"] = LENGTH_RULE
    rows = []
    lost = allpoints[missing].groupby(STATS_KEYS).size()
    for group, part in points.groupby(STATS_KEYS, sort=True):
        rows.append(_stats_row(group, part["answer_chars"].to_numpy(float), part["score"].to_numpy(float),
                               int(lost.get(group, 0))))
    for group, count in lost.items():
        if not any(tuple(r[k] for k in STATS_KEYS) == group for r in rows):
            rows.append(_stats_row(group, None, None, int(count)))
    return points, pd.DataFrame(rows, columns=STATS_COLUMNS)


def _stats_row(group: tuple, x: np.ndarray | None, y: np.ndarray | None, lost: int) -> dict:
    """One row of ``length_bias``'s stats: the run ``group`` (harness, bench, judge), its points' lengths ``x`` and
    scores ``y`` (in ``length_points``' order; None: it has none) and the number ``lost`` without an answer."""
    from scipy import stats as sstats  # here, so importing this module stays cheap

    rho = p = tau = tau_p = np.nan
    if x is not None and len(x) >= 3 and np.ptp(x) > 0 and np.ptp(y) > 0:
        rho, p = sstats.spearmanr(x, y)
        tau, tau_p = sstats.kendalltau(x, y)
    return dict(zip(STATS_KEYS, group), n=0 if x is None else len(x), n_without_answer=lost,
                spearman_rho=float(rho), spearman_p=float(p), kendall_tau=float(tau), kendall_p=float(tau_p))


SHOWN_POINTS = 5000  # at most this many judged answers are drawn as points under the length profile


def length_summary(store: Store, *, judge: str | None = None, bench: str | None = None,
                   model: str | None = None,
                   lengths=None) -> tuple[pd.DataFrame, pd.DataFrame, int, pd.DataFrame | None]:
    """What the length-bias view shows, and nothing more: ``(profile, stats, n_points, points)`` with
    ``length_profile`` and the stats of ``length_bias``, the number of points, and the points themselves only when
    there are at most ``SHOWN_POINTS`` (else None). A page caches this, not the points: at a million judgments a
    judge has 200,000 of them, which a cache would unpickle (and the profile recompute) on every rerun. ``lengths``:
    as for ``length_points``."""
    if lengths is None:
        lengths = answer_lengths(store, bench=bench)
    read = _joined_points(store, judge=judge, bench=bench, model=model, category=False, lengths=lengths)
    if isinstance(read, pd.DataFrame) or read[0].num_rows - read[0]["answer_chars"].null_count <= SHOWN_POINTS:
        columns = ["harness", "bench", "judge", "answer_chars", "score"]
        allpoints = read[columns] if isinstance(read, pd.DataFrame) else \
            in_memory({"joined": read[0].take(read[1])}, f"SELECT {', '.join(columns)} FROM joined")
        points, stats = _length_stats(allpoints)
        return length_profile(points), stats, len(points), points if len(points) <= SHOWN_POINTS else None
    # Many points: the same numbers from the arrays, without a frame of 200,000 rows (its text columns alone cost
    # a tenth of a second). In key order, the rows of one run (harness, bench, judge) follow one another.
    joined, order, ranked = read
    ranked = np.stack([ranked[POINT_KEYS.index(k)][order] for k in STATS_KEYS])
    starts = np.flatnonzero(np.r_[True, (ranked[:, 1:] != ranked[:, :-1]).any(axis=0)])
    chars = joined["answer_chars"].to_numpy(zero_copy_only=False)[order]  # float: NaN where no answer matched
    scores = joined["score"].to_numpy(zero_copy_only=False)[order]
    answered = ~np.isnan(chars)
    rows, lost_only, judged = [], [], {}
    for start, end in zip(starts, [*starts[1:], len(order)]):
        group = tuple(joined[k][int(order[start])].as_py() for k in STATS_KEYS)
        mine = answered[start:end]
        lost = int(len(mine) - mine.sum())
        if not mine.any():
            lost_only.append(_stats_row(group, None, None, lost))
            continue
        x, y = chars[start:end][mine].astype("int64"), scores[start:end][mine]
        rows.append(_stats_row(group, x.astype(float), y, lost))
        judged.setdefault(group[2], []).append((x, y))
    stats = pd.DataFrame(rows + lost_only, columns=STATS_COLUMNS)
    parts = [_judge_profile(judge, np.concatenate([x for x, _ in runs]), np.concatenate([y for _, y in runs]))
             for judge, runs in sorted(judged.items())]
    profile = pd.concat(parts, ignore_index=True)[PROFILE_COLUMNS] if parts else pd.DataFrame(columns=PROFILE_COLUMNS)
    return profile, stats, int(answered.sum()), None


PROFILE_COLUMNS = ["judge", "bin", "chars_lo", "chars_hi", "chars_median", "n", "mean", "q1", "median", "q3"]


def length_profile(points: pd.DataFrame, bins: int = 10) -> pd.DataFrame:
    """Score against answer length without one point per answer: per judge, the answers of ``points``
    (from ``length_bias``) cut into ``bins`` length bins of equal count (fewer when lengths repeat).

    Columns: judge, bin (1 = shortest), chars_lo, chars_hi, chars_median, n, mean, q1, median, q3
    (quartiles of the score). A chart of these reads the same at 160 answers and at a million.
    """
    parts = [_judge_profile(judge, part["answer_chars"].to_numpy(), part["score"].to_numpy(), bins)
             for judge, part in points.groupby("judge", sort=True) if not part.empty]
    return pd.concat(parts, ignore_index=True)[PROFILE_COLUMNS] if parts else pd.DataFrame(columns=PROFILE_COLUMNS)


def _judge_profile(judge: str, chars: np.ndarray, scores: np.ndarray, bins: int = 10) -> pd.DataFrame:
    """``length_profile`` of one judge's answers: their lengths and scores in ``length_points``' order (which
    breaks ties between equal lengths).

    The answers ranked by length (ties in the points' order: pandas' ``rank(method="first")``) and cut by
    ``pd.qcut`` of the ranks, 1..n, as a frame of the points was; each bin is then a run of the sorted answers, read
    from the sorted arrays (grouping and quantiling a frame of the points cost 0.28-0.35 CPU-s per judge in
    ``length_summary`` at a million judgments, this 0.25-0.29). The same numbers: quartiles interpolated linearly as pandas' groupby quantile
    does, medians as the mean of the two middle values, the mean score by pandas' groupby mean (its compensated
    sum, over the points in their order)."""
    n = len(chars)
    order = np.argsort(chars, kind="stable")  # rank(method="first"): equal lengths in the points' order
    codes = np.asarray(pd.qcut(np.arange(1, n + 1, dtype=float), q=min(bins, n), labels=False))
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    ends = np.r_[starts[1:], n]
    at = np.empty(n, dtype=codes.dtype)
    at[order] = codes
    means = pd.Series(scores).groupby(at).mean().to_numpy()
    chars, scores = chars[order], scores[order]
    rows = []
    for mean, start, end in zip(means, starts, ends):
        lengths, marks = chars[start:end], np.sort(scores[start:end])
        rows.append((int(codes[start]) + 1, lengths[0], lengths[-1], _median(lengths), end - start, mean,
                     _quantile(marks, 0.25), _median(marks), _quantile(marks, 0.75)))
    frame = pd.DataFrame(rows, columns=PROFILE_COLUMNS[1:])
    frame.insert(0, "judge", judge)
    return frame


def _median(ordered: np.ndarray) -> float:
    """The median of sorted numbers as pandas' median computes it: the middle one, or the mean of the two."""
    n = len(ordered)
    return float(ordered[n // 2]) if n % 2 else float((ordered[n // 2 - 1] + ordered[n // 2]) / 2)


def _quantile(ordered: np.ndarray, q: float) -> float:
    """The ``q`` quantile of sorted numbers as pandas' groupby quantile interpolates it (linearly: ``lower + (upper -
    lower) * fraction``; numpy's own formula differs in the last bit above a fraction of one half)."""
    at = q * (len(ordered) - 1)
    lower = int(np.floor(at))
    fraction = at - lower
    if fraction == 0:
        return float(ordered[lower])
    return float(ordered[lower] + (ordered[lower + 1] - ordered[lower]) * fraction)
