"""Tables as the user reads them: no ``None``/``nan``/``<NA>`` (an em dash instead), p-values as ``< 0.001``.

Pure pandas (``for_display``): pages pass a frame and the number formats they would give Streamlit; columns that
hold a missing value become text formatted the same way, so the grid never prints a raw null. Downloads (CSV,
JSON) keep the raw values.
"""
from __future__ import annotations

import math

import pandas as pd

MISSING = "—"
P_COLUMNS = ("p", "p_value", "p_adjusted", "p_holm", "p_raw")


def format_p(value) -> str:
    """A p-value for reading: '< 0.001', '0.012', '—' when there is none."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or pd.isna(value):
        return MISSING
    value = float(value)
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def _printf(fmt: str | None, value) -> str:
    if fmt:
        try:
            return fmt % value
        except (TypeError, ValueError):
            pass
    if isinstance(value, float):
        return f"{value:.3f}".rstrip("0").rstrip(".") if not value.is_integer() else f"{value:.0f}"
    return str(value)


def for_display(df: pd.DataFrame, formats: dict[str, str] | None = None) -> tuple[pd.DataFrame, list[str]]:
    """(a copy of ``df`` fit to show, the columns turned into text). p-value columns become text (``format_p``);
    any other column with a missing value becomes text with ``MISSING`` there, numbers formatted with
    ``formats[column]`` (printf style, as Streamlit's NumberColumn) or plainly."""
    formats = formats or {}
    out = df.copy()
    converted = []
    for col in out.columns:
        series = out[col]
        if str(col) in P_COLUMNS:
            out[col] = [format_p(v) for v in series]
            converted.append(col)
            continue
        try:
            missing = series.isna()
        except (TypeError, ValueError):
            continue
        if not missing.any():
            continue
        fmt = formats.get(col)
        numeric = pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
        out[col] = [MISSING if m else (_printf(fmt, v) if numeric or isinstance(v, float) else v)
                    for v, m in zip(series.astype(object), missing)]
        converted.append(col)
    return out, converted
