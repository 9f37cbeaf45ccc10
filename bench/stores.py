"""The benchmarks' synthetic stores, on each kind of store JudgeLens has: built once, reused.

Not a test. One synthetic store per shape and size (``ensure_store``: a DuckDB file built with
``pages_bench.build``), and the same store copied with ``lib.store.migrate`` (what ``store migrate`` does) into
a DuckLake store with a SQLite catalog (``lake-sqlite``) and one with a PostgreSQL catalog (``lake-pg``). The
PostgreSQL server is started by the benchmark itself (tests/pg_support.py ``running_postgres``) with its files
kept next to the stores, so a 1M migration is done once and reused; it is stopped when the benchmark ends.

Layout in OUT (``bench/out`` or ``--out``, e.g. the pooled ``/work/benchstores``):

    browser_<shape>_<rows>.duckdb (+ .json)     the file store and what was built
    lake_sqlite_<shape>_<rows>/                 catalog.sqlite, data/ (Parquet), built.json
    pg_<shape>_<rows>/                          pgdata/ (the server's), sock/, server.log, data/ (Parquet), built.json

A lake is rebuilt when its ``built.json`` is missing or does not match the build of the file store it was copied
from (``source_stamp``) or LAKE_VERSION: delete a folder to rebuild it.

    .venv/bin/python bench/stores.py --sizes 1000000 --out /work/benchstores   # build the three, nothing else
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "bench" / "out"
for extra in (ROOT, ROOT / "tests", ROOT / "bench"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

# Bump when the generated stores change shape or need a derived table the app relies on.
BUILD_VERSION = "6"  # 4: the builder adds a Swallow-shaped second bench; 5: the built-in templates stored;
# 6: the judgments' rationale and judge_prompt uncompressed, as a store made now holds them (lib/store/schema.py)
LAKE_VERSION = "2"  # bump when the lakes must be copied again from their file stores; 2: 16,384-row groups
STORES = ("file", "lake-sqlite", "lake-pg")


def shape_of(shape: str, rows: int) -> dict:
    if shape == "wide":
        return {"judges": 5, "models": max(2, rows // 800)}
    if shape == "templates":
        return {"judges": max(2, rows // 1280), "models": 8, "harness": "judgelens",
                "judge_names": "'gpt-4o-mini + single-v1-edit@v' || (j + 1)"}
    raise SystemExit(f"unknown shape {shape!r}: wide or templates")


def ensure_store(shape: str, rows: int, out: Path = OUT) -> tuple[Path, dict]:
    """The file store for this shape and size in ``out``, built once and reused while BUILD_VERSION matches."""
    from pages_bench import build

    out.mkdir(parents=True, exist_ok=True)
    path = out / f"browser_{shape}_{rows}.duckdb"
    meta = path.with_suffix(".json")
    if path.exists() and meta.exists():
        info = json.loads(meta.read_text())
        if info.get("build_version") == BUILD_VERSION:
            return path, info
    for stale in (path, Path(str(path) + ".wal"), meta):
        stale.unlink(missing_ok=True)
    spec = shape_of(shape, rows)
    print(f"building {shape} store of ~{rows:,} judgments ({spec['judges']} judges x {spec['models']} models) …",
          flush=True)
    info = build(path, rows, **spec)
    from lib.judging.templates import ensure_builtins
    from lib.store import Store

    store = Store(path)
    try:
        ensure_builtins(store)  # what the app's first start writes: done here, so a benchmark run writes nothing
    finally:
        store.close()
    info.update(build_version=BUILD_VERSION, shape=shape, file_mb=round(path.stat().st_size / 1e6))
    meta.write_text(json.dumps(info, indent=1))
    print(f"  {info['rows']:,} rows in {info['build_s']:.0f} s, {info['file_mb']} MB", flush=True)
    return path, info


@dataclass
class StoreRef:
    """How to open one store: ``target`` for ``Store(target, data_path=...)`` and the app's environment."""
    kind: str  # file, lake-sqlite or lake-pg
    target: str  # the DuckDB file's path or ducklake:...
    data_path: str | None = None
    info: dict = field(default_factory=dict)  # how it was built (migrate seconds, Parquet size)

    def app_env(self) -> dict[str, str]:
        """What the app server needs in its environment to open this store (README "Team store")."""
        if self.kind == "file":
            return {}
        return {"JUDGELENS_STORE": self.target, "JUDGELENS_DATA_PATH": self.data_path}

    def open(self, read_only: bool = False):
        from lib.store import Store

        if self.kind == "file":
            return Store(self.target, read_only=read_only)
        return Store(self.target, data_path=self.data_path)


def source_stamp(path: Path) -> dict:
    """What identifies the build of the file store a lake was copied from (its .json, written once per build:
    the file's own size and time change whenever DuckDB checkpoints it)."""
    built = json.loads(path.with_suffix(".json").read_text())
    return {"source": path.name, "source_build_version": built.get("build_version"),
            "source_build_s": built.get("build_s"), "lake_version": LAKE_VERSION}


def ensure_lake(source: Path, folder: Path, target_of, data: Path, kind: str) -> StoreRef:
    """The DuckLake copy of ``source`` whose files live in ``folder`` (catalog ``target_of()``, Parquet under
    ``data``): reused when its built.json matches the source, else made anew with ``lib.store.migrate``."""
    from lib.store import Store, migrate

    marker = folder / "built.json"
    stamp = source_stamp(source)
    if marker.exists():
        built = json.loads(marker.read_text())
        if {k: built.get(k) for k in stamp} == stamp:
            return StoreRef(kind, target_of(), str(data), built)
    marker.unlink(missing_ok=True)
    shutil.rmtree(data, ignore_errors=True)
    target = target_of(fresh=True)
    print(f"copying {source.name} into a {kind} store ({folder}) …", flush=True)
    t0 = time.perf_counter()
    lake = Store(target, data_path=data)
    try:
        migrate(source, lake)
        described = lake.describe()
    finally:
        lake.close()
    built = {**stamp, "kind": kind, "migrate_s": round(time.perf_counter() - t0, 1),
             "data_mb": round(described["bytes"] / 1e6), "data_files": described["data_files"]}
    marker.write_text(json.dumps(built, indent=1))
    print(f"  {kind}: migrated in {built['migrate_s']} s, {built['data_files']} Parquet file(s), "
          f"{built['data_mb']} MB", flush=True)
    return StoreRef(kind, target_of(), str(data), built)


def sqlite_lake(source: Path, shape: str, rows: int, out: Path) -> StoreRef:
    folder = out / f"lake_sqlite_{shape}_{rows}"
    catalog = folder / "catalog.sqlite"

    def target_of(fresh: bool = False) -> str:
        if fresh:
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
        return f"ducklake:sqlite:{catalog}"

    return ensure_lake(source, folder, target_of, folder / "data", "lake-sqlite")


@contextmanager
def pg_lake(source: Path, shape: str, rows: int, out: Path) -> Iterator[StoreRef]:
    """The PostgreSQL-catalog copy, with its server running (started here, stopped on exit)."""
    from pg_support import pg_bin, running_postgres

    if pg_bin() is None:
        raise RuntimeError("PostgreSQL is not installed (Debian: apt-get install postgresql): cannot bench lake-pg; "
                           "leave it out with --stores file,lake-sqlite")
    folder = out / f"pg_{shape}_{rows}"
    marker, stamp = folder / "built.json", source_stamp(source)
    if not marker.exists() or {k: json.loads(marker.read_text()).get(k) for k in stamp} != stamp:
        shutil.rmtree(folder, ignore_errors=True)  # half-made or stale: a new server and catalog
    with running_postgres(root=folder, timeout=120) as conninfo:
        target = f"ducklake:postgres:{conninfo}"
        yield ensure_lake(source, folder, lambda fresh=False: target, folder / "data", "lake-pg")


@contextmanager
def stores_for(shape: str, rows: int, kinds: list[str], out: Path = OUT) -> Iterator[tuple[dict, dict]]:
    """-> ({kind: StoreRef} in ``kinds`` order, the file store's build info); a PostgreSQL server runs while
    inside."""
    path, info = ensure_store(shape, rows, out)
    refs = {}
    with ExitStack() as stack:
        for kind in kinds:
            if kind == "file":
                refs[kind] = StoreRef("file", str(path), None, {"file_mb": info.get("file_mb")})
            elif kind == "lake-sqlite":
                refs[kind] = sqlite_lake(path, shape, rows, out)
            elif kind == "lake-pg":
                refs[kind] = stack.enter_context(pg_lake(path, shape, rows, out))
            else:
                raise SystemExit(f"unknown store {kind!r}: one of {', '.join(STORES)}")
        yield refs, info


def fingerprint(ref: StoreRef) -> dict:
    """Rows per table and the write clock: equal before and after a benchmark run means it wrote nothing."""
    store = ref.open(read_only=True)
    try:
        with store.read() as cur:
            tables = [r[0] for r in cur.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
                "AND table_type = 'BASE TABLE' ORDER BY 1").fetchall()]
            counts = {t: cur.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] for t in tables}
            clock = cur.execute("SELECT value FROM meta WHERE key = 'write_clock'").fetchone()
        return {"rows": counts, "write_clock": clock[0] if clock else None}
    finally:
        store.close()


def parse_stores(text: str) -> list[str]:
    kinds = [k.strip() for k in text.split(",") if k.strip()]
    for kind in kinds:
        if kind not in STORES:
            raise SystemExit(f"unknown store {kind!r}: one of {', '.join(STORES)}")
    return kinds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000])
    parser.add_argument("--shapes", nargs="+", default=["wide"], choices=["wide", "templates"])
    parser.add_argument("--stores", type=parse_stores, default=list(STORES), help="default file,lake-sqlite,lake-pg")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    for shape in args.shapes:
        for rows in args.sizes:
            with stores_for(shape, rows, args.stores, args.out.resolve()) as (refs, _info):
                for kind, ref in refs.items():
                    print(f"{shape} {rows:,} {kind}: {ref.target}", json.dumps(ref.info))


if __name__ == "__main__":
    main()
