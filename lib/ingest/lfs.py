"""git-LFS pointer files: what a clone made without ``git lfs pull`` holds instead of the data (issue 22).

A pointer is a small text file (about 130 bytes):

    version https://git-lfs.github.com/spec/v1
    oid sha256:<64 hex>
    size <bytes of the real file>

Every import path (a folder, a file, an upload, a zip member, the fast reader) goes through ``discover``, which
asks ``pointer_size`` of every file before any reader parses one; any pointer refuses the whole import with one
message listing them all (``LfsPointerError``).
"""
from __future__ import annotations

import re
from pathlib import Path

from lib.errors import LfsPointerError

MAX_POINTER_BYTES = 1024   # the spec caps pointer files at 1024 bytes
HEADER = b"version https://git-lfs.github.com/spec/v1"
_SIZE = re.compile(rb"^size (\d+)\s*$", re.M)


def pointer_size(path: Path) -> int | None:
    """The size of the real file if ``path`` is a git-LFS pointer, else None."""
    try:
        if path.stat().st_size > MAX_POINTER_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(HEADER) or b"\noid sha256:" not in data:
        return None
    found = _SIZE.search(data)
    return int(found.group(1)) if found else 0


def _human(n: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB", "TB"):
        if n < 1000 or unit == "TB":
            return f"{n:,} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1000
    return str(n)


def refuse(pointers: list[tuple[str, int]]) -> LfsPointerError:
    """The one message for every pointer file of an import (display name, real size)."""
    lines = "\n".join(f"  {name}  (a pointer to {_human(size)} stored in git LFS)" for name, size in pointers)
    return LfsPointerError(
        f"{len(pointers)} file(s) are git-LFS pointers, not the data they stand for, so nothing was imported:\n"
        f"{lines}\nThe repository was cloned without its LFS files: run `git lfs pull` in it (needs git-lfs "
        "installed), then import again.")
