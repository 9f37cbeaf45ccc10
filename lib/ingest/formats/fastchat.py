"""The FastChat family of MT-Bench files (lm-sys FastChat, the JA MT-Bench harness, Stability's jp-stable).

Layout (a "data root"; any folder level of it can be given):

    judge_prompts.jsonl, judge_ja_prompts.jsonl
    <bench>/question.jsonl
    <bench>/reference_answer/<judge>.jsonl
    <bench>/model_answer/<model>.jsonl              ('/' in a model name is '__' in the file name)
    <bench>/model_judgment/<judge>_single.jsonl     and  <judge>_pair.jsonl
    <bench>/model_judgment/<judge>_single/<model>__<N>turn.jsonl   (per-model layout of some forks)

The converters follow FastChat's own reader and scorer (``fastchat/llm_judge/common.py`` and
``show_result.py``); a score of -1 is FastChat's "not parsed".
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

from lib import harness as H
from lib.errors import FormatError
from lib.ingest.formats.base import Claim, Reader, keep_parsed
from lib.ingest.formats.jsonl import (BOM, MAX_INT, MAX_LINE_BYTES, WHITESPACE, as_id, as_name, as_number, first_record,
                                     as_optional_number, as_text, as_turn, need, parse_file)
from lib.vocab import fastchat_rating

HARNESS = H.FASTCHAT.name

KINDS = ("judge_prompts", "questions", "reference_answers", "answers", "single_judgments", "pair_judgments")

# Single judgment parse status, from the stored score and text.
ERROR_TEXT = "$ERROR$"
SCORE_MIN, SCORE_MAX = H.FASTCHAT.scale  # the harness rules say; the fast path SQL uses them too

WINNERS = {"model_1", "model_2", "tie", "error"}
# Older files and some forks spell winners differently; map them onto FastChat's words.
WINNER_ALIASES = {"a": "model_1", "b": "model_2", "model_a": "model_1", "model_b": "model_2", "c": "tie",
                  "tie (bothbad)": "tie", "inconsistent": "tie"}


@dataclass(frozen=True)
class FastChatFile:
    path: Path
    kind: str
    bench: str | None
    judge: str | None = None  # reference answers: the judge name its file stem gives


def model_from_file_name(stem: str) -> str:
    """`shisa-ai__shisa-v2-llama3.1-8b` -> `shisa-ai/shisa-v2-llama3.1-8b` (the JA harness's rule)."""
    return stem.replace("__", "/")


def classify(path: Path) -> FastChatFile | None:
    """Say what a FastChat-layout file is from where it sits, or None if it is not one."""
    name = path.name
    parent = path.parent.name
    if path.suffix != ".jsonl":
        return None
    if re.fullmatch(r"judge(_\w+)?_prompts\.jsonl", name):
        return FastChatFile(path, "judge_prompts", None)
    if parent == "reference_answer":
        return FastChatFile(path, "reference_answers", path.parent.parent.name, judge=path.stem)
    if parent == "model_answer":
        return FastChatFile(path, "answers", path.parent.parent.name)
    if parent == "model_judgment":
        bench = path.parent.parent.name
        if name.endswith("_single.jsonl"):
            return FastChatFile(path, "single_judgments", bench)
        if name.endswith("_pair.jsonl"):
            return FastChatFile(path, "pair_judgments", bench)
    if path.parent.parent.name == "model_judgment":  # per-model layout: <judge>_single/<model>__<N>turn.jsonl
        bench = path.parent.parent.parent.name
        if parent.endswith("_single"):
            return FastChatFile(path, "single_judgments", bench)
        if parent.endswith("_pair"):
            return FastChatFile(path, "pair_judgments", bench)
    # after the folder rules, so a judgment or answer file whose name starts with "question" stays one
    if name.startswith("question") and "model_judgment" not in (parent, path.parent.parent.name):
        return FastChatFile(path, "questions", parent)
    return None


def sniff(path: Path, bench: str | None) -> FastChatFile:
    """Classify a loose .jsonl file by the keys of its first record."""
    keys: set[str] = set()
    with open(path, "rb") as fh:
        for raw in fh:
            raw = raw.strip().removeprefix(b"\xef\xbb\xbf")
            if raw:
                try:
                    obj = json.loads(raw)
                except (ValueError, RecursionError):
                    raise FormatError(
                        f"{path}: the first record is not valid JSON, so JudgeLens cannot tell what kind "
                        "of FastChat file this is. Put it in the FastChat folder layout "
                        "(<bench>/model_judgment/<judge>_single.jsonl, …) to get line-by-line errors."
                    ) from None
                if not isinstance(obj, dict):
                    what = "list" if isinstance(obj, list) else type(obj).__name__
                    raise FormatError(
                        f"{path}: the first record is a JSON {what}, not an object, so JudgeLens cannot tell what "
                        "kind of FastChat file this is. FastChat files hold one JSON object per line.")
                keys = set(obj)
                break
    if not keys:
        raise FormatError(
            f"{path}: the file is empty and its name does not say what it holds. Put it in the FastChat "
            "folder layout (question.jsonl, model_answer/, model_judgment/<judge>_single.jsonl, …)."
        )
    bench = bench or "unknown_bench"
    if {"g1_winner", "model_1"} <= keys or {"winner", "model_1"} <= keys:
        return FastChatFile(path, "pair_judgments", bench)
    if {"judge", "score"} <= keys or {"judge", "judgment", "model", "question_id"} <= keys:
        return FastChatFile(path, "single_judgments", bench)  # with no score: the rating is in the text
    if "choices" in keys:
        return FastChatFile(path, "answers", bench)
    if {"category", "turns"} <= keys:
        return FastChatFile(path, "questions", bench)
    if {"prompt_template", "name"} <= keys:
        return FastChatFile(path, "judge_prompts", None)
    raise FormatError(
        f"{path}: not a FastChat MT-Bench file JudgeLens knows (first record has keys "
        f"{', '.join(sorted(keys)[:8])}). Expected questions, answers, or *_single / *_pair judgments."
    )


# --- converters: one JSON object -> rows for one table. Raise ValueError(reason) on bad input. ---

def question_rows(obj: dict, bench: str) -> list[tuple]:
    turns = need(obj, "turns")
    if not isinstance(turns, list) or not turns or not all(isinstance(t, str) for t in turns):
        raise ValueError('"turns" must be a non-empty list of strings')
    category = as_text(obj.get("category"), "category", required=False)
    return [(bench, as_id(need(obj, "question_id")), category, turns)]


def _choices(obj: dict) -> list[tuple[int, list[str]]]:
    choices = need(obj, "choices")
    if not isinstance(choices, list) or not choices:
        raise ValueError('"choices" must be a non-empty list')
    out = []
    for i, choice in enumerate(choices):
        if not isinstance(choice, dict) or not isinstance(choice.get("turns"), list):
            raise ValueError(f'"choices[{i}]" must be an object with a "turns" list')
        turns = choice["turns"]
        if not all(isinstance(t, str) for t in turns):
            raise ValueError(f'"choices[{i}].turns" must hold strings')
        index = choice.get("index", i)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= MAX_INT:
            raise ValueError(f'"choices[{i}].index" must be a whole number from 0')
        out.append((index, turns))
    return out


def reference_rows(obj: dict, bench: str, judge: str) -> list[tuple]:
    qid = as_id(need(obj, "question_id"))
    model_id = as_text(obj.get("model_id"), "model_id", required=False)
    _, turns = _choices(obj)[0]  # the judge only ever reads choices[0]
    return [(bench, judge, model_id, qid, t + 1, text) for t, text in enumerate(turns)]


def answer_rows(obj: dict, bench: str, file_model: str) -> list[tuple]:
    qid = as_id(need(obj, "question_id"))
    model_id = as_text(obj.get("model_id"), "model_id", required=False)
    model = model_id or file_model
    return [
        (HARNESS, bench, model, model_id, file_model, qid, index, t + 1, text, None, None, None)
        for index, turns in _choices(obj)
        for t, text in enumerate(turns)
    ]


def judge_of(obj: dict) -> tuple[str, str | None]:
    judge = need(obj, "judge")
    if isinstance(judge, str) and judge:
        return judge, None
    if isinstance(judge, list) and judge and all(isinstance(j, str) for j in judge):
        return judge[0], (judge[1] if len(judge) > 1 else None)
    raise ValueError('"judge" must be a list [judge_model, prompt_name] (or a judge model name)')


def infer_turn(prompt_name: str | None) -> int:
    return 2 if prompt_name and "multi-turn" in prompt_name else 1


def parse_status(raw_score: float, judgment: str | None) -> str:
    if judgment is not None and judgment.strip(WHITESPACE) == ERROR_TEXT:
        return "api_error"
    if raw_score == -1:
        return "not_parsed"
    if not SCORE_MIN <= raw_score <= SCORE_MAX:
        return "out_of_range"
    return "ok"


def first_record_has(path: Path, key: str) -> bool:
    """The file's first JSON record has ``key`` (True when it cannot tell: the line reader then says why)."""
    obj = first_record(path)
    return not isinstance(obj, dict) or key in obj


def rating_in_text(judgment: str | None) -> float:
    """Files whose rows have no ``score`` field (older JA forks; told by the first record): the rating the judge
    wrote, FastChat's way (``[[N]]``, else
    ``[N]``, the first match: ``評価：[[9]]``), -1 when there is none (FastChat's "not parsed")."""
    if judgment is None:
        raise ValueError('missing field "score" (and no "judgment" text to read a rating from)')
    found = fastchat_rating(judgment)
    return float(found[1].group(1)) if found else -1.0


def single_judgment_rows(obj: dict, bench: str, rating_in_text_only: bool = False) -> list[tuple]:
    qid = as_id(need(obj, "question_id"))
    model = as_name(need(obj, "model"), "model")
    judge, prompt_name = judge_of(obj)
    judgment = as_text(obj.get("judgment"), "judgment", required=False)
    raw = rating_in_text(judgment) if rating_in_text_only else as_number(need(obj, "score"), "score")
    user_prompt = as_text(obj.get("user_prompt"), "user_prompt", required=False)
    turn = as_turn(obj["turn"]) if obj.get("turn") is not None else infer_turn(prompt_name)
    status = parse_status(raw, judgment)
    score = raw if status == "ok" else None
    return [(HARNESS, bench, judge, prompt_name, model, qid, turn, 0, raw, score, status, judgment, user_prompt,
             as_optional_number(obj.get("tstamp"), "tstamp"))]


def _winner(obj: dict, key: str) -> str:
    value = as_text(need(obj, key), key)
    norm = WINNER_ALIASES.get(value.strip().lower(), value.strip().lower())
    if norm not in WINNERS:
        raise ValueError(f'"{key}" must be one of model_1, model_2, tie, error; got {json.dumps(value)[:40]}')
    return norm


def pair_judgment_rows(obj: dict, bench: str) -> list[tuple]:
    qid = as_id(need(obj, "question_id"))
    model_1 = as_name(need(obj, "model_1"), "model_1")
    model_2 = as_name(need(obj, "model_2"), "model_2")
    judge, prompt_name = judge_of(obj)
    if "g1_winner" in obj or "g2_winner" in obj:
        g1, g2 = _winner(obj, "g1_winner"), _winner(obj, "g2_winner")
    else:  # older lm-sys files: one "winner" for both games
        g1 = g2 = _winner(obj, "winner")
    turn = as_turn(obj["turn"]) if obj.get("turn") is not None else infer_turn(prompt_name)
    texts = [as_text(obj.get(k), k, required=False)
             for k in ("g1_judgment", "g2_judgment", "g1_user_prompt", "g2_user_prompt")]
    return [(HARNESS, bench, judge, prompt_name, model_1, model_2, qid, turn, g1, g2, *texts,
             as_optional_number(obj.get("m1_score"), "m1_score"),
             as_optional_number(obj.get("m2_score"), "m2_score"),
             as_optional_number(obj.get("tstamp"), "tstamp"))]


JUDGE_PROMPT_FIELDS = ("type", "system_prompt", "prompt_template", "description", "category", "output_format")


def judge_prompt_rows(obj: dict) -> list[tuple]:
    name = as_text(need(obj, "name"), "name")
    values = []
    for key in JUDGE_PROMPT_FIELDS:
        value = obj.get(key)
        values.append(value if isinstance(value, str) or value is None else json.dumps(value, ensure_ascii=False))
    as_text(need(obj, "prompt_template"), "prompt_template")
    return [(HARNESS, name, *values, json.dumps(obj, ensure_ascii=False))]


# --- the fast path for big single-judgment files: DuckDB reads the JSON, SQL checks every rule above ---

SINGLE_COLUMNS = (
    "{question_id: 'JSON', model: 'JSON', judge: 'JSON', score: 'JSON', turn: 'JSON', "
    "judgment: 'VARCHAR', user_prompt: 'VARCHAR', tstamp: 'JSON'}"
)


# WHITESPACE as a SQL expression, for trim(x, _SQL_WS): the same characters the Python reader strips.
_SQL_WS = " || ".join(f"chr({ord(c)})" for c in WHITESPACE)

# Every character DuckDB's json_valid accepts as the first of a text: JSON whitespace, a value's first character, and
# the NaN / Infinity it also takes (pinned by tests/ingest/test_ingest_fastchat.py). A text starting with any other is
# not valid JSON, so ``_maybe_json`` asks json_valid (which copies the whole text: an eighth of the fast select's own
# CPU on 2 KB texts) only about the texts starting with one of these.
JSON_FIRST_CHARS = '\t\n\r "-0123456789INfint[{'


def _maybe_json(column: str) -> str:
    """SQL: true where ``json_valid(column)`` is, asked only when the text starts with one of ``JSON_FIRST_CHARS``
    (``column[1]`` is its first character); false for any other text and for NULL, where json_valid gives NULL (the
    caller's CASE treats both alike). The CASE keeps that order: DuckDB may reorder the operands of an AND."""
    firsts = " || ".join(f"chr({ord(c)})" for c in JSON_FIRST_CHARS)
    return f"(CASE WHEN contains({firsts}, {column}[1]) THEN json_valid({column}) ELSE false END)"


def single_judgments_select(max_object_size: int, max_line_bytes: int = MAX_LINE_BYTES) -> str:
    """SELECT producing single_judgments rows from read_ndjson(?), or a row flagged ``bad``.

    Mirrors ``single_judgment_rows``: any row it would refuse gets bad = true, and the caller then
    re-reads the file with the line-by-line reader to tell the user which line and why.
    """
    return f"""
    WITH raw AS (
        SELECT * FROM read_ndjson(?, columns={SINGLE_COLUMNS}, maximum_object_size={max_object_size},
                                  format='newline_delimited')
    ), typed AS (
        SELECT
            json_type(question_id) AS t_qid, json_type(model) AS t_model, json_type(judge) AS t_judge,
            json_type(score) AS t_score, json_type(turn) AS t_turn, json_type(tstamp) AS t_tstamp,
            -- judgment and user_prompt are read as VARCHAR (no JSON copy to re-parse). DuckDB gives a
            -- non-string value as its JSON text; real texts are not valid JSON, so one that is goes to
            -- the line-by-line reader, which decides (a string like "[[5]]" is accepted there).
            CASE WHEN {_maybe_json('judgment')} THEN 'NOT_A_STRING' END AS t_judgment,
            CASE WHEN {_maybe_json('user_prompt')} THEN 'NOT_A_STRING' END AS t_prompt,
            trim(json_extract_string(question_id, '$'), {_SQL_WS}) AS qid,
            json_extract_string(model, '$') AS model_s,
            CASE WHEN json_type(judge) = 'ARRAY' THEN json_extract_string(judge, '$[0]')
                 ELSE json_extract_string(judge, '$') END AS judge_s,
            CASE WHEN json_type(judge) = 'ARRAY' THEN json_extract_string(judge, '$[1]') END AS prompt_s,
            TRY_CAST(trim(json_extract_string(score, '$')) AS DOUBLE) AS raw_score,
            TRY_CAST(json_extract_string(turn, '$') AS DOUBLE) AS turn_d,
            judgment AS judgment_s,
            user_prompt AS prompt_text,
            -- trim() copies the whole text: only run it on the few that contain the marker
            CASE WHEN contains(judgment, '{ERROR_TEXT}') THEN trim(judgment, {_SQL_WS}) = '{ERROR_TEXT}'
                 ELSE false END AS is_error,
            TRY_CAST(json_extract_string(tstamp, '$') AS DOUBLE) AS tstamp_d,
            judge,
            -- bytes of the fields read: a lower bound of the line's length (DuckDB itself lets lines of up
            -- to about twice maximum_object_size through, so the per-record limit is checked here)
            coalesce(strlen(question_id::VARCHAR), 0) + coalesce(strlen(model::VARCHAR), 0)
              + coalesce(strlen(judge::VARCHAR), 0) + coalesce(strlen(score::VARCHAR), 0)
              + coalesce(strlen(turn::VARCHAR), 0) + coalesce(strlen(judgment::VARCHAR), 0)
              + coalesce(strlen(user_prompt::VARCHAR), 0) + coalesce(strlen(tstamp::VARCHAR), 0) AS n_bytes
        FROM raw
    )
    SELECT
        '{HARNESS}' AS harness, ?::VARCHAR AS bench, judge_s AS judge, prompt_s AS prompt_name,
        model_s AS model, qid AS question_id,
        CAST(coalesce(turn_d, CASE WHEN prompt_s LIKE '%multi-turn%' THEN 2 ELSE 1 END) AS INTEGER) AS turn,
        0 AS sample, raw_score,
        CASE WHEN is_error OR raw_score = -1
                  OR raw_score NOT BETWEEN {SCORE_MIN} AND {SCORE_MAX} THEN NULL ELSE raw_score END AS score,
        CASE WHEN is_error THEN 'api_error'
             WHEN raw_score = -1 THEN 'not_parsed'
             WHEN raw_score NOT BETWEEN {SCORE_MIN} AND {SCORE_MAX} THEN 'out_of_range'
             ELSE 'ok' END AS parse_status,
        judgment_s AS rationale, prompt_text AS judge_prompt, tstamp_d AS tstamp,
        (   t_qid IS NULL OR t_qid NOT IN ('BIGINT', 'UBIGINT', 'VARCHAR') OR coalesce(qid, '') = ''
         OR t_model IS NULL OR t_model NOT IN ('BIGINT', 'UBIGINT', 'VARCHAR')
         OR trim(coalesce(model_s, ''), {_SQL_WS}) = ''
         OR t_judge IS NULL OR t_judge = 'NULL'
         OR (t_judge = 'VARCHAR' AND coalesce(judge_s, '') = '')
         OR (t_judge = 'ARRAY' AND (json_array_length(judge) = 0
             OR list_filter(CAST(CASE WHEN t_judge = 'ARRAY' THEN judge END AS JSON[]),  -- no cast of a string
                            lambda x: json_type(x) <> 'VARCHAR') <> []))
         OR t_judge NOT IN ('VARCHAR', 'ARRAY')
         OR t_score IS NULL OR t_score NOT IN ('BIGINT', 'UBIGINT', 'DOUBLE', 'VARCHAR') OR raw_score IS NULL
         OR isnan(raw_score) OR isinf(raw_score) OR n_bytes > {max_line_bytes}
         OR (t_turn IS NOT NULL AND t_turn <> 'NULL' AND (turn_d IS NULL OR turn_d < 1 OR turn_d <> floor(turn_d)
             OR t_turn = 'BOOLEAN'))
         OR (t_judgment IS NOT NULL AND t_judgment NOT IN ('VARCHAR', 'NULL'))
         OR (t_prompt IS NOT NULL AND t_prompt NOT IN ('VARCHAR', 'NULL'))
         OR (t_tstamp IS NOT NULL AND t_tstamp NOT IN ('BIGINT', 'UBIGINT', 'DOUBLE', 'VARCHAR', 'NULL'))
         OR (t_tstamp IN ('BIGINT', 'UBIGINT', 'DOUBLE', 'VARCHAR') AND (tstamp_d IS NULL OR isnan(tstamp_d)
             OR isinf(tstamp_d)))
        ) AS bad
    FROM typed
    """


# --- the reader (lib.ingest.formats.registry) ---

def _by_name(path: Path) -> Claim | None:
    fc = classify(path)
    return READER.claim(fc.kind, fc.bench, fc) if fc else None


def _by_content(path: Path, explicit: bool) -> Claim | None:
    """A loose .jsonl file given on its own, by the keys of its first record (raises FormatError when they are
    not a FastChat file's: a given file must be imported or refused, never skipped)."""
    if not explicit or path.suffix != ".jsonl":
        return None
    fc = sniff(path, path.parent.parent.name if path.parent.name else None)
    return READER.claim(fc.kind, fc.bench, fc)


def read(item, batch: list, store) -> None:
    """Read one FastChat file line by line into ``item.tables`` (bad lines become problems)."""
    meta: FastChatFile = item.meta
    bench = item.bench or "unknown_bench"
    kind = item.kind
    if kind == "questions":
        convert = lambda o: question_rows(o, bench)  # noqa: E731
    elif kind == "reference_answers":
        convert = lambda o: reference_rows(o, bench, meta.judge or item.path.stem)  # noqa: E731
    elif kind == "answers":
        file_model = model_from_file_name(item.path.stem)
        convert = lambda o: answer_rows(o, bench, file_model)  # noqa: E731
    elif kind == "single_judgments":
        in_text = not first_record_has(item.path, "score")  # a fork that writes no score field at all
        convert = lambda o: single_judgment_rows(o, bench, in_text)  # noqa: E731
    elif kind == "pair_judgments":
        convert = lambda o: pair_judgment_rows(o, bench)  # noqa: E731
    else:
        convert = judge_prompt_rows
    parsed = parse_file(item.path, item.display, convert)
    keep_parsed(item, {READER.kinds[kind][0]: parsed}, parsed)
    if kind == "answers":
        ids = {r[3] for r in parsed.rows if r[3]}
        file_model = model_from_file_name(item.path.stem)
        other = sorted(i for i in ids if model_from_file_name(i) != file_model)
        if other:
            item.warnings.append(
                f"model_id {other[0]!r} differs from the file name ({item.path.stem}); judgments may use "
                "either name and JudgeLens matches both")


def use_fast_path(item) -> bool:
    """Non-empty single-judgment files without a byte-order mark are read by DuckDB itself
    (``single_judgments_select``)."""
    if item.kind != "single_judgments" or item.size == 0 or not first_record_has(item.path, "score"):
        return False
    with open(item.path, "rb") as fh:
        return not fh.read(3).startswith(BOM)


# the folder of each kind under <bench>/ (stage_upload)
KIND_FOLDERS = {"questions": "", "reference_answers": "reference_answer", "answers": "model_answer",
                "single_judgments": "model_judgment", "pair_judgments": "model_judgment"}


def stage_upload(loose: Path, dest: Path, bench: str) -> Path | None:
    """Where an uploaded loose .jsonl goes so that its name says its kind (its first record tells the kind)."""
    base = loose.name
    if not base.endswith(".jsonl"):
        return None
    kind = sniff(loose, bench).kind
    if kind == "judge_prompts":
        return dest / base
    if kind == "questions":
        return dest / bench / (base if base.startswith("question") else "question.jsonl")
    if kind in ("single_judgments", "pair_judgments") and not base.endswith(("_single.jsonl", "_pair.jsonl")):
        base = base[: -len(".jsonl")] + ("_single.jsonl" if kind == "single_judgments" else "_pair.jsonl")
    return dest / bench / KIND_FOLDERS[kind] / base


READER = Reader(
    name="fastchat", harness=HARNESS, sample="data/sample/shisa-ja-mt-bench-harness",
    kinds={"judge_prompts": ("judge_prompts",), "questions": ("questions",),
           "reference_answers": ("reference_answers",), "answers": ("answers",),
           "single_judgments": ("single_judgments",), "pair_judgments": ("pair_judgments",)},
    describes=("FastChat-style .jsonl files (question.jsonl, reference_answer/, model_answer/, "
               "model_judgment/*_single.jsonl and *_pair.jsonl, judge_prompts.jsonl)"),
    by_name=_by_name, by_content=_by_content, read=read, fast=use_fast_path, fast_select=single_judgments_select,
    stage=stage_upload)
