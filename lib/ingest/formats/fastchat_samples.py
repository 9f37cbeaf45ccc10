"""FastChat forks with several judged choices per row (``lib.harness.fastchat_samples``): FastChat's layout,
``<bench>/model_judgment/<judge>_single.jsonl`` (or any name there), whose rows hold lists: ``score``, ``judgment``
and ``user_prompt`` one entry per answer choice. Each entry becomes a judgment of sample i (the choice index of
``model_answer``, which FastChat's reader reads with every choice)."""
from __future__ import annotations

from pathlib import Path

from lib import harness as H
from lib.ingest.formats import fastchat
from lib.ingest.formats.base import Claim, Reader, keep_parsed, score_status
from lib.ingest.formats.jsonl import (as_id, as_name, as_number, as_optional_number, as_text, as_turn, first_record,
                                     need, parse_file)

RULES = H.FASTCHAT_SAMPLES


def _listed(path: Path) -> bool:
    """The first record's score is a list."""
    obj = first_record(path)
    return isinstance(obj, dict) and isinstance(obj.get("score"), list)


def _by_name(path: Path) -> Claim | None:
    fc = fastchat.classify(path)
    if fc is not None and fc.kind == "single_judgments" and _listed(path):
        return READER.claim("single_judgments", fc.bench, fc)
    return None


def _by_content(path: Path, explicit: bool) -> Claim | None:
    if path.suffix == ".jsonl" and _listed(path):
        return READER.claim("single_judgments", path.parent.parent.name or "unknown_bench")
    return None


def _entries(obj: dict, key: str, n: int) -> list:
    value = obj.get(key)
    if isinstance(value, list):
        if len(value) != n:
            raise ValueError(f'"{key}" has {len(value)} entries but "score" has {n}')
        return value
    return [value] * n


def judgment_rows(obj: dict, bench: str) -> list[tuple]:
    scores = need(obj, "score")
    if not isinstance(scores, list) or not scores:
        raise ValueError('"score" must be a non-empty list (one score per answer choice)')
    qid = as_id(need(obj, "question_id"))
    model = as_name(need(obj, "model"), "model")
    judge, prompt_name = fastchat.judge_of(obj)
    turn = as_turn(obj["turn"]) if obj.get("turn") is not None else fastchat.infer_turn(prompt_name)
    texts, prompts = _entries(obj, "judgment", len(scores)), _entries(obj, "user_prompt", len(scores))
    tstamp = as_optional_number(obj.get("tstamp"), "tstamp")
    rows = []
    for i, (value, text, prompt) in enumerate(zip(scores, texts, prompts)):
        raw = as_number(value, f"score[{i}]")
        text = as_text(text, f"judgment[{i}]", required=False)
        status = score_status(raw, RULES, bench,
                              api_error=text is not None and text.strip() == fastchat.ERROR_TEXT)
        rows.append((RULES.name, bench, judge, prompt_name, model, qid, turn, i, raw,
                     raw if status == "ok" else None, status, text,
                     as_text(prompt, f"user_prompt[{i}]", required=False), tstamp))
    return rows


def read(item, batch: list, store) -> None:
    parsed = parse_file(item.path, item.display, lambda o: judgment_rows(o, item.bench or "unknown_bench"))
    keep_parsed(item, {"single_judgments": parsed}, parsed)


READER = Reader(
    name="fastchat_samples", harness=RULES.name, sample="tests/data/fastchat_samples",
    kinds={"single_judgments": ("single_judgments",)},
    describes="FastChat judgment files whose score, judgment and user_prompt are lists (one per answer choice)",
    by_name=_by_name, by_content=_by_content, content_first=True, read=read)
