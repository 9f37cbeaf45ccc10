"""Import harness outputs into the store.

``ingest(store, paths)`` finds every file it knows under the given paths, reads and checks all of
them, then writes them in ONE transaction: if any line of any file is bad, nothing is written and
the error lists every bad line as ``FILE:LINE: reason``. With ``skip_bad_lines=True`` the valid
lines are imported and the skipped ones are recorded in the source's report.

Each file becomes a source identified by a hash of its bytes (``content_key``: xxh3-128, ``xxh128:<hex>``; stores
made before issue 26 hold sha256 hex, which ``legacy_sha256`` still matches); importing the same bytes again
changes nothing and says so.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Iterator

import duckdb

from lib import harness as H
from lib.errors import FormatError, IngestError, LineProblem, PathNotAllowed
from lib.ingest import lfs, resources
from lib.ingest.formats import human, registry
from lib.ingest.formats.base import BLANK_NOTE, Reader
from lib.ingest.formats.jsonl import MAX_LINE_BYTES, ParsedFile
from lib import search_index
from lib.store import (Store, derived_names, derived_values, insert_verdicts, refresh_human_scores,
                       refresh_item_scores, verdict_item_problems)

Progress = Callable[[float, str], None]

# Column order of the rows the readers produce, per table (source_id is added on insert).
TABLE_COLUMNS: dict[str, list[tuple[str, str]]] = {
    "questions": [("bench", "str"), ("question_id", "str"), ("category", "str"), ("turns", "list")],
    "reference_answers": [("bench", "str"), ("judge", "str"), ("model_id", "str"), ("question_id", "str"),
                          ("turn", "int"), ("text", "str")],
    "answers": [("harness", "str"), ("bench", "str"), ("model", "str"), ("model_id", "str"),
                ("file_model", "str"), ("question_id", "str"), ("sample", "int"), ("turn", "int"),
                ("text", "str"), ("temperature", "float"), ("system_prompt", "str"), ("max_chars", "int")],
    "single_judgments": [("harness", "str"), ("bench", "str"), ("judge", "str"), ("prompt_name", "str"),
                         ("model", "str"), ("question_id", "str"), ("turn", "int"), ("sample", "int"),
                         ("raw_score", "float"), ("score", "float"), ("parse_status", "str"),
                         ("rationale", "str"), ("judge_prompt", "str"), ("tstamp", "float")],
    "pair_judgments": [("harness", "str"), ("bench", "str"), ("judge", "str"), ("prompt_name", "str"),
                       ("model_1", "str"), ("model_2", "str"), ("question_id", "str"), ("turn", "int"),
                       ("g1_winner", "str"), ("g2_winner", "str"), ("g1_judgment", "str"),
                       ("g2_judgment", "str"), ("g1_user_prompt", "str"), ("g2_user_prompt", "str"),
                       ("m1_score", "float"), ("m2_score", "float"), ("tstamp", "float")],
    "judge_prompts": [("harness", "str"), ("name", "str"), ("type", "str"), ("system_prompt", "str"),
                      ("prompt_template", "str"), ("description", "str"), ("category", "str"),
                      ("output_format", "str"), ("record", "str")],
    "reported_metrics": [("harness", "str"), ("bench", "str"), ("model", "str"), ("run_id", "str"),
                         ("task", "str"), ("metric", "str"), ("value", "float"), ("stderr", "float")],
}
DATA_TABLES = list(TABLE_COLUMNS)


@dataclass
class ImportFile:
    """One file this import will read, and what became of it."""

    path: Path
    display: str
    harness: str
    kind: str
    bench: str | None
    meta: object  # the reader's description of the file
    sha256: str = ""  # the file's content key (``content_key``), kept in the sources.sha256 column
    legacy_sha256: str | None = None  # its sha256 too, when a source of a store made before issue 26 has its size
    size: int = 0
    status: str = "pending"  # imported | unchanged | refused
    source_id: int | None = None
    existing_source: int | None = None
    rows: int = 0
    skipped: list[LineProblem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    tables: dict[str, ParsedFile] = field(default_factory=dict)
    fast: bool = False
    hashing: Future | None = field(default=None, repr=False)  # content_key running while the file is inserted
    reader: Reader | None = field(default=None, repr=False)    # the reader that claimed the file

    @property
    def table_names(self) -> tuple[str, ...]:
        """The tables a file of this kind fills (its reader says)."""
        return self.reader.kinds[self.kind]
    records: list | None = field(default=None, repr=False)  # a human file's rows, read before the import writes

    def await_hash(self) -> None:
        """Wait for the hash started in the background (see ``hash_later``), if any."""
        if self.hashing is not None:
            self.sha256, self.size = self.hashing.result()
            self.hashing = None

    def line(self) -> str:
        bench = f" [{self.bench}]" if self.bench else ""
        if self.status == "unchanged":
            return f"unchanged  {self.display}{bench}: already imported as source {self.existing_source}"
        if self.status == "refused":
            return f"refused    {self.display}{bench}: {'; '.join(self.warnings)}"
        text = f"imported   {self.display}{bench}: {self.kind}, {self.rows} record(s) -> source {self.source_id}"
        if self.skipped:
            text += f", {len(self.skipped)} bad line(s) skipped"
        for w in self.warnings:
            text += f"\n             note: {w}"
        return text


@dataclass
class IngestReport:
    files: list[ImportFile]
    not_read: list[tuple[str, str]] = field(default_factory=list)  # data files of a folder no reader takes: why

    @property
    def failed(self) -> bool:
        """Nothing was imported and some file was refused: every data file of the import was refused."""
        return not self.imported and not self.unchanged and bool(self.refused or self.not_read)

    @property
    def imported(self) -> list[ImportFile]:
        return [f for f in self.files if f.status == "imported"]

    @property
    def unchanged(self) -> list[ImportFile]:
        return [f for f in self.files if f.status == "unchanged"]

    @property
    def refused(self) -> list[ImportFile]:
        return [f for f in self.files if f.status == "refused"]

    def summary(self) -> str:
        head = (f"{len(self.imported)} file(s) imported, {len(self.unchanged)} unchanged (already imported)"
                + (f", {len(self.refused)} refused" if self.refused else ""))
        if not self.imported and self.unchanged and not self.refused:
            head += ": nothing changed"
        if self.not_read:
            head += f", {len(self.not_read)} not read"
        return "\n".join([head, *(f.line() for f in self.files),
                          *(f"not read   {name}: {why}" for name, why in self.not_read)])


# ----------------------------------------------------------------------------------------------
# Finding files

def _display(path: Path, root: Path | None) -> str:
    if root is not None:
        try:
            return str(path.relative_to(root.parent))
        except ValueError:
            pass
    return str(path)


# Files a folder import must read or list as not read (issue 22: no silent skips).
DATA_SUFFIXES = (".json", ".jsonl", ".parquet", ".eval")
# kinds a file in a folder is recognised as by its content whatever its name (judgment files of forks)
CONTENT_KINDS = frozenset({"single_judgments", "pair_judgments", "inspect_log"})


def _classify(path: Path, root: Path | None, explicit: bool) -> ImportFile | str | None:
    """The file's ImportFile, or (a data file no reader takes) the reason, or None (not a data file)."""
    display = _display(path, root)
    try:
        found = registry.claim(path, explicit, separate=False)
        if found is None and not explicit and path.suffix in DATA_SUFFIXES:
            found = registry.claim(path, True, separate=False)  # by content: judgment files of any name
            if found is not None and found.kind not in CONTENT_KINDS:
                where = found.reader.describes
                return (f"its records look like {found.reader.name} {found.kind.replace('_', ' ')}, but it is not "
                        f"where that harness keeps them ({where}); move it there or give it on its own")
    except FormatError as exc:
        return exc.message.removeprefix(f"{path}: ").removeprefix(f"{display}: ")
    if found is None:
        if explicit or path.suffix in DATA_SUFFIXES:
            return f"JudgeLens does not know this file. It reads {registry.known_files()}."
        return None
    return ImportFile(path, display, found.reader.harness, found.kind, found.bench, found.meta, reader=found.reader)


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def discover(paths: Iterable[str | Path], allowed_roots: list[Path] | None = None, *,
             not_read: list[tuple[str, str]] | None = None, taken: Iterable[Path] = ()) -> list[ImportFile]:
    """Every importable file under the given files and folders, in a stable order.

    With ``allowed_roots`` (the app's import folders), every file is resolved first: a link that leads out
    of the roots refuses the whole import, naming each such link. Any git-LFS pointer refuses the import before a
    file is parsed (``lib.ingest.lfs``). A given file no reader takes refuses the import (all of them named at
    once); a data file in a folder (``DATA_SUFFIXES``) no reader takes is listed in ``not_read`` with the reason
    (``taken``: files another path of the import reads, e.g. verdict exports).
    """
    found: list[ImportFile] = []
    seen: set[Path] = {Path(p).resolve() for p in taken}
    roots = [Path(r).resolve() for r in allowed_roots] if allowed_roots is not None else None
    outside: list[str] = []
    pointers: list[tuple[str, int]] = []
    unknown: list[str] = []
    skipped: list[tuple[str, str]] = []
    for given in paths:
        root = Path(given).expanduser()
        if not root.exists():
            raise FormatError(f"{given}: no such file or folder", title="Nothing to import")
        if root.is_file():
            candidates, explicit, base = [root], True, None
        else:
            candidates = sorted(p for p in root.rglob("*") if p.is_file()
                                and not any(part.startswith(".") for part in p.relative_to(root).parts))
            explicit, base = False, root
        for path in candidates:
            resolved = path.resolve()
            if roots is not None and not _inside(resolved, roots):
                outside.append(f"{path} -> {resolved}")
                continue
            if resolved in seen:
                continue
            seen.add(resolved)
            if (real := lfs.pointer_size(path)) is not None:
                pointers.append((_display(path, base), real))
                continue
            item = _classify(path, base, explicit)
            if isinstance(item, str):
                (unknown.append(f"{_display(path, base)}: {item}") if explicit
                 else skipped.append((_display(path, base), item)))
            elif item is not None:
                found.append(item)
    if outside:
        raise PathNotAllowed(
            f"{len(outside)} file(s) to import lead outside the allowed import folders "
            f"({', '.join(map(str, roots))}), so nothing was imported:\n" + "\n".join(outside)
            + "\nRemove those links, or ask whoever runs this JudgeLens to add their folder to "
            "JUDGELENS_IMPORT_ROOTS.", title="Links out of the import folders")
    if pointers:
        raise lfs.refuse(pointers)
    if unknown:
        raise FormatError("\n".join(unknown))
    if not_read is not None:
        not_read.extend(skipped)
    if not found:
        listed = "".join(f"\n  {name}: {why}" for name, why in skipped)
        raise FormatError(
            "Found no harness files in " + ", ".join(str(p) for p in paths) + ". Point JudgeLens at a FastChat "
            "data folder (with <bench>/question.jsonl, model_answer/, model_judgment/) or a lighteval output "
            "folder (results/…/results_*.json, details/…/details_*.parquet)."
            + (f"\nNot read:{listed}" if listed else ""),
            title="Nothing to import",
        )
    order = registry.kind_order()
    return sorted(found, key=lambda f: (order[f.kind], f.display))


CONTENT_KEY_PREFIX = "xxh128:"


def content_key(path: Path) -> tuple[str, int]:
    """(``xxh128:<hex>``, size): what identifies an imported file's bytes. xxh3-128 reads at memory speed, about
    six times less CPU than sha256 (which, beside DuckDB's threads, slowed an import of 1M judgments); it is no
    defence against a file made on purpose to collide, which only an importer could make and only to skip its own
    file."""
    import xxhash

    digest, size = _digest(path, xxhash.xxh3_128())
    return CONTENT_KEY_PREFIX + digest, size


def sha256_of(path: Path) -> tuple[str, int]:
    """(sha256 hex, size): the key of the files a store made before issue 26 imported (see ``legacy_sizes``)."""
    return _digest(path, hashlib.sha256())


def _digest(path: Path, digest) -> tuple[str, int]:
    """(hex digest, size) of the file's bytes, read in 4 MB chunks."""
    size = 0
    with open(path, "rb") as fh:
        while chunk := fh.read(4 * 1024 * 1024):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size


# ----------------------------------------------------------------------------------------------
# Reading

def read_item(item: ImportFile, batch: list[ImportFile], store: Store) -> None:
    """Parse one file with its reader's line reader (what the DuckDB fast path does not do)."""
    item.reader.read(item, batch, store)


def _problems(item: ImportFile) -> list[LineProblem]:
    return [p for parsed in item.tables.values() for p in parsed.problems]




def _skip(item: ImportFile, problems: list[LineProblem]) -> None:
    """--skip-bad-lines: keep the valid lines; a file with no valid line at all is refused, saying so."""
    if any(parsed.rows for parsed in item.tables.values()):
        item.skipped = problems
        return
    first = problems[0]
    item.status, item.tables = "refused", {}
    item.warnings.append(f"every record is bad ({len(problems)} bad line(s)), so nothing was imported from it; "
                         f"the first: {'line ' + str(first.line) + ': ' if first.line else ''}{first.reason}")


def _use_fast_path(item: ImportFile) -> bool:
    """Judgment files the reader's fast path reads: DuckDB itself parses them (``Reader.fast_select``)."""
    return item.reader.fast is not None and item.reader.fast(item)


# ----------------------------------------------------------------------------------------------
# Writing

def _arrow_table(table: str, rows: list[tuple]):
    import pyarrow as pa

    types = {"str": pa.string(), "int": pa.int64(), "float": pa.float64(), "list": pa.list_(pa.string())}
    cols = TABLE_COLUMNS[table]
    arrays = [pa.array([r[i] for r in rows], type=types[t]) for i, (_, t) in enumerate(cols)]
    return pa.Table.from_arrays(arrays, names=[c for c, _ in cols])


def _insert_rows(cur, table: str, source_id: int, rows: list[tuple]) -> None:
    if not rows:
        return
    arrow = _arrow_table(table, rows)
    names = ", ".join(c for c, _ in TABLE_COLUMNS[table])
    cur.register("_incoming", arrow)
    try:
        cur.execute(f"INSERT INTO {table} (source_id, {names}{derived_names(table)}) "
                    f"SELECT $sid, {names}{derived_values(table)} FROM _incoming", {"sid": source_id})
    finally:
        cur.unregister("_incoming")


class FastPathRefused(Exception):
    """DuckDB cannot read this file in one statement (``insert_fast``): the line reader reads it instead."""

    def __init__(self, item: ImportFile, reason: str):
        super().__init__(reason)
        self.item = item


# DuckDB reads a file name as a pattern: "[x]_single.jsonl" reads x_single.jsonl, "*_single.jsonl" every
# sibling, "~" is the home folder. The fast path therefore never hands DuckDB a user's file name: it reads a
# link of a fixed, pattern-free name in a private temporary folder, pointing at the file.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_./-]+")


@contextmanager
def _pattern_free_name(path: Path) -> Iterator[str | None]:
    """A name for ``path`` that DuckDB cannot expand (a link in a private temp folder), or None if the
    system allows no link there (the caller then reads the file line by line)."""
    with tempfile.TemporaryDirectory(prefix="judgelens-read-") as tmp:
        link = Path(tmp) / "input.jsonl"
        if not _PLAIN_PATH.fullmatch(str(link)):  # a temp folder whose own name holds pattern characters
            yield None
            return
        target = path.resolve()
        for make in (os.symlink, os.link):
            try:
                make(target, link)
                break
            except (OSError, NotImplementedError):
                continue
        else:
            yield None
            return
        yield str(link)


def insert_fast(cur, item: ImportFile, source_id: int) -> int:
    """Insert the file's judgments in one statement that DuckDB parses in parallel; the same pass marks rationales
    and prompts for the search index (``search_index.mark_expression``: half the cost of marking them after)."""
    names = ", ".join(c for c, _ in TABLE_COLUMNS["single_judgments"])
    select = item.reader.fast_select(MAX_LINE_BYTES + 1024)
    sql = (f"INSERT INTO single_judgments (source_id, {names}, rationale_norm, prompt_norm"
           f"{derived_names('single_judgments')}) "
           f"SELECT $sid, {names.replace('parse_status', 'CASE WHEN bad THEN NULL ELSE parse_status END')}, "
           f"{search_index.mark_expression('rationale')}, {search_index.mark_expression('judge_prompt')}"
           f"{derived_values('single_judgments')} "
           f"FROM ({select.replace('?::VARCHAR', '$bench').replace('read_ndjson(?', 'read_ndjson($path')})")
    with _pattern_free_name(item.path) as name:
        if name is None:
            raise FastPathRefused(item, "no pattern-free name for DuckDB")
        try:
            with search_index.marker(cur):  # INSERT returns the number of rows it wrote
                return cur.execute(sql, {"sid": source_id, "bench": item.bench or "unknown_bench",
                                         "path": name}).fetchone()[0]
        except INPUT_ERRORS as exc:  # NOT NULL violated by a row flagged bad, malformed JSON, …: line by line
            raise FastPathRefused(item, str(exc)) from exc
        # anything else (out of memory, disk full, a DuckLake commit conflict) says nothing about the file's
        # lines: it goes up as it is (_write makes a resource error a titled one), never to the line reader


# What DuckDB raises on input the fast select cannot express (tests/ingest/test_ingest_fastchat.py): a row it flags
# bad violates NOT NULL; malformed JSON, invalid UTF-8, a line that is not an object are invalid input.
INPUT_ERRORS = (duckdb.ConstraintException, duckdb.InvalidInputException, duckdb.ConversionException,
                duckdb.OutOfRangeException)


def _write(store: Store, items: list[ImportFile], skip_bad_lines: bool, progress: Progress,
           known: dict | None = None) -> None:
    todo = [i for i in items if i.status == "pending"]

    def write(cur) -> None:
        if any(i.status != "pending" for i in todo):  # a DuckLake re-run after a commit conflict: start over
            _reset(todo, known or {})
        _write_items(store, cur, todo, progress)

    limit = resources.import_memory_limit(*_limit_inputs(store, todo))
    try:
        store.transaction(write, memory_limit=limit)
    except duckdb.Error as exc:  # rolled back: nothing of the import was written
        kind = resources.resource_kind(exc)
        if kind is None:
            raise
        pending = [i.display for i in todo if i.status == "pending"][:1]  # the file being written, else all of them
        raise resources.resource_error(kind, pending or [i.display for i in todo],
                                       None if store.lake else store.path.parent, limit) from exc


def _limit_inputs(store: Store, todo: list[ImportFile]) -> tuple[int | None, int]:
    """What ``resources.import_memory_limit`` scales a file store's limit by: the bytes of the files this import
    writes and DuckDB's threads (None for a DuckLake store, which keeps the default)."""
    if store.lake:
        return None, 1
    with store.read() as cur:
        threads = int(cur.execute("SELECT current_setting('threads')").fetchone()[0])
    return sum(i.size for i in todo), threads


def _reset(items: list[ImportFile], known: dict) -> None:
    """Forget what a rolled-back write transaction decided about these files."""
    for other in items:
        # also undo "unchanged" verdicts that pointed at a source the rolled-back transaction made
        # (the same bytes given twice in one import)
        if other.status == "imported" or (other.status == "unchanged"
                                          and other.existing_source not in known.values()):
            other.status, other.source_id, other.rows = "pending", None, 0
            other.existing_source = None
            other.warnings = [w for w in other.warnings  # notes _write_items adds: it will add them again
                              if not (_is_judgment_note(w) or (other.fast and w == BLANK_NOTE))]


def _write_items(store: Store, cur, todo: list[ImportFile], progress: Progress) -> None:
    for n, item in enumerate(todo):
        progress(0.5 + 0.45 * n / max(len(todo), 1), f"writing {item.display}")
        inserted = None  # (source_id, rows) of a file inserted while its hash was computed (hash_later)
        if item.hashing is not None:
            source_id = store.next_id(cur, "sources")
            inserted = source_id, insert_fast(cur, item, source_id)
            item.await_hash()
        existing = stored_source(cur, item)  # checked again under the write lock: another session may have won
        if existing is not None:
            if inserted:  # another session or process imported the same bytes meanwhile
                cur.execute("DELETE FROM single_judgments WHERE source_id = ?", [inserted[0]])
            item.status, item.existing_source = "unchanged", existing
            continue
        skipped = [{"line": p.line, "reason": p.reason} for p in item.skipped]
        source_id = inserted[0] if inserted else store.next_id(cur, "sources")
        rules = H.get(item.harness)
        cur.execute(
            "INSERT INTO sources (source_id, sha256, path, file_name, harness, kind, bench, bytes, rows_imported, "
            "rows_skipped, warnings, skipped_lines, scale_min, scale_max, failure_code) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?)",
            [source_id, item.sha256, str(item.path), item.path.name, item.harness, item.kind, item.bench,
             item.size, len(item.skipped), [], json.dumps(skipped) if skipped else None,
             *rules.scale_for(item.bench), rules.failure_code])
        if item.fast:
            rows = inserted[1] if inserted else insert_fast(cur, item, source_id)
            if rows == 0:  # the fast path takes only non-empty files: this one holds only blank lines
                item.warnings.append(BLANK_NOTE)
        else:
            for table, parsed in item.tables.items():
                _insert_rows(cur, table, source_id, parsed.rows)
            main = next(iter(item.tables.values()), None)
            rows = main.lines_read - len(item.skipped) if main else 0
        if "single_judgments" in item.table_names:
            item.warnings.extend(judgment_notes(cur, source_id))
        cur.execute("UPDATE sources SET rows_imported = ?, warnings = ? WHERE source_id = ?",
                    [rows, item.warnings, source_id])
        item.rows, item.source_id, item.status = rows, source_id, "imported"
    _question_set_notes(cur, [i for i in todo if i.status == "imported" and "questions" in i.table_names])
    # Judgments and questions feed the per-item table (questions give judged items their category).
    refresh_item_scores(cur, [i.bench for i in todo if i.status == "imported"
                              and SCORED_TABLES.intersection(i.table_names)],
                        marked=[i.source_id for i in todo if i.status == "imported" and i.fast])


def stored_source(cur, item: ImportFile) -> int | None:
    """The source that already holds the file's bytes (bench and kind alike), asked under the write lock, whatever
    key it was stored under: ``content_key``, or sha256 for a source a JudgeLens from before issue 26 wrote, maybe
    since this import read the sources table (e.g. running beside this one). The file is sha256'd here only when
    such a source has its size (``item.legacy_sha256``: once). The other way round (this import commits first) an
    older JudgeLens looks for its sha256 only and lands the file a second time: only keying every file by sha256
    again (the CPU issue 26 took off) or making older versions refuse the store would prevent that."""
    rows = cur.execute(
        "SELECT source_id, sha256 FROM sources WHERE (sha256 = ? OR (bytes = ? AND NOT starts_with(sha256, ?))) "
        "AND bench IS NOT DISTINCT FROM ? AND kind = ? ORDER BY source_id",
        [item.sha256, item.size, CONTENT_KEY_PREFIX, item.bench, item.kind]).fetchall()
    if any(key != item.sha256 for _, key in rows) and not item.legacy_sha256:
        item.legacy_sha256 = sha256_of(item.path)[0]
    return next((sid for sid, key in rows if key in (item.sha256, item.legacy_sha256)), None)


def _question_set_notes(cur, items: list[ImportFile]) -> None:
    """Two question files of one bench that disagree are named, with the number of question ids whose text
    differs (issue 22: Stability's question.jsonl and question_full.jsonl). Which text pages show does not depend
    on this (``current_questions``: the judges' prompts, else the harness's own question file)."""
    for item in items:
        rows = cur.execute(
            """SELECT s.path, o.question_set, count(*) AS shared,
                      count(*) FILTER (WHERE o.turns <> m.turns) AS differ
               FROM questions m JOIN question_sets o ON o.bench = m.bench AND o.question_id = m.question_id
               JOIN sources s ON s.source_id = o.source_id
               WHERE m.source_id = $s AND o.source_id <> $s
               GROUP BY s.path, o.source_id, o.question_set ORDER BY o.source_id""", {"s": item.source_id}).fetchall()
        shown = H.get(item.harness).question_file
        for path, other_set, shared, differ in rows:
            if not differ:
                continue
            rule = (f"{H.get(item.harness).title} reads {shown} only; " if shown else "") + (
                "pages show the text the judges' prompts hold, else the harness's own question file")
            note = (f"this question file and {path} (bench {item.bench}) disagree on {differ} of {shared} shared "
                    f"question id(s); {rule}")
            item.warnings.append(note)
        if rows:
            cur.execute("UPDATE sources SET warnings = ? WHERE source_id = ?", [item.warnings, item.source_id])


# tables whose rows change item_scores (questions give judged items their category)
SCORED_TABLES = frozenset({"single_judgments", "pair_judgments", "questions"})


def judgment_notes(cur, source_id: int) -> list[str]:
    """Facts about a judgment file a user should see: duplicates and parse failures."""
    dup, failed = cur.execute(
        f"""SELECT (SELECT count(*) FROM (SELECT 1 FROM single_judgments WHERE source_id = $s
                   AND {H.sql_is("harness", H.where(appends_reruns=True))}
                   GROUP BY bench, judge, model, question_id, turn HAVING count(*) > 1)),
                  (SELECT count(*) FROM single_judgments WHERE source_id = $s AND parse_status <> 'ok')""",
        {"s": source_id}).fetchone()
    notes = []
    if dup:
        notes.append(f"{dup} item(s) are judged more than once: all rows are kept and means average them per item")
    if failed:
        notes.append(f"{failed} judgment(s) have no usable score (rating not parsed, API error or out of range); "
                     "they are kept and left out of means")
    return notes


def ingest(store: Store, paths: Iterable[str | Path], *, skip_bad_lines: bool = False,
           progress: Progress | None = None, allowed_roots: list[Path] | None = None) -> IngestReport:
    """Import files and folders. Raises IngestError (nothing written) on any bad line unless skipping.

    ``allowed_roots``: refuse (PathNotAllowed) files that resolve outside these folders (the app's rule).
    """
    progress = progress or (lambda f, m: None)
    paths, human_items = _human_files(list(paths), allowed_roots)  # verdict exports, MT-Bench human judgments
    not_read: list[tuple[str, str]] = []
    try:  # first: git-LFS pointers and links out of the import folders refuse the import before anything is parsed
        items = discover(paths, allowed_roots, not_read=not_read, taken=[h.path for h in human_items]) if paths else []
    except PathNotAllowed:
        raise
    except FormatError:
        if not human_items:
            raise
        items = []
    _read_human(human_items)  # their bad records refuse the import before any file of it is written
    if not items:
        _import_human(store, human_items)
        progress(1.0, "done")
        return IngestReport(human_items, not_read)
    with store.read() as cur:
        known = {(s, b, k): i for i, s, b, k in cur.execute("SELECT source_id, sha256, bench, kind FROM sources").fetchall()}
        known_sizes = {b for (b,) in cur.execute("SELECT DISTINCT bytes FROM sources").fetchall()}
        legacy_sizes = legacy_key_sizes(cur)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="judgelens-hash") as hasher:
        report = _ingest_items(store, items, human_items, known,
                               hash_later(items, known_sizes, hasher, legacy_sizes),
                               skip_bad_lines, progress)
    report.not_read = not_read
    return report


def _fast_path_problems(items: list[ImportFile], store: Store) -> list[LineProblem]:
    """The bad lines of the files still waiting for the fast path, read line by line now (the import is refused
    anyway): a refusal lists every problem of every file."""
    found: list[LineProblem] = []
    for other in items:
        if other.fast and other.status == "pending":
            other.fast = False
            other.await_hash()
            try:
                read_item(other, items, store)
            except FormatError as exc:
                found.append(LineProblem(other.display, 0, exc.message.removeprefix(f"{other.display}: ")))
                continue
            found += _problems(other)
    return found


def legacy_key_sizes(cur) -> set[int]:
    """The sizes of the stored sources whose key is a sha256 (imported before issue 26 made ``content_key`` the
    key): a file of one of these sizes is hashed both ways, so that a store made before still finds it unchanged."""
    return {b for (b,) in cur.execute(
        "SELECT DISTINCT bytes FROM sources WHERE NOT starts_with(sha256, ?) AND bytes IS NOT NULL",
        [CONTENT_KEY_PREFIX]).fetchall()}


def hash_later(items: list[ImportFile], known_sizes: set[int], hasher: ThreadPoolExecutor,
                legacy_sizes: set[int] = frozenset()) -> Callable:
    """``hash_file(item)``: set item.sha256 (its ``content_key``) and size now (and its ``legacy_sha256`` when a source
    imported before issue 26 has its size), or, for a file the fast path will read whose size no
    stored source and no other file of this import has (so its hash cannot match one: it will be imported), start
    the hash in ``hasher`` and let DuckDB insert the file meanwhile (``_write_items`` waits for it before recording
    the source). hashlib and DuckDB both release the GIL, so the hash (a tenth of an import of 100k judgments)
    runs beside DuckDB's threads instead of before them."""
    sizes: dict[int, int] = {}
    for item in items:
        item.size = item.path.stat().st_size
        sizes[item.size] = sizes.get(item.size, 0) + 1

    def hash_file(item: ImportFile) -> None:
        if item.size not in known_sizes and sizes[item.size] == 1 and _use_fast_path(item):
            item.hashing = hasher.submit(content_key, item.path)
        else:
            item.sha256, item.size = content_key(item.path)
            if item.size in legacy_sizes:
                item.legacy_sha256 = sha256_of(item.path)[0]
    return hash_file


def _ingest_items(store: Store, items: list[ImportFile], human_items: list[ImportFile], known: dict,
                  hash_file: Callable, skip_bad_lines: bool, progress: Progress) -> IngestReport:
    problems: list[LineProblem] = []
    for n, item in enumerate(items):
        progress(0.5 * n / len(items), f"reading {item.display}")
        hash_file(item)
        if item.hashing is not None:  # see hash_later: a new file the fast path reads
            item.fast = True
            continue
        try:
            if item.kind in item.reader.bench_after_read:
                read_item(item, items, store)  # the bench comes from the content (Swallow: the results' task names)
            existing = known.get((item.sha256, item.bench, item.kind))
            if existing is None and item.legacy_sha256:  # imported by a JudgeLens before issue 26
                existing = known.get((item.legacy_sha256, item.bench, item.kind))
            if existing is not None:
                item.status, item.existing_source = "unchanged", existing
                continue
            if _use_fast_path(item):
                item.fast = True
                continue
            if not item.tables:
                read_item(item, items, store)
        except FormatError as exc:
            if not skip_bad_lines:
                problems.append(LineProblem(item.display, 0, exc.message.removeprefix(f"{item.display}: ")))
            else:
                item.status = "refused"
                item.warnings.append(exc.message.removeprefix(f"{item.display}: "))
            continue
        file_problems = _problems(item)
        if file_problems:
            if skip_bad_lines:
                _skip(item, file_problems)
            else:
                problems.extend(file_problems)
    if problems:  # refused: list the bad lines of the files left to the fast path too, not only of the others
        raise IngestError(problems + _fast_path_problems(items, store))
    while True:
        try:
            _write(store, items, skip_bad_lines, progress, known)
            break
        except FastPathRefused as refused:
            item = refused.item  # the transaction rolled back: read this file line by line and try again
            item.fast = False
            item.await_hash()
            _reset(items, known)
            read_item(item, items, store)
            file_problems = _problems(item)
            if not file_problems:
                continue  # the line-by-line reader accepts it: import its rows instead
            if not skip_bad_lines:  # list the bad lines of every file, not only of the first one refused
                raise IngestError(file_problems + _fast_path_problems(items, store))
            _skip(item, file_problems)
    if any(i.status == "imported" for i in items):
        progress(0.97, "linking benches and model names")
        relink(store, questions_changed=any(i.status == "imported" and "questions" in i.table_names
                                            for i in items))
    _import_human(store, human_items)
    progress(1.0, "done")
    return IngestReport(items + human_items)


def _human_files(paths: list, allowed_roots: list[Path] | None = None) -> tuple[list, list[ImportFile]]:
    """Split off the files of human judges (lib.ingest.formats.human, recognised by their first record): given
    files, and files in given folders that no harness format claims. Returns (the other paths, the human files).
    A file that resolves outside ``allowed_roots`` stays with the other paths, where discover() refuses it."""
    roots = [Path(r).resolve() for r in allowed_roots] if allowed_roots is not None else None
    rest, found = [], []
    for given in paths:
        root = Path(given).expanduser()
        if roots is not None and root.exists() and not _inside(root.resolve(), roots):
            rest.append(given)
            continue
        if root.is_file():
            own = registry.claim(root, True, separate=True)
            if own:
                found.append(ImportFile(root, str(root), own.reader.harness, own.kind, None, None, reader=own.reader))
            else:
                rest.append(given)
            continue
        rest.append(given)
        if root.is_dir():
            for path in sorted(root.rglob("*.json*")):
                if path.suffix not in (".jsonl", ".json") or any(p.startswith(".") for p in path.relative_to(root).parts):
                    continue
                if roots is not None and not _inside(path.resolve(), roots):
                    continue  # discover() refuses the folder, naming this link
                own = registry.claim(path, False)  # a file no table reader claims by name, a human one by content
                if own and own.reader.separate:
                    found.append(ImportFile(path, _display(path, root), own.reader.harness, own.kind, None, None,
                                            reader=own.reader))
    return rest, found


def _read_human(items: list[ImportFile]) -> None:
    """Read every human file (verdict exports, human pairwise judgments) now: FormatError / IngestError listing the
    bad records of all of them, before anything of the import is written."""
    problems: list[LineProblem] = []
    for item in items:
        try:
            if item.kind == "verdicts":
                item.records = human.read_verdicts(item.path, item.display)
            else:
                item.records = human.read_pair_votes(item.path, item.display, human.pair_bench(item.path))
        except IngestError as exc:
            problems += exc.problems
    if problems:
        raise IngestError(problems, hint=human.VERDICT_HINT)


def _import_human(store: Store, items: list[ImportFile]) -> None:
    for item in items:
        source_id, added, present, new, notes = _import_human_file(store, item.path, item.kind, item.display,
                                                                   item.records)
        item.rows = added
        if new:
            item.status, item.source_id = "imported", source_id
            item.kind = "human_verdicts" if item.kind == "verdicts" else "human_pair_votes"
            item.warnings.extend(n for n in notes if "already in the store" not in n)
            if present:
                item.warnings.append(f"{present} record(s) were already in the store")
        else:
            item.status, item.existing_source = "unchanged", source_id


def _import_human_file(store: Store, path: Path, kind: str, display: str,
                       read: list[dict] | None = None) -> tuple[int, int, int, bool, list[str]]:
    """Import a verdict export (kind 'verdicts') or a human pairwise judgment file ('human_pairs') in one
    transaction. Returns (source_id, rows added, rows already present, new source?, notes): the same bytes imported
    before change nothing; a verdict already in the store (same fields) is not added again. A verdict on a turn or
    sample its stored item does not have refuses the file (every such line listed); one on an item the store does
    not hold is kept and named in a note (``lib.store.verdict_item_problems``)."""
    data = path.read_bytes()  # verdict files are small
    sha, size = hashlib.sha256(data).hexdigest(), len(data)
    if kind == "verdicts":
        rows, bench = read if read is not None else human.read_verdicts(path, display), None
    else:
        bench = human.pair_bench(path)
        rows = read if read is not None else human.read_pair_votes(path, display, bench)
    source_kind = "human_verdicts" if kind == "verdicts" else "human_pair_votes"

    def write(cur):  # Store.transaction: may run again on a DuckLake store
        existing = cur.execute("SELECT source_id FROM sources WHERE sha256 = ? AND kind = ?",
                               [sha, source_kind]).fetchone()
        if existing:
            return existing[0], 0, len(rows), False, []
        sid = store.next_id(cur, "sources")
        cur.execute(
            "INSERT INTO sources (source_id, sha256, path, file_name, harness, kind, bench, bytes, rows_imported, "
            "warnings) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, [])",
            [sid, sha, str(path), path.name, H.HUMAN.name, source_kind, bench, size])
        notes = []
        if kind == "verdicts":
            refused, unknown = verdict_item_problems(cur, rows)
            if refused:
                raise IngestError([LineProblem(display, rows[i]["line"], f"not a JudgeLens verdict ({why})")
                                   for i, why in sorted(refused.items())], hint=human.VERDICT_HINT)
            if unknown:
                shown = "; ".join(f"line {rows[i]['line']}: {why}" for i, why in sorted(unknown.items())[:10])
                more = len(unknown) - 10
                notes.append(f"{len(unknown)} verdict(s) are on items this store does not hold ({shown}"
                             + (f"; and {more} more" if more > 0 else "") + "): they are kept and count once the "
                             "items are imported")
            added = insert_verdicts(cur, rows, sid)
            refresh_human_scores(cur, {r["bench"] for r in rows})
        else:
            import pyarrow as pa

            cur.register("_votes_in", pa.Table.from_pylist(rows))
            try:
                added = cur.execute("""INSERT INTO human_pair_votes (source_id, bench, question_id, turn, model_a,
                                       model_b, winner, judge, judge_type)
                                       SELECT $sid, bench, question_id, turn, model_a, model_b, winner, judge,
                                              judge_type FROM _votes_in""", {"sid": sid}).fetchone()[0]
            finally:
                cur.unregister("_votes_in")
        if len(rows) > added:
            notes.append(f"{len(rows) - added} verdict(s) were already in the store")
        cur.execute("UPDATE sources SET rows_imported = ?, warnings = ? WHERE source_id = ?", [added, notes, sid])
        return sid, added, len(rows) - added, True, notes

    return store.transaction(write)


def relink(store: Store, questions_changed: bool = True) -> None:
    """After an import or a removal: link the same question across benches and alias the same model's names
    (automatic links and aliases only; the user's own are kept). See lib.analysis.linking / aliases."""
    from lib.analysis import aliases, linking

    if questions_changed:
        linking.auto_link_all(store)
    aliases.auto_alias(store)


def _is_judgment_note(text: str) -> bool:
    return "judged more than once" in text or "no usable score" in text or "shared question id(s)" in text


def remove_source(store: Store, source_id: int) -> bool:
    """Delete one source and everything imported from it. Returns False if there is no such source."""
    def remove(cur) -> bool:
        if not cur.execute("SELECT 1 FROM sources WHERE source_id = ?", [source_id]).fetchone():
            return False
        benches = [r[0] for r in cur.execute(
            "SELECT DISTINCT bench FROM single_judgments WHERE source_id = $s "
            "UNION SELECT DISTINCT bench FROM questions WHERE source_id = $s", {"s": source_id}).fetchall()]
        # rejudgments / generation_*: what produced a 'rejudge' source's verdicts or a 'generate' source's answers
        for table in [*DATA_TABLES, "rejudgments", "generation_runs", "generations"]:
            cur.execute(f"DELETE FROM {table} WHERE source_id = ?", [source_id])
        cur.execute("DELETE FROM sources WHERE source_id = ?", [source_id])
        refresh_item_scores(cur, benches)
        return True

    if not store.transaction(remove):
        return False
    relink(store)
    return True
