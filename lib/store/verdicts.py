"""The analyst's verdicts (table ``human_verdicts``): what a row may hold, its uid, insert, the current verdict per
item, and the human judges' rows in ``item_scores``."""
from __future__ import annotations

import numbers

from lib import harness as H
from lib.errors import UsageError

# The store keeps them because every write refreshes item_scores; recording verdicts is
# lib.judging.human, reading verdict files lib.ingest.formats.human.
HUMAN_PREFIX = "human:"
VERDICT_FIELDS = ("score", "label", "note")


def check_verdict(author: str | None, score, label: str | None, note: str | None,
                  cleared=()) -> tuple[str, float | None, list[str]]:
    """(author, score, cleared) of a verdict row the store may hold, else UsageError: an author (one line), a 1-10
    score or none, the fields it empties (``cleared``: score, label, note; none it also sets), and at least one
    thing to record (a score, a label, a note or a field to empty)."""
    if author is not None and not isinstance(author, str):
        raise UsageError(f"An author name is text; got {_shown(author)}.")
    for name, value in (("label", label), ("note", note)):
        if value is not None and not isinstance(value, str):
            raise UsageError(f"A verdict's {name} is text; got {_shown(value)}.")
    author = (author or "").strip()
    if not author:
        raise UsageError("Set your name first (--author, the sidebar, or [judgelens] author in secrets): "
                         "every verdict records who gave it.", title="Who is judging?")
    if any(c in author for c in "\n\r\t"):
        raise UsageError("An author name is one line of text.")
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, numbers.Real):
            raise UsageError(f"A verdict's score is a number 1-10; got {_shown(score)}.")
        score = float(score)
        if not 1 <= score <= 10:
            raise UsageError(f"A verdict's score is 1-10; got {score:g}.")
    if isinstance(cleared, str) or not isinstance(cleared or (), (list, tuple, set, frozenset)) \
            or not set(cleared or ()) <= set(VERDICT_FIELDS):
        raise UsageError(f"A verdict clears a list of its fields ({', '.join(VERDICT_FIELDS)}); got {cleared!r}.")
    cleared = [f for f in VERDICT_FIELDS if f in set(cleared or ())]
    given = {"score": score is not None, "label": bool((label or "").strip()), "note": bool((note or "").strip())}
    if both := [f for f in cleared if given[f]]:
        raise UsageError(f"A verdict cannot both set and clear its {' and '.join(both)}.")
    if not any(given.values()) and not cleared:
        raise UsageError("A verdict needs a score, a label or a note (or a field to clear).")
    return author, score, cleared


VERDICT_TURNS = (1, 2)  # MT-Bench questions have two turns (a bench's own questions may have fewer)
VERDICT_SAMPLES = 5  # Swallow judges each item 5 times (samples 0-4); FastChat once (sample 0)


def _shown(value) -> str:
    """A value as the file has it (JSON), for messages: [16], 16.0, null, true, "x"."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False)[:80]
    except (TypeError, ValueError):
        return repr(value)[:80]


def _verdict_id(value, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise UsageError(f"A verdict's {name} is a non-empty string or an integer; got {_shown(value)}.")
    return str(value).strip()


def check_verdict_key(bench, question_id, turn, model, sample) -> tuple[str, str, int, str, int]:
    """(bench, question_id, turn, model, sample) of the item a verdict is on, else UsageError: ids are strings or
    integers (never a list, a float or null turned into text), ``turn`` an integer in VERDICT_TURNS, ``sample`` an
    integer 0-4 (absent: 0). The store's own limits (the question's turns, the item's samples, items it does not
    hold) are ``verdict_item_problems``."""
    bench, question_id, model = (_verdict_id(bench, "bench"), _verdict_id(question_id, "question_id"),
                                 _verdict_id(model, "model"))
    if isinstance(turn, bool) or not isinstance(turn, int) or turn not in VERDICT_TURNS:
        raise UsageError(f"A verdict's turn is 1 or 2; got {_shown(turn)}.")
    sample = 0 if sample is None else sample
    if isinstance(sample, bool) or not isinstance(sample, int) or not 0 <= sample < VERDICT_SAMPLES:
        raise UsageError(f"A verdict's sample is 0-{VERDICT_SAMPLES - 1} (Swallow's samples; FastChat has sample 0 "
                         f"only); got {_shown(sample)}.")
    return bench, question_id, int(turn), model, int(sample)


def verdict_item_problems(cur, rows: list[dict]) -> tuple[dict[int, str], dict[int, str]]:
    """What the store says about the items of verdict ``rows`` (dicts with bench, question_id, turn, model, sample):
    ``(refused, unknown)``, each row index -> why. Refused: a turn the stored question does not have, a sample the
    stored item does not have (a FastChat item has sample 0 only). Unknown: a bench, question or model the store
    does not hold (the verdict is kept; the import names it in a note)."""
    if not rows:
        return {}, {}
    import pyarrow as pa

    keys = pa.table({"i": list(range(len(rows))), "bench": [r["bench"] for r in rows],
                     "question_id": [str(r["question_id"]) for r in rows], "model": [r["model"] for r in rows]})
    cur.register("_verdict_keys", keys)
    try:
        found = cur.execute("""
            SELECT k.i,
                   EXISTS (SELECT 1 FROM current_questions q WHERE q.bench = k.bench) OR
                   EXISTS (SELECT 1 FROM single_judgments j WHERE j.bench = k.bench) AS bench_known,
                   (SELECT max(len(q.turns)) FROM current_questions q
                    WHERE q.bench = k.bench AND q.question_id = k.question_id) AS turns,
                   EXISTS (SELECT 1 FROM single_judgments j WHERE j.bench = k.bench
                           AND j.question_id = k.question_id) AS judged,
                   (SELECT max(s) FROM (SELECT sample AS s FROM answers a WHERE a.bench = k.bench
                                          AND a.question_id = k.question_id AND a.model = k.model
                                        UNION ALL SELECT sample FROM single_judgments j WHERE j.bench = k.bench
                                          AND j.question_id = k.question_id AND j.model = k.model)) AS top_sample
            FROM _verdict_keys k""").fetchall()
    finally:
        cur.unregister("_verdict_keys")
    refused, unknown = {}, {}
    for i, bench_known, turns, judged, top in found:
        r = rows[i]
        where = f"bench {r['bench']} question {r['question_id']}"
        if not bench_known:
            unknown[i] = f"no bench {r['bench']!r} in this store"
        elif turns is None and not judged:
            unknown[i] = f"no question {r['question_id']} in bench {r['bench']}"
        elif top is None:
            unknown[i] = f"no answer or judgment of model {r['model']!r} on {where}"
        if turns is not None and r["turn"] > turns:
            refused[i] = f"turn {r['turn']}: {where} has {turns} turn(s)"
        elif top is not None and int(r.get("sample") or 0) > top:
            refused[i] = (f"sample {r.get('sample')}: the store holds " + ("sample 0 only" if top == 0 else
                          f"samples 0-{top}") + f" of {where} model {r['model']}")
    return refused, unknown


def verdict_uid(author, created_at, bench, question_id, turn, model, sample, score, label, note, cleared=()) -> str:
    """sha256 of all of a verdict's fields: the same verdict imported twice is one row. (``cleared`` joins the
    hashed fields only when it is not empty, so rows without it keep the uid they had before it existed.)"""
    import hashlib
    import json

    parts = [author, created_at.isoformat(timespec="microseconds"), bench, str(question_id), int(turn), model,
             None if sample is None else int(sample), None if score is None else float(score), label or None,
             note or None]
    if cleared:
        parts.append(list(cleared))
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()



def insert_verdicts(cur, rows: list[dict], source_id: int | None) -> int:
    """Insert the verdict rows the store does not hold yet (same fields = same verdict), inside the caller's
    transaction. Returns how many were new. Call refresh_human_scores afterwards."""
    if not rows:
        return 0
    import pyarrow as pa

    table = pa.table({
        "uid": [verdict_uid(r["author"], r["created_at"], r["bench"], r["question_id"], r["turn"], r["model"],
                            r["sample"], r["score"], r["label"], r["note"], r.get("cleared")) for r in rows],
        "author": [r["author"] for r in rows],
        "created_at": pa.array([r["created_at"] for r in rows], pa.timestamp("us")),
        "bench": [r["bench"] for r in rows], "question_id": [str(r["question_id"]) for r in rows],
        "turn": pa.array([int(r["turn"]) for r in rows], pa.int32()), "model": [r["model"] for r in rows],
        "sample": pa.array([None if r["sample"] is None else int(r["sample"]) for r in rows], pa.int32()),
        "score": pa.array([r["score"] for r in rows], pa.float64()),
        "label": pa.array([r["label"] for r in rows], pa.string()),
        "note": pa.array([r["note"] for r in rows], pa.string()),
        "cleared": pa.array([list(r.get("cleared") or []) or None for r in rows], pa.list_(pa.string()))})
    cur.register("_verdicts_in", table)
    try:
        return cur.execute("""
            INSERT INTO human_verdicts (uid, author, created_at, bench, question_id, turn, model, sample, score,
                                        label, note, cleared, source_id)
            SELECT DISTINCT ON (uid) *, $sid FROM _verdicts_in v
            WHERE v.uid NOT IN (SELECT uid FROM human_verdicts)""", {"sid": source_id}).fetchone()[0]
    finally:
        cur.unregister("_verdicts_in")


# the order of verdict rows: by time, then by uid (not verdict_id, which differs between stores holding the same
# rows; a lake has none): every store that holds the same rows finds the same current verdicts
VERDICT_ORDER_TERMS = ("created_at", "uid")


def current_verdicts_sql(where: str = "") -> str:
    """SQL of every author's CURRENT verdict per item (bench, question_id, turn, model, sample; a NULL sample is
    0), over the human_verdicts rows ``where`` selects. THE RULE: each field (score, label, note) is the value of
    the latest row that sets it or clears it (``cleared``); a row that leaves a field empty keeps the earlier
    value. So recording a label after a score keeps the score, and only an explicit clear removes it.
    Columns: author, bench, question_id, turn, model, sample, score, label, note, created_at (of the latest row),
    verdict_id (of the latest row), edits (rows)."""
    field = "arg_max_null({f}, _k) FILTER (WHERE {f} IS NOT NULL OR list_contains(cleared, '{f}')) AS {f}"
    return f"""
        SELECT author, bench, question_id, turn, model, coalesce(sample, 0) AS sample,
               {', '.join(field.format(f=f) for f in VERDICT_FIELDS)},
               max(created_at) AS created_at, arg_max(verdict_id, _k) AS verdict_id, count(*) AS edits
        FROM (SELECT *, ({', '.join(VERDICT_ORDER_TERMS)}) AS _k FROM human_verdicts {where})
        GROUP BY author, bench, question_id, turn, model, coalesce(sample, 0)"""


def refresh_human_scores(cur, benches=None) -> None:
    """Put every author's current score per item (current_verdicts_sql) into item_scores as judge human:<author>
    (harness 'human'), for these benches (None: all), inside the caller's transaction. Swallow samples: the
    current score per sample, averaged per item like the LLM judges' samples; an item none of whose samples has a
    score (a label or note alone) has no human score."""
    if not cur.execute("SELECT 1 FROM information_schema.tables WHERE table_name = 'human_verdicts'").fetchone():
        return
    gone = "source_id IS NOT NULL AND source_id NOT IN (SELECT source_id FROM sources)"  # a removed verdict file's
    removed = {r[0] for r in cur.execute(f"SELECT DISTINCT bench FROM human_verdicts WHERE {gone}").fetchall()}
    if removed:  # (no DELETE … RETURNING: a DuckLake store does not have it)
        cur.execute(f"DELETE FROM human_verdicts WHERE {gone}")
    cur.execute("DELETE FROM human_pair_votes WHERE source_id NOT IN (SELECT source_id FROM sources)")
    where, params = "", {}
    if benches is not None:
        benches = sorted({b for b in benches if b is not None} | removed)
        if not benches:
            return
        where, params = "WHERE list_contains($b, bench)", {"b": benches}
    cur.execute(f"DELETE FROM item_scores WHERE harness = '{H.HUMAN.name}' {'AND list_contains($b, bench)' if where else ''}",
                params)
    cur.execute(f"""
        INSERT INTO item_scores
        WITH cur AS ({current_verdicts_sql(where)})
        SELECT '{H.HUMAN.name}', c.bench, '{HUMAN_PREFIX}' || c.author, c.model, c.question_id, c.turn, q.category,
               avg(c.score), count(*), count(c.score), stddev_samp(c.score), 0
        FROM cur c LEFT JOIN current_questions q ON q.bench = c.bench AND q.question_id = c.question_id
        GROUP BY c.bench, c.author, c.model, c.question_id, c.turn, q.category
        HAVING count(c.score) > 0""", params)
