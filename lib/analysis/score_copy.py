"""An in-memory copy of the scored rows of ``item_scores``, for pages that pick one judge and model after another.

Compare pairs A's and B's items on every pick (``lib.analysis.deltas.paired_items``, and the two-harness view's
``lib.analysis.runs``; which judge scored which model is ``setup_warnings.scored_models``, kept per data version by
the pages). On a DuckLake store each such statement pays catalog look-ups
and reads Parquet row groups that the judge and model filters cannot skip (the rows are not sorted): a quarter to a
third of a second at a million judgments, for 160 rows. ``ScoreCopy`` holds the rows once per data version (a page
keeps it), sorted by judge and model, with the range of rows of every judge and of every (judge, model): a query
runs, unchanged, in the process's in-memory database on the rows its selectors can match (``rows``), so its answer
is the one the store gives. Text columns are dictionary-encoded while kept (a third of the memory).
"""
from __future__ import annotations

import threading

import numpy as np
import pandas as pd

from lib.store import Store, in_memory

COLUMNS = ("harness", "bench", "judge", "model", "question_id", "turn", "category", "score")


# Above this many rows a query reads the store instead: DuckDB scans its own storage faster than a registered Arrow
# table (Compare's "every model" pairing, 2 x 200,000 rows at a million judgments, took 1.6x the CPU in memory).
NARROW_ROWS = 50_000


class ScoreCopy:
    """``item_scores`` rows with a score (``COLUMNS``), sorted by judge and model; ``rows(selectors)`` the rows any
    of the selectors can match, ``frame(sql, selectors, params)`` a query on them. Made from an Arrow ``table``, or
    from ``read()`` (which returns one) on the first ``frame`` that uses it: a page that keeps the copy pays the read
    only once a pick needs it, not on a wide view (every model) that reads the store anyway."""

    def __init__(self, table=None, *, read=None):
        self._read, self._lock = read, threading.Lock()
        if table is not None:
            self._load(table)

    def try_load(self) -> None:
        """Read the copy now if it is not made yet; a failure is left to the first query that needs it (it reads
        again and says why)."""
        try:
            self._loaded()
        except Exception:  # noqa: BLE001 (raised again, to its caller, by the query that needs the copy)
            pass

    def _loaded(self) -> "ScoreCopy":
        with self._lock:
            if self._read is not None:
                self._load(self._read())
                self._read = None
        return self

    def _load(self, table) -> None:
        import pyarrow as pa

        columns = {n: table[n].combine_chunks() for n in COLUMNS}
        self.table = pa.table({n: (c.dictionary_encode() if pa.types.is_string(c.type) else c)
                               for n, c in columns.items()})
        judge, model = self.table["judge"].chunk(0), self.table["model"].chunk(0)
        ji = judge.indices.fill_null(-1).to_numpy()
        mi = model.indices.fill_null(-1).to_numpy()
        jd, md = judge.dictionary.to_pylist(), model.dictionary.to_pylist()
        n = len(ji)
        new_judge = np.ones(n, dtype=bool)
        new_judge[1:] = ji[1:] != ji[:-1]
        new = new_judge.copy()
        new[1:] |= mi[1:] != mi[:-1]
        self.pairs = _ranges(np.flatnonzero(new), n, lambda i: (jd[ji[i]] if ji[i] >= 0 else None,
                                                                md[mi[i]] if mi[i] >= 0 else None))
        self.judges = _ranges(np.flatnonzero(new_judge), n, lambda i: jd[ji[i]] if ji[i] >= 0 else None)

    def __len__(self) -> int:
        return len(self._loaded().table)

    def ranges(self, selectors) -> list[tuple[int, int]]:
        """Row ranges (start, stop), sorted and not overlapping, that hold every row any selector can match (a selector
        naming a judge, or a judge and a model, narrows it; any other: every row)."""
        self._loaded()
        out = []
        for sel in selectors:
            if "judge" not in sel:
                return [(0, len(self.table))] if len(self.table) else []
            got = self.pairs.get((sel["judge"], sel["model"])) if "model" in sel else self.judges.get(sel["judge"])
            if got is not None:
                out.append(got)
        merged: list[list[int]] = []
        for start, stop in sorted(out):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], stop)
            else:
                merged.append([start, stop])
        return [(start, stop) for start, stop in merged]

    def rows(self, selectors):
        """The rows any of ``selectors`` can match, as an Arrow table of plain columns (``COLUMNS``)."""
        import pyarrow as pa

        def plain(column, start: int, stop: int):
            part = self.table[column].chunk(0).slice(start, stop - start)
            return part.cast(pa.string()) if pa.types.is_dictionary(part.type) else part

        parts = [pa.table({n: plain(n, a, b) for n in COLUMNS}) for a, b in self.ranges(selectors)]
        if not parts:
            return pa.table({n: plain(n, 0, 0) for n in COLUMNS})
        return pa.concat_tables(parts)

    def frame(self, sql: str, selectors, params=None) -> pd.DataFrame | None:
        """``sql`` (on ``item_scores``) run on the rows ``selectors`` can match: the store's answer when every row
        ``sql`` selects is one that a selector names (its WHERE asks for a score and at least the selectors' keys).
        None when a selector does not name a judge and a model, or they match more than ``NARROW_ROWS``: read the
        store then."""
        if not all("judge" in sel and "model" in sel for sel in selectors):
            return None
        self._loaded()
        if sum(b - a for a, b in self.ranges(selectors)) > NARROW_ROWS:
            return None
        return in_memory({"item_scores": self.rows(selectors)}, sql, params)


def _ranges(starts: np.ndarray, n: int, key) -> dict:
    stops = np.append(starts[1:], n)
    return {key(int(a)): (int(a), int(b)) for a, b in zip(starts, stops)}


def score_copy(store: Store, background: bool = False) -> ScoreCopy:
    """The copy of ``store``'s scored items (one read of ``item_scores``, made when a query first needs it): keep it
    per data version. ``background``: start reading it now in a thread of its own (a page's first pick then finds it
    made: at a million judgments it takes 0.5-1 s); a query that needs it first waits for it."""
    def read():
        with store.read() as cur:
            return cur.execute(f"SELECT {', '.join(COLUMNS)} FROM item_scores WHERE score IS NOT NULL "
                               "ORDER BY judge, model").to_arrow_table()

    copy = ScoreCopy(read=read)
    if background:
        threading.Thread(target=copy.try_load, name="judgelens-score-copy", daemon=True).start()
    return copy
