"""The single DuckDB file: where it is, the checks before DuckDB sees it, this process's one gate to it
(``FileGate``: read-only unless a write needs it, closed when idle, waiting while another process holds it), and
the messages when it cannot be opened (damaged, read-only, busy)."""
from __future__ import annotations

import atexit
import os
import re
import threading
import time
from pathlib import Path

import duckdb

from lib.errors import DatabaseBusyError, DatabaseFileError
from lib.paths import DATA_DIR

DEFAULT_DB = DATA_DIR / "judgelens.duckdb"

_LOCK_PID = re.compile(r"\(PID (\d+)\)")


def default_db_path() -> Path:
    """The store the app and CLI use unless told otherwise (``JUDGELENS_DB`` overrides)."""
    return Path(os.environ.get("JUDGELENS_DB") or DEFAULT_DB)


# Every connection: DuckDB never installs or loads an extension by itself (opening a SQLite file, or a query
# naming an unknown function, would otherwise fetch one from the internet). The app reaches no network but
# the judge endpoint.
CONNECT_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


def _connect(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Connect with CONNECT_CONFIG. DuckDB lets one process hold a file only under one configuration: if this
    process already holds it read-write (a read-only open) or with DuckDB's defaults, join that instead (a
    read-only Store then runs no DDL all the same). Every connection ends with extension loading off."""
    attempts = [{"read_only": read_only, "config": dict(CONNECT_CONFIG)}]
    if read_only:
        attempts.append({"read_only": False, "config": dict(CONNECT_CONFIG)})
    attempts.append({"read_only": False})
    for n, kwargs in enumerate(attempts, 1):
        try:
            con = duckdb.connect(str(path), **kwargs)
        except duckdb.ConnectionException as exc:
            if "different configuration" in str(exc) and n < len(attempts):
                continue
            raise
        for name in CONNECT_CONFIG:
            con.execute(f"SET {name} = false")
        return con
    raise AssertionError("unreachable")


IDLE_CLOSE_S = 0.5  # an idle connection is closed after this long, so other processes can write the file
# ... unless it is read-only and no JudgeLens writer waits for the file (``writer_waiting``): then it is kept up to
# IDLE_KEEP_S. Reopening cost every click after a pause its reopen (0.16 s at 1M judgments) and DuckDB's buffer cache
# (a query then read its blocks again: 0.1 -> 0.4 s). A waiting writer says so in a marker file next to the database,
# checked every IDLE_CLOSE_S, so it still gets in within about half a second.
IDLE_KEEP_S = 10.0
WRITER_MARK_FRESH_S = 5.0  # a marker older than this is a writer that died waiting: ignored


def writer_mark(path: Path) -> Path:
    """The file a process waiting to write ``path`` keeps fresh (``<db>.writer-waiting``)."""
    return Path(str(path) + ".writer-waiting")


def _touch(mark: Path) -> bool:
    try:
        mark.touch()
        return True
    except OSError:  # a folder this process cannot write: readers then close after IDLE_KEEP_S
        return False


def writer_waiting(path: Path) -> bool:
    """Another process waits to write ``path``: its marker is there and fresh."""
    try:
        return time.time() - writer_mark(path).stat().st_mtime < WRITER_MARK_FRESH_S
    except OSError:
        return False


_LOCKED = re.compile(r"Could not set lock|Conflicting lock", re.I)


def busy_wait() -> float:
    """How long a read or write waits while another process uses the DuckDB file (``JUDGELENS_BUSY_WAIT``
    seconds, default 300)."""
    try:
        return max(0.0, float(os.environ.get("JUDGELENS_BUSY_WAIT", "300")))
    except ValueError:
        return 300.0


class FileGate:
    """This process's use of one DuckDB file: at most one connection, read-only unless a write needs it
    read-write, closed when nothing has used it for IDLE_CLOSE_S (a read-only one: once a writer waits, see
    IDLE_KEEP_S). Readers of this process share the open
    connection (a cursor each); a writer waits until this process's readers of a read-only connection are done
    (new readers wait behind it), reopens read-write and keeps it for the transaction. Opening waits, retrying,
    while another process holds a lock that conflicts (``wait`` seconds at most), and tells ``notify`` once."""

    _gates: dict[str, "FileGate"] = {}
    _gates_lock = threading.Lock()

    @classmethod
    def of(cls, path: Path) -> "FileGate":
        key = os.path.realpath(path)
        with cls._gates_lock:
            gate = cls._gates.get(key)
            if gate is None:
                gate = cls._gates[key] = cls(path)
            gate.stores += 1
            return gate

    def __init__(self, path: Path):
        self.path = path
        self.cond = threading.Condition()
        self.con: duckdb.DuckDBPyConnection | None = None
        self.writable = False
        self.users = 0          # cursors handed out and not yet returned
        self.writers_waiting = 0
        self.writing = False
        self.stores = 0         # Store objects using this gate
        self.last_used = 0.0
        self.timer_pending = False
        self.local = threading.local()

    def _depth(self) -> int:
        return getattr(self.local, "depth", 0)

    def _open(self, writable: bool, notify, wait: float | None) -> duckdb.DuckDBPyConnection:
        wait = busy_wait() if wait is None else wait
        deadline = time.monotonic() + wait
        delay, told, marked = 0.02, False, False
        try:
            while True:
                try:
                    return _connect(self.path, not writable)
                except duckdb.Error as exc:
                    text = str(exc)
                    if not _LOCKED.search(text):
                        raise open_error(self.path, exc) from exc
                    if time.monotonic() >= deadline:
                        raise busy_error(self.path, exc, waited=wait) from exc
                    if writable:  # readers keeping the file open while idle close it for us (``writer_waiting``)
                        marked = _touch(writer_mark(self.path)) or marked
                    if notify is not None and not told:
                        pid = _LOCK_PID.search(text)
                        who = f"process {pid.group(1)}" if pid else "another process"
                        what = "write to" if writable else "read"
                        notify(f"Waiting for {who} (a JudgeLens app or CLI) to finish with {self.path} before this "
                               f"command can {what} it; at most {wait:.0f} s (JUDGELENS_BUSY_WAIT)…")
                        told = True
                time.sleep(delay)
                delay = min(delay * 2, 0.5)
        finally:
            if marked:
                writer_mark(self.path).unlink(missing_ok=True)

    def acquire(self, writable: bool, notify=None, wait: float | None = None) -> duckdb.DuckDBPyConnection:
        with self.cond:
            depth = self._depth()
            if writable:
                if depth and not (self.con is not None and self.writable):
                    raise RuntimeError(f"A write to {self.path} started while this thread reads it read-only; "
                                       "finish the read first.")
                self.writers_waiting += 1
                try:
                    while self.writing or (self.users and not self.writable):
                        self.cond.wait()
                finally:
                    self.writers_waiting -= 1
                self.writing = True
                try:
                    if self.con is not None and not self.writable:
                        self._close()
                    if self.con is None:
                        self.con, self.writable = self._open(True, notify, wait), True
                except BaseException:
                    self.writing = False
                    self.cond.notify_all()
                    raise
            else:
                while depth == 0 and self.writers_waiting and not (self.con is not None and self.writable):
                    self.cond.wait()
                if self.con is None:
                    self.con, self.writable = self._open(False, notify, wait), False
            self.users += 1
            self.local.depth = depth + 1
            try:
                return self.con.cursor()
            except BaseException:
                self._release(writable)
                raise

    def release(self, writable: bool) -> None:
        with self.cond:
            self._release(writable)

    def _release(self, writable: bool) -> None:
        self.users -= 1
        self.local.depth = self._depth() - 1
        if writable:
            self.writing = False
        self.cond.notify_all()
        self.last_used = time.monotonic()
        if self.users == 0 and not self.writers_waiting and self.con is not None and not self.timer_pending:
            self._start_timer(IDLE_CLOSE_S)

    def _start_timer(self, seconds: float) -> None:
        self.timer_pending = True
        timer = threading.Timer(seconds, self._close_if_idle)
        timer.daemon = True
        timer.start()

    def _close_if_idle(self) -> None:
        with self.cond:
            self.timer_pending = False
            if self.con is None or self.users or self.writing:
                return
            idle = time.monotonic() - self.last_used
            if idle < IDLE_CLOSE_S:
                self._start_timer(IDLE_CLOSE_S - idle)
            elif self.writable or idle >= IDLE_KEEP_S or writer_waiting(self.path):
                self._close()
            else:  # read-only and nobody waits to write: keep DuckDB's caches, look again shortly
                self._start_timer(min(IDLE_CLOSE_S, IDLE_KEEP_S - idle))

    def _close(self) -> None:
        if self.con is not None:
            con, self.con = self.con, None
            con.close()  # a read-write connection checkpoints its WAL into the file here

    @classmethod
    def close_all(cls) -> None:
        """At exit: close every idle connection, so a read-write one checkpoints its WAL into the file (the file
        alone then holds everything; a copy of it is complete)."""
        with cls._gates_lock:
            gates = list(cls._gates.values())
        for gate in gates:
            with gate.cond:
                if gate.users == 0:
                    gate._close()

    def close_store(self) -> None:
        with FileGate._gates_lock:
            self.stores -= 1
            if self.stores > 0:
                return
            FileGate._gates.pop(os.path.realpath(self.path), None)
        with self.cond:
            if self.users == 0:
                self._close()


atexit.register(FileGate.close_all)


CORRUPT = re.compile(r"Corrupt database file|Could not read enough bytes|not a valid DuckDB database|"
                      r"database file .* is not a valid|Failed to deserialize|checksum", re.I)
_DENIED = re.compile(r"Permission denied|Read-only file system|Operation not permitted", re.I)
SQLITE_MAGIC = b"SQLite format 3\x00"
DUCKDB_MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB database file


def check_database_file(path: Path, read_only: bool = False) -> None:
    """Refuse, before DuckDB sees it, a --db file that is not a DuckDB database (DuckDB would open a SQLite
    file through its sqlite extension and write JudgeLens tables into it) or, read-only, one that is missing."""
    if not path.exists():
        if read_only:
            raise DatabaseFileError(
                f"There is no JudgeLens database at {path} yet. Import something into it first (python -m lib.cli "
                f"ingest PATH --db {path}), or point --db (or JUDGELENS_DB) at an existing one.",
                title="No database yet")
        return
    if path.is_dir():
        raise DatabaseFileError(f"{path} is a folder. Give --db (or JUDGELENS_DB) a database file, e.g. "
                                f"{path / 'judgelens.duckdb'}.")
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise DatabaseFileError(f"Cannot read the database {path}: {exc.strerror}. Check the file's permissions, "
                                "or use --db (or JUDGELENS_DB) with another file.") from None
    if not head:
        return  # an empty file: DuckDB makes a new database in it
    if head.startswith(SQLITE_MAGIC):
        raise DatabaseFileError(
            f"{path} is a SQLite database, not a DuckDB file. JudgeLens keeps its data in DuckDB and leaves this "
            "file alone: give --db (or JUDGELENS_DB) a new file name such as judgelens.duckdb and import your "
            "harness files into it.", title="Not a JudgeLens database")
    if head[8:12] != DUCKDB_MAGIC:
        raise DatabaseFileError(
            f"{path} is not a DuckDB database file (it does not start like one). JudgeLens leaves it alone: give "
            "--db (or JUDGELENS_DB) a new file name such as judgelens.duckdb, or an existing JudgeLens database.",
            title="Not a JudgeLens database")


def damaged_error(path: Path, exc: Exception) -> DatabaseFileError:
    reason = str(exc).removeprefix("IO Error: ").split("\n")[0]
    return DatabaseFileError(
        f"The database {path} is damaged: {reason}. It was probably cut short (a full disk, a copy that did not "
        "finish) or changed by another program. Restore it from a backup, or move it aside and import your "
        "harness files into a new one (python -m lib.cli ingest PATH --db NEW_FILE).",
        title="The database file is damaged")


def open_error(path: Path, exc: Exception) -> DatabaseFileError | DatabaseBusyError:
    """What went wrong opening ``path``, in words a user can act on."""
    text = str(exc)
    if CORRUPT.search(text):
        return damaged_error(path, exc)
    if _DENIED.search(text):
        if path.exists() and os.access(path, os.R_OK):
            return DatabaseFileError(
                f"JudgeLens can read the database {path} but not write to it (DuckDB writes the file and a "
                f"{path.name}.wal file next to it, and the system said: permission denied). Reading commands "
                "(sources, scores, agreement, flags, report) work on it as it is; to import or re-judge, copy it "
                "to a folder you can write to and use --db with the copy.", title="The database is read-only")
        return DatabaseFileError(f"Cannot open the database {path}: permission denied. Check the file's and its "
                                 "folder's permissions, or use --db (or JUDGELENS_DB) with another file.")
    return busy_error(path, exc)


def busy_error(path: Path, exc: Exception, waited: float | None = None) -> DatabaseBusyError:
    text = str(exc)
    pid = _LOCK_PID.search(text)
    who = f" (process {pid.group(1)})" if pid else ""
    if "lock" not in text.lower():
        return DatabaseBusyError(f"Could not open the database {path}: {text}", title="Could not open the database")
    if waited is not None:
        return DatabaseBusyError(
            f"The database {path} stayed in use by another JudgeLens app or CLI{who} for {waited:.0f} s (a long "
            "import or re-judge writes it for as long as it runs); nothing was changed here. Try again when it "
            "is done, wait longer (JUDGELENS_BUSY_WAIT=SECONDS), or use another file (--db FILE).")
    return DatabaseBusyError(
        f"The database {path} is open in another JudgeLens app or CLI{who}. DuckDB lets only one "
        "process use a database file at a time. Close the other process and try again, or use "
        "another file (--db FILE, or the JUDGELENS_DB environment variable)."
    )
