"""Regenerated answers stored as a run of their own, visible to every page as answers.

A regenerated run is a ``sources`` row of kind ``generate`` (harness ``judgelens``, path ``generate:<label>``)
with ``answers`` rows like an import's (model = the label, e.g. ``shisa-ai/shisa-v2-llama3.1-8b [regen:
swallow]``; ``system_prompt``, ``temperature`` and ``max_chars`` filled from the setup), one
``generation_runs`` row (the setup as JSON, endpoint model, base URL) and one ``generations`` row per sample
(the request body and its key; copies name the sample they copy). Removing the source removes all of it.

- ``regen_label(model, setup)``: the default stored model name;
- ``generate_run(store, plan, answer_model=..., api_key=..., ...)``: sends what the request cache has not
  answered (``lib.generation.runner.run_plan``: the shared dispatcher and cache) and stores the run; run it
  again with the same plan and label to resume: no answered request is sent twice;
- ``stored_setup(store, label)``: the setup a stored regenerated run was made with.
"""
from __future__ import annotations

import hashlib
import json
import threading
from typing import Callable

from lib.errors import LabelInUseError
from lib.generation.plan import GenerationPlan
from lib.generation.runner import GenerationResult, GenRequest, run_plan
from lib.generation.setups import GenerationSetup, setup_from_dict, setup_to_dict
from lib.search_index import index_new_sources
from lib.store import Store, insert_rows, sources_changed
from lib.text_features import fill_answer_features

HARNESS = "judgelens"
KIND = "generate"


def regen_label(model: str, setup: GenerationSetup) -> str:
    return f"{model} [regen: {setup.name}]"


def _run_sha(label: str, plan: GenerationPlan) -> str:
    ident = {"label": label, "setup": setup_to_dict(plan.setup), "model": plan.model, "base_url": plan.base_url}
    return hashlib.sha256(json.dumps(ident, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def stored_setup(store: Store, label: str) -> GenerationSetup | None:
    with store.read() as cur:
        row = cur.execute("SELECT setup FROM generation_runs WHERE label = ? ORDER BY source_id DESC LIMIT 1",
                          [label]).fetchone()
    return setup_from_dict(json.loads(row[0])) if row else None


def _ensure_source(store: Store, plan: GenerationPlan, label: str) -> int:
    sha = _run_sha(label, plan)
    benches = sorted({q.bench for q in plan.questions})

    def ensure(cur) -> int:
        row = cur.execute("SELECT source_id FROM sources WHERE kind = ? AND sha256 = ?", [KIND, sha]).fetchone()
        if row:
            return row[0]
        other = cur.execute("SELECT source_id FROM sources WHERE kind = ? AND path = ?",
                            [KIND, f"{KIND}:{label}"]).fetchone()
        if other:
            raise LabelInUseError(
                f"The regenerated run {label!r} (source {other[0]}) was made with another setup, model or endpoint. "
                "Choose another label, or remove that source first (python -m lib.cli remove "
                f"{other[0]}).")
        sid = store.next_id(cur, "sources")
        cur.execute("""INSERT INTO sources (source_id, sha256, path, file_name, harness, kind, bench, bytes,
                                            rows_imported, warnings)
                       VALUES (?, ?, ?, ?, ?, ?, ?, 0, 0, [])""",
                    [sid, sha, f"{KIND}:{label}", label, HARNESS, KIND, benches[0] if len(benches) == 1 else None])
        cur.execute("INSERT INTO generation_runs VALUES (?, ?, ?, ?, ?)",
                    [sid, label, plan.model, plan.base_url, json.dumps(setup_to_dict(plan.setup), ensure_ascii=False)])
        return sid

    return store.transaction(ensure)


def _request_rows(sid: int, items: list[tuple[GenRequest, str]]) -> list[tuple]:
    return [(sid, r.slot.question.bench, r.slot.question.question_id, r.slot.turn, r.slot.sample, r.key, None,
             json.dumps(r.body, ensure_ascii=False), text) for r, text in items]


def _store_result(store: Store, sid: int, label: str, result: GenerationResult) -> int:
    setup = result.plan.setup
    answers = sorted(result.answers.values(), key=lambda a: a.slot.key)
    # model_id stays NULL: answers match a model by model, model_id or file name, and the endpoint's model name
    # (often the original model's) must never make these answers stand in for the stored ones
    ans_rows = [{"source_id": sid, "harness": HARNESS, "bench": a.slot.question.bench, "model": label,
                 "model_id": None, "file_model": None, "question_id": a.slot.question.question_id,
                 "sample": a.slot.sample, "turn": a.slot.turn, "text": a.text, "temperature": a.slot.temperature,
                 "system_prompt": setup.system_prompt, "max_chars": setup.max_chars} for a in answers]
    gen_rows = [{"source_id": sid, "bench": a.slot.question.bench, "question_id": a.slot.question.question_id,
                 "turn": a.slot.turn, "sample": a.slot.sample, "request_key": a.request_key,
                 "copy_of": a.slot.copy_of if a.copied else None, "request": None, "text": a.text} for a in answers]

    def write(cur) -> int:
        cur.execute("DELETE FROM answers WHERE source_id = ?", [sid])
        cur.execute("DELETE FROM answer_features WHERE source_id = ?", [sid])  # the slots' texts may have changed
        # keep the request bodies of sent rows; rewrite the slot table from the result
        bodies = dict(cur.execute("SELECT request_key, request FROM generations WHERE source_id = ? "
                                  "AND request_key IS NOT NULL", [sid]).fetchall())
        cur.execute("DELETE FROM generations WHERE source_id = ?", [sid])
        # through Arrow (lib.store.bulk): executemany inserted row by row, about half the CPU of storing a run
        insert_rows(cur, "answers", ans_rows)
        insert_rows(cur, "generations", [{**r, "request": bodies.get(r["request_key"])} for r in gen_rows])
        cur.execute("UPDATE sources SET rows_imported = ? WHERE source_id = ?", [len(ans_rows), sid])
        sources_changed(cur, [sid])  # written again (a resumed run): indexed again whole
        index_new_sources(cur)
        fill_answer_features(cur)
        return len(ans_rows)

    return store.transaction(write)


def generate_run(store: Store, plan: GenerationPlan, *, answer_model: str, label: str | None = None,
                 api_key: str | None = None, client=None, progress: Callable[[int, int], None] | None = None,
                 cancel: threading.Event | None = None, concurrency: int = 4, timeout_s: float = 600.0
                 ) -> tuple[int, GenerationResult]:
    """Send ``plan`` (what the request cache has not answered) and store the answers as the run ``label``
    (default ``regen_label(answer_model, setup)``). Every answered request is written with the cache as it
    arrives, so a cancelled or killed run resumes where it stopped. Returns (source id, result)."""
    label = label or regen_label(answer_model, plan.setup)
    sid = _ensure_source(store, plan, label)

    def write(cur, items: list[tuple[GenRequest, str]]) -> None:
        cur.executemany("INSERT INTO generations VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", _request_rows(sid, items))

    result = run_plan(plan, store, api_key=api_key, client=client, write=write, progress=progress, cancel=cancel,
                      concurrency=concurrency, timeout_s=timeout_s)
    _store_result(store, sid, label, result)
    return sid, result
