"""Issue 27, items 1-2: a PostgreSQL password in a store target never reaches a person. Real PostgreSQL (password
auth) started here, the server-down path (a port nothing listens on), the CLI as a subprocess and the app through
AppTest; every message asserted exactly, and the password string asserted absent from everything shown."""
from __future__ import annotations

import io
import logging
import os
import subprocess
import sys

import pytest

from lib.errors import DatabaseBusyError, JudgeLensError, RedactingFilter, redact
from lib.store import Store

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SECRET = "Sup3r-Secret_pw"  # the server's real password
WRONG = "Wr0ng-Guess_pw"


# -- the one function --------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, shown", [
    ("host=h dbname=d password=abc user=u", "host=h dbname=d password=*** user=u"),
    ("host=h password='a b\\'c' user=u", "host=h password=*** user=u"),
    ("password = 'with space' port=5", "password = *** port=5"),
    ("ducklake:postgres:dbname=j password=x1", "ducklake:postgres:dbname=j password=***"),
    ("ducklake:postgres:postgresql://ana:pw@db.internal:5432/j", "ducklake:postgres:postgresql://ana:***@db.internal:5432/j"),
    ("postgresql://ana@db/j?sslmode=require&password=pw", "postgresql://ana@db/j?sslmode=require&password=***"),
    ("PGPASSWORD=pw psql; sslpassword=k host=h", "PGPASSWORD=*** psql; sslpassword=*** host=h"),
    ('at "host=h password=pw": FATAL', 'at "host=h password=*** FATAL'),  # over-hidden, never under
    ("no secret: host=h user=u", "no secret: host=h user=u"),
])
def test_redact_hides_every_form(text, shown):
    assert redact(text) == shown
    assert redact(redact(text)) == shown  # idempotent: boundaries may redact what another already did


def test_every_titled_error_is_redacted():
    assert JudgeLensError("open ducklake:postgres:host=h password=pw failed").message == \
        "open ducklake:postgres:host=h password=*** failed"
    assert "pw" not in str(JudgeLensError("postgresql://u:pw@h/d"))


def test_log_records_are_redacted_with_their_traceback():
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.addFilter(RedactingFilter())
    logger = logging.getLogger("judgelens.test_redact")
    logger.addHandler(handler)
    try:
        try:
            raise RuntimeError(f"Unable to connect to Postgres at \"host=h password={SECRET}\"")
        except RuntimeError:
            logger.exception("opening %s", f"ducklake:postgres:host=h password={SECRET}")
    finally:
        logger.removeHandler(handler)
    text = out.getvalue()
    assert SECRET not in text
    assert text.startswith("opening ducklake:postgres:host=h password=***\nTraceback")
    assert 'RuntimeError: Unable to connect to Postgres at "host=h password=***' in text


# -- a real server with password authentication -------------------------------------------------------------

@pytest.fixture(scope="module")
def pg_pw():
    from pg_support import pg_bin, running_postgres

    if pg_bin() is None:
        pytest.skip("PostgreSQL is not installed (scripts/test.sh installs Debian's postgresql)")
    with running_postgres(password=SECRET) as conninfo:
        yield conninfo


def port_of(conninfo: str) -> str:
    return dict(p.split("=", 1) for p in conninfo.split())["port"]


def dead_port() -> str:
    from browser_support import free_port

    return str(free_port())


def failures(conninfo: str) -> dict[str, tuple[str, str]]:
    """name -> (target, exact message) for each way opening the store fails."""
    port = port_of(conninfo)
    nodb = conninfo.replace("dbname=judgelens", "dbname=nosuch")
    down = f"host=127.0.0.1 port={dead_port()} dbname=judgelens user=judgelens"
    auth = (f'connection to server at "127.0.0.1", port {port} failed: FATAL:  password authentication failed '
            'for user "judgelens".')
    return {
        "wrong password": (f"ducklake:postgres:{conninfo} password={WRONG}",
                           f"Could not open the DuckLake store ducklake:postgres:{conninfo} password=***: {auth}"),
        "quoted wrong password": (f"ducklake:postgres:{conninfo} password='{WRONG} x'",
                                  f"Could not open the DuckLake store ducklake:postgres:{conninfo} password=***: "
                                  f"{auth}"),
        "uri": (f"ducklake:postgres:postgresql://judgelens:{WRONG}@127.0.0.1:{port}/judgelens",
                f"Could not open the DuckLake store ducklake:postgres:postgresql://judgelens:***@127.0.0.1:{port}"
                f"/judgelens: {auth}"),
        "no such database": (f"ducklake:postgres:{nodb} password={SECRET}",
                             f"Could not open the DuckLake store ducklake:postgres:{nodb} password=***: connection "
                             f'to server at "127.0.0.1", port {port} failed: FATAL:  database "nosuch" does not exist.'),
        "server down": (f"ducklake:postgres:{down} password={SECRET}",
                        f"Could not open the DuckLake store ducklake:postgres:{down} password=***: connection to "
                        f'server at "127.0.0.1", port {down.split("port=")[1].split()[0]} failed: Connection refused. '
                        "Is the server running on that host and accepting TCP/IP connections?"),
    }


NAMES = ["wrong password", "quoted wrong password", "uri", "no such database", "server down"]


@pytest.mark.parametrize("name", NAMES)
def test_store_open_failure_says_why_without_the_password(pg_pw, tmp_path, name):
    target, message = failures(pg_pw)[name]
    with pytest.raises(DatabaseBusyError) as caught:
        Store(target, data_path=tmp_path / "data")
    assert caught.value.title == "Could not open the store"
    assert caught.value.message == message
    for secret in (SECRET, WRONG):
        assert secret not in caught.value.message


def run_cli(*args: str, env_extra: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGELENS_")}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "lib.cli", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.mark.parametrize("name", ["wrong password", "uri", "no such database", "server down"])
def test_cli_store_info_failure_hides_the_password(pg_pw, tmp_path, name):
    target, message = failures(pg_pw)[name]
    done = run_cli("store", "info", "--store", target, "--data-path", str(tmp_path / "data"),
                   env_extra={"JUDGELENS_DB": str(tmp_path / "x.duckdb")})
    assert done.returncode == 3
    assert done.stderr == message + "\n"
    assert done.stdout == ""
    for secret in (SECRET, WRONG):
        assert secret not in done.stderr


@pytest.mark.parametrize("name", ["wrong password", "server down"])
def test_cli_failure_through_environment_hides_the_password(pg_pw, tmp_path, name):
    target, message = failures(pg_pw)[name]
    done = run_cli("sources", env_extra={"JUDGELENS_STORE": target, "JUDGELENS_DATA_PATH": str(tmp_path / "d")})
    assert (done.returncode, done.stderr, done.stdout) == (3, message + "\n", "")


@pytest.mark.parametrize("name", ["wrong password", "server down"])
def test_cli_migrate_target_failure_hides_the_password(pg_pw, tmp_path, name):
    target, message = failures(pg_pw)[name]
    Store(tmp_path / "src.duckdb").close()
    done = run_cli("store", "migrate", "--from", str(tmp_path / "src.duckdb"), "--to", target,
                   "--data-path", str(tmp_path / "data"))
    assert (done.returncode, done.stderr, done.stdout) == (3, message + "\n", "")


def test_cli_store_info_and_migrate_on_a_working_store_hide_the_password(pg_pw, tmp_path):
    from conftest import fresh_pg_database

    env = {"PGPASSWORD": SECRET}
    os.environ["PGPASSWORD"] = SECRET  # createdb in fresh_pg_database connects over TCP
    try:
        conninfo = fresh_pg_database(pg_pw)
    finally:
        del os.environ["PGPASSWORD"]
    target = f"ducklake:postgres:{conninfo} password={SECRET}"
    Store(tmp_path / "src.duckdb").close()
    done = run_cli("store", "migrate", "--from", str(tmp_path / "src.duckdb"), "--to", target,
                   "--data-path", str(tmp_path / "data"), env_extra=env)
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert done.stdout.splitlines()[0] == f"Copied 0 row(s) from {tmp_path / 'src.duckdb'} into " \
                                          f"ducklake:postgres:{conninfo} password=***:"
    assert done.stdout.splitlines()[-1] == (
        f"Use it with JUDGELENS_STORE='ducklake:postgres:{conninfo} password=***' JUDGELENS_DATA_PATH="
        f"'{tmp_path / 'data'}', or --store (the password is hidden here: give yours in its place, or keep it "
        "in PGPASSWORD or ~/.pgpass).")
    done = run_cli("store", "info", "--store", target, env_extra=env)
    assert done.returncode == 0, done.stderr
    assert SECRET not in done.stdout + done.stderr
    assert done.stdout.splitlines()[:3] == [f"store:   ducklake:postgres:{conninfo} password=***",
                                            "kind:    ducklake (postgres catalog)",
                                            f"catalog: {conninfo} password=***"]


@pytest.mark.parametrize("name", ["wrong password", "server down", "no such database"])
def test_app_shows_the_failure_without_the_password(pg_pw, tmp_path, monkeypatch, name):
    from streamlit.testing.v1 import AppTest

    target, message = failures(pg_pw)[name]
    monkeypatch.setenv("JUDGELENS_STORE", target)
    monkeypatch.setenv("JUDGELENS_DATA_PATH", str(tmp_path / "data"))
    at = AppTest.from_file(os.path.join(ROOT, "app.py"), default_timeout=120)
    at.run()
    assert not at.exception
    assert [e.value for e in at.error] == ["**Could not open the store**"]
    assert [c.value for c in at.code] == [message]
    shown = repr([(el.type, getattr(el, "value", None)) for el in at.main]) + repr(at.sidebar)
    for secret in (SECRET, WRONG):
        assert secret not in shown
    # what Streamlit logs (an uncaught exception's traceback) passes the redacting filter too
    handlers = logging.getLogger("streamlit.error_util").handlers
    assert handlers and all(any(isinstance(f, RedactingFilter) for f in h.filters) for h in handlers)


def test_cli_an_unexpected_error_quoting_a_password_prints_a_redacted_traceback(monkeypatch, capsys):
    from lib.cli import store as store_cli
    from lib.cli.main import main as cli_main

    def boom(args):
        raise RuntimeError(f'Unable to connect to Postgres at "host=h password={SECRET}": gone')

    monkeypatch.setattr(store_cli, "cmd_info", boom)
    assert cli_main(["store", "info"]) == 1
    err = capsys.readouterr().err
    assert SECRET not in err
    assert err.startswith("Traceback (most recent call last):")
    assert err.endswith('RuntimeError: Unable to connect to Postgres at "host=h password=*** gone\n')

    def plain(args):
        raise RuntimeError("a bug without secrets")

    monkeypatch.setattr(store_cli, "cmd_info", plain)
    with pytest.raises(RuntimeError, match="a bug without secrets"):  # left to Python as before
        cli_main(["store", "info"])
