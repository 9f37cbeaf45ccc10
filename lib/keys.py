"""The keys of judged items, shared by every layer (analysis, judging, probes, pages).

- ``ItemKey``: one answer to grade: (bench, question_id, turn, model), plus the sample (Swallow: 0-4; else 0).
- ``PairKey``: a pairwise item: model A and model B answering the same question turn.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ItemKey:
    bench: str
    question_id: str
    turn: int
    model: str
    sample: int = 0


@dataclass(frozen=True)
class PairKey:
    """A pairwise item: model A and model B answering the same question turn."""

    bench: str
    question_id: str
    turn: int
    model_a: str
    model_b: str
    sample: int = 0
