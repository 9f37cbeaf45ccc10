"""Paired A - B deltas: pairing, questions as the unit, the t method, Holm families, selectors, real JA numbers."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from statsmodels.stats.multitest import multipletests

from lib.analysis.deltas import (COLUMNS, NO_CATEGORY, cluster_t, compare, compare_levels, compare_pairs,
                                 describe_comparison, holm, paired_items)
from lib.analysis.selectors import describe, parse_selector
from lib.errors import UsageError
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


def synthetic_pairs(rng, shift_category: str | None = None, shift: float = 0.0, per_category: int = 10):
    """80 questions x 2 turns; item delta = question effect + turn noise, each from {-1,0,0,0,+1}."""
    rows = []
    for c, cat in enumerate(CATEGORIES):
        for k in range(per_category):
            u = rng.choice([-1, 0, 0, 0, 1])
            for turn in (1, 2):
                b = int(rng.integers(3, 8))
                d = u + rng.choice([-1, 0, 0, 0, 1]) + (shift if cat == shift_category else 0)
                rows.append({"question": f"b:{c * per_category + k}", "category": cat, "turn": turn,
                             "score_a": b + d, "score_b": b})
    return pd.DataFrame(rows)


def test_columns_levels_and_nulls(store):
    qs = add_questions(store, 2)
    add_judgments(store, [(j, "M", q, t, s) for q, _ in qs for t in (1, 2) for j, s in (("A", 8), ("B", 6))])
    df = compare(store, {"judge": "A"}, {"judge": "B"})
    assert list(df.columns) == COLUMNS
    assert df.level.value_counts().to_dict() == {"cell": 16, "category": 8, "turn": 2, "all": 1}
    assert df.model.isna().all()
    cells = df[df.level == "cell"]
    assert (cells.n_items == 2).all() and (cells.n_questions == 2).all()
    cats = df[df.level == "category"]
    assert cats.turn.isna().all() and sorted(cats.category) == CATEGORIES and (cats.n_items == 4).all()
    turns = df[df.level == "turn"]
    assert turns.category.isna().all() and turns.turn.tolist() == [1, 2] and (turns.n_questions == 16).all()
    everything = df[df.level == "all"].iloc[0]
    assert pd.isna(everything.category) and pd.isna(everything.turn)
    assert (everything.n_items, everything.n_questions, everything.delta) == (32, 16, 2)
    assert df.attrs["family"] == "all rows of level(s) cell, category, turn, all"


def test_constant_shift_gives_an_exact_interval(store):
    qs = add_questions(store, 5)
    rng = np.random.default_rng(1)
    rows = []
    for q, _ in qs:
        for turn in (1, 2):
            a = int(rng.integers(1, 10))
            rows += [("A", "M", q, turn, a), ("B", "M", q, turn, a + 1)]
    add_judgments(store, rows)
    df = compare(store, {"judge": "A", "model": "M"}, {"judge": "B", "model": "M"})
    assert len(df) == 16 + 8 + 2 + 1
    assert (df.delta == -1).all() and (df.ci_low == -1).all() and (df.ci_high == -1).all()
    assert (df.p_value == 0).all() and df.significant.all()
    assert (df.mean_b - df.mean_a == 1).all()


def test_identical_sides_are_inside_the_noise(store):
    qs = add_questions(store, 3)
    rows = [(judge, "M", q, turn, (int(q) * 7 + turn) % 10 + 1)
            for q, _ in qs for turn in (1, 2) for judge in ("A", "B")]
    add_judgments(store, rows)
    df = compare(store, {"judge": "A"}, {"judge": "B"})
    assert (df.delta == 0).all() and (df.ci_low == 0).all() and (df.ci_high == 0).all()
    assert (df.p_value == 1).all() and (df.p_adjusted == 1).all() and not df.significant.any()


def test_the_test_is_the_one_sample_t_on_question_means():
    pairs = synthetic_pairs(np.random.default_rng(5))
    df = compare_pairs(pairs, levels=("category", "all"))
    for row in df.itertuples():
        part = pairs if row.level == "all" else pairs[pairs.category == row.category]
        q = (part.score_a - part.score_b).groupby(part.question).mean()
        test = stats.ttest_1samp(q, 0.0)
        interval = test.confidence_interval(0.95)
        assert row.n_questions == len(q) and row.delta == pytest.approx(q.mean())
        assert row.p_value == pytest.approx(test.pvalue, rel=1e-9)
        assert (row.ci_low, row.ci_high) == pytest.approx((interval.low, interval.high), rel=1e-9)


def test_unbalanced_rows_stay_centred_on_the_item_mean():
    """A question with one turn missing: delta stays mean_a - mean_b, se is the cluster-robust one."""
    pairs = synthetic_pairs(np.random.default_rng(6)).iloc[1:]          # question b:0 keeps turn 2 only
    row = compare_pairs(pairs, levels=("all",)).iloc[0]
    d = (pairs.score_a - pairs.score_b).to_numpy()
    assert row.delta == pytest.approx(d.mean()) == pytest.approx(row.mean_a - row.mean_b)
    sums = (pairs.score_a - pairs.score_b).groupby(pairs.question).sum()
    counts = pairs.groupby("question").size()
    g, n = len(sums), len(d)
    se = np.sqrt(g / (g - 1) * ((sums - counts * d.mean()) ** 2).sum()) / n
    assert row.ci_high - row.delta == pytest.approx(stats.t.ppf(0.975, g - 1) * se)
    assert row.p_value == pytest.approx(2 * stats.t.sf(abs(d.mean()) / se, g - 1))


def test_questions_are_the_unit(store):
    """Turn 1 differs by +x and turn 2 by -x in every question: each question contributes 0, so rows over
    both turns have the interval [0, 0]; the per-turn rows do not."""
    qs = add_questions(store, 10)
    rows = []
    for i, (q, _) in enumerate(qs):
        x = i % 4 + 1
        rows += [("A", "M", q, 1, 5 + x), ("A", "M", q, 2, 5 - x), ("B", "M", q, 1, 5), ("B", "M", q, 2, 5)]
    add_judgments(store, rows)
    df = compare(store, {"judge": "A"}, {"judge": "B"})
    both_turns = df[df.level.isin(["category", "all"])]
    assert (both_turns.ci_low == 0).all() and (both_turns.ci_high == 0).all()
    assert (df[df.level == "turn"].ci_high - df[df.level == "turn"].ci_low > 0.2).all()


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

    pairs = paired_items(store, {"judge": "J1"}, {"judge": "J2"})
    assert pairs.attrs["pair_keys"] == ["bench", "question_id", "turn", "harness", "model"]
    assert set(pairs.question.str.split(":").str[0]) == {"b"}
    df = compare_pairs(pairs, levels=("all",), per_model=True).set_index("model")
    assert df.loc["M1", ["n_items", "n_questions", "delta"]].tolist() == [32, 16, 1]
    assert df.loc["M2", ["n_items", "n_questions", "delta"]].tolist() == [30, 16, 2]
    everything = compare_pairs(pairs, levels=("all",)).iloc[0]
    assert everything.n_items == 62 and everything.delta == pytest.approx((32 * 1 + 30 * 2) / 62)
    assert everything.n_questions == 16                             # clusters are questions, across models

    # Two models under one judge: A's judge applies to A; pairing on judge keeps B's items of J1 only.
    models = compare(store, {"judge": "J1", "model": "M1"}, {"model": "M2"}, levels=("all",))
    assert models.attrs["b"] == {"model": "M2"} and "judge" in models.attrs["pair_keys"]
    assert models[["n_items", "delta"]].iloc[0].tolist() == [32, 5]
    with pytest.raises(UsageError, match="different models"):
        compare(store, {"judge": "J1", "model": "M1"}, {"model": "M2"}, per_model=True)

    # A and B from different harnesses (e.g. an imported judge and a re-judge) pair only when harness is named.
    add_judgments(store, [("J3", "M1", q, t, 6) for q, _ in qs for t in (1, 2)], harness="judgelens")
    none = compare(store, {"judge": "J1", "model": "M1"}, {"judge": "J3"})
    assert none.empty and "harness" in none.attrs["note"]
    named = compare(store, {"judge": "J1", "model": "M1", "harness": "fastchat"},
                    {"judge": "J3", "harness": "judgelens"}, levels=("all",))
    assert named[["n_items", "delta"]].iloc[0].tolist() == [32, 2]

    with pytest.raises(UsageError, match="different benches"):
        compare(store, {"judge": "J1", "bench": "b"}, {"judge": "J2", "bench": "other"})
    with pytest.raises(UsageError, match="allowed keys: harness, bench, judge, model"):
        compare(store, {"judge": "J1", "category": "math"}, {"judge": "J2"})


def test_single_question_has_no_interval(store):
    add_questions(store, 1)
    add_judgments(store, [("A", "M", "1", 1, 9), ("B", "M", "1", 1, 4)])
    row = compare(store, {"judge": "A"}, {"judge": "B"}, levels=("all",)).iloc[0]
    assert row.delta == 5 and np.isnan(row.ci_low) and np.isnan(row.p_value) and np.isnan(row.p_adjusted)
    assert not row.significant


def test_holm_family_is_every_requested_row_of_one_model():
    rng = np.random.default_rng(11)
    pairs = pd.concat([synthetic_pairs(rng, "math", 1.0).assign(model="M1"),
                       synthetic_pairs(rng).assign(model="M2")])
    pooled = compare_pairs(pairs)
    assert pooled.p_adjusted.to_numpy() == pytest.approx(multipletests(pooled.p_value, method="holm")[1])
    per_model = compare_pairs(pairs, levels=("category", "turn"), per_model=True)
    assert per_model.model.value_counts().to_dict() == {"M1": 10, "M2": 10}
    for model, family in per_model.groupby("model"):
        assert family.p_adjusted.to_numpy() == pytest.approx(multipletests(family.p_value, method="holm")[1])
        assert (family.significant == (family.p_adjusted < 0.05)).all()
        alone = compare_pairs(pairs[pairs.model == model], levels=("category", "turn"))
        for col in ("n_items", "delta", "ci_low", "ci_high", "p_value", "p_adjusted"):
            assert family[col].to_numpy() == pytest.approx(alone[col].to_numpy()), col
    # One level at a time (the page, the CLI): each level is its own family.
    single = compare_pairs(pairs, levels=("category",))
    assert len(single) == 8
    assert single.p_adjusted.to_numpy() == pytest.approx(multipletests(single.p_value, method="holm")[1])
    assert compare_pairs(pairs, seed=1).equals(compare_pairs(pairs, seed=2))


def test_holm_matches_statsmodels_and_skips_nan():
    rng = np.random.default_rng(0)
    for p in (rng.uniform(size=16), np.array([0.01, 0.01, 0.04, 0.5, 0.0005]), rng.uniform(0, 0.02, size=8)):
        assert holm(p) == pytest.approx(multipletests(p, method="holm")[1])
    with_nan = np.array([0.01, np.nan, 0.02, 0.5])
    out = holm(with_nan)
    assert np.isnan(out[1]) and out[[0, 2, 3]] == pytest.approx(multipletests([0.01, 0.02, 0.5], method="holm")[1])
    batch = rng.uniform(size=(5, 8))
    assert holm(batch) == pytest.approx(np.stack([multipletests(r, method="holm")[1] for r in batch]))


def test_cluster_t_is_vectorised_like_the_table():
    pairs = synthetic_pairs(np.random.default_rng(3))
    table = compare_pairs(pairs, levels=("category",))
    d = (pairs.score_a - pairs.score_b).to_numpy().reshape(8, 10, 2)
    r = cluster_t(d.sum(axis=-1), np.full((8, 10), 2))
    assert r["p_value"] == pytest.approx(table.p_value.to_numpy())
    assert r["ci_low"] == pytest.approx(table.ci_low.to_numpy())


def test_compare_levels_stacks_one_family_per_level(sample_store):
    stacked = compare_levels(sample_store, {"judge": "gpt-4o"}, {"judge": "gpt-4.1-2025-04-14"}, per_model=True)
    for level in ("cell", "category", "turn", "all"):
        alone = compare(sample_store, {"judge": "gpt-4o"}, {"judge": "gpt-4.1-2025-04-14"}, levels=(level,),
                        per_model=True)
        pd.testing.assert_frame_equal(stacked[stacked.level == level].reset_index(drop=True), alone)
    assert set(stacked.model) == {L8, "shisa-ai/shisa-v2-llama3.3-70b"}


def test_real_ja_delta_equals_difference_of_overall_means(sample_store):
    df = compare(sample_store, GPT4O, GPT41)
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
    assert NO_CATEGORY not in set(df.category.dropna())


def test_describe_comparison():
    assert describe_comparison(GPT4O, GPT41) == "gpt-4o vs gpt-4.1-2025-04-14 on shisa-ai/shisa-v2-llama3.1-8b"
    assert describe_comparison({"judge": "J", "model": "M1"}, {"model": "M2"}) == "M1 vs M2, judged by J"
    assert describe_comparison({"judge": "J1"}, {"judge": "J2"}) == "J1 vs J2, paired per model"


def test_selectors_parse_and_describe():
    sel = parse_selector(" judge=gpt-4o , model=shisa-ai/x=y ")
    assert sel == {"judge": "gpt-4o", "model": "shisa-ai/x=y"}
    assert describe(sel) == "judge=gpt-4o, model=shisa-ai/x=y" and parse_selector(describe(sel)) == sel
    assert parse_selector("") == {} and describe({}) == "everything"
    for bad, why in (("category=math", "unknown selector key"), ("judge", "bad selector part"),
                     ("judge=", "bad selector part"), ("judge=a,judge=b", "given twice")):
        with pytest.raises(UsageError, match=why) as err:
            parse_selector(bad)
        assert "harness, bench, judge, model" in str(err.value)


def test_a_kept_score_copy_gives_the_tables_the_store_gives(sample_store, monkeypatch):
    """Compare keeps the scored items in memory per data version (``score_copy``): a pick of judges or models pairs
    its items there, with no read of the store, and the table is the store's to the last bit (every level, per
    model, a pair that shares nothing with its note); a wide pairing (every model) reads the store as before."""
    from conftest import reads_counted

    from lib.analysis import score_copy
    from lib.analysis.score_copy import NARROW_ROWS

    copy = score_copy.score_copy(sample_store)
    with sample_store.read() as cur:
        scored = cur.execute("SELECT count(*) FROM item_scores WHERE score IS NOT NULL").fetchone()[0]
    assert len(copy) == scored and scored < NARROW_ROWS
    both = {"judge": "gpt-4o"}, {"judge": "gpt-4.1-2025-04-14"}
    picks = [(GPT4O, GPT41, False), ({**GPT4O, "bench": JA}, {**GPT41, "bench": JA}, False),
             ({"judge": "gpt-4o", "model": L8}, {"judge": "gpt-4o", "model": "shisa-ai/shisa-v2-llama3.3-70b"}, False),
             (*both, True), (*both, False),
             ({"judge": "gpt-4o", "model": L8}, {"model": "shisa-ai/shisa-v2-llama3.3-70b"}, False),
             ({"judge": "gpt-4o", "model": "no-such-model"}, {"judge": "gpt-4.1-2025-04-14", "model": "no-such-model"},
              False)]
    for a, b, per_model in picks:
        for level in LEVELS_ALL:
            want = compare(sample_store, a, b, levels=(level,), per_model=per_model)
            with reads_counted(sample_store) as seen:
                got = compare(sample_store, a, b, levels=(level,), per_model=per_model, copy=copy)
            pd.testing.assert_frame_equal(got, want, check_exact=True)
            assert got.attrs == want.attrs
            narrow = all("judge" in side and "model" in side for side in (a, b))  # a pick: else the store is read
            assert len(seen) == (0 if narrow else 1) + (1 if want.empty else 0)  # an empty one says why (a read)
    lazy = score_copy.score_copy(sample_store)  # made when a pick first needs it: a wide pairing reads the store
    with reads_counted(sample_store) as seen:
        got = compare(sample_store, *both, levels=("category",), per_model=True, copy=lazy)
        assert len(seen) == 1
        compare(sample_store, GPT4O, GPT41, copy=lazy)
        compare(sample_store, GPT4O, GPT41, copy=lazy)
        assert len(seen) == 2  # the copy, once
    pd.testing.assert_frame_equal(got, compare(sample_store, *both, levels=("category",), per_model=True))
    monkeypatch.setattr(score_copy, "NARROW_ROWS", 10)  # a pick matching more rows than this: the store is read
    with reads_counted(sample_store) as seen:
        got = compare(sample_store, GPT4O, GPT41, copy=copy)
    assert len(seen) == 1
    pd.testing.assert_frame_equal(got, compare(sample_store, GPT4O, GPT41))
    monkeypatch.setattr(score_copy, "NARROW_ROWS", NARROW_ROWS)


LEVELS_ALL = ("cell", "category", "turn", "all")


def test_the_two_harness_gap_from_the_score_copy_is_the_stores(sample_store):
    """The two-harness view pairs two runs' item scores from the kept copy too (Swallow's mean of samples is what
    item_scores holds; "first sample" reads the judgments, so the store): the same tables, no read of item_scores."""
    from conftest import reads_counted

    from lib.analysis import harness_diff, runs, score_copy

    copy = score_copy.score_copy(sample_store)
    assert len(copy)  # read now: the reads counted below are the picks' own
    table = runs.runs(sample_store)
    every = [runs.Run(*r) for r in table[["harness", "bench", "judge", "model"]].itertuples(index=False)]
    swallow = [r for r in every if r.harness == "swallow"]
    assert swallow
    canonical = dict(zip(table["model"], table["canonical"]))
    pairs = [(a, b) for a in every for b in swallow if a.harness != b.harness
             and canonical[a.model] == canonical[b.model]][:4]
    assert pairs
    pairs += [(every[0], every[1])]
    for a, b in pairs:
        context = harness_diff.setup_context(sample_store, tuple(sorted({a.bench, b.bench})))
        for samples in runs.SAMPLE_MODES:
            want = runs.compare_runs(sample_store, a, b, levels=("all", "category"), swallow_samples=samples,
                                     context=context)
            with reads_counted(sample_store) as seen:
                got = runs.compare_runs(sample_store, a, b, levels=("all", "category"), swallow_samples=samples,
                                        context=context, copy=copy)
            pd.testing.assert_frame_equal(got, want, check_exact=True)
            assert got.attrs == want.attrs
            assert len(seen) == (0 if samples == "mean" else 1)
    assert any(not runs.compare_runs(sample_store, a, b, copy=copy).empty for a, b in pairs)


def test_a_score_copy_read_in_the_background_gives_the_same_table(sample_store):
    """A page starts reading the copy at its first cache miss (``background``): a pick then waits for it if needed,
    and pairs as the store does."""
    from lib.analysis import score_copy

    copy = score_copy.score_copy(sample_store, background=True)
    pd.testing.assert_frame_equal(compare(sample_store, GPT4O, GPT41, copy=copy), compare(sample_store, GPT4O, GPT41))
    assert len(copy)
