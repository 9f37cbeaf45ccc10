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
So no process keeps the file: ``_FileGate`` (one per file and process) opens it read-only for reads, read-write
only for a write (``Store.write()``: a lock plus one transaction), and closes it once idle (``IDLE_CLOSE_S``).
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
"""
from __future__ import annotations

import atexit
import glob
import numbers
import os
import random
import re
import tempfile
import threading
import time
from contextlib import closing, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, TypeVar

import duckdb

if TYPE_CHECKING:
    import pandas as pd

from lib import harness as H
from lib.errors import DatabaseBusyError, DatabaseFileError, JudgeLensError, UsageError, redact
from lib.vocab import prompt_text_sql, question_seen_sql

T = TypeVar("T")

DEFAULT_DB = Path(__file__).resolve().parent.parent.parent / "data" / "judgelens.duckdb"
SCHEMA_VERSION = "1"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE SEQUENCE IF NOT EXISTS source_ids START 1;
CREATE TABLE IF NOT EXISTS sources (
    source_id     INTEGER PRIMARY KEY DEFAULT nextval('source_ids'),
    sha256        VARCHAR NOT NULL,
    path          VARCHAR NOT NULL,
    file_name     VARCHAR NOT NULL,
    harness       VARCHAR NOT NULL,            -- 'fastchat' | 'swallow'
    kind          VARCHAR NOT NULL,            -- questions | reference_answers | answers | single_judgments
                                               -- | pair_judgments | judge_prompts | swallow_details | swallow_results
    bench         VARCHAR,
    imported_at   TIMESTAMP NOT NULL DEFAULT current_timestamp,
    bytes         BIGINT NOT NULL,
    rows_imported BIGINT NOT NULL,
    rows_skipped  BIGINT NOT NULL DEFAULT 0,
    warnings      VARCHAR[] NOT NULL DEFAULT [],
    skipped_lines JSON,                        -- [{"line": n, "reason": "..."}] when --skip-bad-lines dropped lines
    scale_min     DOUBLE,                      -- the judges' rating scale on this source's bench (lib.harness
    scale_max     DOUBLE,                      -- Harness.scale_for) and the harness's failure code, as imported
    failure_code  DOUBLE,                      -- (NULL: none, e.g. shaberi's null scores)
    UNIQUE (sha256, bench, kind)
);
CREATE TABLE IF NOT EXISTS questions (
    source_id   INTEGER NOT NULL,
    bench       VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    category    VARCHAR,
    turns       VARCHAR[] NOT NULL
);
CREATE TABLE IF NOT EXISTS reference_answers (
    source_id   INTEGER NOT NULL,
    bench       VARCHAR NOT NULL,
    judge       VARCHAR NOT NULL,              -- FastChat: file stem (the judge name that looks it up); Swallow: the run's judge
    model_id    VARCHAR,                       -- what the file says made it (ignored by the harness)
    question_id VARCHAR NOT NULL,
    turn        INTEGER NOT NULL,
    text        VARCHAR
);
CREATE TABLE IF NOT EXISTS answers (
    source_id   INTEGER NOT NULL,
    harness     VARCHAR NOT NULL,
    bench       VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,              -- the name judgments use for it (see lib.ingest.formats.fastchat.answer_model_name)
    model_id    VARCHAR,                       -- model_id written inside the file
    file_model  VARCHAR,                       -- model named by the file name ('__' read as '/')
    question_id VARCHAR NOT NULL,
    sample      INTEGER NOT NULL,              -- FastChat choices[i]; Swallow sample 0-4
    turn        INTEGER NOT NULL,
    text        VARCHAR,
    temperature DOUBLE,
    system_prompt VARCHAR,
    max_chars   INTEGER,                       -- Swallow: the truncation limit the harness applied
    text_norm   VARCHAR                        -- search index: lower(NFKC(text)) when NFKC changes text, else NULL
);
CREATE TABLE IF NOT EXISTS single_judgments (
    source_id    INTEGER NOT NULL,
    harness      VARCHAR NOT NULL,
    bench        VARCHAR NOT NULL,
    judge        VARCHAR NOT NULL,             -- judge model, e.g. 'gpt-4o'
    prompt_name  VARCHAR,                      -- e.g. 'single-math-v1-multi-turn'
    model        VARCHAR NOT NULL,             -- answering model
    question_id  VARCHAR NOT NULL,
    turn         INTEGER NOT NULL,
    sample       INTEGER NOT NULL DEFAULT 0,   -- Swallow judges each of 5 samples; FastChat: 0
    raw_score    DOUBLE,                       -- as the harness stored it (-1 = rating not parsed)
    score        DOUBLE,                       -- on the common 1-10 scale; NULL unless parse_status = 'ok'
    parse_status VARCHAR NOT NULL,             -- ok | not_parsed | api_error | out_of_range
    rationale    VARCHAR,                      -- the judge's full output
    judge_prompt VARCHAR,                      -- the rendered prompt the judge saw (Swallow: JSON messages)
    tstamp       DOUBLE,
    rationale_norm VARCHAR,                    -- search index (lib.search_index): lower(NFKC(rationale)) when NFKC
    prompt_norm    VARCHAR                     -- changes it, else NULL; the same for judge_prompt
);
CREATE TABLE IF NOT EXISTS pair_judgments (
    source_id      INTEGER NOT NULL,
    harness        VARCHAR NOT NULL,
    bench          VARCHAR NOT NULL,
    judge          VARCHAR NOT NULL,
    prompt_name    VARCHAR,
    model_1        VARCHAR NOT NULL,
    model_2        VARCHAR NOT NULL,
    question_id    VARCHAR NOT NULL,
    turn           INTEGER NOT NULL,
    g1_winner      VARCHAR NOT NULL,           -- model_1 | model_2 | tie | error (game 1: model_1 shown as A)
    g2_winner      VARCHAR NOT NULL,           -- same, for game 2 (positions swapped), mapped back
    g1_judgment    VARCHAR,
    g2_judgment    VARCHAR,
    g1_user_prompt VARCHAR,
    g2_user_prompt VARCHAR,
    m1_score       DOUBLE,
    m2_score       DOUBLE,
    tstamp         DOUBLE
);
CREATE TABLE IF NOT EXISTS judge_prompts (
    source_id       INTEGER NOT NULL,
    harness         VARCHAR NOT NULL,
    name            VARCHAR NOT NULL,
    type            VARCHAR,
    system_prompt   VARCHAR,
    prompt_template VARCHAR,
    description     VARCHAR,
    category        VARCHAR,
    output_format   VARCHAR,
    record          JSON NOT NULL
);
CREATE TABLE IF NOT EXISTS reported_metrics (
    source_id INTEGER NOT NULL,
    harness   VARCHAR NOT NULL,
    bench     VARCHAR NOT NULL,
    model     VARCHAR NOT NULL,
    run_id    VARCHAR,                         -- Swallow date id, shared by results and details of one run
    task      VARCHAR NOT NULL,
    metric    VARCHAR NOT NULL,
    value     DOUBLE,
    stderr    DOUBLE
);

-- Re-judging (lib.judging.templates, lib.judging.cache): versioned judge templates and a cache of judge calls.
-- Re-judged verdicts are ordinary single_judgments rows (harness 'judgelens', judge = the run's label)
-- under a source of kind 'rejudge', so every page compares them like any imported judge.
CREATE SEQUENCE IF NOT EXISTS template_ids START 1;
CREATE TABLE IF NOT EXISTS templates (
    template_id INTEGER PRIMARY KEY DEFAULT nextval('template_ids'),
    name        VARCHAR NOT NULL,
    version     INTEGER NOT NULL,
    messages    JSON NOT NULL,                 -- [{"role": "system"|"user"|"assistant", "content": "<Jinja2>"}]
    parser      JSON NOT NULL,                 -- {"kind": "fastchat_single" | ..., "pattern": "...", "scale": [1, 10]}
    preprocess  JSON,                          -- {"strip_think": bool, "strip_chat_tokens": bool, "truncate": N}
    parent_id   INTEGER,
    provenance  VARCHAR,
    builtin     BOOLEAN NOT NULL DEFAULT false,
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp,
    UNIQUE (name, version)
);
CREATE TABLE IF NOT EXISTS judge_cache (
    request_hash      VARCHAR PRIMARY KEY,     -- sha256 of (base URL, model, messages, parameters); never the key
    base_url          VARCHAR NOT NULL,
    model             VARCHAR NOT NULL,
    request           JSON NOT NULL,           -- messages and parameters as sent (no credentials)
    response_text     VARCHAR,
    prompt_tokens     INTEGER,
    completion_tokens INTEGER,
    latency_s         DOUBLE,
    created_at        TIMESTAMP NOT NULL DEFAULT current_timestamp
);
-- Work one writer does while others wait or stand back (``Store.claim``): e.g. ``rejudge:<run sha256>``, a re-judge
-- batch running, so a second batch with that label neither pays for its requests again nor doubles its verdicts.
CREATE TABLE IF NOT EXISTS work_claims (
    claim       VARCHAR NOT NULL,
    token       VARCHAR NOT NULL,              -- host:pid:random of the holder
    host        VARCHAR NOT NULL,
    pid         INTEGER NOT NULL,
    claimed_at  DOUBLE NOT NULL,               -- epoch seconds
    note        VARCHAR
);
CREATE TABLE IF NOT EXISTS rejudgments (       -- what produced each re-judged single_judgments row
    source_id    INTEGER NOT NULL,
    bench        VARCHAR NOT NULL,
    question_id  VARCHAR NOT NULL,
    model        VARCHAR NOT NULL,
    turn         INTEGER NOT NULL,
    sample       INTEGER NOT NULL,
    template_id  INTEGER NOT NULL,
    request_hash VARCHAR NOT NULL,
    judge_model  VARCHAR NOT NULL,
    base_url     VARCHAR NOT NULL
);

-- Regenerated answers (lib.generation.storage): a 'generate' source's answers rows are made by a generation
-- setup; generation_runs says which (one row per source), generations holds one row per answer slot with the
-- request that made it (the key resume and the cache read; copies: request_key NULL, copy_of the sample).
CREATE TABLE IF NOT EXISTS generation_runs (
    source_id    INTEGER NOT NULL,
    label        VARCHAR NOT NULL,             -- the stored model name, e.g. 'M [regen: swallow]'
    endpoint_model VARCHAR NOT NULL,           -- the model name sent to the endpoint
    base_url     VARCHAR NOT NULL,
    setup        JSON NOT NULL                 -- the GenerationSetup (lib.generation.setups), never a key
);
CREATE TABLE IF NOT EXISTS generations (
    source_id    INTEGER NOT NULL,
    bench        VARCHAR NOT NULL,
    question_id  VARCHAR NOT NULL,
    turn         INTEGER NOT NULL,
    sample       INTEGER NOT NULL,
    request_key  VARCHAR,                      -- lib.generation.plan.request_key; NULL for a copy
    copy_of      INTEGER,
    request      JSON,                         -- the body as sent (no credentials)
    text         VARCHAR
);

-- Judge-prompt probes (lib.probes.suite): one row per probe run, one per judged probe request. Probe
-- requests go through judge_cache like re-judging but never become single_judgments rows.
CREATE SEQUENCE IF NOT EXISTS probe_run_ids START 1;
CREATE TABLE IF NOT EXISTS probe_runs (
    run_id      INTEGER PRIMARY KEY DEFAULT nextval('probe_run_ids'),
    template_id INTEGER NOT NULL,              -- the template version probed
    template    VARCHAR NOT NULL,              -- name@vN
    model       VARCHAR NOT NULL,              -- judge model
    base_url    VARCHAR NOT NULL,
    params      JSON NOT NULL,                 -- temperature, max tokens, item choice, repeats (never the key)
    passed      BOOLEAN,                       -- no canary or position-swap probe failed
    summary     JSON NOT NULL,                 -- {"text": plain words, "probes": [one object per probe], counts, cost}
    created_at  TIMESTAMP NOT NULL DEFAULT current_timestamp
);
CREATE TABLE IF NOT EXISTS probe_results (
    run_id       INTEGER NOT NULL,
    probe        VARCHAR NOT NULL,             -- empty_answer, order_swap, position_swap, repeat_noise, real_answer ...
    kind         VARCHAR NOT NULL,             -- canary | ablation | position | noise | baseline
    layout       VARCHAR,                      -- 'original' or the ablation variant the prompt was rendered with
    bench        VARCHAR NOT NULL,
    question_id  VARCHAR NOT NULL,
    turn         INTEGER NOT NULL,
    model        VARCHAR NOT NULL,             -- pairwise: model A
    model_b      VARCHAR,
    sample       INTEGER NOT NULL,
    position     VARCHAR,                      -- pairwise game: AB or BA
    repeat       INTEGER,                      -- repeat noise: 0..n-1
    expected     VARCHAR,                      -- low | high
    score        DOUBLE,                       -- on the template's scale
    score_10     DOUBLE,                       -- on the common 1-10 scale
    verdict      VARCHAR,                      -- pairwise: A | B | tie
    real_score   DOUBLE,                       -- the same item's real answer, same layout
    failed       BOOLEAN,
    status       VARCHAR NOT NULL,             -- pass | fail | error | skipped | info | no_score
    rationale    VARCHAR,                      -- the judge's full output
    request_hash VARCHAR,                      -- judge_cache key
    detail       VARCHAR
);

-- The question the judge saw (issue 22): per judged question turn, the text the stored judge prompts show
-- (lib.vocab.question_seen), kept current by refresh_item_scores. Judge prompts win over question files.
CREATE TABLE IF NOT EXISTS judge_questions (
    bench       VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    turn        INTEGER NOT NULL,
    text        VARCHAR NOT NULL,              -- the text most judge prompts show (ties: the first in text order)
    n_prompts   BIGINT NOT NULL,               -- prompts (one per judgment file, judge and prompt name) showing it
    n_texts     INTEGER NOT NULL               -- distinct texts the judges saw (> 1: not all saw the same question)
);

CREATE TABLE IF NOT EXISTS judge_prompt_questions (   -- what judge_questions counts: per source, the text each
    source_id   INTEGER NOT NULL,                       -- prompt group (judge, prompt name, question turn) shows
    bench       VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    turn        INTEGER NOT NULL,
    text        VARCHAR NOT NULL
);

-- Question files: the harness's own question file (FastChat: question.jsonl) is a bench's question set; any
-- other question file (question_full.jsonl, ...) is kept as a named set of its own (question_set = its stem).
-- file_questions: per question the harness's own file, else the named sets in name order; the newest source
-- of the same set wins. Nothing depends on import order across sets.
CREATE OR REPLACE VIEW question_sets AS
SELECT q.*, {QUESTION_SET} AS question_set FROM questions q LEFT JOIN sources s USING (source_id);
CREATE OR REPLACE VIEW file_questions AS
SELECT * EXCLUDE (rn) FROM (
    SELECT *, row_number() OVER (PARTITION BY bench, question_id
                                 ORDER BY question_set IS NOT NULL, question_set, source_id DESC) AS rn
    FROM question_sets) WHERE rn = 1;
-- What every page shows: the file's question with each turn the judges saw put in its place (file_turns: the
-- file's own text).
CREATE OR REPLACE VIEW current_questions AS
SELECT f.source_id, f.bench, f.question_id, f.category,
       CASE WHEN s.seen IS NULL THEN f.turns
            ELSE list_transform(f.turns, lambda t, i: coalesce(s.seen[i], t)) END AS turns,
       f.question_set, f.turns AS file_turns
FROM file_questions f LEFT JOIN (SELECT bench, question_id, map(list(turn), list(text)) AS seen
                                 FROM judge_questions GROUP BY bench, question_id) s USING (bench, question_id);

CREATE OR REPLACE VIEW answers_view AS
SELECT *, regexp_replace(text, '(?s)<think>.*?(?:</think>|$)\\s*', '', 'g') AS text_no_think,  -- lib.vocab.THINK_SQL
       contains(coalesce(text, ''), '<think>') AS has_think
FROM answers;

-- One row per judged item (harness, bench, judge, model, question, turn): repeated judgments of the
-- same item (FastChat re-runs, Swallow's 5 samples) averaged, parse failures left out of the mean but
-- counted. A table, not a view: every page aggregates it, and at a million judgments a view would redo
-- the per-item grouping on each click. Writers keep it current with refresh_item_scores().
CREATE TABLE IF NOT EXISTS item_scores (
    harness VARCHAR, bench VARCHAR, judge VARCHAR, model VARCHAR, question_id VARCHAR, turn INTEGER,
    category VARCHAR, score DOUBLE, n_rows BIGINT, n_valid BIGINT, score_std DOUBLE, n_failed BIGINT
);

-- Harness vs harness (lib.analysis.linking, lib.analysis.aliases). A question link says two benches ask the
-- same question (bench_a < bench_b alphabetically; each question has at most one link per bench pair).
-- Automatic links are recomputed after every import; 'manual' links and 'removed' marks (a link the user
-- removed: auto-linking leaves both questions alone) are never overwritten.
CREATE TABLE IF NOT EXISTS question_links (
    bench_a       VARCHAR NOT NULL,
    question_id_a VARCHAR NOT NULL,
    bench_b       VARCHAR NOT NULL,
    question_id_b VARCHAR NOT NULL,
    method        VARCHAR NOT NULL,            -- exact | edited | fuzzy | manual | removed
    similarity    DOUBLE,                      -- 0-1: rapidfuzz ratio of both turns after NFKC + whitespace normalisation
    edited_turns  INTEGER[] NOT NULL DEFAULT [],  -- turns whose normalised text differs
    created_at    TIMESTAMP NOT NULL DEFAULT current_timestamp
);
-- One answering model under several names (provider prefixes, '__' for '/', case): name -> canonical.
CREATE TABLE IF NOT EXISTS model_aliases (
    name       VARCHAR PRIMARY KEY,
    canonical  VARCHAR NOT NULL,
    method     VARCHAR NOT NULL,               -- auto | manual | removed (the user undid it: auto leaves it alone)
    created_at TIMESTAMP NOT NULL DEFAULT current_timestamp
);
-- Search (lib.search_index, lib.analysis.search). Answers, rationales and prompts are searched in their own
-- tables (the *_norm columns above hold lower(NFKC(text)) of the texts NFKC changes). Question and reference
-- turns (small tables) are copied here whole, original and lower(NFKC), with their keys and filter columns.
-- Kept current by refresh_item_scores().
CREATE TABLE IF NOT EXISTS search_text (
    source_id    INTEGER NOT NULL,
    field        VARCHAR NOT NULL,             -- question | reference
    harness      VARCHAR, bench VARCHAR, question_id VARCHAR, turn INTEGER,
    judge        VARCHAR,                      -- reference: the judge that looks it up
    text         VARCHAR NOT NULL,             -- the original turn
    norm         VARCHAR NOT NULL              -- lower(NFKC(text))
);
CREATE TABLE IF NOT EXISTS search_sources (source_id INTEGER NOT NULL);  -- sources indexed (at import)

-- What each stored answer is (lib.text_features, the one home of the rules): filled for new answers inside every
-- writer's transaction (refresh_item_scores -> fill_answer_features), for a store made before it at its next open.
CREATE TABLE IF NOT EXISTS answer_features (
    source_id INTEGER NOT NULL, bench VARCHAR NOT NULL, model VARCHAR NOT NULL, model_id VARCHAR, file_model VARCHAR,
    question_id VARCHAR NOT NULL, turn INTEGER NOT NULL, sample INTEGER NOT NULL,
    japanese_share DOUBLE,   -- Japanese / non-whitespace characters of the visible text (<think> removed); NULL: empty
    length INTEGER,          -- characters of the visible text
    has_code BOOLEAN, has_think BOOLEAN, refusal BOOLEAN
);

-- The analyst's verdicts (recorded by lib.judging.human, read from files by lib.ingest.formats.human; the rules:
-- check_verdict, current_verdicts_sql, refresh_human_scores below). Each edit adds a row (history); an author's
-- current verdict on an item takes each field (score, label, note) from the latest row that sets or clears it,
-- and its score enters item_scores as judge 'human:<author>' (harness 'human'). source_id: the imported verdict
-- file, NULL when recorded in this store. uid: sha256 of all fields, so an import adds only verdicts not yet here.
CREATE SEQUENCE IF NOT EXISTS verdict_ids START 1;
CREATE TABLE IF NOT EXISTS human_verdicts (
    verdict_id  INTEGER PRIMARY KEY DEFAULT nextval('verdict_ids'),
    uid         VARCHAR NOT NULL,
    author      VARCHAR NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    bench       VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    turn        INTEGER NOT NULL,
    model       VARCHAR NOT NULL,
    sample      INTEGER,
    score       DOUBLE,                        -- 1-10; NULL: this row leaves the score as it was
    label       VARCHAR,                       -- NULL: leaves the label as it was
    note        VARCHAR,                       -- NULL: leaves the note as it was
    source_id   INTEGER,
    cleared     VARCHAR[]                      -- fields this row empties: score, label, note (NULL: none)
);
-- Pairwise human judgments in the public MT-Bench human-judgment format (one vote per row).
CREATE TABLE IF NOT EXISTS human_pair_votes (
    source_id   INTEGER NOT NULL,
    bench       VARCHAR NOT NULL,
    question_id VARCHAR NOT NULL,
    turn        INTEGER NOT NULL,
    model_a     VARCHAR NOT NULL,
    model_b     VARCHAR NOT NULL,
    winner      VARCHAR NOT NULL,              -- model_a | model_b | tie | tie (bothbad)
    judge       VARCHAR NOT NULL,              -- human:<judge id> (e.g. human:expert_0), or an LLM judge's name
    judge_type  VARCHAR NOT NULL               -- compute_agreement.py's type: human (experts), author, gpt4-pair
);
"""



def _question_set_sql() -> str:
    """The question set of a question file: NULL for the file its harness reads, else the file's stem."""
    own = [h for h in H.all() if h.question_file]
    if not own:
        return "NULL::VARCHAR"
    others = " OR ".join(f"(s.harness = '{h.name}' AND s.file_name <> '{h.question_file}')" for h in own)
    return f"CASE WHEN {others} THEN regexp_replace(s.file_name, '\\.[a-z]+$', '') END"


SCHEMA = SCHEMA.replace("{QUESTION_SET}", _question_set_sql())

# Columns added to a table after stores with that table existed: (table, column, type), added on open.
ADDED_COLUMNS = (("human_verdicts", "cleared", "VARCHAR[]"), ("sources", "scale_min", "DOUBLE"),
                 ("sources", "scale_max", "DOUBLE"), ("sources", "failure_code", "DOUBLE"))

_LOCK_PID = re.compile(r"\(PID (\d+)\)")

ITEM_SCORES_SELECT = """
SELECT j.harness, j.bench, j.judge, j.model, j.question_id, j.turn, q.category,
       avg(j.score) AS score, count(*) AS n_rows, count(j.score) AS n_valid, stddev_samp(j.score) AS score_std,
       count(*) FILTER (j.parse_status <> 'ok') AS n_failed
FROM single_judgments j
LEFT JOIN current_questions q ON q.bench = j.bench AND q.question_id = j.question_id
{where}
GROUP BY ALL
ORDER BY j.bench, j.judge, j.model
"""


def refresh_item_scores(cur, benches=None, *, marked=()) -> None:
    """Recompute item_scores for these benches (None: all), inside the caller's transaction.

    Call after any write to single_judgments or questions (ingest, remove, re-judge). ``marked``: new sources
    whose texts were marked for the search index as they were inserted (``lib.search_index.mark_expression``).
    """
    if benches is None:
        cur.execute("DELETE FROM item_scores")
        cur.execute("INSERT INTO item_scores " + ITEM_SCORES_SELECT.format(where=""))
        _refresh_extras(cur, None, marked)
        return
    benches = sorted({b for b in benches if b is not None})
    if benches:
        cur.execute("DELETE FROM item_scores WHERE list_contains($b, bench)", {"b": benches})
        cur.execute("INSERT INTO item_scores " + ITEM_SCORES_SELECT.format(where="WHERE list_contains($b, j.bench)"),
                    {"b": benches})
    _refresh_extras(cur, benches, marked)


def _refresh_extras(cur, benches, marked=()) -> None:
    """What else follows the data, in the same transaction: the analyst's latest scores as judges human:<author>
    in item_scores (refresh_human_scores, below), the search index (lib.search_index) and the answers' features
    (lib.text_features)."""
    from lib.search_index import index_new_sources
    from lib.text_features import fill_answer_features

    refresh_judge_questions(cur, benches)
    refresh_human_scores(cur, benches)
    index_new_sources(cur, marked=marked)
    fill_answer_features(cur)


def refresh_judge_questions(cur, benches=None) -> None:
    """Bring ``judge_questions`` up to date for these benches (None: all): the question text each stored judge prompt
    shows (``lib.vocab.question_seen``), one prompt per judgment file, judge, prompt name and question turn. The
    texts of each source are cut out once (``judge_prompt_questions``; re-judge sources, which grow, every time);
    the per-question majority is then recomputed from those few rows."""
    cur.execute("DELETE FROM judge_prompt_questions WHERE source_id NOT IN (SELECT source_id FROM sources)"
                " OR source_id IN (SELECT source_id FROM sources WHERE kind = 'rejudge')")
    seen = {n: question_seen_sql("prompt", "turn", n) for n in (1, 2)}
    new = "source_id NOT IN (SELECT DISTINCT source_id FROM judge_prompt_questions)"
    cur.execute(f"""
        INSERT INTO judge_prompt_questions
        WITH p AS (SELECT source_id, bench, question_id, turn, min(judge_prompt) AS prompt FROM single_judgments
                   WHERE judge_prompt IS NOT NULL AND {new}
                   GROUP BY bench, question_id, turn, source_id, judge, prompt_name
                   UNION ALL
                   SELECT source_id, bench, question_id, turn, min(g1_user_prompt) FROM pair_judgments
                   WHERE g1_user_prompt IS NOT NULL AND {new}
                   GROUP BY bench, question_id, turn, source_id, judge, prompt_name),
             t AS (SELECT source_id, bench, question_id, turn, {prompt_text_sql("prompt")} AS prompt FROM p)
        SELECT * FROM (SELECT source_id, bench, question_id, 1 AS turn, {seen[1]} AS text FROM t
                       UNION ALL SELECT source_id, bench, question_id, 2, {seen[2]} FROM t) WHERE text IS NOT NULL""")
    where, params = "", {}
    if benches is not None:
        if not benches:
            return
        where, params = "WHERE list_contains($b, bench)", {"b": list(benches)}
    cur.execute(f"DELETE FROM judge_questions {where}", params)
    cur.execute(f"""
        INSERT INTO judge_questions
        WITH c AS (SELECT bench, question_id, turn, text, count(*) AS n FROM judge_prompt_questions {where}
                   GROUP BY ALL)
        SELECT bench, question_id, turn, first(text ORDER BY n DESC, text), sum(n), count(*)
        FROM c GROUP BY bench, question_id, turn""", params)


# --- the analyst's verdicts (table human_verdicts): what a row may hold, its uid, insert, and the human judge's
# rows in item_scores. The store keeps them because every write refreshes item_scores; recording verdicts is
# lib.judging.human, reading verdict files lib.ingest.formats.human.
HUMAN_PREFIX = "human:"
VERDICT_FIELDS = ("score", "label", "note")


def check_verdict(author: str | None, score, label: str | None, note: str | None,
                  cleared=()) -> tuple[str, float | None, list[str]]:
    """(author, score, cleared) of a verdict row the store may hold, else UsageError: an author (one line), a 1-10
    score or none, the fields it empties (``cleared``: score, label, note; none it also sets), and at least one
    thing to record (a score, a label, a note or a field to empty)."""
    if author is not None and not isinstance(author, str):
        raise UsageError(f"An author name is text; got {_shown(author)}.")
    for name, value in (("label", label), ("note", note)):
        if value is not None and not isinstance(value, str):
            raise UsageError(f"A verdict's {name} is text; got {_shown(value)}.")
    author = (author or "").strip()
    if not author:
        raise UsageError("Set your name first (--author, the sidebar, or [judgelens] author in secrets): "
                         "every verdict records who gave it.", title="Who is judging?")
    if any(c in author for c in "\n\r\t"):
        raise UsageError("An author name is one line of text.")
    if score is not None:
        if isinstance(score, bool) or not isinstance(score, numbers.Real):
            raise UsageError(f"A verdict's score is a number 1-10; got {_shown(score)}.")
        score = float(score)
        if not 1 <= score <= 10:
            raise UsageError(f"A verdict's score is 1-10; got {score:g}.")
    if isinstance(cleared, str) or not isinstance(cleared or (), (list, tuple, set, frozenset)) \
            or not set(cleared or ()) <= set(VERDICT_FIELDS):
        raise UsageError(f"A verdict clears a list of its fields ({', '.join(VERDICT_FIELDS)}); got {cleared!r}.")
    cleared = [f for f in VERDICT_FIELDS if f in set(cleared or ())]
    given = {"score": score is not None, "label": bool((label or "").strip()), "note": bool((note or "").strip())}
    if both := [f for f in cleared if given[f]]:
        raise UsageError(f"A verdict cannot both set and clear its {' and '.join(both)}.")
    if not any(given.values()) and not cleared:
        raise UsageError("A verdict needs a score, a label or a note (or a field to clear).")
    return author, score, cleared


VERDICT_TURNS = (1, 2)  # MT-Bench questions have two turns (a bench's own questions may have fewer)
VERDICT_SAMPLES = 5  # Swallow judges each item 5 times (samples 0-4); FastChat once (sample 0)


def _shown(value) -> str:
    """A value as the file has it (JSON), for messages: [16], 16.0, null, true, "x"."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False)[:80]
    except (TypeError, ValueError):
        return repr(value)[:80]


def _verdict_id(value, name: str) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int)) or not str(value).strip():
        raise UsageError(f"A verdict's {name} is a non-empty string or an integer; got {_shown(value)}.")
    return str(value).strip()


def check_verdict_key(bench, question_id, turn, model, sample) -> tuple[str, str, int, str, int]:
    """(bench, question_id, turn, model, sample) of the item a verdict is on, else UsageError: ids are strings or
    integers (never a list, a float or null turned into text), ``turn`` an integer in VERDICT_TURNS, ``sample`` an
    integer 0-4 (absent: 0). The store's own limits (the question's turns, the item's samples, items it does not
    hold) are ``verdict_item_problems``."""
    bench, question_id, model = (_verdict_id(bench, "bench"), _verdict_id(question_id, "question_id"),
                                 _verdict_id(model, "model"))
    if isinstance(turn, bool) or not isinstance(turn, int) or turn not in VERDICT_TURNS:
        raise UsageError(f"A verdict's turn is 1 or 2; got {_shown(turn)}.")
    sample = 0 if sample is None else sample
    if isinstance(sample, bool) or not isinstance(sample, int) or not 0 <= sample < VERDICT_SAMPLES:
        raise UsageError(f"A verdict's sample is 0-{VERDICT_SAMPLES - 1} (Swallow's samples; FastChat has sample 0 "
                         f"only); got {_shown(sample)}.")
    return bench, question_id, int(turn), model, int(sample)


def verdict_item_problems(cur, rows: list[dict]) -> tuple[dict[int, str], dict[int, str]]:
    """What the store says about the items of verdict ``rows`` (dicts with bench, question_id, turn, model, sample):
    ``(refused, unknown)``, each row index -> why. Refused: a turn the stored question does not have, a sample the
    stored item does not have (a FastChat item has sample 0 only). Unknown: a bench, question or model the store
    does not hold (the verdict is kept; the import names it in a note)."""
    if not rows:
        return {}, {}
    import pyarrow as pa

    keys = pa.table({"i": list(range(len(rows))), "bench": [r["bench"] for r in rows],
                     "question_id": [str(r["question_id"]) for r in rows], "model": [r["model"] for r in rows]})
    cur.register("_verdict_keys", keys)
    try:
        found = cur.execute("""
            SELECT k.i,
                   EXISTS (SELECT 1 FROM current_questions q WHERE q.bench = k.bench) OR
                   EXISTS (SELECT 1 FROM single_judgments j WHERE j.bench = k.bench) AS bench_known,
                   (SELECT max(len(q.turns)) FROM current_questions q
                    WHERE q.bench = k.bench AND q.question_id = k.question_id) AS turns,
                   EXISTS (SELECT 1 FROM single_judgments j WHERE j.bench = k.bench
                           AND j.question_id = k.question_id) AS judged,
                   (SELECT max(s) FROM (SELECT sample AS s FROM answers a WHERE a.bench = k.bench
                                          AND a.question_id = k.question_id AND a.model = k.model
                                        UNION ALL SELECT sample FROM single_judgments j WHERE j.bench = k.bench
                                          AND j.question_id = k.question_id AND j.model = k.model)) AS top_sample
            FROM _verdict_keys k""").fetchall()
    finally:
        cur.unregister("_verdict_keys")
    refused, unknown = {}, {}
    for i, bench_known, turns, judged, top in found:
        r = rows[i]
        where = f"bench {r['bench']} question {r['question_id']}"
        if not bench_known:
            unknown[i] = f"no bench {r['bench']!r} in this store"
        elif turns is None and not judged:
            unknown[i] = f"no question {r['question_id']} in bench {r['bench']}"
        elif top is None:
            unknown[i] = f"no answer or judgment of model {r['model']!r} on {where}"
        if turns is not None and r["turn"] > turns:
            refused[i] = f"turn {r['turn']}: {where} has {turns} turn(s)"
        elif top is not None and int(r.get("sample") or 0) > top:
            refused[i] = (f"sample {r.get('sample')}: the store holds " + ("sample 0 only" if top == 0 else
                          f"samples 0-{top}") + f" of {where} model {r['model']}")
    return refused, unknown


def verdict_uid(author, created_at, bench, question_id, turn, model, sample, score, label, note, cleared=()) -> str:
    """sha256 of all of a verdict's fields: the same verdict imported twice is one row. (``cleared`` joins the
    hashed fields only when it is not empty, so rows without it keep the uid they had before it existed.)"""
    import hashlib
    import json

    parts = [author, created_at.isoformat(timespec="microseconds"), bench, str(question_id), int(turn), model,
             None if sample is None else int(sample), None if score is None else float(score), label or None,
             note or None]
    if cleared:
        parts.append(list(cleared))
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


def insert_rows(cur, table: str, rows: list[dict], *, replace_key: str | None = None) -> None:
    """Bulk insert ``rows`` (dicts named by column) into ``table`` inside the caller's transaction, through an
    Arrow table (row-by-row executemany is ~100x slower in DuckDB). With ``replace_key`` (the table's primary
    key column) a row replaces the stored row with the same key."""
    if not rows:
        return
    import pyarrow as pa

    data = pa.Table.from_pylist(rows)
    name = f"_jl_{table}_{threading.get_ident()}"
    cur.register(name, data)
    try:
        verb = "INSERT"
        if replace_key is not None:
            if _has_primary_key(cur, table):
                verb = "INSERT OR REPLACE"
            else:  # DuckLake: no primary keys, no INSERT OR REPLACE
                cur.execute(f"DELETE FROM {table} WHERE {replace_key} IN (SELECT {replace_key} FROM {name})")
        cur.execute(f"{verb} INTO {table} BY NAME SELECT * FROM {name}")
    finally:
        cur.unregister(name)


def _has_primary_key(cur, table: str) -> bool:
    return bool(cur.execute("SELECT count(*) FROM duckdb_constraints() WHERE table_name = ? AND "
                            "database_name = current_database() AND constraint_type = 'PRIMARY KEY'",
                            [table]).fetchone()[0])


def insert_verdicts(cur, rows: list[dict], source_id: int | None) -> int:
    """Insert the verdict rows the store does not hold yet (same fields = same verdict), inside the caller's
    transaction. Returns how many were new. Call refresh_human_scores afterwards."""
    if not rows:
        return 0
    import pyarrow as pa

    table = pa.table({
        "uid": [verdict_uid(r["author"], r["created_at"], r["bench"], r["question_id"], r["turn"], r["model"],
                            r["sample"], r["score"], r["label"], r["note"], r.get("cleared")) for r in rows],
        "author": [r["author"] for r in rows],
        "created_at": pa.array([r["created_at"] for r in rows], pa.timestamp("us")),
        "bench": [r["bench"] for r in rows], "question_id": [str(r["question_id"]) for r in rows],
        "turn": pa.array([int(r["turn"]) for r in rows], pa.int32()), "model": [r["model"] for r in rows],
        "sample": pa.array([None if r["sample"] is None else int(r["sample"]) for r in rows], pa.int32()),
        "score": pa.array([r["score"] for r in rows], pa.float64()),
        "label": pa.array([r["label"] for r in rows], pa.string()),
        "note": pa.array([r["note"] for r in rows], pa.string()),
        "cleared": pa.array([list(r.get("cleared") or []) or None for r in rows], pa.list_(pa.string()))})
    cur.register("_verdicts_in", table)
    try:
        return cur.execute("""
            INSERT INTO human_verdicts (uid, author, created_at, bench, question_id, turn, model, sample, score,
                                        label, note, cleared, source_id)
            SELECT DISTINCT ON (uid) *, $sid FROM _verdicts_in v
            WHERE v.uid NOT IN (SELECT uid FROM human_verdicts)""", {"sid": source_id}).fetchone()[0]
    finally:
        cur.unregister("_verdicts_in")


# the order of verdict rows: by time, then by uid (not verdict_id, which differs between stores holding the same
# rows; a lake has none): every store that holds the same rows finds the same current verdicts
VERDICT_ORDER_TERMS = ("created_at", "uid")


def current_verdicts_sql(where: str = "") -> str:
    """SQL of every author's CURRENT verdict per item (bench, question_id, turn, model, sample; a NULL sample is
    0), over the human_verdicts rows ``where`` selects. THE RULE: each field (score, label, note) is the value of
    the latest row that sets it or clears it (``cleared``); a row that leaves a field empty keeps the earlier
    value. So recording a label after a score keeps the score, and only an explicit clear removes it.
    Columns: author, bench, question_id, turn, model, sample, score, label, note, created_at (of the latest row),
    verdict_id (of the latest row), edits (rows)."""
    field = "arg_max_null({f}, _k) FILTER (WHERE {f} IS NOT NULL OR list_contains(cleared, '{f}')) AS {f}"
    return f"""
        SELECT author, bench, question_id, turn, model, coalesce(sample, 0) AS sample,
               {', '.join(field.format(f=f) for f in VERDICT_FIELDS)},
               max(created_at) AS created_at, arg_max(verdict_id, _k) AS verdict_id, count(*) AS edits
        FROM (SELECT *, ({', '.join(VERDICT_ORDER_TERMS)}) AS _k FROM human_verdicts {where})
        GROUP BY author, bench, question_id, turn, model, coalesce(sample, 0)"""


def refresh_human_scores(cur, benches=None) -> None:
    """Put every author's current score per item (current_verdicts_sql) into item_scores as judge human:<author>
    (harness 'human'), for these benches (None: all), inside the caller's transaction. Swallow samples: the
    current score per sample, averaged per item like the LLM judges' samples; an item none of whose samples has a
    score (a label or note alone) has no human score."""
    if not cur.execute("SELECT 1 FROM information_schema.tables WHERE table_name = 'human_verdicts'").fetchone():
        return
    gone = "source_id IS NOT NULL AND source_id NOT IN (SELECT source_id FROM sources)"  # a removed verdict file's
    removed = {r[0] for r in cur.execute(f"SELECT DISTINCT bench FROM human_verdicts WHERE {gone}").fetchall()}
    if removed:  # (no DELETE … RETURNING: a DuckLake store does not have it)
        cur.execute(f"DELETE FROM human_verdicts WHERE {gone}")
    cur.execute("DELETE FROM human_pair_votes WHERE source_id NOT IN (SELECT source_id FROM sources)")
    where, params = "", {}
    if benches is not None:
        benches = sorted({b for b in benches if b is not None} | removed)
        if not benches:
            return
        where, params = "WHERE list_contains($b, bench)", {"b": benches}
    cur.execute(f"DELETE FROM item_scores WHERE harness = '{H.HUMAN.name}' {'AND list_contains($b, bench)' if where else ''}",
                params)
    cur.execute(f"""
        INSERT INTO item_scores
        WITH cur AS ({current_verdicts_sql(where)})
        SELECT '{H.HUMAN.name}', c.bench, '{HUMAN_PREFIX}' || c.author, c.model, c.question_id, c.turn, q.category,
               avg(c.score), count(*), count(c.score), stddev_samp(c.score), 0
        FROM cur c LEFT JOIN current_questions q ON q.bench = c.bench AND q.question_id = c.question_id
        GROUP BY c.bench, c.author, c.model, c.question_id, c.turn, q.category
        HAVING count(c.score) > 0""", params)

LAKE_PREFIX = "ducklake:"
LAKE_ALIAS = "lake"
LAKE_CATALOGS = ("sqlite", "postgres")
COMMIT_ATTEMPTS = 8  # a DuckLake transaction refused at commit is re-run this many times in all
# ids DuckLake cannot hand out by itself (no sequences): table -> (id column, the embedded store's sequence)
ID_COLUMNS = {"sources": ("source_id", "source_ids"), "templates": ("template_id", "template_ids"),
              "probe_runs": ("run_id", "probe_run_ids")}


def lake_schema(schema: str = SCHEMA) -> str:
    """``SCHEMA`` without what DuckLake lacks: sequences, PRIMARY KEY / UNIQUE constraints, list defaults.
    Uniqueness is kept by the writers (``Store.transaction``, ``Store.next_id``)."""
    out = re.sub(r"(?m)^CREATE (?:SEQUENCE|(?:UNIQUE )?INDEX)[^;]*;[ \t]*\n", "", schema)
    out = re.sub(r" DEFAULT nextval\('[a-z_]+'\)", "", out)
    out = re.sub(r",([ \t]*--[^\n]*)?\s*(?:UNIQUE|PRIMARY KEY) ?\([^)]*\)", r"\1", out)  # table constraints
    out = re.sub(r" (?:PRIMARY KEY|UNIQUE)\b", "", out)                                    # column constraints
    out = re.sub(r"( NOT NULL)? DEFAULT \[\]", "", out)  # no list defaults: NULL where a writer gives none
    return out


def is_lake(target) -> bool:
    return isinstance(target, str) and target.startswith(LAKE_PREFIX)


def default_store() -> str | Path:
    """What the app and CLI open unless told otherwise: ``JUDGELENS_STORE`` (a DuckLake store) if set,
    else the single DuckDB file (``default_db_path``)."""
    return os.environ.get("JUDGELENS_STORE") or default_db_path()


def default_data_path() -> str | None:
    return os.environ.get("JUDGELENS_DATA_PATH") or None


def parse_lake(target: str) -> tuple[str, str]:
    """``ducklake:sqlite:FILE`` -> ("sqlite", FILE); ``ducklake:postgres:CONNINFO`` -> ("postgres", CONNINFO)."""
    rest = target[len(LAKE_PREFIX):]
    catalog, _, where = rest.partition(":")
    if catalog not in LAKE_CATALOGS or not where.strip():
        raise UsageError(f"Unknown store {target!r}. A team store is ducklake:sqlite:FILE (many processes on one "
                         "machine) or ducklake:postgres:CONNINFO (e.g. ducklake:postgres:dbname=judgelens "
                         "host=db.internal); leave JUDGELENS_STORE unset for the single DuckDB file.",
                         title="Unknown store")
    return catalog, where


_PG_UNREACHABLE = re.compile(r'Unable to connect to Postgres at "(?:[^"\\]|\\.)*": ', re.S)


def lake_open_reason(exc: BaseException) -> str:
    """Why attaching a DuckLake store failed, without the conninfo DuckDB repeats (twice, password included):
    libpq's own words (``password authentication failed``, ``Connection refused``, ``database "x" does not
    exist``) where there are some; redacted in any case."""
    text = str(exc)
    found = _PG_UNREACHABLE.search(text)
    if found:
        text = text[found.end():]
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    text = " ".join(line if line[-1] in ".?!" else line + "." for line in lines)
    return redact(text).rstrip(".")


def _sql_text(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _extension_file(name: str) -> str:
    """The extension shipped in the ``duckdb-extension-NAME`` wheel (requirements.txt): loaded from the
    installed package, never downloaded."""
    import importlib.util

    spec = importlib.util.find_spec(f"duckdb_extension_{name}")
    found = []
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found += glob.glob(os.path.join(folder, "extensions", f"v{duckdb.__version__}", f"{name}.duckdb_extension"))
        found += glob.glob(os.path.join(folder, "**", f"{name}.duckdb_extension"), recursive=True)
    if not found:
        raise UsageError(f"The DuckDB extension {name!r} is not installed. Install the packages in requirements.txt "
                         f"(duckdb-extension-{name}=={duckdb.__version__}).", title="DuckLake is not installed")
    return found[0]


def _retryable(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, duckdb.Error) and ("conflict" in text or "database is locked" in text
                                              or "could not serialize" in text)


def default_db_path() -> Path:
    """The store the app and CLI use unless told otherwise (``JUDGELENS_DB`` overrides)."""
    return Path(os.environ.get("JUDGELENS_DB") or DEFAULT_DB)


# Every connection: DuckDB never installs or loads an extension by itself (opening a SQLite file, or a query
# naming an unknown function, would otherwise fetch one from the internet). The app reaches no network but
# the judge endpoint.
CONNECT_CONFIG = {"autoinstall_known_extensions": False, "autoload_known_extensions": False}


def _connect(path: Path, read_only: bool) -> duckdb.DuckDBPyConnection:
    """Connect with CONNECT_CONFIG. DuckDB lets one process hold a file only under one configuration: if this
    process already holds it read-write (a read-only open) or with DuckDB's defaults, join that instead (a
    read-only Store then runs no DDL all the same). Every connection ends with extension loading off."""
    attempts = [{"read_only": read_only, "config": dict(CONNECT_CONFIG)}]
    if read_only:
        attempts.append({"read_only": False, "config": dict(CONNECT_CONFIG)})
    attempts.append({"read_only": False})
    for n, kwargs in enumerate(attempts, 1):
        try:
            con = duckdb.connect(str(path), **kwargs)
        except duckdb.ConnectionException as exc:
            if "different configuration" in str(exc) and n < len(attempts):
                continue
            raise
        for name in CONNECT_CONFIG:
            con.execute(f"SET {name} = false")
        return con
    raise AssertionError("unreachable")


IDLE_CLOSE_S = 0.5  # an idle connection is closed after this long, so other processes can write the file
_LOCKED = re.compile(r"Could not set lock|Conflicting lock", re.I)


def busy_wait() -> float:
    """How long a read or write waits while another process uses the DuckDB file (``JUDGELENS_BUSY_WAIT``
    seconds, default 300)."""
    try:
        return max(0.0, float(os.environ.get("JUDGELENS_BUSY_WAIT", "300")))
    except ValueError:
        return 300.0


class _FileGate:
    """This process's use of one DuckDB file: at most one connection, read-only unless a write needs it
    read-write, closed when nothing has used it for IDLE_CLOSE_S. Readers of this process share the open
    connection (a cursor each); a writer waits until this process's readers of a read-only connection are done
    (new readers wait behind it), reopens read-write and keeps it for the transaction. Opening waits, retrying,
    while another process holds a lock that conflicts (``wait`` seconds at most), and tells ``notify`` once."""

    _gates: dict[str, "_FileGate"] = {}
    _gates_lock = threading.Lock()

    @classmethod
    def of(cls, path: Path) -> "_FileGate":
        key = os.path.realpath(path)
        with cls._gates_lock:
            gate = cls._gates.get(key)
            if gate is None:
                gate = cls._gates[key] = cls(path)
            gate.stores += 1
            return gate

    def __init__(self, path: Path):
        self.path = path
        self.cond = threading.Condition()
        self.con: duckdb.DuckDBPyConnection | None = None
        self.writable = False
        self.users = 0          # cursors handed out and not yet returned
        self.writers_waiting = 0
        self.writing = False
        self.stores = 0         # Store objects using this gate
        self.last_used = 0.0
        self.timer_pending = False
        self.local = threading.local()

    def _depth(self) -> int:
        return getattr(self.local, "depth", 0)

    def _open(self, writable: bool, notify, wait: float | None) -> duckdb.DuckDBPyConnection:
        wait = busy_wait() if wait is None else wait
        deadline = time.monotonic() + wait
        delay, told = 0.02, False
        while True:
            try:
                return _connect(self.path, not writable)
            except duckdb.Error as exc:
                text = str(exc)
                if not _LOCKED.search(text):
                    raise open_error(self.path, exc) from exc
                if time.monotonic() >= deadline:
                    raise busy_error(self.path, exc, waited=wait) from exc
                if notify is not None and not told:
                    pid = _LOCK_PID.search(text)
                    who = f"process {pid.group(1)}" if pid else "another process"
                    what = "write to" if writable else "read"
                    notify(f"Waiting for {who} (a JudgeLens app or CLI) to finish with {self.path} before this "
                           f"command can {what} it; at most {wait:.0f} s (JUDGELENS_BUSY_WAIT)…")
                    told = True
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

    def acquire(self, writable: bool, notify=None, wait: float | None = None) -> duckdb.DuckDBPyConnection:
        with self.cond:
            depth = self._depth()
            if writable:
                if depth and not (self.con is not None and self.writable):
                    raise RuntimeError(f"A write to {self.path} started while this thread reads it read-only; "
                                       "finish the read first.")
                self.writers_waiting += 1
                try:
                    while self.writing or (self.users and not self.writable):
                        self.cond.wait()
                finally:
                    self.writers_waiting -= 1
                self.writing = True
                try:
                    if self.con is not None and not self.writable:
                        self._close()
                    if self.con is None:
                        self.con, self.writable = self._open(True, notify, wait), True
                except BaseException:
                    self.writing = False
                    self.cond.notify_all()
                    raise
            else:
                while depth == 0 and self.writers_waiting and not (self.con is not None and self.writable):
                    self.cond.wait()
                if self.con is None:
                    self.con, self.writable = self._open(False, notify, wait), False
            self.users += 1
            self.local.depth = depth + 1
            try:
                return self.con.cursor()
            except BaseException:
                self._release(writable)
                raise

    def release(self, writable: bool) -> None:
        with self.cond:
            self._release(writable)

    def _release(self, writable: bool) -> None:
        self.users -= 1
        self.local.depth = self._depth() - 1
        if writable:
            self.writing = False
        self.cond.notify_all()
        self.last_used = time.monotonic()
        if self.users == 0 and not self.writers_waiting and self.con is not None and not self.timer_pending:
            self._start_timer(IDLE_CLOSE_S)

    def _start_timer(self, seconds: float) -> None:
        self.timer_pending = True
        timer = threading.Timer(seconds, self._close_if_idle)
        timer.daemon = True
        timer.start()

    def _close_if_idle(self) -> None:
        with self.cond:
            self.timer_pending = False
            if self.con is None or self.users or self.writing:
                return
            idle = time.monotonic() - self.last_used
            if idle < IDLE_CLOSE_S:
                self._start_timer(IDLE_CLOSE_S - idle)
            else:
                self._close()

    def _close(self) -> None:
        if self.con is not None:
            con, self.con = self.con, None
            con.close()  # a read-write connection checkpoints its WAL into the file here

    @classmethod
    def close_all(cls) -> None:
        """At exit: close every idle connection, so a read-write one checkpoints its WAL into the file (the file
        alone then holds everything; a copy of it is complete)."""
        with cls._gates_lock:
            gates = list(cls._gates.values())
        for gate in gates:
            with gate.cond:
                if gate.users == 0:
                    gate._close()

    def close_store(self) -> None:
        with _FileGate._gates_lock:
            self.stores -= 1
            if self.stores > 0:
                return
            _FileGate._gates.pop(os.path.realpath(self.path), None)
        with self.cond:
            if self.users == 0:
                self._close()


atexit.register(_FileGate.close_all)


class Store:
    """One open store: a DuckDB file (default) or a DuckLake store (``ducklake:sqlite:FILE`` /
    ``ducklake:postgres:CONNINFO``, Parquet data under ``data_path``). Thread-safe: readers use ``read()``
    / ``cursor()``, writers use ``write()`` (or ``transaction()``, which re-runs a DuckLake transaction
    refused at commit).

    ``read_only=True`` (the CLI's reading commands) opens a DuckDB file read-only and runs no DDL, so a store in
    a read-only folder can still be read; the file must already hold a JudgeLens store. (A DuckLake store is
    opened the same way for reading and writing: readers never block writers there.)
    """

    def __init__(self, path: str | os.PathLike | None = None, read_only: bool = False, *,
                 data_path: str | os.PathLike | None = None, notify: Callable[[str], None] | None = None):
        target = path if path is not None else default_store()
        self.lake = is_lake(target)
        self.read_only = read_only
        self.notify = notify
        self._gate: _FileGate | None = None
        self._write_lock = threading.Lock()
        if self.lake:
            self._open_lake(str(target), data_path if data_path is not None else default_data_path())
            return
        self.data_path = None
        self.path = Path(target)
        self.shown = str(self.path)
        check_database_file(self.path, read_only)
        if not read_only:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise DatabaseFileError(f"Cannot create the folder {self.path.parent} for the database: "
                                        f"{exc.strerror}. Use --db (or JUDGELENS_DB) with a writable location.") from None
        self._gate = _FileGate.of(self.path)
        try:
            if read_only:
                self._check_schema()
                self._upgrade_for_reading()
            else:
                self._create_schema()
        except BaseException:
            self._gate.close_store()
            raise

    def _check_schema(self) -> None:
        try:
            with self.read() as cur:
                found = cur.execute("SELECT count(*) FROM information_schema.tables WHERE table_name IN "
                                    "('meta', 'sources', 'single_judgments')").fetchone()[0]
        except duckdb.Error as exc:
            raise open_error(self.path, exc) from exc
        if found < 3:
            raise DatabaseFileError(
                f"{self.path} is a DuckDB file but not a JudgeLens store (it has no sources table). Import into "
                f"it first (python -m lib.cli ingest PATH --db {self.path}), or point --db at a JudgeLens "
                "database.", title="Not a JudgeLens database")

    def _missing_columns(self) -> list[tuple[str, str, str]]:
        with self.read() as cur:
            have = set(cur.execute("SELECT table_name, column_name FROM information_schema.columns").fetchall())
        tables = {t for t, _ in have}
        return [(t, c, kind) for t, c, kind in ADDED_COLUMNS if t in tables and (t, c) not in have]

    def _upgrade_for_reading(self) -> None:
        """A store made before a column in ADDED_COLUMNS existed, opened read-only (the CLI's reading commands):
        add the columns once through a short read-write connection, then read as asked, so readers never meet an
        older schema. Where the file cannot be written now (a read-only folder, another process using it), it is
        read as it is; only what needs the new columns fails there."""
        if not self._missing_columns():
            return
        try:
            cur = self._gate.acquire(True, wait=0)
        except (JudgeLensError, duckdb.Error, OSError):
            return
        try:
            for table, column, sql_type in ADDED_COLUMNS:
                cur.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {sql_type}")
        except duckdb.Error:
            pass
        finally:
            cur.close()
            self._gate.release(True)

    def _create_schema(self) -> None:
        with self._write_lock:
            try:
                cur = self._gate.acquire(True, self.notify)
            except duckdb.Error as exc:
                raise open_error(self.path, exc) from exc
            try:
                kind = cur.execute(
                    "SELECT table_type FROM information_schema.tables WHERE table_name = 'item_scores'").fetchone()
                if kind and kind[0] == "VIEW":  # stores made before item_scores became a table
                    cur.execute("DROP VIEW item_scores")
                cur.execute(SCHEMA)
                for table, column, sql_type in ADDED_COLUMNS:  # stores made before the column existed
                    cur.execute(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS {column} {sql_type}")
                if upgrade_search_index(cur):
                    cur.execute(SCHEMA)  # views over altered tables (answers_view) bound again
                if kind and kind[0] == "VIEW":
                    refresh_item_scores(cur)
                upgrade_answer_features(cur)
                cur.execute("INSERT INTO meta VALUES ('schema_version', ?) ON CONFLICT DO NOTHING", [SCHEMA_VERSION])
            except duckdb.Error as exc:
                raise open_error(self.path, exc) from exc
            finally:
                cur.close()
                self._gate.release(True)

    # -- DuckLake
    def _open_lake(self, target: str, data_path) -> None:
        catalog, where = parse_lake(target)
        self.path = target  # what identifies the store (cache keys); no file of its own
        self.shown = redact(target)  # what messages and ``store info`` show: no password
        self.catalog, self.catalog_location = catalog, where
        config = dict(CONNECT_CONFIG)  # extensions only from the installed wheels, loaded below
        if not os.environ.get("HOME") and not Path("~").expanduser().is_dir():
            config["extension_directory"] = os.path.join(tempfile.gettempdir(), "judgelens-duckdb-extensions")
        con = duckdb.connect(config=config)
        try:
            for name in ("ducklake", catalog):
                con.execute(f"INSTALL {_sql_text(_extension_file(name))}")
                con.execute(f"LOAD {name}")
            options = []
            if catalog == "sqlite":
                file = Path(where).expanduser()
                file.parent.mkdir(parents=True, exist_ok=True)
                where = str(file)
                # WAL lets readers work during a commit; the busy timeout makes a writer wait for the lock
                options += ["META_JOURNAL_MODE 'WAL'", "META_BUSY_TIMEOUT 5000"]
                if data_path is None and not file.exists():  # a new store: its Parquet files next to it
                    data_path = str(file) + ".files"
            if data_path is not None:
                data_path = str(data_path)
                if "://" not in data_path:
                    Path(data_path).expanduser().mkdir(parents=True, exist_ok=True)
                    data_path = str(Path(data_path).expanduser().resolve())
                options.append(f"DATA_PATH {_sql_text(data_path.rstrip('/') + '/')}")
            attach = f"ATTACH {_sql_text(LAKE_PREFIX + catalog + ':' + where)} AS {LAKE_ALIAS}"
            if options:
                attach += f" ({', '.join(options)})"
            self._attempt(lambda: con.execute(attach))
        except duckdb.Error as exc:
            con.close()
            hint = ("" if data_path is not None or catalog != "postgres" else
                    " A new PostgreSQL-backed store needs a data folder: set JUDGELENS_DATA_PATH (or --data-path).")
            reason = lake_open_reason(exc)
            end = "" if reason.endswith("?") else "."
            raise DatabaseBusyError(f"Could not open the DuckLake store {self.shown}: {reason}{end}{hint}",
                                    title="Could not open the store") from exc
        except BaseException:
            con.close()
            raise
        con.execute(f"USE {LAKE_ALIAS}")
        self._con = con
        self.data_path = self._lake_data_path()

        def create(cur):
            have = {r[0] for r in cur.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = ?", [LAKE_ALIAS]).fetchall()}
            if "meta" in have and "item_scores" in have and "answers_view" in have and _schema_tables() <= have:
                columns = set(cur.execute("SELECT table_name, column_name FROM information_schema.columns "
                                          "WHERE table_catalog = ?", [LAKE_ALIAS]).fetchall())
                missing = [a for a in ADDED_COLUMNS if a[:2] not in columns]
                for table, column, sql_type in missing:  # lakes made before the column existed
                    cur.execute(f"ALTER TABLE {table} ADD COLUMN {column} {sql_type}")
                if search_index_current(cur):
                    return  # DDL only when something is missing: every DDL is a commit other processes conflict with
            cur.execute(lake_schema())
            if upgrade_search_index(cur):
                cur.execute(lake_schema())
            upgrade_answer_features(cur)
            for key, value in (("schema_version", SCHEMA_VERSION), ("write_clock", "0")):
                if not cur.execute("SELECT 1 FROM meta WHERE key = ?", [key]).fetchone():
                    cur.execute("INSERT INTO meta VALUES (?, ?)", [key, value])

        self.transaction(create, clock=False)

    def _lake_data_path(self) -> str | None:
        try:
            row = self._con.execute(
                f"SELECT value FROM __ducklake_metadata_{LAKE_ALIAS}.ducklake_metadata WHERE key = 'data_path'"
            ).fetchone()
            return row[0] if row else None
        except duckdb.Error:
            return None

    def _attempt(self, fn: Callable[[], T]) -> T:
        """Run ``fn``, again after a short wait while DuckLake says another process got there first."""
        for attempt in range(1, COMMIT_ATTEMPTS + 1):
            try:
                return fn()
            except duckdb.Error as exc:
                if not _retryable(exc) or attempt == COMMIT_ATTEMPTS:
                    raise
            time.sleep(min(0.05 * 2 ** attempt, 2.0) * random.uniform(0.5, 1.5))
        raise AssertionError("unreachable")

    def transaction(self, fn: Callable[[duckdb.DuckDBPyConnection], T], memory_limit: str | None = None,
                    clock: bool = True) -> T:
        """``fn(cur)`` inside ``write()``; on a DuckLake store a transaction that another process's commit
        made stale is rolled back and ``fn`` runs again on the new snapshot (at most COMMIT_ATTEMPTS times).
        ``fn`` must therefore read what it decides on through ``cur`` and may run more than once."""
        if not self.lake:
            with self.write(memory_limit) as cur:
                return fn(cur)

        def once():
            with self.write(memory_limit, clock=clock) as cur:
                return fn(cur)

        try:
            return self._attempt(once)
        except duckdb.Error as exc:
            if _retryable(exc):
                raise DatabaseBusyError(
                    f"The store {self.shown} was changed by other processes {COMMIT_ATTEMPTS} times while this "
                    f"change was being written; nothing was written. Try again. ({exc})",
                    title="The store is busy") from exc
            raise

    def next_id(self, cur, table: str) -> int:
        """A new id for ``sources`` / ``templates`` / ``probe_runs``, inside the caller's write transaction."""
        column, sequence = ID_COLUMNS[table]
        if not self.lake:
            return cur.execute(f"SELECT nextval('{sequence}')").fetchone()[0]
        # Safe on DuckLake: every write bumps write_clock, so a concurrent writer that read the same value
        # conflicts at commit and runs again. The last id is kept in meta so, like a sequence, an id is
        # never reused after its row was removed.
        key = f"last_id:{table}"
        row = cur.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
        top = cur.execute(f"SELECT coalesce(max({column}), 0) FROM {table}").fetchone()[0]
        new = max(int(row[0]) if row else 0, top) + 1
        self.set_meta(cur, key, str(new))
        return new

    def data_clock(self) -> int | None:
        """DuckLake: a number that changes whenever any process commits a write; None for a DuckDB file."""
        if not self.lake:
            return None
        with self.read() as cur:
            row = cur.execute("SELECT value FROM meta WHERE key = 'write_clock'").fetchone()
        return int(row[0]) if row else 0

    # -- both kinds
    def cursor(self) -> duckdb.DuckDBPyConnection:
        """DuckLake only: a connection of this thread's own. Close it (or use ``with``) when done. (A DuckDB
        file is opened per use: ``read()`` / ``write()``.)"""
        if not self.lake:
            raise RuntimeError("Store.cursor() is for DuckLake stores; use Store.read() or Store.write().")
        cur = self._con.cursor()
        cur.execute(f"USE {LAKE_ALIAS}")  # a cursor starts in the in-memory database; the store is the attached lake
        return cur

    @contextmanager
    def _file_cursor(self, writable: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        if writable and self.read_only:
            raise DatabaseFileError(f"{self.path} was opened for reading only; this command cannot change it.",
                                    title="The database is open for reading")
        try:
            cur = self._gate.acquire(writable, self.notify)
        except duckdb.Error as exc:
            raise open_error(self.path, exc) from exc
        try:
            yield cur
        finally:
            cur.close()
            self._gate.release(writable)

    @contextmanager
    def read(self) -> Iterator[duckdb.DuckDBPyConnection]:
        with (self._file_cursor(False) if not self.lake else closing(self.cursor())) as cur:
            try:
                yield cur
            except duckdb.IOException as exc:  # a damaged block is found only when a query reads it
                if _CORRUPT.search(str(exc)):
                    raise damaged_error(self.path, exc) from exc
                raise

    @contextmanager
    def write(self, memory_limit: str | None = None, clock: bool = True) -> Iterator[duckdb.DuckDBPyConnection]:
        """One writer at a time, one transaction: everything or nothing.

        ``memory_limit`` (e.g. "1GB") bounds DuckDB's buffer pool from BEGIN until after COMMIT, under the
        write lock. It is a database-wide setting, so queries running meanwhile share the bound.
        On a DuckLake store the transaction bumps ``write_clock`` (see the module docstring); use
        ``transaction()`` to have a transaction that another process's commit refused run again.
        """
        with self._write_lock, (self._file_cursor(True) if not self.lake else closing(self.cursor())) as cur:
            if memory_limit:
                cur.execute(f"SET memory_limit = '{memory_limit}'")
            try:
                cur.execute("BEGIN TRANSACTION")
                try:
                    if self.lake and clock:
                        cur.execute("UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS VARCHAR) "
                                    "WHERE key = 'write_clock'")
                    yield cur
                except BaseException:
                    cur.execute("ROLLBACK")
                    raise
                cur.execute("COMMIT")
            finally:
                if memory_limit:
                    cur.execute("RESET memory_limit")

    # -- claims: one holder at a time for a piece of work, across threads, processes and machines
    def claim(self, name: str, note: str = "") -> tuple[str | None, dict | None]:
        """Take the claim ``name``: ``(token, None)``, or ``(None, holder)`` while a live holder has it (a dict
        with ``host``, ``pid``, ``claimed_at``, ``note``). Atomic: on a DuckDB file under the write lock, on
        DuckLake by the write clock (two claimers at once conflict; the re-run sees the winner). A holder is dead
        when its process on this host is gone, or, from another host, after ``CLAIM_STALE_S``. Give the claim
        back with ``release``."""
        import socket
        import uuid

        host, pid = socket.gethostname(), os.getpid()
        token = f"{host}:{pid}:{uuid.uuid4().hex}"

        def take(cur):
            holders = cur.execute("SELECT token, host, pid, claimed_at, note FROM work_claims WHERE claim = ?",
                                  [name]).fetchall()
            for tok, h, p, at, n in holders:
                if _claim_alive(h, int(p), float(at), tok):
                    return None, {"host": h, "pid": int(p), "claimed_at": float(at), "note": n}
            cur.execute("DELETE FROM work_claims WHERE claim = ?", [name])  # dead holders' claims
            cur.execute("INSERT INTO work_claims VALUES (?, ?, ?, ?, ?, ?)", [name, token, host, pid, time.time(), note])
            return token, None

        got, holder = self.transaction(take)
        if got:
            _LIVE_CLAIMS.add(got)
        return got, holder

    def release(self, name: str, token: str) -> None:
        _LIVE_CLAIMS.discard(token)
        self.transaction(lambda cur: cur.execute("DELETE FROM work_claims WHERE claim = ? AND token = ?",
                                                 [name, token]))

    def set_meta(self, cur, key: str, value: str) -> None:
        """Set a ``meta`` row inside the caller's write transaction (no ON CONFLICT on DuckLake)."""
        cur.execute("DELETE FROM meta WHERE key = ?", [key])
        cur.execute("INSERT INTO meta VALUES (?, ?)", [key, value])

    def describe(self) -> dict:
        """What this store is and where its data lives (``store info``)."""
        if not self.lake:
            return {"kind": "duckdb file", "store": str(self.path), "data": str(self.path),
                    "bytes": self.path.stat().st_size if self.path.exists() else 0}
        info = {"kind": f"ducklake ({self.catalog} catalog)", "store": self.shown,
                "catalog": redact(self.catalog_location),
                "data": self.data_path}
        with self.read() as cur:
            files = cur.execute(
                f"SELECT count(*), coalesce(sum(file_size_bytes), 0) FROM __ducklake_metadata_{LAKE_ALIAS}.ducklake_data_file "
                "WHERE end_snapshot IS NULL").fetchone()
            info["data_files"], info["bytes"] = int(files[0]), int(files[1])
            info["snapshot"] = cur.execute(f"SELECT id FROM ducklake_current_snapshot('{LAKE_ALIAS}')").fetchone()[0]
        if self.catalog == "sqlite" and Path(self.catalog_location).exists():
            info["catalog_bytes"] = Path(self.catalog_location).stat().st_size
        return info

    def close(self) -> None:
        if self.lake:
            self._con.close()
        elif self._gate is not None:
            gate, self._gate = self._gate, None
            gate.close_store()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def frame(store: Store, sql: str, params: list | dict | None = None, *, plain: bool = False) -> "pd.DataFrame":
    """One read query as a DataFrame. ``plain``: plain Python values (lists stay lists, NULL is None) instead of
    DuckDB's column types (NULL as NaN/NaT, lists as arrays)."""
    with store.read() as cur:
        res = cur.execute(sql, params or [])
        if not plain:
            return res.df()
        import pandas as pd

        return pd.DataFrame(res.fetchall(), columns=[d[0] for d in res.description])


CLAIM_STALE_S = 6 * 3600  # a claim held from another machine counts as abandoned after this long
_LIVE_CLAIMS: set[str] = set()  # claims this process holds and has not released


def _claim_alive(host: str, pid: int, claimed_at: float, token: str) -> bool:
    """Whether a claim's holder may still be working: this process (a claim it has not released), another live
    process on this host, or another host within ``CLAIM_STALE_S``."""
    import socket

    if host != socket.gethostname():
        return time.time() - claimed_at < CLAIM_STALE_S
    if pid == os.getpid():
        return token in _LIVE_CLAIMS
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_CORRUPT = re.compile(r"Corrupt database file|Could not read enough bytes|not a valid DuckDB database|"
                      r"database file .* is not a valid|Failed to deserialize|checksum", re.I)
_DENIED = re.compile(r"Permission denied|Read-only file system|Operation not permitted", re.I)
SQLITE_MAGIC = b"SQLite format 3\x00"
DUCKDB_MAGIC = b"DUCK"  # bytes 8-11 of every DuckDB database file


def check_database_file(path: Path, read_only: bool = False) -> None:
    """Refuse, before DuckDB sees it, a --db file that is not a DuckDB database (DuckDB would open a SQLite
    file through its sqlite extension and write JudgeLens tables into it) or, read-only, one that is missing."""
    if not path.exists():
        if read_only:
            raise DatabaseFileError(
                f"There is no JudgeLens database at {path} yet. Import something into it first (python -m lib.cli "
                f"ingest PATH --db {path}), or point --db (or JUDGELENS_DB) at an existing one.",
                title="No database yet")
        return
    if path.is_dir():
        raise DatabaseFileError(f"{path} is a folder. Give --db (or JUDGELENS_DB) a database file, e.g. "
                                f"{path / 'judgelens.duckdb'}.")
    try:
        with open(path, "rb") as fh:
            head = fh.read(16)
    except OSError as exc:
        raise DatabaseFileError(f"Cannot read the database {path}: {exc.strerror}. Check the file's permissions, "
                                "or use --db (or JUDGELENS_DB) with another file.") from None
    if not head:
        return  # an empty file: DuckDB makes a new database in it
    if head.startswith(SQLITE_MAGIC):
        raise DatabaseFileError(
            f"{path} is a SQLite database, not a DuckDB file. JudgeLens keeps its data in DuckDB and leaves this "
            "file alone: give --db (or JUDGELENS_DB) a new file name such as judgelens.duckdb and import your "
            "harness files into it.", title="Not a JudgeLens database")
    if head[8:12] != DUCKDB_MAGIC:
        raise DatabaseFileError(
            f"{path} is not a DuckDB database file (it does not start like one). JudgeLens leaves it alone: give "
            "--db (or JUDGELENS_DB) a new file name such as judgelens.duckdb, or an existing JudgeLens database.",
            title="Not a JudgeLens database")


def damaged_error(path: Path, exc: Exception) -> DatabaseFileError:
    reason = str(exc).removeprefix("IO Error: ").split("\n")[0]
    return DatabaseFileError(
        f"The database {path} is damaged: {reason}. It was probably cut short (a full disk, a copy that did not "
        "finish) or changed by another program. Restore it from a backup, or move it aside and import your "
        "harness files into a new one (python -m lib.cli ingest PATH --db NEW_FILE).",
        title="The database file is damaged")


def open_error(path: Path, exc: Exception) -> DatabaseFileError | DatabaseBusyError:
    """What went wrong opening ``path``, in words a user can act on."""
    text = str(exc)
    if _CORRUPT.search(text):
        return damaged_error(path, exc)
    if _DENIED.search(text):
        if path.exists() and os.access(path, os.R_OK):
            return DatabaseFileError(
                f"JudgeLens can read the database {path} but not write to it (DuckDB writes the file and a "
                f"{path.name}.wal file next to it, and the system said: permission denied). Reading commands "
                "(sources, scores, agreement, flags, report) work on it as it is; to import or re-judge, copy it "
                "to a folder you can write to and use --db with the copy.", title="The database is read-only")
        return DatabaseFileError(f"Cannot open the database {path}: permission denied. Check the file's and its "
                                 "folder's permissions, or use --db (or JUDGELENS_DB) with another file.")
    return busy_error(path, exc)

def migrate(source: str | os.PathLike, target: Store) -> dict[str, int]:
    """Copy every table of the single-file store ``source`` into the empty store ``target`` (normally a
    DuckLake store) in one transaction; returns rows copied per table. Ids are kept."""
    source = Path(source)
    if not source.is_file():
        raise UsageError(f"{source}: no such DuckDB file", title="Nothing to migrate")
    check_database_file(source, read_only=True)
    with target.read() as cur:
        have = cur.execute("SELECT count(*) FROM sources").fetchone()[0] + cur.execute(
            "SELECT count(*) FROM templates").fetchone()[0]
    if have:
        raise UsageError(f"The store {target.shown} already holds data; migrate into a new, empty store.",
                         title="Target store is not empty")
    alias = "jl_migrate_source"
    try:
        target._con.execute(f"ATTACH {_sql_text(str(source.resolve()))} AS {alias} (READ_ONLY)")
    except duckdb.Error as exc:
        raise open_error(source, exc) from exc
    try:
        with target.read() as cur:
            ours = {r[0] for r in cur.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
                "AND table_type = 'BASE TABLE'").fetchall()}
            theirs = {r[0] for r in cur.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_catalog = ? "
                "AND table_type = 'BASE TABLE'", [alias]).fetchall()}
        tables = sorted((ours & theirs) - {"meta", "search_text", "search_sources", "search_prompt_sources",
                                             "answer_features"})

        def copy(cur) -> dict[str, int]:
            counts = {}
            for table in tables:
                counts[table] = cur.execute(f"INSERT INTO {table} BY NAME SELECT * FROM {alias}.main.{table}"
                                            ).fetchone()[0]
            from lib.search_index import index_new_sources
            from lib.text_features import fill_answer_features

            index_new_sources(cur)  # anew: a store made with the first index has no norm columns
            fill_answer_features(cur)  # anew too: the file may predate the table
            for key, value in cur.execute(f"SELECT key, value FROM {alias}.main.meta").fetchall():
                if key not in ("schema_version", "write_clock") and not key.startswith("last_id:"):
                    target.set_meta(cur, key, value)
            if target.lake:  # keep counting ids where the file's sequences were
                for table, (column, sequence) in ID_COLUMNS.items():
                    row = cur.execute("SELECT last_value FROM duckdb_sequences() WHERE database_name = ? "
                                      "AND sequence_name = ?", [alias, sequence]).fetchone()
                    top = cur.execute(f"SELECT coalesce(max({column}), 0) FROM {table}").fetchone()[0]
                    target.set_meta(cur, f"last_id:{table}", str(max(top, (row[0] or 0) if row else 0)))
            return counts

        return target.transaction(copy)
    finally:
        target._con.execute(f"DETACH {alias}")


ANSWER_FEATURES_VERSION = "1"  # meta 'answer_features': the rules of lib.text_features the table was filled with


def upgrade_answer_features(cur) -> bool:
    """A store made before ``answer_features`` (or filled by older rules): fill it for every stored answer, once.
    Returns whether rows were written."""
    from lib.text_features import fill_answer_features

    row = cur.execute("SELECT value FROM meta WHERE key = 'answer_features'").fetchone()
    if row and row[0] == ANSWER_FEATURES_VERSION:
        return False
    cur.execute("DELETE FROM answer_features")
    added = fill_answer_features(cur)
    cur.execute("DELETE FROM meta WHERE key = 'answer_features'")
    cur.execute("INSERT INTO meta VALUES ('answer_features', ?)", [ANSWER_FEATURES_VERSION])
    return added > 0


def search_index_current(cur) -> bool:
    from lib.search_index import SEARCH_INDEX_VERSION

    row = cur.execute("SELECT value FROM meta WHERE key = 'search_index'").fetchone()
    return bool(row) and row[0] == SEARCH_INDEX_VERSION


def upgrade_search_index(cur) -> bool:
    """Stores made with the first search index (``search_text`` held a lowered copy of every text): add the sparse
    norm columns, drop the old copy and forget which sources were indexed, so the next write or search
    (``lib.analysis.search.ensure_index``) indexes them again; stores of index 2 (judge prompts indexed at their
    first search): forget the sources whose prompts were not. Returns whether a table changed."""
    from lib.search_index import COLUMNS, SEARCH_INDEX_VERSION

    if search_index_current(cur):
        return False
    have = {(t, c) for t, c in cur.execute(
        "SELECT table_name, column_name FROM information_schema.columns "
        "WHERE table_catalog = current_database()").fetchall()}
    changed = False
    for table, _, norm in COLUMNS.values():
        if (table, norm) not in have:
            cur.execute(f"ALTER TABLE {table} ADD COLUMN {norm} VARCHAR")
            changed = True
    if ("search_text", "text") not in have:
        cur.execute("DROP TABLE IF EXISTS search_text")
        cur.execute(re.search(r"CREATE TABLE IF NOT EXISTS search_text \(.*?\n\);", SCHEMA, re.S).group(0))
        cur.execute("DELETE FROM search_sources")
        changed = True
    if ("search_prompt_sources", "source_id") in have:  # index 2 indexed judge prompts at their first search
        cur.execute("DELETE FROM search_sources WHERE source_id NOT IN (SELECT source_id FROM search_prompt_sources)")
        cur.execute("DROP TABLE search_prompt_sources")
        changed = True
    cur.execute("DELETE FROM meta WHERE key = 'search_index'")
    cur.execute("INSERT INTO meta VALUES ('search_index', ?)", [SEARCH_INDEX_VERSION])
    return changed


def _schema_tables() -> set[str]:
    return set(re.findall(r"CREATE (?:TABLE IF NOT EXISTS|OR REPLACE VIEW) (\w+)", SCHEMA))


def busy_error(path: Path, exc: Exception, waited: float | None = None) -> DatabaseBusyError:
    text = str(exc)
    pid = _LOCK_PID.search(text)
    who = f" (process {pid.group(1)})" if pid else ""
    if "lock" not in text.lower():
        return DatabaseBusyError(f"Could not open the database {path}: {text}", title="Could not open the database")
    if waited is not None:
        return DatabaseBusyError(
            f"The database {path} stayed in use by another JudgeLens app or CLI{who} for {waited:.0f} s (a long "
            "import or re-judge writes it for as long as it runs); nothing was changed here. Try again when it "
            "is done, wait longer (JUDGELENS_BUSY_WAIT=SECONDS), or use another file (--db FILE).")
    return DatabaseBusyError(
        f"The database {path} is open in another JudgeLens app or CLI{who}. DuckDB lets only one "
        "process use a database file at a time. Close the other process and try again, or use "
        "another file (--db FILE, or the JUDGELENS_DB environment variable)."
    )
