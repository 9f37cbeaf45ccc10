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
