"""Errors a user reads. Each has a short title and a message that says how to fix it."""
from __future__ import annotations

from dataclasses import dataclass


class JudgeLensError(Exception):
    title = "JudgeLens error"

    def __init__(self, message: str, title: str | None = None):
        super().__init__(message)
        self.message = message
        if title:
            self.title = title

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class LineProblem:
    """One bad line: where it is and what is wrong with it."""

    path: str
    line: int  # 1-based; 0 means "the file as a whole"
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}" if self.line else f"{self.path}: {self.reason}"


class IngestError(JudgeLensError):
    """A file (or several) could not be imported. Nothing from this import was written."""

    title = "Import refused: nothing was imported"

    def __init__(self, problems: list[LineProblem], hint: str | None = None):
        self.problems = list(problems)
        shown = "\n".join(str(p) for p in self.problems[:50])
        more = len(self.problems) - 50
        if more > 0:
            shown += f"\n… and {more} more problem(s)"
        self.hint = hint or (
            "Fix the lines above and import again, or import with --skip-bad-lines "
            "(\"Skip bad lines\" in the app) to keep the valid lines and record the skipped ones."
        )
        super().__init__(f"{shown}\n{self.hint}")


class DatabaseBusyError(JudgeLensError):
    title = "The database file is in use by another process"


class DatabaseFileError(JudgeLensError):
    """The --db file cannot be used: not a DuckDB file, damaged, missing, or in a folder JudgeLens cannot write."""

    title = "Cannot use this database file"


class FormatError(JudgeLensError):
    """The file is not in a format JudgeLens knows (or a known format it cannot read)."""

    title = "Unrecognised file format"


class UsageError(JudgeLensError, ValueError):
    """The user asked for something that does not exist or cannot be combined (an unknown key, flag, ...)."""

    title = "Cannot do that"


class PathNotAllowed(JudgeLensError):
    """A file or folder the app may not read: outside the import roots (JUDGELENS_IMPORT_ROOTS)."""

    title = "That folder is outside the import roots"
