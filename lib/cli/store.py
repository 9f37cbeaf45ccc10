"""``store info`` and ``store migrate``: what a store is, and moving a single-file store to a team store."""
from __future__ import annotations

from lib.cli.common import open_store
from lib.store import Store, default_data_path, is_lake, migrate

COUNTED = ("sources", "questions", "answers", "single_judgments", "pair_judgments", "item_scores", "templates",
           "judge_cache", "probe_runs")


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def cmd_info(args) -> int:
    with open_store(args, read_only=True) as store:
        info = store.describe()
        with store.read() as cur:
            counts = {t: cur.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in COUNTED}
    lines = [f"store:   {info['store']}", f"kind:    {info['kind']}"]
    if store.lake:
        lines += [f"catalog: {info['catalog']}" + (f" ({_size(info['catalog_bytes'])})" if "catalog_bytes" in info
                                                   else ""),
                  f"data:    {info['data']} ({info['data_files']} Parquet file(s), {_size(info['bytes'])})",
                  f"snapshot: {info['snapshot']}"]
    else:
        lines.append(f"size:    {_size(info['bytes'])}")
    lines.append("rows:    " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    print("\n".join(lines))
    return 0


def cmd_migrate(args) -> int:
    target = args.to
    if not is_lake(target):
        from lib.errors import UsageError

        raise UsageError(f"--to {target!r}: migrate into a DuckLake store, ducklake:sqlite:FILE or "
                         "ducklake:postgres:CONNINFO.")
    with Store(target, data_path=args.data_path or default_data_path()) as store:
        counts = migrate(args.source, store)
    total = sum(counts.values())
    print(f"Copied {total} row(s) from {args.source} into {store.shown}:")
    print("\n".join(f"  {t}: {n}" for t, n in counts.items() if n))
    hidden = (" (the password is hidden here: give yours in its place, or keep it in PGPASSWORD or ~/.pgpass)"
              if store.shown != target else "")
    print(f"Use it with JUDGELENS_STORE='{store.shown}'" + (f" JUDGELENS_DATA_PATH='{args.data_path}'"
                                                            if args.data_path else "") + f", or --store{hidden}.")
    return 0


def register(sub, parents) -> None:
    p = sub.add_parser("store", help="what the store is (info); copy a DuckDB file into a DuckLake store (migrate)")
    ss = p.add_subparsers(dest="store_command", required=True)
    q = ss.add_parser("info", parents=[parents["db"]], help="what the store is, where its data lives, its size")
    q.set_defaults(func=cmd_info)
    q = ss.add_parser("migrate", help="copy a single-file store into a new DuckLake store")
    q.add_argument("--from", dest="source", required=True, help="the DuckDB file, e.g. data/judgelens.duckdb")
    q.add_argument("--to", required=True, help="ducklake:sqlite:FILE or ducklake:postgres:CONNINFO")
    q.add_argument("--data-path", default=None, help="folder for the Parquet files (default: $JUDGELENS_DATA_PATH; "
                                                     "SQLite catalogs: FILE.files)")
    q.set_defaults(func=cmd_migrate)
