"""What every command shares: the ``--db`` and ``--format`` options, the judge endpoint options, output."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from lib.errors import UsageError
from lib.render.safe_text import csv_text
from lib.store import Store, default_db_path, default_store, is_lake


def parents() -> dict[str, argparse.ArgumentParser]:
    """Parent parsers a command may inherit: ``db`` (--db), ``fmt`` (--format), ``endpoint`` (judge API)."""
    db = argparse.ArgumentParser(add_help=False)
    db.add_argument("--db", type=Path, default=None,
                    help=f"DuckDB file (default: $JUDGELENS_DB or {default_db_path()})")
    db.add_argument("--store", default=None, metavar="STORE",
                    help="a DuckLake team store instead of the DuckDB file: ducklake:sqlite:FILE or "
                         "ducklake:postgres:CONNINFO (default: $JUDGELENS_STORE if set)")
    db.add_argument("--data-path", default=None, metavar="FOLDER",
                    help="where a DuckLake store keeps its Parquet files (default: $JUDGELENS_DATA_PATH; "
                         "SQLite catalogs: FILE.files next to the catalog)")
    fmt = argparse.ArgumentParser(add_help=False)
    fmt.add_argument("--format", choices=("table", "csv", "json"), default="table")
    endpoint = argparse.ArgumentParser(add_help=False)
    endpoint.add_argument("--model", required=True, help="the judge model, e.g. gpt-4o-mini")
    endpoint.add_argument("--base-url", required=True,
                          help="OpenAI-compatible base URL, e.g. https://api.openai.com/v1")
    endpoint.add_argument("--temperature", type=float, default=0.0)
    endpoint.add_argument("--max-tokens", type=int, default=2048)
    endpoint.add_argument("--timeout", type=float, default=60.0,
                          help="seconds per request, from sending it to the last byte of the answer (default 60)")
    endpoint.add_argument("--max-retries", type=int, default=4)
    endpoint.add_argument("--price-in", type=float, help="price per 1k prompt tokens, for the cost estimate")
    endpoint.add_argument("--price-out", type=float, help="price per 1k completion tokens")
    return {"db": db, "fmt": fmt, "endpoint": endpoint}


def judge_config(args):
    """The JudgeConfig the endpoint options describe."""
    from lib.judging.config import JudgeConfig

    return JudgeConfig(base_url=args.base_url, model=args.model, temperature=args.temperature,
                       max_tokens=args.max_tokens, timeout_s=args.timeout, max_retries=args.max_retries,
                       price_per_1k_input=args.price_in, price_per_1k_output=args.price_out)


def store_target(args):
    """The store the options name: --store, else --db, else $JUDGELENS_STORE, else the DuckDB file."""
    if getattr(args, "store", None) and getattr(args, "db", None):
        raise UsageError("Give either --db (a DuckDB file) or --store (a DuckLake store), not both.")
    if getattr(args, "store", None):
        if not is_lake(args.store):
            raise UsageError(f"--store {args.store!r}: a store is ducklake:sqlite:FILE or ducklake:postgres:CONNINFO "
                             "(for a DuckDB file use --db FILE).")
        return args.store
    return getattr(args, "db", None) or default_store()


def open_store(args, read_only: bool = False) -> Store:
    """The store the options name (``store_target``). Commands that only read open a DuckDB file read-only: no
    schema DDL, so a store in a read-only folder (or one another reader holds) still answers."""
    return Store(store_target(args), read_only=read_only, data_path=getattr(args, "data_path", None),
                 notify=lambda message: print(message, file=sys.stderr, flush=True))


def split_list(text: str | None) -> list[str]:
    return [part.strip() for part in (text or "").split(",") if part.strip()]


def records(df) -> list[dict]:
    """Rows as plain JSON-ready dicts at full float precision (``to_json`` rounds to 10 digits): NaN and
    NA -> None, numpy scalars -> Python numbers."""
    out = []
    for row in df.astype(object).to_dict(orient="records"):
        clean = {}
        for key, value in row.items():
            if value is None or (not isinstance(value, (str, bytes, list, dict)) and pd.isna(value)):
                clean[key] = None
            elif hasattr(value, "item"):
                clean[key] = value.item()
            else:
                clean[key] = value
        out.append(clean)
    return out


def json_out(data) -> str:
    return json.dumps(data, ensure_ascii=False, indent=1)


def frame_out(df, fmt: str, note: str | None = None) -> str:
    """A DataFrame as the user asked for it: an aligned table (with a note below), CSV or JSON."""
    if fmt == "json":
        if any(str(t).startswith("datetime") for t in df.dtypes):
            return json.dumps(json.loads(df.to_json(orient="records", date_format="iso")), ensure_ascii=False, indent=1)
        return json_out(records(df))
    if fmt == "csv":
        return csv_text(df).rstrip("\n")
    if df.empty:
        return "(nothing)"
    text = df.to_string(index=False, float_format=lambda v: f"{v:.4f}")
    return f"{text}\n\n{note}" if note else text


def print_note(fmt: str, note: str | None) -> None:
    """The note a table shows below it, on stderr when the output is CSV or JSON (stdout stays parseable)."""
    if fmt != "table":
        print(note, file=sys.stderr)


def print_frame(df, fmt: str, note: str | None = None) -> None:
    """``frame_out`` on stdout, and its note on stderr when the format has no room for it (``print_note``)."""
    print(frame_out(df, fmt, note))
    print_note(fmt, note)
