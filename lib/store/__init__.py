"""The canonical JudgeLens store: one DuckDB file that every page and the CLI read.

Tables (one row per thing, every row tagged with the ``source_id`` of the file it came from):

- ``sources``            one imported file: path, sha256, harness, kind, bench, counts, warnings, skipped lines,
                         the scale and failure code it was read on (its harness rules)
- ``questions``          bench, question_id, category, turns
- ``reference_answers``  the reference a judge saw: bench, judge (file stem), question_id, turn, text
- ``answers``            a model's answer: bench, model, question_id, sample, turn, text
- ``single_judgments``   one judge rating of one answer turn: raw score, 1–10 score, parse status,
                         rationale, rendered judge prompt, judge model, prompt name
- ``pair_judgments``     one pairwise comparison (two games: A/B and swapped)
- ``judge_prompts``      judge prompt templates shipped with a harness (judge_prompts.jsonl)
- ``work_claims``        work one process is doing that no other may start meanwhile (``Store.claim``)
- ``reported_metrics``   numbers a harness reported about itself (Swallow results_*.json, 0–1 scale)

Probes (``lib.probes``): ``probe_runs`` (one probe suite run of a template version against a judge)
and ``probe_results`` (one row per judged probe request).

Cross-harness: ``question_links`` (the same question in two benches: exact, edited, fuzzy or manual) and
``model_aliases`` (one model under several names), see ``lib.analysis.linking`` and ``lib.analysis.aliases``.

Derived: ``item_scores`` (a table kept current by ``refresh_item_scores``: one row per judged item,
duplicates and Swallow samples averaged, parse failures left out); ``judge_questions`` (the question text the
stored judge prompts show, per question turn; from ``judge_prompt_questions``, kept current the same way); views
``question_sets`` (every question file's rows with its set: NULL for the file the harness reads, else the file's
stem), ``file_questions`` (per question the harness's own file, else the named sets in name order; the newest
source within a set), ``current_questions`` (what pages show: the file's question with each turn the judges saw
in its place; ``file_turns`` the file's text) and ``answers_view`` (adds ``text_no_think``).

Identifiers are text: ``question_id`` is stored as VARCHAR so "7" and 7 are the same id and a
fork's string ids survive. Numbers are cast explicitly; nothing is auto-detected.

Concurrency (DuckDB file): DuckDB lets many processes hold a file read-only, or one process hold it read-write.
So no process keeps the file: ``FileGate`` (``lib.store.files``; one per file and process) opens it read-only for reads, read-write
only for a write (``Store.write()``: a lock plus one transaction), and closes it once idle (``IDLE_CLOSE_S``; an idle
read-only connection stays open, with DuckDB's caches, until a writer in another process waits: ``writer_waiting``).
The app and the CLI therefore share the default store: readers read side by side; a writer waits until the
other processes' reads and writes are done (at most ``busy_wait()`` seconds, saying whom it waits for), and
readers wait while another process writes. Inside one process readers join whatever connection is open
(a cursor each), so a write never blocks that process's own readers.

Team store (DuckLake): ``Store("ducklake:sqlite:FILE")`` or ``Store("ducklake:postgres:CONNINFO")`` (chosen
by ``JUDGELENS_STORE``; Parquet data under ``JUDGELENS_DATA_PATH``) opens the same tables in a DuckLake
catalog, so many processes read and write at once with snapshot isolation. DuckLake has no PRIMARY KEY,
UNIQUE, sequences, list defaults or RETURNING, so there (``lake_schema``):
- ids are ``max(id) + 1`` read inside the write transaction (``Store.next_id``);
- every write transaction first bumps the ``write_clock`` row of ``meta``. Two transactions that overlap
  therefore both change that row, and DuckLake refuses to commit the second (a commit conflict, or
  "database is locked" with a SQLite catalog). ``Store.transaction`` re-runs a refused transaction from
  the start on the new snapshot, a bounded number of times; that is how an id is never handed out twice
  and the same file imported twice at once lands once (the re-run finds the first one's source).
- ``write_clock`` also tells readers in other processes that the data changed (``Store.data_clock``).
- Every lake query pays DuckLake's catalog look-ups (table and file statistics: ~5-40 ms of CPU per table read,
  on a SQLite and a PostgreSQL catalog alike), so readers ask it little: ``Store.data_version`` (the app's
  cache key) asks only for the newest snapshot id while nothing changed, and the Item view reads a model's
  item keys at once (``lib.analysis.item_view.model_keys``; the shown item's texts on their own). The lake writes
  row groups of ``LAKE_ROW_GROUP`` rows, which bounds an import's memory (not sorted by item: a sorted insert
  sorts the whole import in memory), and one item's texts decompress a few small Parquet pages.

Modules, each above the next it imports: ``core`` (``Store``: read, write, transaction, next_id, the data clock;
``frame``), ``migrate`` (a file into a new DuckLake store), ``claims`` (work claims), ``schema`` (the DDL, its
DuckLake form, upgrades of older stores), ``scores`` (``item_scores`` and what follows it), ``verdicts`` (the
analyst's verdict rules and the human judges' rows), ``bulk`` (``insert_rows``, the columns every insert derives), ``lake`` (DuckLake targets,
attach, retries), ``files`` (the DuckDB file: checks, the gate, open errors, busy waiting). This package
re-exports what the rest of lib imports.
"""
from lib.store.bulk import derived_names, derived_values, insert_rows
from lib.store.core import Store, frame, in_memory, plain_frame, read_once, row_id_sql, same_row_sql
from lib.store.files import CONNECT_CONFIG, default_db_path
from lib.store.lake import default_data_path, default_store, is_lake, parse_lake
from lib.store.migrate import migrate
from lib.store.schema import lake_schema
from lib.store.scores import refresh_item_scores, refresh_judge_questions, sources_changed
from lib.store.verdicts import (HUMAN_PREFIX, VERDICT_ORDER_TERMS, check_verdict, check_verdict_key,
                                current_verdicts_sql, insert_verdicts, refresh_human_scores, verdict_item_problems)

__all__ = ["check_verdict", "check_verdict_key", "CONNECT_CONFIG", "current_verdicts_sql", "default_data_path",
           "default_db_path", "default_store", "derived_names", "derived_values", "frame", "HUMAN_PREFIX", "in_memory",
           "insert_rows", "insert_verdicts",
           "is_lake", "lake_schema", "migrate", "parse_lake", "plain_frame", "read_once", "refresh_human_scores",
           "refresh_item_scores", "refresh_judge_questions", "row_id_sql", "same_row_sql", "sources_changed", "Store",
           "verdict_item_problems", "VERDICT_ORDER_TERMS"]
