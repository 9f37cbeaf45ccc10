"""The Store: one open store (a DuckDB file or a DuckLake store), its readers, its single writer and transactions,
new ids, the data clock, and ``frame`` (one read query as a DataFrame). See ``lib.store`` for the whole."""
from __future__ import annotations

import functools
import os
import threading
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, TypeVar

import duckdb

if TYPE_CHECKING:
    import pandas as pd

from lib.errors import DatabaseBusyError, DatabaseFileError, JudgeLensError, redact
from lib.store import claims
from lib.store.files import CONNECT_CONFIG, CORRUPT, FileGate, check_database_file, damaged_error, open_error
from lib.store.lake import (COMMIT_ATTEMPTS, ID_COLUMNS, LAKE_ALIAS, LAKE_LAYOUT, apply_lake_layout, attach, attempt,
                            default_data_path, default_store, is_lake, parse_lake, retryable)
from lib.store.schema import (ADDED_COLUMNS, SCHEMA, SCHEMA_VERSION, empty_table_sql, lake_schema, schema_tables,
                              search_index_current, upgrade_answer_features, upgrade_derived, upgrade_search_index)
from lib.store.scores import refresh_item_scores

T = TypeVar("T")

# What ``Store.data_version`` counts: sources (how many, the newest id), analysts' verdicts, judge templates and
# probe runs (how many, the newest id: ids are never reused), so pages may cache template lists and probe runs too.
VERSION_SQL = ("SELECT count(*), coalesce(max(source_id), 0), (SELECT count(*) FROM human_verdicts), "
               "(SELECT count(*) || ':' || coalesce(max(template_id), 0) FROM templates), "
               "(SELECT count(*) || ':' || coalesce(max(run_id), 0) FROM probe_runs){clock} FROM sources")


def row_id_sql(alias: str = "", name: str = "") -> str:
    """The SQL naming one stored row of a table with a ``source_id`` (every imported table): its row id AND its
    source id, the one home of that rule. A row id alone is not enough on a DuckLake store: two rows of a table can
    share one (rows that separate imports wrote inline in the catalog: in the bundled sample's lake 4,320 judgments
    have 2,772 row ids, each once per source); in a DuckDB file each row has its own. ``alias``: the table's alias in
    the query (``"j"``: ``j.rowid, j.source_id``); ``name``: select them as ``name`` and ``name_source`` (for a CTE
    that ``same_row_sql`` joins back to the table)."""
    at = f"{alias}." if alias else ""
    if name:
        return f"{at}rowid AS {name}, {at}source_id AS {name}_source"
    return f"{at}rowid, {at}source_id"


def same_row_sql(alias: str, other: str, name: str) -> str:
    """A join condition: row ``alias`` of a table is the row that ``row_id_sql(..., name)`` named in ``other``."""
    return f"{alias}.rowid = {other}.{name} AND {alias}.source_id = {other}.{name}_source"


class Store:
    """One open store: a DuckDB file (default) or a DuckLake store (``ducklake:sqlite:FILE`` /
    ``ducklake:postgres:CONNINFO``, Parquet data under ``data_path``). Thread-safe: readers use ``read()``
    / ``cursor()``, writers use ``write()`` (or ``transaction()``, which re-runs a DuckLake transaction
    refused at commit).

    ``read_only=True`` (the CLI's reading commands) opens a DuckDB file read-only and runs no DDL, so a store in
    a read-only folder can still be read; the file must already hold a JudgeLens store. (A DuckLake store is
    opened the same way for reading and writing: readers never block writers there.)
    """

    def __init__(self, path: str | os.PathLike | None = None, read_only: bool = False, *,
                 data_path: str | os.PathLike | None = None, notify: Callable[[str], None] | None = None):
        target = path if path is not None else default_store()
        self.lake = is_lake(target)
        self.read_only = read_only
        self.notify = notify
        self._gate: FileGate | None = None
        self._write_lock = threading.Lock()
        self._version: tuple | None = None  # DuckLake: (snapshot id, data_version at that snapshot)
        if self.lake:
            self._open_lake(str(target), data_path if data_path is not None else default_data_path())
            return
        self.data_path = None
        self.path = Path(target)
        self.shown = str(self.path)
        check_database_file(self.path, read_only)
        if not read_only:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DatabaseFileError(f"Cannot create the folder {self.path.parent} for the database: "
                                        f"{exc.strerror}. Use --db (or JUDGELENS_DB) with a writable location.") from None
        self._gate = FileGate.of(self.path)
        try:
            if read_only:
                self._check_schema()
                self._upgrade_for_reading()
            else:
                self._create_schema()
        except BaseException:
            self._gate.close_store()
            raise

    def _check_schema(self) -> None:
        try:
            with self.read() as cur:
                found = cur.execute("SELECT count(*) FROM information_schema.tables WHERE table_name IN "
                                    "('meta', 'sources', 'single_judgments')").fetchone()[0]
        except duckdb.Error as exc:
            raise open_error(self.path, exc) from exc
        if found < 3:
            raise DatabaseFileError(
                f"{self.path} is a DuckDB file but not a JudgeLens store (it has no sources table). Import into "
                f"it first (python -m lib.cli ingest PATH --db {self.path}), or point --db at a JudgeLens "
                "database.", title="Not a JudgeLens database")

    def _missing_columns(self) -> list[tuple[str, str, str]]:
        with self.read() as cur:
            have = set(cur.execute("SELECT table_name, column_name FROM information_schema.columns").fetchall())
        tables = {t for t, _ in have}
        return [(t, c, kind) for t, c, kind in ADDED_COLUMNS if t in tables and (t, c) not in have]

    def _upgrade_for_reading(self) -> None:
        """A store made before a column in ADDED_COLUMNS existed, opened read-only (the CLI's reading commands):
        add the columns (and fill the derived ones: ``upgrade_derived``) once through a short read-write
        connection, then read as asked, so readers never meet an
        older schema. Where the file cannot be written now (a read-only folder, another process using it), it is
        read as it is; only what needs the new columns fails there."""
        if not self._missing_columns():
            return
        try:
            cur = self._gate.acquire(True, wait=0)
        except (JudgeLensError, duckdb.Error, OSError):
            return
        try:
            for table, column, sql_type in ADDED_COLUMNS:
                cur.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {sql_type}")
            upgrade_derived(cur)
        except duckdb.Error:
            pass
        finally:
            cur.close()
            self._gate.release(True)

    def _create_schema(self) -> None:
        with self._write_lock:
            try:
                cur = self._gate.acquire(True, self.notify)
            except duckdb.Error as exc:
                raise open_error(self.path, exc) from exc
            try:
                kind = cur.execute(
                    "SELECT table_type FROM information_schema.tables WHERE table_name = 'item_scores'").fetchone()
                if kind and kind[0] == "VIEW":  # stores made before item_scores became a table
                    cur.execute("DROP VIEW item_scores")
                cur.execute(SCHEMA)
                for table, column, sql_type in ADDED_COLUMNS:  # stores made before the column existed
                    cur.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {sql_type}")
                if upgrade_search_index(cur):
                    cur.execute(SCHEMA)  # views over altered tables (answers_view) bound again
                if kind and kind[0] == "VIEW":
                    refresh_item_scores(cur)
                upgrade_answer_features(cur)
                upgrade_derived(cur)
                cur.execute("INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT DO NOTHING", [SCHEMA_VERSION])
            except duckdb.Error as exc:
                raise open_error(self.path, exc) from exc
            finally:
                cur.close()
                self._gate.release(True)

    # -- DuckLake
    def _open_lake(self, target: str, data_path) -> None:
        catalog, where = parse_lake(target)
        self.path = target  # what identifies the store (cache keys); no file of its own
        self.shown = redact(target)  # what messages and ``store info`` show: no password
        self.catalog, self.catalog_location = catalog, where
        con = attach(catalog, where, data_path, self.shown)
        self.con = con  # DuckLake: the connection every cursor comes from
        self.data_path = self._lake_data_path()

        def create(cur):
            have = {r[0] for r in cur.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = ?", [LAKE_ALIAS]).fetchall()}
            if "meta" in have and "item_scores" in have and "answers_view" in have and schema_tables() <= have:
                columns = set(cur.execute("SELECT table_name, column_name FROM information_schema.columns "
                                          "WHERE table_catalog = ?", [LAKE_ALIAS]).fetchall())
                missing = [a for a in ADDED_COLUMNS if a[:2] not in columns]
                for table, column, sql_type in missing:  # lakes made before the column existed
                    cur.execute(f"ALTER TABLE {table} ADD COLUMN {column} {sql_type}")
                upgrade_derived(cur)  # a read of meta unless a derived column is new or its rule changed
                layout = cur.execute("SELECT value FROM meta WHERE key = 'lake_layout'").fetchone()
                if not layout or layout[0] != LAKE_LAYOUT:  # lakes made before the layout: new writes get it
                    apply_lake_layout(cur)
                    self.set_meta(cur, "lake_layout", LAKE_LAYOUT)
                if search_index_current(cur):
                    return  # DDL only when something is missing: every DDL is a commit other processes conflict with
            cur.execute(lake_schema())
            if upgrade_search_index(cur):
                cur.execute(lake_schema())
            upgrade_answer_features(cur)
            upgrade_derived(cur)
            apply_lake_layout(cur)
            for key, value in (("schema_version", SCHEMA_VERSION), ("write_clock", "0"), ("lake_layout", LAKE_LAYOUT)):
                if not cur.execute("SELECT 1 FROM meta WHERE key = ?", [key]).fetchone():
                    cur.execute("INSERT INTO meta VALUES (?, ?)", [key, value])

        self.transaction(create, clock=False)

    def _lake_data_path(self) -> str | None:
        try:
            row = self.con.execute(
                f"SELECT value FROM __ducklake_metadata_{LAKE_ALIAS}.ducklake_metadata WHERE key = 'data_path'"
            ).fetchone()
            return row[0] if row else None
        except duckdb.Error:
            return None

    def transaction(self, fn: Callable[[duckdb.DuckDBPyConnection], T], memory_limit: str | None = None,
                    clock: bool = True) -> T:
        """``fn(cur)`` inside ``write()``; on a DuckLake store a transaction that another process's commit
        made stale is rolled back and ``fn`` runs again on the new snapshot (at most COMMIT_ATTEMPTS times).
        ``fn`` must therefore read what it decides on through ``cur`` and may run more than once."""
        if not self.lake:
            with self.write(memory_limit) as cur:
                return fn(cur)

        def once():
            with self.write(memory_limit, clock=clock) as cur:
                return fn(cur)

        try:
            return attempt(once)
        except duckdb.Error as exc:
            if retryable(exc):
                raise DatabaseBusyError(
                    f"The store {self.shown} was changed by other processes {COMMIT_ATTEMPTS} times while this "
                    f"change was being written; nothing was written. Try again. ({exc})",
                    title="The store is busy") from exc
            raise

    def next_id(self, cur, table: str) -> int:
        """A new id for ``sources`` / ``templates`` / ``probe_runs``, inside the caller's write transaction."""
        column, sequence = ID_COLUMNS[table]
        if not self.lake:
            return cur.execute(f"SELECT nextval('{sequence}')").fetchone()[0]
        # Safe on DuckLake: every write bumps write_clock, so a concurrent writer that read the same value
        # conflicts at commit and runs again. The last id is kept in meta so, like a sequence, an id is
        # never reused after its row was removed.
        key = f"last_id:{table}"
        row = cur.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        top = cur.execute(f"SELECT coalesce(max({column}), 0) FROM {table}").fetchone()[0]
        new = max(int(row[0]) if row else 0, top) + 1
        self.set_meta(cur, key, str(new))
        return new

    def data_version(self) -> tuple:
        """Changes whenever a source is added or removed, an analyst records a verdict, a template is saved or a probe
        suite runs: the cache key for query results (the app's ``cached_query``). On a DuckLake store also whenever
        any process commits a write (its write clock), so every reader sees the others' imports, re-judges, probe
        runs and verdicts.

        DuckLake: each call first asks the catalog only for its newest snapshot id (a few ms, no table read); the
        tables are read only when that changed since the last call, inside one transaction with the snapshot id
        it is kept under. A rerun of a page that nothing changed costs one catalog look-up."""
        if not self.lake:
            with self.read() as cur:
                return tuple(cur.execute(VERSION_SQL.format(clock="")).fetchone())
        snapshot_sql = f"SELECT id FROM ducklake_current_snapshot('{LAKE_ALIAS}')"
        with self.read() as cur:
            snapshot = cur.execute(snapshot_sql).fetchone()[0]
            known = self._version
            if known is not None and known[0] == snapshot:
                return known[1]
            cur.execute("BEGIN TRANSACTION")  # the counts and the snapshot id they are kept under: one snapshot
            try:
                snapshot = cur.execute(snapshot_sql).fetchone()[0]
                row = cur.execute(VERSION_SQL.format(
                    clock=", (SELECT value FROM meta WHERE key = 'write_clock')")).fetchone()
            finally:
                cur.execute("ROLLBACK")
        version = (*row[:5], int(row[5]) if row[5] is not None else 0)
        known = self._version
        if known is None or known[0] <= snapshot:  # a slower thread that read an older snapshot keeps the newer
            self._version = (snapshot, version)
        return version

    def known_data_version(self) -> tuple | None:
        """DuckLake: the data version this process last read (``data_version``: the app asks it first on every rerun),
        without a statement; None before the first ``data_version`` and on a DuckDB file."""
        known = self._version if self.lake else None
        return known[1] if known is not None else None

    def data_clock(self) -> int | None:
        """DuckLake: a number that changes whenever any process commits a write; None for a DuckDB file."""
        if not self.lake:
            return None
        with self.read() as cur:
            row = cur.execute("SELECT value FROM meta WHERE key = 'write_clock'").fetchone()
        return int(row[0]) if row else 0

    # -- both kinds
    def cursor(self) -> duckdb.DuckDBPyConnection:
        """DuckLake only: a connection of this thread's own. Close it (or use ``with``) when done. (A DuckDB
        file is opened per use: ``read()`` / ``write()``.)"""
        if not self.lake:
            raise RuntimeError("Store.cursor() is for DuckLake stores; use Store.read() or Store.write().")
        cur = self.con.cursor()
        cur.execute(f"USE {LAKE_ALIAS}")  # a cursor starts in the in-memory database; the store is the attached lake
        return cur

    @contextmanager
    def _file_cursor(self, writable: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        if writable and self.read_only:
            raise DatabaseFileError(f"{self.path} was opened for reading only; this command cannot change it.",
                                    title="The database is open for reading")
        try:
            cur = self._gate.acquire(writable, self.notify)
        except duckdb.Error as exc:
            raise open_error(self.path, exc) from exc
        try:
            yield cur
        finally:
            cur.close()
            self._gate.release(writable)

    @contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with (self._file_cursor(False) if not self.lake else closing(self.cursor())) as cur:
            try:
                yield cur
            except duckdb.IOException as exc:  # a damaged block is found only when a query reads it
                if CORRUPT.search(str(exc)):
                    raise damaged_error(self.path, exc) from exc
                raise

    @contextmanager
    def write(self, memory_limit: str | None = None, clock: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
        """One writer at a time, one transaction: everything or nothing.

        ``memory_limit`` (e.g. "1GB") bounds DuckDB's buffer pool from BEGIN until after COMMIT, under the
        write lock. It is a database-wide setting, so queries running meanwhile share the bound.
        On a DuckLake store the transaction bumps ``write_clock`` (see the module docstring); use
        ``transaction()`` to have a transaction that another process's commit refused run again.
        """
        with self._write_lock, (self._file_cursor(True) if not self.lake else closing(self.cursor())) as cur:
            if memory_limit:
                cur.execute(f"SET memory_limit = '{memory_limit}'")
            try:
                cur.execute("BEGIN TRANSACTION")
                try:
                    if self.lake and clock:
                        cur.execute("UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS VARCHAR) "
                                    "WHERE key = 'write_clock'")
                    yield cur
                except BaseException:
                    cur.execute("ROLLBACK")
                    raise
                cur.execute("COMMIT")
            finally:
                if memory_limit:
                    cur.execute("RESET memory_limit")

    # -- claims: one holder at a time for a piece of work, across threads, processes and machines
    def claim(self, name: str, note: str = "") -> tuple[str | None, dict | None]:
        """Take the claim ``name``: ``(token, None)``, or ``(None, holder)`` while a live holder has it
        (``lib.store.claims.claim``). Give it back with ``release``."""
        return claims.claim(self, name, note)

    def release(self, name: str, token: str) -> None:
        claims.release(self, name, token)

    def set_meta(self, cur, key: str, value: str) -> None:
        """Set a ``meta`` row inside the caller's write transaction (no ON CONFLICT on DuckLake)."""
        cur.execute("DELETE FROM meta WHERE key = ?", [key])
        cur.execute("INSERT INTO meta VALUES (?, ?)", [key, value])

    def describe(self) -> dict:
        """What this store is and where its data lives (``store info``)."""
        if not self.lake:
            return {"kind": "duckdb file", "store": str(self.path), "data": str(self.path),
                    "bytes": self.path.stat().st_size if self.path.exists() else 0}
        info = {"kind": f"ducklake ({self.catalog} catalog)", "store": self.shown,
                "catalog": redact(self.catalog_location),
                "data": self.data_path}
        with self.read() as cur:
            files = cur.execute(
                f"SELECT count(*), coalesce(sum(file_size_bytes), 0) FROM __ducklake_metadata_{LAKE_ALIAS}.ducklake_data_file "
                "WHERE end_snapshot IS NULL").fetchone()
            info["data_files"], info["bytes"] = int(files[0]), int(files[1])
            info["snapshot"] = cur.execute(f"SELECT id FROM ducklake_current_snapshot('{LAKE_ALIAS}')").fetchone()[0]
        if self.catalog == "sqlite" and Path(self.catalog_location).exists():
            info["catalog_bytes"] = Path(self.catalog_location).stat().st_size
        return info

    def close(self) -> None:
        if self.lake:
            self.con.close()
        elif self._gate is not None:
            gate, self._gate = self._gate, None
            gate.close_store()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def frame(store: Store, sql: str, params: list | dict | None = None, *, plain: bool = False) -> "pd.DataFrame":
    """One read query as a DataFrame. ``plain``: plain Python values (lists stay lists, NULL is None) instead of
    DuckDB's column types (NULL as NaN/NaT, lists as arrays)."""
    with store.read() as cur:
        res = cur.execute(sql, params or [])
        return plain_frame(res) if plain else res.df()


@functools.cache
def _memory() -> duckdb.DuckDBPyConnection:
    """An in-memory database, opened once (40 ms); each use takes a cursor of its own, whose registered tables no
    other cursor sees."""
    return duckdb.connect(config=CONNECT_CONFIG)


def read_once(store: Store, table: str, where: str, params: dict, views: Callable, *, empty: bool = False):
    """``views(con)`` (statements on ``table``) from ONE read of the store: on a DuckLake store every statement on a
    table costs catalog rounds (more the more columns it reads: 15-130 ms each on the 100k lake, even empty), so the
    rows ``where`` selects are read once and ``views`` runs in memory on them under the table's name (the same SQL,
    the same answers, as long as ``views`` selects no rows outside ``where``). On the file, statements are cheap:
    ``views`` runs on the store itself. ``empty``: the caller knows the table holds no row (from the data version):
    on a DuckLake store ``views`` then runs on an empty table of its columns, and the store is not read at all."""
    if store.lake and empty:
        with _memory().cursor() as con:
            con.execute(empty_table_sql(table))  # a temporary table: this cursor's own
            return views(con)
    with store.read() as cur:
        if not store.lake:
            return views(cur)
        rows = cur.execute(f"SELECT * FROM {table} {where}", params).to_arrow_table()
    with _memory().cursor() as con:
        con.register(table, rows)
        return views(con)


def in_memory(tables: dict, sql: str, params: list | dict | None = None) -> "pd.DataFrame":
    """``sql`` over ``tables`` (name -> Arrow table or DataFrame, already read from a store) in this process's
    in-memory database, as a DataFrame: for joining what a page keeps in memory (a bench's answer lengths) with a
    fresh read, without reading the store again. Each call has a cursor of its own: the names never leak."""
    with _memory().cursor() as con:
        for name, table in tables.items():
            con.register(name, table)
        return con.execute(sql, params or []).df()


def plain_frame(res) -> "pd.DataFrame":
    """A DuckDB result as a DataFrame of plain Python values (lists stay lists, NULL is None)."""
    import pandas as pd

    return pd.DataFrame(res.fetchall(), columns=[d[0] for d in res.description])
