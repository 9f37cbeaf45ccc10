"""scripts/serve.py (what scripts/run-app.sh starts): the imports it warms before the server listens."""
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PROBE = """
import json, sys
sys.path.insert(0, {scripts!r})
import serve
serve.warm_imports()
print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('lib', 'pages', 'scipy', 'plotly', 'streamlit'))))
"""


def test_warm_imports_loads_what_pages_need_and_nothing_streamlit_runs_first():
    out = subprocess.run([sys.executable, "-c", PROBE.format(scripts=str(ROOT / "scripts"))], cwd="/", check=True,
                         capture_output=True, text=True, timeout=300).stdout
    loaded = set(json.loads(out.strip().splitlines()[-1]))
    # every lib module a page imports, and what lib imports inside functions (the first visitor paid these)
    for name in ("lib.analysis.agreement", "lib.analysis.deltas", "lib.analysis.runs", "lib.render.charts",
                 "lib.render.report", "lib.judging.attribution", "lib.probes.suite", "scipy.stats", "plotly.express"):
        assert name in loaded, name
    # not the command line (its __main__ runs it), not the pages: pages/_common.py's first-run check (a deep
    # link as a server's first request) must run inside Streamlit's script run, as it always did
    assert not any(m.startswith("lib.cli") for m in loaded)
    assert not any(m == "pages" or m.startswith("pages.") for m in loaded)
