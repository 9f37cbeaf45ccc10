"""lib/ runs without Streamlit; pages stay thin; only lib/cli parses arguments or prints."""
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIB_MODULES = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
                     for p in (ROOT / "lib").rglob("*.py") if p.name != "__main__.py")


def test_lib_is_organised_in_subpackages():
    assert len(LIB_MODULES) > 20
    assert {"lib.ingest", "lib.analysis", "lib.judging", "lib.probes", "lib.render", "lib.cli"} <= set(LIB_MODULES)


def test_lib_never_imports_streamlit():
    code = ("import importlib, sys\n"
            f"for m in {LIB_MODULES!r}: importlib.import_module(m)\n"
            "print('streamlit' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr


def test_only_the_cli_parses_arguments_or_prints():
    offenders = []
    for path in (ROOT / "lib").rglob("*.py"):
        if path.relative_to(ROOT).parts[:2] == ("lib", "cli"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in node.names] + ([node.module] if isinstance(node, ast.ImportFrom) else [])
                if "argparse" in names:
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: imports argparse")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
                offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: print()")
    assert offenders == []


def test_pages_do_not_read_raw_files_or_open_duckdb():
    """Every page reads the store through lib/ (one canonical model), never the harness files."""
    for page in (ROOT / "app_pages").glob("*.py"):
        text = page.read_text()
        for forbidden in ("read_ndjson", "read_parquet", "duckdb.connect", "json.loads(", "open("):
            assert forbidden not in text, f"{page.name} uses {forbidden}"


def test_import_contracts():
    """The layers and forbidden imports in pyproject.toml ([tool.importlinter]), checked by import-linter."""
    script = Path(sys.executable).with_name("lint-imports")
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "importlinter.cli"]
    out = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    kept = re.search(r"Contracts: (\d+) kept, 0 broken", out.stdout)
    assert kept and int(kept.group(1)) >= 6, out.stdout[-2000:]


def test_the_layers_contract_has_no_exceptions():
    """No upward import is tolerated: code lives in the layer its imports allow (no ignore_imports)."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    assert [(c["name"], c.get("ignore_imports")) for c in contracts if c.get("ignore_imports")] == []


def test_every_package_of_lib_is_kept_free_of_import_cycles():
    """An acyclic_siblings contract covers all of lib at every depth, with nothing skipped or ignored (import-linter
    also sees imports inside functions, so a lazy import cannot hide a cycle)."""
    import tomllib

    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]
    acyclic = [c for c in contracts if c["type"] == "acyclic_siblings"]
    assert [(c["ancestors"], c.get("depth"), c.get("skip_descendants")) for c in acyclic] == [(["lib"], None, None)]


def test_no_private_name_is_imported_across_modules():
    """A name starting with "_" belongs to its module: another module that needs it gets a public name."""
    offenders = []
    for path in [*(ROOT / "lib").rglob("*.py"), *(ROOT / "app_pages").glob("*.py"), ROOT / "app.py"]:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(("lib", "app_pages")):
                offenders += [f"{path.relative_to(ROOT)}:{node.lineno}: {node.module}.{a.name}" for a in node.names
                              if a.name.startswith("_") and not a.name.startswith("__")]
    assert offenders == []


def test_every_import_contract_says_why():
    """Each contract in pyproject.toml has a "# Why:" comment above it."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    blocks = text.split("[[tool.importlinter.contracts]]")[:-1]
    assert len(blocks) >= 6
    assert all(re.search(r"# Why: [^\n]+(\n#[^\n]*)*\n*$", b.rstrip(" ")) for b in blocks), blocks
