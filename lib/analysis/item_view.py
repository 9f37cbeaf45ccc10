"""Everything about one judged item: the question, the references, the answers and every verdict.

An item is (bench, question_id, turn, model); Swallow items also have samples 0-4. These queries
fetch text for one item only, so they stay fast however big the store is.
"""
from __future__ import annotations

import pandas as pd

from lib import harness as H
from lib.keys import ItemKey
from lib.store import Store, row_id_sql
from lib.vocab import QID_ORDER, model_key_sql, qid_order, split_think

# Judgment `model` names may match an answer file's model_id or its file name, with '/' written '__'.


def benches(store: Store) -> list[str]:
    with store.read() as cur:
        rows = cur.execute("SELECT DISTINCT bench FROM single_judgments ORDER BY bench").fetchall()
    return [r[0] for r in rows]


def questions(store: Store, bench: str) -> pd.DataFrame:
    """question_id, category, turn-1 text, in the harness's id order."""
    with store.read() as cur:
        return cur.execute(
            f"""SELECT question_id, category, turns[1] AS first_turn, len(turns) AS n_turns FROM current_questions
               WHERE bench = ? ORDER BY {QID_ORDER}""",
            [bench]).df()


def models(store: Store, bench: str) -> list[str]:
    with store.read() as cur:
        rows = cur.execute("SELECT DISTINCT model FROM single_judgments WHERE bench = ? ORDER BY model",
                           [bench]).fetchall()
    return [r[0] for r in rows]


def samples(store: Store, key: ItemKey) -> list[int]:
    with store.read() as cur:
        rows = cur.execute(
            "SELECT DISTINCT sample FROM single_judgments WHERE bench = ? AND question_id = ? AND turn = ? "
            "AND model = ? ORDER BY sample", [key.bench, key.question_id, key.turn, key.model]).fetchall()
    return [r[0] for r in rows] or [0]


def question(store: Store, bench: str, question_id: str) -> dict | None:
    """The question as the judges saw it (``turns``: each turn from the judges' prompts where they hold it), and
    what the question file says (``file_turns``, its ``question_set``: None for the harness's own file);
    ``differs[i]``: turn i+1 of the file is not what the judges saw."""
    with store.read() as cur:
        row = cur.execute("SELECT category, turns, file_turns, question_set FROM current_questions "
                          "WHERE bench = ? AND question_id = ?", [bench, question_id]).fetchone()
    return _question(row)


def _question(row) -> dict | None:
    if not row:
        return None
    turns, file_turns = list(row[1]), list(row[2])
    differs = [a.rstrip() != b.rstrip() for a, b in zip(turns, file_turns)]
    return {"category": row[0], "turns": turns, "file_turns": file_turns, "question_set": row[3],
            "differs": differs}


REFERENCES_SQL = """SELECT {keys}text, list(DISTINCT judge ORDER BY judge) AS judges FROM reference_answers
                    WHERE bench = ?{where} GROUP BY {keys}text ORDER BY {keys}judges"""


def references(store: Store, bench: str, question_id: str, turn: int) -> pd.DataFrame:
    """The reference text each judge's lookup finds; judges sharing identical text are grouped."""
    with store.read() as cur:
        return cur.execute(REFERENCES_SQL.format(keys="", where=" AND question_id = ? AND turn = ?"),
                           [bench, question_id, turn]).df()


def bench_items(store: Store, bench: str) -> dict:
    """``question`` and ``references`` of every question of a bench, in two queries (``model_keys``' partner:
    read items out with ``item_question`` / ``item_references``)."""
    with store.read() as cur:
        rows = cur.execute("SELECT question_id, category, turns, file_turns, question_set FROM current_questions "
                           "WHERE bench = ?", [bench]).fetchall()
        refs = cur.execute(REFERENCES_SQL.format(keys="question_id, turn, ", where=""), [bench]).df()
    return {"bench": bench, "questions": {r[0]: r[1:] for r in rows}, "references": refs}


def item_question(items: dict, question_id: str) -> dict | None:
    """``question(store, bench, question_id)`` read from ``bench_items``."""
    return _question(items["questions"].get(question_id))


def item_references(items: dict, question_id: str, turn: int) -> pd.DataFrame:
    """``references(store, bench, question_id, turn)`` read from ``bench_items``."""
    refs = items["references"]
    rows = refs[(refs["question_id"] == question_id) & (refs["turn"] == turn)]
    return rows.drop(columns=["question_id", "turn"]).reset_index(drop=True)


def answer(store: Store, key: ItemKey) -> dict | None:
    """The answer the judges saw for this item, with its <think> part separated."""
    mk = model_key_sql("?")
    with store.read() as cur:
        row = cur.execute(
            f"""SELECT text, model, max_chars, system_prompt, temperature FROM answers
                WHERE bench = ? AND question_id = ? AND turn = ? AND sample = ?
                  AND {mk} IN ({model_key_sql('model')}, {model_key_sql("coalesce(model_id, '')")},
                               {model_key_sql("coalesce(file_model, '')")})
                ORDER BY source_id DESC LIMIT 1""",
            [key.bench, key.question_id, key.turn, key.sample, key.model]).fetchone()
    return _answer(row)


def _answer(row) -> dict | None:
    if not row:
        return None
    text = row[0] or ""
    think, visible = split_think(text)
    return {"text": text, "visible": visible, "think": think,
            "truncated": bool(row[2]) and len(text) >= row[2], "max_chars": row[2],
            "system_prompt": row[3], "temperature": row[4], "length": len(text)}


VERDICT_COLUMNS = ("harness, judge, prompt_name, sample, raw_score, score, parse_status, rationale, judge_prompt, "
                   "source_id, tstamp")
VERDICT_ORDER = "harness, judge, source_id, tstamp NULLS LAST"


def verdicts(store: Store, key: ItemKey, prompts: bool = True) -> pd.DataFrame:
    """Every single judgment of this item (all judges, repeats and, for Swallow, the chosen sample).

    ``column_id`` names a verdict stably for links: harness:judge, plus #n for the n-th repeat. ``prompts=False``
    leaves out ``judge_prompt`` (the largest text: on a DuckLake store reading it costs as much as the rest of the
    item together), for a view that shows prompts only on request.
    """
    return _with_column_ids(_verdict_rows(store, key, prompts, every_turn=False))


def question_verdicts(store: Store, bench: str, question_id: str, model: str, sample: int = 0,
                      prompts: bool = True, rationales: bool = True) -> pd.DataFrame:
    """``verdicts`` of every turn of one model's answer to one question, with a ``turn`` column, in one query: a page
    stepping between the turns of a question (the Workbench) reads none again. Read one turn's out with
    ``turn_verdicts``. ``rationales=False`` leaves out ``rationale`` too: a model's verdicts lie spread over the
    whole table, so their texts are most of the read (at 1M judgments 0.12 of 0.18 s on a DuckLake store), and the
    Workbench shows a stored rationale only beside a new verdict."""
    return _verdict_rows(store, ItemKey(bench, question_id, 0, model, sample), prompts, every_turn=True,
                         rationales=rationales)


def turn_verdicts(frame: pd.DataFrame, turn: int) -> pd.DataFrame:
    """``verdicts(store, key)`` of turn ``turn`` from ``question_verdicts`` (the same rows, order and column ids)."""
    return _with_column_ids(frame[frame["turn"] == int(turn)].drop(columns=["turn"]).reset_index(drop=True))


def _verdict_rows(store: Store, key: ItemKey, prompts: bool, every_turn: bool,
                  rationales: bool = True) -> pd.DataFrame:
    columns = VERDICT_COLUMNS if prompts else VERDICT_COLUMNS.replace(" judge_prompt,", "")
    columns = columns if rationales else columns.replace(" rationale,", "")
    with store.read() as cur:
        return cur.execute(
            f"""SELECT {'turn, ' if every_turn else ''}{columns}
               FROM single_judgments
               WHERE bench = ? AND question_id = ?{'' if every_turn else ' AND turn = ?'} AND model = ?
                 AND ({H.sql_is_not("harness", H.where(multi_sample=True))} OR sample = ?)
               ORDER BY {'turn, ' if every_turn else ''}{VERDICT_ORDER}""",
            [key.bench, key.question_id, *([] if every_turn else [key.turn]), key.model, key.sample]).df()


def _with_column_ids(df: pd.DataFrame) -> pd.DataFrame:
    if df.empty:
        df["column_id"] = []
        return df
    rank = df.groupby(["harness", "judge"]).cumcount() + 1
    df["column_id"] = [f"{h}:{j}" + (f"#{r}" if r > 1 else "") for h, j, r in zip(df["harness"], df["judge"], rank)]
    return df


def model_keys(store: Store, bench: str, model: str) -> dict:
    """The judged items of one model on one bench, keys only, in one query: ``order`` (``item_order``'s pairs) and
    each item's ``samples`` (``samples``' lists). Cache it per data version and read it with ``item_order_of`` /
    ``item_samples``. No text: a model's judgments lie spread over the whole table (imports are not sorted by
    model), so on a DuckLake store reading their rationales and prompts decompresses every Parquet page of those
    columns (0.35 s of CPU at 1M judgments) where one item's text decompresses a few; the page reads the shown
    item's text on its own (``verdicts`` / ``answer``)."""
    with store.read() as cur:
        rows = cur.execute(
            f"""SELECT question_id, turn, list(DISTINCT sample ORDER BY sample) FROM single_judgments
               WHERE bench = ? AND model = ? GROUP BY question_id, turn ORDER BY {QID_ORDER}, turn""",
            [bench, model]).fetchall()
    return {"bench": bench, "model": model, "order": [(r[0], int(r[1])) for r in rows],
            "samples": {(r[0], int(r[1])): [int(x) for x in r[2]] for r in rows}}


def item_order_of(keys: dict) -> list[tuple[str, int]]:
    """``item_order(store, bench, model)`` read from ``model_keys``."""
    return list(keys["order"])


def item_samples(keys: dict, key: ItemKey) -> list[int]:
    """``samples(store, key)`` read from ``model_keys``."""
    return list(keys["samples"].get((key.question_id, int(key.turn)), [])) or [0]


WINDOW = 8  # items of a model's order whose texts one lake read brings (window_texts)


def window_of(order: list[tuple[str, int]], question_id: str, turn: int) -> tuple[tuple[str, int], ...]:
    """The block of ``WINDOW`` consecutive (question_id, turn) items of ``order`` holding this item (fixed blocks,
    so the items of one block share one ``window_texts`` read); the item alone when the order lacks it."""
    here = (question_id, int(turn))
    if here not in order:
        return (here,)
    start = order.index(here) // WINDOW * WINDOW
    return tuple(order[start:start + WINDOW])


def window_texts(store: Store, bench: str, model: str, sample: int, items: tuple[tuple[str, int], ...]) -> dict:
    """``answer`` and ``verdicts(prompts=False)`` of several items of one model (e.g. ``window_of``'s block), in
    one read of two queries: ``{(question_id, turn): {"answer": ..., "verdicts": ...}}`` for every item asked, as
    those functions return them for ``ItemKey(bench, question_id, turn, model, sample)``. On a DuckLake store each
    query pays catalog rounds and Parquet reads (2 x 60 CPU-ms at 100k for one item), so the Item view reads the
    texts of a block of the model's items at once and steps through them without reading."""
    qids = sorted({q for q, _ in items})
    columns = VERDICT_COLUMNS.replace(" judge_prompt,", "")
    mk = model_key_sql("$model")
    with store.read() as cur:
        found = cur.execute(
            f"""SELECT question_id AS _q, turn AS _t, {columns}
               FROM single_judgments
               WHERE bench = $bench AND model = $model AND list_contains($qids, question_id)
                 AND ({H.sql_is_not("harness", H.where(multi_sample=True))} OR sample = $sample)
               ORDER BY _q, _t, {VERDICT_ORDER}""",
            {"bench": bench, "model": model, "qids": qids, "sample": int(sample)}).df()
        answers = cur.execute(
            f"""SELECT question_id, turn, text, model, max_chars, system_prompt, temperature FROM answers
                WHERE bench = $bench AND list_contains($qids, question_id) AND sample = $sample
                  AND {mk} IN ({model_key_sql('model')}, {model_key_sql("coalesce(model_id, '')")},
                               {model_key_sql("coalesce(file_model, '')")})
                QUALIFY row_number() OVER (PARTITION BY question_id, turn ORDER BY source_id DESC) = 1""",
            {"bench": bench, "model": model, "qids": qids, "sample": int(sample)}).fetchall()
    # the column ids of every item at once, then each item's rows as a slice (sorted by item): a pandas groupby,
    # drop and copy per item cost more than the lake's read of the block (0.1 of 0.25 CPU-s at 1M judgments)
    keys = list(zip(found["_q"], found["_t"].astype(int)))
    ranks = found.groupby(["_q", "_t", "harness", "judge"], sort=False).cumcount().add(1).tolist() if keys else []
    verdicts = found.drop(columns=["_q", "_t"])
    verdicts["column_id"] = [f"{h}:{j}" + (f"#{r}" if r > 1 else "")
                             for h, j, r in zip(verdicts["harness"], verdicts["judge"], ranks)]
    spans: dict[tuple[str, int], list[int]] = {}
    for i, k in enumerate(keys):
        spans.setdefault(k, [i, i])[1] = i + 1
    none = _with_column_ids(found.iloc[0:0].drop(columns=["_q", "_t"]).reset_index(drop=True))
    answer_rows = {(r[0], int(r[1])): r[2:] for r in answers}
    out = {}
    for q, t in items:
        span = spans.get((q, int(t)))
        part = verdicts.iloc[span[0]:span[1]].reset_index(drop=True) if span else none.copy()
        out[(q, int(t))] = {"answer": _answer(answer_rows.get((q, int(t)))), "verdicts": part}
    return out


def item_order(store: Store, bench: str, model: str) -> list[tuple[str, int]]:
    """(question_id, turn) pairs of this bench and model in reading order, for previous/next."""
    with store.read() as cur:
        rows = cur.execute(
            f"""SELECT DISTINCT question_id, turn FROM single_judgments WHERE bench = ? AND model = ?
               ORDER BY {QID_ORDER}, turn""", [bench, model]).fetchall()
    return [(r[0], int(r[1])) for r in rows]


def step(order: list[tuple[str, int]], current: tuple[str, int], delta: int) -> tuple[str, int]:
    if not order:
        return current
    try:
        i = order.index(current)
    except ValueError:
        return order[0]
    return order[(i + delta) % len(order)]


def disagreement_order(store: Store, bench: str, limit: int = 1000) -> list[tuple[str, int, str]]:
    """(question_id, turn, model) of this bench's items ranked by judge disagreement (largest spread first),
    over every judge with scores here; empty when fewer than two judges scored. Depends only on the data:
    cache it per data version and step through it with ``following``.

    One statement where each judge scoring the bench does so under one harness (the usual bench, also with an
    analyst's verdicts: judge human:<name>): there ``item_scores`` holds one row per judge of an item, so a judge's
    mean is its row and the spread is max - min of the rows. A judge scoring under two harnesses (a re-judge run
    named like an imported judge) may hold two rows of an item, whose mean is then no row: the statement says so
    and the ranking goes through ``disagreements`` (a pivot of the judges' means). The one statement skips the judge
    list, the pivot and the questions' join, each a read with catalog rounds on a DuckLake store.
    CPU at 1M judgments: 0.41-0.48 -> 0.26-0.36 s on a lake, 0.28 -> 0.20 s on the file."""
    with store.read() as cur:
        rows = cur.execute(
            f"""SELECT question_id, turn, model,
                       (SELECT count(*) FROM (SELECT judge FROM item_scores WHERE bench = $bench AND score IS NOT NULL
                                              GROUP BY judge HAVING count(DISTINCT harness) > 1
                                                                    OR count(harness) < count(*))) AS shared
                FROM item_scores WHERE bench = $bench AND score IS NOT NULL
                GROUP BY question_id, model, turn HAVING count(*) >= 2
                ORDER BY max(score) - min(score) DESC, {QID_ORDER}, model, turn
                LIMIT $limit""", {"bench": bench, "limit": int(limit)}).fetchall()
    if not rows or not rows[0][3]:  # no item two judges scored (none for the pivot either), or no judge shared
        return [(q, int(t), m) for q, t, m, _ in rows]
    return _pivot_disagreement_order(store, bench, limit)


def _pivot_disagreement_order(store: Store, bench: str, limit: int) -> list[tuple[str, int, str]]:
    """``disagreement_order`` through ``disagreements``: each judge's mean per item, over every judge scoring here."""
    from lib.analysis.agreement import disagreements

    with store.read() as cur:
        judges = [r[0] for r in cur.execute(
            "SELECT DISTINCT judge FROM item_scores WHERE bench = ? AND score IS NOT NULL ORDER BY judge",
            [bench]).fetchall()]
    if len(judges) < 2:
        return []
    ranked = disagreements(store, judges, bench=bench, limit=limit)
    return list(zip(ranked["question_id"], ranked["turn"].astype(int), ranked["model"]))


def following(order: list[tuple[str, int, str]], question_id: str, turn: int,
              model: str) -> tuple[str, int, str] | None:
    """The item after this one in ``order`` (the first if this one is not in it), wrapping around."""
    if not order:
        return None
    current = (question_id, int(turn), model)
    i = order.index(current) + 1 if current in order else 0
    return order[i % len(order)]


def next_disagreement(store: Store, bench: str, question_id: str, turn: int, model: str,
                      limit: int = 1000) -> tuple[str, int, str] | None:
    """The item after this one in the ranking of judge disagreement (largest spread first), wrapping around."""
    return following(disagreement_order(store, bench, limit), question_id, turn, model)


def answers_of(store: Store, bench: str, question_id: str, turn: int, sample: int,
               models: list[str]) -> dict[str, str]:
    """model -> answer text of this item for each of ``models`` that has one (as ``answer`` finds it: the newest
    file's answer whose model, model_id or file name has the model's key). One query for all the models: on a
    DuckLake store each query pays catalog look-ups and a Parquet read."""
    models = list(dict.fromkeys(models))
    if not models:
        return {}
    with store.read() as cur:
        rows = dict(cur.execute(
            f"""WITH wanted AS (SELECT m, {model_key_sql('m')} AS k FROM unnest(?::VARCHAR[]) t(m))
                SELECT w.m, arg_max(coalesce(a.text, ''), a.source_id) FROM answers a
                JOIN wanted w ON w.k IN ({model_key_sql('a.model')}, {model_key_sql("coalesce(a.model_id, '')")},
                                         {model_key_sql("coalesce(a.file_model, '')")})
                WHERE a.bench = ? AND a.question_id = ? AND a.turn = ? AND a.sample = ?
                GROUP BY w.m""", [models, bench, question_id, turn, sample]).fetchall())
    return {m: rows[m] for m in models if m in rows}


def link_params(bench: str, question_id: str, turn: int, model: str, judges: list[str] | None = None,
                harness: str | None = None) -> dict[str, str]:
    """Query parameters that open the item view on this item (optionally with these judge columns of
    ``harness``; none given: ``lib.harness.DEFAULT``'s)."""
    harness = harness or H.DEFAULT.name
    params = {"bench": bench, "q": str(question_id), "turn": str(int(turn)), "model": model}
    if judges:
        params["cols"] = ",".join(f"{harness}:{j}" for j in judges)
    return params


def link(params: dict[str, str]) -> str:
    """A relative URL of the item view (resolves against the app's address)."""
    from urllib.parse import urlencode

    return "item_view?" + urlencode(params)


ITEM_FILTERS = ("bench", "harness", "model", "judge", "question_id", "turn")


def items(store: Store, **filters) -> list[dict]:
    """What the Item view shows, one dict per judged item (bench, question_id, turn, model), for scripts
    (``python -m lib.cli items``): ``question`` (the text the judges saw), ``question_file_text`` and
    ``question_differs`` (the question file says otherwise), ``answer`` (sample 0), ``judges``: per judge its
    harness, item ``score`` (repeats and samples averaged, failures left out), ``n`` judgments, ``rationale``
    (the first judgment's). Filters: ``ITEM_FILTERS`` (``judge`` keeps the items that judge scored, with every
    judge of them)."""
    unknown = set(filters) - set(ITEM_FILTERS)
    if unknown:
        raise ValueError(f"unknown item filter(s): {', '.join(sorted(unknown))}")
    conditions, params = [], {}
    for key, value in filters.items():
        if value is None or key == "judge":
            continue
        conditions.append(f"j.{key} = ${key}")
        params[key] = int(value) if key == "turn" else str(value)
    if filters.get("judge"):
        conditions.append("(j.bench, j.question_id, j.turn, j.model) IN (SELECT (bench, question_id, turn, model) "
                          "FROM single_judgments WHERE judge = $judge)")
        params["judge"] = filters["judge"]
    where = " AND ".join(conditions) or "TRUE"
    mk = model_key_sql("j.model")
    with store.read() as cur:
        rows = cur.execute(f"""
            WITH j AS (SELECT * FROM single_judgments j WHERE {where}),
            per_judge AS (
                SELECT bench, question_id, turn, model, judge, any_value(harness) AS harness,
                       avg(score) AS score, count(*) AS n, first(rationale ORDER BY sample, source_id) AS rationale
                FROM j GROUP BY bench, question_id, turn, model, judge),
            item AS (
                SELECT bench, question_id, turn, model,
                       list({{'judge': judge, 'harness': harness, 'score': score, 'n': n, 'rationale': rationale}}
                            ORDER BY judge) AS judges
                FROM per_judge GROUP BY ALL),
            ans AS (
                SELECT a.bench, a.question_id, a.turn, {model_key_sql('a.model')} AS k1,
                       {model_key_sql("coalesce(a.model_id, '')")} AS k2,
                       {model_key_sql("coalesce(a.file_model, '')")} AS k3, a.text, a.source_id
                FROM answers a WHERE a.sample = 0)
            SELECT i.bench, i.question_id, i.turn, i.model, q.turns[i.turn] AS question,
                   q.file_turns[i.turn] AS question_file_text,
                   (SELECT first(a.text ORDER BY a.source_id DESC) FROM ans a WHERE a.bench = i.bench
                      AND a.question_id = i.question_id AND a.turn = i.turn
                      AND {mk.replace('j.model', 'i.model')} IN (a.k1, a.k2, a.k3)) AS answer,
                   i.judges
            FROM item i LEFT JOIN current_questions q ON q.bench = i.bench AND q.question_id = i.question_id
            ORDER BY i.bench, {qid_order('i')}, i.turn, i.model""",
                           params).fetchall()
    out = []
    for bench, qid, turn, model, question, file_text, answer, judges in rows:
        differs = question is not None and file_text is not None and question.rstrip() != file_text.rstrip()
        out.append({"bench": bench, "question_id": qid, "turn": turn, "model": model, "question": question,
                    "question_file_text": file_text if differs else None, "question_differs": differs,
                    "answer": answer, "judges": [dict(j) for j in judges]})
    return out


_KEYS_CTE = """WITH k AS (SELECT unnest($i) AS i, unnest($bench) AS bench, unnest($qid) AS question_id,
                                   unnest($turn) AS turn, unnest($model) AS model, unnest($sample) AS sample)"""


def _key_params(keys: list[ItemKey]) -> dict:
    return {"i": list(range(len(keys))), "bench": [k.bench for k in keys], "qid": [k.question_id for k in keys],
            "turn": [int(k.turn) for k in keys], "model": [k.model for k in keys],
            "sample": [int(k.sample) for k in keys]}


def _by_row_id(cur, table: str, row_ids: list[int], columns: list[str], lake: bool) -> dict[tuple[int, int], tuple]:
    """{(row id, source id): (columns...)} of these rows of ``table``, read by row id (a filter on the row ids, so
    only the chosen rows' texts are read). With its source id: on a DuckLake store two rows can share a row id (rows
    that separate imports wrote inline in the catalog: in the bundled sample's lake 4,320 judgments have 2,772 row
    ids, each row id once per source), and a report showed another judgment's rationale. Each store its cheapest
    filter, measured at 1M judgments for the 75 rationales of a one-model report, first read after the store opened:
    in a DuckDB file the ids' range and the ids as a list of numbers, which reach the scan (it skips every vector
    holding none of them: 0.07 s; ``rowid = ANY($ids)`` read every block of the column, 0.70 s, and the list alone
    0.38 s; all 0.02 s once the blocks are in memory); on a DuckLake store ``list_contains`` (0.12-0.15 s; the list
    of numbers 0.33 s, ``= ANY`` 0.69 CPU-s). The same rows either way."""
    if not row_ids:
        return {}
    if lake:
        where, params = "list_contains($ids, rowid)", {"ids": list(row_ids)}
    else:
        ids = sorted({int(i) for i in row_ids})  # numbers: written into the statement as they are
        where, params = f"rowid BETWEEN {ids[0]} AND {ids[-1]} AND rowid IN ({', '.join(map(str, ids))})", {}
    return {(r[0], r[1]): r[2:] for r in cur.execute(
        f"SELECT {row_id_sql()}, {', '.join(columns)} FROM {table} WHERE {where}", params).fetchall()}


def items_of(store: Store, keys: list[ItemKey], *, prompts: bool = True) -> list[dict]:
    """What ``question``, ``answer`` and ``verdicts`` return, for several items in one read of five queries instead
    of three per item (a report's largest disagreements: each lookup of one item scans the judgments; the keys of
    the judgments and answers, then their texts by row id, then the questions): per key, in
    order, ``{"question": ..., "answer": ..., "verdicts": ...}``. ``prompts=False``: the verdicts' judge_prompt
    is left empty (None) and not read: the items of a filter lie scattered through the table, and their prompts
    (a kilobyte or more each) cost 1.2 CPU-s of a report's 15 items at a million judgments."""
    if not keys:
        return []
    params = _key_params(keys)
    mk = model_key_sql("k.model")
    texts = ["rationale"] + (["judge_prompt"] if prompts else [])
    with store.read() as cur:
        cur.execute("BEGIN TRANSACTION")  # one snapshot: the row ids the key reads find name the rows the text reads get
        try:
            # keys first, texts after by row id: a text column costs its whole compressed vector for every row a
            # join reads, and a filter's items lie scattered through the table (the texts of 15 items' judgments
            # read that way were 0.7 CPU-s of a report at 1M judgments, by row id 0.15)
            found = cur.execute(
                f"""{_KEYS_CTE}
                   SELECT k.i, j.harness, j.judge, j.prompt_name, j.sample, j.raw_score, j.score, j.parse_status,
                          j.rowid AS row_id, j.source_id, j.tstamp
                   FROM single_judgments j JOIN k ON j.bench = k.bench AND j.question_id = k.question_id
                        AND j.turn = k.turn AND j.model = k.model
                   WHERE {H.sql_is_not("j.harness", H.where(multi_sample=True))} OR j.sample = k.sample
                   ORDER BY k.i, j.harness, j.judge, j.source_id, j.tstamp NULLS LAST""", params).df()
            answers = cur.execute(
                f"""{_KEYS_CTE}
                   SELECT k.i, a.rowid, a.model, a.max_chars, a.system_prompt, a.temperature, a.source_id
                   FROM answers a JOIN k
                     ON a.bench = k.bench AND a.question_id = k.question_id AND a.turn = k.turn AND a.sample = k.sample
                     AND {mk} IN ({model_key_sql('a.model')}, {model_key_sql("coalesce(a.model_id, '')")},
                                  {model_key_sql("coalesce(a.file_model, '')")})
                   QUALIFY row_number() OVER (PARTITION BY k.i ORDER BY a.source_id DESC) = 1""", params).fetchall()
            judged = _by_row_id(cur, "single_judgments", list(set(found["row_id"].tolist())), texts, store.lake)
            answered = _by_row_id(cur, "answers", list({r[1] for r in answers}), ["text"], store.lake)
            pairs = sorted({(k.bench, k.question_id) for k in keys})
            questions = {(r[0], r[1]): r[2:] for r in cur.execute(
                """SELECT bench, question_id, category, turns, file_turns, question_set FROM current_questions
                   WHERE (bench, question_id) IN (SELECT (b, q) FROM (SELECT unnest($b) AS b, unnest($q) AS q))""",
                {"b": [b for b, _ in pairs], "q": [q for _, q in pairs]}).fetchall()}
        finally:
            cur.execute("ROLLBACK")
    at = found.columns.get_loc("row_id")
    # the dtypes DuckDB gives the columns read in the join: str, and object for the NULL::VARCHAR of no prompts
    rows = list(zip(found["row_id"].tolist(), found["source_id"].tolist()))
    found.insert(at, "rationale", pd.Series([judged[r][0] for r in rows], index=found.index, dtype="str"))
    prompt_column = pd.Series([judged[r][1] for r in rows], index=found.index, dtype="str") if prompts else \
        pd.Series([None] * len(rows), index=found.index, dtype=object)
    found.insert(at + 1, "judge_prompt", prompt_column)
    found = found.drop(columns="row_id")
    answers = [(r[0], answered[(r[1], r[-1])][0], *r[2:-1]) for r in answers]
    none = _with_column_ids(found.iloc[0:0].drop(columns="i").reset_index(drop=True))  # an item with no verdict
    if len(found):  # _with_column_ids of every item at once (per item: a pandas groupby each, 15 ms apiece)
        rank = found.groupby(["i", "harness", "judge"]).cumcount() + 1
        found["column_id"] = [f"{h}:{j}" + (f"#{r}" if r > 1 else "")
                              for h, j, r in zip(found["harness"], found["judge"], rank)]
    by_item = dict(iter(found.groupby("i", sort=False))) if len(found) else {}
    answer_rows = {r[0]: r[1:] for r in answers}
    out = []
    for i, key in enumerate(keys):
        part = by_item[i].drop(columns="i").reset_index(drop=True) if i in by_item else none.copy()
        out.append({"question": _question(questions.get((key.bench, key.question_id))),
                    "answer": _answer(answer_rows.get(i)), "verdicts": part})
    return out
