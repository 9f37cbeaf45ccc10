"""The bundled sample: real JA MT-Bench outputs of both harnesses, shipped in ``data/sample/``.

See ``data/sample/PROVENANCE.md`` for where each file comes from and its licence.
"""
from __future__ import annotations


from lib.ingest.importer import IngestReport, Progress, ingest
from lib.analysis.queries import has_data
from lib.store import Store

from lib.paths import DATA_DIR

SAMPLE_DIR = DATA_DIR / "sample"


def load_sample(store: Store, progress: Progress | None = None) -> IngestReport:
    report = ingest(store, [SAMPLE_DIR], progress=progress)
    store.transaction(lambda cur: store.set_meta(cur, "sample_loaded", "yes"))
    return report


def load_sample_if_empty(store: Store, progress: Progress | None = None) -> IngestReport | None:
    """First start: a new, empty store gets the bundled sample.

    Only once per database file: a user who removed every source later gets an empty store, not the
    sample again (the Import page can still load it).
    """
    with store.read() as cur:
        done = cur.execute("SELECT 1 FROM meta WHERE key = 'sample_loaded'").fetchone()
    if done or has_data(store):
        return None
    return load_sample(store, progress)
