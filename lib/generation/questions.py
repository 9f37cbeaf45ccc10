"""What the store holds for generation: a run's questions, and what its answer files show of its setup.

``questions_for_run(store, run, linked_to=None, limit=None)``: the questions of ``run.bench`` the run has
answers for (``linked_to``: only those linked to a question of that bench), as ``Question`` in question
order. ``run_answer_facts(store, run)``: the distinct system prompts, samples per item, per-category
temperatures and character cap recorded with the run's answers (``GenerationSetup.from_run`` reads it).

A run's answers are matched as the setup table matches them: the run's bench, and a model, ``model_id`` or
file name equal to the run's model under the storage key (``lib.vocab.model_key_sql``).
"""
from __future__ import annotations

from dataclasses import dataclass

from lib.analysis import linking
from lib.analysis.runs import Run
from lib.store import Store
from lib.vocab import model_key_sql, qid_order


@dataclass(frozen=True)
class Question:
    """One question to answer: its bench and id, category and user turns (``required_temperature``: FastChat)."""

    bench: str
    question_id: str
    category: str | None
    turns: tuple[str, ...]
    required_temperature: float | None = None


def _answer_filter(alias: str = "a") -> str:
    keys = ", ".join(model_key_sql(f"coalesce({alias}.{c}, '')") for c in ("model", "model_id", "file_model"))
    return f"{alias}.bench = $bench AND {model_key_sql('$model')} IN ({keys})"


def run_answer_facts(store: Store, run: Run) -> dict:
    params = {"bench": run.bench, "model": run.model}
    with store.read() as cur:
        prompts = [r[0] for r in cur.execute(
            f"SELECT DISTINCT system_prompt FROM answers a WHERE {_answer_filter()} AND system_prompt IS NOT NULL "
            "ORDER BY 1", params).fetchall()]
        samples = cur.execute(f"SELECT max(sample) + 1 FROM answers a WHERE {_answer_filter()}", params).fetchone()[0]
        temps = cur.execute(
            f"""SELECT q.category, min(a.temperature), max(a.temperature) FROM answers a
                JOIN current_questions q ON q.bench = a.bench AND q.question_id = a.question_id
                WHERE {_answer_filter()} AND a.temperature IS NOT NULL AND q.category IS NOT NULL
                GROUP BY 1 ORDER BY 1""", params).fetchall()
        max_chars = cur.execute(f"SELECT max(max_chars) FROM answers a WHERE {_answer_filter()}",
                                params).fetchone()[0]
    return {"system_prompts": prompts, "samples": int(samples or 0),
            "temperatures": {c: float(lo) for c, lo, hi in temps if lo == hi},
            "max_chars": int(max_chars) if max_chars is not None else None}


def questions_for_run(store: Store, run: Run, *, linked_to: str | None = None, limit: int | None = None
                      ) -> list[Question]:
    params = {"bench": run.bench, "model": run.model}
    with store.read() as cur:
        rows = cur.execute(
            f"""SELECT q.bench, q.question_id, q.category, q.turns FROM current_questions q
                WHERE q.bench = $bench AND EXISTS (SELECT 1 FROM answers a WHERE {_answer_filter()}
                                                   AND a.question_id = q.question_id)
                ORDER BY {qid_order('q')}""", params).fetchall()
    if linked_to is not None:
        linked = linking.link_map(store, run.bench, linked_to)
        rows = [r for r in rows if r[1] in linked]
    out = [Question(b, str(qid), cat, tuple(turns)) for b, qid, cat, turns in rows]
    return out[:limit] if limit is not None else out
