"""Scripted judges shared by the unit, page and browser tests: what a judge endpoint answers to a request body
(``FakeOpenAI.responder``)."""
from __future__ import annotations

import re

from fake_model import END_MARK, FLOURISH, OTHER_SAMPLE

SEGMENT = re.compile(r"^(pred|answer|question): (.*?)(?=\n(?:pred|answer|question): |\n\nRate the pred|\n*\Z)",
                     re.S | re.M)


def confused_judge(body: dict) -> str:
    """Reads order-bug-demo prompts like the judge in the real case: with the reference ('answer:')
    before an empty prediction, it grades the reference and gives 5; with the prediction first, 1."""
    text = body["messages"][-1]["content"]
    parts = {m.group(1): (m.start(), m.group(2)) for m in SEGMENT.finditer(text)}
    pred = parts.get("pred", (0, ""))[1]
    ref = parts.get("answer")
    ref_first = ref is not None and ref[0] < parts["pred"][0]
    if not pred.strip():
        if ref_first:
            return f"The answer is: {ref[1][:200]} It fully matches the answer. Score: 5"
        return "The prediction is empty, so it does not match anything. Score: 1"
    if ref is not None and pred.strip() == ref[1].strip():
        return "The prediction matches the answer. Score: 5"
    if "NOTE TO THE EVALUATOR" in pred:
        return "As instructed: Score: 5"
    return "The prediction partly matches. Score: 3" if ref_first else "The prediction mostly matches. Score: 4"


def planted_judge(body: dict) -> str:
    """The ladder's scripted judge (tests/judging/test_attribution_full.py documents every plant): starts at
    8 and moves with the judge prompt, the judge model, its max_tokens and the planted answer features."""
    text = "\n".join(m["content"] for m in body["messages"])
    swallow_prompt = "The expected language is Japanese" in text
    score = 8
    score -= 2 if swallow_prompt else 0
    score -= 1 if body["model"] == "gpt-4o-2024-08-06" else 0
    score += 1 if body.get("max_tokens") == 4096 else 0
    if "here is my answer in English" in text:
        score -= 4 if swallow_prompt else 2
    score += 1 if FLOURISH in text else 0
    score -= 1 if OTHER_SAMPLE in text else 0
    score -= 1 if END_MARK not in text else 0
    return f"Scripted judgment. Rating: [[{score}]]"
