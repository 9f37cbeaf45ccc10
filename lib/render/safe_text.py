"""Showing untrusted text (answers, rationales, file names, judge names) without executing it.

Streamlit renders Markdown in st.markdown/st.write/captions/labels: a remote Markdown image there
makes every viewer's browser fetch an attacker's URL. Pages show data text with st.code/st.text or
dataframes; where a name must sit inside Markdown, ``md_escape`` it first.
"""
from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$])")
_AUTOLINK = re.compile(r"(?i)(://|www\.|@)")
WORD_JOINER = "\u2060"  # invisible; breaks GitHub-style autolinks, which escaping cannot prevent


def md_escape(text: object) -> str:
    """Make text show literally inside Markdown: no links, images, emphasis, LaTeX or directives."""
    text = _AUTOLINK.sub(lambda m: m.group(1)[0] + WORD_JOINER + m.group(1)[1:], str(text))
    return _MD_SPECIAL.sub(r"\\\1", text).replace("\n", " ")


# Spreadsheets run a cell that starts with = + - @ (or a tab / carriage return before one) as a formula:
# "=HYPERLINK(...)" in a model name becomes a link in whoever opens the CSV. OWASP's rule: prefix such a cell
# with a single quote, which spreadsheets show as text. Numbers (a negative score, "-1") are left alone.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_PLAIN_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def csv_cell(value: object) -> object:
    """One CSV cell made inert: text that a spreadsheet would run as a formula gets a leading quote."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _PLAIN_NUMBER.fullmatch(value):
        return "'" + value
    return value


def csv_safe(df):
    """A copy of ``df`` whose text cells and column names cannot run as spreadsheet formulas."""
    out = df.copy()
    out.columns = [csv_cell(c) for c in out.columns]
    for i in range(out.shape[1]):
        col = out.iloc[:, i]
        if col.dtype == object or str(col.dtype) in ("str", "string"):
            out.isetitem(i, col.map(csv_cell, na_action="ignore"))
    return out


def csv_text(df) -> str:
    """``df`` as CSV text (no index) that is safe to open in a spreadsheet."""
    return csv_safe(df).to_csv(index=False)
