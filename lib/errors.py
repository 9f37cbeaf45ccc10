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


# -- analysis ---------------------------------------------------------------------------------------------

class JudgeChoiceError(JudgeLensError):
    """The judges asked for cannot be compared (too few, repeated, or clashing with a column name)."""

    title = "Choose other judges"


class UnknownJudgeError(JudgeChoiceError):
    title = "Unknown judge"


# -- judging ----------------------------------------------------------------------------------------------

class TemplateError(JudgeLensError):
    """A template cannot be used or rendered. ``kind``: syntax | undefined | security | limit |
    timeout | memory | invalid | error."""

    title = "Template error"

    def __init__(self, message: str, kind: str = "error", title: str | None = None):
        super().__init__(message, title)
        self.kind = kind


class TemplateNotFound(JudgeLensError):
    title = "No such template"


class RegexTimeout(JudgeLensError):
    title = "Parser regex too slow"


class ParserSpecError(JudgeLensError, ValueError):
    """The parser spec itself is unusable (unknown kind, bad regex, bad scale)."""

    title = "Unusable output parser"


class ContextError(JudgeLensError):
    title = "Cannot build the judge context"


class EndpointError(UsageError):
    """The judge endpoint settings are unusable (URL, model, timeout, retries, max tokens)."""

    title = "Judge endpoint settings"


class MissingAPIKeyError(JudgeLensError):
    title = "No API key"


class JudgeAPIError(JudgeLensError):
    """A judge call failed. ``status`` is the HTTP status if there was one; ``fatal`` errors (bad key,
    no access, unknown model or URL) stop a batch, others are recorded per item."""

    title = "Judge API error"

    def __init__(self, message: str, status: int | None = None, fatal: bool = False, attempts: int = 1):
        super().__init__(message)
        self.status = status
        self.fatal = fatal
        self.attempts = attempts


class LabelInUseError(JudgeLensError):
    title = "Label already used"


class ProbeError(JudgeLensError):
    title = "Cannot run the probes"


class UnknownSystemPromptError(UsageError):
    """A generation setup needs the model's system prompt and the run's files do not show it."""

    title = "Unknown system prompt"


class LfsPointerError(JudgeLensError):
    """Files of the import are git-LFS pointers (lib.ingest.lfs): nothing was imported."""

    title = "Git LFS pointers, not data: nothing was imported"
