"""How search results read (the shaping only; finding them is ``lib.analysis.search``).

- ``group_samples``: Swallow stores five samples of one answer (identical copies at temperature 0); a page of
  results shows one row per answer and hit with a ``samples`` count instead of five rows.
- ``mark_hits``: the text of the item opened from a result, with every hit between « and » (plain text: the
  marks are characters, never markup) and how many there were.
"""
from __future__ import annotations

import re
import unicodedata

import numpy as np
import pandas as pd

MARK_OPEN, MARK_CLOSE = "«", "»"
GROUP_KEYS = ["field", "bench", "question_id", "turn", "model", "judge", "snippet"]


def group_samples(page: pd.DataFrame) -> pd.DataFrame:
    """One row per (field, bench, question, turn, model, judge, snippet): rows that differ only in their sample
    merge; ``samples`` counts them (1 for FastChat's single answers), ``sample`` keeps the first one, ``score``
    the mean over the merged rows. The order of first appearance is kept."""
    if page.empty:
        return page.assign(samples=pd.Series(dtype="int64"))
    keys = [k for k in GROUP_KEYS if k in page.columns]
    seen = {tuple("\0" if pd.isna(v) else str(v) for v in row)  # the keys the groupby below groups on
            for row in page[keys].itertuples(index=False, name=None)}
    if len(seen) == len(page):  # nothing to merge (FastChat: one sample per answer): the page as it is, samples 1.
        out = page.reset_index(drop=True)  # A tenth of a second less than the groupby below on a busy machine.
        if "score" in out:
            out["score"] = out["score"].where(out["score"].notna(), np.nan)  # as the groupby's mean: None is NaN
        out.insert(list(out.columns).index("sample") + 1 if "sample" in out else len(out.columns), "samples",
                   np.ones(len(out), dtype="int64"))
        return out
    df = page.copy()
    filled = df[keys].astype(object).where(df[keys].notna(), "\0")  # None groups with None
    df["_group"] = pd.factorize(pd.MultiIndex.from_frame(filled.astype(str)))[0]
    agg = {c: "first" for c in df.columns if c not in ("_group",)}
    if "score" in df:
        agg["score"] = "mean"
    out = df.groupby("_group", sort=False).agg(agg)
    out.insert(list(out.columns).index("sample") + 1 if "sample" in out else len(out.columns), "samples",
               df.groupby("_group", sort=False).size().to_numpy())
    return out.reset_index(drop=True)


def _pattern(needle: str, regex: bool) -> re.Pattern | None:
    if not needle:
        return None
    try:
        return re.compile(needle if regex else re.escape(needle), re.IGNORECASE)
    except re.error:
        return None


def mark_hits(text: str | None, needle: str, *, regex: bool = False) -> tuple[str, int]:
    """``text`` with each hit of ``needle`` (case-insensitive; full-width = half-width as in Search) between « and
    », and the number of hits. No hit (or no needle): the text unchanged and 0."""
    if not text or not needle:
        return text or "", 0
    if regex:
        pattern = _pattern(needle, regex)
        spans = [(m.start(), m.end()) for m in pattern.finditer(text) if m.end() > m.start()] if pattern else []
    else:  # as Search matches: case-insensitive, full-width = half-width (NFKC)
        spans = _nfkc_hits(text, unicodedata.normalize("NFKC", needle))
    return _wrap(text, spans), len(spans)


def _nfkc_hits(text: str, folded: str) -> list[tuple[int, int]]:
    """Spans of ``text`` whose NFKC form contains ``folded`` (case-insensitive), mapped back per character."""
    norm, origin = [], []
    for i, ch in enumerate(text):
        for c in unicodedata.normalize("NFKC", ch).lower():
            norm.append(c)
            origin.append(i)
    flat, target = "".join(norm), folded.lower()
    spans, start = [], flat.find(target)
    while start >= 0 and target:
        end = start + len(target) - 1
        spans.append((origin[start], origin[end] + 1))
        start = flat.find(target, start + len(target))
    return spans


def _wrap(text: str, spans: list[tuple[int, int]]) -> str:
    out, last = [], 0
    for start, end in spans:
        if start < last:
            continue
        out += [text[last:start], MARK_OPEN, text[start:end], MARK_CLOSE]
        last = end
    out.append(text[last:])
    return "".join(out)
