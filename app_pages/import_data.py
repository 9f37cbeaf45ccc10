"""Import: upload files or a zip, or read a folder on the server; see and remove sources."""
from pathlib import Path

import pandas as pd
import streamlit as st

from lib.analysis import queries
from lib.errors import IngestError, JudgeLensError
from lib.ingest.importer import ingest, remove_source
from lib.ingest.sample import SAMPLE_DIR, load_sample
from lib.ingest.uploads import StagingArea, allowed_import_roots, check_import_path, stage_uploads
from lib.render.safe_text import csv_text
from app_pages._store import cached_query, data_version, get_store
from app_pages._widgets import readable_dataframe

st.title("Import")
store = get_store()


def discard_staging() -> None:
    """Remove the staged copy of the last upload (kept only while its bad lines may be retried)."""
    area = st.session_state.pop("import_staging", None)
    if area is not None:
        area.cleanup()


def run_import(paths: list[Path], skip_bad_lines: bool, roots: list[Path] | None = None,
               notes: list[str] = ()) -> None:
    """Import and leave the outcome in session state (it survives the rerun that follows)."""
    bar = st.progress(0.0, text="Starting…")
    try:
        report = ingest(store, paths, skip_bad_lines=skip_bad_lines, allowed_roots=roots,
                        progress=lambda f, msg: bar.progress(min(f, 1.0), text=msg[-100:]))
        summary = report.summary()
        if notes:
            head, _, rest = summary.partition("\n")
            summary = "\n".join([head, *(f"note: {n}" for n in notes), *([rest] if rest else [])])
        st.session_state["import_outcome"] = ("ok", summary, None)
    except IngestError as exc:
        rows = [{"file": p.path, "line": p.line or None, "problem": p.reason} for p in exc.problems]
        st.session_state["import_outcome"] = ("bad_lines", exc.hint, rows)
        st.session_state["import_retry"] = [str(p) for p in paths]
        st.session_state["import_retry_roots"] = [str(r) for r in roots] if roots else None
        st.session_state["import_retry_notes"] = list(notes)
    except JudgeLensError as exc:
        st.session_state["import_outcome"] = ("error", f"{exc.title}\n\n{exc.message}", None)
    finally:
        bar.empty()


# Lazy tabs: only the open tab's content runs and is sent, so a new browser tab draws the upload form alone.
upload_tab, folder_tab, sources_tab = st.tabs(["Upload files", "Server folder", "Sources"], key="imp_tab",
                                              on_change="rerun")

with upload_tab:
    if upload_tab.open:
        st.write("FastChat-style `.jsonl` files (questions, reference answers, model answers, `*_single` / `*_pair` "
                 "judgments, `judge_prompts.jsonl`), Swallow `results_*.json` and `details_*.parquet`, or a `.zip` "
                 "of a harness folder (it keeps its layout).")
        files = st.file_uploader("Files", type=["jsonl", "json", "parquet", "eval", "zip"], accept_multiple_files=True,
                                 key="import_files")
        bench = st.text_input("Bench name for loose FastChat files", value="ja_mt_bench",
                              help="A zip or folder says its bench itself (<bench>/model_judgment/…). Loose files "
                                   "need one: question ids are only comparable within one bench.")
        skip_upload = st.checkbox("Skip bad lines (import the valid lines and record the rest)", key="skip_upload")
        if st.button("Import uploaded files", type="primary", disabled=not files, icon=":material/upload:"):
            discard_staging()
            # the staged copy lives until the import ends, or (bad lines) until the retry below or a new import;
            # if the session ends first, StagingArea removes it when Streamlit drops the session state
            with StagingArea() as area:
                try:
                    staged = stage_uploads([(f.name, f.getvalue()) for f in files], area.folder,
                                           bench.strip() or "unknown_bench")
                    run_import(staged.paths, skip_upload, roots=[area.root], notes=staged.notes())
                except JudgeLensError as exc:
                    st.session_state["import_outcome"] = ("error", f"{exc.title}\n\n{exc.message}", None)
                if st.session_state.get("import_outcome", ("",))[0] == "bad_lines":
                    area.keep()
                    st.session_state["import_staging"] = area

with folder_tab:
    if folder_tab.open:
        roots = allowed_import_roots()
        st.write("Read files that are already on this server (no size limit). Allowed folders: "
                 + ", ".join(f"`{r}`" for r in roots) + ". Whoever runs JudgeLens can change them with "
                 "`JUDGELENS_IMPORT_ROOTS`.")
        folder = st.text_input("Folder or file on the server", value=str(roots[0]), key="import_folder")
        skip_folder = st.checkbox("Skip bad lines (import the valid lines and record the rest)", key="skip_folder")
        c1, c2 = st.columns(2)
        if c1.button("Import from server", type="primary", icon=":material/folder_open:"):
            discard_staging()
            try:
                run_import([check_import_path(folder)], skip_folder, roots=allowed_import_roots())
            except JudgeLensError as exc:
                st.session_state["import_outcome"] = ("error", f"{exc.title}\n\n{exc.message}", None)
        if c2.button("Load the bundled sample", icon=":material/dataset:", help=str(SAMPLE_DIR)):
            discard_staging()
            report = load_sample(store)
            st.session_state["import_outcome"] = ("ok", report.summary(), None)

outcome = st.session_state.get("import_outcome")
if outcome:
    status, text, rows = outcome
    if status == "ok":
        st.success(text.splitlines()[0], icon=":material/check_circle:")
        st.code(text, language=None, wrap_lines=True)
    elif status == "bad_lines":
        st.error(f"**Import refused: nothing was imported.** {len(rows)} problem(s):", icon=":material/error:")
        st.dataframe(pd.DataFrame(rows), hide_index=True, width="stretch")
        st.caption(text)
        if st.button("Import again, skipping the bad lines", icon=":material/playlist_remove:"):
            retry_roots = st.session_state.get("import_retry_roots")
            run_import([Path(p) for p in st.session_state.get("import_retry", [])], True,
                       roots=[Path(r) for r in retry_roots] if retry_roots else None,
                       notes=st.session_state.get("import_retry_notes", []))
            discard_staging()
            st.rerun()
    else:
        title, _, message = text.partition("\n\n")
        st.error(f"**{title}**", icon=":material/error:")
        st.code(message, language=None, wrap_lines=True)

with sources_tab:
    if sources_tab.open:
        version = data_version(store)
        table = cached_query(queries.sources, version)
        if table.empty:
            st.info("No sources yet: import something above, or load the bundled sample.")
        else:
            readable_dataframe(table.drop(columns=["sha256"]), hide_index=True, width="stretch",
                         column_config={"bytes": st.column_config.NumberColumn(format="%d")})
            st.download_button("Download sources (CSV)", lambda: csv_text(table).encode(), "judgelens_sources.csv",
                               "text/csv", on_click="ignore", icon=":material/download:")  # built on click, not per run
            labels = {int(r.source_id):
                      f"{r.source_id}: {r.file_name} ({r.kind}, {r.bench if pd.notna(r.bench) else '-'})"
                      for r in table.itertuples()}
            with_skips = [sid for sid, n in zip(table["source_id"], table["rows_skipped"]) if n]
            if with_skips:
                sid = st.selectbox("Skipped lines of", with_skips, format_func=lambda s: labels[int(s)])
                st.dataframe(pd.DataFrame(queries.skipped_lines(store, int(sid))), hide_index=True)
            chosen = st.multiselect("Remove sources", list(labels), format_func=labels.get, key="remove_sources")
            confirm = st.checkbox("Yes, remove them and every row imported from them", key="remove_confirm")
            if st.button("Remove", disabled=not (chosen and confirm), icon=":material/delete:"):
                for sid in chosen:
                    remove_source(store, sid)
                st.session_state["import_outcome"] = ("ok", f"Removed {len(chosen)} source(s).", None)
                for key in ("remove_sources", "remove_confirm"):  # the next removal asks again
                    del st.session_state[key]
                st.rerun()
