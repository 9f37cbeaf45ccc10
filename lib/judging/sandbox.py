"""The template sandbox: the security boundary between untrusted judge templates and JudgeLens.

Templates are untrusted input (anyone who can reach the page can type one), so rendering has two
layers:

1. **A locked-down Jinja2 sandbox** (``ImmutableSandboxedEnvironment`` + ``StrictUndefined``, no
   autoescape, trailing newlines kept so FastChat prompts render byte for byte). On top of Jinja's
   own checks (no ``__class__``/``__globals__``, no ``str.format``, no mutation): ``*`` on text or
   lists and ``**`` are refused, ``%`` string formatting is refused, ``range`` is capped at
   ``MAX_RANGE`` items, padding filters (``center``, ``indent``, ``wordwrap``) are capped, ``replace``
   and ``join`` are checked before they run, only a whitelist of filters and ``str`` methods exists
   (no ``format``, ``attr``, ``random``, ``lipsum``, ``batch``, ``slice``…), and every rendered message
   is capped while it streams (``MAX_MESSAGE_CHARS``). The template source itself is capped by
   ``lib.judging.templates.check_template``.
2. **A separate worker process** (``python -m lib.judging.sandbox``) does every render, with an address
   space limit (``SANDBOX_MEMORY_MB``) and a wall-clock limit per item (``RENDER_TIMEOUT_S``): if an
   item takes longer, the parent kills the worker (a thread cannot be stopped) and raises a
   ``TemplateError``; the next render starts a fresh worker. Data is passed as JSON, never as
   template source, so answer text like ``{{ 7*7 }}`` stays literal. The worker gets a minimal
   environment (no API keys). User regexes for the ``regex`` parser run there too (``run_regex``):
   Python's ``re`` cannot be interrupted and holds the GIL.

The rest of JudgeLens uses ``render_in_worker`` (through ``lib.judging.templates.render_many``),
``run_regex`` (``lib.judging.parsers``), ``parse_env`` (parsing only, to list a template's variables)
and ``shutdown_sandbox``. This module imports neither duckdb nor pandas: the worker stays small.
"""
from __future__ import annotations

import json
import os
import queue
import re
import subprocess
import sys
import threading
from dataclasses import dataclass

from lib.errors import RegexTimeout, TemplateError
from lib.paths import REPO_ROOT as ROOT

# Limits ------------------------------------------------------------------------------------------
MAX_MESSAGE_CHARS = 400_000      # one rendered message (Swallow truncates each answer at 8,192 characters)
MAX_STRING = 1_000_000           # any intermediate string built with +, replace or join
MAX_RANGE = 10_000               # range() items
MAX_PAD = 1_000                  # width of center / indent / wordwrap
MAX_INT_BITS = 4_096             # integer results of *
RENDER_TIMEOUT_S = 1.0           # wall clock per rendered item (and per regex parse)
RENDER_JOB_ITEMS = 200           # contexts sent to the worker per job
SANDBOX_MEMORY_MB = 768          # address space of the worker process
WORKER_START_TIMEOUT_S = 20.0

SANDBOX_GLOBALS = ("range", "dict", "cycler", "joiner", "namespace")

_PARSE_ENV = None


def parse_env():
    """An environment used only to parse (never to render) in this process."""
    global _PARSE_ENV
    if _PARSE_ENV is None:
        _PARSE_ENV = _sandbox_env()
    return _PARSE_ENV




@dataclass
class RenderResult:
    messages: list[dict] | None = None
    error: str | None = None
    kind: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def run_regex(pattern: str, text: str, take: str = "first") -> tuple[str, str] | None:
    """(whole match, group 1) of a user regex on ``text``, run in the worker with a time limit."""
    return _WORKER.regex(pattern, text, take)


class _Worker:
    """One long-lived sandbox process, shared by all threads (one job at a time)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._lines: queue.Queue | None = None
        self._next_id = 0

    # -- process management
    def _start(self) -> None:
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "SYSTEMROOT")}
        env.update(PYTHONIOENCODING="utf-8", PYTHONDONTWRITEBYTECODE="1",
                   JUDGELENS_SANDBOX_MEMORY_MB=str(SANDBOX_MEMORY_MB))
        code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from lib.judging.sandbox import _worker_main; _worker_main()"
        self._proc = subprocess.Popen([sys.executable, "-s", "-c", code], stdin=subprocess.PIPE,
                                      stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=str(ROOT),
                                      close_fds=True)
        lines: queue.Queue = queue.Queue()
        self._lines = lines
        proc = self._proc

        def pump():
            for raw in proc.stdout:  # type: ignore[union-attr]
                lines.put(raw)
            lines.put(None)

        threading.Thread(target=pump, name="judgelens-sandbox-reader", daemon=True).start()
        first = self._read(WORKER_START_TIMEOUT_S, what="start")
        if not first.get("ready"):
            self._kill()
            raise TemplateError("The template sandbox process did not start.", kind="error")

    def _kill(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                proc.kill()
                proc.wait(timeout=5)
            except Exception:
                pass
            for stream in (proc.stdin, proc.stdout):
                try:
                    stream.close()
                except Exception:
                    pass

    def close(self) -> None:
        with self._lock:
            self._kill()

    def _read(self, timeout: float, what: str) -> dict:
        assert self._lines is not None
        try:
            raw = self._lines.get(timeout=timeout)
        except queue.Empty:
            self._kill()
            if what == "start":
                raise TemplateError("The template sandbox process did not start in time.", kind="error") from None
            raise _Timeout() from None
        if raw is None:
            self._kill()
            raise _Crashed()
        return json.loads(raw)

    def _send(self, job: dict) -> None:
        if self._proc is None or self._proc.poll() is not None:
            self._kill()
            self._start()
        assert self._proc is not None and self._proc.stdin is not None
        data = (json.dumps(job, ensure_ascii=True) + "\n").encode("ascii")
        try:
            self._proc.stdin.write(data)
            self._proc.stdin.flush()
        except (BrokenPipeError, OSError):
            self._kill()
            self._start()
            self._proc.stdin.write(data)  # type: ignore[union-attr]
            self._proc.stdin.flush()  # type: ignore[union-attr]

    # -- jobs
    def render(self, messages: list[dict], contexts: list[dict], notes: list[dict]) -> list[RenderResult]:
        with self._lock:
            self._next_id += 1
            job_id = self._next_id
            self._send({"op": "render", "id": job_id, "messages": messages, "contexts": contexts, "notes": notes})
            out: list[RenderResult] = []
            while True:
                try:
                    reply = self._read(RENDER_TIMEOUT_S, what="render")
                except _Timeout:
                    raise TemplateError(
                        f"Rendering stopped: item {len(out) + 1} took longer than {RENDER_TIMEOUT_S:g} s. The "
                        "template probably loops too much (nested loops over large ranges?).", kind="timeout") from None
                except _Crashed:
                    raise TemplateError(
                        f"Rendering stopped: the sandbox process died on item {len(out) + 1} (probably over its "
                        f"{SANDBOX_MEMORY_MB} MB memory limit).", kind="memory") from None
                if reply.get("id") != job_id:
                    continue
                if reply.get("fatal"):
                    if reply.get("restart"):
                        self._kill()
                    raise TemplateError(reply["error"], kind=reply.get("kind", "error"))
                if reply.get("done"):
                    return out
                if reply.get("restart"):
                    self._kill()
                    raise TemplateError(reply["error"], kind=reply.get("kind", "error"))
                if "error" in reply:
                    if reply.get("kind") in ("security", "limit", "memory"):
                        self._drain(job_id)
                        raise TemplateError(reply["error"], kind=reply["kind"])
                    out.append(RenderResult(error=reply["error"], kind=reply.get("kind")))
                else:
                    out.append(RenderResult(messages=reply["messages"]))

    def _drain(self, job_id: int) -> None:
        """Read the rest of an abandoned job so the next job starts clean (or restart the worker)."""
        while True:
            try:
                reply = self._read(RENDER_TIMEOUT_S, what="render")
            except (_Timeout, _Crashed):
                return
            if reply.get("id") == job_id and (reply.get("done") or reply.get("fatal")):
                return

    def regex(self, pattern: str, text: str, take: str) -> tuple[str, str] | None:
        with self._lock:
            self._next_id += 1
            job_id = self._next_id
            self._send({"op": "regex", "id": job_id, "pattern": pattern, "text": text, "take": take})
            while True:
                try:
                    reply = self._read(RENDER_TIMEOUT_S, what="regex")
                except _Timeout:
                    raise RegexTimeout(f"The parser regex took longer than {RENDER_TIMEOUT_S:g} s on this output "
                                       "(catastrophic backtracking?) and was stopped.") from None
                except _Crashed:
                    raise RegexTimeout("The sandbox process died while running the parser regex.") from None
                if reply.get("id") != job_id:
                    continue
                if "error" in reply:
                    raise TemplateError(reply["error"], kind="invalid")
                return tuple(reply["match"]) if reply.get("match") else None


class _Timeout(Exception):
    pass


class _Crashed(Exception):
    pass


_WORKER = _Worker()


def render_in_worker(messages: list[dict], contexts: list[dict], notes: list[dict]) -> list["RenderResult"]:
    """Render chat messages (Jinja2 source) for each context in the worker process; at most
    ``RENDER_JOB_ITEMS`` contexts per call keep the per-item clock meaningful."""
    return _WORKER.render(messages, contexts, notes)


def shutdown_sandbox() -> None:
    """Stop the sandbox worker process (it restarts on the next render)."""
    _WORKER.close()


# ------------------------------------------------------------------------------------------------
# The sandboxed environment (built in both processes; renders only in the worker)

STR_METHODS = frozenset({
    "capitalize", "casefold", "count", "endswith", "find", "index", "isalnum", "isalpha", "isdigit",
    "islower", "isnumeric", "isspace", "istitle", "isupper", "join", "lower", "lstrip", "partition",
    "removeprefix", "removesuffix", "replace", "rfind", "rindex", "rpartition", "rsplit", "rstrip",
    "split", "splitlines", "startswith", "strip", "swapcase", "title", "upper"})
ALLOWED_FILTERS = frozenset({
    "abs", "capitalize", "count", "d", "default", "dictsort", "e", "escape", "first", "float", "groupby",
    "int", "items", "join", "last", "length", "list", "lower", "map", "max", "min", "reject", "rejectattr",
    "replace", "reverse", "round", "select", "selectattr", "sort", "string", "striptags", "sum", "title",
    "tojson", "trim", "truncate", "unique", "upper", "wordcount", "center", "indent", "wordwrap"})


def _sandbox_env():
    from jinja2 import StrictUndefined, pass_environment, pass_eval_context
    from jinja2 import filters as jf
    from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError
    from jinja2.utils import Cycler, Joiner, Namespace

    def refuse(msg: str):
        raise SecurityError(msg)

    def check_len(n: int, what: str) -> None:
        if n > MAX_STRING:
            refuse(f"{what} would build a text of {n:,} characters; the limit is {MAX_STRING:,}.")

    def replaced_len(s: str, old: str, new: str, count=None) -> int:
        hits = (len(s) + 1) if old == "" else s.count(old)
        if count is not None and count >= 0:
            hits = min(hits, int(count))
        return len(s) + hits * (len(new) - len(old))

    def joined(sep: str, items) -> list:
        items = list(items)
        if len(items) > MAX_RANGE * 10:
            refuse(f"join of {len(items):,} items is over the limit.")
        check_len(sum(len(str(x)) for x in items) + len(str(sep)) * max(0, len(items) - 1), "join")
        return items

    def capped_range(*args):
        r = range(*args)
        if len(r) > MAX_RANGE:
            refuse(f"range() of {len(r):,} items is over the limit of {MAX_RANGE:,} in judge templates.")
        return r

    def width_ok(width, what: str):
        w = len(width) if isinstance(width, str) else int(width)
        if w > MAX_PAD:
            refuse(f"{what} width {w:,} is over the limit of {MAX_PAD:,}.")

    def f_center(value, width=80):
        width_ok(width, "center")
        return jf.do_center(value, width)

    def f_indent(s, width=4, first=False, blank=False):
        width_ok(width, "indent")
        w = len(width) if isinstance(width, str) else int(width)
        text = str(s)
        check_len(len(text) + (text.count("\n") + 1) * w, "indent")
        return jf.do_indent(s, width, first, blank)

    @pass_environment
    def f_wordwrap(environment, s, width=79, break_long_words=True, wrapstring=None, break_on_hyphens=True):
        width_ok(width, "wordwrap")
        if int(width) < 1:
            refuse("wordwrap width must be at least 1.")
        return jf.do_wordwrap(environment, s, width, break_long_words, wrapstring, break_on_hyphens)

    @pass_eval_context
    def f_replace(eval_ctx, s, old, new, count=None):
        check_len(replaced_len(str(s), str(old), str(new), count), "replace")
        return jf.do_replace(eval_ctx, s, old, new, count)

    @pass_eval_context
    def f_join(eval_ctx, value, d="", attribute=None):
        items = list(value)
        if attribute is None:
            joined(d, items)
        return jf.do_join(eval_ctx, items, d, attribute)

    class JudgeSandbox(ImmutableSandboxedEnvironment):
        intercepted_binops = frozenset({"*", "**", "%", "+"})

        def call_binop(self, context, operator, left, right):
            seqs = (str, list, tuple)
            if operator == "**":
                refuse("The ** operator is not allowed in judge templates.")
            if operator == "*":
                if isinstance(left, seqs) or isinstance(right, seqs):
                    refuse("Repeating text or lists with * is not allowed in judge templates (it builds huge prompts).")
                if isinstance(left, int) and isinstance(right, int) and \
                        abs(left).bit_length() + abs(right).bit_length() > MAX_INT_BITS:
                    refuse("The number would be too large.")
            if operator == "%" and isinstance(left, str):
                refuse("String formatting with % is not allowed in judge templates.")
            if operator == "+" and isinstance(left, seqs) and isinstance(right, seqs):
                check_len(len(left) + len(right), "+")
            return super().call_binop(context, operator, left, right)

        def is_safe_attribute(self, obj, attr, value):
            if isinstance(obj, str) and attr not in STR_METHODS:
                return False
            return super().is_safe_attribute(obj, attr, value)

        def call(__self, __context, __obj, *args, **kwargs):  # noqa: N805 (Jinja's signature)
            owner = getattr(__obj, "__self__", None)
            name = getattr(__obj, "__name__", "")
            if isinstance(owner, str) and name == "replace" and len(args) >= 2:
                check_len(replaced_len(owner, str(args[0]), str(args[1]), args[2] if len(args) > 2 else None),
                          "replace")
            elif isinstance(owner, str) and name == "join" and args:
                args = (joined(owner, args[0]),) + args[1:]
            return super().call(__context, __obj, *args, **kwargs)

    env = JudgeSandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
    env.filters = {k: v for k, v in env.filters.items() if k in ALLOWED_FILTERS}
    env.filters.update(center=f_center, indent=f_indent, wordwrap=f_wordwrap, replace=f_replace, join=f_join)
    env.globals.clear()
    env.globals.update(range=capped_range, dict=dict, cycler=Cycler, joiner=Joiner, namespace=Namespace)
    return env


def _classify(exc: BaseException) -> tuple[str, str]:
    from jinja2 import TemplateSyntaxError, UndefinedError
    from jinja2.sandbox import SecurityError

    if isinstance(exc, SecurityError):
        return "security", f"Blocked by the template sandbox: {exc}"
    if isinstance(exc, UndefinedError):
        return "undefined", f"Undefined: {exc}"
    if isinstance(exc, TemplateSyntaxError):
        return "syntax", f"Syntax error, line {exc.lineno}: {exc.message}"
    if isinstance(exc, MemoryError):
        return "memory", f"The template used more memory than the sandbox allows ({SANDBOX_MEMORY_MB} MB)."
    if isinstance(exc, RecursionError):
        return "limit", "The template recursed too deeply."
    if isinstance(exc, OverflowError):
        return "limit", f"Blocked by the template sandbox: {exc}"
    return "error", f"{type(exc).__name__}: {exc}"


class _TooLong(Exception):
    pass


def _render_capped(template, context: dict) -> str:
    parts, n = [], 0
    for chunk in template.generate(context):
        n += len(chunk)
        if n > MAX_MESSAGE_CHARS:
            raise _TooLong()
        parts.append(chunk)
    return "".join(parts)


def _worker_main() -> None:  # pragma: no cover - runs in the sandbox process (tested through render)
    """The sandbox process: read JSON jobs from stdin, write JSON replies to stdout."""
    try:
        import resource

        limit = int(os.environ.get("JUDGELENS_SANDBOX_MEMORY_MB", SANDBOX_MEMORY_MB)) * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    except (ImportError, ValueError, OSError):
        pass
    env = _sandbox_env()
    out = sys.stdout

    def emit(obj: dict) -> None:
        out.write(json.dumps(obj, ensure_ascii=True) + "\n")
        out.flush()

    emit({"ready": True})
    for line in sys.stdin:
        try:
            job = json.loads(line)
        except ValueError:
            continue
        job_id = job.get("id")
        if job.get("op") == "regex":
            try:
                compiled = re.compile(job["pattern"])
                if job.get("take") == "last":
                    m = None
                    for m in compiled.finditer(job["text"]):
                        pass
                else:
                    m = compiled.search(job["text"])
                emit({"id": job_id, "match": [m.group(0), m.group(1) or ""] if m else None})
            except Exception as exc:
                emit({"id": job_id, "error": f"{type(exc).__name__}: {exc}"})
            continue
        try:
            compiled = []
            for i, m in enumerate(job["messages"], 1):
                try:
                    compiled.append((m["role"], env.from_string(m["content"])))
                except Exception as exc:
                    kind, msg = _classify(exc)
                    raise _Fatal(kind, f"Message {i} ({m['role']}): {msg}") from None
        except _Fatal as fatal:
            emit({"id": job_id, "fatal": True, "kind": fatal.kind, "error": fatal.message})
            continue
        except MemoryError:
            emit({"id": job_id, "fatal": True, "restart": True, "kind": "memory",
                  "error": f"The template used more memory than the sandbox allows ({SANDBOX_MEMORY_MB} MB)."})
            continue
        notes_list = job.get("notes") or []
        for k, ctx in enumerate(job["contexts"]):
            rendered = []
            try:
                for i, (role, tmpl) in enumerate(compiled, 1):
                    try:
                        rendered.append({"role": role, "content": _render_capped(tmpl, ctx)})
                    except _TooLong:
                        raise _Fatal("limit", f"Message {i} ({role}) renders to more than {MAX_MESSAGE_CHARS:,} "
                                              "characters (the limit); stopped.") from None
                    except MemoryError:
                        raise
                    except Exception as exc:
                        kind, msg = _classify(exc)
                        if kind == "undefined":
                            notes = notes_list[k] if k < len(notes_list) else {}
                            if notes:
                                msg += " Not available for this item: " + "; ".join(f"{n} ({w})" for n, w in notes.items())
                        raise _Fatal(kind, f"Message {i} ({role}): {msg}") from None
                emit({"id": job_id, "i": k, "messages": rendered})
            except _Fatal as fatal:
                emit({"id": job_id, "i": k, "kind": fatal.kind, "error": fatal.message})
            except MemoryError:
                rendered = []
                emit({"id": job_id, "i": k, "kind": "memory", "restart": True,
                      "error": f"The template used more memory than the sandbox allows ({SANDBOX_MEMORY_MB} MB)."})
                sys.exit(0)
        emit({"id": job_id, "done": True})


class _Fatal(Exception):
    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind
        self.message = message


if __name__ == "__main__":  # pragma: no cover
    _worker_main()
