"""Showing untrusted text (answers, rationales, file names, judge names) without executing it.

Streamlit renders Markdown in st.markdown/st.write/captions/labels: a remote Markdown image there
makes every viewer's browser fetch an attacker's URL. Pages show data text with st.code/st.text or
dataframes; where a name must sit inside Markdown, ``md_escape`` it first.
"""
from __future__ import annotations

import html
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


_CARD = "border:1px solid rgba(128,128,128,0.3);border-radius:0.5rem;padding:0.75rem 1rem;margin-bottom:0.75rem"
_CARD_SIDES = "display:grid;grid-template-columns:1fr 1fr;gap:1rem;margin:0.5rem 0"
_CARD_SMALL = "font-size:0.875rem;opacity:0.6"
_CARD_VALUE = "overflow-wrap:anywhere;word-break:break-word"


def cards_html(cards: list[dict]) -> str:
    """Bordered cards of untrusted text as one HTML block (for ``st.html``): per card a bold ``title`` and a
    ``note`` on one line, its ``sides`` ((label, text) pairs) side by side with the values wrapped, and a small
    ``footer`` when given. Every text is HTML-escaped and shown on one line per value (newlines read as spaces, as
    ``md_escape`` shows them); the only markup is ours. One element for every card: a bordered container with
    columns per card cost the browser a dozen components to redraw on every rerun."""
    def text(value: object) -> str:
        return html.escape(str(value).replace("\n", " "), quote=True)

    parts = []
    for card in cards:
        sides = "".join(f'<div><div style="{_CARD_SMALL}">{text(label)}</div><div style="{_CARD_VALUE}">'
                        f"{text(value)}</div></div>" for label, value in card["sides"])
        footer = f'<div style="{_CARD_SMALL};{_CARD_VALUE}">{text(card["footer"])}</div>' if card.get("footer") else ""
        parts.append(f'<div style="{_CARD}"><div><b>{text(card["title"])}</b> · {text(card["note"])}</div>'
                     f'<div style="{_CARD_SIDES}">{sides}</div>{footer}</div>')
    return f'<div class="jl-cards">{"".join(parts)}</div>'
