"""Paired A - B deltas: pairing, the question-level bootstrap, Holm, and the real JA numbers."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.multitest import multipletests

from lib.analysis.deltas import ALL, _bootstrap, describe_comparison, holm, paired_deltas
from lib.store import refresh_item_scores

CATEGORIES = ["coding", "extraction", "humanities", "math", "reasoning", "roleplay", "stem", "writing"]
JA = "ja_mt_bench"
L8 = "shisa-ai/shisa-v2-llama3.1-8b"
GPT4O = {"judge": "gpt-4o", "model": L8}
GPT41 = {"judge": "gpt-4.1-2025-04-14", "model": L8}


def add_questions(store, per_category: int, bench: str = "b") -> list[tuple[str, str]]:
    """``per_category`` questions in each of the 8 categories; returns (question_id, category)."""
    qs = [(str(i * per_category + k + 1), cat) for i, cat in enumerate(CATEGORIES) for k in range(per_category)]
    with store.write() as cur:
        cur.executemany("INSERT INTO questions VALUES (0, ?, ?, ?, ['q'])", [[bench, q, c] for q, c in qs])
        refresh_item_scores(cur)
    return qs


def add_judgments(store, rows, *, bench: str = "b", harness: str = "fastchat"):
    """rows: (judge, model, question_id, turn, score); score None = a judgment that did not parse."""
    frame = pd.DataFrame(  # one INSERT ... SELECT (executemany runs one statement per row)
        [[harness, bench, j, m, str(q), t, -1.0 if s is None else float(s), None if s is None else float(s),
          "not_parsed" if s is None else "ok"] for j, m, q, t, s in rows],
        columns=["harness", "bench", "judge", "model", "question_id", "turn", "raw_score", "score", "parse_status"])
    with store.write() as cur:
        cur.register("new_rows", frame)
        cur.execute("INSERT INTO single_judgments (source_id, harness, bench, judge, model, question_id, turn, "
                    "raw_score, score, parse_status) SELECT 0, * FROM new_rows")
        cur.unregister("new_rows")
        refresh_item_scores(cur)  # what ingest does after writing judgments


def test_constant_shift_gives_an_exact_interval(store):
    qs = add_questions(store, 5)
    rng = np.random.default_rng(1)
    rows = []
    for q, _ in qs:
        for turn in (1, 2):
            a = int(rng.integers(1, 10))
            rows += [("A", "M", q, turn, a), ("B", "M", q, turn, a + 1)]
    add_judgments(store, rows)
    df = paired_deltas(store, {"judge": "A", "model": "M"}, {"judge": "B", "model": "M"}, n_boot=500)
    assert len(df) == 16 + 8 + 2 + 1
    assert (df.delta == -1).all() and (df.ci_low == -1).all() and (df.ci_high == -1).all()
    assert (df.p_value == 1 / 500).all()                       # floored: no draw reaches 0
    assert df.significant.all() and not df.inside_noise.any()
    assert (df.mean_b - df.mean_a == 1).all()


def test_identical_sides_are_inside_the_noise(store):
    qs = add_questions(store, 3)
    rows = [(judge, "M", q, turn, (int(q) * 7 + turn) % 10 + 1)
            for q, _ in qs for turn in (1, 2) for judge in ("A", "B")]
    add_judgments(store, rows)
    df = paired_deltas(store, {"judge": "A"}, {"judge": "B"}, n_boot=300)
    assert (df.delta == 0).all() and (df.ci_low == 0).all() and (df.ci_high == 0).all()
    assert (df.p_value == 1).all() and (df.p_holm == 1).all()
    assert df.inside_noise.all() and not df.significant.any()


def test_rows_and_summary_markers(store):
    qs = add_questions(store, 2)
    add_judgments(store, [(j, "M", q, t, s) for q, _ in qs for t in (1, 2) for j, s in (("A", 8), ("B", 6))])
    df = paired_deltas(store, {"judge": "A"}, {"judge": "B"}, n_boot=200)
    assert df.level.value_counts().to_dict() == {"cell": 16, "category": 8, "turn": 2, "all": 1}
    cells = df[df.level == "cell"]
    assert (cells.n_items == 2).all() and (cells.n_questions == 2).all()
    cats = df[df.level == "category"]
    assert cats.turn.isna().all() and sorted(cats.category) == CATEGORIES and (cats.n_items == 4).all()
    turns = df[df.level == "turn"]
    assert (turns.category == ALL).all() and turns.turn.tolist() == [1, 2] and (turns.n_questions == 16).all()
    everything = df[df.level == "all"].iloc[0]
    assert everything.category == ALL and pd.isna(everything.turn)
    assert (everything.n_items, everything.n_questions, everything.delta) == (32, 16, 2)
    assert set(df.holm_family) == {"cell rows (16)", "category rows (8)", "turn rows (2)", "all rows (1)"}


def test_pairing_respects_unfixed_keys_and_drops_one_sided_items(store):
    qs = add_questions(store, 2)                                    # 16 questions, 32 items per model
    rows = []
    for q, _ in qs:
        for t in (1, 2):
            rows += [("J1", "M1", q, t, 8), ("J1", "M2", q, t, 3), ("J2", "M1", q, t, 7)]
            if (q, t) == ("1", 2):
                continue                                            # J2 never judged M2 on q1 turn 2
            rows.append(("J2", "M2", q, t, None if (q, t) == ("2", 1) else 1))   # q2 turn 1 did not parse
    add_judgments(store, rows)
    # The same question ids in another bench, judged by J1 only: never paired with bench b.
    add_judgments(store, [("J1", "M1", q, t, 10) for q, _ in qs for t in (1, 2)], bench="other")

    df = paired_deltas(store, {"judge": "J1"}, {"judge": "J2"}, by=("model",), n_boot=200)
    assert df.attrs["pair_keys"] == ["bench", "question_id", "turn", "harness", "model"]
    per_model = df[df.level == "cell"].set_index("model")
    assert per_model.loc["M1", ["n_items", "n_questions", "delta"]].tolist() == [32, 16, 1]
    assert per_model.loc["M2", ["n_items", "n_questions", "delta"]].tolist() == [30, 16, 2]
    everything = df[df.level == "all"].iloc[0]
    assert everything.n_items == 62 and everything.delta == pytest.approx((32 * 1 + 30 * 2) / 62)
    assert everything.n_questions == 16                             # clusters are questions, across models

    # Two models under one judge: a key named on one side only applies to both.
    models = paired_deltas(store, {"judge": "J1", "model": "M1"}, {"model": "M2"}, n_boot=200)
    assert models.attrs["b"] == {"judge": "J1", "model": "M2"}
    assert models[models.level == "all"][["n_items", "delta"]].iloc[0].tolist() == [32, 5]

    # A and B from different harnesses (e.g. an imported judge and a re-judge) pair only when harness is named.
    add_judgments(store, [("J3", "M1", q, t, 6) for q, _ in qs for t in (1, 2)], harness="judgelens")
    none = paired_deltas(store, {"judge": "J1", "model": "M1"}, {"judge": "J3"}, n_boot=50)
    assert none.empty and "harness" in none.attrs["note"]
    named = paired_deltas(store, {"judge": "J1", "model": "M1", "harness": "fastchat"},
                          {"judge": "J3", "harness": "judgelens"}, n_boot=50)
    assert named[named.level == "all"][["n_items", "delta"]].iloc[0].tolist() == [32, 2]

    with pytest.raises(ValueError, match="different benches"):
        paired_deltas(store, {"judge": "J1", "bench": "b"}, {"judge": "J2", "bench": "other"})
    with pytest.raises(ValueError, match="unknown key"):
        paired_deltas(store, {"judge": "J1", "category": "math"}, {"judge": "J2"})


def test_bootstrap_resamples_questions_not_items(store):
    """Turn 1 differs by +x and turn 2 by -x in every question: each drawn question contributes 0,
    so rows over both turns have the interval [0, 0]. Resampling items would scatter it."""
    qs = add_questions(store, 10)
    rows = []
    for i, (q, _) in enumerate(qs):
        x = i % 4 + 1
        rows += [("A", "M", q, 1, 5 + x), ("A", "M", q, 2, 5 - x), ("B", "M", q, 1, 5), ("B", "M", q, 2, 5)]
    add_judgments(store, rows)
    df = paired_deltas(store, {"judge": "A"}, {"judge": "B"}, n_boot=500)
    both_turns = df[df.level.isin(["category", "all"])]
    assert (both_turns.ci_low == 0).all() and (both_turns.ci_high == 0).all()
    assert (df[df.level == "turn"].ci_high - df[df.level == "turn"].ci_low > 0.2).all()
    diff = np.array([x for i in range(80) for x in (i % 4 + 1, -(i % 4 + 1))], dtype=float)
    item_level = _bootstrap(diff, np.arange(160), np.repeat(np.arange(8), 20), 500, np.random.default_rng(0))
    assert np.ptp(np.quantile(item_level, [0.025, 0.975])) > 0.5


def test_correlated_turns_widen_the_interval(store):
    """When both turns of a question move together, the question-level interval is about sqrt(2)
    wider than the interval an item-level bootstrap would (wrongly) give."""
    qs = add_questions(store, 10)
    rng = np.random.default_rng(3)
    rows = []
    for q, _ in qs:
        x = int(rng.integers(-3, 4))
        rows += [("A", "M", q, t, 5 + x) for t in (1, 2)] + [("B", "M", q, t, 5) for t in (1, 2)]
    add_judgments(store, rows)
    row = paired_deltas(store, {"judge": "A"}, {"judge": "B"}, n_boot=2000).query("level == 'all'").iloc[0]
    with store.read() as cur:
        diff = np.array([r[0] for r in cur.execute(
            "SELECT a.score - b.score FROM item_scores a JOIN item_scores b USING (question_id, turn) "
            "WHERE a.judge = 'A' AND b.judge = 'B' ORDER BY a.category").fetchall()])
    item = _bootstrap(diff, np.arange(len(diff)), np.repeat(np.arange(8), 20), 2000, np.random.default_rng(0))
    item_width = np.ptp(np.quantile(item, [0.025, 0.975]))
    assert row.ci_high - row.ci_low > 1.2 * item_width


def test_single_question_has_no_interval(store):
    add_questions(store, 1)
    add_judgments(store, [("A", "M", "1", 1, 9), ("B", "M", "1", 1, 4)])
    df = paired_deltas(store, {"judge": "A"}, {"judge": "B"})
    row = df[df.level == "all"].iloc[0]
    assert row.delta == 5 and np.isnan(row.ci_low) and np.isnan(row.p_value) and row.inside_noise
    assert not row.significant


def test_real_ja_delta_equals_difference_of_overall_means(sample_store):
    df = paired_deltas(sample_store, GPT4O, GPT41)
    everything = df[df.level == "all"].iloc[0]
    with sample_store.read() as cur:
        means = dict(cur.execute("SELECT judge, avg(score) FROM item_scores WHERE bench = ? AND model = ? "
                                 "GROUP BY judge", [JA, L8]).fetchall())
    assert means["gpt-4o"] == pytest.approx(7.40625) and means["gpt-4.1-2025-04-14"] == pytest.approx(6.99375)
    assert everything.delta == pytest.approx(means["gpt-4o"] - means["gpt-4.1-2025-04-14"]) == pytest.approx(0.4125)
    assert (everything.n_items, everything.n_questions) == (160, 80)
    assert everything.ci_low < everything.delta < everything.ci_high
    cells = df[df.level == "cell"]
    assert len(cells) == 16 and (cells.n_items == 10).all()
    assert df.attrs["label"] == "gpt-4o vs gpt-4.1-2025-04-14 on shisa-ai/shisa-v2-llama3.1-8b"


def test_seeded_and_deterministic(sample_store):
    first = paired_deltas(sample_store, GPT4O, GPT41, n_boot=500, seed=7)
    again = paired_deltas(sample_store, GPT4O, GPT41, n_boot=500, seed=7)
    pd.testing.assert_frame_equal(first, again)
    other = paired_deltas(sample_store, GPT4O, GPT41, n_boot=500, seed=8)
    assert (first.delta == other.delta).all()
    assert not np.allclose(first[["ci_low", "ci_high", "p_value"]], other[["ci_low", "ci_high", "p_value"]])


def test_holm_matches_statsmodels(sample_store):
    df = paired_deltas(sample_store, GPT4O, GPT41)
    assert (df.p_holm >= df.p_value).all()
    for level, family in df.groupby("level"):
        expected = multipletests(family.p_value.to_numpy(), method="holm")[1]
        assert family.p_holm.to_numpy() == pytest.approx(expected)
        assert (family.significant == (family.p_holm < 0.05)).all()
    rng = np.random.default_rng(0)
    for p in (rng.uniform(size=16), np.array([0.01, 0.01, 0.04, 0.5, 0.0005]), rng.uniform(0, 0.02, size=8)):
        assert holm(p) == pytest.approx(multipletests(p, method="holm")[1])


def test_describe_comparison():
    assert describe_comparison(GPT4O, GPT41) == "gpt-4o vs gpt-4.1-2025-04-14 on shisa-ai/shisa-v2-llama3.1-8b"
    assert describe_comparison({"judge": "J", "model": "M1"}, {"model": "M2"}) == "M1 vs M2, judged by J"
    assert describe_comparison({"judge": "J1"}, {"judge": "J2"}) == "J1 vs J2, paired per model"
