"""Streamlit glue shared by the pages: the cached store handle, cached queries, safe text display.

Pages stay thin: read widgets, call ``lib``, draw. Nothing here parses files or computes statistics.
"""
from __future__ import annotations

import importlib

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

from lib import charts, queries
from lib.errors import JudgeLensError
from lib.store import Store, default_db_path


if PagesManager.uses_pages_directory:
    # The server's very first request was a deep link (e.g. /item_view?...). Streamlit then falls back to
    # its legacy pages/ mode and runs the page without app.py. Switch to app.py's st.navigation and rerun.
    PagesManager.uses_pages_directory = False
    st.rerun()


@st.cache_resource(show_spinner=False)
def _open_store(path: str) -> Store:
    return Store(path)


def get_store() -> Store:
    """The one store of this server process. On failure, say why and stop the page."""
    try:
        return _open_store(str(default_db_path()))
    except JudgeLensError as exc:
        show_error(exc)
        st.stop()


def data_version(store: Store) -> tuple:
    """Changes whenever a source is added or removed: the cache key for query results."""
    with store.read() as cur:
        return tuple(cur.execute("SELECT count(*), coalesce(max(source_id), 0) FROM sources").fetchone())


def cached_query(name: str, version: tuple, **kwargs):
    """Run ``lib.queries.<name>(store, **kwargs)`` (or ``lib.<module>.<name>`` for "module.name"),
    cached until the data changes: reruns that only change how a result is drawn cost nothing."""
    return _cached_query(name, str(default_db_path()), version, **kwargs)


@st.cache_data(show_spinner=False, max_entries=128)
def _cached_query(name: str, db: str, version: tuple, **kwargs):
    # ``db`` is part of the key: two database files can have the same version tuple.
    module, _, func = name.rpartition(".")
    return getattr(importlib.import_module(f"lib.{module or 'queries'}"), func)(_open_store(db), **kwargs)


def show_error(exc: JudgeLensError) -> None:
    st.error(f"**{exc.title}**")
    st.code(exc.message, language=None, wrap_lines=True)


def empty_state() -> None:
    st.info("No data loaded yet. Go to **Import** to upload harness outputs or load a server folder, "
            "or run `python -m lib.cli ingest PATH` in a terminal.", icon=":material/upload:")


def show_chart(fig, name: str) -> None:
    """A chart with its exports: PNG from the chart's camera button, interactive HTML from the button below."""
    st.plotly_chart(fig, width="stretch", config={"displaylogo": False,
                                                  "toImageButtonOptions": {"format": "png", "filename": name, "scale": 2}})
    st.download_button("Chart as interactive HTML", data=lambda: charts.figure_html(fig, name), file_name=f"{name}.html",
                       mime="text/html", on_click="ignore", icon=":material/download:", key=f"html_{name}",
                       help="Self-contained: opens offline. For a PNG, use the camera icon on the chart.")


def show_table(df, name: str, **kwargs) -> None:
    """A table with a CSV download of exactly what it shows."""
    st.dataframe(df, hide_index=True, width="stretch", **kwargs)
    st.download_button("Table as CSV", data=df.to_csv(index=False).encode(), file_name=f"{name}.csv", mime="text/csv",
                       on_click="ignore", icon=":material/download:", key=f"csv_{name}")
