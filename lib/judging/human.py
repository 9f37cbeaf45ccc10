"""The analyst's own verdicts: a human judge next to the LLM judges, never overwriting them.

**Single verdicts** (``human_verdicts``): an author gives an item (bench, question, turn, model, sample) a 1-10
score and/or a label and a note. Every edit adds a row: ``history`` shows every row as recorded.

**Which verdict counts** (one rule, ``lib.store.current_verdicts_sql``, used by item_scores, ``latest``, the review
queue, the Item view panel and the CLI): an author's current verdict on an item takes EACH FIELD from the latest
row that sets or clears that field. A row that leaves the score empty keeps the earlier score (recording a label
or a note after a score does not wipe it); the same for label and note. Only an explicit clear empties a field
(``record(..., clear=["score"])``, CLI ``verdict --clear-score``, the panel's "Clear score"). The current scores
enter ``item_scores`` as judge ``human:<author>`` with harness ``human`` (``lib.store.refresh_human_scores``, run
inside every store write), so agreement, distributions, compare, the largest disagreements and reports treat a
person like any other judge.

**Swallow samples**: Swallow judges every item 5 times (``sample`` 0-4) and a verdict is on one sample (the one
the Item view shows). The item's ``human:<author>`` score is the mean of the author's current scores over the
samples they scored (as the LLM judges' samples are averaged). The review queue ranks items, not samples: an
item is DECIDED when the author's current verdict on ANY of its samples has a score or a label (a note alone
does not decide it; clearing the score and label undecides it).

**Sharing**: ``export_jsonl`` writes one JSON object per verdict (``{"judgelens_verdict": 1, "author": ...}``);
``ingest`` recognises such a file by its content (``lib.ingest.formats.human`` reads it) and adds the verdicts a
store does not have yet: a verdict is identified by all of its fields, so importing twice or importing your own export
adds nothing. The export holds every row (clears included), so the importing store finds the same current verdicts.

**Pairwise human judgments** in the format of the public MT-Bench human-judgment set (lmsys/mt_bench_human_judgments:
rows with ``question_id, model_a, model_b, winner, judge, turn`` and the two conversations) import through
``ingest`` as pairwise votes (``human_pair_votes``) by ``human:<judge id>``; ``pair_agreement`` computes the agreement
table of FastChat's ``compute_agreement.py`` (MT-Bench paper, table 2): per turn, with and without ties, between judge types.
"""
from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from lib.errors import UsageError
from lib.store import (HUMAN_PREFIX, VERDICT_ORDER_TERMS, Store, check_verdict, check_verdict_key,
                       current_verdicts_sql, frame, insert_verdicts, plain_frame, read_once, refresh_human_scores,
                       verdict_item_problems)
from lib.vocab import VERDICT_EXPORT_MARK as EXPORT_MARK

DEFAULT_LABELS = ("judge A right", "judge B right", "both wrong", "reference wrong", "language rule misapplied",
                  "parse error", "position bias")
# history(): every row as recorded; latest(): each author's current verdict per item (current_verdicts_sql)
VERDICT_COLUMNS = ["verdict_id", "author", "created_at", "bench", "question_id", "turn", "model", "sample", "score",
                   "label", "note", "cleared", "source_id"]
CURRENT_COLUMNS = ["verdict_id", "author", "created_at", "bench", "question_id", "turn", "model", "sample", "score",
                   "label", "note", "edits"]


def judge_name(author: str) -> str:
    return HUMAN_PREFIX + author


def _now() -> datetime:
    return datetime.now(timezone.utc).replace(tzinfo=None)


def record(store: Store, *, author: str, bench: str, question_id: str, turn: int, model: str, sample: int = 0,
           score: float | None = None, label: str | None = None, note: str | None = None,
           clear=(), created_at: datetime | None = None) -> dict:
    """Add one verdict row (earlier ones stay as history) and update the human judge's item scores. Fields left
    None keep the author's earlier value; ``clear`` (e.g. ["score"]) empties fields (see the module docstring)."""
    author, score, cleared = check_verdict(author, score, label, note, clear)
    bench, question_id, turn, model, sample = check_verdict_key(bench, question_id, turn, model, sample)
    created_at = created_at or _now()
    row = dict(author=author, created_at=created_at, bench=bench, question_id=question_id, turn=turn,
               model=model, sample=sample, score=score, label=(label or "").strip() or None,
               note=(note or "").strip() or None, cleared=cleared)

    def write(cur) -> None:  # Store.transaction: may run again on a DuckLake store
        refused, _ = verdict_item_problems(cur, [row])  # an item the store does not hold may still get a verdict
        if refused:
            raise UsageError(f"Cannot record this verdict: {refused[0]}.")
        insert_verdicts(cur, [row], source_id=None)
        refresh_human_scores(cur, [bench])

    store.transaction(write)
    return row


# ------------------------------------------------------------------------------------------------
# Reading


def _filters(**kw) -> tuple[str, dict]:
    conditions, params = [], {}
    for key, value in kw.items():
        if value is not None:  # a verdict without a sample (an imported one) is on sample 0
            conditions.append(f"coalesce(sample, 0) = ${key}" if key == "sample" else f"{key} = ${key}")
            params[key] = int(value) if key in ("turn", "sample") else str(value)
    return ("WHERE " + " AND ".join(conditions)) if conditions else "", params


def _history_sql(where: str) -> str:
    desc = ", ".join(term + " DESC" for term in VERDICT_ORDER_TERMS)
    return f"""
        SELECT {', '.join(VERDICT_COLUMNS)},
               row_number() OVER (PARTITION BY author, bench, question_id, turn, model, coalesce(sample, 0)
                                  ORDER BY {desc}) = 1 AS latest
        FROM human_verdicts {where} ORDER BY {desc}"""


def _latest_sql(where: str) -> str:
    return (f"SELECT {', '.join(CURRENT_COLUMNS)} FROM ({current_verdicts_sql(where)}) "
            "ORDER BY created_at DESC, author, bench, question_id, turn, model, sample")


def _history_frame(df: pd.DataFrame) -> pd.DataFrame:
    df["latest"] = df["latest"].astype(bool)  # also when empty, so df[df["latest"]] filters rows
    return df


def history(store: Store, *, author: str | None = None, bench: str | None = None, question_id: str | None = None,
            turn: int | None = None, model: str | None = None, sample: int | None = None) -> pd.DataFrame:
    """Every verdict row as recorded (newest first), with ``latest`` true on each author's newest row per item.
    A row's empty fields are not its author's current values: ``latest`` gives those."""
    where, params = _filters(author=author, bench=bench, question_id=question_id, turn=turn, model=model,
                             sample=sample)
    return _history_frame(frame(store, _history_sql(where), params, plain=True))


def latest(store: Store, *, author: str | None = None, bench: str | None = None, question_id: str | None = None,
           turn: int | None = None, model: str | None = None, sample: int | None = None) -> pd.DataFrame:
    """Each author's current verdict per item (each field from the latest row that sets or clears it; see the
    module docstring), newest first. Columns: CURRENT_COLUMNS (verdict_id and created_at of the newest row,
    edits = rows)."""
    where, params = _filters(author=author, bench=bench, question_id=question_id, turn=turn, model=model,
                             sample=sample)
    return frame(store, _latest_sql(where), params, plain=True)


def no_verdicts_known(store: Store) -> bool:
    """A DuckLake store held no verdict at the data version this process last read (a page reads it first, and keys
    its caches on it), so its verdict table need not be read: a statement's catalog rounds cost 0.2 s at 1M judgments
    even on the empty table. On the file a read is cheap: always read."""
    known = store.known_data_version()
    return known is not None and known[2] == 0


def all_verdicts(store: Store, author: str | None = None) -> dict:
    """What the Review page's "All verdicts" tab shows, from one read (``lib.store.read_once``; three statements were 2x the
    file's click on a lake): ``authors`` (as ``authors``), and for ``author`` (None: everyone) ``latest``,
    ``history`` and ``records`` (as ``latest``, ``history`` and ``export_records`` return them)."""
    where, params = _filters(author=author)

    def views(con) -> dict:
        hist = _history_frame(plain_frame(con.execute(_history_sql(where), params)))
        return {"authors": [r[0] for r in con.execute(AUTHORS_SQL).fetchall()],
                "latest": plain_frame(con.execute(_latest_sql(where), params)), "history": hist,
                "records": _records(hist)}

    return read_once(store, "human_verdicts", "", {}, views, empty=no_verdicts_known(store))


def item_verdicts(store: Store, *, author: str, bench: str, question_id: str, turn: int, model: str,
                  sample: int) -> dict:
    """What the Item view's verdict panel shows of one item, from one read (``lib.store.read_once``): ``history`` (as
    ``history`` returns it for the item's sample shown, every author) and ``latest`` (``author``'s current verdicts
    on every sample of the item, as ``latest`` returns them)."""
    item = dict(bench=bench, question_id=question_id, turn=turn, model=model)
    where, params = _filters(**item)
    hist_where, hist_params = _filters(**item, sample=sample)
    mine_where, mine_params = _filters(author=author, **item)
    return read_once(store, "human_verdicts", where, params, empty=no_verdicts_known(store), views=lambda con: {
        "history": _history_frame(plain_frame(con.execute(_history_sql(hist_where), hist_params))),
        "latest": plain_frame(con.execute(_latest_sql(mine_where), mine_params))})


def describe(verdict) -> str:
    """A current verdict in words, e.g. "score 7, label 'both wrong', a note" ("nothing" when all are empty)."""
    if verdict is None:
        return "nothing"
    score, label, note = (_plain(verdict[k]) for k in ("score", "label", "note"))
    parts = ([f"score {score:g}"] if score is not None else []) + ([f"label {label!r}"] if label else []) + \
        (["a note"] if note else [])
    return ", ".join(parts) or "nothing"


AUTHORS_SQL = "SELECT DISTINCT author FROM human_verdicts ORDER BY 1"


def authors(store: Store) -> list[str]:
    with store.read() as cur:
        return [r[0] for r in cur.execute(AUTHORS_SQL).fetchall()]


def review_queue(store: Store, author: str, *, bench: str, judges: list[str] | None = None,
                 n: int = 20) -> pd.DataFrame:
    """The n largest disagreements among the (non-human) judges on this bench, in order, each with whether this
    author has decided it: their current verdict on any sample of the item has a score or a label (the queue ranks
    items, not samples; see the module docstring). Columns: rank, bench, question_id, model, turn, category,
    spread, one score column per judge, decided."""
    from lib.analysis.agreement import disagreements

    if judges is None:  # the judges every page preselects (lib.analysis.coverage): no partial re-judge, no analyst
        from lib.analysis import coverage

        cover = coverage.judge_items(store, bench)
        judges = coverage.default_judges(cover.loc[cover["items"] > 0, "judge"], cover, len(cover))
    if len(judges) < 2:
        return pd.DataFrame(columns=["rank", "bench", "question_id", "model", "turn", "category", "spread",
                                     "decided"])
    top = disagreements(store, judges, bench=bench, limit=n)
    done = set()
    if not no_verdicts_known(store):
        decided = frame(store, f"SELECT DISTINCT bench, question_id, turn, model "
                             f"FROM ({current_verdicts_sql('WHERE author = $a AND bench = $b')}) "
                             "WHERE score IS NOT NULL OR label IS NOT NULL", {"a": author, "b": bench}, plain=True)
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
    """Every verdict row (history included, so the current verdicts follow on import), oldest first, as the JSON
    objects export_jsonl writes. ``cleared`` is written only when a row clears something."""
    return _records(history(store, author=author))


def _records(hist: pd.DataFrame) -> list[dict]:
    """``history`` rows (newest first) as export records, oldest first."""
    df = hist.iloc[::-1]
    out = []
    for r in df.itertuples(index=False):
        sample, score = _plain(r.sample), _plain(r.score)
        record = {EXPORT_MARK: 1, "author": r.author,
                  "created_at": pd.Timestamp(r.created_at).isoformat(timespec="microseconds"),
                  "bench": r.bench, "question_id": r.question_id, "turn": int(r.turn), "model": r.model,
                  "sample": None if sample is None else int(sample), "score": None if score is None else float(score),
                  "label": _plain(r.label), "note": _plain(r.note)}
        if r.cleared is not None and len(r.cleared):
            record["cleared"] = [str(f) for f in r.cleared]
        out.append(record)
    return out


def export_jsonl(store: Store, path: str | Path, author: str | None = None) -> int:
    records = export_records(store, author)
    Path(path).write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return len(records)


def inspect_scores(store: Store, *, author: str, bench: str, model: str, turn: int | None = None) -> list[dict]:
    """The author's current scores on one bench and model as records of Inspect AI's ``precomputed_scores()`` scorer
    (inspect_ai PR #4599: JSON Lines of ``id``, ``value`` and optionally ``epoch``, ``answer``, ``explanation``,
    ``metadata``; a record without ``epoch`` applies to every epoch), so ``inspect score LOG --scorer
    precomputed_scores`` puts them into the log. ``id`` is the question id (a number when it is one), ``epoch`` the
    sample + 1 when the verdicts name more than one sample; label and note become the explanation. An Inspect sample
    is one question: a bench with verdicts on several turns needs ``turn``."""
    from lib.errors import UsageError

    where = "WHERE author = $a AND bench = $b AND model = $m" + (" AND turn = $t" if turn is not None else "")
    params = {"a": author, "b": bench, "m": model, **({"t": turn} if turn is not None else {})}
    df = frame(store, f"SELECT question_id, turn, sample, score, label, note FROM ({current_verdicts_sql(where)}) "
                      "WHERE score IS NOT NULL ORDER BY question_id, turn, sample", params)
    turns = sorted({int(t) for t in df["turn"]})
    if len(turns) > 1:
        raise UsageError(f"{author}'s verdicts on {bench} / {model} cover turns {turns}; an Inspect sample is one "
                         "question: give --turn")
    epochs = df["sample"].nunique() > 1
    out = []
    for r in df.itertuples(index=False):
        label, note = _plain(r.label), _plain(r.note)
        record = {"id": int(r.question_id) if str(r.question_id).isdigit() else r.question_id,
                  "value": float(r.score)}
        if epochs:
            record["epoch"] = int(r.sample) + 1
        explanation = ": ".join(t for t in (label, note) if t)
        if explanation:
            record["explanation"] = explanation
        record["metadata"] = {"judgelens": {"author": author, "bench": bench, "model": model,
                                            "question_id": r.question_id, "turn": int(r.turn),
                                            "sample": int(r.sample)}}
        out.append(record)
    return out


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
    return frame(store, f"SELECT bench, question_id, turn, model_a, model_b, winner, judge, judge_type "
                      f"FROM human_pair_votes {where} ORDER BY source_id, question_id, turn", params, plain=True)


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
