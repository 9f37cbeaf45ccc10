"""The Compare page's method holds its nominal rates on the MT-Bench design (small, fast simulation).

bench/calibrate_deltas.py runs the same simulation at 20,000 replicates and prints the table.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from lib.analysis import delta_calibration as sim
from lib.analysis.deltas import cluster_t, compare_pairs, holm

REPLICATES = 1500
SE = math.sqrt(0.05 * 0.95 / REPLICATES)          # simulation error of a 5 % rate


@pytest.fixture(scope="module")
def table():
    return {row["level"]: row for row in sim.calibrate(REPLICATES, seed=20261122, design="delta")}


def test_family_wise_false_positives_stay_at_five_percent(table):
    for level, row in table.items():
        assert row["fwer_null"] <= 0.05 + 3 * SE, level


def test_independent_clipped_scores_stay_near_five_percent():
    """A second null: A and B score independently (rounded, clipped to 1-10). The 16-cell level runs at about
    5.3 % at 20,000 replicates (bench/calibrate_deltas.py); here only gross miscalibration can fail."""
    for row in sim.calibrate(REPLICATES, seed=5, design="scores"):
        assert row["fwer_null"] <= 0.05 + 3 * SE, row["level"]
        assert row["coverage_null"] >= 0.93, row["level"]


def test_intervals_cover_at_every_level(table):
    for level, row in table.items():
        assert row["coverage_null"] >= 0.93, level
        assert row["coverage_shift"] >= 0.93, level


def test_power_for_a_one_point_shift_in_one_category(table):
    assert table["category"]["power_shift"] >= 0.60
    assert table["category"]["other_rows_flagged"] <= 0.05 + 3 * SE


def test_the_simulation_catches_a_miscalibrated_test():
    """Treating items (not questions) as the unit ignores the question effect shared by the turns: the
    same simulation must then show far too many false positives, or it could not tell good from bad."""
    rng = np.random.default_rng(1)
    a, b = sim.simulate_scores(REPLICATES, rng)
    d = (a - b).reshape(REPLICATES, 8, 20)                  # each category's 20 items as if independent
    p = cluster_t(d, np.ones(d.shape))["p_value"]
    assert (holm(p, axis=-1) < 0.05).any(axis=1).mean() > 0.05 + 5 * SE


def test_the_vectorised_simulation_is_the_page_method():
    a, b = sim.simulate_scores(1, np.random.default_rng(7), shift=1.0)
    fast = sim.level_tests(a, b)
    rows = [{"question": f"q{c * 10 + k}", "category": f"c{c}", "turn": t + 1,
             "score_a": a[0, c, k, t], "score_b": b[0, c, k, t]}
            for c in range(8) for k in range(10) for t in range(2)]
    assert ((a >= 1) & (a <= 10) & (b >= 1) & (b <= 10)).all() and (a == np.round(a)).all()
    for level in ("all", "turn", "category", "cell"):
        part = compare_pairs(pd.DataFrame(rows), levels=(level,))     # one level = one family, as on the page
        for col in ("delta", "ci_low", "ci_high", "p_value", "p_adjusted"):
            assert part[col].to_numpy() == pytest.approx(fast[level][col][0]), (level, col)
        assert part.significant.tolist() == fast[level]["significant"][0].tolist()
