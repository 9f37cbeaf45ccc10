"""Copy a single-file store into a new (DuckLake) store."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb

from lib.errors import UsageError
from lib.store.bulk import DERIVED
from lib.store.files import check_database_file, open_error
from lib.store.lake import ID_COLUMNS, sql_text

if TYPE_CHECKING:
    from lib.store.core import Store

def migrate(source: str | os.PathLike, target: Store) -> dict[str, int]:
    """Copy every table of the single-file store ``source`` into the empty store ``target`` (normally a
    DuckLake store) in one transaction; returns rows copied per table. Ids are kept."""
    source = Path(source)
    if not source.is_file():
        raise UsageError(f"{source}: no such DuckDB file", title="Nothing to migrate")
    check_database_file(source, read_only=True)
    with target.read() as cur:
        have = cur.execute("SELECT count(*) FROM sources").fetchone()[0] + cur.execute(
            "SELECT count(*) FROM templates").fetchone()[0]
    if have:
        raise UsageError(f"The store {target.shown} already holds data; migrate into a new, empty store.",
                         title="Target store is not empty")
    alias = "jl_migrate_source"
    try:
        target.con.execute(f"ATTACH {sql_text(str(source.resolve()))} AS {alias} (READ_ONLY)")
    except duckdb.Error as exc:
        raise open_error(source, exc) from exc
    try:
        with target.read() as cur:
            ours = {r[0] for r in cur.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
                "AND table_type = 'BASE TABLE'").fetchall()}
            theirs = {r[0] for r in cur.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = ? "
                "AND table_type = 'BASE TABLE'", [alias]).fetchall()}
        tables = sorted((ours & theirs) - {"meta", "search_text", "search_sources", "search_prompt_sources",
                                             "answer_features"})

        def copy(cur) -> dict[str, int]:
            counts = {}
            for table in tables:
                counts[table] = cur.execute(f"INSERT INTO {table} BY NAME {_copy_select(cur, alias, table)}"
                                            ).fetchone()[0]
            from lib.search_index import index_new_sources
            from lib.text_features import fill_answer_features

            index_new_sources(cur)  # anew: a store made with the first index has no norm columns
            fill_answer_features(cur)  # anew too: the file may predate the table
            for key, value in cur.execute(f"SELECT key, value FROM {alias}.main.meta").fetchall():
                if key not in ("schema_version", "write_clock") and not key.startswith(("last_id:", "derived:")):
                    target.set_meta(cur, key, value)
            if target.lake:  # keep counting ids where the file's sequences were
                for table, (column, sequence) in ID_COLUMNS.items():
                    row = cur.execute("SELECT last_value FROM duckdb_sequences() WHERE database_name = ? "
                                      "AND sequence_name = ?", [alias, sequence]).fetchone()
                    top = cur.execute(f"SELECT coalesce(max({column}), 0) FROM {table}").fetchone()[0]
                    target.set_meta(cur, f"last_id:{table}", str(max(top, (row[0] or 0) if row else 0)))
            return counts

        return target.transaction(copy)
    finally:
        target.con.execute(f"DETACH {alias}")


def _copy_select(cur, alias: str, table: str) -> str:
    """The SELECT copying ``table`` from the attached file: every column, its derived ones (``DERIVED``) computed
    anew by this JudgeLens's rules (the file may predate a column, or have filled it by an older rule)."""
    derived = DERIVED.get(table, ())
    if not derived:
        return f"SELECT * FROM {alias}.main.{table}"
    theirs = {r[0] for r in cur.execute("SELECT column_name FROM information_schema.columns WHERE table_catalog = ? "
                                        "AND table_name = ?", [alias, table]).fetchall()}
    stale = [column for column, _ in derived if column in theirs]
    exclude = f" EXCLUDE ({', '.join(stale)})" if stale else ""
    return f"SELECT *{exclude}{''.join(f', {expr} AS {column}' for column, expr in derived)} FROM {alias}.main.{table}"
