"""Swallow evaluation (the lighteval 0.8 fork `swallow-llm/swallow-evaluation-instruct`) outputs.

    <out>/results/<model name, may hold '/'>/<subdir>/results_<date_id>.json
    <out>/details/<model name>/<subdir>/<date_id>/details_<task>|<fewshot>_<date_id>.parquet

One details row is one question; it explodes to 2 turns x 5 samples of answers and judgments.
Scores in the details are the judge's own 1-10 ratings (-1 = not parsed); the results file
reports means divided by 10.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from lib import harness as H
from lib.harness.swallow import JUDGE_MODEL as SWALLOW_JUDGE_MODEL
from lib.errors import FormatError, LineProblem
from lib.ingest.formats.fastchat import parse_status
from lib.ingest.formats.base import Claim, Reader
from lib.ingest.formats.jsonl import TOO_DEEP, ParsedFile
from lib.vocab import REFERENCE_CATEGORIES

HARNESS = H.SWALLOW.name
# The fork hard-codes its judge (main.py: JudgeLLMMTBenchSwallow(judge_model_name="gpt-4o-2024-08-06")).
JUDGE_MODEL = SWALLOW_JUDGE_MODEL

RUN_ID = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}\.\d+)")
RESULTS_NAME = re.compile(r"results_(.+)\.json$")
DETAILS_NAME = re.compile(r"details_(.+)_(\d{4}-\d{2}-\d{2}T[\d.-]+)\.parquet$")


@dataclass(frozen=True)
class SwallowFile:
    path: Path
    kind: str  # swallow_results | swallow_details
    run_id: str | None
    model: str | None  # from the folder layout, when it has one


def bench_of_task(task: str) -> str:
    """'swallow|japanese_mt_bench|0' -> 'japanese_mt_bench'."""
    parts = task.split("|")
    return parts[1] if len(parts) > 1 else task


def prompt_name(category: str | None, turn: int) -> str:
    """Which of the fork's four judge templates judged this item (named after FastChat's)."""
    ref = category in REFERENCE_CATEGORIES
    base = "single-math-v1" if ref else "single-v1"
    return f"swallow-{base}{'-multi-turn' if turn == 2 else ''}"


def classify(path: Path) -> SwallowFile | None:
    if path.suffix == ".json" and RESULTS_NAME.search(path.name):
        run = RUN_ID.search(path.name)
        parts = path.parts
        model = None
        if "results" in parts:
            i = len(parts) - 1 - parts[::-1].index("results")
            model = "/".join(parts[i + 1 : -1]) or None
        return SwallowFile(path, "swallow_results", run.group(1) if run else None, model)
    if path.suffix == ".parquet" and path.name.startswith("details_"):
        run = RUN_ID.search(path.name)
        parts = path.parts
        model = None
        if "details" in parts:
            i = len(parts) - 1 - parts[::-1].index("details")
            inner = parts[i + 1 : -2]  # drop the <date_id>/ folder and the file name
            model = "/".join(inner) or None
        return SwallowFile(path, "swallow_details", run.group(1) if run else None, model)
    return None


def _line_of(text: str, task: str, metric: str) -> int:
    """The line of ``"metric":`` inside ``"task"``'s object (0 if it cannot be found)."""
    start = text.find(json.dumps(task))
    match = re.compile(re.escape(json.dumps(metric)) + r"\s*:").search(text, max(start, 0))
    return text.count("\n", 0, match.start()) + 1 if match else 0


def read_results(f: SwallowFile, display: str) -> tuple[str, str | None, list[tuple], list[str], list[LineProblem]]:
    """-> (model, run_id, reported_metrics rows, warnings, problems).

    A metric that is NaN or ±Infinity (Python's json reads them) is a problem on its line, not a number; a
    non-finite stderr is stored as unknown (NULL) with a warning.
    """
    try:
        text = f.path.read_text(encoding="utf-8-sig")
        doc = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FormatError(f"{display}: not a readable lighteval results JSON file ({exc})") from None
    except RecursionError:
        raise FormatError(f"{display}: not a readable lighteval results JSON file ({TOO_DEEP})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), dict):
        raise FormatError(f'{display}: a lighteval results file needs a "results" object; this one has none')
    general = doc.get("config_general") or {}
    model = general.get("model_name") or f.model
    if not model:
        raise FormatError(f"{display}: the results file names no model (config_general.model_name)")
    warnings = []
    if general.get("max_samples") is not None:
        warnings.append(f"partial run: max_samples={general['max_samples']}, some categories may be missing")
    rows, problems = [], []
    for task, metrics in doc["results"].items():
        if task == "all" or not isinstance(metrics, dict):
            continue
        for metric, value in metrics.items():
            if metric.endswith("_stderr") or not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            if not math.isfinite(value):
                problems.append(LineProblem(display, _line_of(text, task, metric),
                                            f'"{metric}" of {task} is {value!r}, not a score: a reported metric '
                                            "must be a finite number (was the run cut short?)"))
                continue
            stderr = metrics.get(f"{metric}_stderr")
            if isinstance(stderr, (int, float)) and not math.isfinite(stderr):
                warnings.append(f'"{metric}_stderr" of {task} is {stderr!r}: stored as unknown')
                stderr = None
            rows.append((HARNESS, bench_of_task(task), model, f.run_id, task, metric, float(value),
                         float(stderr) if isinstance(stderr, (int, float)) else None))
    return model, f.run_id, rows, warnings, problems


UPSTREAM_COLUMNS = {"doc", "model_response", "metric"}
FORK_COLUMNS = {"predictions", "specifics", "metrics"}


def details_task(f: SwallowFile) -> str:
    match = DETAILS_NAME.search(f.path.name)
    return match.group(1).rsplit("|", 1)[0] if match else "swallow|japanese_mt_bench"


def read_details(f: SwallowFile, display: str, model: str) -> dict[str, ParsedFile]:
    """Explode a details parquet into rows for questions, references, answers and judgments."""
    import pyarrow.parquet as pq  # only needed here; keeps `import lib` light

    try:
        table = pq.read_table(f.path)
    except Exception as exc:  # pyarrow raises several types for a bad file
        raise FormatError(f"{display}: not a readable parquet file ({exc})") from None
    columns = set(table.column_names)
    if UPSTREAM_COLUMNS <= columns and not FORK_COLUMNS <= columns:
        raise FormatError(
            f"{display}: this is an upstream lighteval >= 0.11 details file (columns doc / model_response / "
            "metric). JudgeLens reads the Swallow fork's details (lighteval 0.8 layout: predictions / specifics "
            "/ metrics). Re-run with the Swallow fork, or export that run's details with lighteval <= 0.10.",
            title="Different lighteval details format",
        )
    missing = FORK_COLUMNS - columns
    if missing:
        raise FormatError(
            f"{display}: not a Swallow MT-Bench details file: missing column(s) {', '.join(sorted(missing))}"
        )
    bench = bench_of_task(details_task(f))
    out = {k: ParsedFile(display) for k in ("questions", "reference_answers", "answers", "single_judgments")}
    judgments = out["single_judgments"]
    full_prompts = table.column("full_prompt").to_pylist() if "full_prompt" in columns else None
    for i, (preds, spec, metrics) in enumerate(zip(table.column("predictions").to_pylist(),
                                                    table.column("specifics").to_pylist(),
                                                    table.column("metrics").to_pylist())):
        row_no = i + 1
        try:
            _explode_row(out, bench, model, preds, spec or {}, metrics or {},
                         full_prompts[i] if full_prompts else None)
        except (ValueError, TypeError, IndexError, KeyError) as exc:
            judgments.problems.append(LineProblem(display, row_no, f"row {row_no}: {exc}"))
    for parsed in out.values():
        parsed.lines_read = table.num_rows
    return out


def _explode_row(parsed, bench, model, preds, spec, metrics, full_prompt) -> None:
    """Add one question's rows to ``parsed``, all of them or (on ValueError etc.) none."""
    out = {k: ParsedFile(p.path) for k, p in parsed.items()}  # staged: a bad row must not leave half its rows
    _explode_into(out, bench, model, preds, spec, metrics, full_prompt)
    for key, staged in out.items():
        parsed[key].rows.extend(staged.rows)


def _explode_into(out, bench, model, preds, spec, metrics, full_prompt) -> None:
    if spec.get("id") is None:
        raise ValueError('specifics.id (the question id) is missing')
    qid = str(spec["id"])
    category = spec.get("category")
    queries = spec.get("multi_turn_queries") or []
    temperature = spec.get("temperature")
    max_chars = spec.get("max_gen_text_length")
    system_prompt = None
    if full_prompt and isinstance(full_prompt[0], list) and full_prompt[0]:
        first = full_prompt[0][0]
        if isinstance(first, dict) and first.get("role") == "system":
            system_prompt = first.get("content")
    out["questions"].rows.append((bench, qid, category, list(queries)))
    reference = spec.get("reference") or []
    ref_turns = (reference[0] or {}).get("turns") or [] if reference else []
    for t, text in enumerate(ref_turns):
        out["reference_answers"].rows.append((bench, JUDGE_MODEL, None, qid, t + 1, text))
    if not isinstance(preds, list) or not preds:
        raise ValueError("predictions is empty")
    for t, samples in enumerate(preds):
        turn = t + 1
        scores = metrics.get(f"judge_score_overall_turn_{turn}")
        rationales = metrics.get(f"judgement_overall_turn_{turn}") or []
        prompts = metrics.get(f"user_prompt_overall_turn_{turn}") or []
        if scores is None:
            raise ValueError(f"metrics.judge_score_overall_turn_{turn} is missing")
        if len(scores) != len(samples):
            raise ValueError(f"turn {turn} has {len(samples)} answers but {len(scores)} scores")
        for s, text in enumerate(samples):
            out["answers"].rows.append(("swallow", bench, model, None, None, qid, s, turn, text,
                                        temperature, system_prompt, max_chars))
            raw = float(scores[s])
            rationale = rationales[s] if s < len(rationales) else None
            status = parse_status(raw, rationale)
            prompt = json.dumps(prompts[s], ensure_ascii=False) if s < len(prompts) else None
            out["single_judgments"].rows.append((HARNESS, bench, JUDGE_MODEL, prompt_name(category, turn), model,
                                                 qid, turn, s, raw, raw if status == "ok" else None, status,
                                                 rationale, prompt, None))


# --- the reader (lib.ingest.formats.registry) ---

def _by_name(path: Path) -> Claim | None:
    sw = classify(path)
    if sw is None:
        return None
    bench = bench_of_task(details_task(sw)) if sw.kind == "swallow_details" else None  # results: from the content
    return READER.claim(sw.kind, bench, sw)


def _model_of(item, batch: list, store) -> str:
    """The model of a details file: from the folder layout, else the same run's results file (in this import or
    already stored)."""
    meta: SwallowFile = item.meta
    if meta.model:
        return meta.model
    for other in batch:
        om = other.meta
        if other.kind == "swallow_results" and isinstance(om, SwallowFile) and om.run_id == meta.run_id:
            model, *_ = read_results(om, other.display)
            return model
    with store.read() as cur:
        row = cur.execute("SELECT any_value(model) FROM reported_metrics WHERE run_id = ?", [meta.run_id]).fetchone()
    if row and row[0]:
        return row[0]
    raise FormatError(
        f"{item.display}: cannot tell which model this details file is for. Keep lighteval's folder layout "
        "(details/<model>/<date_id>/details_….parquet) or import the results_<date_id>.json of the same run "
        "with it.")


def read(item, batch: list, store) -> None:
    """A results file: its metrics (and the bench its task names give); a details file: questions, references,
    answers and judgments."""
    meta: SwallowFile = item.meta
    if item.kind == "swallow_results":
        model, _, rows, warnings, problems = read_results(meta, item.display)
        # one document: rows_imported counts it once (lines_read - skipped), its bad metrics are its bad lines
        parsed = ParsedFile(item.display, rows=rows, problems=problems, lines_read=1 + len(problems))
        item.tables = {"reported_metrics": parsed}
        item.warnings.extend(warnings)
        if rows:
            item.bench = rows[0][1]
        return
    item.tables = read_details(meta, item.display, _model_of(item, batch, store))


READER = Reader(
    name="swallow", harness=HARNESS, sample="data/sample/swallow",
    kinds={"swallow_results": ("reported_metrics",),
           "swallow_details": ("questions", "reference_answers", "answers", "single_judgments")},
    describes="Swallow/lighteval results_*.json and details_*.parquet",
    by_name=_by_name, read=read, bench_after_read=frozenset({"swallow_results"}))
