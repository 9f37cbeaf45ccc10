"""Showing untrusted text (answers, rationales, file names, judge names) without executing it.

Streamlit renders Markdown in st.markdown/st.write/captions/labels: a remote Markdown image there
makes every viewer's browser fetch an attacker's URL. Pages show data text with st.code/st.text or
dataframes; where a name must sit inside Markdown, ``md_escape`` it first.
"""
from __future__ import annotations

import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~:$])")


def md_escape(text: object) -> str:
    """Backslash-escape every Markdown (and Streamlit directive) character so text shows literally."""
    return _MD_SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")
