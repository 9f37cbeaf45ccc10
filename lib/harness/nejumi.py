"""Nejumi Leaderboard 3/4 (wandb/llm-leaderboard) MT-Bench: the rules.

Sources: wandb/llm-leaderboard ``scripts/evaluator/mtbench.py`` (Nejumi 4): the model id is
``<org>--<name>_hash_<sha256 of the run's start time>`` (a new hash per run); judgment rows carry ``judge_model``,
``judge_prompt_template``, ``judge_prompt`` (the rendered user prompt) and an integer ``score`` the judge picks
from ``[[0]]`` .. ``[[10]]`` (structured output: 0 is a legal rating); ``judge_count`` repeats every match; the
leaderboard's ``AVG_mtbench`` is: rows with score -1 dropped, per (question, turn, category) the mean, per category
the mean, / 10, then the mean over the categories. Nejumi 3 wrote FastChat rows (``judge`` list) with the same
hashed model ids.
"""
from __future__ import annotations

from lib.harness.base import CATEGORY_MEANS, Harness

NEJUMI = Harness(
    name="nejumi",
    title="Nejumi Leaderboard (wandb/llm-leaderboard) MT-Bench",
    imported=True,
    scale=(0.0, 10.0),                # JudgeSingle.rating: "[[0]]" .. "[[10]]"
    failure_code=-1.0,                # the leaderboard drops score == -1
    reported_scale=0.1,               # df_summary['score'] / 10.0
    own_rule=CATEGORY_MEANS,
    own_rule_label="nejumi mtbench.py AVG_mtbench x 10",
    failure_treatment="-1 rows dropped before the per-question means",
    appends_reruns=True,              # judgment files are opened with "a": a re-run appends
    prompt_as_text=True,              # judge_prompt: the rendered user prompt
    reference_source="judge_files",
    stores_system_prompt=False,
    stores_temperature=False,
    system_prompt_missing="not recorded (generator_config of the run's W&B config)",
)
