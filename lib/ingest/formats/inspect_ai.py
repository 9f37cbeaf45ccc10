"""Inspect AI logs (``lib.harness.inspect_ai``): ``.eval`` (a zip of JSON members, Zstandard-compressed by current
inspect_ai, read with ``lib.ingest.zipread``) and ``.json`` (the whole EvalLog). A small reader of the log format
(inspect_ai's ``log/_recorders/eval.py`` and ``json.py``) instead of inspect_ai itself (about 80 packages).

Per sample and epoch: the question (``input``: a text, or the last user message), the answer (``output``), and per
scorer in ``scores`` one judgment (judge = the scorer's name, rationale = its ``explanation``); the bench is the
task's name, the model ``eval.model``; ``results.scores[].metrics`` become reported metrics (the log's own number).
"""
from __future__ import annotations

import json
import zipfile
from pathlib import Path

from lib import harness as H
from lib.errors import LineProblem
from lib.ingest.formats.base import Claim, Reader, score_status
from lib.ingest.formats.jsonl import ParsedFile
from lib.ingest.zipread import ZstdError, read_member

RULES = H.INSPECT
GRADES = {"C": 1.0, "P": 0.5, "I": 0.0}   # inspect_ai value_to_float
TABLES = ("questions", "answers", "single_judgments", "reported_metrics")


def _looks_like_json_log(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            head = fh.read(65536)
    except OSError:
        return False
    return head.lstrip().startswith(b"{") and b'"eval"' in head and b'"task"' in head and b'"version"' in head


def _by_name(path: Path) -> Claim | None:
    return READER.claim("inspect_log", None) if path.suffix == ".eval" else None


def _by_content(path: Path, explicit: bool) -> Claim | None:
    if path.suffix == ".json" and _looks_like_json_log(path):
        return READER.claim("inspect_log", None)
    return None


def load(path: Path) -> tuple[dict, list[dict]]:
    """(header: eval, results, ...; samples) of a log. Raises ValueError naming the member that is wrong."""
    if path.suffix == ".json":
        log = json.loads(path.read_bytes())
        if not isinstance(log, dict) or not isinstance(log.get("eval"), dict):
            raise ValueError('not an Inspect log: no "eval" object')
        return log, list(log.get("samples") or [])
    try:
        zf = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        raise ValueError("not a zip archive, so not an Inspect .eval log") from None
    with zf:
        infos = {i.filename: i for i in zf.infolist()}

        def member(name: str):
            try:
                return json.loads(read_member(zf, infos[name]))
            except (ValueError, zipfile.BadZipFile, ZstdError, EOFError) as exc:
                raise ValueError(f"member {name}: {exc}") from None

        if "header.json" in infos:
            header = member("header.json")
        elif "start.json" in infos:
            header = {**member("start.json"), **(member("results.json") if "results.json" in infos else {})}
        else:
            raise ValueError("an .eval log holds header.json or start.json; this zip has neither")
        samples = [member(n) for n in sorted(infos) if n.startswith("samples/") and n.endswith(".json")]
    return header, samples


def _text(content) -> str | None:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}, ...]
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type", "text") == "text")
    return None


def _question(sample: dict) -> str | None:
    given = sample.get("input")
    if isinstance(given, str):
        return given
    users = [m for m in given or [] if isinstance(m, dict) and m.get("role") == "user"]
    return _text(users[-1].get("content")) if users else None


def _answer(sample: dict) -> str | None:
    output = sample.get("output") or {}
    if isinstance(output.get("completion"), str) and output["completion"]:
        return output["completion"]
    choices = output.get("choices") or []
    return _text((choices[0].get("message") or {}).get("content")) if choices else None


def _value(value) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        if value.strip().upper() in GRADES:
            return GRADES[value.strip().upper()]
        try:
            return float(value)
        except ValueError:
            return None
    return None


def read(item, batch: list, store) -> None:
    out = {t: ParsedFile(item.display) for t in TABLES}
    item.tables = out
    try:
        header, samples = load(item.path)
    except (ValueError, RecursionError, OSError) as exc:
        out["single_judgments"].problems.append(LineProblem(item.display, 0, str(exc)))
        return
    spec = header["eval"]
    bench, model = str(spec.get("task") or "inspect_task"), str(spec.get("model") or "unknown_model")
    item.bench = bench
    temperature = (spec.get("model_generate_config") or {}).get("temperature")
    seen_questions = set()
    for sample in samples:
        qid, epoch = str(sample.get("id")), int(sample.get("epoch") or 1)
        question = _question(sample)
        if qid not in seen_questions and question is not None:
            category = (sample.get("metadata") or {}).get("category")
            out["questions"].rows.append((bench, qid, category if isinstance(category, str) else None, [question]))
            seen_questions.add(qid)
        system = next((_text(m.get("content")) for m in sample.get("messages") or []
                       if isinstance(m, dict) and m.get("role") == "system"), None)
        out["answers"].rows.append((RULES.name, bench, model, None, None, qid, epoch - 1, 1, _answer(sample),
                                    temperature, system, None))
        for scorer, score in (sample.get("scores") or {}).items():
            score = score if isinstance(score, dict) else {"value": score}
            raw = _value(score.get("value"))
            status = score_status(raw, RULES, bench)
            out["single_judgments"].rows.append(
                (RULES.name, bench, scorer, None, model, qid, 1, epoch - 1, raw, raw if status == "ok" else None,
                 status, score.get("explanation") if isinstance(score.get("explanation"), str) else None, None,
                 None))
        for parsed in out.values():
            parsed.lines_read += 1    # one record per sample and epoch
    for scored in (header.get("results") or {}).get("scores") or []:
        for name, metric in (scored.get("metrics") or {}).items():
            value = metric.get("value") if isinstance(metric, dict) else None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out["reported_metrics"].rows.append((RULES.name, bench, model, spec.get("run_id"), bench,
                                                     f"{scored.get('name')}/{name}", float(value), None))
    if not samples:
        item.warnings.append("the log holds no samples (written with --no-log-samples?): only its metrics are read")


READER = Reader(
    name="inspect_ai", harness=RULES.name, sample="tests/data/inspect_ai",
    kinds={"inspect_log": TABLES},
    describes="Inspect AI logs (.eval, and .json logs)",
    by_name=_by_name, by_content=_by_content, read=read, bench_after_read=frozenset({"inspect_log"}))
