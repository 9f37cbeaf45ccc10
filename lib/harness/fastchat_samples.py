"""FastChat forks that judge several answer choices per question (``--num-choices N``): the rules.

A judgment row holds lists, one entry per choice: ``score`` [s0..sN-1], ``judgment`` [...], ``user_prompt`` [...].
The fork's number is the mean over sample-runs of each run's mean: choice i of every question is one run of the
benchmark, its mean taken over the rows not at -1, then the runs' means averaged (so a run with more failures still
weighs one run). Source: the format as issue 22 reports it (5 choices); FastChat's show_result.py for the -1 rule.
"""
from __future__ import annotations

from lib.harness.base import SAMPLE_RUNS, Harness
from lib.harness.fastchat import FASTCHAT

FASTCHAT_SAMPLES = Harness(
    name="fastchat_samples",
    title="FastChat fork judging several choices per question",
    imported=True,
    own_rule=SAMPLE_RUNS,
    own_rule_label="fork: mean over sample-runs of each run mean",
    failure_treatment="-1 dropped inside each sample-run's mean",
    appends_reruns=True,
    samples_per_item=5,
    judge_sees_think=True,
    prompt_as_text=True,
    judge_max_tokens=FASTCHAT.judge_max_tokens,
    judge_temperature=FASTCHAT.judge_temperature,
    reference_source="judge_files",
    question_file="question.jsonl",
    stores_system_prompt=False,
    stores_temperature=False,
    system_prompt_missing=FASTCHAT.system_prompt_missing,
    temperature_missing=FASTCHAT.temperature_missing,
)
