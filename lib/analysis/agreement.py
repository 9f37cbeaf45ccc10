"""Judge agreement: how far judges agree on the same items, pairwise verdicts, and parse failures.

A *judge* is the value of ``single_judgments.judge``. An *item* is (bench, question_id, model, turn);
its score for a judge is ``item_scores.score`` (see ``queries.MEAN_RULE``: repeated judgments and
Swallow samples averaged, parse failures left out). Items are never matched across benches.

Everything that touches many rows is aggregated in SQL (the item pivot reads single_judgments in one
pass and averages per item itself, with the same rule as the ``item_scores`` table); only the item
matrix (one row per item, one column per judge) or small aggregates come back as pandas DataFrames.
The statistics on the matrix use scipy / scikit-learn.

**Rounding.** Quadratic weighted kappa (QWK) needs integer categories, so for ``qwk``, ``exact``
and ``within1`` each item score is rounded to the nearest integer, halves up (7.5 -> 8): these
three describe agreement on the 1-10 *ratings* a reader sees. Pearson, Spearman, Kendall,
``mean_diff`` and ``mae`` use the unrounded item scores. With one judgment per item and integer
ratings (plain FastChat files) rounding changes nothing.
"""
from __future__ import annotations

import math
import warnings
from itertools import combinations

import numpy as np
import pandas as pd

from lib import harness as H
from lib.errors import JudgeChoiceError, UnknownJudgeError, UsageError
from lib.store import Store, frame
from lib.vocab import QID_ORDER, qid_order

ITEM_KEYS = ("bench", "question_id", "model", "turn")
MATRIX_KEYS = ITEM_KEYS + ("category",)
AGREEMENT_COLUMNS = ("judge_a", "judge_b", "n", "pearson", "spearman", "kendall", "qwk",
                     "exact", "within1", "mean_diff", "mae")
PAIR_POLICIES = ("fastchat", "strict", "game")
PAIR_POLICY_LABELS = {
    "fastchat": "FastChat show_result (errors dropped; a tie or inconsistent A/B games = tie for both)",
    "strict": "strict (only verdicts that survive the A/B swap count; inconsistent rows set aside)",
    "game": "per game (each of the two games counts on its own)",
}

AGREEMENT_NOTE = (
    "n = items (bench x question x model x turn) both judges scored; each judge's item score is the mean "
    "of its usable judgments of that item. pearson/spearman/kendall (tau-b)/mean_diff (a - b)/mae use those "
    "means; qwk (quadratic weighted kappa), exact and within1 (|a - b| <= 1) use them rounded half up to "
    "whole 1-10 ratings. qwk's label set is every rating 1-10 (not only the ratings that occur), so a "
    "disagreement weighs by its squared distance on the full scale. Empty = undefined (fewer than 2 items or a "
    "constant judge).")


def known_judges(store: Store) -> list[str]:
    """Every judge that has single judgments in the store, and every analyst with verdicts (human:<author>), sorted."""
    with store.read() as cur:
        return [r[0] for r in cur.execute("SELECT DISTINCT judge FROM single_judgments UNION "
                                          "SELECT DISTINCT judge FROM item_scores WHERE harness = ? "
                                          "ORDER BY judge", [H.HUMAN.name]).fetchall()]


def check_choice(judges: list[str], minimum: int = 1) -> list[str]:
    """The judges as a list, checked without the store: JudgeChoiceError for repeats, too few judges or a name
    that clashes with a column. ``check_judges`` adds the store's check; ``item_matrix`` and ``disagreements``
    make it after their one query, so a caller about to read the matrix checks the choice alone."""
    judges = list(judges)
    if len(set(judges)) != len(judges):
        raise JudgeChoiceError(f"Each judge may be named once; got {', '.join(judges)}.")
    if len(judges) < minimum:
        raise JudgeChoiceError(f"Choose at least {minimum} judges; got {len(judges)}.")
    clash = [j for j in judges if j in MATRIX_KEYS + ("spread",)]
    if clash:
        raise JudgeChoiceError(f"A judge named {clash[0]!r} clashes with a column name.")
    return judges


def check_judges(store: Store, judges: list[str], minimum: int = 1, *, scored=()) -> list[str]:
    """``check_choice``, then UnknownJudgeError (listing the known judges) for a name the store does not have.

    ``scored``: judges just read with a score from the store, known without asking: the store's judge list
    (a scan of every judgment's judge, and a catalog round on a lake) is read only for a judge not among them."""
    judges = check_choice(judges, minimum)
    seen = set(scored)
    if all(j in seen for j in judges):
        return judges
    known = known_judges(store)
    unknown = [j for j in judges if j not in known]
    if unknown:
        listed = ", ".join(known) or "(none: import judgments first)"
        raise UnknownJudgeError(f"Unknown judge(s): {', '.join(unknown)}. Known judges: {listed}.")
    return judges


def _item_filters(bench, model, turn) -> tuple[list[str], dict]:
    conditions, params = [], {}
    for key, value in (("bench", bench), ("model", model), ("turn", turn)):
        if value is not None:
            conditions.append(f"{key} = ${key}")
            params[key] = int(value) if key == "turn" else value
    return conditions, params


def _judge_params(judges: list[str]) -> tuple[str, dict]:
    params = {f"j{i}": j for i, j in enumerate(judges)}
    return ", ".join(f"$j{i}" for i in range(len(judges))), params


# ---------------------------------------------------------------------------------------------
# Single-answer scores: item matrix, agreement, disagreements
# ---------------------------------------------------------------------------------------------

def _pivot_sql(judges: list[str], bench, model, turn, category) -> tuple[str, dict]:
    """SQL for one row per item with a column c<i> per judge holding its ``item_scores.score`` (the
    materialised per-item table, so this is a pivot of narrow rows, not a regrouping of judgments)."""
    placeholders, params = _judge_params(judges)
    conditions, filter_params = _item_filters(bench, model, turn)
    params.update(filter_params)
    if category is not None:
        conditions.append("category = $category")
        params["category"] = category
    where = " AND ".join([f"judge IN ({placeholders})", "score IS NOT NULL"] + conditions)
    columns = ", ".join(f"avg(score) FILTER (WHERE judge = $j{i}) AS c{i}" for i in range(len(judges)))
    return f"""SELECT bench, question_id, model, turn, {columns}
               FROM item_scores WHERE {where}
               GROUP BY bench, question_id, model, turn""", params


def item_matrix(store: Store, judges: list[str], *, bench: str | None = None, model: str | None = None,
                turn: int | None = None, category: str | None = None) -> pd.DataFrame:
    """One row per item any of ``judges`` judged: bench, question_id, model, turn, category, then one
    column per judge holding its item score (NaN when that judge has no usable score for the item).

    The item score is ``item_scores.score``: the mean of the judge's usable judgments of the item
    (repeats and Swallow samples averaged, parse failures left out). Should one judge have judged the
    same item under two harnesses, the two harness means are averaged. Rows are ordered by bench, question id
    (numeric ids numerically), model, turn.
    """
    judges = check_choice(judges)
    pivot, params = _pivot_sql(judges, bench, model, turn, category)
    cols = ", ".join(f"p.c{i}" for i in range(len(judges)))
    df = frame(store, f"""
        WITH p AS ({pivot})
        SELECT p.bench, p.question_id, p.model, p.turn, q.category, {cols}
        FROM p LEFT JOIN current_questions q ON q.bench = p.bench AND q.question_id = p.question_id
        ORDER BY p.bench, {qid_order('p')}, p.model, p.turn""", params)
    check_judges(store, judges, scored=_scored(df, judges))
    return df.rename(columns={f"c{i}": j for i, j in enumerate(judges)})


def _scored(df: pd.DataFrame, judges: list[str]) -> list[str]:
    """The judges whose column c<i> of a pivot holds a score: known to the store."""
    return [j for i, j in enumerate(judges) if df[f"c{i}"].notna().any()]


def round_half_up(values) -> np.ndarray:
    """Nearest integer, halves up (7.5 -> 8, 2.5 -> 3), unlike numpy's round-half-to-even."""
    return np.floor(np.asarray(values, dtype=float) + 0.5)


def _quiet(fn, *args, **kwargs) -> float:
    """fn's statistic as a float; NaN (and no warning) when it is undefined."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            value = fn(*args, **kwargs)
        except (ValueError, ZeroDivisionError, FloatingPointError):
            return math.nan
    value = getattr(value, "statistic", value)
    if isinstance(value, tuple):
        value = value[0]
    value = float(value)
    return value if math.isfinite(value) else math.nan


def quadratic_kappa(ra: np.ndarray, rb: np.ndarray) -> float:
    """Quadratic-weighted Cohen's kappa of two integer ratings (statsmodels, on their contingency table).

    The table spans every rating from min(1, …) to max(10, …), so a disagreement weighs (difference)^2 even
    for ratings that never occur. Equal to sklearn's cohen_kappa_score(weights="quadratic", labels=1..10)
    (a test checks it) but builds the table with numpy: sklearn maps labels in a Python loop, 0.2 s per
    pair at 200k items.
    """
    from statsmodels.stats.inter_rater import cohens_kappa

    lo, hi = int(min(1, ra.min(), rb.min())), int(max(10, ra.max(), rb.max()))
    k = hi - lo + 1
    table = np.bincount((ra - lo) * k + (rb - lo), minlength=k * k).reshape(k, k)
    return _quiet(cohens_kappa, table, wt="quadratic", return_results=False)


def _pair_stats(a: np.ndarray, b: np.ndarray) -> dict:
    from scipy import stats

    n = len(a)
    out = {"n": n}
    if n >= 2:
        out["pearson"] = _quiet(stats.pearsonr, a, b)
        out["spearman"] = _quiet(stats.spearmanr, a, b)
        out["kendall"] = _quiet(stats.kendalltau, a, b)  # tau-b (the default variant)
    else:
        out["pearson"] = out["spearman"] = out["kendall"] = math.nan
    ra, rb = round_half_up(a), round_half_up(b)
    out["qwk"] = quadratic_kappa(ra.astype(np.int64), rb.astype(np.int64)) if n >= 2 else math.nan
    if n:
        diff = a - b
        out["exact"] = float(np.mean(ra == rb))
        out["within1"] = float(np.mean(np.abs(ra - rb) <= 1))
        out["mean_diff"] = float(np.mean(diff))
        out["mae"] = float(np.mean(np.abs(diff)))
    else:
        out["exact"] = out["within1"] = out["mean_diff"] = out["mae"] = math.nan
    return out


def pairwise_agreement(matrix: pd.DataFrame, judges: list[str]) -> pd.DataFrame:
    """One row per unordered judge pair (in the order given) over the items both judges scored.

    Columns: judge_a, judge_b, n, pearson, spearman, kendall (tau-b), qwk, exact, within1,
    mean_diff (mean of a - b), mae (mean |a - b|). See the module docstring for which columns use
    rounded scores. Undefined statistics (n < 2, a constant judge) are NaN, without warnings.
    """
    if len(set(judges)) != len(judges):
        raise JudgeChoiceError(f"Each judge may be named once; got {', '.join(judges)}.")
    missing = [j for j in judges if j not in matrix.columns]
    if missing:
        raise ValueError(f"the matrix has no column for {', '.join(missing)}")
    rows = []
    for ja, jb in combinations(judges, 2):
        both = matrix[[ja, jb]].dropna()
        stats = _pair_stats(both[ja].to_numpy(dtype=float), both[jb].to_numpy(dtype=float))
        rows.append({"judge_a": ja, "judge_b": jb, **stats})
    df = pd.DataFrame(rows, columns=list(AGREEMENT_COLUMNS))
    return df.astype({"n": "int64"})


def agreement(store: Store, judges: list[str], *, bench: str | None = None, model: str | None = None,
              turn: int | None = None, category: str | None = None) -> pd.DataFrame:
    """``pairwise_agreement`` of the judges' item matrix (same filters as ``item_matrix``)."""
    matrix = item_matrix(store, judges, bench=bench, model=model, turn=turn, category=category)
    return pairwise_agreement(matrix, list(judges))


def score_pair_counts(matrix: pd.DataFrame, judges: list[str]) -> pd.DataFrame:
    """For every pair of judges: how many items got each (x, y) pair of scores, rounded half up.

    Columns: x, y, items, pair ("A (x) vs B (y)"). What a judge-vs-judge scatter draws, at most
    100 rows per pair however many items there are.
    """
    frames = []
    for a, b in combinations(judges, 2):
        both = matrix[[a, b]].dropna()
        both = pd.DataFrame({"x": round_half_up(both[a]), "y": round_half_up(both[b])})
        counts = both.groupby(["x", "y"]).size().reset_index(name="items")
        counts["pair"] = f"{a} (x) vs {b} (y)"
        frames.append(counts)
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["x", "y", "items", "pair"])


def pair_counts(store: Store, judges: list[str], *, bench: str | None = None, model: str | None = None,
                turn: int | None = None, category: str | None = None) -> pd.DataFrame:
    """``score_pair_counts`` of the judges' item matrix (same filters as ``item_matrix``)."""
    matrix = item_matrix(store, judges, bench=bench, model=model, turn=turn, category=category)
    return score_pair_counts(matrix, list(judges))


def agreement_by_turn(store: Store, judges: list[str], *, bench: str | None = None, model: str | None = None,
                      category: str | None = None) -> pd.DataFrame:
    """``agreement`` per turn: a turn column, then the pairwise columns (one matrix query in all)."""
    matrix = item_matrix(store, judges, bench=bench, model=model, category=category)
    frames = [pairwise_agreement(part, list(judges)).assign(turn=int(turn))
              for turn, part in matrix.groupby("turn", sort=True)]
    if not frames:
        return pd.DataFrame(columns=["turn", *AGREEMENT_COLUMNS])
    df = pd.concat(frames, ignore_index=True)
    return df[["turn", *AGREEMENT_COLUMNS]]


def disagreements(store: Store, judges: list[str], *, bench: str | None = None, model: str | None = None,
                  turn: int | None = None, category: str | None = None, limit: int = 50) -> pd.DataFrame:
    """The items the chosen judges disagree on most.

    spread = max - min of the judges' item scores, over items at least 2 of them scored. Ranked by
    spread (largest first), then bench, question id, model, turn. Keys and scores only: fetch the
    texts for the rows you show. Columns: bench, question_id, model, turn, category, spread, then one
    score column per judge (NaN where that judge has no score).
    """
    judges = check_choice(judges, minimum=2)
    pivot, params = _pivot_sql(judges, bench, model, turn, category)
    params["limit"] = int(limit)
    cols = [f"c{i}" for i in range(len(judges))]
    scored = " + ".join(f"({c} IS NOT NULL)::INT" for c in cols)
    df = frame(store, f"""
        WITH p AS ({pivot}),
        top AS (
            SELECT bench, question_id, model, turn, greatest({', '.join(cols)}) - least({', '.join(cols)}) AS spread,
                   {', '.join(cols)}
            FROM p WHERE {scored} >= 2
            ORDER BY spread DESC, bench, {QID_ORDER}, model, turn
            LIMIT $limit)
        SELECT t.bench, t.question_id, t.model, t.turn, q.category, t.spread, {', '.join('t.' + c for c in cols)}
        FROM top t LEFT JOIN current_questions q ON q.bench = t.bench AND q.question_id = t.question_id
        ORDER BY t.spread DESC, t.bench, {qid_order('t')}, t.model, t.turn
        """, params)
    check_judges(store, judges, scored=_scored(df, judges))
    return df.rename(columns={f"c{i}": j for i, j in enumerate(judges)})


# ---------------------------------------------------------------------------------------------
# Pairwise judgments
# ---------------------------------------------------------------------------------------------

# Per pair_judgments row, in model_1's terms: w1 = verdicts for model_1, l1 = verdicts for model_2,
# t = ties, dropped = rows (or games) left out. g1/g2 are already mapped back to model_1/model_2.
_POLICY_SQL = {
    "fastchat": {"w1": "(ok AND g1 = g2 AND g1 = 'model_1')::INT",
                 "l1": "(ok AND g1 = g2 AND g1 = 'model_2')::INT",
                 "t": "(ok AND (g1 = 'tie' OR g1 <> g2))::INT",
                 "dropped": "(NOT ok)::INT"},
    "strict": {"w1": "(ok AND g1 = g2 AND g1 = 'model_1')::INT",
               "l1": "(ok AND g1 = g2 AND g1 = 'model_2')::INT",
               "t": "(ok AND g1 = g2 AND g1 = 'tie')::INT",
               "dropped": "(NOT ok OR g1 <> g2)::INT"},
    "game": {"w1": "(g1 = 'model_1')::INT + (g2 = 'model_1')::INT",
             "l1": "(g1 = 'model_2')::INT + (g2 = 'model_2')::INT",
             "t": "(g1 = 'tie')::INT + (g2 = 'tie')::INT",
             "dropped": "(g1 = 'error')::INT + (g2 = 'error')::INT"},
}


def _pair_filters(judge: str | None, bench: str | None) -> tuple[str, dict]:
    conditions, params = ["TRUE"], {}
    for key, value in (("judge", judge), ("bench", bench)):
        if value is not None:
            conditions.append(f"{key} = ${key}")
            params[key] = value
    return " AND ".join(conditions), params


def _pair_sides_sql(policy: str, judge: str | None, bench: str | None,
                    baseline: str | None = None) -> tuple[str, dict]:
    """SQL for ``sides``: per (bench, judge, model, opponent, verdict pattern) the weighted win, loss,
    tie, dropped and inconsistent counts. Rows are first counted per verdict pattern (g1, g2), so the
    policy is applied to a handful of rows per model pair, not to every judgment."""
    if policy not in _POLICY_SQL:
        raise UsageError(f"unknown policy {policy!r}; choose from {', '.join(PAIR_POLICIES)}")
    where, params = _pair_filters(judge, bench)
    if baseline is not None:  # show_result.py --mode pairwise-baseline: only rows that include the baseline
        where += " AND (model_1 = $baseline OR model_2 = $baseline)"
        params["baseline"] = baseline
    rule = ",\n                   ".join(f"k * ({expr}) AS {name}" for name, expr in _POLICY_SQL[policy].items())
    sql = f"""
        WITH g AS (
            SELECT bench, judge, model_1, model_2, g1_winner AS g1, g2_winner AS g2, count(*) AS k,
                   (g1_winner <> 'error' AND g2_winner <> 'error') AS ok
            FROM pair_judgments WHERE {where}
            GROUP BY bench, judge, model_1, model_2, g1_winner, g2_winner),
        v AS (
            SELECT bench, judge, model_1, model_2, k * (ok AND g1 <> g2)::INT AS inconsistent,
                   {rule}
            FROM g),
        sides AS (
            SELECT bench, judge, model_1 AS model, model_2 AS opponent,
                   w1 AS win, l1 AS loss, t AS tie, dropped, inconsistent FROM v
            UNION ALL
            SELECT bench, judge, model_2 AS model, model_1 AS opponent,
                   l1 AS win, w1 AS loss, t AS tie, dropped, inconsistent FROM v)"""
    return sql, params


def _rate_columns() -> str:
    return """sum(win)::BIGINT AS win, sum(loss)::BIGINT AS loss, sum(tie)::BIGINT AS tie,
              sum(win + loss + tie)::BIGINT AS n,
              sum(win) / nullif(sum(win + loss + tie), 0) AS win_rate,
              sum(loss) / nullif(sum(win + loss + tie), 0) AS loss_rate,
              (sum(win) + 0.5 * sum(tie)) / nullif(sum(win + loss + tie), 0) AS win_rate_adjusted,
              sum(inconsistent)::BIGINT AS inconsistent, sum(dropped)::BIGINT AS dropped"""


def pair_win_rates(store: Store, *, judge: str | None = None, bench: str | None = None,
                   policy: str = "fastchat", baseline: str | None = None) -> pd.DataFrame:
    """Win / loss / tie per model from pairwise judgments, per bench and judge.

    Columns: bench, judge, model, win, loss, tie, n = win + loss + tie, win_rate = win/n,
    loss_rate = loss/n, win_rate_adjusted = (win + 0.5 tie)/n, inconsistent (rows whose two games
    disagree, both without error) and dropped (what the policy left out of n). Sorted by bench,
    judge, adjusted win rate (highest first).

    Policies (a row is one question x turn x model pair, judged in two games with A/B swapped):

    - ``"fastchat"``: FastChat show_result.py. Rows with an ``error`` in either game are dropped. A row
      whose game 1 is a tie, or whose two games disagree (inconsistent), is a tie for both models;
      otherwise the agreed winner gets a win and the other model a loss. One row counts once.
    - ``"strict"``: only rows whose two games agree count. Agreed winner -> win/loss, agreed tie ->
      tie; inconsistent rows are dropped (and counted in ``inconsistent``/``dropped``), as are error rows.
    - ``"game"``: every game counts on its own (up to 2 verdicts per row); an ``error`` game is dropped,
      the row's other game still counts. n counts games, not rows.

    ``baseline``: FastChat's ``--mode pairwise-baseline``: only rows in which the baseline is one of the
    two models count, and the baseline's own row is left out, so each model's numbers are against the
    baseline. Without it, ``--mode pairwise-all``: every row, each model against all its opponents.
    """
    sql, params = _pair_sides_sql(policy, judge, bench, baseline)
    not_baseline = "WHERE model <> $baseline" if baseline is not None else ""
    return frame(store, f"""{sql}
        SELECT bench, judge, model, {_rate_columns()}
        FROM sides {not_baseline} GROUP BY bench, judge, model
        ORDER BY bench, judge, win_rate_adjusted DESC NULLS LAST, model""", params)


def pair_matrix(store: Store, *, judge: str | None = None, bench: str | None = None,
                policy: str = "fastchat") -> pd.DataFrame:
    """``pair_win_rates`` per ordered model pair: one row per (bench, judge, model, opponent), the
    rates being ``model``'s against ``opponent`` only. Both directions are listed."""
    sql, params = _pair_sides_sql(policy, judge, bench)
    return frame(store, f"""{sql}
        SELECT bench, judge, model, opponent, {_rate_columns()}
        FROM sides GROUP BY bench, judge, model, opponent
        ORDER BY bench, judge, model, opponent""", params)


def position_consistency(store: Store, *, judge: str | None = None, bench: str | None = None) -> pd.DataFrame:
    """Position (swap) consistency of pairwise judges, per bench and judge.

    Every row was judged twice: game 1 shows model_1 first (position A), game 2 shows model_2 first;
    both verdicts are stored mapped back to model_1/model_2. So *the model shown first won* a game when
    ``g1_winner = 'model_1'`` (game 1) or ``g2_winner = 'model_2'`` (game 2).

    - n: rows with no ``error`` in either game; errors: rows with one.
    - consistent: rows whose two verdicts agree (g1 == g2, ties included); consistency = consistent / n.
    - inconsistent = n - consistent. Each such row leans to one position: favors_first when the
      first-shown model won more of its two games than the second-shown one (A won both games, or one
      game with the other a tie), favors_second the reverse.
    - first_position_bias = favors_first / inconsistent (0.5 = no position preference; NaN if none).
    - always_first / always_second: rows where the first- (second-) shown model won *both* games —
      the "biased toward first/second" counts of Zheng et al. 2023, Table 2.
    """
    where, params = _pair_filters(judge, bench)
    return frame(store, f"""
        WITH g AS (
            SELECT bench, judge, g1_winner AS g1, g2_winner AS g2, count(*) AS k
            FROM pair_judgments WHERE {where} GROUP BY bench, judge, g1_winner, g2_winner),
        r AS (
            SELECT *, (g1 <> 'error' AND g2 <> 'error') AS ok,
                   (g1 = 'model_1')::INT + (g2 = 'model_2')::INT AS first_games,
                   (g1 = 'model_2')::INT + (g2 = 'model_1')::INT AS second_games
            FROM g),
        c AS (
            SELECT bench, judge,
                   coalesce(sum(k) FILTER (ok), 0) AS n,
                   coalesce(sum(k) FILTER (ok AND g1 = g2), 0) AS consistent,
                   coalesce(sum(k) FILTER (ok AND g1 <> g2), 0) AS inconsistent,
                   coalesce(sum(k) FILTER (ok AND g1 <> g2 AND first_games > second_games), 0) AS favors_first,
                   coalesce(sum(k) FILTER (ok AND g1 <> g2 AND first_games < second_games), 0) AS favors_second,
                   coalesce(sum(k) FILTER (g1 = 'model_1' AND g2 = 'model_2'), 0) AS always_first,
                   coalesce(sum(k) FILTER (g1 = 'model_2' AND g2 = 'model_1'), 0) AS always_second,
                   coalesce(sum(k) FILTER (NOT ok), 0) AS errors
            FROM r GROUP BY bench, judge)
        SELECT bench, judge, n::BIGINT AS n, consistent::BIGINT AS consistent, consistent / nullif(n, 0) AS consistency,
               inconsistent::BIGINT AS inconsistent, favors_first::BIGINT AS favors_first,
               favors_second::BIGINT AS favors_second, favors_first / nullif(inconsistent, 0) AS first_position_bias,
               always_first::BIGINT AS always_first, always_second::BIGINT AS always_second, errors::BIGINT AS errors
        FROM c ORDER BY bench, judge""", params)


# ---------------------------------------------------------------------------------------------
# Parse failures and the harnesses' own averaging rules
# ---------------------------------------------------------------------------------------------

RULE_KEYS = ("harness", "bench", "judge", "model", "turn", "category")

RULES_NOTE = (
    "mean_fastchat_rule: FastChat show_result.py, the mean of raw scores over judgment rows with raw "
    "score <> -1 (repeats count as extra rows; out-of-range scores such as 11 are kept). "
    "mean_swallow_rule: Swallow lighteval, per item the mean of the raw scores of all its samples with -1 "
    "averaged in, items whose mean is exactly -1 dropped, then the mean over items (equals Swallow's "
    "judge_score_*_turn_k_avg x 10 when restricted to one turn). mean_judgelens: the mean of item "
    "scores (item_scores: repeats averaged per item, -1, $ERROR$ and out-of-range left out).")


_ITEM_KEYS = "harness, bench, judge, model, question_id, turn"


def _rules_sql(keys: tuple[str, ...], conditions: list[str], with_single_bracket: bool) -> str:
    """The rules' counts and means per ``keys``. An item's judgments are grouped per item only where it has more
    than one (Swallow's samples, FastChat's repeats: ``item_scores.n_rows``); an item of one judgment is that row,
    taken as it is (grouping every item of a million judgments was three quarters of the parse-failure tab's read,
    0.8 CPU-s; the same numbers, the sums in another order)."""
    text_columns = """,
                   count(*) FILTER (j.single_bracket) AS single_bracket_only""" if with_single_bracket else ""
    one_text = ", (j.single_bracket IS TRUE)::BIGINT AS single_bracket_only" if with_single_bracket else ""
    text_sum = ", sum(single_bracket_only)::BIGINT AS single_bracket_only" if with_single_bracket else ""
    counts = """sum(judgments)::BIGINT AS judgments,
               sum(not_parsed)::BIGINT AS not_parsed,
               sum(not_parsed) / sum(judgments) AS not_parsed_rate,
               sum(api_errors)::BIGINT AS api_errors,
               sum(out_of_range)::BIGINT AS out_of_range"""
    key_list = ", ".join(f"i.{k}" if k != "category" else "q.category" for k in keys)
    where = " AND ".join(conditions) or "TRUE"  # on j.<key>: single_judgments' and item_scores' columns alike
    return f"""
        WITH multi AS (
            SELECT {_ITEM_KEYS} FROM item_scores j WHERE j.n_rows > 1 AND {where}),
        rows AS (
            SELECT j.harness, j.bench, j.judge, j.model, j.question_id, j.turn, j.parse_status, j.raw_score,
                   j.score, j.single_bracket, m.harness IS NOT NULL AS multi
            FROM single_judgments j LEFT JOIN multi m USING ({_ITEM_KEYS})
            WHERE {where}),
        items AS (
            SELECT j.harness, j.bench, j.judge, j.model, j.question_id, j.turn,
                   1::BIGINT AS judgments,
                   (j.parse_status = 'not_parsed')::BIGINT AS not_parsed,
                   (j.parse_status = 'api_error')::BIGINT AS api_errors,
                   (j.parse_status = 'out_of_range')::BIGINT AS out_of_range,
                   CASE WHEN j.raw_score <> -1 THEN j.raw_score END AS fc_sum,
                   (j.raw_score <> -1 IS TRUE)::BIGINT AS fc_n,
                   j.raw_score AS swallow_item,
                   j.score AS judgelens_item{one_text}
            FROM rows j WHERE NOT j.multi
            UNION ALL
            SELECT j.harness, j.bench, j.judge, j.model, j.question_id, j.turn,
                   count(*) AS judgments,
                   count(*) FILTER (j.parse_status = 'not_parsed') AS not_parsed,
                   count(*) FILTER (j.parse_status = 'api_error') AS api_errors,
                   count(*) FILTER (j.parse_status = 'out_of_range') AS out_of_range,
                   sum(j.raw_score) FILTER (j.raw_score <> -1) AS fc_sum,
                   count(j.raw_score) FILTER (j.raw_score <> -1) AS fc_n,
                   avg(j.raw_score) AS swallow_item,
                   avg(j.score) AS judgelens_item{text_columns}
            FROM rows j WHERE j.multi
            GROUP BY j.harness, j.bench, j.judge, j.model, j.question_id, j.turn)
        SELECT {key_list}, count(*) AS items, {counts}{text_sum},
               sum(fc_sum) / nullif(sum(fc_n), 0) AS mean_fastchat_rule,
               avg(swallow_item) FILTER (swallow_item <> -1) AS mean_swallow_rule,
               avg(judgelens_item) AS mean_judgelens
        FROM items i
        LEFT JOIN current_questions q ON q.bench = i.bench AND q.question_id = i.question_id
        GROUP BY ALL ORDER BY ALL"""


def _rule_conditions(harness, bench, judge, model, turn) -> tuple[list[str], dict]:
    conditions, params = [], {}
    for key, value in (("harness", harness), ("bench", bench), ("judge", judge), ("model", model), ("turn", turn)):
        if value is not None:
            conditions.append(f"j.{key} = ${key}")
            params[key] = int(value) if key == "turn" else value
    return conditions, params


def parse_failures(store: Store, *, harness: str | None = None, bench: str | None = None,
                   judge: str | None = None, turn: int | None = None) -> pd.DataFrame:
    """Judgments without a usable score, per harness, bench, judge and category (bench is kept so
    that categories of different benches never pool), with the harnesses' averaging rules side by side.

    Columns: harness, bench, judge, category, items, judgments, not_parsed (raw -1 from a judge output
    with no rating), not_parsed_rate (= not_parsed / judgments), api_errors (``$ERROR$``, also raw -1 in
    the files), out_of_range (a rating outside 1-10, e.g. 11), single_bracket_only (the output has no
    ``[[N]]`` but has a ``[N]``: FastChat's backup regex took that number as the rating, e.g. a "[1]"
    list marker, so the score is probably wrong although it counts as parsed), then
    mean_fastchat_rule, mean_swallow_rule and mean_judgelens as described in ``RULES_NOTE``.
    single_bracket_only counts the flag stored with each judgment (``single_judgments.single_bracket``, written at
    import by ``lib.vocab.single_bracket_only_sql``): no rationale is read.
    """
    conditions, params = _rule_conditions(harness, bench, judge, None, turn)
    return frame(store, _rules_sql(("harness", "bench", "judge", "category"), conditions, True), params)


def harness_rule_means(store: Store, *, harness: str | None = None, bench: str | None = None,
                       judge: str | None = None, model: str | None = None, turn: int | None = None,
                       by: tuple[str, ...] | list[str] = ("harness", "bench", "judge", "model")) -> pd.DataFrame:
    """mean_fastchat_rule, mean_swallow_rule and mean_judgelens (see ``RULES_NOTE``) per group ``by``,
    with the failure counts; no text is read. Filter by ``turn`` to compare with a harness's per-turn
    number (Swallow's judge_score_overall_turn_1_avg x 10, FastChat's turn-1 table)."""
    by = tuple(by)
    unknown = [k for k in by if k not in RULE_KEYS]
    if unknown or not by:
        raise UsageError(f"group by one or more of {', '.join(RULE_KEYS)}; got {', '.join(by) or 'nothing'}")
    conditions, params = _rule_conditions(harness, bench, judge, model, turn)
    return frame(store, _rules_sql(by, conditions, False), params)
