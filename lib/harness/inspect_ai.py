"""Inspect AI (UKGovernmentBEIS/inspect_ai) logs of LLM-judged evals: the rules.

Sources: inspect_ai ``log/_recorders/eval.py`` (a ``.eval`` log is a zip: ``header.json`` or ``start.json`` +
``results.json``, one ``samples/<id>_epoch_<n>.json`` per sample and epoch; current versions compress members with
Zstandard) and ``log/_recorders/json.py`` (a ``.json`` log is the whole EvalLog); ``scorer/_metric.py``
(``value_to_float``: C = 1, P = 0.5, I = 0). The log's own number is each scorer's ``mean`` metric in
``results.scores``: epochs reduced by their mean per sample, then the mean over samples, which is JudgeLens's
per-item mean (a sample is an item, its epochs its repeats).
"""
from __future__ import annotations

from lib.harness.base import ITEM, Harness

INSPECT = Harness(
    name="inspect_ai",
    title="Inspect AI log",
    imported=True,
    scale=(0.0, 10.0),                # MT-Bench-style graders 1-10; C/I/P grades read as 1 / 0 / 0.5
    failure_code=None,                # a sample without a score for the scorer: no row
    own_rule=ITEM,                    # results.scores[].metrics.mean: the mean over samples of the epochs' mean
    failure_treatment="samples the scorer did not score carry no row; the mean is over scored samples",
    appends_reruns=False,
    prompt_as_text=True,
    reference_source="dataset",       # the sample's target
    stores_system_prompt=True,        # the sample's messages
    stores_temperature=True,          # eval.model_generate_config
)
