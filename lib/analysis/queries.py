"""Read-only questions the pages and the CLI ask of the store. Aggregates are computed in SQL.

Every mean here follows one rule, stated wherever it is shown (``MEAN_RULE``): a judged item is
(harness, bench, judge, model, question, turn); repeated judgments of an item and Swallow's 5
samples are averaged into one item score first; judgments with no usable score are left out.
``scores(rule="harness")`` instead follows each harness's own averaging (``HARNESS_RULE``); the two
agree only when no item was judged twice and no judgment failed.
"""
from __future__ import annotations

import pandas as pd

from lib import harness as H
from lib.store import Store, frame
from lib.errors import UsageError

MEAN_RULE = ("n = judged items (question x turn). Repeated judgments of one item (re-runs, Swallow's 5 samples) "
             "are averaged per item first; judgments with no usable score (-1, $ERROR$, out of range) are left out.")

GROUP_KEYS = ("harness", "bench", "judge", "model", "turn", "category")


def has_data(store: Store) -> bool:
    with store.read() as cur:
        return cur.execute("SELECT count(*) FROM sources").fetchone()[0] > 0


def parse_group_keys(text: str) -> list[str]:
    keys = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in keys if k not in GROUP_KEYS]
    if unknown:
        raise UsageError(f"unknown group key(s) {', '.join(unknown)}; choose from {', '.join(GROUP_KEYS)}")
    return keys


RULES = ("item", "harness")

HARNESS_RULE = (
    "Rule 'harness': each harness's own averaging. FastChat rows: what show_result.py computes, the mean of the "
    "raw scores of judgment rows, -1 dropped, a duplicated judgment counted again as an extra row (it differs "
    "from the item rule exactly when an item was judged more than once). show_result.py prints turn 1 only "
    "for any bench other than mt_bench (turn 2 and the Average only for --bench-name mt_bench); the turn-2 and "
    "both-turn means here follow its code for mt_bench. Swallow rows: what its results_*.json reports x 10: "
    "per question-turn the mean of the 5 raw sample scores with -1 averaged in; per question over both turns "
    "(the _avg metrics) the mean of its two turn means, so a turn whose 5 samples all failed counts as -1; "
    "questions (or question-turns) whose mean is exactly -1 are dropped, then the mean. n = judgment rows "
    "(FastChat) or questions / question-turns (Swallow). Rows of other harnesses (JudgeLens re-judges) follow "
    "the item rule. Grouped by harness always, since each harness has its own rule.")

RULE_LABELS = {"item": "item", **{h.name: h.own_rule_label for h in H.all() if h.own_rule != H.ITEM}}


def rule_note(rule: str) -> str:
    """The sentences that state a ``scores`` rule (shown with every table)."""
    if rule == "item":
        return ("Rule 'item': " + MEAN_RULE + " These are not show_result.py's numbers when an item was judged "
                "more than once, nor Swallow's when a sample failed: use --rule harness for those.")
    return HARNESS_RULE


def scores(store: Store, by: list[str] | tuple[str, ...] = ("judge", "model", "turn"),
           where: dict[str, object] | None = None, rule: str = "item") -> pd.DataFrame:
    """Mean score and n per group, with a ``rule`` column naming the averaging rule of each row.

    ``rule="item"`` (default; see ``MEAN_RULE``): the mean of item scores, repeats and Swallow samples
    averaged per item first, unusable judgments left out. This is **not** what FastChat's show_result.py
    prints when an item was judged more than once (show_result counts every row); use ``rule="harness"``
    for that.

    ``rule="harness"`` (see ``HARNESS_RULE``): each harness's own rule, so ``harness`` is always a group
    key (added in front when ``by`` lacks it). FastChat: show_result.py's mean over rows. Swallow: the
    results file's metrics x 10 (``judge_score_*_turn_k_avg`` when grouped by turn, ``judge_score_*_avg``
    when not; per category when grouped by category).
    """
    by = list(by)
    for key in by:
        if key not in GROUP_KEYS:
            raise UsageError(f"unknown group key {key!r}")
    if rule not in RULES:
        raise UsageError(f"unknown rule {rule!r}; choose from {', '.join(RULES)}")
    conditions, params = [], {}
    for i, (key, value) in enumerate((where or {}).items()):
        if key not in GROUP_KEYS:
            raise UsageError(f"unknown filter {key!r}")
        conditions.append(f"{key} = $p{i}")
        params[f"p{i}"] = int(value) if key == "turn" else value
    if rule == "item":
        keys = ", ".join(by)
        select = f"{keys}, " if by else ""
        group = f"GROUP BY {keys} ORDER BY {keys}" if by else ""
        df = frame(store, f"SELECT {select}avg(score) AS mean, count(*) AS n FROM item_scores "
                        f"WHERE {' AND '.join(['score IS NOT NULL'] + conditions)} {group}", params)
        df["rule"] = RULE_LABELS["item"]
        return df
    if "harness" not in by:
        by = ["harness"] + by
    keys = ", ".join(by)
    where_sql = " AND ".join(conditions) or "TRUE"
    doc_turn = ", turn" if "turn" in by else ""
    show_result, results_file = H.where(own_rule=H.SHOW_RESULT), H.where(own_rule=H.RESULTS_FILE)
    category_means, sample_runs = H.where(own_rule=H.CATEGORY_MEANS), H.where(own_rule=H.SAMPLE_RUNS)
    own = show_result + results_file + category_means + sample_runs
    labels = "CASE j.harness " + " ".join(f"WHEN '{h.name}' THEN '{h.own_rule_label}'" for h in own) + " END"
    # each harness's failure code (raw scores at it are dropped by the row rules); NULL: none
    codes = [f"WHEN '{h.name}' THEN {h.failure_code}" for h in own if h.failure_code is not None]
    failure = f"CASE j.harness {' '.join(codes)} END" if codes else "NULL::DOUBLE"
    cat_extra = "" if "category" in by else ", category"
    df = frame(store, f"""
        WITH j AS (
            SELECT j.harness, j.bench, j.judge, j.model, j.question_id, j.turn, j.sample, q.category, j.raw_score,
                   j.score, {labels} AS rule, raw_score IS NOT DISTINCT FROM {failure} AS at_failure
            FROM single_judgments j
            LEFT JOIN current_questions q ON q.bench = j.bench AND q.question_id = j.question_id),
        f AS (SELECT * FROM j WHERE {where_sql}),
        show_result AS (
            SELECT {keys}, avg(raw_score) AS mean, count(raw_score) AS n, any_value(rule) AS rule
            FROM f WHERE {H.sql_is("harness", show_result)} AND NOT at_failure GROUP BY {keys}),
        cm_items AS (
            SELECT harness, bench, judge, model, question_id, turn, any_value(category) AS category,
                   any_value(rule) AS rule, avg(raw_score) AS v
            FROM f WHERE {H.sql_is("harness", category_means)} AND NOT at_failure
            GROUP BY harness, bench, judge, model, question_id, turn),
        cm_cats AS (SELECT {keys}{cat_extra}, any_value(rule) AS rule, avg(v) AS v, count(*) AS n FROM cm_items
                    GROUP BY {keys}{cat_extra}),
        category_means AS (SELECT {keys}, avg(v) AS mean, sum(n) AS n, any_value(rule) AS rule FROM cm_cats
                           GROUP BY {keys}),
        sr_runs AS (SELECT {keys}, sample, any_value(rule) AS rule, avg(raw_score) AS v, count(raw_score) AS n
                    FROM f WHERE {H.sql_is("harness", sample_runs)} AND NOT at_failure GROUP BY {keys}, sample),
        sample_runs AS (SELECT {keys}, avg(v) AS mean, sum(n) AS n, any_value(rule) AS rule FROM sr_runs
                        GROUP BY {keys}),
        sw_items AS (
            SELECT harness, bench, judge, model, question_id, turn, any_value(category) AS category,
                   any_value(rule) AS rule, avg(raw_score) AS v
            FROM f WHERE {H.sql_is("harness", results_file)} GROUP BY harness, bench, judge, model, question_id, turn),
        sw_docs AS (
            SELECT harness, bench, judge, model, question_id{doc_turn}, any_value(category) AS category,
                   any_value(rule) AS rule, avg(v) AS v
            FROM sw_items GROUP BY harness, bench, judge, model, question_id{doc_turn}),
        results_file AS (
            SELECT {keys}, avg(v) AS mean, count(*) AS n, any_value(rule) AS rule
            FROM sw_docs WHERE v <> -1 GROUP BY {keys}),
        other AS (
            SELECT {keys}, avg(score) AS mean, count(*) AS n, '{RULE_LABELS["item"]}' AS rule
            FROM item_scores WHERE {H.sql_is_not("harness", own)} AND score IS NOT NULL
                 AND {where_sql} GROUP BY {keys})
        SELECT * FROM show_result UNION ALL SELECT * FROM results_file UNION ALL SELECT * FROM category_means
        UNION ALL SELECT * FROM sample_runs UNION ALL SELECT * FROM other
        ORDER BY {keys}""", params)
    return df[[*by, "mean", "n", "rule"]]


def overview_counts(store: Store) -> dict[str, int]:
    sql = f"""
    SELECT (SELECT count(*) FROM sources) AS sources,
           (SELECT count(DISTINCT harness) FROM sources) AS harnesses,
           (SELECT count(DISTINCT bench) FROM current_questions) AS benches,
           (SELECT count(DISTINCT model) FROM single_judgments) AS models,
           (SELECT count(DISTINCT judge) FROM single_judgments) AS judges,
           (SELECT count(*) FROM single_judgments) AS single_judgments,
           (SELECT count(*) FROM pair_judgments) AS pair_judgments,
           (SELECT count(*) FROM item_scores) AS judged_items,
           (SELECT count(*) FROM single_judgments WHERE parse_status <> 'ok') AS no_score,
           (SELECT count(*) FROM item_scores WHERE {H.sql_is("harness", H.where(appends_reruns=True))}
                   AND n_rows > 1) AS duplicated_items
    """
    with store.read() as cur:
        row = cur.execute(sql).fetchone()
        names = [d[0] for d in cur.description]
    return dict(zip(names, row))


def categories(store: Store, bench: str) -> list[str]:
    with store.read() as cur:
        rows = cur.execute("SELECT DISTINCT category FROM current_questions WHERE bench = ? AND category IS NOT NULL "
                           "ORDER BY category", [bench]).fetchall()
    return [r[0] for r in rows]


def judges_by_harness(store: Store) -> pd.DataFrame:
    """What was judged by whom: one row per harness, bench, judge, model with counts and failures. The analysts'
    verdicts count as judges human:<author> (harness 'human'; judgments = items with a current score)."""
    return frame(store, f"""
        SELECT * FROM (
            SELECT harness, bench, judge, model,
                   count(*) AS judgments,
                   count(DISTINCT (question_id, turn)) AS items,
                   count(*) FILTER (parse_status = 'not_parsed') AS not_parsed,
                   count(*) FILTER (parse_status = 'api_error') AS api_errors,
                   count(*) FILTER (parse_status = 'out_of_range') AS out_of_range
            FROM single_judgments GROUP BY ALL
            UNION ALL
            SELECT harness, bench, judge, model, count(*), count(DISTINCT (question_id, turn)), 0, 0, 0
            FROM item_scores WHERE harness = '{H.HUMAN.name}' AND score IS NOT NULL GROUP BY ALL)
        ORDER BY harness, bench, judge, model""")


def duplicate_items(store: Store) -> pd.DataFrame:
    """Items judged more than once by the same judge (FastChat re-runs append; Swallow samples excluded)."""
    return frame(store, f"""
        SELECT harness, bench, judge, model, count(*) AS items, sum(n_rows) AS judgments
        FROM item_scores WHERE {H.sql_is("harness", H.where(appends_reruns=True))} AND n_rows > 1
        GROUP BY ALL ORDER BY ALL""")


def _reported_sql() -> str:
    """The harnesses' own reported numbers (results files), on the judges' scale, per harness, bench and model."""
    parts = [f"""SELECT harness, bench, model,
                   {1 / h.reported_scale:g} * avg(value) FILTER (metric = '{h.reported_metrics[1]}') AS t1_harness,
                   {1 / h.reported_scale:g} * avg(value) FILTER (metric = '{h.reported_metrics[2]}') AS t2_harness,
                   {1 / h.reported_scale:g} * avg(value) FILTER (metric = '{h.reported_metrics[0]}') AS overall_harness
            FROM reported_metrics WHERE harness = '{h.name}' GROUP BY ALL"""
             for h in H.where(own_rule=H.RESULTS_FILE) if h.reported_metrics]
    return " UNION ALL ".join(parts) or ("SELECT NULL::VARCHAR AS harness, NULL::VARCHAR AS bench, NULL::VARCHAR AS "
                                         "model, NULL::DOUBLE AS t1_harness, NULL::DOUBLE AS t2_harness, "
                                         "NULL::DOUBLE AS overall_harness WHERE FALSE")


def leaderboard(store: Store) -> pd.DataFrame:
    """Per harness x bench x judge x model: JudgeLens's T1, T2 and overall next to the harness's own number.

    ``*_harness`` columns: for FastChat, what show_result.py computes (mean of rows, -1 dropped, duplicates
    counted as extra rows; it prints turn 1 only for benches other than mt_bench, so t2/overall follow its
    mt_bench code); for Swallow, the results JSON metric x 10 (it averages -1 into samples).
    """
    return frame(store, f"""
        WITH items AS (SELECT * FROM item_scores WHERE score IS NOT NULL),
        ours AS (
            SELECT harness, bench, judge, model,
                   avg(score) FILTER (turn = 1) AS t1, avg(score) FILTER (turn = 2) AS t2,
                   avg(score) AS overall, count(*) AS n_items
            FROM items GROUP BY ALL),
        fastchat_rule AS (
            SELECT harness, bench, judge, model,
                   avg(raw_score) FILTER (turn = 1 AND raw_score <> -1) AS t1_harness,
                   avg(raw_score) FILTER (turn = 2 AND raw_score <> -1) AS t2_harness,
                   avg(raw_score) FILTER (raw_score <> -1) AS overall_harness
            FROM single_judgments WHERE {H.sql_is("harness", H.where(own_rule=H.SHOW_RESULT))} GROUP BY ALL),
        swallow_reported AS ({_reported_sql()})
        SELECT o.harness, o.bench, o.judge, o.model, o.t1, o.t2, o.overall, o.n_items,
               coalesce(f.t1_harness, s.t1_harness) AS t1_harness,
               coalesce(f.t2_harness, s.t2_harness) AS t2_harness,
               coalesce(f.overall_harness, s.overall_harness) AS overall_harness
        FROM ours o
        LEFT JOIN fastchat_rule f USING (harness, bench, judge, model)
        LEFT JOIN swallow_reported s ON s.harness = o.harness AND s.bench = o.bench AND s.model = o.model
        ORDER BY o.harness, o.bench, o.judge, o.overall DESC""")


def rank_models(board: pd.DataFrame, judge: str | None = None) -> list[str]:
    """Models of a leaderboard frame, best first: by one judge's overall mean, or (``judge`` None) by the
    mean of every judge's overall. Models that judge did not score come last, in name order."""
    rows = board if judge is None else board[board["judge"] == judge]
    means = rows.groupby("model")["overall"].mean().dropna().to_dict()  # a dict: a Series lookup per model costs
    ranked = sorted(means, key=lambda m: (-means[m], m))                 # 0.2 ms, 0.25 s at 1,250 models
    seen = set(ranked)
    return ranked + sorted(m for m in board["model"].unique() if m not in seen)


def order_by_rank(board: pd.DataFrame, ranked: list[str]) -> pd.DataFrame:
    """The leaderboard rows in ``ranked`` model order (then harness, bench, judge)."""
    position = {m: i for i, m in enumerate(ranked)}
    return (board.assign(_rank=board["model"].map(position))
            .sort_values(["_rank", "harness", "bench", "judge"]).drop(columns="_rank").reset_index(drop=True))


def sources(store: Store) -> pd.DataFrame:
    return frame(store, """
        SELECT source_id, harness, kind, bench, file_name, rows_imported, rows_skipped,
               array_to_string(warnings, '; ') AS warnings, imported_at, bytes, sha256, path, scale_min, scale_max,
               failure_code
        FROM sources ORDER BY source_id""")


def skipped_lines(store: Store, source_id: int) -> list[dict]:
    import json

    with store.read() as cur:
        row = cur.execute("SELECT skipped_lines FROM sources WHERE source_id = ?", [source_id]).fetchone()
    return json.loads(row[0]) if row and row[0] else []
