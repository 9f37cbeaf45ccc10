"""Shared fixtures. Tests never touch data/judgelens.duckdb: every store lives in tmp_path."""
from __future__ import annotations

from contextlib import contextmanager

import shutil
from pathlib import Path
from typing import NamedTuple

import pytest

from lib.ingest.importer import ingest
from lib.keys import ItemKey
from lib.store import Store

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "data" / "sample"
JA = SAMPLE / "shisa-ja-mt-bench-harness"          # FastChat JA harness data root
EN = SAMPLE / "stefanstud-fastchat"                # FastChat English fork with pairwise judgments
SWALLOW = SAMPLE / "swallow" / "lighteval" / "outputs"
SAME_MODELS = SAMPLE / "swallow-same-models" / "lighteval" / "outputs"  # the JA harness's two models, Swallow's way
TEST_DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch, tmp_path):
    """No test reads the developer's database or keys."""
    monkeypatch.setenv("JUDGELENS_DB", str(tmp_path / "default.duckdb"))
    monkeypatch.delenv("JUDGELENS_STORE", raising=False)
    monkeypatch.delenv("JUDGELENS_DATA_PATH", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture
def store(tmp_path) -> Store:
    s = Store(tmp_path / "jl.duckdb")
    yield s
    s.close()


@pytest.fixture(scope="session")
def _sample_db(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("sample") / "sample.duckdb"
    with Store(path) as s:
        ingest(s, [SAMPLE])
    return path


@pytest.fixture
def sample_store(_sample_db, tmp_path) -> Store:
    """A store holding the whole bundled sample (copied per test, so tests may write to it)."""
    path = tmp_path / "sample.duckdb"
    shutil.copy(_sample_db, path)
    s = Store(path)
    yield s
    s.close()


# ----------------------------------------------------------------------------------------------
# A scripted judge: the real openai client over HTTP to tests/fake_openai.py on 127.0.0.1.

@pytest.fixture
def judge_responder():
    """How ``server`` answers the requests its queue does not cover (``FakeOpenAI.responder``: body -> Reply or
    text); None: its default "Rating: [[5]]". Override this fixture in a test module to script the judge."""
    return None


@pytest.fixture
def server(judge_responder):
    """A local OpenAI-compatible judge for one test (``tests/fake_openai.py``): ``server.url``,
    ``server.queue(...)``, ``server.chat_requests()``."""
    from fake_openai import FakeOpenAI

    with FakeOpenAI() as srv:
        srv.responder = judge_responder
        yield srv


def judge_config(server, **kw):
    """A ``JudgeConfig`` for ``server`` (model "judge-x", a 5 s timeout, one retry after 10-50 ms);
    keyword arguments override any field."""
    from lib.judging.config import JudgeConfig

    return JudgeConfig(**{"base_url": server.url, "model": "judge-x", "timeout_s": 5, "max_retries": 1,
                          "backoff_base_s": 0.01, "backoff_cap_s": 0.05, **kw})


# ----------------------------------------------------------------------------------------------
# DuckLake team stores (lib.store): a SQLite catalog in tmp, or a PostgreSQL catalog on the session's
# throwaway server (tests/pg_support.py). Each test gets its own catalog and Parquet folder.

@pytest.fixture(scope="session")
def postgres() -> str:
    """libpq conninfo of a PostgreSQL server started for this test session (stopped at the end)."""
    from pg_support import pg_bin, running_postgres

    if pg_bin() is None:
        pytest.skip("PostgreSQL is not installed (scripts/test.sh installs Debian's postgresql)")
    with running_postgres() as conninfo:
        yield conninfo


_pg_databases = iter(range(1, 10_000))


def fresh_pg_database(conninfo: str) -> str:
    """A new empty database on the test server; its conninfo."""
    from pg_support import pg_bin

    name = f"jl_{next(_pg_databases)}"
    parts = dict(p.split("=", 1) for p in conninfo.split())
    import subprocess

    subprocess.run([str(pg_bin() / "createdb"), "-h", parts["host"], "-p", parts["port"], "-U", parts["user"], name],
                   check=True, capture_output=True)
    return conninfo.replace(f"dbname={parts['dbname']}", f"dbname={name}")


def lake_target(kind: str, tmp_path: Path, request) -> tuple[str, Path]:
    """(JUDGELENS_STORE value, data folder) for a new DuckLake store with a ``kind`` catalog."""
    data = tmp_path / "lake-data"
    if kind == "sqlite":
        return f"ducklake:sqlite:{tmp_path / 'catalog.sqlite'}", data
    return f"ducklake:postgres:{fresh_pg_database(request.getfixturevalue('postgres'))}", data


@pytest.fixture(params=["sqlite", "postgres"])
def lake_store(request, tmp_path) -> Store:
    """An empty DuckLake store, once with a SQLite and once with a PostgreSQL catalog."""
    target, data = lake_target(request.param, tmp_path, request)
    s = Store(target, data_path=data)
    yield s
    s.close()


class SampleLake(NamedTuple):
    store: Store
    report: object   # the import's ``IngestReport``


@pytest.fixture(scope="session")
def _sample_lakes() -> dict[str, SampleLake]:
    built: dict[str, SampleLake] = {}
    yield built
    for lake in built.values():
        lake.store.close()


@pytest.fixture(params=["sqlite", "postgres"])
def sample_lake(request, _sample_lakes, tmp_path_factory) -> SampleLake:
    """A DuckLake store holding the whole bundled sample (``.store``; ``.report``: its import's report), once with a
    SQLite and once with a PostgreSQL catalog. Imported once per catalog kind and test session (each xdist worker)
    and shared by the tests that only read it (an import of the sample into a lake costs ~9 CPU-s): a test that
    changed it fails (its data version is compared after the test); a test that writes takes ``lake_store``."""
    kind = request.param
    if kind not in _sample_lakes:
        target, data = lake_target(kind, tmp_path_factory.mktemp(f"sample-lake-{kind}"), request)
        store = Store(target, data_path=data)
        _sample_lakes[kind] = SampleLake(store, ingest(store, [SAMPLE]))
    lake = _sample_lakes[kind]
    version = lake.store.data_version()
    yield lake
    assert lake.store.data_version() == version, "the test changed the shared sample lake: use lake_store"



@pytest.fixture
def app_db(_sample_db, tmp_path, monkeypatch) -> Path:
    """A copy of the sample database of this test's own, the one the app opens ($JUDGELENS_DB)."""
    db = tmp_path / "app.duckdb"
    shutil.copy(_sample_db, db)
    monkeypatch.setenv("JUDGELENS_DB", str(db))
    return db


@pytest.fixture
def sample_app(app_db):
    """An AppTest of app.py on its own copy of the sample database (``app_db``), after the first run (no exception).
    Tests that drive pages start from here: ``at = sample_app`` then ``at.switch_page(...)``."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.run()
    assert not at.exception
    return at

# ----------------------------------------------------------------------------------------------
# Real-browser fixtures (see tests/browser_support.py). One app server and one Chromium per test module.

@pytest.fixture(scope="module")
def app_env() -> dict[str, str]:
    """Extra environment for the module's app server; override in a test module to change it."""
    return {}


@pytest.fixture(scope="module")
def app_starts_empty() -> bool:
    """False (default): the module's app server opens a copy of the bundled sample the session built once
    (``_sample_db``), the data its first start would load, without loading it again in every module's server.
    Override with True in a module that tests the first start itself (an empty database loads the sample)."""
    return False


@pytest.fixture(scope="module")
def app_url(tmp_path_factory, app_env, app_starts_empty, request) -> str:
    """Base URL of ``streamlit run app.py`` on a free port, on a database of the module's own: a copy of the
    bundled sample, or empty (``app_starts_empty``: its first start loads the sample), unless ``app_env`` points
    the app at another store. Shared by the tests of one module, so they see each other's imports."""
    from browser_support import running_app

    db = tmp_path_factory.mktemp("browser-db") / "judgelens.duckdb"
    if not app_starts_empty and not {"JUDGELENS_DB", "JUDGELENS_STORE"} & set(app_env):  # (else it opens that)
        shutil.copy(request.getfixturevalue("_sample_db"), db)
    with running_app(db, env=app_env) as url:
        yield url


@pytest.fixture(scope="module")
def chromium():
    """Headless Debian Chromium driven by Playwright's sync API."""
    from playwright.sync_api import sync_playwright

    from browser_support import launch_chromium

    with sync_playwright() as pw:
        browser = launch_chromium(pw)
        yield browser
        browser.close()


@pytest.fixture
def page(chromium):
    """A fresh browser tab (own context: no cookies or session shared between tests), with generous timeouts
    for a loaded machine and the script-run watcher that ``browser_support.wait_for_rerun`` reads."""
    from browser_support import new_page

    tab = new_page(chromium, accept_downloads=True)
    yield tab
    tab.context.close()


# ----------------------------------------------------------------------------------------------
# The order files are handed to the two workers (scripts/test.sh: pytest-xdist --dist loadfile). xdist hands out
# files with the most tests first, so the few-test files that take longest (a browser test driving the app for a
# minute or more) came last, and one worker ran the last of them alone while the other idled: 2-3 minutes of a
# 16-minute run. Handed out heaviest first, the many small files fill both workers to the end.

SLOW_FIRST = (  # heaviest first (seconds per file in a run of scripts/test.sh on 2 cores, Nov 2026)
    "tests/browser/test_browser_bench.py",                # ~170
    "tests/judging/test_attribution_full.py",             # ~120
    "tests/store/test_lake_reads.py",                     # ~70
    "tests/judging/test_concurrent_batches.py",           # ~60
    "tests/store/test_ducklake.py",                       # ~60
    "tests/browser/test_browser_scale.py",                # ~55
    "tests/browser/test_browser_item_view.py",            # ~50
    "tests/browser/test_browser_harness.py",              # ~50
    "tests/browser/test_browser_cli_beside_app.py",       # ~45 (its CLI examples forked: tests/cli_forks.py)
    "tests/analysis/test_item_view.py",                   # ~45
    "tests/store/test_ducklake_app.py",                   # ~45
    "tests/analysis/test_harness.py",
    "tests/judging/test_attribution.py",
    "tests/browser/test_browser.py",
    "tests/browser/test_browser_workbench.py",
    "tests/browser/test_browser_search_verdicts.py",
    "tests/store/test_ducklake_processes.py",
    "tests/browser/test_browser_flow.py",
    "tests/browser/test_browser_analyst_view.py",
    "tests/browser/test_browser_fragments.py",
    "tests/browser/test_browser_compare_bench_view.py",
    "tests/browser/test_browser_probes.py",
    "tests/browser/test_browser_reliability.py",
)


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist: keep the order pytest_collection_modifyitems sets
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config, items):
    """Files in SLOW_FIRST order, then the others by number of tests, most first (xdist's own order for them);
    each file's tests stay together and in their order."""
    files = [item.nodeid.split("::")[0] for item in items]
    count, first = {}, {}
    for i, f in enumerate(files):
        count[f] = count.get(f, 0) + 1
        first.setdefault(f, i)
    rank = {f: i for i, f in enumerate(SLOW_FIRST)}
    order = sorted(range(len(items)), key=lambda i: (rank.get(files[i], len(rank)), -count[files[i]],
                                                     first[files[i]], i))
    items[:] = [items[i] for i in order]


# ----------------------------------------------------------------------------------------------
# A run that tested nothing must not look green: pytest already exits 5 when nothing is collected (or
# everything is deselected); a run whose every test was skipped exits 5 too, with the reason.

_OUTCOMES = {"passed": 0, "failed": 0, "skipped": 0}


def pytest_runtest_logreport(report):
    if report.when == "call" or (report.when == "setup" and report.outcome != "passed"):
        _OUTCOMES[report.outcome] = _OUTCOMES.get(report.outcome, 0) + 1


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    if exitstatus == 0 and _OUTCOMES["skipped"] and not (_OUTCOMES["passed"] or _OUTCOMES["failed"]):
        session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
    if session.exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line("No test ran (none collected, all deselected, or all skipped): this run checked "
                                "nothing, so it exits 5.", red=True)


def store_linked_pair(store: Store, questions, references, answers, judgments) -> Store:
    """Write one model's two runs (bench ``fc`` under FastChat, ``sw`` under Swallow) as rows of a source 999,
    then link the benches and alias the model names as an import would. ``answers`` rows end with temperature,
    max_chars and system_prompt."""
    from lib.analysis import aliases, linking
    from lib.store import refresh_item_scores

    with store.write() as cur:
        cur.executemany("INSERT INTO questions (source_id, bench, question_id, category, turns) VALUES (999, ?, ?, ?, ?)",
                        questions)
        cur.executemany("INSERT INTO reference_answers (source_id, bench, judge, question_id, turn, text) "
                        "VALUES (999, ?, ?, ?, ?, ?)", references)
        cur.executemany("INSERT INTO answers (source_id, harness, bench, model, question_id, sample, turn, text, "
                        "temperature, max_chars, system_prompt) VALUES (999, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", answers)
        cur.executemany("INSERT INTO single_judgments (source_id, harness, bench, judge, prompt_name, model, question_id, "
                        "turn, sample, raw_score, score, parse_status) VALUES (999, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        judgments)
        refresh_item_scores(cur)
    linking.link_benches(store, "fc", "sw")
    aliases.auto_alias(store)
    return store


@contextmanager
def reads_counted(store):
    """Count a store's reads (each one a catalog round and a snapshot on a lake): yields the list of cursors handed
    out while the block runs; the store reads as before afterwards."""
    seen, make = [], store.read

    @contextmanager
    def counted():
        with make() as cur:
            seen.append(cur)
            yield cur

    store.read = counted
    try:
        yield seen
    finally:
        store.read = make


def frames(at) -> list:
    """Every table an AppTest run drew, as DataFrames."""
    return [d.value for d in at.dataframe]


# ``python -m lib.cli`` with Ctrl-C (SIGINT) raising KeyboardInterrupt, as in a terminal, however the suite was
# started: a shell that starts a command in the background (``(cmd &)``) makes it, and every child, ignore SIGINT
# (a test that presses Ctrl-C then sees the command run to its end). ``[sys.executable, "-c", CLI_WITH_CTRL_C, ...]``.
CLI_WITH_CTRL_C = ("import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
                   "runpy.run_module('lib.cli', run_name='__main__', alter_sys=True)")


def sample_item_keys(store, n: int, swallow_samples: int) -> list:
    """``n`` judged items spread over the store (a hash order, the same every run), then ``swallow_samples`` Swallow
    items of a sample after the first: ``ItemKey``s."""
    with store.read() as cur:
        return [ItemKey(*r) for r in cur.execute(
            "SELECT DISTINCT bench, question_id, turn, model, sample FROM single_judgments "
            "ORDER BY hash(bench, question_id, turn, model, sample) LIMIT ?", [n]).fetchall()] + [
            ItemKey(*r) for r in cur.execute(
                "SELECT DISTINCT bench, question_id, turn, model, sample FROM single_judgments "
                "WHERE harness = 'swallow' AND sample > 0 ORDER BY ALL LIMIT ?", [swallow_samples]).fetchall()]
