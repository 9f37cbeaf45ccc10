"""The judge side of the attribution ladder: what a run's judging looked like (``Setup``) and the pieces every
ladder step uses to judge answers the way a harness does.

- ``Setup``: a run's judge-side settings: template family, judge model name, references, truncation,
  ``<think>`` handling and the judge call's ``max_tokens`` (2048 FastChat, 4096 Swallow: ``lib.harness``);
- ``setup_of(store, run)``; ``combined_template(family, truncate, strip_think)``: the harness's four built-in
  templates chosen per category and turn, as the harnesses do;
- ``stored_scores`` / ``batch_scores``: (question, turn) -> item score (the mean over samples and repeats);
- ``paired(frame, cur, prev)``: a step's delta with the question-level t interval (``lib.analysis.deltas``);
- ``pick_items``: linked items, question by question round-robin over the categories.

The ladder itself (regenerate, every factor, both orders, Shapley) is ``lib.attribution.ladder``.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np
import pandas as pd

from lib import harness as H
from lib.analysis import linking
from lib.analysis.runs import Run
from lib.errors import UsageError
from lib.judging.templates import Template, builtins
from lib.store import Store

STEPS = ("prompt", "judge", "judge_max_tokens", "reference", "truncation", "reasoning")
REF_CATEGORIES = ("math", "reasoning", "coding")
KINDS = ("single-math-v1", "single-v1", "single-math-v1-multi-turn", "single-v1-multi-turn")
JA_SENTENCE = "Your evaluation should also consider whether the prompt responded in the correct language"


@dataclass(frozen=True)
class Setup:
    """The judge-side settings of one run (what the ladder switches one at a time)."""

    family: str                 # template family: swallow | ja | lmsys
    judge: str                  # the run's judge model name
    reference: str | None       # reference_judge for RejudgeBatch (``BENCH::JUDGE`` across benches)
    truncate: int | None
    strip_think: bool
    max_tokens: int | None = None   # the judge call's max_tokens (None: the endpoint form's)


def _family(store: Store, run: Run) -> str:
    family = H.get(run.harness).prompt_family
    if family:
        return family
    with store.read() as cur:
        row = cur.execute("SELECT count(*) FILTER (contains(judge_prompt, ?)), count(judge_prompt) FROM single_judgments "
                          "WHERE harness = ? AND bench = ? AND judge = ? AND model = ?",
                          [JA_SENTENCE, *run.selector.values()]).fetchone()
    return "ja" if row[0] else "lmsys"


def _reference_judge(store: Store, run: Run) -> str | None:
    with store.read() as cur:
        judges = [r[0] for r in cur.execute("SELECT DISTINCT judge FROM reference_answers WHERE bench = ? ORDER BY judge",
                                            [run.bench]).fetchall()]
    if not judges:
        return None
    return run.judge if run.judge in judges else judges[0]


def setup_of(store: Store, run: Run) -> Setup:
    with store.read() as cur:
        limit = cur.execute("SELECT max(max_chars) FROM answers WHERE bench = ? AND harness = ?",
                            [run.bench, run.harness]).fetchone()[0]
    return Setup(family=_family(store, run), judge=run.judge, reference=_reference_judge(store, run),
                 truncate=int(limit) if limit else None,
                 strip_think=not H.get(run.harness).judge_sees_think,
                 max_tokens=H.get(run.harness).judge_max_tokens)


def _kind_templates(family: str) -> dict[str, Template]:
    prefix = H.PROMPT_FAMILY_PREFIX[family]
    by_name = {t.name: t for t in builtins()}
    out = {}
    for kind in KINDS:
        t = by_name.get(prefix + kind)
        if t is None:
            raise UsageError(f"No built-in template {prefix + kind!r} for the {family} family.")
        out[kind] = t
    return out


def combined_template(family: str, truncate: int | None, strip_think: bool) -> Template:
    """One template that picks the harness's template per item, as the harnesses do: the reference
    templates for math, reasoning and coding, the multi-turn ones for turn 2."""
    parts = _kind_templates(family)
    n_msgs = {len(t.messages) for t in parts.values()}
    roles = {tuple(m["role"] for m in t.messages) for t in parts.values()}
    if len(n_msgs) != 1 or len(roles) != 1:
        raise UsageError(f"The {family} templates do not share one message layout.")
    cond = "category in " + json.dumps(list(REF_CATEGORIES))
    messages = []
    for i, role in enumerate(next(iter(roles))):
        c = {k: parts[k].messages[i]["content"] for k in KINDS}
        content = (f"{{% if turn == 1 and {cond} %}}{c['single-math-v1']}"
                   f"{{% elif turn == 1 %}}{c['single-v1']}"
                   f"{{% elif {cond} %}}{c['single-math-v1-multi-turn']}"
                   f"{{% else %}}{c['single-v1-multi-turn']}{{% endif %}}")
        messages.append({"role": role, "content": content})
    pre = {"strip_think": bool(strip_think), "truncate": truncate}
    digest = hashlib.sha256(json.dumps([messages, pre], sort_keys=True).encode()).hexdigest()[:10]
    return Template(name=f"ladder-{family}-{digest}", messages=messages, parser=dict(parts["single-v1"].parser),
                    preprocess=pre, provenance="JudgeLens attribution ladder: the harness's four built-in templates "
                    f"({', '.join(p.name for p in parts.values())}) chosen per category and turn.",
                    description=f"{family} judge prompts, truncate={truncate}, strip_think={strip_think}")


LINKED_SEP = "::"


def paired(frame: pd.DataFrame, cur: str, prev: str) -> dict:
    """delta = mean(cur - prev) with the t interval on question-level differences (compare_pairs, level all)."""
    from lib.analysis.deltas import compare_pairs

    if frame.empty:
        return {"delta": np.nan, "ci_low": np.nan, "ci_high": np.nan}
    pairs = pd.DataFrame({"question": frame["question"], "category": frame["category"], "turn": frame["turn"],
                          "score_a": frame[cur], "score_b": frame[prev]})
    r = compare_pairs(pairs, levels=("all",)).iloc[0]
    return {"delta": float(r["delta"]), "ci_low": float(r["ci_low"]), "ci_high": float(r["ci_high"])}


def stored_scores(store: Store, run: Run) -> dict:
    """(question_id, turn) -> (category, score) of a run's stored verdicts: the mean over its samples (Swallow's
    5) and repeats, as the ladder's steps score an item."""
    with store.read() as cur:
        rows = cur.execute("""SELECT j.question_id, j.turn, any_value(q.category), avg(j.score)
                              FROM single_judgments j
                              LEFT JOIN current_questions q ON q.bench = j.bench AND q.question_id = j.question_id
                              WHERE j.harness = ? AND j.bench = ? AND j.judge = ? AND j.model = ?
                              GROUP BY j.question_id, j.turn""", list(run.selector.values())).fetchall()
    return {(q, int(t)): (c, s) for q, t, c, s in rows}


def batch_scores(store: Store, source_id: int | None) -> dict:
    if source_id is None:
        return {}
    with store.read() as cur:
        rows = cur.execute("SELECT question_id, turn, avg(score) FROM single_judgments WHERE source_id = ? "
                           "GROUP BY question_id, turn", [source_id]).fetchall()
    return {(q, int(t)): s for q, t, s in rows}


def pick_items(store: Store, ra: Run, rb: Run, limit: int | None) -> list[tuple[str, str, int]]:
    """(category, question_id, turn) of A's items whose linked B item has a stored score; with ``limit``, that
    many items, taken question by question round-robin over the categories."""
    sa, sb = stored_scores(store, ra), stored_scores(store, rb)
    lm = linking.link_map(store, ra.bench, rb.bench)
    keys = []
    for (qid, turn), (cat, _score) in sa.items():
        if qid in lm and (lm[qid][0], turn) in sb:
            keys.append((cat or "", qid, turn))
    keys.sort(key=lambda k: (linking.id_key(k[1]).zfill(12), k[2]))
    if limit:
        by_cat: dict[str, list] = {}
        for k in keys:
            by_cat.setdefault(k[0], []).append(k)
        picked, cats = [], sorted(by_cat)
        while len(picked) < limit and any(by_cat.values()):
            for c in cats:
                if by_cat[c] and len(picked) < limit:
                    q = by_cat[c][0][1]
                    take = [k for k in by_cat[c] if k[1] == q][: limit - len(picked)]
                    picked += take
                    by_cat[c] = [k for k in by_cat[c] if k[1] != q]
        keys = sorted(picked, key=lambda k: (linking.id_key(k[1]).zfill(12), k[2]))
    return keys
