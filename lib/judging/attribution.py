"""Attribute the gap between two runs by controlled re-judging: the attribution ladder.

Start from run A's answers and A's stored verdicts on the questions linked to run B. First re-judge A's
answers with A's own setup against the chosen endpoint (**replay**): the drift between the stored judge and
today's endpoint is measured on its own and never blamed on a factor. Then switch one judge-side factor at a
time to B's setting, cumulatively, re-judging the same items through the re-judge machinery
(``lib.judging.batch.RejudgeBatch``: cache, concurrency, cost estimate):

- ``prompt``: A's judge prompt templates -> B's (e.g. FastChat's -> Swallow's, with its Japanese-language
  rules), one template per kind (single-v1 / single-math-v1 / their multi-turn forms, chosen per category and
  turn as the harnesses do);
- ``judge``: the judge model name sent: ``--model`` until this step, B's judge from it on;
- ``reference``: A's reference answers -> B's (for a linked bench: B's reference of the linked question);
- ``truncation``: answers cut at B's limit (Swallow keeps the first 8,192 characters);
- ``reasoning``: ``<think>`` blocks stripped (or kept) as B's harness does.

The last bar, **residual**, compares "A's answers judged B's way" with B's stored score: what the answers
themselves contribute (system prompt, sampling, generation). ``reverse=True`` runs the ladder the other way
(B's answers judged A's way) so the split can be checked against the order.

Rows (``LADDER_COLUMNS``): step, mean, delta, ci_low, ci_high, n, calls, cached. ``a`` is A's stored mean on the
items, each step's ``delta`` is its change from the previous row with a 95% t interval on question-level
differences (``lib.analysis.deltas.compare_pairs``), ``residual`` is B's stored mean minus the last step, and
``b`` is B's stored mean with ``delta`` = B - A (the whole gap). Every row is over the same items: those with a
usable score at every step and on both stored sides. Re-judging uses sample 0 (Swallow's first sample), so the
stored scores are sample 0's too.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from lib import harness as H
from lib.analysis import linking
from lib.keys import ItemKey
from lib.analysis.runs import Run, resolve_run
from lib.errors import UsageError
from lib.judging.batch import RejudgeBatch
from lib.judging.config import JudgeConfig
from lib.judging.templates import Template, builtins
from lib.store import Store

STEPS = ("prompt", "judge", "reference", "truncation", "reasoning")
STEP_LABELS = {"a": "A stored", "replay": "replay (A's setup today)", "prompt": "judge prompt",
               "judge": "judge model", "reference": "reference answers", "truncation": "truncation",
               "reasoning": "reasoning stripped", "residual": "residual (the answers)", "b": "B stored"}
LADDER_COLUMNS = ["step", "mean", "delta", "ci_low", "ci_high", "n", "calls", "cached"]
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
                 strip_think=not H.get(run.harness).judge_sees_think)


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


@dataclass
class Step:
    name: str
    setup: Setup
    model: str
    batch: RejudgeBatch | None = None
    summary: object = None
    scores: dict = field(default_factory=dict)


class Ladder:
    """``prepare()`` (render every step, look up the cache, estimate the cost) then ``run()``."""

    def __init__(self, store: Store, a: dict | Run, b: dict | Run, config: JudgeConfig, *,
                 steps: tuple[str, ...] | list[str] = STEPS, items: int | None = None, reverse: bool = False):
        run_a = a if isinstance(a, Run) else resolve_run(store, a, "A")
        run_b = b if isinstance(b, Run) else resolve_run(store, b, "B")
        if reverse:
            run_a, run_b = run_b, run_a
        steps = [s.strip() for s in steps if s and s.strip()]
        unknown = [s for s in steps if s not in STEPS]
        if unknown or len(set(steps)) != len(steps):
            raise UsageError(f"steps: each of {', '.join(STEPS)} at most once (got {', '.join(steps) or 'none'})")
        self.store, self.config, self.reverse = store, config, reverse
        self.run_a, self.run_b = run_a, run_b
        self.setup_a, self.setup_b = setup_of(store, run_a), setup_of(store, run_b)
        if run_a.bench != run_b.bench and self.setup_b.reference:
            self.setup_b = replace(self.setup_b, reference=f"{run_b.bench}{LINKED_SEP}{self.setup_b.reference}")
        self.items = self._items(items)
        if not self.items:
            raise UsageError(f"{run_a.label} and {run_b.label} share no scored item on linked questions.")
        state, model = self.setup_a, config.model
        self.steps = [Step("replay", state, model)]
        for name in steps:
            if name == "prompt":
                state = replace(state, family=self.setup_b.family)
            elif name == "judge":
                model = self.setup_b.judge
            elif name == "reference":
                state = replace(state, reference=self.setup_b.reference)
            elif name == "truncation":
                state = replace(state, truncate=self.setup_b.truncate)
            elif name == "reasoning":
                state = replace(state, strip_think=self.setup_b.strip_think)
            self.steps.append(Step(name, state, model))

    # -- items
    def _items(self, limit: int | None) -> list[ItemKey]:
        """A's items (sample 0) whose linked B item has a stored score; with ``limit``, that many items,
        taken question by question round-robin over the categories."""
        ra, rb = self.run_a, self.run_b
        sa, sb = _stored(self.store, ra), _stored(self.store, rb)
        lm = linking.link_map(self.store, ra.bench, rb.bench)
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
        return [ItemKey(ra.bench, qid, int(turn), ra.model, 0) for _, qid, turn in keys]

    # -- batches
    def _label(self, step: Step, template: Template) -> str:
        ident = json.dumps([self.run_a.selector, self.config.base_url, step.model, template.name,
                            step.setup.reference, self.config.params()], sort_keys=True)
        return f"ladder-{hashlib.sha256(ident.encode()).hexdigest()[:10]}-{step.name}"

    def prepare(self) -> dict:
        """Build every step's batch; return the estimate summed over the steps (requests, cached, to send, cost)."""
        totals = {"steps": len(self.steps), "items": len(self.items), "requests": 0, "cached": 0, "to_send": 0,
                  "already_judged": 0, "cost_expected": None, "cost_upper": None}
        for step in self.steps:
            template = combined_template(step.setup.family, step.setup.truncate, step.setup.strip_think)
            config = replace(self.config, model=step.model)
            step.batch = RejudgeBatch(self.store, template, config, self.items, self._label(step, template),
                                      reference_judge=step.setup.reference, judge_hint=self.run_a.judge)
            est = step.batch.prepare()
            totals["requests"] += est.requests
            totals["cached"] += est.cached
            totals["to_send"] += est.to_send
            totals["already_judged"] += step.batch.skipped_done
            for k, v in (("cost_expected", est.cost_expected), ("cost_upper", est.cost_upper)):
                if v is not None:
                    totals[k] = (totals[k] or 0.0) + v
        return totals

    def run(self, *, api_key: str | None = None, concurrency: int = 8, progress=None, cancel=None) -> pd.DataFrame:
        if any(s.batch is None for s in self.steps):
            self.prepare()
        for i, step in enumerate(self.steps):
            cb = (lambda d, t, eta, i=i: progress(i, len(self.steps), d, t)) if progress else None
            step.summary = step.batch.run(api_key=api_key, concurrency=concurrency, progress=cb, cancel=cancel)
            if step.summary.error:
                raise UsageError(f"The ladder stopped at step {step.name}: {step.summary.error}")
            step.scores = _batch_scores(self.store, step.summary.source_id)
        return self.table()

    # -- the table
    def table(self) -> pd.DataFrame:
        ra, rb = self.run_a, self.run_b
        sa, sb = _stored(self.store, ra), _stored(self.store, rb)
        lm = linking.link_map(self.store, ra.bench, rb.bench)
        rows = []
        for it in self.items:
            key = (it.question_id, it.turn)
            other = (lm[it.question_id][0], it.turn)
            vals = [sa.get(key, (None, None))[1]] + [s.scores.get(key) for s in self.steps] + [sb.get(other, (None, None))[1]]
            if any(v is None or (isinstance(v, float) and np.isnan(v)) for v in vals):
                continue
            rows.append((f"{ra.bench}:{it.question_id}", sa[key][0], it.turn, *vals))
        names = ["a", *[s.name for s in self.steps], "b"]
        frame = pd.DataFrame(rows, columns=["question", "category", "turn", *names])
        out = []
        n = len(frame)
        for i, name in enumerate(names):
            step = self.steps[i - 1] if 0 < i <= len(self.steps) else None
            calls = int(step.summary.calls) if step is not None and step.summary is not None else 0
            cached = (int(step.summary.cache_hits + step.summary.skipped_done)
                      if step is not None and step.summary is not None else 0)
            mean = float(frame[name].mean()) if n else np.nan
            if name == "a":
                out.append(_row("a", mean, None, n, 0, 0))
                continue
            if name == "b":
                out.append({"step": "residual", **_paired(frame, "b", names[-2]), "n": n, "calls": 0, "cached": 0,
                            "mean": mean})
                out.append({"step": "b", **_paired(frame, "b", "a"), "n": n, "calls": 0, "cached": 0, "mean": mean})
                continue
            out.append({"step": name, **_paired(frame, name, names[i - 1]), "n": n, "calls": calls, "cached": cached,
                        "mean": mean})
        df = pd.DataFrame(out, columns=LADDER_COLUMNS)
        df.attrs.update(run_a=ra.selector, run_b=rb.selector, label_a=ra.label, label_b=rb.label,
                        reverse=self.reverse, items=len(self.items), used=n,
                        setup_a=self.setup_a.__dict__, setup_b=self.setup_b.__dict__)
        return df


LINKED_SEP = "::"


def _row(step, mean, delta, n, calls, cached) -> dict:
    return {"step": step, "mean": mean, "delta": delta, "ci_low": np.nan, "ci_high": np.nan, "n": n,
            "calls": calls, "cached": cached}


def _paired(frame: pd.DataFrame, cur: str, prev: str) -> dict:
    """delta = mean(cur - prev) with the t interval on question-level differences (compare_pairs, level all)."""
    from lib.analysis.deltas import compare_pairs

    if frame.empty:
        return {"delta": np.nan, "ci_low": np.nan, "ci_high": np.nan}
    pairs = pd.DataFrame({"question": frame["question"], "category": frame["category"], "turn": frame["turn"],
                          "score_a": frame[cur], "score_b": frame[prev]})
    r = compare_pairs(pairs, levels=("all",)).iloc[0]
    return {"delta": float(r["delta"]), "ci_low": float(r["ci_low"]), "ci_high": float(r["ci_high"])}


def _stored(store: Store, run: Run) -> dict:
    """(question_id, turn) -> (category, sample-0 score) of a run's stored verdicts (repeats averaged)."""
    with store.read() as cur:
        rows = cur.execute("""SELECT j.question_id, j.turn, any_value(q.category), avg(j.score)
                              FROM single_judgments j
                              LEFT JOIN current_questions q ON q.bench = j.bench AND q.question_id = j.question_id
                              WHERE j.harness = ? AND j.bench = ? AND j.judge = ? AND j.model = ? AND j.sample = 0
                              GROUP BY j.question_id, j.turn""", list(run.selector.values())).fetchall()
    return {(q, int(t)): (c, s) for q, t, c, s in rows}


def _batch_scores(store: Store, source_id: int | None) -> dict:
    if source_id is None:
        return {}
    with store.read() as cur:
        rows = cur.execute("SELECT question_id, turn, avg(score) FROM single_judgments WHERE source_id = ? "
                           "GROUP BY question_id, turn", [source_id]).fetchall()
    return {(q, int(t)): s for q, t, s in rows}


def records(df: pd.DataFrame) -> list[dict]:
    """The ladder as the CLI's JSON (NaN -> null)."""
    out = []
    for row in df.to_dict(orient="records"):
        out.append({k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in row.items()})
    return out


LADDER_NOTE = ("Each step re-judges the same items with one more judge-side factor switched to B's setting; delta: "
               "the change from the previous row, with a 95% t interval on question-level differences. replay: A's "
               "setup on today's endpoint (judge drift, never blamed on a factor). residual: B's stored score minus "
               "A's answers judged B's way, what the answers themselves contribute. Sample 0 on both sides.")
