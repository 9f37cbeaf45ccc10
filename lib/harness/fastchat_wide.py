"""FastChat forks that write one row per question ("wide rows"): the rules.

Single rows: ``question_id``, ``model_id``, ``judge_id``, ``score_turn1``, ``score_turn2``, ``judgment_turn1``,
``judgment_turn2``; pairwise rows: ``winner`` (A, B, tie, inconsistent), ``winner_ab`` (game 1) and ``winner_ba``
(game 2, positions swapped). Ratings are FastChat's (1-10, -1 not parsed) and the fork's number is show_result.py's
per turn: the mean over rows, -1 dropped. Source: the format as issue 22 reports it, FastChat's show_result.py.
"""
from __future__ import annotations

from lib.harness.base import SHOW_RESULT, Harness
from lib.harness.fastchat import FASTCHAT

FASTCHAT_WIDE = Harness(
    name="fastchat_wide",
    title="FastChat fork with one row per question (wide rows)",
    imported=True,
    own_rule=SHOW_RESULT,
    own_rule_label="fork show_result.py over wide rows",
    failure_treatment=FASTCHAT.failure_treatment,
    appends_reruns=True,
    prompt_as_text=True,
    judge_max_tokens=FASTCHAT.judge_max_tokens,
    judge_temperature=FASTCHAT.judge_temperature,
    question_file="question.jsonl",
    stores_system_prompt=False,
    stores_temperature=False,
    system_prompt_missing=FASTCHAT.system_prompt_missing,
)
