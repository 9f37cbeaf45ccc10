"""Probe runs in the store (``probe_runs`` / ``probe_results``): save, list, load, compare, tabulate."""
from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pandas as pd

from lib.errors import ProbeError
from lib.probes.spec import ALL_PROBES, ProbeResult, ProbeRun, fmt_score
from lib.store import Store, insert_rows


# ------------------------------------------------------------------------------------------------
# Storage

def save_probe_run(store: Store, run: ProbeRun) -> int:
    """Store a run (``probe_runs``) and its per-request results (``probe_results``); returns run_id.
    No credentials are stored: the parameters are the generation settings and the item choice."""
    summary = {"text": run.summary, "mode": run.mode, "scale": run.scale, "items": run.items,
               "requests": run.requests, "calls": run.calls, "cache_hits": run.cache_hits, "errors": run.errors,
               "prompt_tokens": run.prompt_tokens, "completion_tokens": run.completion_tokens, "cost": run.cost,
               "elapsed_s": run.elapsed_s, "probes": run.to_json()}
    def save(cur):  # may run again on a DuckLake store (Store.transaction)
        run_id = store.next_id(cur, "probe_runs")
        cur.execute(
            """INSERT INTO probe_runs (run_id, template_id, template, model, base_url, params, passed, summary)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?)""",
            [run_id, run.template_id, run.template, run.model, run.base_url, json.dumps(run.params, ensure_ascii=False),
             run.passed, json.dumps(summary, ensure_ascii=False, default=str)])
        created = cur.execute("SELECT created_at FROM probe_runs WHERE run_id = ?", [run_id]).fetchone()[0]
        rows = []
        for o in run.outcomes:
            rows.append({"run_id": run_id, "probe": o["probe"], "kind": o["kind"], "layout": o.get("layout"),
                         "bench": o["bench"], "question_id": o["question_id"], "turn": o["turn"],
                         "model": o["model"], "model_b": o.get("model_b"), "sample": o["sample"],
                         "position": o.get("position"), "repeat": o.get("repeat"), "expected": o.get("expected"),
                         "score": _num(o.get("score")), "score_10": _num(o.get("score_10")),
                         "verdict": o.get("verdict"), "real_score": _num(o.get("real_score")),
                         "failed": o.get("failed"), "status": o["status"], "rationale": o.get("rationale"),
                         "request_hash": o.get("request_hash"), "detail": o.get("detail") or None})
        insert_rows(cur, "probe_results", rows)
        return run_id, created

    run_id, created = store.transaction(save)
    run.run_id, run.created_at = run_id, created
    return run_id


def _num(v) -> float | None:
    return None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


def list_probe_runs(store: Store) -> pd.DataFrame:
    """run_id, created_at, template, model, base_url, passed, items, failed probes (newest first)."""
    with store.read() as cur:
        rows = cur.execute("SELECT run_id, created_at, template, template_id, model, base_url, passed, summary "
                           "FROM probe_runs ORDER BY run_id DESC").fetchall()
    out = []
    for run_id, created, template, tid, model, url, passed, summary in rows:
        s = json.loads(summary)
        failed = [p["probe"] for p in s.get("probes", []) if p.get("failed")]
        out.append({"run_id": run_id, "created_at": created, "template": template, "template_id": tid,
                    "model": model, "base_url": url, "passed": passed, "items": len(s.get("items", [])),
                    "failed_probes": ", ".join(failed)})
    return pd.DataFrame(out, columns=["run_id", "created_at", "template", "template_id", "model", "base_url",
                                      "passed", "items", "failed_probes"])


def load_probe_run(store: Store, run_id: int) -> ProbeRun:
    """A stored run with its per-probe results and per-request outcomes."""
    with store.read() as cur:
        row = cur.execute("SELECT run_id, created_at, template, template_id, model, base_url, params, summary "
                          "FROM probe_runs WHERE run_id = ?", [int(run_id)]).fetchone()
        if row is None:
            raise ProbeError(f"No probe run {run_id}.")
        res = cur.execute("SELECT * EXCLUDE (run_id) FROM probe_results WHERE run_id = ? ORDER BY rowid",
                          [int(run_id)])
        cols = [d[0] for d in res.description]
        outcomes = [dict(zip(cols, r)) for r in res.fetchall()]
    rid, created, template, tid, model, url, params, summary = row
    s = json.loads(summary)
    results = []
    for p in s.get("probes", []):
        p = dict(p)
        p.pop("failed", None)
        results.append(ProbeResult(**p))
    name = template.split("@")[0]
    run = ProbeRun(template=template, template_id=tid, template_name=name, model=model, base_url=url,
                   params=json.loads(params), results=results, outcomes=outcomes, mode=s.get("mode", "single"),
                   scale=s.get("scale"), items=s.get("items", []), requests=s.get("requests", 0),
                   calls=s.get("calls", 0), cache_hits=s.get("cache_hits", 0), errors=s.get("errors", 0),
                   prompt_tokens=s.get("prompt_tokens", 0), completion_tokens=s.get("completion_tokens", 0),
                   cost=s.get("cost"), elapsed_s=s.get("elapsed_s", 0.0), run_id=rid, created_at=created,
                   summary=s.get("text", ""))
    return run


@dataclass
class ProbeComparison:
    run_a: int
    run_b: int
    label_a: str
    label_b: str
    table: pd.DataFrame
    fixed: list[str]
    broken: list[str]
    still_failing: list[str]

    @property
    def text(self) -> str:
        fixed = f"fixed {', '.join(self.fixed)}" if self.fixed else "fixed nothing"
        broke = ("broke nothing else" if self.fixed else "broke nothing") if not self.broken else \
            f"broke {', '.join(self.broken)}"
        still = f"; still failing: {', '.join(self.still_failing)}" if self.still_failing else ""
        return f"{self.label_b} (run {self.run_b}) vs {self.label_a} (run {self.run_a}): {fixed}, {broke}{still}."


def compare_probe_runs(store: Store, run_a: int, run_b: int) -> ProbeComparison:
    """Probe by probe, what changed from run A to run B ("v3 fixed empty_answer, broke nothing else").

    ``table`` columns: probe, kind, counts, status_a, status_b, change (fixed | broke | still failing |
    still passing | only in A | only in B | changed), scores_a, scores_b, detail_b. ``fixed``/``broken``
    only count the probes that decide a run (canaries and position swap)."""
    a, b = load_probe_run(store, run_a), load_probe_run(store, run_b)
    ra = {r.probe: r for r in a.results}
    rb = {r.probe: r for r in b.results}
    rows, fixed, broken, still = [], [], [], []
    for probe in [p for p in ALL_PROBES if p in ra or p in rb]:
        x, y = ra.get(probe), rb.get(probe)
        sa, sb = (x.status if x else None), (y.status if y else None)
        if x is None:
            change = "only in B"
        elif y is None:
            change = "only in A"
        elif sa == "fail" and sb == "pass":
            change = "fixed"
        elif sa == "pass" and sb == "fail":
            change = "broke"
        elif sa == sb == "fail":
            change = "still failing"
        elif sa == sb == "pass":
            change = "still passing"
        else:
            change = "changed" if sa != sb else f"still {sa}"
        counts = (y or x).counts
        if counts:
            {"fixed": fixed, "broke": broken, "still failing": still}.get(change, []).append(probe)
        rows.append({"probe": probe, "kind": (y or x).kind, "counts": counts, "status_a": sa, "status_b": sb,
                     "change": change, "scores_a": x.scores if x else None, "scores_b": y.scores if y else None,
                     "detail_b": y.detail if y else None})
    table = pd.DataFrame(rows, columns=["probe", "kind", "counts", "status_a", "status_b", "change", "scores_a",
                                        "scores_b", "detail_b"])
    return ProbeComparison(int(run_a), int(run_b), a.template, b.template, table, fixed, broken, still)


def probe_table(run: ProbeRun) -> pd.DataFrame:
    """One row per probe: probe, kind, expected, status, failed, scores, n_items, n_failed, detail."""
    rows = [{"probe": r.probe, "kind": r.kind, "expected": r.expected, "status": r.status, "failed": r.failed,
             "scores": ", ".join(fmt_score(x) if not isinstance(x, list) else "/".join(fmt_score(y) for y in x)
                                 for x in r.scores),
             "n_items": r.n_items, "n_failed": r.n_failed, "detail": r.detail} for r in run.results]
    return pd.DataFrame(rows, columns=["probe", "kind", "expected", "status", "failed", "scores", "n_items",
                                       "n_failed", "detail"])
