"""Wide FastChat rows (``lib.harness.fastchat_wide``): one row per question in ``<bench>/model_judgment/*.jsonl``
(or given on its own). A single row becomes one judgment per turn; a pairwise row one pair judgment, game 1 from
``winner_ab``, game 2 from ``winner_ba`` (B in the swapped game is model 1); a row missing one of them takes ``winner`` for game 1 and game 1's
verdict for game 2 (``inconsistent``: the two games disagreed, kept as a tie, FastChat's own reading)."""
from __future__ import annotations

import json
from pathlib import Path

from lib import harness as H
from lib.ingest.formats import fastchat
from lib.ingest.formats.base import Claim, Reader, keep_parsed, score_status
from lib.ingest.formats.jsonl import as_id, as_name, as_number, as_text, as_turn, first_keys, need, parse_file

RULES = H.FASTCHAT_WIDE
SINGLE_KEYS, PAIR_KEYS = {"score_turn1"}, {"winner_ab", "winner_ba"}
GAME1 = {"a": "model_1", "b": "model_2", "tie": "tie", "inconsistent": "tie", "error": "error"}
GAME2 = {**GAME1, "a": "model_2", "b": "model_1"}   # positions swapped


def _kind(path: Path) -> str | None:
    if path.suffix != ".jsonl":
        return None
    keys = first_keys(path)
    return "single_judgments" if SINGLE_KEYS <= keys else "pair_judgments" if keys & PAIR_KEYS else None


def _by_name(path: Path) -> Claim | None:
    fc = fastchat.classify(path)
    if fc is not None and fc.kind in ("single_judgments", "pair_judgments") and (kind := _kind(path)):
        return READER.claim(kind, fc.bench)
    if path.parent.name == "model_judgment" and (kind := _kind(path)):   # any name under model_judgment/
        return READER.claim(kind, path.parent.parent.name)
    return None


def _by_content(path: Path, explicit: bool) -> Claim | None:
    kind = _kind(path)
    return READER.claim(kind, path.parent.parent.name or "unknown_bench") if kind else None


def single_rows(obj: dict, bench: str) -> list[tuple]:
    qid = as_id(need(obj, "question_id"))
    model = as_name(need(obj, "model_id"), "model_id")
    judge = as_name(need(obj, "judge_id"), "judge_id")
    rows = []
    for turn in (1, 2):
        if obj.get(f"score_turn{turn}") is None:
            continue
        raw = as_number(obj[f"score_turn{turn}"], f"score_turn{turn}")
        text = as_text(obj.get(f"judgment_turn{turn}"), f"judgment_turn{turn}", required=False)
        status = score_status(raw, RULES, bench, api_error=text is not None and text.strip() == fastchat.ERROR_TEXT)
        rows.append((RULES.name, bench, judge, None, model, qid, turn, 0, raw, raw if status == "ok" else None,
                     status, text, None, None))
    if not rows:
        raise ValueError('neither "score_turn1" nor "score_turn2" holds a score')
    return rows


def _game(obj: dict, key: str, table: dict) -> str:
    value = as_text(need(obj, key), key).strip().lower()
    if value not in table:
        raise ValueError(f'"{key}" must be A, B, tie or inconsistent; got {json.dumps(obj[key])[:40]}')
    return table[value]


def pair_rows(obj: dict, bench: str) -> list[tuple]:
    qid = as_id(need(obj, "question_id"))
    m1 = as_name(obj.get("model_1", obj.get("model_a")), "model_a")
    m2 = as_name(obj.get("model_2", obj.get("model_b")), "model_b")
    judge = as_name(need(obj, "judge_id"), "judge_id")
    g1 = _game(obj, "winner_ab" if "winner_ab" in obj else "winner", GAME1)
    g2 = _game(obj, "winner_ba", GAME2) if "winner_ba" in obj else g1
    turn = as_turn(obj["turn"]) if obj.get("turn") is not None else 1
    texts = [as_text(obj.get(k), k, required=False) for k in ("judgment_ab", "judgment_ba")]
    return [(RULES.name, bench, judge, None, m1, m2, qid, turn, g1, g2, *texts, None, None, None, None, None)]


def read(item, batch: list, store) -> None:
    convert = single_rows if item.kind == "single_judgments" else pair_rows
    parsed = parse_file(item.path, item.display, lambda o: convert(o, item.bench or "unknown_bench"))
    keep_parsed(item, {item.kind: parsed}, parsed)


READER = Reader(
    name="fastchat_wide", harness=RULES.name, sample="tests/data/fastchat_wide",
    kinds={"single_judgments": ("single_judgments",), "pair_judgments": ("pair_judgments",)},
    describes="wide FastChat judgment rows (score_turn1/score_turn2; winner_ab/winner_ba)",
    by_name=_by_name, by_content=_by_content, content_first=True, read=read)
