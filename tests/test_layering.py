"""lib/ runs without Streamlit; pages stay thin."""
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_lib_never_imports_streamlit():
    modules = sorted(p.stem for p in (ROOT / "lib").glob("*.py") if p.stem != "__init__")
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module('lib.' + m)\n"
            "import lib.formats.fastchat, lib.formats.swallow\n"
            "print('streamlit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_pages_do_not_read_raw_files_or_open_duckdb():
    """Every page reads the store through lib/ (one canonical model), never the harness files."""
    for page in (ROOT / "pages").glob("*.py"):
        text = page.read_text()
        for forbidden in ("read_ndjson", "read_parquet", "duckdb.connect", "json.loads(", "open("):
            assert forbidden not in text, f"{page.name} uses {forbidden}"
