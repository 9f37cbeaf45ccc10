"""FastChat forks that judge several answer choices per question (``--num-choices N``): the rules.

A judgment row holds lists, one entry per choice: ``score`` [s0..sN-1], ``judgment`` [...], ``user_prompt`` [...].
The fork's number is the mean over sample-runs of each run's mean: choice i of every question is one run of the
benchmark, its mean taken over the rows not at -1, then the runs' means averaged (so a run with more failures still
weighs one run). Source: the format as issue 22 reports it (5 choices); FastChat's show_result.py for the -1 rule.
"""
from __future__ import annotations

from dataclasses import replace

from lib.harness.base import SAMPLE_RUNS
from lib.harness.fastchat import FASTCHAT

# FastChat's rules but for the averaging rule and the samples; no generation setup, no JA template variant
FASTCHAT_SAMPLES = replace(
    FASTCHAT,
    name="fastchat_samples",
    title="FastChat fork judging several choices per question",
    own_rule=SAMPLE_RUNS,
    own_rule_label="fork: mean over sample-runs of each run mean",
    failure_treatment="-1 dropped inside each sample-run's mean",
    samples_per_item=5,
    japanese_prompt_prefix=None,
    generation=None,
)
