"""Errors a user reads. Each has a short title and a message that says how to fix it."""
from __future__ import annotations

import logging
import re
from dataclasses import dataclass

# -- secrets ----------------------------------------------------------------------------------------------
# A store target (``ducklake:postgres:CONNINFO``) may carry a PostgreSQL password, and DuckDB and libpq repeat
# the whole conninfo in their error texts. ``redact`` is the one rule that hides it; every boundary where a store
# target or an exception text can reach a person uses it: JudgeLensError (every titled error), the CLI's error
# output, the app's error boxes, logs (``RedactingFilter``), ``store info`` / ``store migrate`` output, reports.

SECRET_MASK = "***"
# libpq conninfo ``password=X`` / ``password = 'a b\'c'`` (also sslpassword=, PGPASSWORD=, a URI's
# ``?password=X``): a quoted value to its closing quote, an unquoted one to the next whitespace (a password
# cannot hold unquoted whitespace; whatever else follows it is hidden too rather than risk showing a part).
# A value already masked is left as it is, so redacting twice changes nothing.
_KEYWORD_PASSWORD = re.compile(
    r"""(password\s*=\s*)(?:\*\*\*(?=[\s:;,."')\]]|$)|'(?:[^'\\]|\\.)*(?:'|$)|[^\s]+)""", re.I)
# URI userinfo: ``postgresql://user:secret@host`` (any scheme: s3://key:secret@bucket too)
_URI_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.\-]*://[^\s/@:'\"]*:)[^\s@/]*@", re.I)  # RFC 3986: no / in userinfo


def redact(text) -> str:
    """``text`` with every password of a libpq conninfo (``password=***``, quoted forms too), of a URI
    (``postgresql://user:***@host``) and so of a DuckLake target (``ducklake:postgres:...``) replaced by ***."""
    text = str(text)
    if "://" in text:
        text = _URI_PASSWORD.sub(lambda m: f"{m.group(1)}{SECRET_MASK}@", text)
    if "assword" in text or "ASSWORD" in text:
        text = _KEYWORD_PASSWORD.sub(lambda m: f"{m.group(1)}{SECRET_MASK}", text)
    return text


class RedactingFilter(logging.Filter):
    """A logging filter that passes every record on with its message and traceback redacted (``redact``).
    Attach it to a handler (``install_log_redaction``): a handler's filters see the records of every logger
    that reaches it."""

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        if record.exc_text:
            text += "\n" + record.exc_text
            record.exc_text = None
        if record.stack_info:
            text += "\n" + record.stack_info
            record.stack_info = None
        record.msg, record.args = redact(text), ()
        return True


def install_log_redaction() -> None:
    """Put a ``RedactingFilter`` on every handler of every logger there is (the root logger and, e.g., each of
    Streamlit's, which keep handlers of their own). Idempotent; call it again after new loggers appear."""
    loggers = [logging.getLogger()] + [lg for lg in list(logging.Logger.manager.loggerDict.values())
                                       if isinstance(lg, logging.Logger)]
    for logger in loggers:
        for handler in logger.handlers:
            if not any(isinstance(f, RedactingFilter) for f in handler.filters):
                handler.addFilter(RedactingFilter())


class JudgeLensError(Exception):
    title = "JudgeLens error"

    def __init__(self, message: str, title: str | None = None):
        message = redact(message)  # a store target or a DuckDB/libpq text may carry a password
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


class ImportResourceError(JudgeLensError):
    """An import ran out of memory or disk space (``lib.ingest.resources``). Its transaction was rolled back:
    nothing of the import was written. ``kind``: memory | disk."""

    title = "Import stopped: out of memory; nothing was imported"

    def __init__(self, message: str, kind: str):
        super().__init__(message, title=None if kind == "memory" else
                         "Import stopped: out of disk space; nothing was imported")
        self.kind = kind


class FormatError(JudgeLensError):
    """The file is not in a format JudgeLens knows (or a known format it cannot read)."""

    title = "Unrecognised file format"


class UsageError(JudgeLensError, ValueError):
    """The user asked for something that does not exist or cannot be combined (an unknown key, flag, ...)."""

    title = "Cannot do that"


class PathNotAllowed(JudgeLensError):
    """A file or folder the app may not read: outside the import roots (JUDGELENS_IMPORT_ROOTS)."""

    title = "That folder is outside the import roots"


class UploadRefused(JudgeLensError):
    """An uploaded file or zip cannot be staged (not a zip, damaged, too large, a zip bomb; ``lib.ingest.uploads``)."""

    title = "Upload refused: nothing was imported"


# -- analysis ---------------------------------------------------------------------------------------------

class JudgeChoiceError(JudgeLensError):
    """The judges asked for cannot be compared (too few, repeated, or clashing with a column name)."""

    title = "Choose other judges"


class UnknownJudgeError(JudgeChoiceError):
    title = "Unknown judge"


class SearchTooSlow(JudgeLensError):
    """A search ran past its time limit and was interrupted (``lib.analysis.search``)."""

    title = "Search stopped"


class SearchCancelled(JudgeLensError):
    """The one who asked for a search went away (a closed browser tab); the search was interrupted."""

    title = "Search stopped"


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


class BatchRunningError(DatabaseBusyError):
    """A re-judge batch with the same label (same template version, model, URL, parameters) is running elsewhere:
    this one would pay again for its requests and store its verdicts twice."""

    title = "Another batch with this label is running"


class ProbeError(JudgeLensError):
    title = "Cannot run the probes"


class UnknownSystemPromptError(UsageError):
    """A generation setup needs the model's system prompt and the run's files do not show it."""

    title = "Unknown system prompt"


class LfsPointerError(JudgeLensError):
    """Files of the import are git-LFS pointers (lib.ingest.lfs): nothing was imported."""

    title = "Git LFS pointers, not data: nothing was imported"


class LadderInterrupted(JudgeLensError):
    """The attribution ladder stopped before its last step (cancelled): what arrived is kept in the cache."""

    title = "Ladder interrupted"
