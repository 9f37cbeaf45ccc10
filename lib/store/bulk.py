"""Bulk insert through Arrow, inside the caller's transaction (a DuckDB file or a DuckLake store)."""
from __future__ import annotations

import threading

from lib.vocab import single_bracket_only_sql

# Columns no writer gives: every INSERT into the table computes them from the row's own values (the rules live in
# lib.vocab), so readers never recompute them over the texts. A store made before a column gets it filled once at
# open (lib.store.schema.upgrade_derived).
DERIVED = {"single_judgments": (("single_bracket", single_bracket_only_sql("rationale")),)}


def derived_names(table: str) -> str:
    """``, name, ...`` of the table's derived columns, for an INSERT's column list ('' when it has none)."""
    return "".join(f", {name}" for name, _ in DERIVED.get(table, ()))


def derived_values(table: str) -> str:
    """``, expression, ...`` computing them from the inserted row's columns, for the INSERT's SELECT list."""
    return "".join(f", {expr}" for _, expr in DERIVED.get(table, ()))


def insert_rows(cur, table: str, rows: list[dict], *, replace_key: str | None = None) -> None:
    """Bulk insert ``rows`` (dicts named by column) into ``table`` inside the caller's transaction, through an
    Arrow table (row-by-row executemany is ~100x slower in DuckDB). With ``replace_key`` (the table's primary
    key column) a row replaces the stored row with the same key."""
    if not rows:
        return
    import pyarrow as pa

    data = pa.Table.from_pylist(rows)
    name = f"_jl_{table}_{threading.get_ident()}"
    cur.register(name, data)
    try:
        verb = "INSERT"
        if replace_key is not None:
            if _has_primary_key(cur, table):
                verb = "INSERT OR REPLACE"
            else:  # DuckLake: no primary keys, no INSERT OR REPLACE
                cur.execute(f"DELETE FROM {table} WHERE {replace_key} IN (SELECT {replace_key} FROM {name})")
        computed = "".join(f", {expr} AS {column}" for column, expr in DERIVED.get(table, ()))
        cur.execute(f"{verb} INTO {table} BY NAME SELECT *{computed} FROM {name}")
    finally:
        cur.unregister(name)


def _has_primary_key(cur, table: str) -> bool:
    return bool(cur.execute("SELECT count(*) FROM duckdb_constraints() WHERE table_name = ? AND "
                            "database_name = current_database() AND constraint_type = 'PRIMARY KEY'",
                            [table]).fetchone()[0])

