"""Swallow's lighteval fork (japanese_mt_bench): the rules.

Sources: /work/shared/docs/swallow-format.md (main.py, metrics_sample.py, the LiteLLM backend).

Generation (swallow-llm/swallow-evaluation-instruct @35202112, lighteval 0.8 fork):
  tasks/swallow/japanese_mt_bench/main.py  CATEGORY_TEMPERATURE_MAP (same values as FastChat's map; unknown
      category 0.0), NUM_SAMPLES = 5, max_gen_text_length 8192 characters (6144 for the _truncate_6144 task);
      the category temperature overrides any user temperature.
  models/litellm_model.py greedy_until_multi_turn: at temperature 0 one call with n=1, copied to all 5
      samples; otherwise one call with n=5 (5 calls with n=1 when max_n < 5). Turn 2 of EVERY sample is
      conditioned on sample 0's turn 1 (`turn_results[tmp_turn][0]`). Texts are cut to the first
      max_gen_text_length characters. No max_tokens is sent (generation_size None): the backend default.
  System prompt: none unless --system-prompt; the official example (scripts/examples/
      2_1_vllm2litellm_non_reasoning.sh) passes SYSTEM_PROMPT below. The details' full_prompt shows it as
      message 0 of both turns, verbatim, with nothing added (no quote prefix on the model side; the stray
      leading '"' is in the JUDGE's multi-turn system prompt).
  Seeds: the fork sends none; JudgeLens sends seed = sample index so a sample can be reproduced.
Judging: llm_as_judge.py JudgeLM chat.completions.create(..., max_tokens=4096, temperature=0.0, n=1).
"""
from __future__ import annotations

from types import MappingProxyType

from lib.harness.base import RESULTS_FILE, Generation, Harness

# main.py's CATEGORY_TEMPERATURE_MAP; 0.0 for a category not in it; it overrides any user temperature
CATEGORY_TEMPERATURE_MAP = MappingProxyType({
    "writing": 0.7, "roleplay": 0.7, "extraction": 0.0, "math": 0.0, "coding": 0.0, "reasoning": 0.0,
    "stem": 0.1, "humanities": 0.1, "arena-hard-200": 0.0})

NUM_SAMPLES = 5
SYSTEM_PROMPT = "あなたは誠実で優秀な日本人のアシスタントです。"   # the official example's --system-prompt
JUDGE_MODEL = "gpt-4o-2024-08-06"
# the results file's metrics (0-1) by turn; 0 = both turns
REPORTED_METRICS = MappingProxyType({1: "judge_score_overall_turn_1_avg", 2: "judge_score_overall_turn_2_avg",
                                     0: "judge_score_overall_avg"})

SWALLOW = Harness(
    name="swallow",
    title="Swallow lighteval fork",
    imported=True,
    reported_scale=0.1,               # the results file reports means / 10
    reported_metrics=REPORTED_METRICS,
    own_rule=RESULTS_FILE,
    own_rule_label="swallow results file",
    failure_treatment=("the harness averages -1 into the item's 5-sample mean and drops an item only if that "
                       "mean is -1"),
    appends_reruns=False,
    samples_per_item=NUM_SAMPLES,
    judge_sees_think=False,           # reasoning split off before judging (unless the tag was never closed)
    prompt_family="swallow",
    prompt_as_text=False,             # stored judge prompts are the JSON message lists
    judge_max_tokens=4096,            # chat.completions.create(..., max_tokens=4096, temperature=0.0, n=1)
    judge_temperature=0.0,
    judge_model_note=f"The Swallow fork hard-codes {JUDGE_MODEL} as its judge.",
    reference_source="dataset",       # the dataset's reference column, one set
    stores_system_prompt=True,        # full_prompt[0][0] of every turn context
    stores_temperature=True,          # specifics.temperature
    generation=Generation(
        system_prompt="--system-prompt (none by default), message 0 of every turn context",
        system_prompt_default=None,
        temperature=CATEGORY_TEMPERATURE_MAP,
        temperature_default=0.0,
        temperature_note="CATEGORY_TEMPERATURE_MAP[category] (0.0 otherwise); overrides any user temperature",
        samples=NUM_SAMPLES,
        copies_at_zero=True,          # temperature 0: one call (n=1) copied to the 5 samples
        turn2_after="sample0",        # every turn-2 sample is generated after sample 0's turn-1 answer
        max_tokens=None,              # not sent unless max_new_tokens is set
        truncate_chars=8192,          # the first 8,192 characters (6,144 for the _truncate_6144 task)
        system_prompt_example=SYSTEM_PROMPT,
        max_tokens_note="harness rule (the fork sends none: the backend's default)",
        seeds="none sent"),
)
