"""Linked benches: the same question in two benches (the JA harness's ``ja_mt_bench`` and Swallow's
``japanese_mt_bench``, a fork's re-translation, ...).

``link_benches(store, a, b)`` links the current questions of two benches, one link per question:

1. ``exact``: the same text after Unicode NFKC and whitespace normalisation (runs of whitespace -> one
   space, ends stripped), turn by turn, all turns;
2. ``edited``: the same question id (``"7"``, ``7`` and ``"007"`` are one id), the same category when both
   benches record one, and similar text (similarity >= ``EDITED_MIN``);
3. ``fuzzy``: otherwise the best remaining match by rapidfuzz ``fuzz.ratio`` over all turns, if
   similarity >= ``FUZZY_MIN`` (each question taken once; highest similarities first).

``similarity`` is rapidfuzz's normalised Indel similarity (0-1) of the normalised turns joined by a newline;
``edited_turns`` lists the turns whose normalised text differs (``link_diff`` gives a character diff).
Links made by the user (``manual``) are never overwritten (re-linking leaves both questions alone), and a
link the user removed (a ``removed`` mark) is never made again.
"""
from __future__ import annotations

import re
import unicodedata
from itertools import combinations

import numpy as np
import pandas as pd
from rapidfuzz import fuzz, process

from lib.errors import UsageError
from lib.store import Store
from lib.vocab import QID_ORDER, qid_order

EDITED_MIN = 0.35
FUZZY_MIN = 0.6
AUTO_METHODS = ("exact", "edited", "fuzzy")
LINK_COLUMNS = ["bench_a", "question_id_a", "bench_b", "question_id_b", "method", "similarity", "edited_turns"]
_WS = re.compile(r"\s+")


def normalize(text: str | None) -> str:
    return _WS.sub(" ", unicodedata.normalize("NFKC", text or "")).strip()


def id_key(qid) -> str:
    """Question ids compare as text, with numeric ids read as numbers ("007" == "7")."""
    text = str(qid).strip()
    return str(int(text)) if text.lstrip("-").isdigit() else text


def _questions(store: Store, bench: str) -> list[tuple[str, str | None, list[str]]]:
    with store.read() as cur:
        rows = cur.execute("SELECT question_id, category, turns FROM current_questions WHERE bench = ? "
                           f"ORDER BY {QID_ORDER}", [bench]).fetchall()
    return [(q, c, [normalize(t) for t in (turns or [])]) for q, c, turns in rows]


def benches_with_questions(store: Store) -> list[str]:
    with store.read() as cur:
        return [r[0] for r in cur.execute("SELECT DISTINCT bench FROM current_questions ORDER BY bench").fetchall()]


def _ordered(bench_a: str, bench_b: str) -> bool:
    """True when (bench_a, bench_b) is the stored orientation."""
    return bench_a <= bench_b


def _edited_turns(ta: list[str], tb: list[str]) -> list[int]:
    n = max(len(ta), len(tb))
    return [i + 1 for i in range(n) if (ta[i] if i < len(ta) else None) != (tb[i] if i < len(tb) else None)]


def _similarity(ta: list[str], tb: list[str]) -> float:
    return fuzz.ratio("\n".join(ta), "\n".join(tb)) / 100.0


def compute_links(qa: list[tuple], qb: list[tuple], *, skip_a: set = frozenset(), skip_b: set = frozenset(),
                  forbidden: set = frozenset(), edited_min: float = EDITED_MIN,
                  fuzzy_min: float = FUZZY_MIN) -> list[tuple]:
    """Pure matching: (qid_a, qid_b, method, similarity, edited_turns) for questions (qid, category, turns).
    ``skip_a``/``skip_b``: question ids linked by hand; ``forbidden``: (qid_a, qid_b) pairs the user unlinked."""
    a_left = {q: (c, t) for q, c, t in qa if q not in skip_a}
    b_left = {q: (c, t) for q, c, t in qb if q not in skip_b}
    out = []
    # 1. exact: equal normalised turns (a same-id match preferred when several B questions are equal)
    by_text: dict[tuple, list[str]] = {}
    for q, (c, t) in b_left.items():
        by_text.setdefault(tuple(t), []).append(q)
    for q, (c, t) in list(a_left.items()):
        cands = [x for x in by_text.get(tuple(t), []) if x in b_left and (q, x) not in forbidden]
        if not cands:
            continue
        same = [x for x in cands if id_key(x) == id_key(q)]
        qb_ = (same or cands)[0]
        out.append((q, qb_, "exact", 1.0, []))
        del a_left[q], b_left[qb_]
    # 2. edited: same id, compatible category, similar text
    b_by_id = {id_key(q): q for q in b_left}
    for q, (c, t) in list(a_left.items()):
        qb_ = b_by_id.get(id_key(q))
        if qb_ is None or qb_ not in b_left or (q, qb_) in forbidden:
            continue
        cb, tb = b_left[qb_]
        if c and cb and c != cb:
            continue
        sim = _similarity(t, tb)
        if sim >= edited_min:
            out.append((q, qb_, "edited", round(sim, 6), _edited_turns(t, tb)))
            del a_left[q], b_left[qb_]
    # 3. fuzzy: best remaining match above the threshold, highest first, each question once
    if a_left and b_left:
        ids_a, ids_b = list(a_left), list(b_left)
        texts_a = ["\n".join(a_left[q][1]) for q in ids_a]
        texts_b = ["\n".join(b_left[q][1]) for q in ids_b]
        scores = process.cdist(texts_a, texts_b, scorer=fuzz.ratio, dtype=np.float32,
                               score_cutoff=fuzzy_min * 100, workers=1)
        ii, jj = np.nonzero(scores >= fuzzy_min * 100)
        order = np.lexsort((jj, ii, -scores[ii, jj]))
        used_a, used_b = set(), set()
        for k in order:
            i, j = int(ii[k]), int(jj[k])
            if i in used_a or j in used_b or (ids_a[i], ids_b[j]) in forbidden:
                continue
            used_a.add(i)
            used_b.add(j)
            ta, tb = a_left[ids_a[i]][1], b_left[ids_b[j]][1]
            out.append((ids_a[i], ids_b[j], "fuzzy", round(float(scores[i, j]) / 100, 6), _edited_turns(ta, tb)))
    return out


def link_benches(store: Store, bench_a: str, bench_b: str, *, edited_min: float = EDITED_MIN,
                 fuzzy_min: float = FUZZY_MIN) -> dict[str, int]:
    """(Re)compute the automatic links between two benches. Returns counts per method."""
    if bench_a == bench_b:
        raise UsageError("Link two different benches (a bench's questions are already the same questions).")
    if not _ordered(bench_a, bench_b):
        bench_a, bench_b = bench_b, bench_a
    qa, qb = _questions(store, bench_a), _questions(store, bench_b)
    with store.read() as cur:
        kept = cur.execute("""SELECT question_id_a, question_id_b, method FROM question_links
                              WHERE bench_a = ? AND bench_b = ? AND method IN ('manual', 'removed')""",
                           [bench_a, bench_b]).fetchall()
    links = compute_links(qa, qb, skip_a={a for a, _, m in kept if m == "manual"},
                          skip_b={b for _, b, m in kept if m == "manual"},
                          forbidden={(a, b) for a, b, m in kept if m == "removed"},
                          edited_min=edited_min, fuzzy_min=fuzzy_min)

    def write(cur) -> None:  # Store.transaction: may run again on a DuckLake store
        cur.execute("DELETE FROM question_links WHERE bench_a = ? AND bench_b = ? AND method IN ('exact', 'edited', "
                    "'fuzzy')", [bench_a, bench_b])
        if links:
            frame = pd.DataFrame(links, columns=["question_id_a", "question_id_b", "method", "similarity",
                                                 "edited_turns"])
            frame.insert(0, "bench_a", bench_a)
            frame.insert(2, "bench_b", bench_b)
            cur.register("_links", frame)
            try:
                cur.execute("""INSERT INTO question_links (bench_a, question_id_a, bench_b, question_id_b, method,
                                   similarity, edited_turns)
                               SELECT bench_a, question_id_a, bench_b, question_id_b, method, similarity,
                                      edited_turns::INTEGER[] FROM _links""")
            finally:
                cur.unregister("_links")

    store.transaction(write)
    counts = {m: 0 for m in AUTO_METHODS}
    for link in links:
        counts[link[2]] += 1
    return counts


def auto_link_all(store: Store) -> dict[tuple[str, str], dict[str, int]]:
    """Link every pair of benches that have questions (after an import)."""
    return {(a, b): link_benches(store, a, b) for a, b in combinations(benches_with_questions(store), 2)}


def links(store: Store, bench_a: str, bench_b: str, *, include_removed: bool = False) -> pd.DataFrame:
    """The links between two benches, oriented as asked (``bench_a`` columns are ``bench_a``'s)."""
    return links_both_ways(store, bench_a, bench_b, include_removed=include_removed)[(bench_a, bench_b)]


def links_both_ways(store: Store, bench_a: str, bench_b: str, *,
                    include_removed: bool = False) -> dict[tuple[str, str], pd.DataFrame]:
    """``links`` of two benches in both orientations, ``{(bench_a, bench_b): ..., (bench_b, bench_a): ...}``, from
    one read (the links are stored once per pair; the other orientation is the same rows turned round)."""
    lo, hi = (bench_a, bench_b) if _ordered(bench_a, bench_b) else (bench_b, bench_a)
    with store.read() as cur:
        stored = cur.execute(f"""
            SELECT bench_a, question_id_a, bench_b, question_id_b, method, similarity, edited_turns
            FROM question_links WHERE bench_a = ? AND bench_b = ? {'' if include_removed else "AND method <> 'removed'"}
            ORDER BY {qid_order(column='question_id_a')}""", [lo, hi]).df()
    turned = stored.rename(columns={"bench_a": "bench_b", "question_id_a": "question_id_b", "bench_b": "bench_a",
                                    "question_id_b": "question_id_a"})[LINK_COLUMNS]
    turned = turned.sort_values("question_id_a", key=lambda s: pd.to_numeric(s, errors="coerce")).reset_index(drop=True)
    out = {}
    for pair, df in (((hi, lo), turned), ((lo, hi), stored.copy())):  # one bench with itself: as stored
        df["edited_turns"] = df["edited_turns"].map(lambda v: [int(x) for x in v] if v is not None else [])
        out[pair] = df[LINK_COLUMNS]
    return out


def link_map(store: Store, bench_a: str, bench_b: str, *, methods=("exact", "edited", "fuzzy", "manual")) -> dict:
    """question_id in ``bench_a`` -> (question_id in ``bench_b``, method). The identity within one bench."""
    if bench_a == bench_b:
        with store.read() as cur:
            return {q: (q, "same") for (q,) in cur.execute(
                "SELECT DISTINCT question_id FROM current_questions WHERE bench = ?", [bench_a]).fetchall()}
    return map_of(links(store, bench_a, bench_b), methods)


def map_of(df: pd.DataFrame, methods=("exact", "edited", "fuzzy", "manual")) -> dict:
    """``link_map`` of a ``links`` frame already read."""
    df = df[df["method"].isin(methods)]
    return {a: (b, m) for a, b, m in zip(df["question_id_a"], df["question_id_b"], df["method"])}


def parse_ref(text: str) -> tuple[str, str]:
    """``BENCH:QID`` -> (bench, qid). The question id is after the last colon."""
    bench, sep, qid = (text or "").rpartition(":")
    if not sep or not bench or not qid:
        raise UsageError(f"{text!r}: name a question as BENCH:QUESTION_ID, e.g. ja_mt_bench:1")
    return bench, qid


def _question_turns(store: Store, bench: str, qid: str) -> list[str]:
    with store.read() as cur:
        row = cur.execute("SELECT turns FROM current_questions WHERE bench = ? AND question_id = ?",
                          [bench, qid]).fetchone()
        if row is None:  # the user may write 7 for "07" or the like
            for q, turns in cur.execute("SELECT question_id, turns FROM current_questions WHERE bench = ?",
                                        [bench]).fetchall():
                if id_key(q) == id_key(qid):
                    return [q, *turns]
            raise UsageError(f"No question {qid!r} in bench {bench!r}.")
    return [qid, *row[0]]


def set_link(store: Store, a: str, b: str) -> dict:
    """Link BENCH_A:QID to BENCH_B:QID by hand (replacing any link either question had to the other bench)."""
    (ba, qa), (bb, qb) = parse_ref(a), parse_ref(b)
    if ba == bb:
        raise UsageError("A link joins questions of two different benches.")
    qa, *ta = _question_turns(store, ba, qa)
    qb, *tb = _question_turns(store, bb, qb)
    if not _ordered(ba, bb):
        (ba, qa, ta), (bb, qb, tb) = (bb, qb, tb), (ba, qa, ta)
    ta, tb = [normalize(t) for t in ta], [normalize(t) for t in tb]
    sim, edited = round(_similarity(ta, tb), 6), _edited_turns(ta, tb)
    def write(cur) -> None:
        cur.execute("DELETE FROM question_links WHERE bench_a = ? AND bench_b = ? AND (question_id_a = ? OR "
                    "question_id_b = ?)", [ba, bb, qa, qb])
        cur.execute("""INSERT INTO question_links (bench_a, question_id_a, bench_b, question_id_b, method, similarity,
                           edited_turns) VALUES (?, ?, ?, ?, 'manual', ?, ?)""", [ba, qa, bb, qb, sim, edited])

    store.transaction(write)
    return {"bench_a": ba, "question_id_a": qa, "bench_b": bb, "question_id_b": qb, "method": "manual",
            "similarity": sim, "edited_turns": edited}


def remove_link(store: Store, a: str, b: str) -> bool:
    """Remove the link between two questions; auto-linking will not make it again. False if none existed."""
    (ba, qa), (bb, qb) = parse_ref(a), parse_ref(b)
    if not _ordered(ba, bb):
        ba, qa, bb, qb = bb, qb, ba, qa
    def write(cur) -> bool:
        found = cur.execute("""SELECT 1 FROM question_links WHERE bench_a = ? AND question_id_a = ? AND bench_b = ?
                               AND question_id_b = ? AND method <> 'removed'""", [ba, qa, bb, qb]).fetchone()
        if not found:
            return False
        cur.execute("DELETE FROM question_links WHERE bench_a = ? AND bench_b = ? AND question_id_a = ? AND "
                    "question_id_b = ?", [ba, bb, qa, qb])
        cur.execute("""INSERT INTO question_links (bench_a, question_id_a, bench_b, question_id_b, method, similarity,
                           edited_turns) VALUES (?, ?, ?, ?, 'removed', NULL, [])""", [ba, qa, bb, qb])
        return True

    return store.transaction(write)


def link_diff(store: Store, bench_a: str, qid_a: str, bench_b: str, qid_b: str) -> list[dict]:
    """Per turn: both texts and the character diff (``lib.render.textdiff.char_diff`` ops) of the raw turns."""
    from lib.render.textdiff import char_diff, diff_stats

    _, *ta = _question_turns(store, bench_a, qid_a)
    _, *tb = _question_turns(store, bench_b, qid_b)
    out = []
    for i in range(max(len(ta), len(tb))):
        a = ta[i] if i < len(ta) else ""
        b = tb[i] if i < len(tb) else ""
        ops = char_diff(a, b)
        out.append({"turn": i + 1, "a": a, "b": b, "same": normalize(a) == normalize(b), "ops": ops,
                    "similarity": diff_stats(ops)["similarity"]})
    return out


def link_summary(store: Store, bench_a: str, bench_b: str) -> dict[str, int]:
    """How many questions each method linked (and how many of each bench stayed unlinked)."""
    df = links(store, bench_a, bench_b)
    with store.read() as cur:
        n = dict(cur.execute("SELECT bench, count(*) FROM current_questions WHERE bench IN (?, ?) GROUP BY bench",
                             [bench_a, bench_b]).fetchall())
    return summary_of(df, int(n.get(bench_a, 0)), int(n.get(bench_b, 0)))


def summary_of(df: pd.DataFrame, questions_a: int, questions_b: int) -> dict[str, int]:
    """``link_summary`` of a ``links`` frame already read and the two benches' question counts."""
    counts = df["method"].value_counts().to_dict()
    return {"linked": len(df), **{m: int(counts.get(m, 0)) for m in (*AUTO_METHODS, "manual")},
            "questions_a": questions_a, "questions_b": questions_b}


def links_version(store: Store) -> tuple:
    """Changes whenever a link or an alias changes: part of the cache key of cross-bench queries. Empty on a DuckLake
    store: there every write moves ``Store.data_version`` (its write clock), links and aliases included, so a page's
    rerun does not read two more tables (a catalog round each)."""
    if store.lake:
        return ()
    with store.read() as cur:
        return tuple(cur.execute(
            """SELECT (SELECT count(*) FROM question_links), (SELECT max(created_at)::VARCHAR FROM question_links),
                      (SELECT count(*) FROM model_aliases), (SELECT max(created_at)::VARCHAR FROM model_aliases),
                      (SELECT string_agg(method, '' ORDER BY name) FROM model_aliases)""").fetchone())
