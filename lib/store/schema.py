"""The store's tables (DDL), the DuckLake form of it, and the upgrades a store made by an older JudgeLens gets on
open. The tables are described in ``lib.store``'s docstring."""
from __future__ import annotations

import re

from lib import harness as H
from lib.search_index import COLUMNS, SEARCH_INDEX_VERSION
from lib.store.bulk import DERIVED
from lib.text_features import fill_answer_features

SCHEMA_VERSION = "1"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key VARCHAR PRIMARY KEY, value VARCHAR);
CREATE SEQUENCE IF NOT EXISTS source_ids START 1;
CREATE TABLE IF NOT EXISTS sources (
    source_id     INTEGER PRIMARY KEY DEFAULT nextval('source_ids'),
    sha256        VARCHAR NOT NULL,            -- an imported file's content key: xxh128:<hex> (sha256 hex before issue 26)
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
-- rationale and judge_prompt (most of a judgment file's bytes) are stored uncompressed (issue 26): DuckDB's FSST
-- compression of them took a third of the CPU of an import of 1M judgments (46 -> 31 CPU-s for the benchmark file),
-- which kept the import slower than a plain DuckDB load of the file. The cost: texts FSST would shrink take more room
-- (the benchmark's synthetic texts: a 3.7 GB store instead of 2.2 GB; DuckDB leaves the Japanese and English judge
-- texts of data/sample uncompressed anyway); a search counts its matches in them in a third to a half of the CPU
-- (100k judgments: 0.12 against 0.49 CPU-s). A store made before keeps compressing them, later imports too (the
-- declaration belongs to the table's creation); DuckLake's Parquet compresses.
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
    rationale    VARCHAR USING COMPRESSION uncompressed,  -- the judge's full output
    judge_prompt VARCHAR USING COMPRESSION uncompressed,  -- the rendered prompt the judge saw (Swallow: JSON messages)
    tstamp       DOUBLE,
    rationale_norm VARCHAR,                    -- search index (lib.search_index): lower(NFKC(rationale)) when NFKC
    prompt_norm    VARCHAR,                    -- changes it, else NULL; the same for judge_prompt
    single_bracket BOOLEAN                     -- no [[N]] but a [N] in the rationale (lib.vocab.single_bracket_only_sql),
                                               -- written by every insert (lib.store.bulk.DERIVED); NULL reads as false
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
                 ("sources", "scale_max", "DOUBLE"), ("sources", "failure_code", "DOUBLE"),
                 ("single_judgments", "single_bracket", "BOOLEAN"))  # filled by upgrade_derived


def lake_schema(schema: str = SCHEMA) -> str:
    """``SCHEMA`` without what DuckLake lacks: sequences, PRIMARY KEY / UNIQUE constraints, list defaults, column
    compression. Uniqueness is kept by the writers (``Store.transaction``, ``Store.next_id``)."""
    out = re.sub(r"(?m)^CREATE (?:SEQUENCE|(?:UNIQUE )?INDEX)[^;]*;[ \t]*\n", "", schema)
    out = re.sub(r" DEFAULT nextval\('[a-z_]+'\)", "", out)
    out = re.sub(r",([ \t]*--[^\n]*)?\s*(?:UNIQUE|PRIMARY KEY) ?\([^)]*\)", r"\1", out)  # table constraints
    out = re.sub(r" (?:PRIMARY KEY|UNIQUE)\b", "", out)                                    # column constraints
    out = re.sub(r"( NOT NULL)? DEFAULT \[\]", "", out)  # no list defaults: NULL where a writer gives none
    out = re.sub(r" USING COMPRESSION \w+", "", out)  # Parquet files: DuckLake compresses them itself
    return out



def empty_table_sql(table: str) -> str:
    """``CREATE TEMP TABLE table (...)``: ``table``'s columns as a DuckLake store has them, for an empty copy."""
    found = re.search(rf"CREATE TABLE IF NOT EXISTS {table} \(.*?\n\);", lake_schema(), re.S)
    if not found:
        raise ValueError(f"no table {table!r} in the schema")
    return found.group(0).replace("CREATE TABLE IF NOT EXISTS", "CREATE TEMP TABLE", 1)


def schema_tables() -> set[str]:
    return set(re.findall(r"CREATE (?:TABLE IF NOT EXISTS|OR REPLACE VIEW) (\w+)", SCHEMA))


ANSWER_FEATURES_VERSION = "1"  # meta 'answer_features': the rules of lib.text_features the table was filled with


def upgrade_answer_features(cur) -> bool:
    """A store made before ``answer_features`` (or filled by older rules): fill it for every stored answer, once.
    Returns whether rows were written."""
    row = cur.execute("SELECT value FROM meta WHERE key = 'answer_features'").fetchone()
    if row and row[0] == ANSWER_FEATURES_VERSION:
        return False
    cur.execute("DELETE FROM answer_features")
    added = fill_answer_features(cur)
    cur.execute("DELETE FROM meta WHERE key = 'answer_features'")
    cur.execute("INSERT INTO meta VALUES ('answer_features', ?)", [ANSWER_FEATURES_VERSION])
    return added > 0


def derived_meta_key(table: str, column: str) -> str:
    """meta key holding the SQL a derived column (``lib.store.bulk.DERIVED``) was last filled with."""
    return f"derived:{table}.{column}"


def upgrade_derived(cur) -> bool:
    """A store made before a derived column (``lib.store.bulk.DERIVED``: BOOLEAN flags every insert computes) or
    filled by an older rule: set it on the stored rows, once (meta ``derived:<table>.<column>`` holds the rule's
    SQL). Only the rows whose flag changes are written (NULL reads as false), so on a DuckLake store the upgrade
    rewrites the few flagged rows, not the table. The column itself is added first (``ADDED_COLUMNS``). Returns
    whether rows were written."""
    changed = False
    for table, columns in DERIVED.items():
        for column, expr in columns:
            key = derived_meta_key(table, column)
            row = cur.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
            if row and row[0] == expr:
                continue
            updated = cur.execute(f"UPDATE {table} SET {column} = {expr} "
                                  f"WHERE coalesce({column}, false) <> coalesce({expr}, false)").fetchone()[0]
            changed = changed or updated > 0
            cur.execute("DELETE FROM meta WHERE key = ?", [key])
            cur.execute("INSERT INTO meta VALUES (?, ?)", [key, expr])
    return changed


def search_index_current(cur) -> bool:
    row = cur.execute("SELECT value FROM meta WHERE key = 'search_index'").fetchone()
    return bool(row) and row[0] == SEARCH_INDEX_VERSION


def upgrade_search_index(cur) -> bool:
    """Stores made with the first search index (``search_text`` held a lowered copy of every text): add the sparse
    norm columns, drop the old copy and forget which sources were indexed, so the next write or search
    (``lib.analysis.search.ensure_index``) indexes them again; stores of index 2 (judge prompts indexed at their
    first search): forget the sources whose prompts were not. Returns whether a table changed."""
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
