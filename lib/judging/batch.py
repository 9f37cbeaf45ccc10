"""Re-judge batches: many items through one template, stored as a new judge.

``RejudgeBatch.prepare(...)`` renders every item first (so template problems and the cost estimate are
known before any call), ``.run(...)`` sends the uncached requests through the dispatcher
(``lib.judging.dispatch``: ``concurrency`` threads, progress, ``cancel`` as a ``threading.Event``) and
writes verdicts as they arrive, also when interrupted. Re-running the same batch (same label, template
version, model, URL and parameters) resumes it: finished items are skipped and the cache answers requests
that were already paid for. The verdicts are a new judge: ``single_judgments`` rows (harness 'judgelens',
judge = the label, prompt_name = name@vN) or ``pair_judgments`` rows for pairwise templates, under a
``sources`` row of kind 'rejudge' (path ``rejudge:<label>``), plus one ``rejudgments`` row per request
recording the template version and the request hash. ``rejudge_one`` re-judges one item without storing a
verdict (the Workbench's preview).

Two batches with one label at once (two tabs, two CLI runs, two machines on a DuckLake store): ``run`` first
takes the store's claim ``rejudge:<run hash>`` (``Store.claim``); the second finds it held and raises
``BatchRunningError`` ("Another batch with this label is running") before it sends anything. A batch that gets the
claim looks again at what is done and cached (another batch may have finished since ``prepare``), and its source
is the one row for the run hash (``_ensure_source`` looks it up inside the write transaction).
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from lib import harness as H
from lib.errors import BatchRunningError, LabelInUseError, UsageError
from lib.keys import ItemKey, PairKey
from lib.judging import cache
from lib.judging.calls import CallResult, CallStats
from lib.judging.client import call_judge
from lib.judging.config import JudgeConfig
from lib.judging.context import build_contexts
from lib.judging.dispatch import Dispatcher
from lib.judging.parsers import parse, to_ten_scale
from lib.judging.templates import Template, TemplateError, get_template, render_many, save_template
from lib.store import Store, insert_rows, refresh_item_scores, refresh_judge_questions, sources_changed

HARNESS = H.REJUDGE.name      # the harness of the verdicts JudgeLens makes

WRITE_EVERY_S = 0.5          # flush finished verdicts at least this often
WRITE_EVERY_ROWS = 100


@dataclass
class _Request:
    unit: int                 # index of the item
    game: int                 # 1, or 2 for the swapped pairwise game
    messages: list[dict]
    request_hash: str
    messages_json: str = ""   # computed while preparing, so writing verdicts stays cheap
    result: CallResult | None = None
    error: str | None = None


@dataclass
class _Unit:
    item: object
    requests: list[_Request] = field(default_factory=list)
    error: str | None = None  # context or render problem: never sent
    written: bool = False


@dataclass
class BatchSummary(CallStats):
    """What a batch did; the call counts (requests, calls, cache hits, tokens, cost, time) are ``CallStats``."""

    label: str
    template: str                      # name@vN
    template_id: int
    source_id: int | None
    mode: str                          # single | pairwise
    items: int                         # items asked for
    skipped_done: int = 0              # already judged in this run before (resume)
    not_renderable: int = 0            # items whose prompt could not be built (see problems)
    written: int = 0                   # verdict rows written
    ok: int = 0
    not_parsed: int = 0
    regex_timeouts: int = 0            # of the not parsed: the template's parser regex ran out of time
    out_of_range: int = 0
    api_errors: int = 0
    estimated_cost: float | None = None
    cancelled: bool = False
    error: str | None = None           # why the batch stopped early, if it did
    problems: list[str] = field(default_factory=list)
    error_reasons: dict[str, int] = field(default_factory=dict)  # distinct API error messages -> requests
    abandoned: int = 0                 # requests still in flight when a cancelled batch stopped waiting

    @property
    def answered(self) -> int:
        """Verdict rows that hold a judge's answer (parsed or not), i.e. not an API error."""
        return self.written - self.api_errors

    @property
    def nothing_succeeded(self) -> bool:
        """Requests were needed and not one was answered (every call failed, or none could be sent)."""
        return self.requests > 0 and self.cache_hits == 0 and self.ok + self.not_parsed + self.out_of_range == 0

    def text(self) -> str:
        lines = [f"{self.label}: {self.template} ({self.mode}), {self.items} item(s)"
                 + (f", {self.skipped_done} already done" if self.skipped_done else "")
                 + (f", {self.not_renderable} not renderable" if self.not_renderable else ""),
                 f"requests: {self.requests} needed, {self.cache_hits} from cache, {self.calls} sent "
                 f"in {self.elapsed_s:.1f} s ({self.requests_per_s:.1f}/s)",
                 f"verdicts written: {self.written} (ok {self.ok}, not parsed {self.not_parsed}, "
                 f"out of range {self.out_of_range}, API errors {self.api_errors})"
                 + (f"\n{self.regex_timeouts} of the not parsed: the template's parser regex took too long on the "
                    "judge's output and was stopped; simplify the pattern (no nested repeats such as (a+)+) and "
                    "run the batch again (the answers come from the cache)" if self.regex_timeouts else ""),
                 f"tokens: {self.prompt_tokens} in, {self.completion_tokens} out"
                 + (f"; cost ~${self.cost:.4f}" if self.cost is not None else "")
                 + (f" (estimated before: ~${self.estimated_cost:.4f})" if self.estimated_cost is not None else "")]
        if self.error_reasons:
            many = len(self.error_reasons) > 1 or self.api_errors > 1
            lines.append(f"why {self.api_errors} request(s) failed:" if many else "why the request failed:")
            for reason, n in sorted(self.error_reasons.items(), key=lambda kv: -kv[1])[:5]:
                lines.append(f"  {n} x {reason}")
            if len(self.error_reasons) > 5:
                lines.append(f"  … and {len(self.error_reasons) - 5} other reason(s)")
        if self.cancelled:
            lines.append("cancelled: the verdicts that arrived are stored; run the same batch again to resume "
                         "(finished calls come from the cache)"
                         + (f"; {self.abandoned} request(s) still in flight were not waited for" if self.abandoned
                            else ""))
        if self.error:
            lines.append(f"stopped: {self.error}")
        for p in self.problems[:10]:
            lines.append(f"  problem: {p}")
        if len(self.problems) > 10:
            lines.append(f"  … and {len(self.problems) - 10} more problem(s)")
        return "\n".join(lines)


@dataclass
class BatchEstimate:
    items: int
    requests: int
    cached: int
    to_send: int
    prompt_tokens: int          # estimated for the requests to send (characters / 4, CJK 1 per character)
    max_completion_tokens: int  # max_tokens x requests to send
    cost_upper: float | None    # with max_completion_tokens
    cost_expected: float | None  # with completion_tokens_typical per request
    completion_tokens_typical: int


def estimate_tokens(text: str) -> int:
    """A rough token count: ASCII ~4 characters per token, other characters ~1 each."""
    ascii_chars = len(text.encode("ascii", "ignore"))
    return ascii_chars // 4 + (len(text) - ascii_chars) + 1


def default_label(config: JudgeConfig, template: Template) -> str:
    return f"{config.model}+{template.label}"


def run_hash(label: str, template: Template, config: JudgeConfig) -> str:
    ident = {"label": label, "template_id": template.template_id, "base_url": config.base_url,
             "model": config.model, "params": config.params()}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()


class RejudgeBatch:
    """A batch: ``prepare`` (render everything, look up the cache, estimate) then ``run``."""

    def __init__(self, store: Store, template: Template, config: JudgeConfig, items: list,
                 label: str | None = None, *, reference_judge: str | None = None, judge_hint: str | None = None,
                 force: bool = False):
        if template.template_id is None:
            template = save_template(store, template)
        elif not get_template(store, template.template_id).same_content(template):
            template = save_template(store, template.edited())  # changed since loaded: a new version
        self.store, self.template, self.config = store, template, config
        self.label = (label or default_label(config, template)).strip()
        if not self.label:
            raise UsageError("The label (the new judge's name) must not be empty.")
        self.mode = template.mode
        for it in items:
            if self.mode == "pairwise" and not isinstance(it, PairKey):
                raise UsageError(f"{template.label} is a pairwise template: give PairKey items (two models).")
            if self.mode == "single" and not isinstance(it, ItemKey):
                raise UsageError(f"{template.label} grades single answers: give ItemKey items.")
        self.items = list(items)
        self.reference_judge, self.judge_hint, self.force = reference_judge, judge_hint, force
        self.run_sha = run_hash(self.label, template, config)
        self.source_id: int | None = None
        self.units: list[_Unit] = []
        self.skipped_done = 0
        self._redo_keys: list = []
        self.prepared = False
        self._estimate: BatchEstimate | None = None

    # -- preparation
    def _check_label(self) -> None:
        with self.store.read() as cur:
            row = cur.execute("SELECT source_id FROM sources WHERE kind = 'rejudge' AND sha256 = ?",
                              [self.run_sha]).fetchone()
            self.source_id = row[0] if row else None
            others = cur.execute(
                """SELECT DISTINCT s.source_id, s.path, s.harness FROM sources s
                   JOIN (SELECT source_id FROM single_judgments WHERE judge = $l
                         UNION SELECT source_id FROM pair_judgments WHERE judge = $l) j USING (source_id)
                   WHERE s.sha256 <> $sha OR s.kind <> 'rejudge'""", {"l": self.label, "sha": self.run_sha}).fetchall()
            same_path = cur.execute("SELECT source_id FROM sources WHERE kind = 'rejudge' AND path = ? AND sha256 <> ?",
                                    [f"rejudge:{self.label}", self.run_sha]).fetchall()
        if others or same_path:
            sid = (others or same_path)[0][0]
            raise LabelInUseError(
                f"The judge name {self.label!r} is already used by source {sid} (another import or a re-judge run "
                "with a different template version, model, URL or parameters). Choose another label, or remove "
                f"that source first (python -m lib.cli remove {sid}).")

    def _done_keys(self) -> set:
        if self.source_id is None:
            return set()
        with self.store.read() as cur:
            if self.mode == "single":
                rows = cur.execute(
                    """SELECT bench, question_id, turn, model, sample, parse_status FROM single_judgments
                       WHERE source_id = ?""", [self.source_id]).fetchall()
                done = {ItemKey(b, q, int(t), m, int(s)) for b, q, t, m, s, st in rows if st != "api_error"}
                self._redo_keys = [ItemKey(b, q, int(t), m, int(s)) for b, q, t, m, s, st in rows if st == "api_error"]
            else:
                rows = cur.execute(
                    """SELECT bench, question_id, turn, model_1, model_2, g1_winner, g2_winner FROM pair_judgments
                       WHERE source_id = ?""", [self.source_id]).fetchall()
                done = {PairKey(b, q, int(t), m1, m2, 0) for b, q, t, m1, m2, g1, g2 in rows
                        if "error" not in (g1, g2)}
                self._redo_keys = [PairKey(b, q, int(t), m1, m2, 0) for b, q, t, m1, m2, g1, g2 in rows
                                   if "error" in (g1, g2)]
        return done

    def prepare(self) -> BatchEstimate:
        """Build every prompt and look up the cache. Raises TemplateError if the template itself fails."""
        self._check_label()
        done = self._done_keys()
        todo = [it for it in self.items if it not in done]
        self.skipped_done = len(self.items) - len(todo)
        expanded: list[tuple[int, int, object]] = []  # (unit, game, context item)
        self.units = [_Unit(it) for it in todo]
        for u, it in enumerate(todo):
            if self.mode == "pairwise":
                expanded.append((u, 1, it))
                expanded.append((u, 2, PairKey(it.bench, it.question_id, it.turn, it.model_b, it.model_a, it.sample)))
            else:
                expanded.append((u, 1, it))
        contexts = build_contexts(self.store, [e[2] for e in expanded], preprocess=self.template.preprocess,
                                  reference_judge=self.reference_judge, judge_hint=self.judge_hint)
        ok_idx = [k for k, c in enumerate(contexts) if c.context is not None]
        for k, c in enumerate(contexts):
            if c.context is None:
                self.units[expanded[k][0]].error = c.error
        rendered = render_many(self.template, [contexts[k].context for k in ok_idx],
                               [contexts[k].missing or {} for k in ok_idx]) if ok_idx else []
        for k, res in zip(ok_idx, rendered):
            u, game, _ = expanded[k]
            unit = self.units[u]
            if not res.ok:
                unit.error = unit.error or res.error
                continue
            unit.requests.append(_Request(u, game, res.messages, cache.request_hash(self.config, res.messages),
                                          json.dumps(res.messages, ensure_ascii=False)))
        for unit in self.units:
            if unit.error:
                unit.requests = []
        hashes = [r.request_hash for unit in self.units for r in unit.requests]
        hits = {} if self.force else cache.fetch(self.store, hashes)
        for unit in self.units:
            for r in unit.requests:
                if r.request_hash in hits:
                    r.result = hits[r.request_hash]
        self.prepared = True
        self._estimate = None
        if any(r.result is None for unit in self.units for r in unit.requests):
            import openai  # noqa: F401  (the SDK takes ~1 s to import: pay it here, not in the send phase)
        return self.estimate()

    def estimate(self) -> BatchEstimate:
        """Requests to send and their cost: prompt tokens estimated from the rendered text, completion
        tokens at most max_tokens each ("upper") or the judge model's average so far ("expected")."""
        if getattr(self, "_estimate", None) is not None:
            return self._estimate
        reqs = [r for unit in self.units for r in unit.requests]
        to_send = list({r.request_hash: r for r in reqs if r.result is None}.values())  # identical ones once
        pt = sum(estimate_tokens(m["content"]) for r in to_send for m in r.messages)
        with self.store.read() as cur:
            typical = cur.execute("SELECT avg(completion_tokens) FROM judge_cache WHERE model = ?",
                                  [self.config.model]).fetchone()[0]
        typical = int(typical) if typical else min(self.config.max_tokens, 400)
        mx = self.config.max_tokens * len(to_send)
        self._estimate = BatchEstimate(len(self.units), len(reqs), len(reqs) - len(to_send), len(to_send), pt, mx,
                                       self.config.cost(pt, mx), self.config.cost(pt, typical * len(to_send)), typical)
        return self._estimate

    def _refresh(self) -> None:
        """After taking the claim: drop the items another batch of this run finished since ``prepare`` and take
        the answers it paid for from the cache."""
        self._check_label()
        done = self._done_keys()
        if done:
            kept = [u for u in self.units if u.item not in done]
            self.skipped_done += len(self.units) - len(kept)
            self.units = kept
            for u, unit in enumerate(self.units):
                for r in unit.requests:
                    r.unit = u
        missing = [r.request_hash for unit in self.units for r in unit.requests if r.result is None]
        hits = {} if self.force else cache.fetch(self.store, missing)
        for unit in self.units:
            for r in unit.requests:
                if r.result is None and r.request_hash in hits:
                    r.result = hits[r.request_hash]
        self._estimate = None

    # -- running
    def _ensure_source(self, cur) -> int:
        if self.source_id is not None:
            return self.source_id
        row = cur.execute("SELECT source_id FROM sources WHERE kind = 'rejudge' AND sha256 = ?",
                          [self.run_sha]).fetchone()
        if row:  # made by another batch of this run since prepare: one source per run
            self.source_id = row[0]
            return self.source_id
        benches = {it.bench for it in self.items}
        source_id = self.store.next_id(cur, "sources")
        cur.execute(
            """INSERT INTO sources (source_id, sha256, path, file_name, harness, kind, bench, bytes, rows_imported,
                                    warnings)
               VALUES (?, ?, ?, ?, ?, 'rejudge', ?, 0, 0, [])""",
            [source_id, self.run_sha, f"rejudge:{self.label}", self.label, HARNESS,
             next(iter(benches)) if len(benches) == 1 else None])
        self.source_id = source_id
        return self.source_id

    def _rows(self, unit: _Unit) -> tuple[list[dict], list[dict], dict]:
        """single_judgments/pair_judgments rows, rejudgments rows, and counts for one finished unit."""
        now = time.time()
        counts = {"ok": 0, "not_parsed": 0, "out_of_range": 0, "api_error": 0, "regex_timeouts": 0}
        rej = []
        for r in unit.requests:
            it = unit.item
            model = it.model if self.mode == "single" else (
                f"{it.model_a} vs {it.model_b}" if r.game == 1 else f"{it.model_b} vs {it.model_a}")
            rej.append({"source_id": self.source_id, "bench": it.bench, "question_id": str(it.question_id),
                        "model": model, "turn": int(it.turn), "sample": int(it.sample),
                        "template_id": self.template.template_id, "request_hash": r.request_hash,
                        "judge_model": self.config.model, "base_url": self.config.base_url})
        it = unit.item
        if self.mode == "single":
            r = unit.requests[0]
            if r.error is not None:
                raw, score, status, text = None, None, "api_error", r.error
            else:
                p = parse(r.result.text, self.template.parser)
                status, text = p.status, r.result.text
                counts["regex_timeouts"] += p.method == "regex_timeout"
                raw = p.value
                score = to_ten_scale(p.score, p.scale) if p.ok and p.scale else None
            counts[status] += 1
            row = {"source_id": self.source_id, "harness": HARNESS, "bench": it.bench, "judge": self.label,
                   "prompt_name": self.template.label, "model": it.model, "question_id": str(it.question_id),
                   "turn": int(it.turn), "sample": int(it.sample), "raw_score": raw, "score": score,
                   "parse_status": status, "rationale": text,
                   "judge_prompt": r.messages_json, "tstamp": now}
            return [row], rej, counts
        winners, texts, prompts = [], [], []
        for r in sorted(unit.requests, key=lambda x: x.game):
            if r.error is not None:
                winners.append("error")
                texts.append(r.error)
                counts["api_error"] += 1
            else:
                p = parse(r.result.text, self.template.parser)
                counts[p.status] += 1
                counts["regex_timeouts"] += p.method == "regex_timeout"
                texts.append(r.result.text)
                if not p.ok or p.verdict is None:
                    winners.append("error")
                elif p.verdict == "tie":
                    winners.append("tie")
                else:  # game 1 shows model_1 as A; game 2 shows model_2 as A
                    a_wins = p.verdict == "A"
                    winners.append(("model_1" if a_wins else "model_2") if r.game == 1 else
                                   ("model_2" if a_wins else "model_1"))
            prompts.append(r.messages_json)
        row = {"source_id": self.source_id, "harness": HARNESS, "bench": it.bench, "judge": self.label,
               "prompt_name": self.template.label, "model_1": it.model_a, "model_2": it.model_b,
               "question_id": str(it.question_id), "turn": int(it.turn), "g1_winner": winners[0],
               "g2_winner": winners[1] if len(winners) > 1 else "error", "g1_judgment": texts[0],
               "g2_judgment": texts[1] if len(texts) > 1 else None, "g1_user_prompt": prompts[0],
               "g2_user_prompt": prompts[1] if len(prompts) > 1 else None, "m1_score": None, "m2_score": None,
               "tstamp": now}
        return [row], rej, counts

    def _flush(self, units: list[_Unit], new_results: list[_Request], summary: BatchSummary) -> None:
        if not units and not new_results:
            return
        table = "single_judgments" if self.mode == "single" else "pair_judgments"
        source_id, redo_keys = self.source_id, list(self._redo_keys)

        def write(cur) -> tuple[int, dict, dict]:
            # may run again on a DuckLake store (Store.transaction): start from the state before the first try
            self.source_id, self._redo_keys = source_id, list(redo_keys)
            sid = self._ensure_source(cur)
            sources_changed(cur, [sid])  # its rows change: derived again whole at the next refresh
            cache.save(cur, self.config, [(r.messages_json, r.result) for r in new_results])
            rows, rej, total, reasons = [], [], {}, {}
            for unit in units:
                r1, r2, counts = self._rows(unit)
                rows += r1
                rej += r2
                for k, v in counts.items():
                    total[k] = total.get(k, 0) + v
                for r in unit.requests:
                    if r.error is not None:
                        reasons[r.error] = reasons.get(r.error, 0) + 1
            if units:
                self._delete_previous(cur, sid, [u.item for u in units])
            insert_rows(cur, table, rows)
            insert_rows(cur, "rejudgments", rej)
            return len(rows), total, reasons

        try:
            written, total, reasons = self.store.transaction(write)
        except BaseException:
            self.source_id, self._redo_keys = source_id, redo_keys  # rolled back: nothing of it exists
            raise
        for k, v in total.items():
            setattr(summary, k if k != "api_error" else "api_errors",
                    getattr(summary, k if k != "api_error" else "api_errors") + v)
        for reason, n in reasons.items():
            summary.error_reasons[reason] = summary.error_reasons.get(reason, 0) + n
        summary.written += written
        for unit in units:
            unit.written = True

    def _delete_previous(self, cur, sid: int, items: list) -> None:
        """On resume, replace this run's earlier api_error rows for these items."""
        redo = set(self._redo_keys) & set(items)
        for it in redo:
            if self.mode == "single":
                keys = [sid, it.bench, str(it.question_id), int(it.turn), it.model, int(it.sample)]
                cur.execute("""DELETE FROM single_judgments WHERE source_id = ? AND bench = ? AND question_id = ?
                               AND turn = ? AND model = ? AND sample = ?""", keys)
                cur.execute("""DELETE FROM rejudgments WHERE source_id = ? AND bench = ? AND question_id = ?
                               AND turn = ? AND model = ? AND sample = ?""", keys)
            else:
                cur.execute("""DELETE FROM pair_judgments WHERE source_id = ? AND bench = ? AND question_id = ?
                               AND turn = ? AND model_1 = ? AND model_2 = ?""",
                            [sid, it.bench, str(it.question_id), int(it.turn), it.model_a, it.model_b])
                cur.execute("""DELETE FROM rejudgments WHERE source_id = ? AND bench = ? AND question_id = ?
                               AND turn = ? AND model IN (?, ?)""",
                            [sid, it.bench, str(it.question_id), int(it.turn), f"{it.model_a} vs {it.model_b}",
                             f"{it.model_b} vs {it.model_a}"])
        self._redo_keys = [k for k in self._redo_keys if k not in redo]

    def _finish_source(self, summary: BatchSummary | None) -> None:
        if self.source_id is None:
            return
        if self.mode == "single":
            sql = "SELECT count(*), count(*) FILTER (parse_status <> 'ok') FROM single_judgments WHERE source_id = ?"
        else:
            sql = ("SELECT count(*), count(*) FILTER ('error' IN (g1_winner, g2_winner)) FROM pair_judgments "
                   "WHERE source_id = ?")

        def finish(cur) -> None:
            if self.mode == "single":  # the per-item table every page aggregates (lib.store)
                benches = [b for (b,) in cur.execute("SELECT DISTINCT bench FROM single_judgments WHERE source_id = ?",
                                                     [self.source_id]).fetchall()]
                refresh_item_scores(cur, benches, judges=[self.label])  # its verdicts alone changed
            else:  # pair verdicts feed no item score, only the judge prompts' questions (cut for this source alone)
                refresh_judge_questions(cur, [])
            n, failed = cur.execute(sql, [self.source_id]).fetchone()
            notes = [f"re-judged with {self.template.label} (template_id {self.template.template_id}) by "
                     f"{self.config.model} at {self.config.base_url}, temperature {self.config.temperature:g}, "
                     f"max tokens {self.config.max_tokens}"]
            if failed:
                notes.append(f"{failed} verdict(s) have no usable score (not parsed, out of range or API error); "
                             "they are kept and left out of means")
            if summary is None or summary.cancelled or summary.error:
                notes.append("the last run stopped early; run it again to resume")
            cur.execute("UPDATE sources SET rows_imported = ?, warnings = ? WHERE source_id = ?",
                        [n, notes, self.source_id])

        self.store.transaction(finish)

    def run(self, *, api_key: str | None = None, concurrency: int = 8,
            progress: Callable[[int, int, float | None], None] | None = None,
            cancel: threading.Event | None = None, client=None) -> BatchSummary:
        """Send the uncached requests and store the verdicts. ``progress(done, total, eta_s)`` is called
        from this thread as items finish; setting ``cancel`` stops it (requests in flight are waited
        for up to ``dispatch.CANCEL_GRACE_S`` and kept)."""
        cancel = cancel if cancel is not None else threading.Event()
        claim = f"rejudge:{self.run_sha}"
        token, holder = self.store.claim(claim, note=self.label)
        if token is None:
            ago = max(0, int(time.time() - holder["claimed_at"]))
            raise BatchRunningError(
                f"Another batch with this label is running: {self.label!r} (process {holder['pid']} on "
                f"{holder['host']}, started {ago} s ago). Nothing was sent. When it has finished, run this batch "
                "again: it resumes from that batch's verdicts and pays only for what is still missing.")
        try:
            if self.prepared:
                self._refresh()
            try:
                return self._run(api_key, concurrency, progress, cancel, client)
            except BaseException:  # e.g. the progress callback raised (Streamlit stops a script this way)
                cancel.set()  # the worker threads stop taking requests
                self._finish_source(None)  # keep the source's counts and item_scores right for what was written
                raise
        finally:
            self.store.release(claim, token)

    def _run(self, api_key, concurrency, progress, cancel, client) -> BatchSummary:
        if not self.prepared:
            self.prepare()
        started = time.perf_counter()
        est = self.estimate()
        summary = BatchSummary(self.label, self.template.label, self.template.template_id, self.source_id, self.mode,
                               len(self.items), skipped_done=self.skipped_done, estimated_cost=est.cost_expected)
        self._summary = summary
        for unit in self.units:
            if unit.error:
                summary.not_renderable += 1
                summary.problems.append(f"{_item_text(unit.item)}: {unit.error}")
        units = [u for u in self.units if not u.error]
        reqs = [r for u in units for r in u.requests]
        summary.requests = len(reqs)
        summary.cache_hits = sum(1 for r in reqs if r.result is not None)
        total = len(units)

        def complete(u: _Unit) -> bool:
            return all(r.result is not None or r.error is not None for r in u.requests)

        finished = [u for u in units if complete(u)]  # everything answered by the cache
        pending = {id(u) for u in units} - {id(u) for u in finished}
        self._flush(finished, [], summary)
        done = len(finished)
        if progress:
            progress(done, total, None)
        to_send, twins = [], {}   # identical requests (e.g. samples that are copies) are sent once
        for r in reqs:
            if r.result is None:
                if r.request_hash in twins:
                    twins[r.request_hash].append(r)
                else:
                    twins[r.request_hash] = []
                    to_send.append(r)
        summary.cache_hits += sum(len(v) for v in twins.values())
        if to_send:
            dispatcher = Dispatcher(self.config, api_key=api_key, client=client, concurrency=concurrency,
                                    cancel=cancel)
            finished, new_results, last_flush = [], [], time.perf_counter()
            try:
                for out in dispatcher.run(to_send):
                    if out is not None:
                        r = out.job
                        summary.calls += 1
                        if out.result is not None:
                            r.result = out.result
                            summary.add_answer(r.result)
                            new_results.append(r)
                        else:
                            r.error = out.error
                            if out.exception is not None and out.exception.fatal and summary.error is None:
                                summary.error = out.error
                        for twin in twins.get(r.request_hash, ()):
                            twin.result, twin.error = r.result, r.error
                        for x in (r, *twins.get(r.request_hash, ())):
                            u = self.units[x.unit]
                            if id(u) in pending and complete(u):
                                pending.discard(id(u))
                                if not (dispatcher.fatal is not None and any(y.error for y in u.requests)):
                                    finished.append(u)
                    now = time.perf_counter()
                    if (finished or new_results) and (out is None or now - last_flush >= WRITE_EVERY_S
                                                      or len(finished) >= WRITE_EVERY_ROWS):
                        done += len(finished)
                        self._flush(finished, new_results, summary)
                        finished, new_results, last_flush = [], [], now
                        if progress:
                            progress(done, total, dispatcher.eta())
            finally:  # also when interrupted: what arrived is written (it was paid for)
                done += len(finished)
                self._flush(finished, new_results, summary)
                summary.abandoned = dispatcher.abandoned
            if progress:
                progress(done, total, 0.0 if done == total else None)
        summary.cancelled = cancel.is_set() and summary.written < total
        summary.source_id = self.source_id
        summary.cost = self.config.cost(summary.prompt_tokens, summary.completion_tokens)
        summary.elapsed_s = time.perf_counter() - started
        self._finish_source(summary)
        return summary


def _item_text(item) -> str:
    if isinstance(item, PairKey):
        return f"{item.bench} q{item.question_id} t{item.turn} {item.model_a} vs {item.model_b}"
    return f"{item.bench} q{item.question_id} t{item.turn} {item.model} s{item.sample}"


def run_batch(store: Store, template: Template, config: JudgeConfig, items: list, label: str | None = None,
              concurrency: int = 8, progress: Callable[[int, int, float | None], None] | None = None,
              cancel: threading.Event | None = None, force: bool = False, *, api_key: str | None = None,
              reference_judge: str | None = None, judge_hint: str | None = None) -> BatchSummary:
    """Prepare and run a batch in one call (see ``RejudgeBatch``)."""
    batch = RejudgeBatch(store, template, config, items, label, reference_judge=reference_judge,
                         judge_hint=judge_hint, force=force)
    batch.prepare()
    return batch.run(api_key=api_key, concurrency=concurrency, progress=progress, cancel=cancel)


def rejudge_one(store: Store, template: Template, config: JudgeConfig, item, *, api_key: str | None = None,
                force: bool = False, reference_judge: str | None = None, judge_hint: str | None = None) -> dict:
    """Re-judge one item without storing a verdict: the messages sent, the raw output, the parse
    result and the call's cost. (The cache still records the call.)"""
    ctx = build_contexts(store, [item], preprocess=template.preprocess, reference_judge=reference_judge,
                         judge_hint=judge_hint)[0]
    if ctx.context is None:
        raise TemplateError(ctx.error or "no context", kind="undefined")
    rendered = render_many(template, [ctx.context], [ctx.missing or {}])[0]
    if not rendered.ok:
        raise TemplateError(rendered.error, kind=rendered.kind or "error")
    result = call_judge(store, config, rendered.messages, api_key=api_key, force=force)
    parsed = parse(result.text, template.parser)
    return {"messages": rendered.messages, "text": result.text, "parsed": parsed, "cached": result.cached,
            "request_hash": result.request_hash, "prompt_tokens": result.prompt_tokens,
            "completion_tokens": result.completion_tokens,
            "cost": None if result.cached else config.cost(result.prompt_tokens, result.completion_tokens)}
