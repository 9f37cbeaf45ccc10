"""What a reader is: the contract every harness reader in ``lib.ingest.formats`` fulfils (``registry.READERS``).

A reader answers two questions about a file:
- "is this file mine?": ``by_name(path)`` from where the file sits and what it is called (every file of a folder
  is asked), then ``by_content(path, explicit)`` from its first record (judgment files without a telling name;
  readers may look only at files given one by one, ``explicit``). Each returns a ``Claim`` or None.
- "read it": ``read(item, batch, store)`` fills ``item.tables`` ({table: ParsedFile}) and ``item.warnings``;
  ``item`` is the importer's ``ImportFile`` (path, display, kind, bench, meta, size), ``batch`` the other files
  of the same import (a file may need a sibling, e.g. Swallow details need the run's results file for the model).

Optional: a fast path for big judgment files (``fast(item)`` says whether ``fast_select`` reads this one: a
DuckDB SELECT over ``read_ndjson`` giving the ``single_judgments`` columns), tested row for row against ``read``.
``stage(loose, dest, bench)``: where an uploaded loose file belongs under ``dest`` so that ``by_name`` knows it
(None: not this reader's; FormatError: it cannot tell). ``separate`` readers (the analysts' verdicts) are
recognised here but written by the importer's own path.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping


@dataclass(frozen=True)
class Claim:
    """A reader's "this file is mine": what the file holds and what the reader found out from its name."""

    reader: "Reader"
    kind: str                 # what the file holds (one of reader.kinds)
    bench: str | None         # None: unknown until read (see Reader.bench_after_read) or not bench-bound
    meta: Any = None          # the reader's own description of the file, handed back to read()


def _never(path: Path, explicit: bool = False) -> None:
    return None


@dataclass(frozen=True)
class Reader:
    name: str                                   # the reader (for messages and the contract test)
    harness: str                                # the ``harness`` of the rows it reads (lib.harness)
    sample: str                                 # its sample folder, relative to the repository root
    kinds: Mapping[str, tuple[str, ...]]        # kind -> the tables a file of that kind fills, in import order
    describes: str                              # the files it reads, for "JudgeLens does not know this file"
    by_name: Callable[[Path], Claim | None] = _never
    by_content: Callable[[Path, bool], Claim | None] = _never
    read: Callable[[Any, list, Any], None] | None = None
    content_first: bool = False                 # a given file is asked by content before any reader by name
    separate: bool = False                      # imported by the importer's own path (not read into tables)
    bench_after_read: frozenset[str] = field(default_factory=frozenset)   # kinds whose bench the content gives
    fast: Callable[[Any], bool] | None = None   # whether the fast path reads this item
    fast_select: Callable[..., str] | None = None
    stage: Callable[[Path, Path, str], Path | None] | None = None  # where a loose upload goes in the reader's layout

    def claim(self, kind: str, bench: str | None, meta: Any = None) -> Claim:
        if kind not in self.kinds:
            raise ValueError(f"reader {self.name}: unknown kind {kind!r}")
        return Claim(self, kind, bench, meta)


EMPTY_NOTE = "empty file: no records"
BLANK_NOTE = "empty file: no records (it holds only blank lines)"


def keep_parsed(item, tables: dict, parsed) -> None:
    """What a reader's ``read`` ends with: the parsed tables on the item, the parse's warnings, and a note when
    ``parsed`` (the file's main table) had no record at all."""
    item.tables = tables
    item.warnings.extend(parsed.warnings)
    if parsed.lines_read == 0:
        item.warnings.append(EMPTY_NOTE if item.size == 0 else BLANK_NOTE)


def score_status(raw: float | None, rules, bench: str | None, *, api_error: bool = False) -> str:
    """A judgment's parse status under its harness's rules (``lib.harness``): its failure code, its scale on this
    bench. ok | not_parsed | api_error | out_of_range."""
    if api_error:
        return "api_error"
    if raw is None or (rules.failure_code is not None and raw == rules.failure_code):
        return "not_parsed"
    low, high = rules.scale_for(bench)
    return "ok" if low <= raw <= high else "out_of_range"
