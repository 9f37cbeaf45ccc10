"""shisa-ai/shaberi's files (PROVENANCE of /work/shared/data/shaberi; shaberi's judge_answers.py).

    data/model_answers/<dataset>/<model>.json                 answers (and the questions they answer)
    data/judgements/judge_<judge>/<dataset>/<model>.json      the same rows with the judge's ``score``

Despite ``.json``, every file is JSON Lines, one row per question: ``id``, ``category`` (or ``Category``),
``Question``, ``ModelAnswer``, ``ErrorCount``, and in judgements ``score``: a number, or, when no rating was
parsed, ``{"score": null, "judge_output": "..."}`` (kept as a failure with the judge's text). ``/`` in dataset
and model names is ``__`` in the path. Single-turn: every row is turn 1, sample 0.
"""
from __future__ import annotations

from pathlib import Path

from lib import harness as H
from lib.ingest.formats.base import Claim, Reader, keep_parsed, score_status
from lib.ingest.formats.jsonl import as_id, as_number, as_text, need, parse_file

RULES = H.SHABERI


def _names(path: Path) -> tuple[str, str] | None:
    """(dataset, model) of a shaberi file, with '__' read as '/'."""
    return path.parent.name.replace("__", "/"), path.stem.replace("__", "/")


def _by_name(path: Path) -> Claim | None:
    if path.suffix != ".json":
        return None
    parts = path.parts
    if len(parts) >= 4 and parts[-4] == "judgements" and parts[-3].startswith("judge_"):
        return READER.claim("judgements", path.parent.name.replace("__", "/"), parts[-3][len("judge_"):])
    if len(parts) >= 3 and parts[-3] == "model_answers":
        return READER.claim("answers", path.parent.name.replace("__", "/"))
    return None


def _category(obj: dict) -> str | None:
    return as_text(obj.get("category", obj.get("Category")), "category", required=False)


def question_rows(obj: dict, bench: str) -> list[tuple]:
    return [(bench, as_id(need(obj, "id"), "id"), _category(obj), [as_text(need(obj, "Question"), "Question")])]


def answer_rows(obj: dict, bench: str, model: str) -> list[tuple]:
    text = as_text(need(obj, "ModelAnswer"), "ModelAnswer")
    return [(RULES.name, bench, model, None, model, as_id(need(obj, "id"), "id"), 0, 1, text, None, None, None)]


def judgment_rows(obj: dict, bench: str, model: str, judge: str) -> list[tuple]:
    if "score" not in obj:
        raise ValueError('missing field "score"')
    value, rationale = obj["score"], obj.get("judge_output")
    if isinstance(value, dict):  # the failure row: {"score": null, "judge_output": ...}
        rationale = value.get("judge_output", rationale)
        value = value.get("score")
    raw = None if value is None else as_number(value, "score")
    status = score_status(raw, RULES, bench)
    rationale = as_text(rationale, "judge_output", required=False)
    return [(RULES.name, bench, judge, None, model, as_id(need(obj, "id"), "id"), 1, 0, raw,
             raw if status == "ok" else None, status, rationale, None, None)]


def read(item, batch: list, store) -> None:
    bench = item.bench
    _, model = _names(item.path)
    if item.kind == "answers":
        questions = parse_file(item.path, item.display, lambda o: question_rows(o, bench))
        answers = parse_file(item.path, item.display, lambda o: answer_rows(o, bench, model))
        keep_parsed(item, {"questions": questions, "answers": answers}, answers)
    else:
        parsed = parse_file(item.path, item.display, lambda o: judgment_rows(o, bench, model, item.meta))
        keep_parsed(item, {"single_judgments": parsed}, parsed)


READER = Reader(
    name="shaberi", harness=RULES.name, sample="tests/data/shaberi",
    kinds={"answers": ("questions", "answers"), "judgements": ("single_judgments",)},
    describes=("shaberi's data/model_answers/<dataset>/<model>.json and "
               "data/judgements/judge_<judge>/<dataset>/<model>.json"),
    by_name=_by_name, read=read)
