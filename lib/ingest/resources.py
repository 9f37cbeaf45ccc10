"""What an import may use of the machine, and the error when it ran out (issue 26).

The import's fast path hands a file to DuckDB; DuckDB stops with an out-of-memory error when the import's memory
limit is too small for what it holds at once (its JSON reader's buffers per thread, the rows of a row group), and
with an I/O error when the disk under the store or its temporary folder is full. Neither says anything about the
file's content, so neither is a reason to read it line by line (the line reader holds every row in memory: 14 GB
for 1M judgments): the import stops with an ``ImportResourceError`` naming the file and what to change, and its
transaction is rolled back (nothing half-imported)."""
from __future__ import annotations

import os
from pathlib import Path

from lib.errors import ImportResourceError

MEMORY_ENV = "JUDGELENS_IMPORT_MEMORY"
DEFAULT_MEMORY = "2GB"
_DISK_WORDS = ("no space left on device", "disk full", "disk is full", "max_temp_directory_size",
               "not enough space on the disk")


def import_memory_limit(input_bytes: int | None = None, threads: int = 1) -> str:
    """DuckDB's memory_limit for an import's transaction: ``JUDGELENS_IMPORT_MEMORY``, else 2GB, or, for a file
    store's import of ``input_bytes`` (the files it writes) with DuckDB running ``threads`` threads, the input's size
    bounded below by ``memory_floor(threads)`` and above by 2GB (or the floor, if higher).

    DuckDB keeps the blocks an import writes in its buffer pool up to memory_limit (80 % of RAM by default), so
    without a limit a big file's import grows the process by about the file's size. Above the limit the blocks are
    evicted (they are already in the database file). At 1GB an import of 1M judgments (3.9 GB) also spilled
    ~140 MB to the temporary folder; its insert took 43.8 CPU-s against 39.1 at 2GB (one run each on a heavily
    loaded machine, so a weak figure), at a peak RSS of 1.7 against 2.6-2.9 GB (a plain DuckDB load of the file
    peaks at 3.4-3.9 GB; with no limit the import peaked at 5.2 GB). At 2GB an import of 100k judgments (389 MB)
    kept every block it wrote and peaked at 1.23 GB against 0.93 GB for the plain load, which holds about the
    file's size: a limit of the input's size keeps a file store's import below the plain load at every size.
    A DuckLake store keeps 2GB: its blocks go to Parquet files, not to the buffer pool, and its Parquet writer
    ran out of 400MB at 100k judgments."""
    given = os.environ.get(MEMORY_ENV)
    if given or input_bytes is None:
        return given or DEFAULT_MEMORY
    floor = memory_floor(threads)
    return f"{min(max(input_bytes, floor), max(DEFAULT_BYTES, floor)) // 1_000_000}MB"


DEFAULT_BYTES = 2_000_000_000  # DEFAULT_MEMORY in bytes (DuckDB's "GB" and "MB" are powers of 1000)
FLOOR_BYTES = 128_000_000
THREAD_BYTES = 128_000_000


def memory_floor(threads: int) -> int:
    """The least memory_limit (bytes) an import gets from the input's size: each of DuckDB's threads holds a JSON
    buffer of twice the largest record the fast path reads (64 MiB) and the rows it converts. Measured at 100k
    judgments, an import ran out of 250MB with 2 threads, of 400MB with 4, of 600MB with 8 (and passed at 300MB,
    600MB and 900MB): 128MB plus 128MB a thread leaves room above each of those."""
    return FLOOR_BYTES + max(threads, 1) * THREAD_BYTES


def resource_kind(exc: BaseException) -> str | None:
    """'memory' or 'disk' when a DuckDB error says the machine ran out of it, else None (a real problem of the
    input or a bug, which the caller handles as before)."""
    import duckdb

    if not isinstance(exc, duckdb.Error):
        return None
    text = str(exc).lower()
    # a full disk shows up while writing (IOException), while spilling (OutOfMemoryException: the temp folder's
    # cap) or when COMMIT writes the WAL (TransactionException "Failed to commit: ... No space left on device")
    if isinstance(exc, (duckdb.OutOfMemoryException, duckdb.IOException, duckdb.TransactionException)) \
            and any(w in text for w in _DISK_WORDS):
        return "disk"
    if isinstance(exc, duckdb.OutOfMemoryException):
        return "memory"
    return None


def resource_error(kind: str, files: list[str], store_folder: Path | None, limit: str) -> ImportResourceError:
    """The titled error for an import that ran out of ``kind`` while writing ``files`` (display names)."""
    named = files[0] if len(files) == 1 else f"{len(files)} files ({', '.join(files)})"
    if kind == "memory":
        return ImportResourceError(
            f"{named}: the import ran out of memory within its limit of {limit}, so nothing was imported. "
            f"Import again with a higher limit, e.g. {MEMORY_ENV}=4GB in the environment of the app or the CLI, "
            "or on a machine with more free memory.", "memory")
    where = f" ({store_folder})" if store_folder is not None else ""
    return ImportResourceError(
        f"{named}: the disk ran out of space while the import was writing, so nothing was imported. Free space on "
        f"the disk of the store{where} and of the temporary folder (an import needs about the file's size free on "
        "each), then import again.", "disk")
