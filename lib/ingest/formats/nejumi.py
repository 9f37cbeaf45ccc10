"""Nejumi Leaderboard 3/4 (wandb/llm-leaderboard) MT-Bench files: FastChat's layout with hashed model ids.

    <bench>/model_answer/<org>--<name>_hash_<64 hex>.jsonl
    <bench>/model_judgment/<judge>_single/<org>--<name>_hash_<64 hex>__<N>turn.jsonl

(``question.jsonl``, ``reference_answer/`` and ``judge_prompts.jsonl`` are FastChat's and read by its reader.)
Nejumi 4 rows (``scripts/evaluator/mtbench.py``): ``question_id``, ``model``, ``judge_model``,
``judge_prompt_template``, ``judge_prompt``, ``judgment``, ``score`` (0-10, 0 legal), ``turn``, ``tstamp``; Nejumi 3
rows are FastChat's (``judge``: [model, prompt name], ``user_prompt``). The model id becomes ``<org>/<name> [run
<first 8 hex of the hash>]``: two runs of one model are two runs, not two unrelated 150-character models.
"""
from __future__ import annotations

import re
from pathlib import Path

from lib import harness as H
from lib.ingest.formats import fastchat
from lib.ingest.formats.base import Claim, Reader, keep_parsed, score_status
from lib.ingest.formats.jsonl import (as_id, as_name, as_number, as_optional_number, as_text, as_turn, first_keys, need,
                                     parse_file)

RULES = H.NEJUMI
HASHED = re.compile(r"^(?P<name>.+?)_hash_(?P<hash>[0-9a-f]{64})$")


def run_model(model_id: str) -> str:
    """``org--name_hash_<hex>`` -> ``org/name [run <hex[:8]>]`` (other names: '--' read as '/')."""
    m = HASHED.match(model_id)
    if not m:
        return model_id.replace("--", "/")
    return f"{m.group('name').replace('--', '/')} [run {m.group('hash')[:8]}]"


def _by_name(path: Path) -> Claim | None:
    fc = fastchat.classify(path)
    if fc is None or fc.kind not in ("answers", "single_judgments"):
        return None
    stem = path.stem.rsplit("__", 1)[0] if fc.kind == "single_judgments" else path.stem
    if HASHED.match(stem) or (fc.kind == "single_judgments" and "judge_model" in first_keys(path)):
        return READER.claim(fc.kind, fc.bench, fc)
    return None


def judgment_rows(obj: dict, bench: str) -> list[tuple]:
    qid = as_id(need(obj, "question_id"))
    model = run_model(as_name(need(obj, "model"), "model"))
    if "judge_model" in obj:
        judge = as_name(need(obj, "judge_model"), "judge_model")
        prompt_name = as_text(obj.get("judge_prompt_template"), "judge_prompt_template", required=False)
        prompt = as_text(obj.get("judge_prompt"), "judge_prompt", required=False)
    else:
        judge, prompt_name = fastchat.judge_of(obj)
        prompt = as_text(obj.get("user_prompt"), "user_prompt", required=False)
    raw = as_number(need(obj, "score"), "score")
    text = as_text(obj.get("judgment"), "judgment", required=False)
    turn = as_turn(obj["turn"]) if obj.get("turn") is not None else fastchat.infer_turn(prompt_name)
    status = score_status(raw, RULES, bench, api_error=text is not None and text.strip() == fastchat.ERROR_TEXT)
    return [(RULES.name, bench, judge, prompt_name, model, qid, turn, 0, raw, raw if status == "ok" else None,
             status, text, prompt, as_optional_number(obj.get("tstamp"), "tstamp"))]


def answer_rows(obj: dict, bench: str, file_model: str) -> list[tuple]:
    model_id = as_text(obj.get("model_id"), "model_id", required=False)
    model = run_model(model_id or file_model)
    return [(RULES.name, *row[1:2], model, *row[3:]) for row in fastchat.answer_rows(obj, bench, file_model)]


def read(item, batch: list, store) -> None:
    bench = item.bench or "unknown_bench"
    if item.kind == "answers":
        parsed = parse_file(item.path, item.display, lambda o: answer_rows(o, bench, item.path.stem))
    else:
        parsed = parse_file(item.path, item.display, lambda o: judgment_rows(o, bench))
    keep_parsed(item, {item.kind: parsed}, parsed)


READER = Reader(
    name="nejumi", harness=RULES.name, sample="tests/data/nejumi",
    kinds={"answers": ("answers",), "single_judgments": ("single_judgments",)},
    describes=("Nejumi Leaderboard's model_answer/<org>--<name>_hash_<hex>.jsonl and "
               "model_judgment/<judge>_single/<model id>__<N>turn.jsonl"),
    by_name=_by_name, read=read)
