"""Reading the files of human judges: JudgeLens verdict exports and the public MT-Bench human-judgment set.

- ``sniff(path)``: which of the two a file is, from its first record (``ingest`` recognises them by content).
- A **verdict export** (``lib.judging.human.export_jsonl``) has one JSON object per line, marked
  ``{"judgelens_verdict": 1, ...}`` (``lib.vocab.VERDICT_EXPORT_MARK``); ``read_verdicts`` checks each with the
  store's rule (``lib.store.check_verdict``).
- **MT-Bench human judgments** (lmsys/mt_bench_human_judgments): rows with ``question_id, model_a, model_b, winner,
  judge, turn`` and the two conversations, as JSON Lines or one JSON array; ``read_pair_votes`` turns each into a
  pairwise vote by ``human:<judge id>`` with compute_agreement.py's judge type.

A bad record raises FormatError naming the file and line. Writing them is ``lib.ingest.importer``.
"""
from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from lib import harness as H
from lib.errors import FormatError, IngestError, LineProblem, UsageError
from lib.ingest.formats.base import Claim, Reader
from lib.store import HUMAN_PREFIX, check_verdict, check_verdict_key
from lib.vocab import VERDICT_EXPORT_MARK

PAIR_WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")
TOO_DEEP = "a JSON value is nested too deeply (about a thousand levels of [ or {); verdict records nest a few levels"
SNIFF_MAX_BYTES = 64 << 20  # the longest first record sniff reads to find the export's marker
PAIR_KEYS = frozenset({"question_id", "model_a", "model_b", "winner", "judge", "turn"})


def sniff(path: Path) -> str | None:
    """'verdicts' for a JudgeLens verdict export, 'human_pairs' for MT-Bench human judgments, else None. Reads
    the first record only."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
            if b"\n" not in head.lstrip():  # the first record goes on past 64 KB (a long note): read it whole
                head += fh.readline(SNIFF_MAX_BYTES)
    except OSError:
        return None
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff").lstrip()
    if text.startswith("["):  # a JSON array (compute_agreement.py's input)
        text = text[1:].lstrip()
    if not text.startswith("{"):
        return None
    first = text.split("\n", 1)[0]
    keys: set[str] = set()
    try:
        first_record = json.loads(first.rstrip().rstrip(","))
        keys = set(first_record) if isinstance(first_record, dict) else set()
    except (ValueError, RecursionError):
        try:
            keys = set(json.loads(Path(path).read_text(encoding="utf-8-sig"))[0])
        except (ValueError, RecursionError, IndexError, KeyError, TypeError, OSError):
            return None
    if VERDICT_EXPORT_MARK in keys:
        return "verdicts"
    if PAIR_KEYS <= keys:
        return "human_pairs"
    return None


def _records(path: Path, display: str) -> list[tuple[int, dict]]:
    text = path.read_text(encoding="utf-8-sig")
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise FormatError(f"{display}: not valid JSON ({exc})") from exc
        except RecursionError:
            raise FormatError(f"{display}: {TOO_DEEP}") from None
        return list(enumerate(data, 1))
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append((n, json.loads(line)))
            except ValueError as exc:
                raise FormatError(f"{display}:{n}: not valid JSON ({exc.msg})") from exc
            except RecursionError:
                raise FormatError(f"{display}:{n}: {TOO_DEEP}") from None
    return out


def read_verdicts(path: Path, display: str) -> list[dict]:
    """Every record checked by the rules the CLI ``verdict`` obeys (``lib.store.check_verdict`` and
    ``check_verdict_key``); each row keeps its ``line``. Every bad record is listed: IngestError of
    ``FILE:LINE: not a JudgeLens verdict (why)``. The store's own limits are checked at import
    (``lib.store.verdict_item_problems``)."""
    rows, problems = [], []
    for n, obj in _records(path, display):
        try:
            if not isinstance(obj, dict):
                raise UsageError(f"a verdict is a JSON object; got {type(obj).__name__}")
            missing = [k for k in ("author", "created_at", "bench", "question_id", "turn", "model") if k not in obj]
            if missing:
                raise UsageError(f"missing {', '.join(missing)}")
            author, score, cleared = check_verdict(obj.get("author"), obj.get("score"), obj.get("label"),
                                                   obj.get("note"), obj.get("cleared") or ())
            bench, question_id, turn, model, sample = check_verdict_key(
                obj["bench"], obj["question_id"], obj["turn"], obj["model"], obj.get("sample"))
            if not isinstance(obj["created_at"], str):
                raise UsageError(f"created_at is an ISO date and time; got {obj['created_at']!r}")
            rows.append(dict(author=author, created_at=datetime.fromisoformat(obj["created_at"]).replace(tzinfo=None),
                             bench=bench, question_id=question_id, turn=turn, model=model,
                             sample=None if obj.get("sample") is None else sample,
                             score=score, label=obj.get("label") or None, note=obj.get("note") or None,
                             cleared=cleared, line=n))
        except (TypeError, ValueError, UsageError) as exc:
            problems.append(LineProblem(display, n, f"not a JudgeLens verdict ({getattr(exc, 'message', exc)})"))
    if problems:
        raise IngestError(problems, hint=VERDICT_HINT)
    return rows


VERDICT_HINT = "Fix these verdicts (or leave them out of the file) and import it again."


def pair_judge_name(judge) -> str:
    """The JudgeLens name of a pairwise vote's judge: human:<id> for a person, e.g. human:expert_0;
    an LLM judge given as [model, prompt] keeps its model name with the prompt, e.g. gpt-4:pair-v2."""
    if isinstance(judge, list):
        return ":".join(str(j) for j in judge)
    return HUMAN_PREFIX + str(judge)


def judge_type(judge) -> str:
    """The judge type FastChat's compute_agreement.py groups votes by: gpt4-pair, human (experts), author."""
    if isinstance(judge, list) and judge and judge[0] == "gpt-4" and str(judge[1]).startswith("pair"):
        return "gpt4-pair"
    if isinstance(judge, list):
        return ":".join(str(j) for j in judge)
    if str(judge).startswith("expert"):
        return "human"
    if str(judge).startswith("author"):
        return "author"
    return str(judge)


def read_pair_votes(path: Path, display: str, bench: str) -> list[dict]:
    rows = []
    for n, obj in _records(path, display):
        try:
            winner = obj["winner"]
            if winner not in PAIR_WINNERS:
                raise ValueError(f"winner {winner!r} is not one of {', '.join(PAIR_WINNERS)}")
            turn = int(obj["turn"])
            if turn not in (1, 2):
                raise ValueError(f"turn {turn} is not 1 or 2")
            rows.append(dict(bench=bench, question_id=str(obj["question_id"]), turn=turn, model_a=str(obj["model_a"]),
                             model_b=str(obj["model_b"]), winner=winner, judge=pair_judge_name(obj["judge"]),
                             judge_type=judge_type(obj["judge"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"{display}:{n}: not an MT-Bench human judgment ({exc})") from exc
    return rows


def pair_bench(path: Path) -> str:
    """A human-judgment file inside <bench>/model_judgment/ belongs to that bench; elsewhere: mt_bench (the
    public set judges MT-Bench)."""
    return path.parent.parent.name if path.parent.name == "model_judgment" else "mt_bench"


# --- the reader (lib.ingest.formats.registry): recognised by content; written by the importer's own path ---

def _by_content(path: Path, explicit: bool) -> Claim | None:
    kind = sniff(path) if path.suffix in (".jsonl", ".json") else None
    return READER.claim(kind, None) if kind else None


READER = Reader(
    name="human", harness=H.HUMAN.name, sample="tests/data/human",
    kinds={"verdicts": ("human_verdicts",), "human_pairs": ("human_pair_votes",)},
    describes="JudgeLens verdict exports and MT-Bench human judgments",
    by_content=_by_content, content_first=True, separate=True)
