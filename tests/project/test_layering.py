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
    """A name starting with "_" belongs to its module: another module that needs it gets a public name (lib, the
    pages, app.py, and the benches, scripts and tests that import them; relative imports too), nor reached as an
    attribute of its module (``importer._insert_fast``, ``monkeypatch.setattr(importer, "_insert_fast", ...)``)."""
    assert private_imports(ROOT) == []
    assert private_attributes(ROOT) == []


def test_no_import_cycle_even_through_imports_inside_functions():
    """No cycle among the modules of lib, app_pages and app.py, counting every import statement wherever it stands
    (a function-level import only postpones a cycle) and a package's ``__init__`` with its children (which
    import-linter's sibling contract does not see)."""
    assert import_cycles(ROOT) == []


def test_harness_names_are_compared_in_a_handful_of_places():
    """Harness behaviour is asked of lib.harness (``harness.get(name).own_rule``, ...), not decided by comparing
    names: outside lib/harness and the readers (lib/ingest/formats) only the generation setups and the attribution
    view's system-prompt field still do, and no new place may."""
    from lib import harness as H

    found = harness_name_comparisons(ROOT, set(H.names()))
    assert len(found) <= HARNESS_NAME_BUDGET, "\n".join(found)


def test_no_test_module_imports_another():
    """What several test files share lives in conftest.py or a helper module beside it (fake_openai, scripted_judges,
    ...), not in a test file another imports: moving or renaming one test file then breaks nothing else."""
    assert imports_of_test_modules(ROOT) == []


def test_no_module_is_over_900_lines():
    """A module past ~900 lines holds several subjects: split it by subject (as lib/store was)."""
    assert long_modules(ROOT) == []


def test_the_static_checks_find_what_is_planted(tmp_path):
    """The scans above on a small tree with one violation of each kind: they can fail."""
    files = {
        "lib/__init__.py": "",
        "lib/a.py": "from lib import b\n_hidden = 1\n",
        "lib/b.py": "def f():\n    from lib.a import x   # a lazy import closes the cycle\n",
        "lib/pkg/__init__.py": "from lib.pkg.child import y\n",
        "lib/pkg/child.py": "from lib.pkg import z\n",
        "lib/c.py": "from lib.a import _hidden\n",
        "lib/harness/rules.py": "def rule(h):\n    return h.harness == 'swallow'   # the rules' home: allowed\n",
        "app_pages/p.py": ("if run.harness == 'swallow':\n    pass\n"
                           "SQL = \"SELECT 1 FROM t WHERE harness <> 'human'\"\n"
                           "ok = judge_type != 'human'   # not a harness\n"),
        "bench/x.py": "from lib.c import _private_bench\n",
        "tests/test_x.py": "from .helpers import _private_test\n",
        "tests/test_y.py": ("import lib.a\nfrom lib import a as alias\nlib.a._hidden\nalias._hidden\n"
                            "monkeypatch.setattr(alias, '_hidden', 2)\nalias.public._fine\n"),
        "tests/sub/test_z.py": "def f():\n    from test_y import helper   # a test file importing another\n",
        "lib/big.py": "x = 1\n" * 901,
        "lib/fits.py": "x = 1\n" * 900,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert import_cycles(tmp_path) == [["lib.a", "lib.b"], ["lib.pkg", "lib.pkg.child"]]
    assert private_imports(tmp_path) == ["bench/x.py:1: lib.c._private_bench", "lib/c.py:1: lib.a._hidden",
                                         "tests/test_x.py:1: .helpers._private_test"]
    assert private_attributes(tmp_path) == ["tests/test_y.py:3: lib.a._hidden", "tests/test_y.py:4: lib.a._hidden",
                                            "tests/test_y.py:5: lib.a._hidden"]
    assert harness_name_comparisons(tmp_path, {"swallow", "human"}) == [
        "app_pages/p.py:1: run.harness == 'swallow'", "app_pages/p.py:3: harness <> 'human'"]
    assert long_modules(tmp_path) == ["lib/big.py: 901 lines"]
    assert imports_of_test_modules(tmp_path) == ["tests/sub/test_z.py:2: test_y"]


def test_every_import_contract_says_why():
    """Each contract in pyproject.toml has a "# Why:" comment above it."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    blocks = text.split("[[tool.importlinter.contracts]]")[:-1]
    assert len(blocks) >= 6
    assert all(re.search(r"# Why: [^\n]+(\n#[^\n]*)*\n*$", b.rstrip(" ")) for b in blocks), blocks


# -- static scans (each takes a repository root, so a test can plant a violation in a tmp folder) ------------------

PYTHON_TREES = ("lib", "app_pages", "bench", "scripts", "tests")
HARNESS_NAME_BUDGET = 6   # lib/generation/setups.py (4: fastchat/swallow setups), app_pages/_compare_attribution.py (2)
MAX_MODULE_LINES = 900


def python_files(root: Path, trees=PYTHON_TREES) -> list[Path]:
    files = sorted(p for tree in trees for p in (root / tree).rglob("*.py") if ".venv" not in p.parts)
    return files + ([root / "app.py"] if (root / "app.py").exists() else [])


def module_name(root: Path, path: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def private_imports(root: Path) -> list[str]:
    """``from M import _x`` where M is a module of lib or app_pages, or a relative import."""
    offenders = []
    for path in python_files(root):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level or (node.module or "").split(".")[0] in ("lib", "app_pages"):
                source = "." * node.level + (node.module or "")
                offenders += [f"{path.relative_to(root).as_posix()}:{node.lineno}: {source}.{a.name}"
                              for a in node.names if a.name.startswith("_") and not a.name.startswith("__")]
    return sorted(offenders)


def private_attributes(root: Path) -> list[str]:
    """``module._x`` or ``setattr(module, "_x", ...)`` where module is one of lib's or app_pages' (imported as
    ``import lib.m``, ``import lib.m as m`` or ``from lib import m``) and the code is not that module's own."""
    modules = {module_name(root, p) for p in python_files(root, ("lib", "app_pages"))}

    def private(name) -> bool:
        return isinstance(name, str) and name.startswith("_") and not name.startswith("__")

    offenders = []
    for path in python_files(root):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                aliases.update({a.asname: a.name for a in node.names if a.asname and a.name in modules})
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                aliases.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names
                                if f"{node.module}.{a.name}" in modules})

        def module_of(node) -> str | None:
            parts = []
            while isinstance(node, ast.Attribute):
                parts.append(node.attr)
                node = node.value
            if not isinstance(node, ast.Name):
                return None
            root_name = aliases.get(node.id, node.id if node.id in ("lib", "app_pages") else None)
            dotted = ".".join([root_name, *reversed(parts)]) if root_name else None
            return dotted if dotted in modules else None

        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and private(node.attr):
                owner, name = module_of(node.value), node.attr
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "setattr"
                  and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and private(node.args[1].value)):
                owner, name = module_of(node.args[0]), node.args[1].value
            else:
                continue
            if owner and owner != module_name(root, path):
                offenders.append(f"{path.relative_to(root).as_posix()}:{node.lineno}: {owner}.{name}")
    return sorted(offenders)


def import_cycles(root: Path) -> list[list[str]]:
    """The strongly connected groups of two or more modules of lib, app_pages and app.py, an edge for every import
    statement (module level or inside a function; ``from P import name`` is an edge to P.name when that is a
    module, else to P)."""
    files = {module_name(root, p): p for p in python_files(root, ("lib", "app_pages"))}
    modules = set(files)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != module:
                    edges.add(target)
        graph[module] = edges
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups = []

    def visit(v: str) -> None:   # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = stack[stack.index(v):]
            del stack[stack.index(v):]
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(groups)


def harness_name_comparisons(root: Path, names: set[str]) -> list[str]:
    """Outside lib/harness and lib/ingest/formats: comparisons of a harness with a harness name in Python
    (``run.harness == "swallow"``, ``h.name in ("fastchat", ...)``) or SQL (``harness <> 'human'``)."""
    alternatives = "|".join(map(re.escape, sorted(names)))
    sql = re.compile(r"harness\s*(?:=|<>|!=|(?:NOT\s+)?IN\s*\()\s*'(?:" + alternatives + r")'", re.I)

    def strings(node) -> list[str]:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return [v for e in node.elts for v in strings(e)]
        return []

    found = []
    for path in python_files(root, ("lib", "app_pages")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith(("lib/harness/", "lib/ingest/formats/")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Compare) and "harness" in ast.unparse(node) and any(
                    v in names for n in (node.left, *node.comparators) for v in strings(n)):
                found.append(f"{rel}:{node.lineno}: {ast.unparse(node)}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (m := sql.search(node.value)):
                found.append(f"{rel}:{node.lineno}: {m.group(0)}")
    return sorted(found)


def imports_of_test_modules(root: Path) -> list[str]:
    """Imports of a ``test_*`` module (by its plain name or as ``tests.…test_x``) anywhere under tests/."""
    offenders = []
    for path in python_files(root, ("tests",)):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{path.relative_to(root).as_posix()}:{node.lineno}: {n}" for n in names
                          if n.split(".")[-1].startswith("test_")]
    return sorted(offenders)


def long_modules(root: Path, limit: int = MAX_MODULE_LINES) -> list[str]:
    found = []
    for path in python_files(root):
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > limit:
            found.append(f"{path.relative_to(root).as_posix()}: {lines} lines")
    return found
