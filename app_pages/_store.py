"""The store of this server process and the caches in front of it: the store handle, the first-start load,
the data version every cached query is keyed on, cached queries and charts, and the start of every data page.

Pages stay thin: read widgets, call ``lib``, draw. Nothing here parses files or computes statistics.
"""
from __future__ import annotations

import threading

import streamlit as st

from app_pages._widgets import empty_state, show_error
from lib.analysis.agreement_ci import one_blas_thread
from lib.errors import DatabaseFileError, JudgeLensError, install_log_redaction
from lib.store import Store, default_data_path, default_db_path


@st.cache_resource(show_spinner=False)
def _open_store(path: str, data_path: str | None = None) -> Store:
    one_blas_thread()  # once per server process (and store): the bootstraps' products on one thread, half the CPU
    return Store(path, data_path=data_path)


def _secret(name: str) -> str | None:
    try:
        section = st.secrets.get("judgelens")
    except Exception:  # no secrets file
        return None
    value = section.get(name) if section else None
    return str(value) if value else None


def store_target() -> tuple[str, str | None]:
    """Which store this server uses: ``JUDGELENS_STORE`` or ``[judgelens] store`` in secrets (a DuckLake
    store, data under ``JUDGELENS_DATA_PATH`` / ``[judgelens] data_path``), else the single DuckDB file."""
    import os

    target = os.environ.get("JUDGELENS_STORE") or _secret("store")
    if not target:
        return str(default_db_path()), None
    return target, default_data_path() or _secret("data_path")


def get_store() -> Store:
    """The one store of this server process. On failure, say why and stop the page. Every log handler there is
    gets the redacting filter first: an uncaught exception Streamlit logs may quote a store's password."""
    install_log_redaction()
    try:
        return _open_store(*store_target())
    except JudgeLensError as exc:
        show_error(exc)
        st.stop()


@st.cache_resource(show_spinner=False)
def _first_start_state(target: str, data_path: str | None) -> dict:
    return {"lock": threading.Lock(), "checked": False}


def first_start(store: Store) -> None:
    """Load the bundled sample into an empty new store (``load_sample_if_empty``), with a progress bar and a
    toast. Checked once per server process and store, not per browser session: every new tab would
    otherwise pay a query and a progress bar it never sees."""
    from lib.ingest.sample import load_sample_if_empty

    state = _first_start_state(*store_target())
    if state["checked"]:
        return
    with state["lock"]:  # a second tab opened during the load waits for it instead of loading again
        if state["checked"]:
            return
        bar = []

        def progress(fraction: float, msg: str) -> None:
            if not bar:  # drawn only when there is something to load
                bar.append(st.progress(0.0, text="First start: loading the bundled sample data…"))
            bar[0].progress(min(fraction, 1.0), text=msg[-90:])

        report = load_sample_if_empty(store, progress=progress)
        if bar:
            bar[0].empty()
        if report is not None:
            st.toast(f"Loaded the bundled sample: {len(report.imported)} files.", icon=":material/check:")
        state["checked"] = True


def data_version(store: Store) -> tuple:
    """The cache key for query results: ``Store.data_version`` (sources, verdicts, templates, probe runs and, on a
    DuckLake store, any process's write). A rerun that nothing changed asks a DuckLake catalog one question: its
    newest snapshot."""
    return store.data_version()


def cached_query(fn, version: tuple, **kwargs):
    """Run ``fn(store, **kwargs)`` (a ``lib`` query function), cached until the data changes: reruns
    that only change how a result is drawn cost nothing."""
    return _through_cache(_cached_query, fn, version, kwargs)


class Kept:
    """A result of ``kept_query``: ``value``, and ``key``, what it was cached under. Passed as an argument of
    another cached query, the cache hashes the key, not the value, and the query is given the value."""

    __slots__ = ("value", "key")

    def __init__(self, value, key: tuple):
        self.value, self.key = value, key

    @staticmethod
    def of_all(*kept: "Kept") -> "Kept":
        """Several kept results as one argument: the tuple of their values, under the tuple of their keys."""
        return Kept(tuple(k.value for k in kept), tuple(k.key for k in kept))


def kept_query(fn, version: tuple, **kwargs) -> Kept:
    """``cached_query``, its result kept with its cache key: for a result that is passed on to another cached
    query (``setup_context``, ``model_answers``). Hashing the result itself as a cache argument cost every rerun
    of Compare its dicts of frames again (tens of ms; frames with list columns are pickled to be hashed)."""
    key = (f"{fn.__module__}.{fn.__qualname__}", *store_target(), version, tuple(sorted(kwargs.items())))
    return Kept(cached_query(fn, version, **kwargs), key)


def _kept_key(kept: Kept) -> tuple:
    return kept.key


def _given_kwargs(kwargs: dict) -> dict:
    return {k: v.value if isinstance(v, Kept) else v for k, v in kwargs.items()}


def cached_item_query(fn, version: tuple, **kwargs):
    """``cached_query`` for what one item shows (its question, answer, verdicts, ...), in a cache of its own: an
    analyst stepping through hundreds of items must not push the pages' aggregates out of ``cached_query``'s.
    A rerun on the same item (an expander, a verdict form) and a new tab on it skip the queries (50 ms at 1M)."""
    return _through_cache(_cached_item_query, fn, version, kwargs)


def _through_cache(cache, fn, version: tuple, kwargs: dict):
    target, data_path = store_target()
    try:
        return cache(fn, f"{fn.__module__}.{fn.__qualname__}", target, data_path, version, **kwargs)
    except DatabaseFileError as exc:  # a damaged block shows up only when a query reads it
        show_error(exc)
        st.stop()


# ``name`` keys a cache (``_fn`` is not hashed); ``db`` too: two database files can share a version.
@st.cache_data(show_spinner=False, max_entries=128, hash_funcs={Kept: _kept_key})
def _cached_query(_fn, name: str, db: str, data_path: str | None, version: tuple, **kwargs):
    return _fn(_open_store(db, data_path), **_given_kwargs(kwargs))


@st.cache_data(show_spinner=False, max_entries=512, hash_funcs={Kept: _kept_key})
def _cached_item_query(_fn, name: str, db: str, data_path: str | None, version: tuple, **kwargs):
    return _fn(_open_store(db, data_path), **_given_kwargs(kwargs))


def cached_shared(fn, version: tuple, **kwargs):
    """``fn(store, **kwargs)`` kept as it is (not pickled, not copied) until the data changes: a large intermediate
    (a bench's answer lengths) that later queries join in memory instead of reading the store again. Shared by
    every session: treat it as read-only. Few are kept (``max_entries``)."""
    return _through_cache(_cached_shared, fn, version, kwargs)


@st.cache_resource(show_spinner=False, max_entries=4)
def _cached_shared(_fn, name: str, db: str, data_path: str | None, version: tuple, **kwargs):
    return _fn(_open_store(db, data_path), **kwargs)


def cached_query_given(fn, version: tuple, given, **kwargs):
    """``cached_query`` of ``fn(store, **given(), **kwargs)``: ``given()`` returns inputs that follow from ``kwargs``
    and the data version alone (``cached_shared`` ones), so they are not part of the key (a large frame would be
    hashed on every rerun), and it is called only when the result is not cached."""
    return _through_cache(_cached_query_given, fn, version, {"_given": given, **kwargs})


# ``_given`` is not hashed (a leading underscore): the key is ``name``, ``db``, ``version`` and the other kwargs.
@st.cache_data(show_spinner=False, max_entries=128, hash_funcs={Kept: _kept_key})
def _cached_query_given(_fn, name: str, db: str, data_path: str | None, version: tuple, _given, **kwargs):
    return _fn(_open_store(db, data_path), **_given(), **_given_kwargs(kwargs))


def cached_chart(fn, *args):
    """``fn(*args)`` (a pure ``lib.render.charts`` function of small aggregate frames), cached on its inputs: a
    rerun, or another tab, that leaves a chart's data alone does not rebuild the Plotly figure (a fifth of a
    second for a grouped bar chart). The figure is shared, never copied: treat it as read-only."""
    return _cached_chart(fn, f"{fn.__module__}.{fn.__qualname__}", *args)


# A resource cache, not a data cache: st.cache_data pickles its values and a go.Figure unpickles by validating
# every property again (its template alone is a few hundred objects), which cost as much as building it.
@st.cache_resource(show_spinner=False, max_entries=64)
def _cached_chart(_fn, name: str, *args):
    return _fn(*args)


def page_start(title: str):
    """Every data page begins the same way: its title, the store, the data version; an empty store
    shows what to do and stops the page. Returns (store, version)."""
    st.title(title)
    store = get_store()
    version = data_version(store)
    if version[0] == 0:
        empty_state()
        st.stop()
    return store, version
