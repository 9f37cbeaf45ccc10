"""The derived tables every write keeps current in its own transaction: ``item_scores`` (and what follows it: the
judge questions, the human judges' rows, the search index, the answers' features) and ``judge_questions``."""
from __future__ import annotations

from lib.store.verdicts import refresh_human_scores
from lib.vocab import asked_turns_sql, prompt_text_sql, question_seen_sql

ITEM_SCORES_SELECT = """
SELECT j.harness, j.bench, j.judge, j.model, j.question_id, j.turn, q.category,
       avg(j.score) AS score, count(*) AS n_rows, count(j.score) AS n_valid, stddev_samp(j.score) AS score_std,
       count(*) FILTER (j.parse_status <> 'ok') AS n_failed
FROM single_judgments j
LEFT JOIN current_questions q ON q.bench = j.bench AND q.question_id = j.question_id
{where}
GROUP BY ALL
ORDER BY j.bench, j.judge, j.model
"""


def refresh_item_scores(cur, benches=None, *, marked=(), judges=None) -> None:
    """Recompute item_scores for these benches (None: all), inside the caller's transaction.

    Call after any write to single_judgments or questions (ingest, remove, re-judge). ``marked``: new sources
    whose texts were marked for the search index as they were inserted (``lib.search_index.marker``). ``judges``
    (with ``benches``): only these judges' rows changed and no question did (a re-judge batch: its verdicts carry
    its own label alone), so only their item scores are recomputed; the other judges' rows of the benches stay.
    """
    if benches is None:
        cur.execute("DELETE FROM item_scores")
        cur.execute("INSERT INTO item_scores " + ITEM_SCORES_SELECT.format(where=""))
        _refresh_extras(cur, None, marked)
        return
    benches = sorted({b for b in benches if b is not None})
    if benches:
        params = {"b": benches} if judges is None else {"b": benches, "j": sorted(set(judges))}
        of_judges = "" if judges is None else " AND list_contains($j, {}judge)"
        cur.execute("DELETE FROM item_scores WHERE list_contains($b, bench)" + of_judges.format(""), params)
        cur.execute("INSERT INTO item_scores " + ITEM_SCORES_SELECT.format(
            where="WHERE list_contains($b, j.bench)" + of_judges.format("j.")), params)
    _refresh_extras(cur, benches, marked)


def _refresh_extras(cur, benches, marked=()) -> None:
    """What else follows the data, in the same transaction: the analyst's latest scores as judges human:<author>
    in item_scores (refresh_human_scores, below), the search index (lib.search_index) and the answers' features
    (lib.text_features)."""
    from lib.search_index import index_new_sources
    from lib.text_features import fill_answer_features

    refresh_judge_questions(cur, benches)
    refresh_human_scores(cur, benches)
    index_new_sources(cur, marked=marked)
    fill_answer_features(cur)


def sources_changed(cur, source_ids) -> None:
    """Call inside a write that adds rows to, or removes rows from, sources that already exist (a re-judge batch's
    later writes to its source, a resumed batch, a regenerated run written again; an import or a removal makes or
    drops whole sources and needs no call): what is derived per source forgets them (their judge prompts' questions
    here, their search texts: ``lib.search_index.forget_sources``), so the next refresh derives them again whole,
    as for a new source. Every other source keeps what was derived from it."""
    from lib.search_index import forget_sources

    ids = sorted({int(i) for i in source_ids})
    if not ids:
        return
    # no DELETE while nothing is derived yet (the usual case: a batch's source between two of its writes): its
    # writes then touch these tables no more than before, also when concurrent batches write (DuckLake)
    if cur.execute("SELECT EXISTS (SELECT 1 FROM judge_prompt_questions WHERE list_contains($ids, source_id))",
                   {"ids": ids}).fetchone()[0]:
        cur.execute("DELETE FROM judge_prompt_questions WHERE list_contains($ids, source_id)", {"ids": ids})
    forget_sources(cur, ids)


def refresh_judge_questions(cur, benches=None) -> None:
    """Bring ``judge_questions`` up to date for these benches (None: all): the question text each stored judge prompt
    shows (``lib.vocab.question_seen``), one prompt per judgment file, judge, prompt name and question turn (the
    smallest prompt of the group's first model by name). The
    texts of each source are cut out once (``judge_prompt_questions``; again after ``sources_changed``);
    the per-question majority is then recomputed from those few rows, for these benches and those of the sources cut
    now (a source whose rows changed is cut again: ``sources_changed``)."""
    cur.execute("DELETE FROM judge_prompt_questions WHERE source_id NOT IN (SELECT source_id FROM sources)")
    todo = [r[0] for r in cur.execute(
        "SELECT source_id FROM sources WHERE source_id NOT IN (SELECT DISTINCT source_id FROM judge_prompt_questions) "
        "ORDER BY source_id").fetchall()]
    # the new sources' ids as constants: DuckDB (and DuckLake, per Parquet file) skips the row groups of every other
    # source by their min/max, instead of reading every stored prompt at each import to anti-join it
    new = f"source_id IN ({', '.join(str(int(i)) for i in todo) or 'NULL'})"
    # one row per prompt: its asked turns cut out once (question_seen_sql's ``turns``), both turns' texts from them,
    # then unnested (a UNION ALL of two selects over the grouped prompts grouped and cut them twice).
    # A group's prompt is the smallest of its first model's (by name) that has one: only those prompts are read, not
    # every prompt of the new sources (at 1M judgments min() over all of them read 2 GB back, a sixth of the import).
    # The first model is found without reading the prompts (m0: even "judge_prompt IS NOT NULL" read all 2 GB of
    # them at 1M, ~3 CPU-s); only the groups whose first model has no prompt at all (``missing``, normally none) look
    # for the first model that has one (m1), reading the prompts of those groups.
    key = "bench, question_id, turn, source_id, judge, prompt_name"
    groups = " AND ".join(f"j.{c} = {{t}}.{c}" for c in key.split(", ")[:-1]) + \
        " AND j.prompt_name IS NOT DISTINCT FROM {t}.prompt_name"
    first_prompts = f"""SELECT j.source_id, j.bench, j.question_id, j.turn, j.judge, j.prompt_name,
                              min(j.judge_prompt) AS prompt
                       FROM single_judgments j SEMI JOIN {{t}} ON {groups} AND j.model = {{t}}.model
                       WHERE j.{new} GROUP BY j.bench, j.question_id, j.turn, j.source_id, j.judge, j.prompt_name"""
    cur.execute(f"""
        INSERT INTO judge_prompt_questions
        WITH m0 AS (SELECT {key}, min(model) AS model FROM single_judgments WHERE {new} GROUP BY ALL),
             p0 AS ({first_prompts.format(t="m0")}),
             missing AS (SELECT * FROM p0 WHERE prompt IS NULL),
             m1 AS (SELECT j.bench, j.question_id, j.turn, j.source_id, j.judge, j.prompt_name, min(j.model) AS model
                    FROM single_judgments j SEMI JOIN missing ON {groups.format(t="missing")}
                    WHERE j.judge_prompt IS NOT NULL AND j.{new} GROUP BY ALL),
             p AS (SELECT source_id, bench, question_id, turn, prompt FROM p0 WHERE prompt IS NOT NULL
                   UNION ALL
                   SELECT source_id, bench, question_id, turn, prompt FROM ({first_prompts.format(t="m1")})
                   UNION ALL
                   SELECT source_id, bench, question_id, turn, min(g1_user_prompt) FROM pair_judgments
                   WHERE g1_user_prompt IS NOT NULL AND {new}
                   GROUP BY bench, question_id, turn, source_id, judge, prompt_name),
             t AS (SELECT source_id, bench, question_id, turn, {prompt_text_sql("prompt")} AS prompt FROM p),
             c AS (SELECT *, {asked_turns_sql("prompt")} AS turns FROM t),
             s AS (SELECT source_id, bench, question_id, {question_seen_sql("prompt", "turn", 1, "turns")} AS t1,
                          {question_seen_sql("prompt", "turn", 2, "turns")} AS t2 FROM c)
        SELECT * FROM (SELECT source_id, bench, question_id, unnest([1, 2]) AS turn, unnest([t1, t2]) AS text FROM s)
        WHERE text IS NOT NULL""")
    where, params = "", {}
    if benches is not None:
        if todo:  # the benches of the sources cut now: their majority may have changed whatever the caller wrote
            benches = sorted({*benches, *(b for (b,) in cur.execute(
                f"SELECT DISTINCT bench FROM judge_prompt_questions WHERE {new}").fetchall() if b is not None)})
        if not benches:
            return
        where, params = "WHERE list_contains($b, bench)", {"b": list(benches)}
    cur.execute(f"DELETE FROM judge_questions {where}", params)
    cur.execute(f"""
        INSERT INTO judge_questions
        WITH c AS (SELECT bench, question_id, turn, text, count(*) AS n FROM judge_prompt_questions {where}
                   GROUP BY ALL)
        SELECT bench, question_id, turn, first(text ORDER BY n DESC, text), sum(n), count(*)
        FROM c GROUP BY bench, question_id, turn""", params)

