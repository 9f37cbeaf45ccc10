"""The one documented context every judge template is rendered with.

``build_context(store, item)`` gathers an item's question, answers and reference answers from the
store and names them the way all supported template families expect, so FastChat, JA-harness,
Swallow, Tencent-TI-style and unitxt-style templates work unchanged. ``build_contexts`` does the
same for many items with three queries in all.

Context variables (``CONTEXT_VARIABLES`` has the same list with descriptions):

FastChat names
    ``question`` (the judged turn's question), ``question_1``, ``question_2`` (… one per turn),
    ``answer`` (the judged turn's answer), ``answer_1``, ``answer_2``,
    ``ref_answer_1``, ``ref_answer_2`` (only when the store has a reference for that turn);
    pairwise: ``answer_a``, ``answer_b``, ``answer_a_1``, ``answer_a_2``, ``answer_b_1``, ``answer_b_2``.
Tencent TI names
    ``data.messages`` (the conversation up to and including the judged question, as
    ``[{"role", "content"}]``), ``data.question``, ``data.gt`` and ``data.ref_answer`` (the judged
    turn's reference, when there is one), ``data.history`` (the turns before the judged question),
    ``response.content`` (the judged answer), ``response.reasoning_content`` (the text of its
    ``<think>`` blocks, '' if none).
Item
    ``bench``, ``question_id``, ``category``, ``turn``, ``model``, ``sample``, ``reference_judge``
    (whose reference answer was used); pairwise also ``model_a``, ``model_b`` (``model`` is model A,
    and the Tencent names describe model A's answer).

Answers are the texts the harness stored. Swallow: turn-2 answers of every sample were generated
after sample 0's turn-1 answer, but the judge saw (turn-1 answer s, turn-2 answer s); the context
gives the same pair.

Pre-processing (a template's ``preprocess``; applied to every answer, never to questions or
references), in this order:

- ``strip_think``: remove ``<think>…</think>`` blocks (an unclosed ``<think>`` runs to the end, as
  the item page shows it);
- ``strip_chat_tokens``: remove chat-template control tokens (``<|im_end|>``, ``<|eot_id|>``,
  ``<|start_header_id|>assistant<|end_header_id|>``, ``</s>``, ``[INST]``, ``<end_of_turn>``, …);
- ``truncate``: keep the first N characters (Swallow keeps its first 8,192).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import pandas as pd

from lib.errors import ContextError
from lib.keys import ItemKey, PairKey
from lib.store import Store
from lib.vocab import MODEL_KEY_SQL, model_key, qid_order, split_think

CONTEXT_VARIABLES: dict[str, str] = {
    "question": "the judged turn's question",
    "question_1": "turn-1 question (question_N for every turn the question has)",
    "question_2": "turn-2 question",
    "answer": "the judged turn's answer (after pre-processing)",
    "answer_1": "turn-1 answer of this model and sample",
    "answer_2": "turn-2 answer of this model and sample",
    "ref_answer_1": "turn-1 reference answer (only if the store has one)",
    "ref_answer_2": "turn-2 reference answer (only if the store has one)",
    "answer_a": "pairwise: model A's answer to the judged turn",
    "answer_b": "pairwise: model B's answer to the judged turn",
    "answer_a_1": "pairwise: model A's turn-1 answer",
    "answer_a_2": "pairwise: model A's turn-2 answer",
    "answer_b_1": "pairwise: model B's turn-1 answer",
    "answer_b_2": "pairwise: model B's turn-2 answer",
    "data.messages": "the conversation up to the judged question: [{role, content}, ...]",
    "data.question": "the judged turn's question",
    "data.gt": "the judged turn's reference answer (only if the store has one)",
    "data.ref_answer": "same as data.gt",
    "data.history": "the turns before the judged question: [{role, content}, ...] ([] on turn 1)",
    "response.content": "the judged answer (after pre-processing)",
    "response.reasoning_content": "the text inside the answer's <think> blocks ('' if none)",
    "category": "the question's category",
    "turn": "the judged turn (1-based)",
    "model": "the answering model (pairwise: model A)",
    "model_a": "pairwise: model A",
    "model_b": "pairwise: model B",
    "sample": "the answer sample (Swallow 0-4; FastChat 0)",
    "bench": "the bench, e.g. mt_bench, ja_mt_bench, japanese_mt_bench",
    "question_id": "the question id (text)",
    "reference_judge": "whose reference answers were used (reference files are stored per judge name)",
}


CHAT_TOKENS = re.compile(
    r"<\|start_header_id\|>[^<>\n]{0,40}<\|end_header_id\|>\n{0,2}"
    r"|<\|im_start\|>(?:system|user|assistant)?\n?"
    r"|<start_of_turn>(?:user|model)?\n?"
    r"|<\|[A-Za-z0-9_.:/\- ]{1,40}\|>"
    r"|<｜[^｜<>\n]{1,40}｜>"
    r"|</?s>|\[/?INST\]|<end_of_turn>|<eos>|<bos>")


@dataclass
class ContextResult:
    context: dict | None
    error: str | None = None
    missing: dict[str, str] | None = None   # variable -> why it is absent (shown if a template needs it)
    reference_judge: str | None = None


def preprocess_text(text: str | None, preprocess: dict | None) -> str:
    """Apply the declarative pre-processing toggles to one judged text (see the module docstring)."""
    text = text or ""
    pre = preprocess or {}
    if pre.get("strip_think"):
        text = split_think(text)[1]
    if pre.get("strip_chat_tokens"):
        text = CHAT_TOKENS.sub("", text)
    n = pre.get("truncate")
    if n:
        text = text[: int(n)]
    return text


def reasoning_of(text: str | None) -> str:
    return split_think(text or "")[0]


# ------------------------------------------------------------------------------------------------
# Bulk loading

class ContextData:
    """Questions, answers and references of the benches, models and questions a set of items needs. Filtering by
    question too keeps one item cheap (the Workbench's preview): a model's answers to every question of a bench
    were 0.3 s of key matching at 1M judgments. Plain dicts: a page may cache it (``context_data``)."""

    def __init__(self, store: Store, benches: set[str], models: set[str], question_ids: set[str] | None, *,
                 texts: "ContextData | None" = None):
        """``question_ids`` None: every question of the benches. ``texts``: a ``ContextData`` already holding the
        questions and references wanted (``bench_texts``): only the answers are read."""
        self.questions: dict[tuple[str, str], tuple[str | None, list[str]]] = {}
        self.answers: dict[tuple[str, str, str, int, int], str | None] = {}
        self.refs: dict[tuple[str, str], dict[str, dict[int, str]]] = {}
        if not benches:
            return
        bl = sorted(benches)
        keys = sorted({model_key(m) for m in models})
        ql = sorted(question_ids) if question_ids is not None else None
        of_questions = " AND question_id IN (SELECT unnest($q))" if ql is not None else ""
        params = {"b": bl} | ({"q": ql} if ql is not None else {})
        with store.read() as cur:
            if texts is not None:
                def wanted(key: tuple[str, str]) -> bool:
                    return key[0] in benches and (ql is None or key[1] in question_ids)

                self.questions = {k: v for k, v in texts.questions.items() if wanted(k)}
                self.refs = {k: v for k, v in texts.refs.items() if wanted(k)}
            else:
                for bench, qid, category, turns in cur.execute(
                        "SELECT bench, question_id, category, turns FROM current_questions "
                        f"WHERE bench IN (SELECT unnest($b)){of_questions}", params).fetchall():
                    self.questions[(bench, qid)] = (category, list(turns))
            mk = MODEL_KEY_SQL
            rows = cur.execute(
                f"""SELECT bench, {mk.format('model')}, {mk.format("coalesce(model_id, '')")},
                           {mk.format("coalesce(file_model, '')")}, question_id, sample, turn, text
                    FROM answers
                    WHERE bench IN (SELECT unnest($b)){of_questions}
                      AND ({mk.format('model')} IN (SELECT unnest($k))
                           OR {mk.format("coalesce(model_id, '')")} IN (SELECT unnest($k))
                           OR {mk.format("coalesce(file_model, '')")} IN (SELECT unnest($k)))
                    ORDER BY source_id""", params | {"k": keys}).fetchall() if keys else []
            wanted = set(keys)
            for bench, k1, k2, k3, qid, sample, turn, text in rows:  # later sources win, as item_view.answer
                for k in {k1, k2, k3} & wanted:
                    self.answers[(bench, k, qid, int(sample), int(turn))] = text
            if texts is None:
                for bench, judge, qid, turn, text in cur.execute(
                        f"""SELECT bench, judge, question_id, turn, text FROM reference_answers
                           WHERE bench IN (SELECT unnest($b)){of_questions}
                           ORDER BY source_id""", params).fetchall():
                    self.refs.setdefault((bench, qid), {}).setdefault(judge, {})[int(turn)] = text

    def answer_turns(self, bench: str, model: str, qid: str, sample: int, n_turns: int) -> dict[int, str] | None:
        k = model_key(model)
        out = {t: self.answers[(bench, k, qid, sample, t)] for t in range(1, n_turns + 1)
               if (bench, k, qid, sample, t) in self.answers}
        return out or None

    def reference(self, bench: str, qid: str, prefer: list[str]) -> tuple[str | None, dict[int, str]]:
        by_judge = self.refs.get((bench, qid)) or {}
        if not by_judge:
            return None, {}
        for judge in prefer:
            if judge and judge in by_judge:
                return judge, by_judge[judge]
        judge = sorted(by_judge)[0]
        return judge, by_judge[judge]


def _base_context(item, category, turns: list[str], ref_judge, refs: dict[int, str]) -> tuple[dict, dict]:
    t = int(item.turn)
    ctx: dict = {"bench": item.bench, "question_id": str(item.question_id), "category": category, "turn": t,
                 "sample": int(item.sample), "reference_judge": ref_judge, "question": turns[t - 1]}
    for i, q in enumerate(turns, 1):
        ctx[f"question_{i}"] = q
    missing: dict[str, str] = {}
    for i in range(1, len(turns) + 1):
        if i in refs and refs[i] is not None:
            ctx[f"ref_answer_{i}"] = refs[i]
        else:
            missing[f"ref_answer_{i}"] = "no reference answer in the store for this question turn"
    return ctx, missing


def _tencent(turns: list[str], answers: dict[int, str], t: int, refs: dict[int, str], judged_raw: str,
             judged: str) -> tuple[dict, dict]:
    history = []
    for i in range(1, t):
        history.append({"role": "user", "content": turns[i - 1]})
        history.append({"role": "assistant", "content": answers.get(i, "")})
    data = {"messages": history + [{"role": "user", "content": turns[t - 1]}], "question": turns[t - 1],
            "history": history}
    missing = {}
    if refs.get(t) is not None:
        data["gt"] = data["ref_answer"] = refs[t]
    else:
        missing["data.gt"] = "no reference answer in the store for this question turn"
    return {"data": data, "response": {"content": judged, "reasoning_content": reasoning_of(judged_raw)}}, missing


LINKED = "::"  # reference_judge "BENCH::JUDGE": that judge's references in another bench, through question links


def _linked_references(store: Store, benches: set[str], reference_judge: str) -> dict:
    """(item bench, question_id) -> {turn: text}: the references ``JUDGE`` has in ``BENCH`` for each linked
    question (``lib.analysis.linking``), e.g. Swallow's dataset references for the JA harness's questions."""
    from lib.analysis.linking import link_map

    ref_bench, _, ref_judge = reference_judge.partition(LINKED)
    with store.read() as cur:
        rows = cur.execute("SELECT question_id, turn, text FROM reference_answers WHERE bench = ? AND judge = ? "
                           "ORDER BY source_id", [ref_bench, ref_judge]).fetchall()
    by_q: dict[str, dict[int, str]] = {}
    for qid, turn, text in rows:  # later sources win
        by_q.setdefault(qid, {})[int(turn)] = text
    out = {}
    for bench in benches:
        for qid, (other, _method) in link_map(store, bench, ref_bench).items():
            if other in by_q:
                out[(bench, qid)] = by_q[other]
    return out


def bench_texts(store: Store, bench: str) -> ContextData:
    """The questions and reference answers of every question of ``bench`` (two small queries), no answer: for
    ``context_data(..., texts=...)``. A page keeps it per data version: picking another model or question then
    reads the answers alone (on a DuckLake store each query pays its catalog look-ups)."""
    return ContextData(store, {bench}, set(), None)


def context_data(store: Store, bench: str, model: str, question_id: str,
                 texts: ContextData | None = None) -> ContextData:
    """What the contexts of one model's answers to one question need, every turn and sample: pass it as ``data`` to
    ``build_context`` of any of its items. A page keeps it per data version, so stepping between the question's
    turns, or changing the template's pre-processing, reads nothing again. ``texts``: ``bench_texts(store, bench)``
    when the caller keeps it: the answers are the only read."""
    return ContextData(store, {bench}, {model}, {str(question_id)}, texts=texts)


def question_item(store: Store, bench: str, question_id: str, model: str, sample: int = 0,
                  texts: ContextData | None = None) -> tuple[pd.DataFrame, ContextData]:
    """``item_view.question_verdicts`` (without the judge prompts and rationales: the Workbench reads the item's own
    verdicts for those when it shows them) and ``context_data`` of one model's answer to one question, in one cache
    entry: what the Workbench reads on a pick of a model or a question. (Read one after the
    other: the dispatcher is the one thread pool, ``tests/judging/test_dispatch.py``; side by side they measured no
    gain with both cores busy.)"""
    from lib.analysis.item_view import question_verdicts

    return (question_verdicts(store, bench, question_id, model, sample, prompts=False, rationales=False),
            context_data(store, bench, model, question_id, texts=texts))


def build_contexts(store: Store, items: list, *, preprocess: dict | None = None,
                   reference_judge: str | None = None, judge_hint: str | None = None,
                   data: ContextData | None = None) -> list[ContextResult]:
    """One ContextResult per item (``ItemKey`` for single grading, ``PairKey`` for pairwise).

    The reference answers come from ``reference_judge`` if given (``"BENCH::JUDGE"``: that judge's references
    in another bench, for the linked question), else from the judge named by
    ``judge_hint`` (the judge being compared), else from the alphabetically first judge that has a
    reference for the question; ``context['reference_judge']`` says which. ``data``: ``context_data`` (or a
    ``ContextData``) covering every item, already read; else it is read here.
    """
    benches = {i.bench for i in items}
    models = set()
    for i in items:
        models |= {i.model_a, i.model_b} if isinstance(i, PairKey) else {i.model}
    if data is None:
        data = ContextData(store, benches, models, {str(i.question_id) for i in items})
    linked = _linked_references(store, benches, reference_judge) if reference_judge and LINKED in reference_judge else None
    prefer = [reference_judge] if reference_judge else [judge_hint] if judge_hint else []
    out = []
    for item in items:
        q = data.questions.get((item.bench, str(item.question_id)))
        if q is None:
            out.append(ContextResult(None, f"No question {item.question_id} in bench {item.bench}."))
            continue
        category, turns = q
        t = int(item.turn)
        if not 1 <= t <= len(turns):
            out.append(ContextResult(None, f"Question {item.question_id} has {len(turns)} turn(s); turn {t} does not exist."))
            continue
        if linked is not None:
            refs = linked.get((item.bench, str(item.question_id)), {})
            ref_judge = reference_judge if refs else None
        else:
            ref_judge, refs = data.reference(item.bench, str(item.question_id), prefer)
            if reference_judge and ref_judge != reference_judge:
                ref_judge, refs = None, {}
        ctx, missing = _base_context(item, category, turns, ref_judge, refs)
        if isinstance(item, PairKey):
            sides = {}
            for side, model in (("a", item.model_a), ("b", item.model_b)):
                ans = data.answer_turns(item.bench, model, str(item.question_id), int(item.sample), len(turns))
                if not ans or t not in ans:
                    sides = None
                    out.append(ContextResult(None, f"No turn-{t} answer of {model} to question {item.question_id} "
                                                   f"(sample {item.sample}) in bench {item.bench}."))
                    break
                sides[side] = ans
            if sides is None:
                continue
            for side in ("a", "b"):
                for i, text in sides[side].items():
                    ctx[f"answer_{side}_{i}"] = preprocess_text(text, preprocess)
                ctx[f"answer_{side}"] = ctx[f"answer_{side}_{t}"]
            ctx.update(model=item.model_a, model_a=item.model_a, model_b=item.model_b,
                       answer=ctx["answer_a"], **{f"answer_{i}": ctx[f"answer_a_{i}"] for i in sides["a"]})
            tencent, tmissing = _tencent(turns, {i: ctx[f"answer_a_{i}"] for i in sides["a"]}, t, refs,
                                         sides["a"][t], ctx["answer_a"])
        else:
            ans = data.answer_turns(item.bench, item.model, str(item.question_id), int(item.sample), len(turns))
            if not ans or t not in ans:
                out.append(ContextResult(None, f"No turn-{t} answer of {item.model} to question {item.question_id} "
                                               f"(sample {item.sample}) in bench {item.bench}."))
                continue
            for i, text in ans.items():
                ctx[f"answer_{i}"] = preprocess_text(text, preprocess)
            ctx["answer"] = ctx[f"answer_{t}"]
            ctx["model"] = item.model
            tencent, tmissing = _tencent(turns, {i: ctx[f"answer_{i}"] for i in ans}, t, refs, ans[t], ctx["answer"])
        ctx.update(tencent)
        missing.update(tmissing)
        out.append(ContextResult(ctx, None, missing, ref_judge))
    return out


def build_context(store: Store, item, *, preprocess: dict | None = None, reference_judge: str | None = None,
                  judge_hint: str | None = None, data: ContextData | None = None) -> dict:
    """The context of one item (``ItemKey`` or ``PairKey``). Raises ContextError if it has no answer. ``data``: as
    in ``build_contexts``."""
    result = build_contexts(store, [item], preprocess=preprocess, reference_judge=reference_judge,
                            judge_hint=judge_hint, data=data)[0]
    if result.context is None:
        raise ContextError(result.error or "no context")
    return result.context


# ------------------------------------------------------------------------------------------------
# Choosing items

def select_items(store: Store, *, bench: str | None = None, category: str | None = None, turn: int | None = None,
                 model: str | None = None, judged_by: str | None = None,
                 disagreement_judges: list[str] | None = None, samples: str = "all",
                 limit: int | None = None) -> list[ItemKey]:
    """Items (bench, question, turn, model, sample) to re-judge, in a stable order.

    Without ``judged_by`` every stored answer turn is a candidate; with it, only items that judge
    rated. ``disagreement_judges`` (two or more judges) orders the items by how much those judges
    disagree (largest spread first, ``lib.analysis.agreement.disagreements``); then only sample 0 is used.
    ``samples='first'`` keeps sample 0 only (Swallow stores 5 samples per item).
    """
    if disagreement_judges:
        from lib.analysis.agreement import disagreements

        ranked = disagreements(store, list(disagreement_judges), bench=bench, model=model, turn=turn,
                               category=category, limit=limit or 1_000_000)
        return [ItemKey(b, str(q), int(t), m, 0) for b, q, t, m in
                zip(ranked["bench"], ranked["question_id"], ranked["turn"], ranked["model"])]
    conditions, params = [], {}
    if bench:
        conditions.append("x.bench = $bench")
        params["bench"] = bench
    if turn is not None:
        conditions.append("x.turn = $turn")
        params["turn"] = int(turn)
    if category:
        conditions.append("q.category = $category")
        params["category"] = category
    if model:
        conditions.append(f"{MODEL_KEY_SQL.format('x.model')} = {MODEL_KEY_SQL.format('$model')}")
        params["model"] = model
    if samples == "first":
        conditions.append("x.sample = 0")
    if judged_by:
        source = "(SELECT DISTINCT bench, question_id, turn, model, sample FROM single_judgments WHERE judge = $judge)"
        params["judge"] = judged_by
    else:
        source = "(SELECT DISTINCT bench, question_id, turn, model, sample FROM answers)"
    where = ("WHERE " + " AND ".join(conditions)) if conditions else ""
    sql = f"""SELECT x.bench, x.question_id, x.turn, x.model, x.sample FROM {source} x
              LEFT JOIN current_questions q ON q.bench = x.bench AND q.question_id = x.question_id
              {where}
              ORDER BY x.bench, x.model, {qid_order('x')}, x.turn, x.sample"""
    if limit:
        sql += f" LIMIT {int(limit)}"
    with store.read() as cur:
        rows = cur.execute(sql, params).fetchall()
    return [ItemKey(b, str(q), int(t), m, int(s)) for b, q, t, m, s in rows]


def select_pair_items(store: Store, model_a: str, model_b: str, *, bench: str | None = None,
                      category: str | None = None, turn: int | None = None, limit: int | None = None) -> list[PairKey]:
    """Question turns both models answered (sample 0), for pairwise templates."""
    a = select_items(store, bench=bench, category=category, turn=turn, model=model_a, samples="first")
    b = {(i.bench, i.question_id, i.turn) for i in
         select_items(store, bench=bench, category=category, turn=turn, model=model_b, samples="first")}
    out = [PairKey(i.bench, i.question_id, i.turn, model_a, model_b, 0) for i in a
           if (i.bench, i.question_id, i.turn) in b]
    return out[:limit] if limit else out
