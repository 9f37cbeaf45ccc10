"""FastChat forks that write one row per question ("wide rows"): the rules.

Single rows: ``question_id``, ``model_id``, ``judge_id``, ``score_turn1``, ``score_turn2``, ``judgment_turn1``,
``judgment_turn2``; pairwise rows: ``winner`` (A, B, tie, inconsistent), ``winner_ab`` (game 1) and ``winner_ba``
(game 2, positions swapped). Ratings are FastChat's (1-10, -1 not parsed) and the fork's number is show_result.py's
per turn: the mean over rows, -1 dropped. Source: the format as issue 22 reports it, FastChat's show_result.py.
"""
from __future__ import annotations

from dataclasses import replace

from lib.harness.fastchat import FASTCHAT

# FastChat's rules (show_result.py over the rows) read from another row layout; no generation setup, no JA
# template variant, no temperature note
FASTCHAT_WIDE = replace(
    FASTCHAT,
    name="fastchat_wide",
    title="FastChat fork with one row per question (wide rows)",
    own_rule_label="fork show_result.py over wide rows",
    japanese_prompt_prefix=None,
    temperature_missing="",
    generation=None,
)
