"""Shared widgets: safe text display, titled errors, the empty state, charts and tables with their downloads,
readable subsets of long lists, paged tables and progress bars fed from worker threads."""
from __future__ import annotations

import streamlit as st

from app_pages._state import keep_valid, keep_values
from lib.errors import JudgeLensError, redact
from lib.render import charts
from lib.render.safe_text import csv_text, md_escape


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


ONE_CLICK_MOST = 6  # options shown as a row of radio buttons (one click) rather than a select box (open, type, pick)


def one_of(label: str, options: list, key: str, container=None, **kwargs):
    """One choice of a few: a horizontal radio (a single click, every option in sight) when there are at most
    ONE_CLICK_MOST options, a select box (typed search) when there are more. The value and its session-state key
    are the same either way, so the choice survives a change of widget when the options grow or shrink. In the
    browser benchmark a pick in a select box took 0.2-0.4 s before its rerun was even requested (opening the list,
    typing, choosing; the hello app's own select box the same), a radio click 0.06-0.09 s. A radio draws its
    options as Markdown (a select box does not): they are escaped, since they may be judge or model names."""
    where = container or st
    keep_values(key)  # a new kind of widget under the key starts from its default unless the run writes the value
    if len(options) <= ONE_CLICK_MOST:
        shown = kwargs.pop("format_func", str)
        return where.radio(label, options, key=key, horizontal=True, format_func=lambda o: md_escape(str(shown(o))),
                           **kwargs)
    return where.selectbox(label, options, key=key, **kwargs)


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
    c1, c2, c3 = where.columns([2.2, 0.8, 2])
    how = one_of(f"Which {noun}", list(SUBSET_WAYS), f"{key}_how", container=c1, format_func=SUBSET_WAYS.get,
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
