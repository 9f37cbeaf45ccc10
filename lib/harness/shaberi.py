"""shisa-ai/shaberi (2025-11): Japanese chat benchmarks judged by several LLM judges; the rules.

Sources: /work/shared/data/shaberi/PROVENANCE.md; shisa-ai/shaberi judge_answers.py (the judge call, the
``{"score": null, "judge_output": ...}`` rows when no rating was parsed after a second request),
results_vizualization.py (the harness's number: per judge, dataset and model the pandas mean of ``score``, so
failure rows carry no number; ELYZA-tasks-100 is rated 1-5 and doubled only for its charts).
"""
from __future__ import annotations

from types import MappingProxyType

from lib.harness.base import SHOW_RESULT, Harness

ELYZA = "elyza/ELYZA-tasks-100"

SHABERI = Harness(
    name="shaberi",
    title="shaberi (shisa-ai)",
    imported=True,
    scale=(1.0, 10.0),                                  # JA MT-Bench, Rakuda, Tengu-Bench
    bench_scales=MappingProxyType({ELYZA: (1.0, 5.0)}),  # ELYZA-tasks-100's 1-5 rubric
    failure_code=None,                                  # {"score": null, "judge_output": ...}
    own_rule=SHOW_RESULT,
    own_rule_label="shaberi results_vizualization.py",
    failure_treatment="null scores carry no number: the harness's pandas mean skips them",
    appends_reruns=False,
    judge_sees_think=False,                             # answers are stored with think blocks already stripped
    prompt_as_text=True,
    reference_source="dataset",
    stores_system_prompt=False,
    stores_temperature=False,
    system_prompt_missing="not recorded (shaberi answer files do not store it)",
)
