"""The DuckLake team store: which target is one and how it is parsed, attaching it (extensions from the installed
wheels), why an attach failed (without the conninfo), and re-running what another process's commit refused."""
from __future__ import annotations

import glob
import os
import random
import re
import tempfile
import time
from pathlib import Path
from typing import Callable, TypeVar

import duckdb

from lib.errors import DatabaseBusyError, UsageError, redact
from lib.store.files import CONNECT_CONFIG, default_db_path

T = TypeVar("T")

LAKE_PREFIX = "ducklake:"
LAKE_ALIAS = "lake"
LAKE_CATALOGS = ("sqlite", "postgres")
COMMIT_ATTEMPTS = 8  # a DuckLake transaction refused at commit is re-run this many times in all
# ids DuckLake cannot hand out by itself (no sequences): table -> (id column, the embedded store's sequence)
ID_COLUMNS = {"sources": ("source_id", "source_ids"), "templates": ("template_id", "template_ids"),
              "probe_runs": ("run_id", "probe_run_ids")}
# Rows per Parquet row group on the lake (not DuckDB's 122,880). DuckDB's Parquet writer holds each thread's row
# group in memory until it is full: 122,880 rows of judgments (prompt and rationale) are about 0.5 GB, so an import
# of 1M judgments ran out of its memory limit and fell back to reading line by line (14 GB); 16,384 rows keep an
# import's memory flat however big the file (bench/ingest_bench.py), and a read of one item skips more row groups.
# The rows are NOT declared sorted (DuckLake's SET SORTED BY): a sorted insert sorts the whole import in memory,
# which a 1M-judgment import cannot do within its limit. LAKE_LAYOUT names this layout in ``meta``.
LAKE_ROW_GROUP = 16384
LAKE_LAYOUT = "row-groups-16k"


def apply_lake_layout(cur) -> None:
    """Give the lake its row-group size (lake-wide, inside the caller's transaction: a table created in this same
    transaction takes no option of its own). Data already written keeps its layout until it is rewritten."""
    cur.execute(f"CALL {LAKE_ALIAS}.set_option('parquet_row_group_size', {LAKE_ROW_GROUP})")


def is_lake(target) -> bool:
    return isinstance(target, str) and target.startswith(LAKE_PREFIX)


def default_store() -> str | Path:
    """What the app and CLI open unless told otherwise: ``JUDGELENS_STORE`` (a DuckLake store) if set,
    else the single DuckDB file (``default_db_path``)."""
    return os.environ.get("JUDGELENS_STORE") or default_db_path()


def default_data_path() -> str | None:
    return os.environ.get("JUDGELENS_DATA_PATH") or None


def parse_lake(target: str) -> tuple[str, str]:
    """``ducklake:sqlite:FILE`` -> ("sqlite", FILE); ``ducklake:postgres:CONNINFO`` -> ("postgres", CONNINFO)."""
    rest = target[len(LAKE_PREFIX):]
    catalog, _, where = rest.partition(":")
    if catalog not in LAKE_CATALOGS or not where.strip():
        raise UsageError(f"Unknown store {target!r}. A team store is ducklake:sqlite:FILE (many processes on one "
                         "machine) or ducklake:postgres:CONNINFO (e.g. ducklake:postgres:dbname=judgelens "
                         "host=db.internal); leave JUDGELENS_STORE unset for the single DuckDB file.",
                         title="Unknown store")
    return catalog, where


_PG_UNREACHABLE = re.compile(r'Unable to connect to Postgres at "(?:[^"\\]|\\.)*": ', re.S)


def lake_open_reason(exc: BaseException) -> str:
    """Why attaching a DuckLake store failed, without the conninfo DuckDB repeats (twice, password included):
    libpq's own words (``password authentication failed``, ``Connection refused``, ``database "x" does not
    exist``) where there are some; redacted in any case."""
    text = str(exc)
    found = _PG_UNREACHABLE.search(text)
    if found:
        text = text[found.end():]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    text = " ".join(line if line[-1] in ".?!" else line + "." for line in lines)
    return redact(text).rstrip(".")


def sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def extension_file(name: str) -> str:
    """The extension shipped in the ``duckdb-extension-NAME`` wheel (requirements.txt): loaded from the
    installed package, never downloaded."""
    import importlib.util

    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    found = []
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found += glob.glob(os.path.join(folder, "extensions", f"v{duckdb.__version__}", f"{name}.duckdb_extension"))
        found += glob.glob(os.path.join(folder, "**", f"{name}.duckdb_extension"), recursive=True)
    if not found:
        raise UsageError(f"The DuckDB extension {name!r} is not installed. Install the packages in requirements.txt "
                         f"(duckdb-extension-{name}=={duckdb.__version__}).", title="DuckLake is not installed")
    return found[0]


def retryable(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, duckdb.Error) and ("conflict" in text or "database is locked" in text
                                              or "could not serialize" in text)


def attempt(fn: Callable[[], T]) -> T:
    """Run ``fn``, again after a short wait while DuckLake says another process got there first."""
    for n in range(1, COMMIT_ATTEMPTS + 1):
        try:
            return fn()
        except duckdb.Error as exc:
            if not retryable(exc) or n == COMMIT_ATTEMPTS:
                raise
        time.sleep(min(0.05 * 2 ** n, 2.0) * random.uniform(0.5, 1.5))
    raise AssertionError("unreachable")


def attach(catalog: str, where: str, data_path, shown: str) -> duckdb.DuckDBPyConnection:
    """A new in-memory DuckDB connection with the DuckLake store ``catalog``:``where`` attached as LAKE_ALIAS and in
    use; Parquet data under ``data_path`` (None: the catalog's own, or next to a new SQLite catalog). ``shown``: the
    store as messages name it (no password)."""
    config = dict(CONNECT_CONFIG)  # extensions only from the installed wheels, loaded below
    if not os.environ.get("HOME") and not Path("~").expanduser().is_dir():
        config["extension_directory"] = os.path.join(tempfile.gettempdir(), "judgelens-duckdb-extensions")
    con = duckdb.connect(config=config)
    try:
        for name in ("ducklake", catalog):
            con.execute(f"INSTALL {sql_text(extension_file(name))}")
            con.execute(f"LOAD {name}")
        options = []
        if catalog == "sqlite":
            file = Path(where).expanduser()
            file.parent.mkdir(parents=True, exist_ok=True)
            where = str(file)
            # WAL lets readers work during a commit; the busy timeout makes a writer wait for the lock
            options += ["META_JOURNAL_MODE 'WAL'", "META_BUSY_TIMEOUT 5000"]
            if data_path is None and not file.exists():  # a new store: its Parquet files next to it
                data_path = str(file) + ".files"
        if data_path is not None:
            data_path = str(data_path)
            if "://" not in data_path:
                Path(data_path).expanduser().mkdir(parents=True, exist_ok=True)
                data_path = str(Path(data_path).expanduser().resolve())
            options.append(f"DATA_PATH {sql_text(data_path.rstrip('/') + '/')}")
        attach_sql = f"ATTACH {sql_text(LAKE_PREFIX + catalog + ':' + where)} AS {LAKE_ALIAS}"
        if options:
            attach_sql += f" ({', '.join(options)})"
        attempt(lambda: con.execute(attach_sql))
    except duckdb.Error as exc:
        con.close()
        hint = ("" if data_path is not None or catalog != "postgres" else
                " A new PostgreSQL-backed store needs a data folder: set JUDGELENS_DATA_PATH (or --data-path).")
        reason = lake_open_reason(exc)
        end = "" if reason.endswith("?") else "."
        raise DatabaseBusyError(f"Could not open the DuckLake store {shown}: {reason}{end}{hint}",
                                title="Could not open the store") from exc
    except BaseException:
        con.close()
        raise
    con.execute(f"USE {LAKE_ALIAS}")
    return con
