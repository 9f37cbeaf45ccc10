"""FastChat's llm_judge and its forks (lm-sys, the JA MT-Bench harness, Stability's jp-stable): the rules.

Sources: /work/shared/docs/fastchat-format.md (gen_api_answer.py, gen_judgment.py, show_result.py, common.py).

Generation (what ``lib.generation`` follows; lm-sys FastChat and the JA MT-Bench harness
shisa-ai/ja-mt-bench-harness):
  fastchat/llm_judge/common.py  temperature_config: writing/roleplay 0.7, extraction/math/coding/reasoning 0.0,
      stem/humanities 0.1, arena-hard-200 0.0; any other category 0.7 (gen_api_answer.get_answer).
  gen_api_answer.get_answer: --force-temperature, else the question's `required_temperature`, else
      temperature_config[category], else 0.7. For each choice i of --num-choices a fresh conversation
      (get_conversation_template(model)): turn j appends the user turn, calls the API, appends the output, so
      each choice's turn 2 is conditioned on its OWN turn 1; every choice is a call (no copying at temperature
      0). gen_model_answer.py seeds choice i with torch.manual_seed(i): seed = sample index.
  --max-tokens: 1024 in lm-sys and ja-mt-bench-harness @12c84ea, 30000 @0a6f9e4; issue 21 names 8000 for the runs
      compared here. Not recorded in answer files: state it when it matters.
  The system prompt is the adapter's conversation template (usually "You are a helpful assistant." for
      OpenAI-style templates, adapter-dependent) and is NOT stored in model_answer files.
Judging: common.py run_judge_single calls chat_completion_openai(..., temperature=0, max_tokens=2048).
"""
from __future__ import annotations

from types import MappingProxyType

from lib.harness.base import SHOW_RESULT, Generation, Harness

# gen_api_answer.py's temperature_config (lm-sys and the JA harness); 0.7 for a category not in it
TEMPERATURE_CONFIG = MappingProxyType({
    "writing": 0.7, "roleplay": 0.7, "extraction": 0.0, "math": 0.0, "coding": 0.0, "reasoning": 0.0,
    "stem": 0.1, "humanities": 0.1, "arena-hard-200": 0.0})

FASTCHAT = Harness(
    name="fastchat",
    title="FastChat llm_judge (lm-sys, JA MT-Bench harness)",
    imported=True,
    own_rule=SHOW_RESULT,
    own_rule_label="fastchat show_result.py",
    failure_treatment="the harness drops -1 (show_result)",
    appends_reruns=True,
    samples_per_item=1,
    judge_sees_think=True,            # no version we could read strips <think>
    prompt_family=None,               # ja or lmsys: recognised from the stored prompts' JA sentence
    japanese_prompt_prefix="ja-",
    prompt_as_text=True,              # judgments store the filled user prompt as text
    judge_max_tokens=2048,            # OpenAI judges: temperature 0, max_tokens 2048
    judge_temperature=0.0,
    reference_source="judge_files",   # reference_answer/<judge>.jsonl
    question_file="question.jsonl",   # common.py load_questions(f"data/{bench}/question.jsonl"); no other file
    stores_system_prompt=False,
    stores_temperature=False,
    system_prompt_missing="not recorded (FastChat answer files do not store it)",
    temperature_missing=(" (FastChat answer files do not store it; gen_api_answer uses its per-category "
                         "temperature_config unless forced)"),
    generation=Generation(
        system_prompt="the model's conversation template's system message (not saved in answer files)",
        system_prompt_default=None,
        temperature=TEMPERATURE_CONFIG,
        temperature_default=0.7,
        temperature_note=("temperature_config[category], else the question's required_temperature, else "
                          "--force-temperature; 0.7 for other categories"),
        samples=1,                    # --num-choices 1; the judges read choices[0] only
        copies_at_zero=False,
        turn2_after="own",            # each choice's turn 2 follows its own turn 1
        max_tokens=8000,              # issue 21's runs; 1024 (lm-sys, ja-harness@12c84ea), 30000 (@0a6f9e4)
        truncate_chars=None,
        system_prompt_example="You are a helpful assistant.",   # a suggestion to show, never a default
        max_tokens_note="harness default (not recorded): 8000 here; 1024 or 30000 in other versions",
        seeds="choice i seeded with i (gen_model_answer.py); the API path sends none"),
)
