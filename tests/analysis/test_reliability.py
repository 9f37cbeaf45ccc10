"""Krippendorff's alpha (lib.analysis.reliability) against the krippendorff package 0.9.0, with LLM judges and a
human verdict set that leaves most items unscored; its interval, groups, "without this judge" and the CLI."""
from __future__ import annotations

import json
import math

import krippendorff
import numpy as np
import pytest

from lib.analysis import agreement as ag
from lib.analysis import reliability as rl
from lib.cli import main
from lib.judging import human

JA_JUDGES = ["gpt-4o", "gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14"]


def reference(matrix, raters, metric):
    return krippendorff.alpha(reliability_data=matrix[raters].to_numpy(dtype=float).T, level_of_measurement=metric)


def add_human_verdicts(store, author="ana", every=4):
    """The analyst scores every ``every``-th item of the JA bench (40 of 160 per model pair...): the rest missing."""
    matrix = ag.item_matrix(store, JA_JUDGES, bench="ja_mt_bench")
    rng = np.random.default_rng(11)
    picked = matrix.iloc[::every]
    for (bench, qid, turn, model), near in zip(picked[["bench", "question_id", "turn", "model"]].itertuples(
            index=False), picked["gpt-4o"]):
        score = float(np.clip(round(near + rng.normal(0, 1.5)), 1, 10))   # near gpt-4o, noisier
        human.record(store, author=author, bench=bench, question_id=qid, turn=int(turn), model=model, score=score)
    return len(picked)


@pytest.mark.parametrize("metric", rl.METRICS)
def test_alpha_equals_the_krippendorff_package_on_the_sample(sample_store, metric):
    matrix = ag.item_matrix(sample_store, JA_JUDGES, bench="ja_mt_bench")
    for raters in (JA_JUDGES, JA_JUDGES[:2], JA_JUDGES[1:]):
        assert rl.krippendorff_alpha(matrix, raters, metric) == pytest.approx(reference(matrix, raters, metric),
                                                                              abs=1e-9)


@pytest.mark.parametrize("metric", rl.METRICS)
def test_alpha_with_a_human_who_scored_a_quarter_of_the_items(sample_store, metric):
    scored = add_human_verdicts(sample_store)
    raters = [*JA_JUDGES, "human:ana"]
    matrix = ag.item_matrix(sample_store, raters, bench="ja_mt_bench")
    assert matrix["human:ana"].notna().sum() == scored == 80
    assert matrix["human:ana"].isna().sum() == 240
    mine = rl.krippendorff_alpha(matrix, raters, metric)
    assert mine == pytest.approx(reference(matrix, raters, metric), abs=1e-9)
    # and with an LLM judge knocked out on some items too (missing in several columns at once)
    holes = matrix.copy()
    holes.loc[holes.index % 3 == 0, "gpt-4o"] = np.nan
    holes.loc[holes.index % 5 == 0, "gpt-4.1-2025-04-14"] = np.nan
    assert rl.krippendorff_alpha(holes, raters, metric) == pytest.approx(reference(holes, raters, metric), abs=1e-9)
    # the human and one judge alone: only the 80 items both scored are pairable
    assert rl.krippendorff_alpha(matrix, ["gpt-4o", "human:ana"], metric) == pytest.approx(
        reference(matrix, ["gpt-4o", "human:ana"], metric), abs=1e-9)


def test_crafted_alpha_worked_example():
    """Krippendorff (2011), the worked example with missing data: 4 coders, 12 units, nominal alpha 0.743,
    interval alpha 0.849 (as the paper and the package give). Here interval, the metric JudgeLens uses."""
    nan = np.nan
    data = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
                     [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
                     [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
                     [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]], dtype=float)
    import pandas as pd

    matrix = pd.DataFrame(data.T, columns=["A", "B", "C", "D"]).assign(bench="b", question_id=[str(i) for i in range(12)])
    assert rl.krippendorff_alpha(matrix, list("ABCD"), "interval") == pytest.approx(0.849, abs=5e-4)
    assert rl.krippendorff_alpha(matrix, list("ABCD"), "interval") == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="interval"), abs=1e-12)


def test_interval_groups_and_without_each(sample_store):
    add_human_verdicts(sample_store)
    raters = [*JA_JUDGES, "human:ana"]
    matrix = ag.item_matrix(sample_store, raters, bench="ja_mt_bench")
    table = rl.reliability_table(matrix, raters, n_boot=300)
    overall = table.iloc[0]
    assert overall["group"] == "all" and overall["n_units"] == 320 and overall["n_questions"] == 80
    for m in rl.METRICS:
        assert overall[f"alpha_{m}_ci_low"] < overall[f"alpha_{m}"] < overall[f"alpha_{m}_ci_high"]
    groups = table["group"].tolist()
    assert "turn=1" in groups and "turn=2" in groups and "category=writing" in groups
    writing = table[table["group"] == "category=writing"].iloc[0]
    assert writing["alpha_interval"] == pytest.approx(
        reference(matrix[matrix["category"] == "writing"], raters, "interval"), abs=1e-9)
    assert table.attrs["warning"]          # categories have 10 questions
    without = rl.without_each(matrix, raters, n_boot=200)
    assert without["without"].tolist() == raters
    for r in without.itertuples():
        rest = [x for x in raters if x != r.without]
        assert r.alpha_interval == pytest.approx(reference(matrix, rest, "interval"), abs=1e-9)
        assert r.alpha_interval_change == pytest.approx(r.alpha_interval - rl.krippendorff_alpha(matrix, raters),
                                                        abs=1e-12)


def test_alpha_undefined_without_pairable_units():
    import pandas as pd

    matrix = pd.DataFrame({"A": [1.0, np.nan], "B": [np.nan, 2.0], "bench": "b", "question_id": ["1", "2"]})
    res = rl.alpha_with_interval(matrix, ["A", "B"], n_boot=50)
    assert res["n_pairable"] == 0 and math.isnan(res["alpha_interval"]) and math.isnan(res["alpha_ordinal_ci_low"])


def test_cli_reliability_json(sample_store, capsys):
    add_human_verdicts(sample_store)
    db = str(sample_store.path)
    raters = [*JA_JUDGES, "human:ana"]
    matrix = ag.item_matrix(sample_store, raters, bench="ja_mt_bench")
    sample_store.close()
    assert main(["reliability", "--db", db, "--judges", ",".join(raters), "--bench", "ja_mt_bench",
                 "--boot", "200", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_units"] == 320 and out["n_questions"] == 80
    assert out["alpha_interval"] == pytest.approx(reference(matrix, raters, "interval"), abs=1e-9)
    assert out["alpha_ordinal"] == pytest.approx(reference(matrix, raters, "ordinal"), abs=1e-9)
    assert out["alpha_interval_ci_low"] < out["alpha_interval"] < out["alpha_interval_ci_high"]
    assert out["alpha_ordinal_ci_low"] < out["alpha_ordinal"] < out["alpha_ordinal_ci_high"]
    assert [w["without"] for w in out["without"]] == raters
    assert any(g["group"] == "turn=2" for g in out["groups"])


def test_cli_reliability_unknown_judge(sample_store, capsys):
    db = str(sample_store.path)
    sample_store.close()
    assert main(["reliability", "--db", db, "--judges", "gpt-4o,human:nobody"]) == 2
    assert "Unknown judge(s): human:nobody." in capsys.readouterr().err
