"""Score distributions, the JA harness's summary numbers, radar data and length bias."""
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sstats

from lib.analysis import distributions
from lib.analysis.distributions import HISTOGRAM_RULE, ja_overall, length_bias, radar_frame, score_histogram, score_summary
from lib.store import refresh_item_scores

JA = "ja_mt_bench"
SWALLOW = "japanese_mt_bench"
L70 = "shisa-ai/shisa-v2-llama3.3-70b"
L8 = "shisa-ai/shisa-v2-llama3.1-8b"

# fastchat-format.md §11: judge, model, T1, T2, overall (pooled), macro over 8 categories.
REFERENCE = [
    ("gpt-4o", L70, 9.0750, 7.8125, 8.4438, 8.5583),
    ("gpt-4.1-2025-04-14", L70, 8.9625, 7.8500, 8.4063, 8.4500),
    ("gpt-4.1-mini-2025-04-14", L70, 8.8875, 7.9625, 8.4250, 8.3917),
    ("gpt-4o", L8, 7.6375, 7.1750, 7.4063, 7.8167),
    ("gpt-4.1-2025-04-14", L8, 7.4125, 6.5750, 6.9938, 7.3500),
    ("gpt-4.1-mini-2025-04-14", L8, 7.6125, 6.9375, 7.2750, 7.7667),
]


def add_questions(store, bench, categories: dict[str, str]):
    with store.write() as cur:
        cur.executemany("INSERT INTO questions VALUES (0, ?, ?, ?, ['q'])",
                        [[bench, qid, cat] for qid, cat in categories.items()])
        refresh_item_scores(cur)


def add_judgments(store, rows, *, harness="fastchat", bench="b"):
    """rows: (judge, model, question_id, turn, score[, sample]); score None = not parsed."""
    with store.write() as cur:
        cur.executemany(
            "INSERT INTO single_judgments (source_id, harness, bench, judge, model, question_id, turn, sample, "
            "raw_score, score, parse_status) VALUES (0, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [[harness, bench, r[0], r[1], str(r[2]), r[3], r[5] if len(r) > 5 else 0,
              -1 if r[4] is None else r[4], r[4], "not_parsed" if r[4] is None else "ok"] for r in rows])
        refresh_item_scores(cur)  # what ingest does after writing judgments


@pytest.mark.parametrize("judge, model, t1, t2, pooled, macro_column", REFERENCE)
def test_ja_overall_reproduces_the_reference_table(sample_store, judge, model, t1, t2, pooled, macro_column):
    """§11's last column is headed "macro over 8 categories", but every one of its 6 values is the
    mean of the 6 categories other than coding and math (results-table.py "Overall xCM"): gpt-4o /
    70b has category means 8.70 9.55 9.05 7.50 6.75 8.95 8.90 8.15, whose mean is 8.44375 (with 10
    questions per category and both turns, the 8-category macro always equals the pooled mean) and
    whose mean without coding and math is 8.5583. So that column is checked against macro_xcm."""
    df = ja_overall(sample_store, bench=JA)
    assert len(df) == 6
    row = df[(df.judge == judge) & (df.model == model)].iloc[0]
    # The table rounds half up at 4 decimals (8.40625 -> 8.4063), so allow half a unit of the last place.
    for got, want in ((row.t1, t1), (row.t2, t2), (row.overall_pooled, pooled), (row.macro_xcm, macro_column)):
        assert abs(got - want) <= 5e-5 + 1e-9
    cats = df.attrs["categories"]
    assert len(cats) == 8
    assert row.macro == pytest.approx(np.mean([row[c] for c in cats]))
    assert row.macro == pytest.approx(row.overall_pooled)            # balanced: 20 items in every category
    assert row.overall_turn_mean == pytest.approx((row.t1 + row.t2) / 2)
    assert row.n_items == 160


def test_ja_overall_category_is_mean_of_turn_means(store):
    """visualize-results.py: a category score is the mean of its per-turn means, not the pooled mean."""
    add_questions(store, "b", {"1": "writing", "2": "writing", "3": "math"})
    add_judgments(store, [("J", "M", 1, 1, 10), ("J", "M", 2, 1, 6), ("J", "M", 1, 2, 2),  # turn 2 of q2 missing
                          ("J", "M", 3, 1, 5), ("J", "M", 3, 2, 7)])
    row = ja_overall(store).iloc[0]
    assert row.writing == pytest.approx(((10 + 6) / 2 + 2) / 2)   # 5.0, pooled would be 6.0
    assert row.math == pytest.approx(6.0)
    assert row.macro == pytest.approx(5.5)
    assert row.macro_xcm == pytest.approx(5.0)
    assert row.overall_pooled == pytest.approx(30 / 5)


def test_missing_category_is_nan_never_zero(store):
    add_questions(store, "b", {"1": "writing", "2": "math", "3": "coding"})
    add_judgments(store, [("J", "M", 1, 1, 8), ("J", "M", 2, 1, 4), ("J", "M", 3, 1, None)])  # coding: parse failure only
    radar = radar_frame(store)
    assert list(radar.category) == ["coding", "math", "writing"]
    coding = radar[radar.category == "coding"].iloc[0]
    assert np.isnan(coding.score) and coding.n_items == 0
    assert radar.set_index("category").score[["math", "writing"]].tolist() == [4, 8]
    overall = ja_overall(store).iloc[0]
    assert np.isnan(overall.coding)
    assert overall.macro == pytest.approx(6.0)          # mean of the categories present, not (8+4+0)/3


def test_radar_frame_filters(sample_store):
    radar = radar_frame(sample_store, bench=JA, judge="gpt-4o")
    assert len(radar) == 2 * 8 and set(radar.model) == {L70, L8}
    assert radar.score.notna().all() and (radar.n_items == 20).all()



def test_ja_overall_of_the_radar_frame_kept(sample_store, store):
    """The page passes the radar's frame (same bench and filters) to the JA table: the very table it reads itself,
    missing and failed categories too."""
    for bench, filters in ((JA, {"judge": ["gpt-4o", "gpt-4.1-2025-04-14"], "model": [L8]}), (JA, {}),
                           (SWALLOW, {})):
        kept = radar_frame(sample_store, bench=bench, filters=filters)
        given = ja_overall(sample_store, bench=bench, filters=filters, long=kept)
        # to the last bit but one: DuckDB sums an item's doubles over its threads in no fixed order, so two runs of
        # the same statement can part in the last bit (seen here: 12 of 20 runs of ja_overall on the sample)
        assert len(given)
        pd.testing.assert_frame_equal(given, ja_overall(sample_store, bench=bench, filters=filters), check_exact=False,
                                      rtol=1e-13, atol=0)
        assert given.attrs["categories"] == ja_overall(sample_store, bench=bench, filters=filters).attrs["categories"]
    add_questions(store, "b", {"1": "writing", "2": "math", "3": "coding"})
    add_judgments(store, [("J", "M", 1, 1, 8), ("J", "M", 2, 1, 4), ("J", "M", 3, 1, None), ("J", "N", 1, 2, 5)])
    pd.testing.assert_frame_equal(ja_overall(store, bench="b", long=radar_frame(store, bench="b")),
                                  ja_overall(store, bench="b"), check_exact=False, rtol=1e-13, atol=0)

def test_histogram_counts_sum_to_n_and_units(sample_store):
    by_item = score_histogram(sample_store, ["model"], unit="item", filters={"harness": "swallow"})
    by_judgment = score_histogram(sample_store, ["model"], unit="judgment", filters={"harness": "swallow"})
    for df in (by_item, by_judgment):
        assert (df.groupby("model")["count"].sum() == df.groupby("model")["n"].first()).all()
        assert (df.groupby("model").size() == 10).all()                # every bin present, 0 where empty
        assert df.groupby("model")["share"].sum().tolist() == pytest.approx([1, 1, 1, 1])
    with sample_store.read() as cur:
        judgments = dict(cur.execute("SELECT model, count(score) FROM single_judgments WHERE harness = 'swallow' "
                                     "GROUP BY ALL").fetchall())
        items = dict(cur.execute("SELECT model, count(score) FROM item_scores WHERE harness = 'swallow' "
                                 "GROUP BY ALL").fetchall())
    # 5 samples x 160 items = 800 judgments per model, minus parse failures (-1) and items with none valid
    assert judgments == {"hosted_vllm/fake-org/Fake-JA-Chat-8B": 774, "hosted_vllm/fake-org/Fake-JA-Reasoner-32B": 756,
                         "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b": 781, "hosted_vllm/shisa-ai/shisa-v2-llama3.3-70b": 789}
    assert items == {"hosted_vllm/fake-org/Fake-JA-Chat-8B": 159, "hosted_vllm/fake-org/Fake-JA-Reasoner-32B": 154,
                     "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b": 160, "hosted_vllm/shisa-ai/shisa-v2-llama3.3-70b": 160}
    assert by_judgment.groupby("model")["n"].first().to_dict() == judgments
    assert by_item.groupby("model")["n"].first().to_dict() == items


def test_histogram_bins(store):
    add_questions(store, "b", {"1": "writing", "2": "math"})
    add_judgments(store, [("J", "M", 1, 1, 10), ("J", "M", 1, 2, 7.5), ("J", "M", 2, 1, 1), ("J", "M", 2, 2, 9.5),
                          ("J", "M", 3, 1, 7), ("J", "M", 3, 1, 8)])          # an item mean of 7.5 (two runs)
    hist = score_histogram(store, unit="item").set_index("bin")
    assert hist.loc[10, "count"] == 1 and hist.loc[10, "bin_label"] == "10"
    assert hist.loc[7, "count"] == 2 and hist.loc[7, "bin_label"] == "[7,8)"
    assert hist.loc[9, "count"] == 1 and hist.loc[1, "count"] == 1
    assert hist["count"].sum() == 5 and (hist["n"] == 5).all()
    judgment = score_histogram(store, unit="judgment").set_index("bin")
    assert judgment.loc[7, "count"] == 2 and judgment.loc[8, "count"] == 1 and judgment["n"].iloc[0] == 6
    by_cat = score_histogram(store, ["category"], unit="item")
    assert set(by_cat.category.dropna()) == {"writing", "math"} and by_cat.category.isna().any()
    assert "10" in HISTOGRAM_RULE


def test_histogram_of_one_count_frame_for_every_grouping(store):
    """The page queries score_counts once per unit and filters and sums it per colouring and panels: every grouping
    gets the same bins as score_histogram, a 0 (a 0-10 scale) opening a bin 0 for all, a question without a
    category (NULL) grouped last."""
    add_questions(store, "b", {"1": "writing", "2": "math"})
    add_judgments(store, [("J", "M", 1, 1, 10), ("J", "M", 1, 2, 7.5), ("J", "M", 2, 1, 0), ("J", "M", 3, 1, 3),
                          ("K", "M", 1, 1, 5), ("K", "N", 2, 2, 9), ("K", "N", 2, 2, 8)])   # K/N q2 t2: 8.5
    counts = distributions.score_counts(store, unit="item")
    ordered = counts.fillna({"category": "-"}).sort_values(["judge", "model", "turn", "bin"])
    assert ordered[["judge", "model", "turn", "category", "bin", "count"]].values.tolist() == [
        ["J", "M", 1, "math", 0, 1], ["J", "M", 1, "-", 3, 1], ["J", "M", 1, "writing", 10, 1],
        ["J", "M", 2, "writing", 7, 1], ["K", "M", 1, "writing", 5, 1], ["K", "N", 2, "math", 8, 1]]
    by_cat = distributions.histogram_of_counts(counts, ["category"]).fillna({"category": "-"})
    assert by_cat.columns.tolist() == ["category", "bin", "bin_label", "count", "n", "share"]
    assert by_cat.bin.tolist() == list(range(0, 11)) * 3 and by_cat.bin_label.iloc[:2].tolist() == ["[0,1)", "[1,2)"]
    assert by_cat.category.iloc[::11].tolist() == ["math", "writing", "-"]
    assert by_cat[by_cat["count"] > 0][["category", "bin", "count", "n"]].values.tolist() == [
        ["math", 0, 1, 2], ["math", 8, 1, 2], ["writing", 5, 1, 3], ["writing", 7, 1, 3], ["writing", 10, 1, 3],
        ["-", 3, 1, 1]]
    for by in ([], ["judge"], ["turn", "category"], ["model", "judge"], ["harness", "bench", "turn"]):
        assert distributions.histogram_of_counts(counts, by).equals(score_histogram(store, by, unit="item"))
        assert score_histogram(store, by, counts=counts).equals(score_histogram(store, by))   # the page's path
    empty = distributions.histogram_of_counts(distributions.score_counts(store, filters={"judge": "nobody"}), ["turn"])
    assert empty.empty and empty.columns.tolist() == ["turn", "bin", "bin_label", "count", "n", "share"]



def test_list_filters_keep_the_rows_of_their_values(store):
    """A filter's list keeps the rows whose value it holds, never one without a value (NULL), a NULL in the list
    included; None alone keeps those; an empty list none; question ids match as text; both units alike."""
    add_questions(store, "b", {"1": "writing", "2": "math"})
    add_judgments(store, [("J", "M", 1, 1, 10), ("J", "M", 1, 2, 7.5), ("J", "M", 2, 1, 4), ("J", "M", 3, 1, 3),
                          ("K", "M", 1, 1, 5), ("K", "N", 2, 2, 9), ("K", "N", 2, 2, 8)])
    for unit in ("item", "judgment"):
        every = distributions.score_counts(store, unit=unit)

        def kept(**filters):
            got = distributions.score_counts(store, unit=unit, filters=filters)
            return sorted(map(tuple, got[["judge", "model", "turn", "bin", "count"]]
                              .astype(str).values.tolist()))

        def expected(mask):
            return sorted(map(tuple, every[mask][["judge", "model", "turn", "bin", "count"]].astype(str).values.tolist()))

        assert kept(category=["math", None]) == expected(every.category == "math")
        assert kept(category=["writing", "math"]) == expected(every.category.notna())
        assert kept(category=None) == expected(every.category.isna())
        assert kept(judge=["K"], model=("N", "nobody")) == expected((every.judge == "K") & (every.model == "N"))
        assert kept(turn=[2]) == expected(every.turn == 2) and kept(judge=[]) == []
        assert distributions.score_counts(store, unit=unit, filters={"question_id": [3, "2"]})["count"].sum() == \
            (4 if unit == "judgment" else 3)

def test_score_summary_matches_numpy(sample_store):
    df = score_summary(sample_store, ["judge", "model"], filters={"bench": JA})
    row = df[(df.judge == "gpt-4o") & (df.model == L8)].iloc[0]
    with sample_store.read() as cur:
        scores = np.array([r[0] for r in cur.execute(
            "SELECT score FROM item_scores WHERE bench = ? AND judge = 'gpt-4o' AND model = ?", [JA, L8]).fetchall()])
    assert row.n == len(scores) == 160
    assert row["mean"] == pytest.approx(scores.mean())
    assert row["std"] == pytest.approx(scores.std(ddof=1))
    assert [row["q1"], row["median"], row["q3"]] == pytest.approx(list(np.quantile(scores, [0.25, 0.5, 0.75])))
    assert (row["min"], row["max"]) == (scores.min(), scores.max())
    judgment = score_summary(sample_store, ["model"], unit="judgment", filters={"harness": "swallow"})
    assert judgment.n.tolist() == [774, 756, 781, 789]  # 800 samples minus the -1s (26, 44, 19, 11)


def test_unknown_keys_are_refused(store):
    with pytest.raises(ValueError, match="unknown group key 'colour'"):
        score_histogram(store, ["colour"])
    with pytest.raises(ValueError, match="unknown unit"):
        score_summary(store, unit="sample")
    with pytest.raises(ValueError, match="unknown filter"):
        score_summary(store, filters={"colour": 1})


def test_length_bias_on_the_ja_data(sample_store):
    points, stats = length_bias(sample_store, bench=JA)
    assert points.groupby("judge").size().to_dict() == {
        "gpt-4.1-2025-04-14": 320, "gpt-4.1-mini-2025-04-14": 320, "gpt-4o": 320}
    assert points.answer_chars.notna().all() and (stats.n_without_answer == 0).all()
    assert list(points.columns) == ["harness", "bench", "judge", "model", "question_id", "turn", "sample",
                                    "category", "answer_chars", "score"]
    part = points[points.judge == "gpt-4o"]
    row = stats.set_index("judge").loc["gpt-4o"]
    rho, p = sstats.spearmanr(part.answer_chars, part.score)
    tau, _ = sstats.kendalltau(part.answer_chars, part.score)
    assert (row.n, row.spearman_rho, row.spearman_p, row.kendall_tau) == pytest.approx((320, rho, p, tau))
    with sample_store.read() as cur:
        text = cur.execute("SELECT text FROM answers WHERE bench = ? AND model = ? AND question_id = '1' AND turn = 2",
                           [JA, L8]).fetchone()[0]
    one = part[(part.model == L8) & (part.question_id == "1") & (part.turn == 2)]
    assert one.answer_chars.tolist() == [len(text)]


def test_length_points_of_one_bench_are_those_of_every_bench_there(sample_store):
    """A bench named outright (the page's case: its filter goes straight to the answers) gives the very rows, in
    the same order, that every bench's points hold for it, on both of the sample's benches."""
    everything = distributions.length_points(sample_store)
    for bench in (JA, SWALLOW):
        mine = distributions.length_points(sample_store, bench=bench)
        assert len(mine) > 0 and mine.answer_chars.notna().all()
        assert mine.equals(everything[everything.bench == bench].reset_index(drop=True))
        one = distributions.length_points(sample_store, bench=bench, judge=mine.judge.iloc[0])
        assert one.equals(mine[mine.judge == mine.judge.iloc[0]].reset_index(drop=True))
        # what the page does: the bench's answer lengths read once, then each judge joined to them in memory
        lengths = distributions.answer_lengths(sample_store, bench=bench)
        for judge in mine.judge.unique():
            given = distributions.length_points(sample_store, bench=bench, judge=judge, lengths=lengths)
            assert given.equals(mine[mine.judge == judge].reset_index(drop=True))


def test_length_bias_uses_each_swallow_sample(sample_store):
    points, stats = length_bias(sample_store, bench=SWALLOW)
    assert len(points) == 774 + 756 + 781 + 789                        # one point per scored sample
    assert points["sample"].nunique() == 5
    with sample_store.read() as cur:
        rows = cur.execute("""SELECT a.sample, length(a.text), j.score FROM answers a JOIN single_judgments j
            USING (bench, model, question_id, turn, sample)
            WHERE a.bench = ? AND a.question_id = '5' AND a.turn = 1 AND a.model LIKE '%Chat-8B'
                  AND j.score IS NOT NULL ORDER BY 1""", [SWALLOW]).fetchall()
    mine = points[(points.question_id == "5") & (points.turn == 1) & points.model.str.endswith("Chat-8B")]
    assert list(zip(mine["sample"], mine.answer_chars, mine.score)) == rows


def test_length_join_normalises_model_names(store):
    """A judgment's model may be the answer file's model_id or file name, with '__' for '/' and any case."""
    with store.write() as cur:
        cur.executemany("INSERT INTO answers (source_id, harness, bench, model, model_id, file_model, question_id, "
                        "sample, turn, text) VALUES (0, 'fastchat', 'b', ?, ?, ?, '1', 0, 1, ?)",
                        [["local-name", "Org/Model-A", "org__model-a", "abcde"],
                         ["other", None, "Org__Model-B", "xyz"]])
    add_judgments(store, [("J", "org__model-a", 1, 1, 7), ("J", "org/model-b", 1, 1, 5), ("J", "nobody", 1, 1, 3)])
    points, stats = length_bias(store)
    assert dict(zip(points.model, points.answer_chars)) == {"org__model-a": 5, "org/model-b": 3}
    assert stats.iloc[0][["n", "n_without_answer"]].tolist() == [2, 1]


def test_length_join_prefers_the_same_harness_then_the_same_name_then_the_newest_source(store):
    """Several stored answers may match one judged answer under the name rule: the one of the judgment's harness
    wins, then the one stored under the judgment's own model name, then the newest source."""
    with store.write() as cur:
        cur.executemany("INSERT INTO answers (source_id, harness, bench, model, model_id, file_model, question_id, "
                        "sample, turn, text) VALUES (?, ?, 'b', ?, ?, NULL, ?, 0, 1, ?)",
                        [[5, "swallow", "m", None, "1", "x" * 50],         # q1: the other harness, newest
                         [1, "fastchat", "M", None, "1", "x" * 10],        # q1: same harness, another name
                         [2, "fastchat", "m", None, "2", "x" * 20],        # q2: same name, older source
                         [3, "fastchat", "other", "m", "2", "x" * 30],     # q2: by model_id, newer source
                         [4, "fastchat", "a", "m", "3", "x" * 40],         # q3: two by model_id: the newest wins
                         [6, "fastchat", "b", "m", "3", "x" * 60],
                         [7, "swallow", "m", None, "4", "x" * 70]])       # q4: only the other harness
    add_judgments(store, [("J", "m", q, 1, 5) for q in (1, 2, 3, 4)])
    points, _ = length_bias(store)
    assert dict(zip(points.question_id, points.answer_chars)) == {"1": 10, "2": 20, "3": 60, "4": 70}
    lengths = distributions.answer_lengths(store, bench="b")     # what the page keeps per bench
    under_m = [q for q, name in zip(lengths["question_id"].to_pylist(), lengths["name"].to_pylist()) if name == "m"]
    assert sorted(under_m) == ["1", "1", "2", "2", "3", "3", "4"]                # several candidates: ranked
    given = distributions.length_points(store, bench="b", lengths=lengths)
    assert dict(zip(given.question_id, given.answer_chars)) == {"1": 10, "2": 20, "3": 60, "4": 70}


def test_length_summary_is_what_the_page_draws(store, monkeypatch):
    """The page caches the profile, the stats and the count, and the points only when few enough to draw."""
    with store.write() as cur:
        cur.executemany("INSERT INTO answers (source_id, harness, bench, model, model_id, file_model, question_id, "
                        "sample, turn, text) VALUES (0, 'fastchat', 'b', 'm', NULL, NULL, ?, 0, 1, ?)",
                        [[str(q), "x" * (10 * q)] for q in range(1, 31)])
    add_judgments(store, [("J", "m", q, 1, 1 + q % 10) for q in range(1, 31)])
    points, stats = length_bias(store)
    profile, summary_stats, n, shown = distributions.length_summary(store)
    assert n == len(points) == 30
    assert profile.equals(distributions.length_profile(points)) and summary_stats.equals(stats)
    assert shown.equals(points[["harness", "bench", "judge", "answer_chars", "score"]])   # what the chart reads
    monkeypatch.setattr(distributions, "SHOWN_POINTS", 29)
    assert distributions.length_summary(store)[3] is None


def test_length_counts_the_stored_text_think_blocks_included(store):
    """answer_chars is the length of the stored text the judge saw: a <think> block counts, an empty text is 0
    characters, a missing text (NULL) leaves the point out. (answer_features' length, read where it is the same
    number, counts the visible text only.)"""
    think = "<think>" + "t" * 40 + "</think>" + "abc"
    with store.write() as cur:
        sid = cur.execute("INSERT INTO sources (sha256, path, file_name, harness, kind, bench, bytes, rows_imported) "
                          "VALUES ('x', 'a.jsonl', 'a.jsonl', 'fastchat', 'model_answers', 'b', 0, 4) "
                          "RETURNING source_id").fetchone()[0]
        cur.executemany("INSERT INTO answers (source_id, harness, bench, model, model_id, file_model, question_id, "
                        "sample, turn, text) VALUES (?, 'fastchat', 'b', 'm', NULL, NULL, ?, 0, 1, ?)",
                        [[sid, "1", think], [sid, "2", ""], [sid, "3", None], [sid, "4", "日本語です"]])
        refresh_item_scores(cur)   # fills answer_features, as every writer does
        assert cur.execute("SELECT count(*) FROM answer_features").fetchone()[0] == 4
    add_judgments(store, [("J", "m", q, 1, 5) for q in (1, 2, 3, 4)])
    points, stats = length_bias(store)
    assert dict(zip(points.question_id, points.answer_chars)) == {"1": len(think), "2": 0, "4": 5}
    assert stats.iloc[0][["n", "n_without_answer"]].tolist() == [3, 1]


def test_length_summary_of_many_points_has_the_numbers_of_the_points(store, monkeypatch):
    """Past SHOWN_POINTS the page's summary is worked out from arrays, not from a frame of the points: the same
    profile and stats as length_bias's points give, runs of one judge under two harnesses, a run without any answer,
    and equal lengths across a bin's edge put in the points' order (the keys', text in code point order: 'B' before
    'a', '10' before '9', 'é' last), as SQL's ORDER BY puts them."""
    models = ["B-model", "a-model", "é-model"]
    with store.write() as cur:
        cur.executemany("INSERT INTO answers (source_id, harness, bench, model, model_id, file_model, question_id, "
                        "sample, turn, text) VALUES (0, 'fastchat', 'b', ?, NULL, NULL, ?, 0, ?, ?)",
                        [[m, str(q), t, "x" * (10 if (q + t + i) % 3 else 20)]
                         for i, m in enumerate(models) for q in range(1, 13) for t in (1, 2)])
    rows = [(judge, m, q, t, 1 + (q * 7 + t * 3 + i + len(judge)) % 10)
            for judge in ("J2", "J1") for i, m in enumerate(models) for q in range(1, 13) for t in (1, 2)]
    add_judgments(store, rows)
    add_judgments(store, [("J1", m, q, 1, 1 + q % 10) for m in models for q in range(1, 13)], harness="swallow")
    add_judgments(store, [("J3", "nobody", q, 1, 5) for q in range(1, 5)])
    points, stats = length_bias(store, bench="b")
    with store.read() as cur:
        keys = cur.execute("SELECT harness, bench, judge, model, question_id, turn, sample FROM single_judgments "
                           "WHERE score IS NOT NULL GROUP BY ALL ORDER BY ALL").fetchall()
    every = distributions.length_points(store, bench="b")
    assert list(every[list(distributions.POINT_KEYS)].itertuples(index=False, name=None)) == keys
    assert stats[["harness", "judge", "n", "n_without_answer"]].values.tolist() == [
        ["fastchat", "J1", 72, 0], ["fastchat", "J2", 72, 0], ["swallow", "J1", 36, 0], ["fastchat", "J3", 0, 4]]
    monkeypatch.setattr(distributions, "SHOWN_POINTS", 0)
    profile, summary_stats, n, shown = distributions.length_summary(store, bench="b")
    assert profile.equals(distributions.length_profile(points)) and summary_stats.equals(stats)
    assert n == len(points) == 180 and shown is None
    assert profile.groupby("judge")["n"].sum().to_dict() == {"J1": 108, "J2": 72}


def _profile_from_a_frame(judge, chars, scores, bins=10):
    """The length profile of one judge as a frame of the points gave it (before it was read from sorted arrays)."""
    part = pd.DataFrame({"answer_chars": chars, "score": scores})
    codes = pd.qcut(part["answer_chars"].rank(method="first"), q=min(bins, len(part)), labels=False)
    g = part.assign(bin=codes.astype(int) + 1).groupby("bin")
    frame = pd.DataFrame({
        "chars_lo": g["answer_chars"].min(), "chars_hi": g["answer_chars"].max(),
        "chars_median": g["answer_chars"].median(), "n": g.size(), "mean": g["score"].mean(),
        "q1": g["score"].quantile(0.25), "median": g["score"].median(), "q3": g["score"].quantile(0.75),
    }).reset_index()
    frame.insert(0, "judge", judge)
    return frame


@pytest.mark.parametrize("n", [1, 2, 3, 9, 10, 11, 17, 100, 1001, 5000])
def test_length_profile_has_the_numbers_a_frame_of_the_points_gave(n):
    """The profile is read from the answers sorted by length, bin by bin: the very numbers (bit for bit) that
    grouping a frame of the points gave, with ties in length across a bin's edge, few points (fewer than 10 bins),
    integer scores, item means in fifths (Swallow's 5 samples) and arbitrary fractions."""
    rng = np.random.default_rng(n)
    for spread in (3, 50, 3000):
        chars = rng.integers(0, spread, n).astype("int64")
        for scores in (rng.integers(1, 11, n).astype(float), rng.integers(5, 51, n) / 5, rng.random(n) * 10):
            points = pd.DataFrame({"judge": "J", "answer_chars": chars, "score": scores})
            assert distributions.length_profile(points).equals(_profile_from_a_frame("J", chars, scores))


def test_categories_are_read_where_pages_show_them(sample_store):
    """distributions.CATEGORIES (where a question's category is read, one table less for a DuckLake store) holds
    the very rows and categories current_questions shows, on a store whose judges saw turns of their own."""
    with sample_store.read() as cur:
        assert cur.execute("SELECT count(*) FROM judge_questions").fetchone()[0] > 0
        shown = cur.execute("SELECT bench, question_id, category FROM current_questions ORDER BY ALL").fetchall()
        read = cur.execute(f"SELECT bench, question_id, category FROM {distributions.CATEGORIES} "
                           "ORDER BY ALL").fetchall()
    assert len(shown) > 0 and read == shown
