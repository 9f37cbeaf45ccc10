"""The README's CLI examples run while the app (a real server process) has the same default DuckDB store open.

The app holds the file only while a query or write needs it (``lib.store.files.FileGate``), so every reading example
answers and the writing ones (an import, a verdict) go through; the app then shows what they wrote."""
from __future__ import annotations

import os
import re
import shlex
import shutil

import pytest

from browser_support import open_app, wait_for_app
from cli_forks import CliForks
from conftest import JA, ROOT
from fake_model import FakeModel

LOCAL_MODEL_URL = "http://127.0.0.1:8000/v1"   # the README's local vLLM server

pytestmark = pytest.mark.browser


def readme_cli_examples() -> list[list[str]]:
    """Each ``$ .venv/bin/python -m lib.cli ...`` line of the README's console block (continuations joined,
    comments dropped), as argv after ``lib.cli``; those that call a judge API (OPENAI_API_KEY=...) are left out.
    Those that name a local model endpoint (``--base-url http://127.0.0.1:8000/v1``, a vLLM server) run against
    the scripted model server."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```console\n(.*?)```", text, re.S).group(1)
    commands, current = [], ""
    for line in block.splitlines():
        if line.startswith("$ "):
            current = line[2:]
        elif current and line.startswith(" "):
            current += " " + line.strip()
        else:
            continue
        if current.rstrip().endswith("\\"):
            current = current.rstrip()[:-1]
            continue
        commands.append(current)
        current = ""
    out = []
    for command in commands:
        if "OPENAI_API_KEY" in command:
            continue
        argv = shlex.split(command, comments=True)
        assert argv[:3] == [".venv/bin/python", "-m", "lib.cli"], command
        out.append(argv[3:])
    return out


def test_readme_examples_are_found():
    examples = readme_cli_examples()
    names = [argv[0] for argv in examples]
    assert {"ingest", "scores", "compare", "pairwise", "sources", "agreement", "report", "flags", "links",
            "aliases", "harness-diff", "search", "verdict", "verdicts"} <= set(names)


@pytest.fixture(scope="module")
def app(tmp_path_factory, _sample_db):
    """The app on its own copy of the bundled sample, the store its first start would load (the session imported
    it once, conftest ``_sample_db``; the first start itself is test_browser.py's); (url, database path)."""
    from browser_support import running_app

    db = tmp_path_factory.mktemp("beside-app") / "judgelens.duckdb"
    shutil.copy(_sample_db, db)
    with running_app(db) as url:
        yield url, db


def test_every_readme_example_runs_while_the_app_is_open(app, page, tmp_path, request):
    url, db = app
    open_app(page, url)  # the app has opened the store and read it
    wait_for_app(page)
    env = {k: v for k, v in os.environ.items() if k not in ("JUDGELENS_STORE", "OPENAI_API_KEY")}
    env["JUDGELENS_DB"] = str(db)
    ran = []
    model_server = FakeModel().__enter__()
    request.addfinalizer(lambda: model_server.__exit__(None, None, None))
    # Each example is ``python -m lib.cli ARGV`` in a fresh fork of one process that imported lib once
    # (tests/cli_forks.py): the real CLI's code path, exit code and output, without 30 times the imports.
    cli = CliForks(env).__enter__()
    request.addfinalizer(lambda: cli.__exit__(None, None, None))
    for argv in readme_cli_examples():
        argv = [model_server.url if a == LOCAL_MODEL_URL else a for a in argv]
        if argv[0] == "ingest":  # the README's folders are the reader's own; import a file of the sample
            argv = ["ingest", str(JA / "judge_prompts.jsonl")]
        argv = [str(tmp_path / a) if a.endswith((".html", ".jsonl")) else a for a in argv]
        proc = cli.run(argv)
        assert proc.returncode == 0, (argv, proc.stderr)
        ran.append(argv[0])
    assert "ingest" in ran and "verdict" in ran and ran.count("generate") == 2
    assert len(model_server.chat_requests()) > 0                   # the generate examples reached the model server
    assert (tmp_path / "report.html").stat().st_size > 0
    assert '"author": "ana"' in (tmp_path / "verdicts.jsonl").read_text()
    # The app kept working beside the CLI, and its next run reads what the CLI wrote.
    open_app(page, url + "/review")
    wait_for_app(page)
    from playwright.sync_api import expect

    expect(page.get_by_test_id("stException")).to_have_count(0)
