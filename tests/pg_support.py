"""A throwaway PostgreSQL server for tests of the DuckLake store with a PostgreSQL catalog.

``running_postgres()`` runs Debian's ``initdb`` and ``pg_ctl`` (package ``postgresql``; scripts/test.sh
installs it) in a fresh temporary directory, listening on a free port on 127.0.0.1 only, and yields a
libpq conninfo (``host=127.0.0.1 port=N dbname=judgelens user=judgelens``). PostgreSQL refuses to run as
root, so when the tests run as root the server runs as the ``postgres`` user (made by the Debian package),
else as ``nobody``. The server is stopped and the directory removed on exit.

``running_postgres(root=FOLDER)`` keeps the server's files in ``FOLDER`` instead (``pgdata/``, ``sock/``,
``server.log``): made on first use, started again on later ones, stopped but kept on exit (the benchmarks'
pooled PostgreSQL-catalog stores, bench/stores.py). Only one server can run on a folder: if one already does
(another benchmark started it), it is used as it is and left running for its owner to stop.
"""
from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from browser_support import free_port

USER = "judgelens"
DBNAME = "judgelens"


def pg_bin() -> Path | None:
    """The newest installed PostgreSQL server binaries (Debian keeps them under /usr/lib/postgresql/N/bin)."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(Path(p).parts[-3]))
    return Path(found[-1]).parent if found else None


def _run_as() -> list[str]:
    if os.geteuid() != 0:
        return []
    import pwd

    for name in ("postgres", "nobody"):
        try:
            pwd.getpwnam(name)
            return ["runuser", "-u", name, "--"]
        except KeyError:
            continue
    raise RuntimeError("running as root and neither a 'postgres' nor a 'nobody' user exists to run PostgreSQL")


def _running_port(binaries: Path, data: Path) -> int | None:
    """The port of a server running on ``data`` right now (its postmaster.pid, and it answers), else None."""
    try:
        lines = (data / "postmaster.pid").read_text().splitlines()
        port = int(lines[3])
    except (OSError, IndexError, ValueError):
        return None
    ready = subprocess.run([str(binaries / "pg_isready"), "-h", "127.0.0.1", "-p", str(port)], capture_output=True)
    return port if ready.returncode == 0 else None


@contextmanager
def running_postgres(timeout: float = 30.0, password: str | None = None,
                     root: Path | None = None) -> Iterator[str]:
    """``password``: connections over TCP must give it (scram-sha-256); the conninfo yielded does not
    hold it (tests add ``password=...`` themselves, right or wrong). ``root``: a folder kept between runs
    (see the module's docstring) instead of a temporary one."""
    binaries = pg_bin()
    if binaries is None:
        raise RuntimeError("PostgreSQL is not installed (Debian: apt-get install postgresql; scripts/test.sh does it)")
    prefix = _run_as()
    keep = root is not None
    if keep:
        root = Path(root).resolve()
        root.mkdir(parents=True, exist_ok=True)
    else:
        root = Path(tempfile.mkdtemp(prefix="jl-pg-"))
    data, sock = root / ("pgdata" if keep else "data"), root / "sock"
    sock.mkdir(exist_ok=True)
    fresh = not (data / "PG_VERSION").exists()
    if keep and not fresh and (running := _running_port(binaries, data)):
        # Another process (another benchmark) runs the server on this folder now: use it, leave it to its owner
        yield f"host=127.0.0.1 port={running} dbname={DBNAME} user={USER}"
        return
    if prefix:
        owner = prefix[2]
        shutil.chown(root, owner)
        shutil.chown(sock, owner)
        if subprocess.run([*prefix, "test", "-w", str(root)], capture_output=True).returncode:
            raise RuntimeError(f"PostgreSQL runs as the user {owner!r} here and cannot reach {root}: a folder above it "
                               "is not searchable by that user (e.g. pytest's tmp_path); keep it elsewhere")
    port = free_port()
    log = root / "server.log"

    def run(*cmd: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run([*prefix, *cmd], check=True, capture_output=True, text=True, cwd=root, **kw)

    auth = ["--auth=trust"]
    env = dict(os.environ)
    if password is not None:
        pwfile = root / "pwfile"
        pwfile.write_text(password + "\n")
        if prefix:
            shutil.chown(pwfile, prefix[2])
        auth = ["--auth-local=trust", "--auth-host=scram-sha-256", f"--pwfile={pwfile}"]
        env["PGPASSWORD"] = password
    try:
        if fresh:
            shutil.rmtree(data, ignore_errors=True)  # a half-made one from an interrupted first run
            run(str(binaries / "initdb"), "-D", str(data), "-U", USER, *auth, "--encoding=UTF8", "--no-sync")
        run(str(binaries / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", str(int(timeout)), "-o",
            f"-c listen_addresses=127.0.0.1 -c port={port} -c unix_socket_directories={sock} "
            "-c max_connections=100 -c fsync=off -c full_page_writes=off -c synchronous_commit=off", "start")
        deadline = time.monotonic() + timeout
        while True:
            ready = subprocess.run([str(binaries / "pg_isready"), "-h", "127.0.0.1", "-p", str(port)],
                                   capture_output=True)
            if ready.returncode == 0:
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"PostgreSQL did not start: {log.read_text() if log.exists() else ''}")
            time.sleep(0.1)
        if fresh:
            subprocess.run([str(binaries / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", USER, DBNAME],
                           check=True, capture_output=True, env=env)
        yield f"host=127.0.0.1 port={port} dbname={DBNAME} user={USER}"
    finally:
        if (data / "postmaster.pid").exists():
            subprocess.run([*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-m", "fast" if keep else "immediate",
                            "-w", "stop"],
                           capture_output=True, cwd=root)
        if not keep:
            shutil.rmtree(root, ignore_errors=True)
