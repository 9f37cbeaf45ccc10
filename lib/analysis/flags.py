"""Flags on stored data: judgments worth a second look, found without calling any judge.

Every flag returns a DataFrame with one row per flagged judgment (or item), always with the columns
``flag, harness, bench, question_id, model, turn, judge, prompt_name, sample, score, evidence, link``
(``score`` is on the common 1-10 scale; ``link`` opens the item view on that item, judge column and
sample: ``lib.analysis.item_view.link``) plus the flag's own evidence columns. Each flag is one SQL query over
keys and scores first; text is read only for the rows that query returns, except where the flag is
about the text itself (the reference-leak flag, below).

Flags (``FLAGS`` lists them with one-line descriptions; ``all_flags`` runs them all):

``empty_high`` — ``empty_high_scores``
    An empty or near-empty answer that received a high score. The answer's *visible* text is what is
    left after removing ``<think>`` blocks (an unclosed ``<think>`` runs to the end, as the item view
    shows it) and surrounding whitespace; "near-empty" is at most ``NEAR_EMPTY_CHARS`` (5) characters
    (answers over 256 bytes are considered only if they contain ``<think>`` or start with whitespace);
    "high" is a score of at least ``HIGH_SCORE`` (6 on 1-10, i.e. above the scale's midpoint 5.5).
    ``reason`` says which: empty, whitespace only, only reasoning (an unclosed ``<think>`` block and no
    final answer) or "N characters". ``summarize(df)`` counts them per judge and template.
``reference_leak`` — ``reference_leaks``
    A rationale that quotes the reference answer much more than the answer it grades: the judge may
    be grading (or copying) the reference instead of the answer, or confusing the two (the "empty
    prediction scored 5" bug). Texts are compared as **character 8-grams** (``NGRAM``; Japanese has
    no spaces, so words would not work): ``ref_share`` is the share of the rationale's 8-grams that
    occur in the reference but not in the answer, ``answer_share`` the share that occur in the answer
    but not in the reference (8-grams in both are ambiguous and count for neither). Flagged when
    ``ref_share >= LEAK_MIN_SHARE`` (0.25: a quarter of the rationale is verbatim reference text) and
    ``ref_share >= LEAK_FACTOR * answer_share`` (3x). Only judgments whose stored judge prompt contains
    the reference's first 40 characters (raw, or JSON-escaped for prompts stored as message lists), or
    that have no stored prompt, are compared, against the judged turn's reference and answer. ``ref_spans`` / ``answer_spans`` are ``[start, end)`` character spans in the rationale
    (merged runs of matching 8-grams) for highlighting; ``reference_overlap()`` computes all this for
    any three texts. Cost: a reference's 8-grams are built once; each rationale is first screened on
    every 8th 8-gram (~0.1 µs per character), and only those whose sampled reference share reaches
    half the threshold are compared exactly (answer 8-grams built only for them).
``single_bracket`` — ``single_bracket_ratings``
    The rating was read by FastChat's backup pattern ``[N]`` because the output has no ``[[N]]``.
    ``looks_like`` is ``rating`` when the match follows a rating label (``Rating:``, ``Score:``,
    ``評価``) and ``list marker or citation`` otherwise (then ``suspicious`` is true: e.g. a "[1]" list
    marker read as the score). ``match_span`` is the match's ``[start, end)`` in the rationale.
    Re-judged rows (harness ``judgelens``) are checked with their template's own parser.
``out_of_range`` — ``out_of_range_ratings``
    A rating outside the 1-10 scale (kept as ``raw_score``, left out of means).
``swallow_turn2_conditioning`` — ``swallow_turn2_conditioning``
    Swallow generates all 5 turn-2 samples after **sample 0's** turn-1 answer, but its judge sees each
    sample's own turn-1 answer next to its turn-2 answer. Where a sample's turn-1 answer differs from
    sample 0's (every category with temperature > 0), the judged conversation is one the model never
    had. One row per judged turn-2 item; ``samples`` lists the affected samples (``sample`` is the
    first of them, for the link).
``swallow_truncation`` — ``swallow_truncation``
    The answer is exactly as long as the harness's limit (``answers.max_chars``, Swallow: 8,192
    characters): it was cut there, and the judge graded the cut text. ``truncated_turn`` is the turn
    whose answer was cut: the judged turn, or turn 1 shown in a turn-2 (multi-turn) judge prompt.

No flag calls an API or writes anything. Timing on a synthetic store of 1M judgments (warm): empty_high
0.4 s, reference_leak 1.2 s with no candidates and ~2.7 s with 100k judgments shown a reference, the others under
0.05 s (single_bracket reads only the rows flagged at import: ``single_judgments.single_bracket``).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass

import pandas as pd

from lib import harness as H
from lib.analysis.item_view import link, link_params
from lib.store import Store, frame, row_id_sql, same_row_sql
from lib.errors import UsageError
from lib.vocab import (DOUBLE_BRACKET_RE, FASTCHAT_CHAIN_KINDS, MODEL_KEY_SQL as MK, QID_ORDER, SINGLE_BRACKET_RE,
                       THINK_SQL, fastchat_rating, model_key, qid_order)

NEAR_EMPTY_CHARS = 5
HIGH_SCORE = 6.0
NGRAM = 8
LEAK_MIN_SHARE = 0.25
LEAK_FACTOR = 3.0
SCREEN_MARGIN = 0.5         # the screen keeps rationales whose sampled reference share is >= half the threshold
SNIPPET_CHARS = 40          # the reference's first characters, searched for in the stored judge prompt
CONTEXT_CHARS = 40          # characters shown either side of a match in the evidence

WHITESPACE = " \t\n\r\x0b\x0c\u3000"
_RATING_LABEL = re.compile(r"(rating|score|評価|点数|スコア)\s*[:：]?\s*$", re.IGNORECASE)
_SINGLE = SINGLE_BRACKET_RE
_DOUBLE = DOUBLE_BRACKET_RE

BASE_COLUMNS = ["flag", "harness", "bench", "question_id", "model", "turn", "judge", "prompt_name", "sample",
                "score", "evidence", "link"]

FLAGS: dict[str, str] = {
    "empty_high": "empty or near-empty answers (visible text, <think> removed) that received a high score",
    "reference_leak": "rationales that quote the reference much more than the answer (reference leak / role confusion)",
    "single_bracket": "ratings found only by FastChat's single-bracket fallback [N] "
                      "(a list marker can be read as the score)",
    "out_of_range": "ratings outside the 1-10 scale",
    "swallow_turn2_conditioning": "Swallow turn-2 samples generated after sample 0's turn-1 answer but judged "
                                  "next to their own turn-1 answer",
    "swallow_truncation": "answers cut at the harness's character limit (Swallow: 8,192) that the judge graded",
}


# ------------------------------------------------------------------------------------------------
# Helpers

def _filters(bench: str | None, judge: str | None, alias: str = "j") -> tuple[str, dict]:
    conditions, params = [], {}
    if bench is not None:
        conditions.append(f"{alias}.bench = $bench")
        params["bench"] = bench
    if judge is not None:
        conditions.append(f"{alias}.judge = $judge")
        params["judge"] = judge
    return "".join(f" AND {c}" for c in conditions), params


def item_link(harness: str, bench: str, question_id: str, turn: int, model: str, judge: str | None,
              sample: int | None = None) -> str:
    """The item view on this item, with this judge's column (and this sample, when not 0)."""
    params = link_params(bench, str(question_id), int(turn), model, [judge] if judge else None, harness=harness)
    if sample is not None and int(sample) != 0:
        params["sample"] = str(int(sample))
    return link(params)


def _finish(df: pd.DataFrame, flag: str, extra: list[str]) -> pd.DataFrame:
    """Add flag and link columns and order the columns: the base ones, then the flag's own."""
    if df.empty:
        return pd.DataFrame(columns=BASE_COLUMNS + extra)
    df = df.copy()
    df["flag"] = flag
    df["turn"] = df["turn"].astype(int)
    df["sample"] = df["sample"].astype(int)
    df["link"] = [item_link(h, b, q, t, m, j, s) for h, b, q, t, m, j, s in
                  zip(df["harness"], df["bench"], df["question_id"], df["turn"], df["model"], df["judge"],
                      df["sample"])]
    return df[BASE_COLUMNS + extra].reset_index(drop=True)


def _excerpt(text: str, start: int, end: int, around: int = CONTEXT_CHARS) -> str:
    a, b = max(0, start - around), min(len(text), end + around)
    return ("…" if a > 0 else "") + text[a:b].replace("\n", " ⏎ ") + ("…" if b < len(text) else "")


def _short(text: str | None, n: int = 60) -> str:
    text = (text or "").replace("\n", " ⏎ ")
    return text if len(text) <= n else text[:n] + "…"


def summarize(df: pd.DataFrame, by: tuple[str, ...] = ("harness", "judge", "prompt_name")) -> pd.DataFrame:
    """How many rows a flag found per group (default: per judge and template), largest first."""
    if df.empty:
        return pd.DataFrame(columns=[*by, "n"])
    return (df.groupby(list(by), dropna=False).size().reset_index(name="n")
            .sort_values(["n", *by], ascending=[False, *[True] * len(by)]).reset_index(drop=True))


# ------------------------------------------------------------------------------------------------
# Empty or near-empty answers with a high score

def empty_high_scores(store: Store, *, bench: str | None = None, judge: str | None = None,
                      max_chars: int = NEAR_EMPTY_CHARS, min_score: float = HIGH_SCORE) -> pd.DataFrame:
    """Judgments scoring at least ``min_score`` (1-10) an answer whose visible text has at most
    ``max_chars`` characters. Extra columns: visible_chars, answer_chars, reason, answer_excerpt."""
    where, params = _filters(bench, judge)
    params.update(n=int(max_chars), min_score=float(min_score), think=THINK_SQL, ws=WHITESPACE,
                  ws_start=r"^[\s\x{3000}]")
    sql = f"""
        WITH j AS (   -- keys and scores first
            SELECT {row_id_sql(name='rid')}, harness, bench, judge, prompt_name, model, question_id, turn, sample,
                   score
            FROM single_judgments j
            WHERE parse_status = 'ok' AND score >= $min_score{where}),
        near AS (     -- answers that can be near-empty: short, or with a <think> block to remove
            SELECT a.bench, a.question_id, a.turn, a.sample, a.source_id,
                   {MK.format('a.model')} AS k1, {MK.format("coalesce(a.model_id, '')")} AS k2,
                   {MK.format("coalesce(a.file_model, '')")} AS k3, a.text
            FROM answers a
            WHERE (a.text IS NULL OR contains(a.text, '<think>')   -- cheap tests: byte length, first character
                   OR (strlen(a.text) <= 256 AND length(trim(a.text, $ws)) <= $n)
                   OR regexp_matches(a.text, $ws_start))
              AND NOT EXISTS (SELECT 1 FROM answers b    -- a newer import of the same answer wins
                              WHERE b.bench = a.bench AND b.question_id = a.question_id AND b.turn = a.turn
                                AND b.sample = a.sample AND b.source_id > a.source_id
                                AND {MK.format('b.model')} = {MK.format('a.model')})),
        vis AS (
            SELECT *, length(coalesce(text, '')) AS answer_chars,
                   trim(regexp_replace(coalesce(text, ''), $think, '', 'g'), $ws) AS visible
            FROM near)
        SELECT j.* EXCLUDE (rid, rid_source), length(v.visible) AS visible_chars, v.answer_chars, v.visible,
               contains(coalesce(v.text, ''), '<think>') AS has_think, left(v.text, 200) AS answer_head
        FROM j JOIN vis v
          ON v.bench = j.bench AND v.question_id = j.question_id AND v.turn = j.turn AND v.sample = j.sample
         AND {MK.format('j.model')} IN (v.k1, v.k2, v.k3)
        WHERE length(v.visible) <= $n
        QUALIFY row_number() OVER (PARTITION BY j.rid, j.rid_source ORDER BY v.source_id DESC) = 1  -- an answer each
        ORDER BY j.bench, j.judge, j.model, {qid_order('j')}, j.turn,
                 j.sample"""
    df = frame(store, sql, params, plain=True)
    if df.empty:
        return _finish(df, "empty_high", ["visible_chars", "answer_chars", "reason", "answer_excerpt"])
    reasons, evidence = [], []
    for vis, n_all, think, score in zip(df["visible"], df["answer_chars"], df["has_think"], df["score"]):
        if n_all == 0:
            reason = "empty"
        elif not vis and think:
            reason = "only reasoning: a <think> block and no final answer"
        elif not vis:
            reason = "whitespace only"
        else:
            reason = f"{len(vis)} visible character(s)"
        reasons.append(reason)
        shown = f"visible answer {vis!r}" if vis else "no visible answer"
        evidence.append(f"scored {score:g}/10; {reason} ({shown}; stored text {n_all:,} characters)")
    df["reason"] = reasons
    df["evidence"] = evidence
    df["answer_excerpt"] = [_short(t, 120) for t in df["answer_head"]]
    return _finish(df, "empty_high", ["visible_chars", "answer_chars", "reason", "answer_excerpt"])


# ------------------------------------------------------------------------------------------------
# Reference leak / role confusion

@dataclass(frozen=True)
class Overlap:
    """How much of a rationale is verbatim reference text versus verbatim answer text."""

    grams: int                          # character n-grams in the rationale
    ref_share: float                    # share of them found in the reference but not in the answer
    answer_share: float                 # share found in the answer but not in the reference
    ref_spans: list[tuple[int, int]]    # [start, end) spans of the rationale quoting the reference only
    answer_spans: list[tuple[int, int]]  # [start, end) spans quoting the answer only

    @property
    def leak(self) -> bool:
        return is_leak(self.ref_share, self.answer_share)


def is_leak(ref_share: float, answer_share: float) -> bool:
    """The documented threshold: ref_share >= LEAK_MIN_SHARE and ref_share >= LEAK_FACTOR x answer_share."""
    return ref_share >= LEAK_MIN_SHARE and ref_share >= LEAK_FACTOR * answer_share


def ngrams(text: str | None, n: int = NGRAM) -> set[str]:
    text = text or ""
    return {text[i:i + n] for i in range(len(text) - n + 1)}


def _spans(hits: list[int], n: int) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for i in hits:
        if out and i <= out[-1][1]:
            out[-1][1] = max(out[-1][1], i + n)
        else:
            out.append([i, i + n])
    return [(a, b) for a, b in out]


def reference_overlap(rationale: str | None, reference: str | None, answer: str | None, *, n: int = NGRAM,
                      ref_grams: set[str] | None = None, answer_grams: set[str] | None = None) -> Overlap:
    """Character n-gram overlap of ``rationale`` with ``reference`` versus ``answer`` (see the module
    docstring). Pass precomputed ``ngrams()`` sets to skip rebuilding them."""
    rationale = rationale or ""
    rg = ref_grams if ref_grams is not None else ngrams(reference, n)
    ag = answer_grams if answer_grams is not None else ngrams(answer, n)
    grams = [rationale[i:i + n] for i in range(len(rationale) - n + 1)]
    total = len(grams)
    if total == 0:
        return Overlap(0, 0.0, 0.0, [], [])
    in_r = list(map(rg.__contains__, grams))
    in_a = list(map(ag.__contains__, grams))
    ref_hits = [i for i in range(total) if in_r[i] and not in_a[i]]
    ans_hits = [i for i in range(total) if in_a[i] and not in_r[i]]
    return Overlap(total, len(ref_hits) / total, len(ans_hits) / total, _spans(ref_hits, n), _spans(ans_hits, n))


def _snippets(text: str | None) -> tuple[str | None, str | None, str | None]:
    """The reference's first SNIPPET_CHARS characters as a stored judge prompt would hold them when the
    judge saw the reference: raw (FastChat stores the rendered text), JSON-escaped (Swallow and
    re-judged rows store the message list as JSON) and JSON-escaped ASCII."""
    text = (text or "").lstrip()
    if len(text) < 8:
        return None, None, None
    head = text[:SNIPPET_CHARS]
    return head, json.dumps(head, ensure_ascii=False)[1:-1], json.dumps(head)[1:-1]


def reference_leaks(store: Store, *, bench: str | None = None, judge: str | None = None,
                    min_share: float = LEAK_MIN_SHARE, factor: float = LEAK_FACTOR, n: int = NGRAM,
                    include_all: bool = False) -> pd.DataFrame:
    """Judgments whose rationale quotes the reference much more than the answer (see the module
    docstring for the rule). Extra columns: ref_share, answer_share, ref_spans, answer_spans,
    reference_judge, ref_quote (the longest quoted reference span). ``include_all`` returns every
    compared judgment (with a ``leak`` column) instead of only the flagged ones."""
    where, params = _filters(bench, judge)
    with store.read() as cur:
        refs = cur.execute(
            """SELECT row_number() OVER () AS ref_id, bench, judge AS reference_judge, question_id, turn, text
               FROM (SELECT DISTINCT ON (bench, judge, question_id, turn) bench, judge, question_id, turn, text
                     FROM reference_answers WHERE text IS NOT NULL AND text <> ''
                     ORDER BY bench, judge, question_id, turn, source_id DESC)""" +
            (" WHERE bench = $bench" if bench is not None else ""),
            {"bench": bench} if bench is not None else {}).df()
        extra = ["ref_share", "answer_share", "ref_spans", "answer_spans", "reference_judge", "ref_quote"]
        if include_all:
            extra.append("leak")
        if refs.empty:
            return _finish(pd.DataFrame(), "reference_leak", extra)
        snip = [_snippets(t) for t in refs["text"]]
        refs["snippet"], refs["snippet_json"], refs["snippet_ascii"] = zip(*snip) if snip else ((), (), ())
        snips = refs[["ref_id", "bench", "reference_judge", "question_id", "turn", "snippet", "snippet_json",
                      "snippet_ascii"]]
        cur.register("_jl_ref_snips", snips)
        try:  # keys first: which judgments were shown which reference (no text carried through the window)
            rows = cur.execute(f"""
                WITH m AS (
                    SELECT {row_id_sql('j', 'rid')}, r.ref_id, r.reference_judge
                    FROM single_judgments j
                    JOIN _jl_ref_snips r ON r.bench = j.bench AND r.question_id = j.question_id AND r.turn = j.turn
                    WHERE j.rationale IS NOT NULL{where}
                      AND (j.judge_prompt IS NULL OR (r.snippet IS NOT NULL AND (CASE
                           WHEN {H.sql_is("j.harness", H.where(prompt_as_text=True))}
                                THEN contains(j.judge_prompt, r.snippet)                     -- the rendered text
                           ELSE contains(j.judge_prompt, r.snippet_json)                         -- JSON messages
                                OR contains(j.judge_prompt, r.snippet_ascii) END)))
                    QUALIFY row_number() OVER (PARTITION BY {row_id_sql('j')}
                                               ORDER BY (r.reference_judge = j.judge) DESC, r.ref_id) = 1)
                SELECT j.harness, j.bench, j.judge, j.prompt_name, j.model, j.question_id, j.turn, j.sample, j.score,
                       m.ref_id, m.reference_judge, j.rationale
                FROM m JOIN single_judgments j ON {same_row_sql('j', 'm', 'rid')}
                WHERE length(j.rationale) >= {int(n)}""", params).fetchall()
        finally:
            cur.unregister("_jl_ref_snips")
        ref_text = dict(zip(refs["ref_id"], refs["text"]))
        ref_cache: dict = {}
        screened = []
        for row in rows:  # cheap screen: every n-th 8-gram of the rationale estimates its share of reference text
            rg = ref_cache.get(row[9])
            if rg is None:
                rg = ref_cache[row[9]] = ngrams(ref_text[row[9]], n)
            if not include_all:
                text = row[11]
                sampled = [text[i:i + n] for i in range(0, len(text) - n + 1, n)]
                if not sampled or sum(map(rg.__contains__, sampled)) < SCREEN_MARGIN * min_share * len(sampled):
                    continue
            screened.append(row)
        del rows
        if not screened:
            return _finish(pd.DataFrame(), "reference_leak", extra)
        wanted = pd.DataFrame([(r[1], model_key(r[4]), r[5], int(r[6]), int(r[7])) for r in screened],
                              columns=["bench", "mk", "question_id", "turn", "sample"]).drop_duplicates()
        cur.register("_jl_wanted", wanted)
        try:  # answer text only for the judgments that passed the screen
            answers = cur.execute(f"""
                SELECT w.bench, w.mk, w.question_id, w.turn, w.sample, arg_max(a.text, a.source_id) AS text
                FROM _jl_wanted w JOIN answers a
                  ON a.bench = w.bench AND a.question_id = w.question_id AND a.turn = w.turn AND a.sample = w.sample
                 AND w.mk IN ({MK.format('a.model')}, {MK.format("coalesce(a.model_id, '')")},
                              {MK.format("coalesce(a.file_model, '')")})
                GROUP BY ALL""").fetchall()
        finally:
            cur.unregister("_jl_wanted")
    answer_text = {(b, k, q, int(t), int(s)): text for b, k, q, t, s, text in answers}
    ans_cache: dict = {}
    out = []
    names = ["harness", "bench", "judge", "prompt_name", "model", "question_id", "turn", "sample", "score", "ref_id",
             "reference_judge", "rationale"]
    for row in screened:
        d = dict(zip(names, row))
        akey = (d["bench"], model_key(d["model"]), d["question_id"], int(d["turn"]), int(d["sample"]))
        ag = ans_cache.get(akey)
        if ag is None:
            ag = ans_cache[akey] = ngrams(answer_text.get(akey), n)
        ov = reference_overlap(d["rationale"], None, None, n=n, ref_grams=ref_cache[d["ref_id"]], answer_grams=ag)
        leak = ov.ref_share >= min_share and ov.ref_share >= factor * ov.answer_share
        if not (leak or include_all):
            continue
        quote = ""
        if ov.ref_spans:
            a, b = max(ov.ref_spans, key=lambda s: s[1] - s[0])
            quote = d["rationale"][a:b]
        del d["rationale"]
        d.update(ref_share=round(ov.ref_share, 4), answer_share=round(ov.answer_share, 4),
                 ref_spans=[list(s) for s in ov.ref_spans], answer_spans=[list(s) for s in ov.answer_spans],
                 ref_quote=_short(quote, 160), leak=leak,
                 evidence=(f"{ov.ref_share:.0%} of the rationale is verbatim reference text, "
                           f"{ov.answer_share:.0%} verbatim answer text"
                           + (f"; longest quote: {_short(quote, 80)!r}" if quote else "")))
        out.append(d)
    df = pd.DataFrame(out)
    if not df.empty:
        df = df.sort_values(["ref_share", "bench", "judge"], ascending=[False, True, True])
    return _finish(df, "reference_leak", extra)


# ------------------------------------------------------------------------------------------------
# Ratings from the single-bracket fallback; out-of-range ratings

def _template_parsers(store: Store, labels: list[str]) -> dict[str, dict]:
    if not labels:
        return {}
    with store.read() as cur:
        rows = cur.execute("SELECT name || '@v' || version, parser FROM templates "
                           "WHERE list_contains($l, name || '@v' || version)", {"l": labels}).fetchall()
    return {label: json.loads(parser) for label, parser in rows}


def used_fallback(text: str, spec: dict) -> bool:
    """Did this parser spec read the rating with FastChat's [N] fallback? Only the kinds that end in FastChat's
    chain have the fallback (lib.vocab.FASTCHAT_CHAIN_KINDS); what they read before the chain (ja_rating's
    評価[[N]]) is a double bracket, so the chain alone decides."""
    if spec.get("kind") not in FASTCHAT_CHAIN_KINDS:
        return False
    found = fastchat_rating(text, spec.get("take", "first"))
    return found is not None and found[0] == "single_bracket_fallback"


def single_bracket_ratings(store: Store, *, bench: str | None = None, judge: str | None = None) -> pd.DataFrame:
    """Judgments whose rating came from the single-bracket fallback ``[N]`` (no ``[[N]]`` in the
    output: the flag ``single_judgments.single_bracket`` stored at import, so only flagged rows are read). Extra columns: raw_score, parse_status, match, match_span, looks_like, suspicious,
    n_single_brackets, context."""
    where, params = _filters(bench, judge)
    df = frame(store, f"""
        SELECT harness, bench, judge, prompt_name, model, question_id, turn, sample, score, raw_score, parse_status,
               rationale
        FROM single_judgments j
        WHERE j.single_bracket AND parse_status IN ('ok', 'out_of_range'){where}
        ORDER BY bench, judge, model, {QID_ORDER}, turn, sample""", params, plain=True)
    extra = ["raw_score", "parse_status", "match", "match_span", "looks_like", "suspicious", "n_single_brackets",
             "context"]
    if df.empty:
        return _finish(df, "single_bracket", extra)
    parsers = _template_parsers(store, sorted({p for h, p in zip(df["harness"], df["prompt_name"])
                                               if H.get(h).parsed_by_template and p}))
    keep, cols = [], {k: [] for k in ("match", "match_span", "looks_like", "suspicious", "n_single_brackets",
                                      "context", "evidence")}
    for i, (harness, prompt, text, raw) in enumerate(zip(df["harness"], df["prompt_name"], df["rationale"],
                                                         df["raw_score"])):
        if H.get(harness).parsed_by_template:  # re-judged: its template's parser decides whether the fallback was used
            spec = parsers.get(prompt)
            if spec is None or not used_fallback(text, spec):
                continue
        m = _SINGLE.search(text)
        if m is None:
            continue
        label = bool(_RATING_LABEL.search(text[max(0, m.start() - 20):m.start()]))
        line_start = text.rfind("\n", 0, m.start()) + 1
        at_line_start = text[line_start:m.start()].strip() == ""
        n_single = len(_SINGLE.findall(text))
        looks = "rating" if label else "list marker or citation"
        keep.append(i)
        cols["match"].append(m.group(0))
        cols["match_span"].append([m.start(), m.end()])
        cols["looks_like"].append(looks)
        cols["suspicious"].append(not label)
        cols["n_single_brackets"].append(n_single)
        cols["context"].append(_excerpt(text, m.start(), m.end()))
        where_txt = "at the start of a line" if at_line_start else f"at character {m.start():,}"
        cols["evidence"].append(
            f"no [[N]] in the output; the fallback read {m.group(0)} {where_txt} as the rating "
            f"({'after a rating label' if label else 'not after any rating label: probably a list marker or citation'})"
            + (f"; {n_single} [N] in the text" if n_single > 1 else "")
            + (f"; raw score {raw:g}" if raw == raw else ""))
    df = df.iloc[keep].reset_index(drop=True)
    for k, v in cols.items():
        df[k] = v
    return _finish(df, "single_bracket", extra)


def out_of_range_ratings(store: Store, *, bench: str | None = None, judge: str | None = None) -> pd.DataFrame:
    """Ratings outside the 1-10 scale. Extra columns: raw_score, parse_status, match, context."""
    where, params = _filters(bench, judge)
    df = frame(store, f"""
        SELECT harness, bench, judge, prompt_name, model, question_id, turn, sample, score, raw_score, parse_status
        FROM single_judgments j
        WHERE (parse_status = 'out_of_range' OR (parse_status = 'ok' AND (score < 1 OR score > 10))){where}
        ORDER BY bench, judge, model, {QID_ORDER}, turn, sample""", params, plain=True)
    extra = ["raw_score", "parse_status", "match", "context"]
    if df.empty:
        return _finish(df, "out_of_range", extra)
    texts = _texts_for(store, df)
    matches, contexts, evidence = [], [], []
    for key, raw in zip(_keys(df), df["raw_score"]):
        text = texts.get(key) or ""
        m = None
        for pat in (_DOUBLE, _SINGLE, re.compile(r"(?i)score\s*[:：]\s*(-?\d+(?:\.\d+)?)")):
            for cand in pat.finditer(text):
                try:
                    if raw == raw and float(cand.group(1)) == float(raw):
                        m = cand
                        break
                except ValueError:
                    continue
            if m:
                break
        matches.append(m.group(0) if m else None)
        contexts.append(_excerpt(text, m.start(), m.end()) if m else _short(text[-120:], 120))
        evidence.append(f"rating {raw:g} is outside 1-10" + (f" (the judge wrote {m.group(0)})" if m else "")
                        if raw == raw else "rating outside the scale")
    df["match"], df["context"], df["evidence"] = matches, contexts, evidence
    return _finish(df, "out_of_range", extra)


_KEY_COLS = ["harness", "bench", "judge", "prompt_name", "model", "question_id", "turn", "sample"]


def _keys(df: pd.DataFrame) -> list[tuple]:
    return [tuple(r) for r in df[_KEY_COLS].itertuples(index=False, name=None)]


def _texts_for(store: Store, df: pd.DataFrame) -> dict[tuple, str]:
    """Rationales of just these judgments (text is read only for the rows a flag returns)."""
    keys = df[_KEY_COLS].drop_duplicates()
    with store.read() as cur:
        cur.register("_jl_keys", keys)
        try:
            rows = cur.execute("""
                SELECT j.harness, j.bench, j.judge, j.prompt_name, j.model, j.question_id, j.turn, j.sample,
                       any_value(j.rationale)
                FROM single_judgments j JOIN _jl_keys k
                  ON j.harness = k.harness AND j.bench = k.bench AND j.judge = k.judge
                 AND j.prompt_name IS NOT DISTINCT FROM k.prompt_name AND j.model = k.model
                 AND j.question_id = k.question_id AND j.turn = k.turn AND j.sample = k.sample
                WHERE j.parse_status <> 'ok' OR j.score < 1 OR j.score > 10
                GROUP BY ALL""").fetchall()
        finally:
            cur.unregister("_jl_keys")
    return {tuple(r[:8]): r[8] for r in rows}


# ------------------------------------------------------------------------------------------------
# Swallow: turn-2 conditioning and truncation

def swallow_turn2_conditioning(store: Store, *, bench: str | None = None, judge: str | None = None) -> pd.DataFrame:
    """Swallow turn-2 judgments whose sample's turn-1 answer is not sample 0's (the one every turn-2
    sample was generated after). One row per item; extra columns: samples, n_samples, temperature,
    scores."""
    where, params = _filters(bench, judge)
    sample0 = H.sql_is("harness", H.where(turn2_after_sample0=True))
    df = frame(store, f"""
        WITH t1 AS (
            SELECT bench, {MK.format('model')} AS mk, question_id, sample, md5(coalesce(text, '')) AS h, temperature
            FROM answers WHERE {sample0} AND turn = 1
            QUALIFY row_number() OVER (PARTITION BY bench, mk, question_id, sample ORDER BY source_id DESC) = 1),
        diff AS (
            SELECT s.bench, s.mk, s.question_id, s.sample, s.temperature
            FROM t1 s JOIN t1 z ON z.bench = s.bench AND z.mk = s.mk AND z.question_id = s.question_id
                               AND z.sample = 0
            WHERE s.sample > 0 AND s.h <> z.h)
        SELECT * FROM (
            SELECT j.harness, j.bench, j.judge, j.prompt_name, j.model, j.question_id, j.turn,
                   list(j.sample ORDER BY j.sample) AS samples, list(j.score ORDER BY j.sample) AS scores,
                   max(d.temperature) AS temperature
            FROM single_judgments j
            JOIN diff d ON d.bench = j.bench AND d.mk = {MK.format('j.model')} AND d.question_id = j.question_id
                       AND d.sample = j.sample
            WHERE {H.sql_is("j.harness", H.where(turn2_after_sample0=True))} AND j.turn = 2{where}
            GROUP BY ALL)
        ORDER BY bench, judge, model, {QID_ORDER}""", params, plain=True)
    extra = ["samples", "n_samples", "temperature", "scores"]
    if df.empty:
        return _finish(df, "swallow_turn2_conditioning", extra)
    df["samples"] = [list(map(int, s)) for s in df["samples"]]
    df["scores"] = [[None if v is None else float(v) for v in s] for s in df["scores"]]
    df["n_samples"] = [len(s) for s in df["samples"]]
    df["sample"] = [s[0] for s in df["samples"]]
    df["score"] = [next((v for v in s if v is not None), None) for s in df["scores"]]
    df["evidence"] = [
        f"turn-2 samples {', '.join(map(str, s))} were generated after sample 0's turn-1 answer "
        f"(temperature {t:g}), but the judge saw each next to its own, different turn-1 answer"
        for s, t in zip(df["samples"], df["temperature"])]
    return _finish(df, "swallow_turn2_conditioning", extra)


def swallow_truncation(store: Store, *, bench: str | None = None, judge: str | None = None) -> pd.DataFrame:
    """Judgments of answers cut at the harness's character limit (``answers.max_chars``): the judged
    turn's answer, or (turn-2 multi-turn prompts) the turn-1 answer the judge was shown. Extra
    columns: truncated_turn, answer_chars, max_chars, answer_tail."""
    where, params = _filters(bench, judge)
    df = frame(store, f"""
        WITH cut AS (
            SELECT bench, {MK.format('model')} AS mk, question_id, turn, sample, length(text) AS answer_chars,
                   max_chars, right(text, 60) AS answer_tail
            FROM answers
            WHERE max_chars IS NOT NULL AND max_chars > 0 AND length(text) >= max_chars
            QUALIFY row_number() OVER (PARTITION BY bench, mk, question_id, turn, sample ORDER BY source_id DESC) = 1)
        SELECT j.harness, j.bench, j.judge, j.prompt_name, j.model, j.question_id, j.turn, j.sample, j.score,
               c.turn AS truncated_turn, c.answer_chars, c.max_chars, c.answer_tail
        FROM single_judgments j
        JOIN cut c ON c.bench = j.bench AND c.mk = {MK.format('j.model')} AND c.question_id = j.question_id
                  AND c.sample = j.sample
                  AND (c.turn = j.turn OR (c.turn = 1 AND j.turn = 2 AND j.prompt_name LIKE '%multi-turn%'))
        WHERE TRUE{where}
        ORDER BY j.bench, j.judge, j.model, {qid_order('j')}, j.turn,
                 j.sample""", params, plain=True)
    extra = ["truncated_turn", "answer_chars", "max_chars", "answer_tail"]
    if df.empty:
        return _finish(df, "swallow_truncation", extra)
    df["answer_tail"] = [_short(t, 60) for t in df["answer_tail"]]
    df["evidence"] = [
        (f"the judged answer is {n:,} characters = the harness's limit of {m:,}: cut there"
         if tt == t else
         f"the turn-1 answer shown in this turn-2 prompt is {n:,} characters = the limit of {m:,}: cut there")
        + f"; it ends …{tail!r}"
        for n, m, tt, t, tail in zip(df["answer_chars"], df["max_chars"], df["truncated_turn"], df["turn"],
                                     df["answer_tail"])]
    return _finish(df, "swallow_truncation", extra)


# ------------------------------------------------------------------------------------------------
# All flags

FLAG_FUNCTIONS = {
    "empty_high": empty_high_scores,
    "reference_leak": reference_leaks,
    "single_bracket": single_bracket_ratings,
    "out_of_range": out_of_range_ratings,
    "swallow_turn2_conditioning": swallow_turn2_conditioning,
    "swallow_truncation": swallow_truncation,
}


def all_flags(store: Store, *, bench: str | None = None, judge: str | None = None,
              only: list[str] | None = None) -> dict[str, pd.DataFrame]:
    """Every flag (or those named in ``only``), each a DataFrame as described in the module docstring."""
    names = list(only) if only else list(FLAG_FUNCTIONS)
    unknown = [n for n in names if n not in FLAG_FUNCTIONS]
    if unknown:
        raise UsageError(f"Unknown flag(s) {', '.join(unknown)}; the flags are {', '.join(FLAG_FUNCTIONS)}.")
    return {name: FLAG_FUNCTIONS[name](store, bench=bench, judge=judge) for name in names}


def flag_counts(flags: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """flag, rows found, distinct items, description."""
    rows = []
    for name, df in flags.items():
        items = 0 if df.empty else len(df[["bench", "question_id", "model", "turn"]].drop_duplicates())
        rows.append({"flag": name, "rows": len(df), "items": items, "description": FLAGS.get(name, "")})
    return pd.DataFrame(rows, columns=["flag", "rows", "items", "description"])
