"""Many ``python -m lib.cli ...`` runs without paying the imports each time: a fork server.

A test that runs dozens of CLI commands (the README's examples) spent most of each one's CPU importing pandas,
scipy, plotly and lib (0.8-1.5 s a command). ``CliForks`` starts ONE helper process (this file run as a script,
with the environment and working directory the commands get), which imports lib.cli and the rest of lib once and
then, for each command, forks a child that runs ``lib.cli`` exactly as ``python -m lib.cli ARGV`` does:
``runpy.run_module("lib.cli", run_name="__main__", alter_sys=True)`` with ``sys.argv`` set, stdin from /dev/null,
stdout and stderr to files, and the child ends the way the interpreter ends a script (``sys.exit(main())``'s exit
code, an uncaught exception's traceback and exit 1, threads joined, atexit run, streams flushed; ``_run_as_main``). The helper itself never runs a command, so each child starts from the same state: nothing one command
does (module globals, caches, open connections, environment changes) can reach the next.

``CliForks.run(argv)`` returns a ``subprocess.CompletedProcess`` like ``subprocess.run([sys.executable, "-m",
"lib.cli", *argv], capture_output=True, text=True, env=env, cwd=ROOT)`` (tests/cli/test_cli_forks.py compares the
two)."""
from __future__ import annotations

import json
import locale
import os
import select
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class CliForks:
    """``with CliForks(env) as cli: proc = cli.run(["scores", "--by", "judge"])``: each ``run`` is one command in a
    fresh fork of a process that has imported lib once (``env``: the commands' whole environment)."""

    def __init__(self, env: dict[str, str], timeout: float = 600):
        self.env, self.timeout = dict(env), timeout

    def __enter__(self) -> CliForks:
        self._dir = tempfile.TemporaryDirectory(prefix="jl-cli-forks-")
        self._err = open(Path(self._dir.name) / "server.err", "w+b")  # noqa: SIM115 (closed in __exit__)
        self._proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve())], cwd=ROOT, env=self.env,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._err)
        self._runs = 0
        self._reply()  # "ready": the imports are done
        return self

    def __exit__(self, *exc) -> None:
        self._proc.stdin.close()
        try:
            self._proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
        self._proc.stdout.close()
        self._err.close()
        self._dir.cleanup()

    def _reply(self) -> dict:
        ready, _, _ = select.select([self._proc.stdout], [], [], self.timeout)
        line = self._proc.stdout.readline() if ready else b""
        if not line:
            if ready:
                self._proc.wait(timeout=30)
            else:
                self._proc.kill()
            self._err.seek(0)
            raise RuntimeError("the CLI fork server " + ("stopped" if ready else f"did not answer in {self.timeout} s")
                               + ":\n" + self._err.read().decode(errors="replace")[-3000:])
        return json.loads(line)

    def run(self, argv: list[str]) -> subprocess.CompletedProcess:
        self._runs += 1
        out, err = (Path(self._dir.name) / f"{self._runs}.{name}" for name in ("out", "err"))
        self._proc.stdin.write((json.dumps({"argv": list(argv), "out": str(out), "err": str(err)}) + "\n").encode())
        self._proc.stdin.flush()
        code = self._reply()["returncode"]
        encoding = locale.getpreferredencoding(False)   # as subprocess.run(text=True) decodes

        def text(path: Path) -> str:
            with open(path, encoding=encoding, newline=None) as f:
                return f.read()

        return subprocess.CompletedProcess([sys.executable, "-m", "lib.cli", *argv], code, text(out), text(err))


def _run_as_main() -> int:
    """Run lib.cli as ``__main__`` and end as the interpreter ends a script: the exit status of its ``SystemExit``
    (None 0, a number itself, anything else printed to stderr and 1), an uncaught exception's traceback and 1; then
    non-daemon threads joined and atexit functions run, streams flushed. The child then leaves with ``os._exit``:
    C++ static destructors do not run, because DuckDB's, in a child forked from a process that imported it, abort
    ("terminate called without an active exception") once a connection used several threads."""
    import atexit
    import runpy
    import threading

    try:
        runpy.run_module("lib.cli", run_name="__main__", alter_sys=True)
        code = 0
    except SystemExit as exc:
        if exc.code is None:
            code = 0
        elif isinstance(exc.code, int):
            code = exc.code & 0xFF
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except BaseException:
        sys.excepthook(*sys.exc_info())
        code = 1
    threading._shutdown()   # what the interpreter does at exit: join the threads that are not daemons
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    return code


def _serve() -> None:
    """The helper process: import lib once, then one forked child per request line on stdin."""
    import importlib
    import pkgutil

    sys.path[0] = os.getcwd()   # as ``python -m`` sets it (this script's folder, tests/, is not on the path)
    # Requests and replies on their own descriptors; 0 reads /dev/null and 1 goes to stderr until a child
    # points them at its files, so no buffered text of this process can reach a child's output.
    requests, replies = os.fdopen(os.dup(0), "rb"), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    import lib
    import lib.cli.main  # noqa: F401 (what every command imports)
    for module in pkgutil.walk_packages(lib.__path__, "lib."):   # and what the commands import when they run
        if module.name != "lib.cli.__main__":
            importlib.import_module(module.name)
    os.write(replies, b'{"ready": true}\n')
    for line in requests:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:  # the child: becomes ``python -m lib.cli ARGV`` with its output in the two files
            requests.close()
            os.close(replies)
            for fd, path in ((1, request["out"]), (2, request["err"])):
                target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                os.dup2(target, fd)
                os.close(target)
            sys.argv = [sys.argv[0], *request["argv"]]
            os._exit(_run_as_main())
        _, status = os.waitpid(pid, 0)
        os.write(replies, (json.dumps({"returncode": os.waitstatus_to_exitcode(status)}) + "\n").encode())


if __name__ == "__main__":
    _serve()
