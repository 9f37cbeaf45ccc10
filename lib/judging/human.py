"""The analyst's own verdicts: a human judge next to the LLM judges, never overwriting them.

**Single verdicts** (``human_verdicts``): an author gives an item (bench, question, turn, model, sample) a 1-10
score and/or a label and a note. Every edit adds a row (history stays); the latest row per author and item
counts. The latest scores enter ``item_scores`` as judge ``human:<author>`` with harness ``human`` (see
``refresh_human_scores``, called by ``lib.store.refresh_item_scores``), so agreement, distributions, compare,
the largest disagreements and reports treat a person like any other judge.

**Sharing**: ``export_jsonl`` writes one JSON object per verdict (``{"judgelens_verdict": 1, "author": ...}``);
``import_file`` (what ``ingest`` calls for such a file, recognised by its content) adds the verdicts a store does
not have yet: a verdict is identified by all of its fields, so importing twice or importing your own export
adds nothing.

**Pairwise human judgments** in the format of the public MT-Bench human-judgment set (lmsys/mt_bench_human_judgments:
rows with ``question_id, model_a, model_b, winner, judge, turn`` and the two conversations) import as pairwise votes
(``human_pair_votes``) by ``human:<judge id>``; ``pair_agreement`` computes the agreement table of FastChat's
``compute_agreement.py`` (MT-Bench paper, table 2): per turn, with and without ties, between judge types.
"""
from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from lib.errors import FormatError, UsageError
from lib.store import Store

HUMAN_HARNESS = "human"
PREFIX = "human:"
DEFAULT_LABELS = ("judge A right", "judge B right", "both wrong", "reference wrong", "language rule misapplied",
                  "parse error", "position bias")
EXPORT_MARK = "judgelens_verdict"
VERDICT_COLUMNS = ["verdict_id", "author", "created_at", "bench", "question_id", "turn", "model", "sample", "score",
                   "label", "note", "source_id"]
PAIR_WINNERS = ("model_a", "model_b", "tie", "tie (bothbad)")
TOO_DEEP = "a JSON value is nested too deeply (about a thousand levels of [ or {); verdict records nest a few levels"


def judge_name(author: str) -> str:
    return PREFIX + author


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def _uid(author, created_at: datetime, bench, question_id, turn, model, sample, score, label, note) -> str:
    parts = [author, created_at.isoformat(timespec="microseconds"), bench, str(question_id), int(turn), model,
             None if sample is None else int(sample), None if score is None else float(score), label or None,
             note or None]
    return hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


def check_verdict(author: str | None, score, label: str | None, note: str | None) -> tuple[str, float | None]:
    author = (author or "").strip()
    if not author:
        raise UsageError("Set your name first (--author, the sidebar, or [judgelens] author in secrets): "
                         "every verdict records who gave it.", title="Who is judging?")
    if any(c in author for c in "\n\r\t"):
        raise UsageError("An author name is one line of text.")
    if score is not None:
        score = float(score)
        if not 1 <= score <= 10:
            raise UsageError(f"A verdict's score is 1-10; got {score:g}.")
    if score is None and not (label or "").strip() and not (note or "").strip():
        raise UsageError("A verdict needs a score, a label or a note.")
    return author, score


def record(store: Store, *, author: str, bench: str, question_id: str, turn: int, model: str, sample: int = 0,
           score: float | None = None, label: str | None = None, note: str | None = None,
           created_at: datetime | None = None) -> dict:
    """Add one verdict (a new row; earlier ones stay as history) and update the human judge's item scores."""
    author, score = check_verdict(author, score, label, note)
    created_at = created_at or _now()
    row = dict(author=author, created_at=created_at, bench=bench, question_id=str(question_id), turn=int(turn),
               model=model, sample=int(sample or 0), score=score, label=(label or "").strip() or None,
               note=(note or "").strip() or None)
    def write(cur) -> None:  # Store.transaction: may run again on a DuckLake store
        _insert(cur, [row], source_id=None)
        refresh_human_scores(cur, [bench])

    store.transaction(write)
    return row


def _insert(cur, rows: list[dict], source_id: int | None) -> int:
    """Insert the rows the store does not hold yet (same fields = same verdict). Returns how many were new."""
    if not rows:
        return 0
    import pyarrow as pa

    table = pa.table({
        "uid": [_uid(r["author"], r["created_at"], r["bench"], r["question_id"], r["turn"], r["model"], r["sample"],
                     r["score"], r["label"], r["note"]) for r in rows],
        "author": [r["author"] for r in rows],
        "created_at": pa.array([r["created_at"] for r in rows], pa.timestamp("us")),
        "bench": [r["bench"] for r in rows], "question_id": [str(r["question_id"]) for r in rows],
        "turn": pa.array([int(r["turn"]) for r in rows], pa.int32()), "model": [r["model"] for r in rows],
        "sample": pa.array([None if r["sample"] is None else int(r["sample"]) for r in rows], pa.int32()),
        "score": pa.array([r["score"] for r in rows], pa.float64()),
        "label": pa.array([r["label"] for r in rows], pa.string()),
        "note": pa.array([r["note"] for r in rows], pa.string())})
    cur.register("_verdicts_in", table)
    try:
        return cur.execute("""
            INSERT INTO human_verdicts (uid, author, created_at, bench, question_id, turn, model, sample, score,
                                        label, note, source_id)
            SELECT DISTINCT ON (uid) *, $sid FROM _verdicts_in v
            WHERE v.uid NOT IN (SELECT uid FROM human_verdicts)""", {"sid": source_id}).fetchone()[0]
    finally:
        cur.unregister("_verdicts_in")


def refresh_human_scores(cur, benches=None) -> None:
    """Put the latest human score per author and item into item_scores as judge human:<author> (harness
    'human'), for these benches (None: all), inside the caller's transaction. Swallow samples: the latest verdict
    per sample, averaged per item like the LLM judges' samples."""
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
    cur.execute(f"DELETE FROM item_scores WHERE harness = '{HUMAN_HARNESS}' {'AND list_contains($b, bench)' if where else ''}",
                params)
    cur.execute(f"""
        INSERT INTO item_scores
        WITH latest AS (
            SELECT * FROM human_verdicts {where}
            QUALIFY row_number() OVER (PARTITION BY author, bench, question_id, turn, model, coalesce(sample, 0)
                                       ORDER BY created_at DESC, verdict_id DESC) = 1)
        SELECT '{HUMAN_HARNESS}', l.bench, '{PREFIX}' || l.author, l.model, l.question_id, l.turn, q.category,
               avg(l.score), count(*), count(l.score), stddev_samp(l.score), 0
        FROM latest l LEFT JOIN current_questions q ON q.bench = l.bench AND q.question_id = l.question_id
        GROUP BY l.bench, l.author, l.model, l.question_id, l.turn, q.category
        HAVING count(l.score) > 0""", params)


# ------------------------------------------------------------------------------------------------
# Reading

def _df(store: Store, sql: str, params: dict | None = None) -> pd.DataFrame:
    with store.read() as cur:
        res = cur.execute(sql, params or {})
        return pd.DataFrame(res.fetchall(), columns=[d[0] for d in res.description])


def _filters(**kw) -> tuple[str, dict]:
    conditions, params = [], {}
    for key, value in kw.items():
        if value is not None:
            conditions.append(f"{key} = ${key}")
            params[key] = int(value) if key in ("turn", "sample") else str(value)
    return ("WHERE " + " AND ".join(conditions)) if conditions else "", params


def history(store: Store, *, author: str | None = None, bench: str | None = None, question_id: str | None = None,
            turn: int | None = None, model: str | None = None, sample: int | None = None) -> pd.DataFrame:
    """Every verdict row (newest first), with ``latest`` true where it is its author's current verdict."""
    where, params = _filters(author=author, bench=bench, question_id=question_id, turn=turn, model=model,
                             sample=sample)
    df = _df(store, f"""
        SELECT {', '.join(VERDICT_COLUMNS)},
               row_number() OVER (PARTITION BY author, bench, question_id, turn, model, coalesce(sample, 0)
                                  ORDER BY created_at DESC, verdict_id DESC) = 1 AS latest
        FROM human_verdicts {where} ORDER BY created_at DESC, verdict_id DESC""", params)
    df["latest"] = df["latest"].astype(bool)  # also when empty, so df[df["latest"]] filters rows
    return df


def latest(store: Store, *, author: str | None = None, bench: str | None = None) -> pd.DataFrame:
    """The current verdict per author and item."""
    df = history(store, author=author, bench=bench)
    return df[df["latest"].astype(bool)].drop(columns=["latest"]).reset_index(drop=True)


def authors(store: Store) -> list[str]:
    with store.read() as cur:
        return [r[0] for r in cur.execute("SELECT DISTINCT author FROM human_verdicts ORDER BY 1").fetchall()]


def review_queue(store: Store, author: str, *, bench: str, judges: list[str] | None = None,
                 n: int = 20) -> pd.DataFrame:
    """The n largest disagreements among the (non-human) judges on this bench, in order, each with whether this
    author has decided it (has a verdict on it). Columns: rank, bench, question_id, model, turn, category, spread,
    one score column per judge, decided."""
    from lib.analysis.agreement import disagreements

    if judges is None:
        with store.read() as cur:
            judges = [r[0] for r in cur.execute(
                "SELECT DISTINCT judge FROM item_scores WHERE bench = ? AND harness <> ? AND score IS NOT NULL "
                "ORDER BY 1", [bench, HUMAN_HARNESS]).fetchall()]
    if len(judges) < 2:
        return pd.DataFrame(columns=["rank", "bench", "question_id", "model", "turn", "category", "spread",
                                     "decided"])
    top = disagreements(store, judges, bench=bench, limit=n)
    decided = _df(store, "SELECT DISTINCT bench, question_id, turn, model FROM human_verdicts WHERE author = $a "
                         "AND bench = $b", {"a": author, "b": bench})
    done = set(zip(decided["bench"], decided["question_id"], decided["turn"].astype(int) if len(decided) else [],
                   decided["model"]))
    top.insert(0, "rank", range(1, len(top) + 1))
    top["decided"] = [(b, q, int(t), m) in done for b, q, t, m in
                      zip(top["bench"], top["question_id"], top["turn"], top["model"])]
    return top


def next_undecided(queue: pd.DataFrame, after: tuple[str, int, str] | None = None) -> tuple[str, int, str] | None:
    """(question_id, turn, model) of the first undecided item in the queue (after the given one, wrapping)."""
    if queue.empty:
        return None
    keys = list(zip(queue["question_id"], queue["turn"].astype(int), queue["model"]))
    open_ = [k for k, d in zip(keys, queue["decided"]) if not d]
    if not open_:
        return None
    if after in keys:
        i = keys.index(after)
        for k in keys[i + 1:] + keys[:i]:
            if k in open_:
                return k
    return open_[0]


# ------------------------------------------------------------------------------------------------
# Sharing: export, import

def _plain(value):
    """None for pandas' missing values (NaN, NaT, pd.NA), else the value."""
    return None if value is None or pd.isna(value) else value


def export_records(store: Store, author: str | None = None) -> list[dict]:
    """Every verdict (history included), oldest first, as the JSON objects export_jsonl writes."""
    df = history(store, author=author).sort_values(["created_at", "verdict_id"])
    out = []
    for r in df.itertuples(index=False):
        sample, score = _plain(r.sample), _plain(r.score)
        out.append({EXPORT_MARK: 1, "author": r.author,
                    "created_at": pd.Timestamp(r.created_at).isoformat(timespec="microseconds"),
                    "bench": r.bench, "question_id": r.question_id, "turn": int(r.turn), "model": r.model,
                    "sample": None if sample is None else int(sample), "score": None if score is None else float(score),
                    "label": _plain(r.label), "note": _plain(r.note)})
    return out


def export_jsonl(store: Store, path: str | Path, author: str | None = None) -> int:
    records = export_records(store, author)
    Path(path).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return len(records)


def sniff(path: Path) -> str | None:
    """'verdicts' for a JudgeLens verdict export, 'human_pairs' for MT-Bench human judgments, else None. Reads
    the first record only."""
    try:
        with open(path, "rb") as fh:
            head = fh.read(1 << 16)
    except OSError:
        return None
    text = head.decode("utf-8", errors="ignore").lstrip("\ufeff").lstrip()
    if text.startswith("["):  # a JSON array (compute_agreement.py's input)
        text = text[1:].lstrip()
    if not text.startswith("{"):
        return None
    first = text.split("\n", 1)[0]
    keys: set[str] = set()
    try:
        first_record = json.loads(first.rstrip().rstrip(","))
        keys = set(first_record) if isinstance(first_record, dict) else set()
    except (ValueError, RecursionError):
        try:
            keys = set(json.loads(Path(path).read_text(encoding="utf-8-sig"))[0])
        except (ValueError, RecursionError, IndexError, KeyError, TypeError, OSError):
            return None
    if EXPORT_MARK in keys:
        return "verdicts"
    if {"question_id", "model_a", "model_b", "winner", "judge", "turn"} <= keys:
        return "human_pairs"
    return None


def _records(path: Path, display: str) -> list[tuple[int, dict]]:
    text = path.read_text(encoding="utf-8-sig")
    if text.lstrip().startswith("["):
        try:
            data = json.loads(text)
        except ValueError as exc:
            raise FormatError(f"{display}: not valid JSON ({exc})") from exc
        except RecursionError:
            raise FormatError(f"{display}: {TOO_DEEP}") from None
        return list(enumerate(data, 1))
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip():
            try:
                out.append((n, json.loads(line)))
            except ValueError as exc:
                raise FormatError(f"{display}:{n}: not valid JSON ({exc.msg})") from exc
            except RecursionError:
                raise FormatError(f"{display}:{n}: {TOO_DEEP}") from None
    return out


def read_verdicts(path: Path, display: str) -> list[dict]:
    rows = []
    for n, obj in _records(path, display):
        try:
            author, score = check_verdict(obj.get("author"), obj.get("score"), obj.get("label"), obj.get("note"))
            rows.append(dict(author=author, created_at=datetime.fromisoformat(obj["created_at"]).replace(tzinfo=None),
                             bench=str(obj["bench"]), question_id=str(obj["question_id"]), turn=int(obj["turn"]),
                             model=str(obj["model"]), sample=None if obj.get("sample") is None else int(obj["sample"]),
                             score=score, label=obj.get("label") or None, note=obj.get("note") or None))
        except (KeyError, TypeError, ValueError, UsageError) as exc:
            raise FormatError(f"{display}:{n}: not a JudgeLens verdict ({getattr(exc, 'message', exc)})") from exc
    return rows


def pair_judge_name(judge) -> str:
    """The JudgeLens name of a pairwise vote's judge: human:<id> for a person, e.g. human:expert_0;
    an LLM judge given as [model, prompt] keeps its model name with the prompt, e.g. gpt-4:pair-v2."""
    if isinstance(judge, list):
        return ":".join(str(j) for j in judge)
    return PREFIX + str(judge)


def judge_type(judge) -> str:
    """The judge type FastChat's compute_agreement.py groups votes by: gpt4-pair, human (experts), author."""
    if isinstance(judge, list) and judge and judge[0] == "gpt-4" and str(judge[1]).startswith("pair"):
        return "gpt4-pair"
    if isinstance(judge, list):
        return ":".join(str(j) for j in judge)
    if str(judge).startswith("expert"):
        return "human"
    if str(judge).startswith("author"):
        return "author"
    return str(judge)


def read_pair_votes(path: Path, display: str, bench: str) -> list[dict]:
    rows = []
    for n, obj in _records(path, display):
        try:
            winner = obj["winner"]
            if winner not in PAIR_WINNERS:
                raise ValueError(f"winner {winner!r} is not one of {', '.join(PAIR_WINNERS)}")
            turn = int(obj["turn"])
            if turn not in (1, 2):
                raise ValueError(f"turn {turn} is not 1 or 2")
            rows.append(dict(bench=bench, question_id=str(obj["question_id"]), turn=turn, model_a=str(obj["model_a"]),
                             model_b=str(obj["model_b"]), winner=winner, judge=pair_judge_name(obj["judge"]),
                             judge_type=judge_type(obj["judge"])))
        except (KeyError, TypeError, ValueError) as exc:
            raise FormatError(f"{display}:{n}: not an MT-Bench human judgment ({exc})") from exc
    return rows


def pair_bench(path: Path) -> str:
    """A human-judgment file inside <bench>/model_judgment/ belongs to that bench; elsewhere: mt_bench (the
    public set judges MT-Bench)."""
    return path.parent.parent.name if path.parent.name == "model_judgment" else "mt_bench"


def import_file(store: Store, path: str | Path, kind: str, display: str | None = None) -> tuple[int, int, int, bool]:
    """Import a verdict export or a human pairwise judgment file in one transaction. Returns (source_id, rows
    added, rows already present, new source?): the same bytes imported before change nothing."""
    path = Path(path)
    display = display or str(path)
    data = path.read_bytes()  # verdict files are small
    sha, size = hashlib.sha256(data).hexdigest(), len(data)
    if kind == "verdicts":
        rows, bench = read_verdicts(path, display), None
    else:
        bench = pair_bench(path)
        rows = read_pair_votes(path, display, bench)
    source_kind = "human_verdicts" if kind == "verdicts" else "human_pair_votes"

    def write(cur):  # Store.transaction: may run again on a DuckLake store
        existing = cur.execute("SELECT source_id FROM sources WHERE sha256 = ? AND kind = ?",
                               [sha, source_kind]).fetchone()
        if existing:
            return existing[0], 0, len(rows), False
        sid = store.next_id(cur, "sources")
        cur.execute(
            "INSERT INTO sources (source_id, sha256, path, file_name, harness, kind, bench, bytes, rows_imported, "
            "warnings) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, [])",
            [sid, sha, str(path), path.name, HUMAN_HARNESS, source_kind, bench, size])
        if kind == "verdicts":
            added = _insert(cur, rows, sid)
            refresh_human_scores(cur, {r["bench"] for r in rows})
        else:
            import pyarrow as pa

            cur.register("_votes_in", pa.Table.from_pylist(rows))
            try:
                added = cur.execute("""INSERT INTO human_pair_votes (source_id, bench, question_id, turn, model_a,
                                       model_b, winner, judge, judge_type)
                                       SELECT $sid, bench, question_id, turn, model_a, model_b, winner, judge,
                                              judge_type FROM _votes_in""", {"sid": sid}).fetchone()[0]
            finally:
                cur.unregister("_votes_in")
        cur.execute("UPDATE sources SET rows_imported = ?, warnings = ? WHERE source_id = ?",
                    [added, [f"{len(rows) - added} verdict(s) were already in the store"] if len(rows) > added else [],
                     sid])
        return sid, added, len(rows) - added, True

    return store.transaction(write)


# ------------------------------------------------------------------------------------------------
# Pairwise agreement, as FastChat's compute_agreement.py

def _revert(vote: str) -> str:
    return {"model_a": "model_b", "model_b": "model_a"}.get(vote, vote)


def _convert(vote: str) -> str:
    return "tie" if "tie" in vote else vote


def _equal(v1: str, v2: str) -> bool:
    return ("tie" in v1 and "tie" in v2) or v1 == v2


def votes_by_key(votes: pd.DataFrame) -> list[dict]:
    """compute_agreement.get_mt_bench_votes_data: per turn, (question, model pair sorted) -> judge type -> votes
    (winner seen from the alphabetically first model)."""
    data: list[dict] = [{}, {}]
    for r in votes.itertuples(index=False):
        if r.model_a < r.model_b:
            key, winner = (r.bench, r.question_id, r.model_a, r.model_b), r.winner
        else:
            key, winner = (r.bench, r.question_id, r.model_b, r.model_a), _revert(r.winner)
        data[int(r.turn) - 1].setdefault(key, {}).setdefault(r.judge_type, []).append(winner)
    return data


def agreement_counts(data: dict, judge1: str, judge2: str, ban: tuple[str, ...]) -> tuple[int, int]:
    """(agree, total): compute_agreement.get_mt_bench_agreement, generalised to any two judge types. Two different
    types: every pair of one vote of each on the same key (FastChat's gpt4-pair has one vote per key). The same
    type twice: every pair of two of its votes on the same key."""
    agree = total = 0
    for votes in data.values():
        if judge1 == judge2:
            mine = votes.get(judge1, [])
            pairs = [(mine[i], mine[j]) for i in range(len(mine) - 1) for j in range(i + 1, len(mine))]
        else:
            if judge1 not in votes or judge2 not in votes:
                continue
            pairs = [(a, b) for a in votes[judge1] for b in votes[judge2]]
        for a, b in pairs:
            if _convert(a) in ban or _convert(b) in ban:
                continue
            total += 1
            agree += _equal(a, b)
    return agree, total


def pair_votes(store: Store, bench: str | None = None) -> pd.DataFrame:
    where, params = _filters(bench=bench)
    return _df(store, f"SELECT bench, question_id, turn, model_a, model_b, winner, judge, judge_type "
                      f"FROM human_pair_votes {where} ORDER BY source_id, question_id, turn", params)


def pair_agreement(store: Store, bench: str | None = None, pairs: list[tuple[str, str]] | None = None) -> pd.DataFrame:
    """The MT-Bench paper's agreement table: for each pair of judge types, per turn, with ties (setup S1) and
    without (S2: a key's votes that are ties left out). Columns: judge_1, judge_2, turn, ties, agree, total, ratio.
    Default pairs: every type against 'human' and human against itself, as compute_agreement.py supports."""
    votes = pair_votes(store, bench)
    columns = ["judge_1", "judge_2", "turn", "ties", "agree", "total", "ratio"]
    if votes.empty:
        return pd.DataFrame(columns=columns)
    data = votes_by_key(votes)
    types = sorted(votes["judge_type"].unique())
    if pairs is None:
        pairs = [(t, "human") for t in types if t != "human" and "human" in types]
        if "human" in types:
            pairs.append(("human", "human"))
        if not pairs:
            pairs = [(a, b) for i, a in enumerate(types) for b in types[i:]]
    rows = []
    for j1, j2 in pairs:
        for turn in (1, 2):
            for ties, ban in (("with ties", ()), ("without ties", ("tie",))):
                agree, total = agreement_counts(data[turn - 1], j1, j2, ban)
                rows.append({"judge_1": j1, "judge_2": j2, "turn": turn, "ties": ties, "agree": agree,
                             "total": total, "ratio": agree / total if total else float("nan")})
    return pd.DataFrame(rows, columns=columns)
