"""Streamlit glue shared by the pages: the cached store handle, cached queries, safe text display.

Pages stay thin: read widgets, call ``lib``, draw. Nothing here parses files or computes statistics.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from pathlib import Path

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager

from lib.render import charts
from lib.render.safe_text import csv_text, md_escape
from lib.errors import DatabaseFileError, JudgeLensError, install_log_redaction, redact
from lib.store import Store, default_data_path, default_db_path


if PagesManager.uses_pages_directory:
    # The server's very first request was a deep link (e.g. /item_view?...). Streamlit then falls back to
    # its legacy pages/ mode and runs the page without app.py. Switch to app.py's st.navigation and rerun.
    PagesManager.uses_pages_directory = False
    st.rerun()


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


@st.cache_resource(show_spinner=False)
def _open_store(path: str, data_path: str | None = None) -> Store:
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
    """Changes whenever a source is added or removed or an analyst records a verdict: the cache key for query
    results. On a DuckLake store also whenever any process commits a write (its write clock), so every server
    sees the others' imports, re-judges, probe runs and verdicts on the next rerun. Each query reads the
    newest snapshot."""
    with store.read() as cur:
        version = tuple(cur.execute("SELECT count(*), coalesce(max(source_id), 0), "
                                    "(SELECT count(*) FROM human_verdicts) FROM sources").fetchone())
    return version if not store.lake else (*version, store.data_clock())


def cached_query(fn, version: tuple, **kwargs):
    """Run ``fn(store, **kwargs)`` (a ``lib`` query function), cached until the data changes: reruns
    that only change how a result is drawn cost nothing."""
    return _through_cache(_cached_query, fn, version, kwargs)


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
@st.cache_data(show_spinner=False, max_entries=128)
def _cached_query(_fn, name: str, db: str, data_path: str | None, version: tuple, **kwargs):
    return _fn(_open_store(db, data_path), **kwargs)


@st.cache_data(show_spinner=False, max_entries=512)
def _cached_item_query(_fn, name: str, db: str, data_path: str | None, version: tuple, **kwargs):
    return _fn(_open_store(db, data_path), **kwargs)


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


def keep_valid(key: str, options: list, default=None) -> None:
    """Keep a widget's session value one of its current options (data or filters may have changed)."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default is not None else (options[0] if options else None)


def keep_values(*keys: str) -> None:
    """Keep these widgets' values while their widgets are not drawn (another page, a closed lazy expander or
    tab): Streamlit drops a widget's state on the first run that does not draw it, unless the run writes it."""
    for key in keys:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def keep_picks(key: str, options: list, default: list) -> None:
    """A multiselect's session value: ``default`` the first time, later only the picks still among ``options``
    (another bench may not have them). Set here, not with ``default=``, so the two never disagree."""
    before = st.session_state.get(key)
    kept = [v for v in before if v in options] if before is not None else None
    # the first time, or when none of the earlier picks exists here (another bench): the default
    st.session_state[key] = list(default) if before is None or (before and not kept) else kept


def seed_from_url(page: str, keys: dict[str, str], ints: tuple[str, ...] = (), lists: tuple[str, ...] = ()) -> bool:
    """Copy query parameters into widget state (``param -> widget key``) once per distinct URL; after
    that the widgets own the state and ``publish_to_url`` writes it back, so the address bar is a deep link.
    ``ints`` / ``lists`` name the params holding a whole number / a comma-separated list. Returns whether this
    run seeded (a URL the page had not seen: a deep link followed, or the page's first run)."""
    marker = f"_{page}_seeded"
    if st.session_state.get(marker) == _page_params():
        return False
    for param, key in keys.items():
        if param not in st.query_params:
            continue
        value = st.query_params[param]
        if param in ints:
            if not value.isdigit():
                continue
            value = int(value)
        elif param in lists:
            value = [v for v in value.split(",") if v]
        st.session_state[key] = value
    st.session_state[marker] = _page_params()
    return True


def _page_params() -> dict:
    """The address bar's parameters that belong to the page (not the remembered judge endpoint)."""
    return {k: v for k, v in st.query_params.to_dict().items() if k not in REMEMBER_PARAMS.values()}


def publish_to_url(page: str, params: dict[str, str]) -> None:
    kept = {p: st.query_params[p] for p in REMEMBER_PARAMS.values() if p in st.query_params}
    st.query_params.from_dict({**params, **kept})
    st.session_state[f"_{page}_seeded"] = _page_params()


def show_text(text: str, height: int | None = None) -> None:
    """Model, judge or file text, literally (never Markdown or HTML), wrapped, in a bordered box that scrolls
    beyond ``height`` pixels. ``st.text``, not ``st.code``: the code block's syntax highlighter costs a new
    browser tab ~0.3 s of JavaScript the first time its page shows one, even for plain text."""
    with st.container(height=height, border=True) if height else st.container(border=True):
        st.text(text, width="stretch")


def show_error(exc: JudgeLensError) -> None:
    st.error(f"**{redact(exc.title)}**")
    st.code(redact(exc.message), language=None, wrap_lines=True)


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


def readable_dataframe(df, **kwargs):
    """``st.dataframe`` without raw nulls: a column holding a missing value shows an em dash there and p-values
    read ``< 0.001`` (``lib.render.tables.for_display``), formatted as its ``column_config`` says."""
    from lib.render.tables import for_display

    config = dict(kwargs.pop("column_config", None) or {})
    formats = {}
    for col, conf in config.items():
        type_config = conf.get("type_config", {}) if isinstance(conf, dict) else {}
        if type_config.get("format"):
            formats[col] = type_config["format"]
    shown, converted = for_display(df, formats)
    for col in converted:  # now text: keep the label and help, drop the number type
        conf = config.get(col)
        label, help_, width = (conf.get("label"), conf.get("help"), conf.get("width")) if isinstance(conf, dict) else (
            None, None, None)
        config[col] = st.column_config.TextColumn(label or str(col), help=help_, width=width)
    return st.dataframe(shown, column_config=config or None, **kwargs)


def show_table(df, name: str, page_size: int = 50, noun: str = "rows", **kwargs) -> None:
    """A table with a CSV download of all its rows; long tables are shown a page at a time (``paged``). Missing
    values read as an em dash, p-values as ``< 0.001`` (``readable_dataframe``); the CSV keeps the raw values."""
    readable_dataframe(paged(df, f"tbl_{name}", noun, page_size), hide_index=True, width="stretch", **kwargs)
    st.download_button("Table as CSV", data=lambda: csv_text(df).encode(), file_name=f"{name}.csv",
                       mime="text/csv", on_click="ignore", icon=":material/download:", key=f"csv_{name}")


SUBSET_WAYS = {"ends": "top and bottom", "top": "top", "bottom": "bottom", "picked": "only the ones I pick"}


def readable_subset(ranked: list[str], key: str, noun: str = "models", default_n: int = 12,
                    rank_note: str = "by mean score", container=None) -> list[str]:
    """A readable subset of a long, ranked list (best first): the top and bottom ``default_n`` by default,
    plus any the user picks, with a "Showing 12 of 1,250 models" cue and the controls to change it.

    Short lists (at most ``default_n``) come back whole, with no controls. Nothing is pre-filled into a
    multiselect: the picker starts empty, so a thousand names never become a thousand chips.
    """
    where = container or st
    total = len(ranked)
    if total <= default_n:
        where.caption(f"Showing all {total:,} {noun}.")
        return list(ranked)
    keep_valid(f"{key}_how", list(SUBSET_WAYS), "ends")
    c1, c2, c3 = where.columns([1.2, 0.8, 3])
    how = c1.selectbox(f"Which {noun}", list(SUBSET_WAYS), key=f"{key}_how", format_func=SUBSET_WAYS.get,
                       help=f"Ranked {rank_note}. Picked {noun} are always shown.")
    n = c2.number_input("How many", 1, total, min(default_n, total), key=f"{key}_n",
                        disabled=how == "picked")
    picked = c3.multiselect(f"Also show (type to search {total:,} {noun})", ranked, key=f"{key}_picked",
                            placeholder=f"Pick {noun} to add")
    n = int(n)
    if how == "top":
        base = ranked[:n]
    elif how == "bottom":
        base = ranked[-n:]
    elif how == "ends":
        base = ranked[:(n + 1) // 2] + ranked[total - n // 2:] if n < total else list(ranked)
    else:
        base = []
    chosen = set(base) | set(picked)
    shown = [m for m in ranked if m in chosen]
    where.caption(f"Showing {len(shown):,} of {total:,} {noun} ({SUBSET_WAYS[how]}"
                  f"{' ' + rank_note if how != 'picked' else ''}{' + picked' if picked and how != 'picked' else ''}).")
    return shown


def paged(df, key: str, noun: str = "rows", page_size: int = 50):
    """One page of a long table, with Previous / Next and a "rows 1-50 of 6,250" cue. Short tables pass whole."""
    total = len(df)
    if total <= page_size:
        return df
    pages = (total + page_size - 1) // page_size
    state = f"{key}_page"
    page = min(max(int(st.session_state.get(state, 0)), 0), pages - 1)
    st.session_state[state] = page

    def move(delta: int) -> None:
        st.session_state[state] = min(max(st.session_state.get(state, 0) + delta, 0), pages - 1)

    c1, c2, c3 = st.columns([1, 1, 4])
    c1.button("Previous page", key=f"{key}_prev", on_click=move, args=(-1,), disabled=page == 0,
              icon=":material/chevron_left:", width="stretch")
    c2.button("Next page", key=f"{key}_next", on_click=move, args=(1,), disabled=page >= pages - 1,
              icon=":material/chevron_right:", width="stretch")
    c3.caption(f"{noun.capitalize()} {page * page_size + 1:,}–{min(total, (page + 1) * page_size):,} of {total:,} "
               f"(page {page + 1} of {pages:,}; the CSV has every row).")
    return df.iloc[page * page_size:(page + 1) * page_size]


ENDPOINT_DEFAULTS = {"ep_url": "https://api.openai.com/v1", "ep_model": "gpt-4o-mini", "ep_temp": 0.0,
                     "ep_max_tokens": 2048, "ep_timeout": 60, "ep_price_in": 0.0, "ep_price_out": 0.0, "ep_key": ""}
ENDPOINT_KEYS = tuple(ENDPOINT_DEFAULTS)


REMEMBER_PARAMS = {"ep_url": "judge_url", "ep_model": "judge_model"}  # query parameter per remembered field


def _remembered_endpoint() -> dict:
    """The endpoint URL and model this browser tab used before a reload: kept in the address bar (never the key,
    never on disk), so a reload or a link keeps them."""
    return {key: st.query_params[param] for key, param in REMEMBER_PARAMS.items() if st.query_params.get(param)}


def _remember_endpoint(base_url: str, model: str) -> None:
    for key, value in (("ep_url", base_url), ("ep_model", model)):
        param = REMEMBER_PARAMS[key]
        if value != ENDPOINT_DEFAULTS[key] and st.query_params.get(param) != value:
            st.query_params[param] = value
        elif value == ENDPOINT_DEFAULTS[key] and param in st.query_params:
            del st.query_params[param]


def judge_endpoint():
    """The judge endpoint form in the sidebar, shared by Workbench and Probes. Returns (config, api_key).

    The form is a lazy expander (closed at first, its eight fields drawn only while it is open: a new tab of
    Workbench or Probes does not pay for them); closed, the values are the ones last entered or the defaults,
    and a caption names the model, the host and whether a key was found.
    The API key comes from the password field (kept in this browser session only), then Streamlit secrets
    ([judgelens] OPENAI_API_KEY), then the OPENAI_API_KEY environment variable; it is never stored.
    """
    from lib.judging import config as J

    keep_values(*ENDPOINT_KEYS)  # across pages, and while the form is closed
    remembered = _remembered_endpoint()
    for key, default in ENDPOINT_DEFAULTS.items():  # the widgets read their value from here: no value= as well
        st.session_state.setdefault(key, remembered.get(key, default))
    box = st.sidebar.expander("Judge endpoint", icon=":material/cloud:", key="ep_open", on_change="rerun")
    if box.open:
        with box:
            st.text_input("Base URL", key="ep_url", help="Any OpenAI-compatible API: OpenAI, vLLM, Ollama, LiteLLM, …")
            st.text_input("Model", key="ep_model")
            st.number_input("Temperature", 0.0, 2.0, step=0.1, key="ep_temp")
            st.number_input("Max tokens", 1, 32768, key="ep_max_tokens")
            st.number_input("Timeout (s)", 1, 600, key="ep_timeout")
            st.number_input("$ per 1k input tokens (optional)", 0.0, 100.0, step=0.0005, format="%.4f",
                            key="ep_price_in")
            st.number_input("$ per 1k output tokens (optional)", 0.0, 100.0, step=0.0005, format="%.4f",
                            key="ep_price_out")
            st.text_input("API key (kept in this browser session only)", type="password", key="ep_key")
    value = {key: st.session_state.get(key, default) for key, default in ENDPOINT_DEFAULTS.items()}
    base_url, model, typed_key = value["ep_url"], value["ep_model"], value["ep_key"]
    temperature, max_tokens, timeout_s = value["ep_temp"], value["ep_max_tokens"], value["ep_timeout"]
    price_in, price_out = value["ep_price_in"], value["ep_price_out"]
    try:
        secrets = st.secrets.get("judgelens")
    except Exception:  # no secrets file
        secrets = None
    api_key = J.resolve_api_key(typed_key, secrets)
    try:
        config = J.JudgeConfig(base_url=base_url, model=model, temperature=float(temperature),
                               max_tokens=int(max_tokens), timeout_s=float(timeout_s),
                               price_per_1k_input=price_in or None, price_per_1k_output=price_out or None)
    except ValueError as exc:
        st.sidebar.error(str(exc))
        config = None
    _remember_endpoint(base_url, model)
    host = base_url.split("//", 1)[-1].split("/", 1)[0]
    st.sidebar.caption(md_escape(f"{model} at {host}") + " · Key: " + (
        "found" if api_key else "none yet (password field, [judgelens] in secrets, or OPENAI_API_KEY)"))
    return config, api_key


def progress_callback(bar, label: str = "requests"):
    """A progress(done, total) callback for lib functions that report from worker threads: each call
    attaches this script run's context to the calling thread, so the bar can be updated from there."""
    import threading

    from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

    ctx = get_script_run_ctx()

    def update(done: int, total: int, *_):
        add_script_run_ctx(threading.current_thread(), ctx)
        bar.progress(min(done / total, 1.0) if total else 1.0, text=f"{done}/{total} {label}")

    return update
