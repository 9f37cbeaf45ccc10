"""Line-by-line JSON Lines reading that says exactly which line is wrong and why.

This is the reference reader: every FastChat file can go through it. ``lib.ingest.importer`` takes a
faster DuckDB path for big judgment files and falls back to this one to explain any failure.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

from lib.errors import LineProblem

MAX_LINE_BYTES = 32 * 1024 * 1024  # one record; DuckDB's own default is 16 MB
BOM = b"\xef\xbb\xbf"
# What ids and the "$ERROR$" marker are trimmed of. ASCII only, so the DuckDB fast path
# (lib.ingest.formats.fastchat.single_judgments_select) can trim exactly the same characters.
WHITESPACE = " \t\n\r\v\f"
MAX_INT = 2**31 - 1  # turn and choice index are INTEGER columns
# Python's json module recurses once per level of [ or {; past about a thousand it raises RecursionError.
TOO_DEEP = ("a JSON value is nested too deeply (about a thousand levels of [ or {); harness records nest a few "
            "levels, so this line is not one")


@dataclass
class ParsedFile:
    """Rows converted from one file, plus what was wrong or odd about it."""

    path: str
    rows: list[tuple] = field(default_factory=list)
    problems: list[LineProblem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    lines_read: int = 0


def first_record(path: Path) -> Any:
    """The first non-blank line of a JSON Lines file, parsed (a BOM before it is skipped). None when the file cannot
    be read, holds no record or its first line is not JSON: for a reader's "is this file mine?", whose answer
    then rests on the name; the line reader says what is wrong."""
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                if raw.strip():
                    return json.loads(raw.strip().removeprefix(BOM))
    except (OSError, ValueError, RecursionError):
        pass
    return None


def first_keys(path: Path) -> set[str]:
    """The keys of the file's first record when it is a JSON object (``first_record``), else none."""
    record = first_record(path)
    return set(record) if isinstance(record, dict) else set()


def iter_json_lines(path: Path, display: str, warnings: list[str]) -> Iterator[tuple[int, Any, str | None]]:
    """Yield (line number, parsed object or None, problem or None) for each non-blank line."""
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            if lineno == 1 and raw.startswith(BOM):
                raw = raw[len(BOM):]
                warnings.append("the file starts with a UTF-8 byte-order mark (BOM); it was ignored")
            if len(raw) > MAX_LINE_BYTES:
                yield lineno, None, (
                    f"line is {len(raw) / 1e6:.1f} MB, over the {MAX_LINE_BYTES // 2**20} MiB limit for one record"
                )
                continue
            ended = raw.endswith(b"\n")
            stripped = raw.strip()
            if not stripped:
                continue
            try:
                text = stripped.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield lineno, None, (
                    f"not valid UTF-8 (byte 0x{stripped[exc.start]:02x} at position {exc.start + 1} of the line); "
                    "save the file as UTF-8"
                )
                continue
            try:
                obj = json.loads(text)
            except RecursionError:
                yield lineno, None, TOO_DEEP
                continue
            except json.JSONDecodeError as exc:
                hint = ""
                if not ended and (exc.msg.startswith(("Unterminated", "Expecting")) or exc.pos >= len(text) - 6):
                    hint = " (the last line looks cut off: was the file still being written?)"
                at = "" if exc.msg.endswith(" at") else " at"  # "Unterminated string starting at"
                yield lineno, None, f"not valid JSON: {exc.msg}{at} column {exc.colno}{hint}"
                continue
            if not isinstance(obj, dict):
                kind = "a list" if isinstance(obj, list) else type(obj).__name__
                yield lineno, None, f"expected one JSON object per line, got {kind}"
                continue
            yield lineno, obj, None


def parse_file(path: Path, display: str, convert: Callable[[dict], list[tuple]]) -> ParsedFile:
    """Read every line and convert it; collect problems instead of stopping at the first."""
    out = ParsedFile(display)
    for lineno, obj, problem in iter_json_lines(path, display, out.warnings):
        out.lines_read += 1
        if problem is None:
            try:
                out.rows.extend(convert(obj))
                continue
            except ValueError as exc:
                problem = str(exc)
            except RecursionError:  # converting (e.g. json.dumps of a judge prompt record) nests as deep
                problem = TOO_DEEP
        out.problems.append(LineProblem(display, lineno, problem))
    return out


# --- field checks shared by the converters. Each raises ValueError with the text a user reads. ---

def need(obj: dict, key: str) -> Any:
    if key not in obj or obj[key] is None:
        raise ValueError(f'missing field "{key}"')
    return obj[key]


def as_id(value: Any, key: str = "question_id") -> str:
    """Question ids are kept as text: 7 and "7" are the same id."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f'"{key}" must be an integer or a string, got {json.dumps(value)[:40]}')
    text = str(value).strip(WHITESPACE)
    if not text:
        raise ValueError(f'"{key}" is empty')
    return text


def as_name(value: Any, key: str) -> str:
    """Model names are kept exactly as written (an integer becomes its digits); blank ones are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f'"{key}" must be a string, got {json.dumps(value)[:40]}')
    text = str(value)
    if not text.strip(WHITESPACE):
        raise ValueError(f'"{key}" is empty')
    return text


def as_text(value: Any, key: str, *, required: bool = True) -> str | None:
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ValueError(f'"{key}" must be a string, got {json.dumps(value)[:40]}')
    return value


def as_number(value: Any, key: str) -> float:
    if isinstance(value, bool):
        raise ValueError(f'"{key}" must be a number, got {json.dumps(value)}')
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            raise ValueError(f'"{key}" must be a number, got {json.dumps(value)[:40]}') from None
    if not isinstance(value, (int, float)):
        raise ValueError(f'"{key}" must be a number, got {json.dumps(value)[:40]}')
    value = float(value)
    if math.isnan(value) or math.isinf(value):
        raise ValueError(f'"{key}" must be a finite number, got {value}')
    return value


def as_turn(value: Any) -> int:
    number = as_number(value, "turn")
    if number != int(number) or not 1 <= number <= MAX_INT:
        raise ValueError(f'"turn" must be a whole number from 1, got {value}')
    return int(number)


def as_optional_number(value: Any, key: str) -> float | None:
    return None if value is None else as_number(value, key)
