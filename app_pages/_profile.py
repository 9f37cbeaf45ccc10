"""Profiling of a script run (``JUDGELENS_PROFILE=DIR``): app.py wraps every page run in ``profiled``."""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def profiled(name: str):
    """With JUDGELENS_PROFILE=DIR set, profile this script run (cProfile, one .prof file per run in DIR) and
    print its seconds to stderr; without it, nothing. How bench/browser_bench.py's slow rows are explained:
    ``JUDGELENS_PROFILE=/tmp/prof streamlit run app.py``, then ``python -m pstats /tmp/prof/<file>``."""
    target = os.environ.get("JUDGELENS_PROFILE")
    if not target:
        yield
        return
    import cProfile
    import sys
    import time

    prof = cProfile.Profile()
    t0 = time.perf_counter()
    prof.enable()
    try:
        yield
    finally:
        prof.disable()
        seconds = time.perf_counter() - t0
        folder = Path(target)
        folder.mkdir(parents=True, exist_ok=True)
        prof.dump_stats(folder / f"{name.replace(' ', '_')}-{time.time_ns()}.prof")
        print(f"[profile] {name}: {seconds:.3f} s", file=sys.stderr, flush=True)
