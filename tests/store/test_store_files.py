"""Database files JudgeLens cannot use (issue 8, defects 9 and 11): a SQLite or text file as --db, a missing,
truncated or damaged file, a store in a read-only folder. Each gets a message that says what is wrong and
what to do (never a traceback), and DuckDB never installs or loads an extension by itself."""
from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest
from conftest import JA, ROOT

from lib import cli
from lib.errors import DatabaseFileError
from lib.ingest.importer import ingest
from lib.store import Store

QUESTIONS = JA / "ja_mt_bench" / "question.jsonl"
WHAT_TO_DO_DAMAGED = ("It was probably cut short (a full disk, a copy that did not finish) or changed by another "
                      "program. Restore it from a backup, or move it aside and import your harness files into a new "
                      "one (python -m lib.cli ingest PATH --db NEW_FILE).")


def cli_err(capsys, *args: str) -> tuple[int, str]:
    code = cli.main(list(args))
    return code, capsys.readouterr().err.strip()


@pytest.fixture(scope="module")
def small_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("small") / "small.duckdb"
    with Store(path) as s:
        ingest(s, [JA / "ja_mt_bench"])
    return path


# --- defect 9: not a DuckDB file; no extension loading ---------------------------------------------------

def test_a_sqlite_file_is_refused_and_left_alone(tmp_path, capsys):
    path = tmp_path / "data.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE t (a)")
    con.commit()
    con.close()
    before = path.read_bytes()
    message = (f"{path} is a SQLite database, not a DuckDB file. JudgeLens keeps its data in DuckDB and leaves this "
               "file alone: give --db (or JUDGELENS_DB) a new file name such as judgelens.duckdb and import your "
               "harness files into it.")
    with pytest.raises(DatabaseFileError) as info:
        Store(path)
    assert (info.value.title, info.value.message) == ("Not a JudgeLens database", message)
    for args in (["sources", "--db", str(path)], ["ingest", "--db", str(path), str(QUESTIONS)]):
        assert cli_err(capsys, *args) == (2, message)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data.sqlite"]  # no .wal either


def test_a_text_file_is_refused(tmp_path, capsys):
    path = tmp_path / "notes.db"
    path.write_text("hello\n" * 100)
    assert cli_err(capsys, "scores", "--db", str(path)) == (2, (
        f"{path} is not a DuckDB database file (it does not start like one). JudgeLens leaves it alone: give --db "
        "(or JUDGELENS_DB) a new file name such as judgelens.duckdb, or an existing JudgeLens database."))


@pytest.mark.parametrize("read_only", [False, True])
def test_connections_never_install_or_load_extensions(small_db, tmp_path, read_only):
    path = tmp_path / "x.duckdb"
    shutil.copy(small_db, path)
    with Store(path, read_only=read_only) as store, store.read() as cur:
        assert cur.execute("SELECT current_setting('autoinstall_known_extensions'), "
                           "current_setting('autoload_known_extensions')").fetchone() == (False, False)
        with pytest.raises(duckdb.Error) as info:  # would autoload (or download) the sqlite extension
            cur.execute("SELECT * FROM sqlite_scan('nothing.db', 't')")
        assert "autoload" in str(info.value).lower() or "not loaded" in str(info.value).lower() or \
            "does not exist" in str(info.value).lower()


# --- defect 11: missing, not a store, truncated, damaged, read-only folder ----------------------------------

def test_reading_commands_do_not_create_a_missing_database(tmp_path, capsys):
    path = tmp_path / "nope.duckdb"
    for command in ("sources", "scores", "flags"):
        assert cli_err(capsys, command, "--db", str(path)) == (2, (
            f"There is no JudgeLens database at {path} yet. Import something into it first (python -m lib.cli "
            f"ingest PATH --db {path}), or point --db (or JUDGELENS_DB) at an existing one."))
    assert not path.exists()


def test_a_duckdb_file_without_the_schema(tmp_path, capsys):
    path = tmp_path / "other.duckdb"
    duckdb.connect(str(path)).execute("CREATE TABLE x (a INT)").close()
    assert cli_err(capsys, "sources", "--db", str(path)) == (2, (
        f"{path} is a DuckDB file but not a JudgeLens store (it has no sources table). Import into it first "
        f"(python -m lib.cli ingest PATH --db {path}), or point --db at a JudgeLens database."))
    assert cli.main(["ingest", "--db", str(path), str(QUESTIONS)]) == 0  # a writing command makes it one


@pytest.mark.parametrize("keep", [0.5, 3000])
def test_a_truncated_database(small_db, tmp_path, capsys, keep):
    path = tmp_path / "cut.duckdb"
    shutil.copy(small_db, path)
    os.truncate(path, int(path.stat().st_size * keep) if keep < 1 else keep)
    for command in ("sources", "flags", "ingest"):
        code, err = cli_err(capsys, command, "--db", str(path), *([str(QUESTIONS)] if command == "ingest" else []))
        assert code == 2
        assert err.startswith(f"The database {path} is damaged: Could not read enough bytes from file")
        assert err.endswith(WHAT_TO_DO_DAMAGED)
        assert "Traceback" not in err


def test_a_partly_damaged_database(small_db, tmp_path, capsys):
    """The file opens (sources work) but a data block of the answers is damaged: flags reads it."""
    path = tmp_path / "part.duckdb"
    shutil.copy(small_db, path)
    with duckdb.connect(str(path), read_only=True) as con:
        block_size = con.execute("SELECT block_size FROM pragma_database_size()").fetchone()[0]
        block = con.execute("SELECT min(block_id) FROM pragma_storage_info('answers') "
                            "WHERE column_name = 'text' AND block_id >= 0").fetchone()[0]
    with open(path, "r+b") as fh:
        fh.seek(3 * 4096 + block * block_size + 100)  # the three header blocks, then the data blocks
        fh.write(b"\0" * 500)
    assert cli.main(["sources", "--db", str(path)]) == 0
    capsys.readouterr()
    code, err = cli_err(capsys, "flags", "--db", str(path))
    assert code == 2
    assert err.startswith(f"The database {path} is damaged: Corrupt database file: computed checksum")
    assert err.endswith(WHAT_TO_DO_DAMAGED)


def as_other_user(*args: str) -> subprocess.CompletedProcess:
    """Run the CLI as a user without write access (root ignores permissions, so drop to nobody)."""
    prefix = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if not setpriv:
            pytest.skip("running as root without setpriv: cannot make a folder read-only")
        prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    return subprocess.run([*prefix, sys.executable, "-m", "lib.cli", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120, env={**os.environ, "HOME": "/nonexistent"})


def test_a_database_in_a_read_only_folder(small_db):
    folder = Path(tempfile.mkdtemp(prefix="judgelens-ro-"))
    try:
        path = folder / "ro.duckdb"
        shutil.copy(small_db, path)
        os.chmod(path, 0o666)
        os.chmod(folder, 0o555)
        proc = as_other_user("sources", "--db", str(path))
        assert (proc.returncode, proc.stderr) == (0, "")
        assert "question.jsonl" in proc.stdout
        for command in ("scores", "flags"):
            assert as_other_user(command, "--db", str(path)).returncode == 0
        proc = as_other_user("ingest", "--db", str(path), str(QUESTIONS))
        assert (proc.returncode, proc.stderr.strip()) == (2, (
            f"JudgeLens can read the database {path} but not write to it (DuckDB writes the file and a ro.duckdb.wal "
            "file next to it, and the system said: permission denied). Reading commands (sources, scores, "
            "agreement, flags, report) work on it as it is; to import or re-judge, copy it to a folder you can "
            "write to and use --db with the copy."))
        assert "Traceback" not in proc.stderr
    finally:
        os.chmod(folder, 0o755)
        shutil.rmtree(folder)


def test_the_app_shows_a_damaged_database(small_db, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    path = tmp_path / "cut.duckdb"
    shutil.copy(small_db, path)
    os.truncate(path, path.stat().st_size // 2)
    monkeypatch.setenv("JUDGELENS_DB", str(path))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60).run()
    assert not at.exception
    assert [e.value for e in at.error] == ["**The database file is damaged**"]
    assert at.code[0].value.startswith(f"The database {path} is damaged: Could not read enough bytes")


def test_read_only_and_plain_connections_share_a_file_in_one_process(small_db, tmp_path):
    """DuckDB holds a file under one configuration per process: a reading command run in-process while the
    app's read-write store is open (or a plain duckdb connection) joins it, still with extensions off."""
    path = tmp_path / "shared.duckdb"
    shutil.copy(small_db, path)
    with Store(path) as writer, Store(path, read_only=True) as reader, reader.read() as cur:
        assert cur.execute("SELECT count(*) FROM sources").fetchone()[0] > 0
        with writer.read() as wcur:
            assert wcur.execute("SELECT current_setting('autoload_known_extensions')").fetchone() == (False,)
    plain = duckdb.connect(str(path))
    try:
        with Store(path, read_only=True) as reader, reader.read() as cur:
            assert cur.execute("SELECT current_setting('autoinstall_known_extensions'), "
                               "current_setting('autoload_known_extensions')").fetchone() == (False, False)
    finally:
        plain.close()


# --- issue 26: the judgments' two long texts are stored uncompressed ------------------------------------------

def test_the_judgments_long_texts_are_stored_uncompressed(tmp_path):
    """``rationale`` and ``judge_prompt`` (most of a judgment file's bytes) are declared ``USING COMPRESSION
    uncompressed``: DuckDB's FSST compression of them cost more CPU than the rest of an import of 1M judgments
    (synthetic texts of few distinct sentences, which it compresses; real Japanese judge texts it mostly leaves
    plain after analysing them). The same texts in a table without the declaration are compressed, so the
    declaration is what keeps them plain."""
    texts = ("SELECT 'fastchat' AS harness, 'b' AS bench, 'j' AS judge, 'm' AS model, (i % 80)::VARCHAR AS question_id, "
             "1 AS turn, 'ok' AS parse_status, repeat('The answer is helpful and relevant. ', 30) || i AS rationale, "
             "repeat('[Question] Explain the answer step by step. ', 40) || i AS judge_prompt FROM range(20000) t(i)")
    storage = ("SELECT column_name, list(DISTINCT compression ORDER BY compression) FROM pragma_storage_info('{t}') "
               "WHERE segment_type = 'VARCHAR' AND column_name IN ('rationale', 'judge_prompt') "
               "GROUP BY column_name ORDER BY column_name")
    with Store(tmp_path / "s.duckdb") as store:
        with store.write() as cur:
            cur.execute(f"INSERT INTO single_judgments BY NAME SELECT 1 AS source_id, * FROM ({texts})")
            cur.execute(f"CREATE TABLE plain AS SELECT rationale, judge_prompt FROM ({texts})")
        with store.write() as cur:
            cur.execute("CHECKPOINT")
            stored = dict(cur.execute(storage.format(t="single_judgments")).fetchall())
            plain = dict(cur.execute(storage.format(t="plain")).fetchall())
    assert stored == {"judge_prompt": ["Uncompressed"], "rationale": ["Uncompressed"]}
    assert "Uncompressed" not in plain["rationale"] + plain["judge_prompt"], plain
