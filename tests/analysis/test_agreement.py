"""Judge agreement, disagreements, pairwise win rates and parse failures (lib/agreement.py, `cli agreement`).

Expected numbers are computed here independently: straight from the bundled JSONL files with the
json module and scipy / scikit-learn, or by hand on tiny crafted stores.
"""
from __future__ import annotations

import csv
import json
import math
import warnings
from collections import defaultdict
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from sklearn.metrics import cohen_kappa_score

from lib.analysis import agreement as ag
from lib.store import insert_rows, refresh_item_scores
from lib.cli import main

ROOT = Path(__file__).resolve().parents[2]
JA = ROOT / "data" / "sample" / "shisa-ja-mt-bench-harness"
EN = ROOT / "data" / "sample" / "stefanstud-fastchat"
TEST_DATA = Path(__file__).resolve().parents[1] / "data"

JA_JUDGES = ["gpt-4o", "gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14"]
JA_MODELS = ["shisa-ai/shisa-v2-llama3.1-8b", "shisa-ai/shisa-v2-llama3.3-70b"]
STAT_KEYS = ["n", "pearson", "spearman", "kendall", "qwk", "exact", "within1", "mean_diff", "mae"]


# ------------------------------------------------------------------ helpers (no lib code involved)

def ja_item_scores() -> dict[str, dict[tuple[str, str, int], float]]:
    """judge -> {(question_id, model, turn): mean of its scores, -1 left out}, from the raw JSONL."""
    out = {}
    for judge in JA_JUDGES:
        scores = defaultdict(list)
        with open(JA / "ja_mt_bench" / "model_judgment" / f"{judge}_single.jsonl", encoding="utf-8") as f:
            for line in f:
                rec = json.loads(line)
                assert rec["judge"][0] == judge
                if rec["score"] != -1:
                    scores[(str(rec["question_id"]), rec["model"], rec["turn"])].append(rec["score"])
        out[judge] = {k: sum(v) / len(v) for k, v in scores.items()}
    return out


def ja_categories() -> dict[str, str]:
    with open(JA / "ja_mt_bench" / "question.jsonl", encoding="utf-8") as f:
        return {str(q["question_id"]): q["category"] for q in map(json.loads, f)}


def expected_stats(a: list[float], b: list[float]) -> dict:
    a, b = np.array(a), np.array(b)
    ra, rb = np.floor(a + 0.5).astype(int), np.floor(b + 0.5).astype(int)
    return {
        "n": len(a),
        "pearson": stats.pearsonr(a, b).statistic,
        "spearman": stats.spearmanr(a, b).statistic,
        "kendall": stats.kendalltau(a, b).statistic,
        "qwk": cohen_kappa_score(ra, rb, labels=list(range(1, 11)), weights="quadratic"),
        "exact": np.mean(ra == rb),
        "within1": np.mean(np.abs(ra - rb) <= 1),
        "mean_diff": np.mean(a - b),
        "mae": np.mean(np.abs(a - b)),
    }


def insert_judgments(store, rows):
    """rows: (judge, model, question_id, turn, sample, raw_score, rationale[, bench]) — status and 1-10
    score derived the way the FastChat loader does."""
    with store.write() as cur:
        new = []
        for row in rows:
            judge, model, qid, turn, sample, raw, rationale, *rest = row
            bench = rest[0] if rest else "b"
            if rationale == "$ERROR$":
                status = "api_error"
            elif raw == -1:
                status = "not_parsed"
            elif not 1 <= raw <= 10:
                status = "out_of_range"
            else:
                status = "ok"
            new.append(dict(source_id=1, harness="fastchat", bench=bench, judge=judge, model=model, question_id=str(qid),
                            turn=turn, sample=sample, raw_score=float(raw), score=float(raw) if status == "ok" else None,
                            parse_status=status, rationale=rationale))
        insert_rows(cur, "single_judgments", new)  # the writers' insert: derives the single-bracket flag
        refresh_item_scores(cur)  # what ingest does after writing judgments


def insert_questions(store, bench, categories: dict):
    with store.write() as cur:
        for qid, cat in categories.items():
            cur.execute("INSERT INTO questions VALUES (1, ?, ?, ?, ['q'])", [bench, str(qid), cat])
        refresh_item_scores(cur)


def row_dict(df, **match) -> dict:
    sel = df
    for k, v in match.items():
        sel = sel[sel[k] == v]
    assert len(sel) == 1, (match, sel)
    return sel.iloc[0].to_dict()


# ------------------------------------------------------------------ agreement on the real JA harness data

def test_agreement_equals_scipy_sklearn_on_ja_harness_data(sample_store):
    items = ja_item_scores()
    got = ag.agreement(sample_store, JA_JUDGES, bench="ja_mt_bench")
    assert list(got.columns) == list(ag.AGREEMENT_COLUMNS)
    assert list(zip(got.judge_a, got.judge_b)) == list(combinations(JA_JUDGES, 2))
    for ja, jb in combinations(JA_JUDGES, 2):
        keys = sorted(set(items[ja]) & set(items[jb]))
        assert len(keys) == 320
        want = expected_stats([items[ja][k] for k in keys], [items[jb][k] for k in keys])
        row = row_dict(got, judge_a=ja, judge_b=jb)
        for key in STAT_KEYS:
            assert row[key] == pytest.approx(want[key], rel=1e-12, abs=1e-12), (ja, jb, key)


def test_agreement_by_turn_equals_per_turn_filter(sample_store):
    by_turn = ag.agreement_by_turn(sample_store, JA_JUDGES, bench="ja_mt_bench")
    assert list(by_turn.columns) == ["turn", *ag.AGREEMENT_COLUMNS]
    assert sorted(set(by_turn.turn)) == [1, 2]
    items = ja_item_scores()
    for turn in (1, 2):
        filtered = ag.agreement(sample_store, JA_JUDGES, bench="ja_mt_bench", turn=turn)
        part = by_turn[by_turn.turn == turn].drop(columns="turn").reset_index(drop=True)
        assert part.equals(filtered)
        keys = sorted(k for k in items["gpt-4o"] if k[2] == turn)
        want = expected_stats([items["gpt-4o"][k] for k in keys], [items["gpt-4.1-2025-04-14"][k] for k in keys])
        assert filtered.iloc[0]["pearson"] == pytest.approx(want["pearson"], rel=1e-12)
        assert filtered.iloc[0]["n"] == 160


def test_item_scores_match_harness_judge_comparison_csv(sample_store):
    """The harness's own judge-comparison-stats.py output agrees cell by cell for the 2 sample models."""
    columns = {"GPT-4o": "gpt-4o", "GPT-4.1": "gpt-4.1-2025-04-14", "GPT-4.1-mini": "gpt-4.1-mini-2025-04-14"}
    with open(TEST_DATA / "real" / "judge_comparison_details.csv", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["model"] in JA_MODELS]
    assert len(rows) == 320
    matrix = ag.item_matrix(sample_store, JA_JUDGES, bench="ja_mt_bench")
    assert list(matrix.columns) == [*ag.MATRIX_KEYS, *JA_JUDGES]
    assert len(matrix) == 320
    cells = matrix.set_index(["question_id", "model", "turn"])
    for r in rows:
        item = cells.loc[(r["question_id"], r["model"], int(r["turn"]))]
        for csv_col, judge in columns.items():
            assert item[judge] == float(r[csv_col]), (r, judge)


def test_item_matrix_filters_and_never_pools_benches(sample_store):
    m = ag.item_matrix(sample_store, ["gpt-4o", "gpt-4"], model=JA_MODELS[0], turn=2, category="math")
    assert len(m) == 10
    assert set(m.model) == {JA_MODELS[0]} and set(m.turn) == {2} and set(m.category) == {"math"}
    both = ag.item_matrix(sample_store, ["gpt-4o", "gpt-4"])
    assert set(both.bench) == {"ja_mt_bench", "mt_bench"}
    # the two benches share no items: the judges never meet on one row
    assert not (both["gpt-4o"].notna() & both["gpt-4"].notna()).any()
    assert row_dict(ag.agreement(sample_store, ["gpt-4o", "gpt-4"]), judge_a="gpt-4o")["n"] == 0


# ------------------------------------------------------------------ crafted stores with known answers

def test_crafted_agreement_numbers(store):
    insert_judgments(store, [
        # A: 1, 2, 3, 4 on q1-q4; q5 only A; q6 judged twice (6, 8 -> 7); q7: 5 plus an unparsed -1
        ("A", "m", 1, 1, 0, 1, "[[1]]"), ("A", "m", 2, 1, 0, 2, "[[2]]"), ("A", "m", 3, 1, 0, 3, "[[3]]"),
        ("A", "m", 4, 1, 0, 4, "[[4]]"), ("A", "m", 5, 1, 0, 9, "[[9]]"),
        ("A", "m", 6, 1, 0, 6, "[[6]]"), ("A", "m", 6, 1, 0, 8, "[[8]]"),
        ("A", "m", 7, 1, 0, 5, "[[5]]"), ("A", "m", 7, 1, 0, -1, "no rating"),
        # B: 2, 2, 3, 5 on q1-q4; q6 = 7; q7 = 5; q8 only B
        ("B", "m", 1, 1, 0, 2, "[[2]]"), ("B", "m", 2, 1, 0, 2, "[[2]]"), ("B", "m", 3, 1, 0, 3, "[[3]]"),
        ("B", "m", 4, 1, 0, 5, "[[5]]"), ("B", "m", 6, 1, 0, 7, "[[7]]"), ("B", "m", 7, 1, 0, 5, "[[5]]"),
        ("B", "m", 8, 1, 0, 3, "[[3]]"),
    ])
    m = ag.item_matrix(store, ["A", "B"])
    assert list(m.question_id) == [str(i) for i in range(1, 9)]
    assert m.set_index("question_id").loc["6", "A"] == 7.0
    row = ag.agreement(store, ["A", "B"]).iloc[0].to_dict()
    # intersection q1, q2, q3, q4, q6, q7: A = 1 2 3 4 7 5, B = 2 2 3 5 7 5
    assert row["n"] == 6
    assert row["exact"] == pytest.approx(4 / 6)
    assert row["within1"] == 1.0
    assert row["mean_diff"] == pytest.approx(-2 / 6)
    assert row["mae"] == pytest.approx(2 / 6)
    assert row["pearson"] == pytest.approx(stats.pearsonr([1, 2, 3, 4, 7, 5], [2, 2, 3, 5, 7, 5]).statistic)
    # order of the pair follows the order given
    swapped = ag.agreement(store, ["B", "A"]).iloc[0]
    assert (swapped.judge_a, swapped.judge_b) == ("B", "A")
    assert swapped.mean_diff == pytest.approx(2 / 6)


def test_rounding_half_up_for_exact_within1_and_qwk():
    import pandas as pd

    matrix = pd.DataFrame({"A": [7.5, 2.5, 6.0, 1.0], "B": [8.0, 2.0, 4.5, 1.0]})
    row = ag.pairwise_agreement(matrix, ["A", "B"]).iloc[0]
    # rounded half up: A 8 3 6 1, B 8 2 5 1 (numpy's round would give 8 2 6 1 / 8 2 4 1)
    assert row.exact == 0.5
    assert row.within1 == 1.0
    assert row.mae == pytest.approx((0.5 + 0.5 + 1.5 + 0) / 4)
    want = cohen_kappa_score([8, 3, 6, 1], [8, 2, 5, 1], labels=list(range(1, 11)), weights="quadratic")
    assert row.qwk == pytest.approx(want)
    # the full 1-10 label range matters: sklearn weights by label index, not by score distance
    assert want != pytest.approx(cohen_kappa_score([8, 3, 6, 1], [8, 2, 5, 1], weights="quadratic"))


def test_undefined_statistics_are_nan_and_quiet():
    import pandas as pd

    matrix = pd.DataFrame({"A": [5.0, 5.0, 5.0, np.nan, 7.0], "B": [3.0, 4.0, 6.0, 2.0, np.nan],
                           "C": [np.nan, np.nan, np.nan, 1.0, 9.0], "D": [np.nan] * 5})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        df = ag.pairwise_agreement(matrix, ["A", "B", "C", "D"])
    ab = row_dict(df, judge_a="A", judge_b="B")      # A constant on the 3 shared items
    assert ab["n"] == 3
    assert all(math.isnan(ab[k]) for k in ("pearson", "spearman", "kendall"))
    assert ab["qwk"] == pytest.approx(0.0, abs=1e-12)  # defined: A's constant rating agrees no better than chance
    assert ab["mean_diff"] == pytest.approx(2 / 3) and ab["exact"] == 0.0 and ab["within1"] == pytest.approx(2 / 3)
    ac = row_dict(df, judge_a="A", judge_b="C")      # one shared item
    assert ac["n"] == 1 and math.isnan(ac["pearson"]) and math.isnan(ac["qwk"])
    assert ac["mae"] == 2.0
    ad = row_dict(df, judge_a="A", judge_b="D")      # nothing shared
    assert ad["n"] == 0
    assert all(math.isnan(ad[k]) for k in STAT_KEYS if k != "n")


def test_unknown_or_repeated_judges_are_refused(sample_store):
    with pytest.raises(ag.UnknownJudgeError, match="Known judges: gpt-4, gpt-4.1-2025-04-14"):
        ag.item_matrix(sample_store, ["gpt-4o", "gpt-5"])
    with pytest.raises(ag.JudgeChoiceError, match="once"):
        ag.agreement(sample_store, ["gpt-4o", "gpt-4o"])
    with pytest.raises(ag.JudgeChoiceError, match="at least 2"):
        ag.disagreements(sample_store, ["gpt-4o"])


# ------------------------------------------------------------------ disagreements

def test_disagreements_on_real_data(sample_store):
    items = ja_item_scores()
    spreads = {}
    for key in items["gpt-4o"]:
        values = [items[j][key] for j in JA_JUDGES if key in items[j]]
        spreads[key] = max(values) - min(values)
    top = max(spreads.values())
    first = min((k for k, s in spreads.items() if s == top), key=lambda k: (int(k[0]), k[1], k[2]))

    df = ag.disagreements(sample_store, JA_JUDGES, bench="ja_mt_bench", limit=20)
    assert list(df.columns) == [*ag.MATRIX_KEYS, "spread", *JA_JUDGES]
    assert len(df) == 20
    assert df.spread.is_monotonic_decreasing
    assert df.iloc[0].spread == top
    assert (df.iloc[0].question_id, df.iloc[0].model, df.iloc[0].turn) == first
    for judge in JA_JUDGES:
        assert df.iloc[0][judge] == items[judge][first]
    assert (df[JA_JUDGES].max(axis=1) - df[JA_JUDGES].min(axis=1)).equals(df.spread)
    # equal spreads are ordered by question id numerically, then model, turn
    ties = df[df.spread == top]
    keys = list(zip(ties.question_id.astype(int), ties.model, ties.turn))
    assert keys == sorted(keys)

    cats = ja_categories()
    for kwargs, keep in (({"turn": 2}, lambda qid, model, turn: turn == 2),
                         ({"model": JA_MODELS[1]}, lambda qid, model, turn: model == JA_MODELS[1]),
                         ({"category": "writing"}, lambda qid, model, turn: cats[qid] == "writing")):
        sub = ag.disagreements(sample_store, JA_JUDGES, bench="ja_mt_bench", limit=5, **kwargs)
        assert len(sub) == 5
        assert all(keep(r.question_id, r.model, r.turn) for r in sub.itertuples())
        assert sub.iloc[0].spread == max(s for k, s in spreads.items() if keep(*k))


def test_disagreements_need_two_scores(store):
    insert_judgments(store, [
        ("A", "m", 1, 1, 0, 1, ""), ("B", "m", 1, 1, 0, 9, ""),          # spread 8
        ("A", "m", 2, 1, 0, 10, ""),                                     # only A
        ("A", "m", 3, 1, 0, 2, ""), ("B", "m", 3, 1, 0, -1, "none"),      # B failed: only A scored
        ("A", "m", 10, 1, 0, 4, ""), ("B", "m", 10, 1, 0, 5, ""),        # spread 1
        ("A", "m", 9, 1, 0, 5, ""), ("B", "m", 9, 1, 0, 6, ""),          # spread 1, sorts before 10
        ("A", "m", 4, 1, 0, 5, ""), ("B", "m", 4, 1, 0, 5, ""), ("C", "m", 4, 1, 0, 8, ""),
    ])
    df = ag.disagreements(store, ["A", "B"])
    assert list(df.question_id) == ["1", "9", "10", "4"]
    assert list(df.spread) == [8, 1, 1, 0]
    with_c = ag.disagreements(store, ["A", "B", "C"], limit=2)
    assert list(with_c.question_id) == ["1", "4"] and with_c.iloc[1]["C"] == 8


# ------------------------------------------------------------------ pairwise judgments

def en_pair_rows():
    with open(EN / "mt_bench" / "model_judgment" / "gpt-4_pair.jsonl", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def expected_win_rates(rows, policy):
    tally = defaultdict(lambda: {"win": 0, "loss": 0, "tie": 0})

    def record(m1, m2, verdict):
        if verdict == "model_1":
            tally[m1]["win"] += 1
            tally[m2]["loss"] += 1
        elif verdict == "model_2":
            tally[m2]["win"] += 1
            tally[m1]["loss"] += 1
        else:
            tally[m1]["tie"] += 1
            tally[m2]["tie"] += 1

    for r in rows:
        g1, g2, m1, m2 = r["g1_winner"], r["g2_winner"], r["model_1"], r["model_2"]
        if policy == "game":
            for g in (g1, g2):
                if g != "error":
                    record(m1, m2, g)
            continue
        if "error" in (g1, g2):
            continue
        if policy == "fastchat":
            record(m1, m2, "tie" if g1 == "tie" or g1 != g2 else g1)
        elif g1 == g2:                                      # strict
            record(m1, m2, g1)
    return tally


@pytest.mark.parametrize("policy", ag.PAIR_POLICIES)
def test_pair_win_rates_match_the_jsonl(sample_store, policy):
    rows = en_pair_rows()
    assert len(rows) == 75
    want = expected_win_rates(rows, policy)
    got = ag.pair_win_rates(sample_store, judge="gpt-4", bench="mt_bench", policy=policy)
    assert set(got.model) == set(want) == {"phi-3", "phi-3-dpo"}
    for model, w in want.items():
        row = row_dict(got, model=model)
        n = w["win"] + w["loss"] + w["tie"]
        assert (row["win"], row["loss"], row["tie"], row["n"]) == (w["win"], w["loss"], w["tie"], n)
        assert row["win_rate"] == pytest.approx(w["win"] / n)
        assert row["loss_rate"] == pytest.approx(w["loss"] / n)
        assert row["win_rate_adjusted"] == pytest.approx((w["win"] + 0.5 * w["tie"]) / n)
        assert row["inconsistent"] == 27


def test_pair_win_rates_fastchat_reference_numbers(sample_store):
    """fastchat-format.md section 11: show_result on Stefanstud gpt-4_pair gives these."""
    got = ag.pair_win_rates(sample_store)
    assert list(got.model) == ["phi-3-dpo", "phi-3"]          # sorted by adjusted win rate
    dpo = row_dict(got, model="phi-3-dpo")
    assert (dpo["win"], dpo["loss"], dpo["tie"], dpo["n"], dpo["dropped"]) == (20, 18, 35, 73, 2)
    assert round(dpo["win_rate_adjusted"], 4) == 0.5137
    strict = row_dict(ag.pair_win_rates(sample_store, policy="strict"), model="phi-3-dpo")
    assert (strict["win"], strict["loss"], strict["tie"], strict["dropped"]) == (20, 18, 8, 29)
    game = row_dict(ag.pair_win_rates(sample_store, policy="game"), model="phi-3-dpo")
    assert (game["win"], game["loss"], game["tie"], game["n"], game["dropped"]) == (62, 60, 25, 147, 3)
    with pytest.raises(ValueError, match="unknown policy"):
        ag.pair_win_rates(sample_store, policy="majority")


def test_pair_matrix_has_both_directions(sample_store):
    pm = ag.pair_matrix(sample_store)
    assert list(zip(pm.model, pm.opponent)) == [("phi-3", "phi-3-dpo"), ("phi-3-dpo", "phi-3")]
    fwd, back = pm.iloc[0], pm.iloc[1]
    assert (fwd.win, fwd.loss, fwd.tie) == (back.loss, back.win, back.tie) == (18, 20, 35)
    assert fwd.win_rate_adjusted + back.win_rate_adjusted == pytest.approx(1.0)


def test_position_consistency_on_real_file(sample_store):
    rows = [r for r in en_pair_rows() if "error" not in (r["g1_winner"], r["g2_winner"])]
    inconsistent = [r for r in rows if r["g1_winner"] != r["g2_winner"]]
    # the model shown first won game 1 if g1 == model_1, game 2 if g2 == model_2
    first = [(r["g1_winner"] == "model_1") + (r["g2_winner"] == "model_2") for r in inconsistent]
    second = [(r["g1_winner"] == "model_2") + (r["g2_winner"] == "model_1") for r in inconsistent]
    favors_first = sum(f > s for f, s in zip(first, second))

    got = ag.position_consistency(sample_store)
    assert len(got) == 1
    row = got.iloc[0].to_dict()
    assert (row["bench"], row["judge"]) == ("mt_bench", "gpt-4")
    assert row["n"] == len(rows) == 73
    assert row["consistent"] == len(rows) - len(inconsistent) == 46
    assert row["consistency"] == pytest.approx(46 / 73)
    assert row["inconsistent"] == 27 and row["errors"] == 2
    assert row["favors_first"] == favors_first == 24 and row["favors_second"] == 3
    assert row["first_position_bias"] == pytest.approx(24 / 27)
    assert row["always_first"] == sum(f == 2 for f in first) == 16
    assert row["always_second"] == sum(s == 2 for s in second) == 2


# ------------------------------------------------------------------ parse failures and harness rules

def test_parse_failures_on_crafted_store(store):
    insert_questions(store, "b", {i: "writing" for i in range(1, 7)})
    insert_judgments(store, [
        ("J", "m", 1, 1, 0, 8, "Good. Rating: [[8]]"),
        ("J", "m", 2, 1, 0, -1, "I cannot rate this."),
        ("J", "m", 3, 1, 0, -1, "$ERROR$"),
        ("J", "m", 4, 1, 0, 11, "Rating: [[11]]"),
        ("J", "m", 5, 1, 0, 1, "1. [1] First point ... no rating"),
        ("J", "m", 6, 1, 0, 6, "Rating: [[6]]"),        # two samples of one item: 6 and -1
        ("J", "m", 6, 1, 1, -1, "no rating"),
    ])
    df = ag.parse_failures(store)
    assert len(df) == 1
    row = df.iloc[0].to_dict()
    assert (row["harness"], row["bench"], row["judge"], row["category"]) == ("fastchat", "b", "J", "writing")
    assert (row["items"], row["judgments"], row["not_parsed"], row["api_errors"], row["out_of_range"],
            row["single_bracket_only"]) == (6, 7, 2, 1, 1, 1)
    assert row["not_parsed_rate"] == pytest.approx(2 / 7)
    # FastChat: every row with raw <> -1 -> 8, 11, 1, 6
    assert row["mean_fastchat_rule"] == pytest.approx((8 + 11 + 1 + 6) / 4)
    # Swallow: per item with -1 averaged in -> 8, -1 (dropped), -1 (dropped), 11, 1, (6 - 1) / 2
    assert row["mean_swallow_rule"] == pytest.approx((8 + 11 + 1 + 2.5) / 4)
    # JudgeLens: usable scores only, per item -> 8, 1, 6
    assert row["mean_judgelens"] == pytest.approx(5.0)
    means = ag.harness_rule_means(store, by=["judge"])
    assert means.iloc[0][["mean_fastchat_rule", "mean_swallow_rule", "mean_judgelens"]].tolist() == \
        pytest.approx([6.5, 5.625, 5.0])



def test_parse_failures_group_per_item_only_the_items_of_several_judgments(sample_store):
    """An item of one judgment is taken as its row, an item of several (Swallow's 5 samples) is grouped first:
    every count and mean is what grouping every item's judgments gives (pandas, here), on both harnesses."""
    with sample_store.read() as cur:
        rows = cur.execute("""SELECT j.harness, j.bench, j.judge, q.category, j.model, j.question_id, j.turn,
                                     j.parse_status, j.raw_score, j.score, j.single_bracket IS TRUE AS sb
                              FROM single_judgments j LEFT JOIN current_questions q USING (bench, question_id)""").df()
        several = cur.execute("SELECT count(*) FROM item_scores WHERE n_rows > 1").fetchone()[0]
    assert 0 < several < len(rows)                                        # both kinds of item are there
    rows["fc"] = rows["raw_score"].where(rows["raw_score"] != -1)
    items = rows.groupby(["harness", "bench", "judge", "category", "model", "question_id", "turn"]).agg(
        judgments=("parse_status", "size"), not_parsed=("parse_status", lambda s: (s == "not_parsed").sum()),
        api_errors=("parse_status", lambda s: (s == "api_error").sum()),
        out_of_range=("parse_status", lambda s: (s == "out_of_range").sum()), sb=("sb", "sum"),
        fc_sum=("fc", "sum"), fc_n=("fc", "count"), swallow=("raw_score", "mean"), judgelens=("score", "mean"))
    want = items.groupby(["harness", "bench", "judge", "category"]).apply(lambda g: {
        "items": len(g), "judgments": g["judgments"].sum(), "not_parsed": g["not_parsed"].sum(),
        "api_errors": g["api_errors"].sum(), "out_of_range": g["out_of_range"].sum(),
        "single_bracket_only": g["sb"].sum(), "mean_fastchat_rule": g["fc_sum"].sum() / g["fc_n"].sum(),
        "mean_swallow_rule": g["swallow"][g["swallow"] != -1].mean(), "mean_judgelens": g["judgelens"].mean()})
    got = ag.parse_failures(sample_store).set_index(["harness", "bench", "judge", "category"])
    assert len(got) == len(want) and {h for h, *_ in want.index} == {"fastchat", "swallow"}
    for key, expected in want.items():
        for column, value in expected.items():
            assert got.loc[key, column] == pytest.approx(value, rel=1e-12), (key, column)

def test_swallow_rule_reproduces_swallow_results_json(sample_store):
    with sample_store.read() as cur:
        reported = dict(cur.execute(
            "SELECT model || '|' || metric, value FROM reported_metrics WHERE harness = 'swallow'").fetchall())
    for turn in (1, 2):
        df = ag.harness_rule_means(sample_store, harness="swallow", turn=turn)
        assert len(df) == 4  # the 2 generated runs and the 2 same-models runs
        for row in df.itertuples():
            want = 10 * reported[f"{row.model}|judge_score_overall_turn_{turn}_avg"]
            assert row.mean_swallow_rule == pytest.approx(want, rel=1e-9)
            assert row.mean_judgelens != pytest.approx(want, rel=1e-6)  # the sample has -1s: the rules differ
    pf = ag.parse_failures(sample_store, harness="swallow")
    assert pf.not_parsed.sum() == 70 + 19 + 11 and pf.judgments.sum() == 3200  # 4 Swallow runs


def test_fastchat_rule_reproduces_show_result(sample_store):
    """fastchat-format.md section 11: gpt-4o on shisa-v2-llama3.1-8b, turn 1 = 7.6375 (show_result)."""
    df = ag.harness_rule_means(sample_store, judge="gpt-4o", model=JA_MODELS[0], turn=1)
    assert df.iloc[0]["mean_fastchat_rule"] == pytest.approx(7.6375)
    assert df.iloc[0]["mean_judgelens"] == pytest.approx(7.6375)
    with pytest.raises(ValueError, match="group by"):
        ag.harness_rule_means(sample_store, by=["rationale"])


# ------------------------------------------------------------------ CLI

def test_cli_agreement_json_equals_library(sample_store, capsys):
    code = main(["agreement", "--db", str(sample_store.path), "--judges", ",".join(JA_JUDGES),
                 "--bench", "ja_mt_bench", "--turn", "1", "--format", "json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    lib = ag.agreement(sample_store, JA_JUDGES, bench="ja_mt_bench", turn=1)
    assert len(out) == 3
    for obj, row in zip(out, lib.to_dict(orient="records")):
        assert list(obj) == list(ag.AGREEMENT_COLUMNS)
        assert obj == row


def test_cli_agreement_nan_is_null_and_table(sample_store, capsys):
    assert main(["agreement", "--db", str(sample_store.path), "--judges", "gpt-4o,gpt-4", "--format", "json"]) == 0
    (obj,) = json.loads(capsys.readouterr().out)
    assert obj["n"] == 0 and obj["pearson"] is None and obj["mae"] is None
    assert main(["agreement", "--db", str(sample_store.path), "--judges", "gpt-4o,gpt-4.1-2025-04-14"]) == 0
    out = capsys.readouterr().out
    assert "gpt-4.1-2025-04-14" in out and "320" in out and "rounded half up" in out


def test_cli_agreement_unknown_judge_exits_2(sample_store, capsys):
    code = main(["agreement", "--db", str(sample_store.path), "--judges", "gpt-4o,gpt-5"])
    assert code == 2
    err = capsys.readouterr().err
    assert "Unknown judge(s): gpt-5" in err
    assert "Known judges: gpt-4, gpt-4.1-2025-04-14, gpt-4.1-mini-2025-04-14, gpt-4o, gpt-4o-2024-08-06" in err


def test_item_matrix_equals_item_scores(sample_store):
    """item_matrix reads single_judgments in one pass; every cell must still be the item_scores view's score."""
    judges = ag.known_judges(sample_store)
    matrix = ag.item_matrix(sample_store, judges)
    long = matrix.melt(id_vars=list(ag.MATRIX_KEYS), var_name="judge", value_name="score").dropna(subset=["score"])
    with sample_store.read() as cur:
        view = cur.execute("SELECT bench, question_id, model, turn, category, judge, score FROM item_scores "
                           "WHERE score IS NOT NULL").df()
    keys = ["bench", "question_id", "model", "turn", "judge"]
    merged = view.merge(long, on=keys, how="outer", suffixes=("_view", "_matrix"), indicator=True)
    assert (merged["_merge"] == "both").all()
    assert len(merged) == len(view) > 1400
    assert np.allclose(merged.score_view, merged.score_matrix, rtol=0, atol=1e-12)
    assert (merged.category_view.fillna("") == merged.category_matrix.fillna("")).all()


def test_quadratic_kappa_equals_scikit_learn_on_many_random_ratings():
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(7)
    for n, spread in ((50, 1), (2000, 3), (20000, 6)):
        a = rng.integers(1, 11, n)
        b = np.clip(a + rng.integers(-spread, spread + 1, n), 1, 10)
        expected = cohen_kappa_score(a, b, labels=list(range(1, 11)), weights="quadratic")
        assert ag.quadratic_kappa(a, b) == pytest.approx(expected, abs=1e-12)


def test_judge_names_are_checked_against_the_store_only_when_one_has_no_score(sample_store):
    """item_matrix and disagreements check the names after their one query: a judge with a score there is known,
    so the store's judge list (a scan of every judgment, a catalog round on a lake) is read only for the rest."""
    from conftest import reads_counted
    both = ["gpt-4o", "gpt-4.1-2025-04-14"]
    with reads_counted(sample_store) as seen:
        matrix = ag.item_matrix(sample_store, both, bench="ja_mt_bench")
        worst = ag.disagreements(sample_store, both, bench="ja_mt_bench", limit=5)
    assert len(seen) == 2 and matrix[both].notna().any().all() and len(worst) == 5
    with reads_counted(sample_store) as seen:      # gpt-4 judged another bench: known, no score here
        matrix = ag.item_matrix(sample_store, ["gpt-4o", "gpt-4"], bench="ja_mt_bench")
    assert len(seen) == 2 and matrix["gpt-4"].isna().all() and matrix["gpt-4o"].notna().any()
    with pytest.raises(ag.UnknownJudgeError, match="Unknown judge\\(s\\): gpt-5. Known judges: gpt-4, "):
        ag.disagreements(sample_store, ["gpt-4o", "gpt-5"], bench="ja_mt_bench")
