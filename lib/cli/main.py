"""Command line: ``python -m lib.cli COMMAND``. Each command lives in the module of its area
(``data``, ``review``, ``stats``, ``judging``, ``generate``, ``links``, ``harness``); this file builds the parser
from them and maps errors to exit codes.

Exit codes: 0 success, 1 bad input (nothing imported; ``rejudge``: not one request succeeded), 2 usage or
a user error (unknown format, a bad template, a refused API key, ...), 3 the database is in use by another
process (or a DuckLake store stayed busy, or a re-judge batch with the same label is running), 130 interrupted (Ctrl-C; ``rejudge`` keeps every verdict that
arrived). ``probe``: 0 every
deciding probe passed, 1 a canary or position-swap probe failed or could not be evaluated.
``flags`` always exits 0 on success: flags are findings to review.
"""
from __future__ import annotations

import argparse
import sys
import traceback

from lib.cli import data, generate, harness, items, judging, links, reliability, review, search, stats, store, verdicts
from lib.cli.common import parents
from lib.errors import DatabaseBusyError, IngestError, JudgeLensError, redact

COMMAND_MODULES = (data, review, reliability, stats, judging, generate, links, harness, search, items, verdicts, store)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m lib.cli",
                                     description="JudgeLens: MT-Bench judge outputs in DuckDB.")
    sub = parser.add_subparsers(dest="command", required=True)
    shared = parents()
    for module in COMMAND_MODULES:
        module.register(sub, shared)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except IngestError as exc:
        print("\n".join(str(p) for p in exc.problems), file=sys.stderr)
        print(f"Nothing was imported. {exc.hint}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("Interrupted.", file=sys.stderr)
        return 130
    except DatabaseBusyError as exc:
        print(redact(exc.message), file=sys.stderr)
        return 3
    except JudgeLensError as exc:
        print(redact(exc.message), file=sys.stderr)
        return 2
    except Exception:  # a bug, or a DuckDB / libpq error nothing above turned into words
        shown = traceback.format_exc()
        if redact(shown) == shown:
            raise
        print(redact(shown), end="", file=sys.stderr)  # the traceback as Python prints it, without the password
        return 1
