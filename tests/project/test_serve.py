"""scripts/serve.py (what scripts/run-app.sh starts): the imports it warms before the server listens."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import json, sys
sys.path.insert(0, {scripts!r})
import serve
serve.warm_imports()
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('lib', 'app_pages', 'scipy', 'plotly', 'streamlit'))))
"""


def test_warm_imports_loads_what_pages_need_and_nothing_streamlit_runs_first():
    out = subprocess.run([sys.executable, "-c", PROBE.format(scripts=str(ROOT / "scripts"))], cwd="/", check=True,
                         capture_output=True, text=True, timeout=300).stdout
    loaded = set(json.loads(out.strip().splitlines()[-1]))
    # every lib module a page imports, and what lib imports inside functions (the first visitor paid these)
    for name in ("lib.analysis.agreement", "lib.analysis.deltas", "lib.analysis.runs", "lib.render.charts",
                 "lib.reports", "lib.attribution.judge", "lib.probes.suite", "scipy.stats", "plotly.express"):
        assert name in loaded, name
    # not the command line (no page needs it; its __main__ runs it), not the pages: their module-level code (the
    # store handle and caches, the first-start load) runs inside Streamlit's script run, as it always did
    assert not any(m.startswith("lib.cli") for m in loaded)
    assert not any(m == "app_pages" or m.startswith("app_pages.") for m in loaded)


def test_server_opens_every_page_once_after_it_starts(_sample_db, tmp_path):
    """The start-up warm-up reaches every page through a real websocket session and says so on stderr."""
    import os
    import shutil
    import tempfile
    import time

    from browser_support import _output, _wait_until_healthy, free_port

    db = tmp_path / "jl.duckdb"
    shutil.copy(_sample_db, db)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "OPENAI_API_KEY"}
    env.update(JUDGELENS_DB=str(db), JUDGELENS_WARM_PAGES="1", PYTHONUNBUFFERED="1")
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "serve.py"), "--server.headless", "true",
                                 "--server.port", str(port), "--server.address", "127.0.0.1",
                                 "--browser.gatherUsageStats", "false"], cwd=ROOT, env=env, stdout=log, stderr=log)
        try:
            _wait_until_healthy(proc, f"http://127.0.0.1:{port}/_stcore/health", log, log, 120)
            deadline = time.monotonic() + 300
            while "pages warmed" not in _output(log) and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.5)
            text = _output(log)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    assert "JudgeLens: imports warmed" in text
    assert "JudgeLens: pages warmed (12 of 12 views)" in text, text  # 10 pages + Compare's harness view + a search
    assert "not warmed" not in text, text


def test_the_pages_warmed_are_the_pages_app_py_routes_to():
    import re

    sys.path.insert(0, str(ROOT / "scripts"))
    import serve

    routed = re.findall(r'st\.Page\("app_pages/(\w+)\.py"', (ROOT / "app.py").read_text())
    default = re.search(r'st\.Page\("app_pages/(\w+)\.py"[^)]*default=True', (ROOT / "app.py").read_text()).group(1)
    assert len(routed) == 10
    assert serve.page_paths() == [""] + [p for p in sorted(routed) if p != default]  # the default page is "/"


def test_streamlit_sees_no_legacy_pages_folder_next_to_app_py():
    """A folder named pages/ beside app.py, even one holding only a __pycache__ left from before the rename to
    app_pages/, switches Streamlit into its legacy multipage mode: a deep link as a server's first request would run
    the page without app.py's st.navigation. Asked of Streamlit's own check, which reads the folder once per process."""
    from streamlit.runtime.pages_manager import PagesManager

    before = PagesManager.uses_pages_directory
    PagesManager.uses_pages_directory = None
    try:
        PagesManager(str(ROOT / "app.py"))
        assert PagesManager.uses_pages_directory is False, f"remove {ROOT / 'pages'}: Streamlit's legacy pages/ mode"
    finally:
        PagesManager.uses_pages_directory = before


def test_warm_pages_can_name_the_pages_to_warm():
    """``JUDGELENS_WARM_PAGES=overview,search``: those pages and their extra views (the browser benchmark's --only);
    a name that is no page stops the start with the list of pages."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import serve

    assert serve.warm_views("1") == [(p, "") for p in serve.page_paths()] + list(serve.EXTRA_VIEWS)
    assert serve.warm_views("overview, search") == [("", ""), ("search", ""),
                                                    ("search", "q=judgelens%20warm-up%20%C2%A7")]
    assert serve.warm_views("compare") == [("compare", ""), ("compare", "view=harness")]
    with pytest.raises(SystemExit) as exc:
        serve.warm_views("overview,serch")
    assert str(exc.value).startswith("JUDGELENS_WARM_PAGES names no page: serch (pages: overview, agreement, ")
