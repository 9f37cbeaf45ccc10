"""lib.render.tables.for_display: what a table shows instead of raw nulls and tiny p-values."""
from __future__ import annotations

import pandas as pd

from lib.render.tables import MISSING, for_display, format_p


def test_p_values_and_missing_values_read_plainly():
    df = pd.DataFrame({"category": ["coding", None], "turn": pd.array([1, None], dtype="Int64"),
                       "delta": [0.41375, float("nan")], "p_value": [0.000008, 0.0234], "p_adjusted": [None, 0.5],
                       "n": [80, 80]})
    shown, converted = for_display(df, {"delta": "%.3f"})
    assert shown["category"].tolist() == ["coding", MISSING]
    assert shown["turn"].tolist() == ["1", MISSING]
    assert shown["delta"].tolist() == ["0.414", MISSING]
    assert shown["p_value"].tolist() == ["< 0.001", "0.023"]
    assert shown["p_adjusted"].tolist() == [MISSING, "0.500"]
    assert shown["n"].tolist() == [80, 80]  # nothing missing: left as numbers
    assert converted == ["category", "turn", "delta", "p_value", "p_adjusted"]
    assert df["category"].isna().sum() == 1  # the input is not changed (downloads keep raw values)


def test_format_p_edges():
    assert [format_p(v) for v in (0.0, 0.000999, 0.001, 1.0, None, float("nan"))] == [
        "< 0.001", "< 0.001", "0.001", "1.000", MISSING, MISSING]
