"""How two runs were set up, computed from the imported files alone (a computed version of the published
table comparing the JA MT-Bench harness with Swallow's lighteval fork).

``harness_diff(store, a, b)`` returns one row per area (``AREAS``) with columns ``area, a, b, differs,
evidence, example``: what run A and run B did, whether that differs (``None``: cannot tell, e.g. FastChat
does not record the answers' system prompt), the numbers behind it, and a relative link to an example item
(``lib.analysis.item_view.link``). ``judge_prompt_diff`` gives the reconstructed judge templates of both runs
side by side, with the sentences only one of them has.
"""
from __future__ import annotations

import json
import re
from functools import cached_property

import pandas as pd

from lib import harness as H
from lib.analysis import linking
from lib.analysis.item_view import link, link_params
from lib.analysis.runs import Run, resolve_pair
from lib.store import Store
from lib.vocab import MODEL_KEY_SQL, qid_order

AREAS = ("judge_model", "judge_prompt", "system_prompt", "samples", "temperature", "truncation", "reasoning",
         "references", "parse_failures", "scale", "questions")
AREA_LABELS = {"judge_model": "judge model", "judge_prompt": "judge prompt", "system_prompt": "answer system prompt",
               "samples": "samples per item", "temperature": "generation temperature", "truncation": "truncation",
               "reasoning": "reasoning (<think>)", "references": "reference answers", "parse_failures":
               "parse failures", "scale": "score scale", "questions": "questions"}
# Read from the answers the runs' judges saw (their model's answers on their bench): two runs of one model on one
# bench share them, so these rows never differ there.
ANSWER_AREAS = ("system_prompt", "samples", "temperature", "truncation", "reasoning")
COLUMNS = ["area", "a", "b", "differs", "evidence", "example"]
TRUNCATION_LIMITS = (8192, 6144)
PROMPT_KEYS = ("harness", "bench", "judge", "model", "prompt_name", "question_id", "turn", "source_id")
_SENTENCE = re.compile(r"(?<=[.!?。])\s+|\n+")


def _rows(store: Store, sql: str, params) -> list[tuple]:
    with store.read() as cur:
        return cur.execute(sql, params).fetchall()


def _run_filter(runs: tuple[Run, ...]) -> tuple[str, dict]:
    """``(harness, bench, judge, model)`` is one of ``runs``, as SQL with named parameters. A semi join on a
    VALUES list: DuckDB pushes its join keys into the scan, so a DuckDB file skips the blocks of other runs
    (their judge prompts) as it does for one run's ``=`` filters; an OR of the runs' ANDs reads every block."""
    keys = ("harness", "bench", "judge", "model")
    values = ", ".join("(" + ", ".join(f"${k}{i}" for k in keys) + ")" for i in range(len(runs)))
    return (f"(harness, bench, judge, model) IN (SELECT * FROM (VALUES {values}))",
            {f"{k}{i}": v for i, r in enumerate(runs) for k, v in r.selector.items()})


def _reported_counts(store: Store, pairs: list[tuple[str, str]] | None) -> dict[tuple[str, str], int]:
    """(model, bench) -> how many metrics the harness reported, for ``pairs`` (None: every pair)."""
    where = " OR ".join("(model = ? AND bench = ?)" for _ in pairs) if pairs is not None else "true"
    return {(m, b): c for m, b, c in _rows(store, f"SELECT model, bench, count(*) FROM reported_metrics "
                                                  f"WHERE {where or 'false'} GROUP BY ALL",
                                           [x for p in pairs or () for x in p])}


class _Reads:
    """What the setup table reads, for all its runs at once: one query per table, each read on first use.

    On a DuckLake store every query pays catalog look-ups (the table's data files, their statistics) and reads
    whole Parquet column chunks, the text columns included, so a query per run, per area or per example item
    multiplied that cost (38 queries for one table); here each table is read once for both runs."""

    def __init__(self, store: Store, *runs: Run):
        self.store, self.runs = store, tuple(dict.fromkeys(runs))
        self.benches = sorted({r.bench for r in self.runs})
        self._system_prompts: dict[str, str | None] = {}
        self._every_system_prompt = False  # ``use_context``: a name not in _system_prompts has none
        self._links: dict[tuple[str, str], pd.DataFrame] = {}
        self._per_run: dict[tuple[str, Run], object] = {}

    def use_context(self, context: dict | None) -> None:
        """Take what ``setup_context`` read (its benches' questions, references and links, every judge prompt's
        system prompt, every model's count of reported metrics) instead of reading it again; a bench it does not
        cover is read as before."""
        if not context:
            return
        if set(self.benches) <= set(context["questions"]):
            self.__dict__["questions"] = {b: context["questions"][b] for b in self.benches}
            self.__dict__["references"] = {b: context["references"][b] for b in self.benches}
        self._system_prompts.update(context["system_prompts"])
        self._every_system_prompt = True  # it holds every imported name
        self._links.update(context["links"])
        if "reported" not in self.__dict__:
            self.__dict__["reported"] = {r: context["reported"].get((r.model, r.bench), 0) for r in self.runs}

    def per_run(self, what: str, run: Run, make):
        """``make()``, once per run: what one run contributes to a table (its templates, its samples line) is the
        same in every pair it is in (five judges: each run in four of the ten pairs)."""
        if (what, run) not in self._per_run:
            self._per_run[(what, run)] = make()
        return self._per_run[(what, run)]

    def _bench_params(self) -> tuple[str, list]:
        return ", ".join("?" for _ in self.benches), list(self.benches)

    @cached_property
    def answers(self) -> dict[Run, pd.DataFrame]:
        """Per run, the answers its judge saw: the run's model in its bench (judgment names match an answer
        file's model, model_id or file name, '/' and '__' alike, as the item view matches them); ``exact``
        marks rows whose model, model_id or file name is the run's model as written (the prompt examples)."""
        return self._answers()

    @cached_property
    def example_answers(self) -> dict[Run, pd.DataFrame]:
        """``answers`` of the questions and samples the stored prompts were rendered for, alone (a table without the
        answer areas needs no other answer text: each costs its compressed vector); ``answers`` when read."""
        if "answers" in self.__dict__:
            return self.answers
        return self._example_answers_of(self._examples_wanted())

    def _examples_wanted(self) -> set[tuple[str, int]]:
        return {(row[1], row[3]) for r in self.runs for row in self.prompt_rows[r]}

    def read_examples(self, answers: bool = False) -> None:
        """The judge prompt rows and the answers their examples need (every answer of the runs' models with
        ``answers``), read side by side: two statements at once, where on a DuckLake store each mostly waits on
        its catalog look-ups and Parquet reads. The examples are read for the first rows' questions (sample 0), the
        ones the prompt rows hold unless a first row stored no prompt (rare: then they are read again, in turn)."""
        from concurrent.futures import ThreadPoolExecutor

        if "prompt_rows" in self.__dict__ or "answers" in self.__dict__ or (
                not answers and "example_answers" in self.__dict__):
            return
        guess = {(row[5], 0) for row in self._judgment_keys[0]}
        if not guess and not answers:
            return
        with ThreadPoolExecutor(1) as pool:
            rows = pool.submit(lambda: self.prompt_rows)
            read = self.answers if answers else self._example_answers_of(guess)
            rows.result()
        if not answers and self._examples_wanted() == guess:
            self.__dict__["example_answers"] = read

    def _example_answers_of(self, wanted: set[tuple[str, int]]) -> dict[Run, pd.DataFrame]:
        if not wanted:
            return {r: self._answers("false") for r in self.runs}
        qids = sorted({q for q, _ in wanted})
        samples = sorted({s for _, s in wanted})
        return self._answers(f"a.question_id IN ({', '.join(f'$q{i}' for i in range(len(qids)))}) AND a.sample IN "
                             f"({', '.join(f'$s{i}' for i in range(len(samples)))})",
                             {f"q{i}": q for i, q in enumerate(qids)} | {f"s{i}": x for i, x in enumerate(samples)},
                             category=False)

    def _answers(self, narrow: str = "true", narrow_params: dict | None = None, *,
                 category: bool = True) -> dict[Run, pd.DataFrame]:
        """``category``: False leaves the questions' category out (None): the prompt examples do not read it, and
        on a DuckLake store the join with current_questions (a view over two tables) was most of their read."""
        join = ("LEFT JOIN current_questions q ON q.bench = a.bench AND q.question_id = a.question_id" if category
                else "")
        mk = MODEL_KEY_SQL
        keys = (mk.format('a.model'), mk.format("coalesce(a.model_id, '')"), mk.format("coalesce(a.file_model, '')"))
        flags, params = [], dict(narrow_params or {})
        for i, r in enumerate(self.runs):
            params.update({f"bench{i}": r.bench, f"model{i}": r.model})
            flags.append(f"(a.bench = $bench{i} AND {mk.format(f'$model{i}')} IN ({', '.join(keys)})) AS in_{i}")
            flags.append(f"(a.bench = $bench{i} AND (a.model = $model{i} OR a.model_id = $model{i} "
                         f"OR a.file_model = $model{i})) AS exact_{i}")
        benches = ", ".join(f"$bench{i}" for i in range(len(self.runs)))
        with self.store.read() as cur:
            df = cur.execute(f"""
                SELECT * FROM (
                    SELECT a.question_id, a.turn, a.sample, a.text, a.temperature, a.system_prompt, a.max_chars,
                           a.source_id, {'q.category' if category else 'NULL::VARCHAR AS category'},
                           length(coalesce(a.text, '')) AS chars,
                           contains(coalesce(a.text, ''), '<think>') AS think, {', '.join(flags)}
                    FROM answers a {join}
                    WHERE a.bench IN ({benches}) AND {narrow})
                WHERE {' OR '.join(f'in_{i}' for i in range(len(self.runs)))}
                ORDER BY source_id, {qid_order()}, turn, sample""", params).df()
        cols = [c for c in df.columns if not c.startswith(("in_", "exact_"))]
        return {r: df.loc[df[f"in_{i}"], cols].assign(exact=df.loc[df[f"in_{i}"], f"exact_{i}"]).reset_index(drop=True)
                for i, r in enumerate(self.runs)}

    @cached_property
    def _judgment_keys(self) -> tuple[list[tuple], list[tuple]]:
        """One read of the runs' judgments (keys and scores, no text) for ``stats`` and ``prompt_rows``: per run and
        prompt name the keys of its first sample-0 row (in question order), and per run its ``stats`` row (two
        statements on a DuckLake store paid the catalog twice for the same rows)."""
        where, params = _run_filter(self.runs)
        keys = ", ".join(PROMPT_KEYS)
        # the order of the rows of one name, the same on every store (ties broken down to the prompt text, below)
        order = "coalesce(TRY_CAST(question_id AS BIGINT), 0) * 10 + turn, question_id, source_id"
        rows = _rows(self.store, f"""
            WITH j AS MATERIALIZED (
                SELECT {keys}, sample, parse_status, score FROM single_judgments WHERE {where})
            SELECT 0 AS part, {keys}, NULL AS total, NULL AS failed, NULL AS first_failed, NULL AS judged,
                   NULL AS lo, NULL AS hi FROM (
                SELECT {keys}, row_number() OVER (PARTITION BY harness, bench, judge, model, prompt_name
                                                 ORDER BY {order}) AS n
                FROM j WHERE sample = 0)
            WHERE n = 1
            UNION ALL
            SELECT 1, harness, bench, judge, model, NULL, NULL, NULL, NULL, count(*),
                   count(*) FILTER (parse_status <> 'ok'),
                   arg_min({{'q': question_id, 't': turn, 's': sample}},
                           {{'n': coalesce(TRY_CAST(question_id AS BIGINT), 9223372036854775807), 'q': question_id,
                             't': turn, 's': sample}}) FILTER (parse_status <> 'ok'),
                   count(DISTINCT sample), min(score), max(score)
            FROM j GROUP BY ALL""", params)
        return ([row[1:1 + len(PROMPT_KEYS)] for row in rows if row[0] == 0],
                [row[1:5] + row[1 + len(PROMPT_KEYS):] for row in rows if row[0] == 1])

    @cached_property
    def stats(self) -> dict[Run, dict]:
        """Per run: judgments, judgments without a rating (and the first such item), samples judged, score range."""
        found = {Run(*row[:4]): row[4:] for row in self._judgment_keys[1]}
        out = {}
        for r in self.runs:
            total, failed, first, judged, lo, hi = found.get(r, (0, 0, None, 0, None, None))
            out[r] = {"total": total, "failed": failed, "first_failed": first, "judged_samples": judged,
                      "min": lo, "max": hi}
        return out

    @cached_property
    def prompt_rows(self) -> dict[Run, list[tuple]]:
        """Per run and prompt name (in name order): one stored rendered prompt, of the lowest question and turn,
        sample 0, as ``(prompt_name, question_id, turn, sample, judge_prompt)`` (all from the same row).

        Two reads, and only the few chosen rows' prompt texts: which row is wanted needs its keys alone, and a
        text costs its whole compressed vector (and a Parquet page on a lake) for every row read, or even tested
        for NULL; reading (or testing) every prompt of two runs to keep one per name was most of a Compare click
        at a million judgments. A name whose first row stored no prompt (rare) is read the thorough way."""
        keys = PROMPT_KEYS
        firsts = self._judgment_keys[0]
        texts: dict[tuple, list[str | None]] = {}
        if firsts:  # every row with a first row's keys (ties included), chosen by constant IN lists: exact rows
            values = [sorted({row[i] for row in firsts}, key=str) for i in range(len(keys))]
            conds = " AND ".join(f"{k} IN ({', '.join('?' * len(v))})" for k, v in zip(keys, values))
            for *key, text in _rows(self.store, f"SELECT {', '.join(keys)}, judge_prompt FROM single_judgments "
                                                f"WHERE {conds} AND sample = 0", [x for v in values for x in v]):
                texts.setdefault(tuple(key), []).append(text)
        out: dict[Run, list[tuple]] = {r: [] for r in self.runs}
        thorough = set()
        for row in firsts:
            stored = [t for t in texts.get(tuple(row), []) if t is not None]
            if not stored:
                thorough.add(Run(*row[:4]))
                continue
            out[Run(*row[:4])].append((row[4], row[5], row[6], 0, min(stored)))
        for run in thorough:  # a first row without a prompt: the lowest row that has one, read as before
            where1, params1 = _run_filter((run,))
            out[run] = [tuple(r) for r in _rows(self.store, f"""
                SELECT prompt_name, arg_min(question_id, k), arg_min(turn, k), arg_min(sample, k), arg_min(judge_prompt, k)
                FROM (SELECT prompt_name, question_id, turn, sample, judge_prompt,
                             {{'k': coalesce(TRY_CAST(question_id AS BIGINT), 0) * 10 + turn, 'q': question_id,
                               'src': source_id, 'p': judge_prompt}} AS k
                      FROM single_judgments WHERE {where1} AND judge_prompt IS NOT NULL AND sample = 0)
                GROUP BY ALL""", params1)]
        return {r: sorted(rows, key=lambda row: (row[0] is None, row[0] or "")) for r, rows in out.items()}  # NULLS LAST

    @cached_property
    def questions(self) -> dict[str, dict[str, list[str]]]:
        """bench -> question_id -> turns (the current questions of the runs' benches)."""
        marks, params = self._bench_params()
        out: dict[str, dict[str, list[str]]] = {b: {} for b in self.benches}
        for bench, qid, turns in _rows(self.store, "SELECT bench, question_id, turns FROM current_questions "
                                                    f"WHERE bench IN ({marks})", params):
            out[bench][qid] = list(turns)
        return out

    @cached_property
    def references(self) -> dict[str, list[tuple]]:
        """bench -> [(judge, question_id, turn, text)], in import order (a later file wins)."""
        marks, params = self._bench_params()
        out: dict[str, list[tuple]] = {b: [] for b in self.benches}
        for bench, *rest in _rows(self.store, "SELECT bench, judge, question_id, turn, text FROM reference_answers "
                                              f"WHERE bench IN ({marks}) ORDER BY source_id", params):
            out[bench].append(tuple(rest))
        return out

    @cached_property
    def reported(self) -> dict[Run, int]:
        """Per run: how many metrics the harness reported for its model on its bench."""
        n = _reported_counts(self.store, sorted({(r.model, r.bench) for r in self.runs}))
        return {r: n.get((r.model, r.bench), 0) for r in self.runs}

    def system_prompts(self, names) -> dict[str, str | None]:
        """name -> the system prompt of the newest imported judge_prompts.jsonl entry of that name (None: none)."""
        missing = sorted(set(names) - set(self._system_prompts))
        if missing:
            self._system_prompts.update(dict.fromkeys(missing))
        if missing and not self._every_system_prompt:
            for name, text in reversed(_rows(
                    self.store, f"SELECT name, system_prompt FROM judge_prompts WHERE name IN "
                                f"({', '.join('?' for _ in missing)}) ORDER BY source_id DESC", missing)):
                self._system_prompts[name] = text  # reversed: the newest is written last
        return {n: self._system_prompts[n] for n in names}

    def links(self, bench_a: str, bench_b: str) -> pd.DataFrame:
        if (bench_a, bench_b) not in self._links:
            self._links[(bench_a, bench_b)] = linking.links(self.store, bench_a, bench_b)
        return self._links[(bench_a, bench_b)]

    def link_map(self, bench_a: str, bench_b: str) -> dict:
        """``linking.link_map`` from what is read here."""
        if bench_a == bench_b:
            return {q: (q, "same") for q in self.questions[bench_a]}
        return linking.map_of(self.links(bench_a, bench_b))

    def example_context(self, run: Run, qid: str, sample: int) -> dict | None:
        """The texts one stored prompt was filled with: the question's turns, the answer turns of this sample, the
        reference the run's judge reads."""
        turns = self.questions[run.bench].get(qid)
        if turns is None:
            return None
        df = self.example_answers[run]
        df = df[df["exact"] & (df["question_id"] == qid) & (df["sample"] == sample)]
        ans = {int(t): x for t, x in zip(df["turn"], df["text"])}  # ordered by source_id: the newest file wins
        refs = [(j, t, x) for j, q, t, x in self.references[run.bench] if q == qid]
        judges = sorted({j for j, _, _ in refs})
        use = run.judge if run.judge in judges else (judges[0] if judges else None)
        ref = {int(t): x for j, t, x in refs if j == use}
        ctx = {"question": turns[0] if turns else None}
        for i, text in enumerate(turns, 1):
            ctx[f"question_{i}"] = text
        for t, text in ans.items():
            ctx[f"answer_{int(t)}"] = text
        ctx["answer"] = ctx.get("answer_1")
        for t, text in ref.items():
            ctx[f"ref_answer_{t}"] = text
        return ctx


def _example(run: Run, qid, turn, sample: int = 0) -> str:
    params = link_params(run.bench, str(qid), int(turn), run.model, [run.judge], harness=run.harness)
    if sample:
        params["sample"] = str(int(sample))
    return link(params)


# ---------------------------------------------------------------------------------------------
# Judge prompt templates, reconstructed from the stored rendered prompts
# ---------------------------------------------------------------------------------------------

def _kind(prompt_name: str | None) -> str:
    """'swallow-single-math-v1-multi-turn' / 'ja-single-v1@v2' -> 'single-math-v1-multi-turn' / 'single-v1'."""
    name = (prompt_name or "?").split("@")[0]
    for prefix in ("swallow-", "ja-", "stability-"):
        name = name.removeprefix(prefix)
    return name


def _messages(stored: str | None) -> list[dict]:
    """A stored judge prompt as messages: Swallow stores the JSON message list, FastChat the user prompt."""
    text = stored or ""
    if text.startswith("["):
        try:
            msgs = json.loads(text)
            if isinstance(msgs, list) and all(isinstance(m, dict) for m in msgs):
                return [{"role": m.get("role"), "content": m.get("content") or ""} for m in msgs]
        except ValueError:
            pass
    return [{"role": "user", "content": text}]


def _placeholders(ctx: dict | None, turn: int) -> dict[str, str]:
    if ctx is None:
        return {}
    names = (["question", "answer", "ref_answer_1"] if turn == 1 else
             ["question_1", "answer_1", "question_2", "answer_2", "ref_answer_1", "ref_answer_2"])
    return {n: ctx[n] for n in names if isinstance(ctx.get(n), str) and ctx[n].strip()}


def prompt_templates(store: Store, run: Run) -> dict[str, dict]:
    """Per prompt kind (single-v1, single-math-v1, ... without harness prefixes): the template the run's
    judge saw, rebuilt from one stored rendered prompt by putting the question, answer and reference texts
    back as FastChat placeholders. FastChat does not store the system prompt: it comes from the imported
    judge_prompts.jsonl of that name when one matches, else it is marked not recorded."""
    return _templates(_Reads(store, run), run)


def _templates(reads: _Reads, run: Run) -> dict[str, dict]:
    """The run's templates (shared by every pair the run is in: read them, do not change them)."""
    return reads.per_run("templates", run, lambda: _build_templates(reads, run))


def _build_templates(reads: _Reads, run: Run) -> dict[str, dict]:
    rows = reads.prompt_rows[run]
    parsed = [(row, _messages(row[4])) for row in rows]
    # one look-up for every name whose stored prompt has no system message (all runs': they share the cache)
    reads.system_prompts([row[0] for r in reads.runs for row in reads.prompt_rows[r]
                          if not any(m["role"] == "system" for m in _messages(row[4]))])
    out = {}
    for (name, qid, turn, sample, _stored), msgs in parsed:
        values = _placeholders(reads.example_context(run, qid, int(sample)), int(turn))
        for m in msgs:
            for key, value in sorted(values.items(), key=lambda kv: -len(kv[1])):
                m["content"] = m["content"].replace(value, "{" + key + "}")
        system_note = None
        if not any(m["role"] == "system" for m in msgs):
            system = reads.system_prompts([name])[name]
            if system:
                msgs.insert(0, {"role": "system", "content": system})
                system_note = "system prompt from the imported judge_prompts.jsonl (FastChat does not store it)"
            else:
                system_note = "system prompt not recorded"
        text = "\n\n".join(f"[{m['role']}]\n{m['content']}" for m in msgs)
        out[_kind(name)] = {"prompt_name": name, "text": text, "messages": msgs,
                            "example": (qid, int(turn), int(sample)), "note": system_note}
    return out


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text or "") if s.strip() and not re.fullmatch(r"\[\w+\]|\{\w+\}", s.strip())]


def judge_prompt_diff(store: Store, a: dict | Run, b: dict | Run) -> list[dict]:
    """Per prompt kind both runs used: both reconstructed templates, the character diff (``char_diff`` ops)
    and the sentences only A / only B has (e.g. Swallow's "The expected language is Japanese. ...")."""
    run_a, run_b = resolve_pair(store, a, b)
    return _prompt_diff(_Reads(store, run_a, run_b), run_a, run_b)


def _prompt_diff(reads: _Reads, run_a: Run, run_b: Run) -> list[dict]:
    from lib.render.textdiff import char_diff

    ta, tb = _templates(reads, run_a), _templates(reads, run_b)
    out = []
    for kind in sorted(set(ta) | set(tb)):
        xa, xb = ta.get(kind), tb.get(kind)
        sa, sb = sentences(xa["text"]) if xa else [], sentences(xb["text"]) if xb else []
        out.append({"kind": kind, "a": xa, "b": xb, "ops": char_diff(xa["text"] if xa else "", xb["text"] if xb else ""),
                    "only_a": [s for s in sa if s not in sb], "only_b": [s for s in sb if s not in sa]})
    return out


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------

def _short(text: str, n: int = 160) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _row(area, a, b, differs, evidence, example=None) -> dict:
    return {"area": area, "a": a, "b": b, "differs": differs, "evidence": evidence, "example": example}


def _judge_model(reads: _Reads, ra: Run, rb: Run) -> dict:
    n = {r: reads.stats[r]["total"] for r in (ra, rb)}
    differs = ra.judge != rb.judge
    ev = f"A: {n[ra]} judgments named {ra.judge!r}; B: {n[rb]} named {rb.judge!r}."
    if differs and (ra.judge.startswith(rb.judge) or rb.judge.startswith(ra.judge)):
        ev += (" One name is a dated snapshot of the other: an undated alias points at whichever snapshot was "
               "current when the run was judged, so the two may or may not be the same weights.")
    for note in dict.fromkeys(H.get(r.harness).judge_model_note for r in (ra, rb)):
        ev += f" {note}" if note else ""
    return _row("judge_model", ra.judge, rb.judge, differs, ev)


def _judge_prompt(reads: _Reads, ra: Run, rb: Run) -> dict:
    diffs = _prompt_diff(reads, ra, rb)
    if not diffs:
        return _row("judge_prompt", "no stored prompts", "no stored prompts", None,
                    "Neither run stored the rendered judge prompts.")
    desc = {}
    for side, key in (("a", ra), ("b", rb)):
        names = [d[side]["prompt_name"] for d in diffs if d[side]]
        desc[side] = f"{len(names)} template(s): " + ", ".join(names) if names else "no stored prompts"
    only_a = list(dict.fromkeys(s for d in diffs for s in d["only_a"]))
    only_b = list(dict.fromkeys(s for d in diffs for s in d["only_b"]))
    differs = bool(only_a or only_b or any(not d["a"] or not d["b"] for d in diffs))
    parts = []
    if only_b:
        parts.append("only in B: " + " | ".join(f"“{_short(s, 220)}”" for s in only_b[:6]))
    if only_a:
        parts.append("only in A: " + " | ".join(f"“{_short(s, 220)}”" for s in only_a[:6]))
    notes = {d[s]["note"] for d in diffs for s in ("a", "b") if d[s] and d[s]["note"]}
    ev = ("Templates rebuilt from the stored rendered prompts (question, answer and reference put back as "
          "placeholders); " + ("; ".join(parts) if parts else "the same sentences") + "."
          + (" " + "; ".join(sorted(notes)) + "." if notes else ""))
    first = next((d for d in diffs if d["b"]), diffs[0])
    ex = first["b"]["example"] if first["b"] else first["a"]["example"]
    run = rb if first["b"] else ra
    return _row("judge_prompt", desc["a"], desc["b"], differs, ev, _example(run, *ex))


def _system_prompt(ans: dict[Run, pd.DataFrame], ra: Run, rb: Run) -> dict:
    vals = {}
    for r in (ra, rb):
        sp = ans[r]["system_prompt"].dropna().unique().tolist()
        vals[r] = sp
    def text(sp, run):
        if not sp:
            return H.get(run.harness).system_prompt_missing
        return " / ".join(f"“{_short(s, 120)}”" for s in sp[:3])
    differs = None if (not vals[ra] or not vals[rb]) else sorted(vals[ra]) != sorted(vals[rb])
    ev = ("The answers' system prompt is part of how the answers were made (it is not a judge-side factor); "
          "Swallow records it in every turn context (full_prompt), FastChat does not.")
    return _row("system_prompt", text(vals[ra], ra), text(vals[rb], rb), differs, ev)


def _sample_side(reads: _Reads, df: pd.DataFrame, r: Run) -> tuple[str, int, str | None]:
    """One run's samples line: (description, samples per item, an example of differing samples or None)."""
    if df.empty:
        return "no answers stored", 0, None
    example = None
    g = df.groupby(["question_id", "turn"])
    n = int(g["sample"].nunique().max())
    text = f"{n} sample(s) per item"
    if n > 1:
        distinct = g["text"].nunique()
        copies = int((distinct == 1).sum())
        cats = sorted(df[df.set_index(["question_id", "turn"]).index.isin(distinct[distinct == 1].index)]
                      ["category"].dropna().unique())
        text += (f"; identical copies on {copies} of {len(distinct)} items"
                 + (f" ({', '.join(cats)})" if cats else ""))
        varied = distinct[distinct > 1]
        if len(varied):
            qid, turn = varied.index[0]
            example = _example(r, qid, turn, 1)
    judged = reads.stats[r]["judged_samples"]
    return text + f"; {judged} judged per item", n, example


def _samples(reads: _Reads, ans: dict[Run, pd.DataFrame], ra: Run, rb: Run) -> dict:
    desc, per, examples = {}, {}, []
    for r in (ra, rb):
        desc[r], per[r], ex = reads.per_run("samples", r, lambda: _sample_side(reads, ans[r], r))
        examples.append(ex)
    example = next((ex for ex in examples if ex is not None), None)  # A's if it has one
    # are the two runs' first answers the same texts?
    same = ""
    a0 = ans[ra][ans[ra]["sample"] == 0][["question_id", "turn", "text"]]
    b0 = ans[rb][ans[rb]["sample"] == 0][["question_id", "turn", "text"]]
    lf = reads.link_map(ra.bench, rb.bench)
    if not a0.empty and not b0.empty and lf:
        a0 = a0.assign(qb=a0["question_id"].map(lambda q: lf.get(q, (None,))[0]))
        m = a0.merge(b0, left_on=["qb", "turn"], right_on=["question_id", "turn"], suffixes=("_a", "_b"))
        if len(m):
            eq = int((m["text_a"] == m["text_b"]).sum())
            same = (f" Sample 0 of B is the same text as A's answer on {eq} of {len(m)} linked items"
                    + (": the answers themselves are shared, so a gap comes from judging." if eq == len(m) else "."))
    ev = ("Swallow generates 5 samples per item and judges each (the harness averages them); at temperature 0 the "
          "fork makes one call and copies it 5 times. FastChat judges choices[0] only." + same)
    return _row("samples", desc[ra], desc[rb], per[ra] != per[rb], ev, example)


def _temperature(ans: dict[Run, pd.DataFrame], ra: Run, rb: Run) -> dict:
    desc, vals = {}, {}
    for r in (ra, rb):
        df = ans[r].dropna(subset=["temperature"])
        if df.empty:
            desc[r], vals[r] = "not recorded" + H.get(r.harness).temperature_missing, None
            continue
        t = df.groupby("category")["temperature"].agg(lambda s: sorted(set(s)))
        vals[r] = {c: v for c, v in t.items()}
        desc[r] = ", ".join(f"{c} {'/'.join(f'{x:g}' for x in v)}" for c, v in t.items())
    differs = None if vals[ra] is None or vals[rb] is None else vals[ra] != vals[rb]
    return _row("temperature", desc[ra], desc[rb], differs,
                "Per category, as recorded with the answers (Swallow: specifics.temperature, the fork's "
                "CATEGORY_TEMPERATURE_MAP, which overrides any user setting).")


def _truncation(ans: dict[Run, pd.DataFrame], ra: Run, rb: Run) -> dict:
    desc, limits, example = {}, {}, None
    at_limit = {}
    for r in (ra, rb):
        df = ans[r]
        if df.empty:
            desc[r], limits[r], at_limit[r] = "no answers", None, 0
            continue
        lim = df["max_chars"].dropna().unique().tolist()
        limits[r] = int(lim[0]) if lim else None
        counts = {n: int((df["chars"] == n).sum()) for n in TRUNCATION_LIMITS}
        at_limit[r] = sum(counts.values())
        desc[r] = (f"longest answer {int(df['chars'].max()):,} chars; "
                   + ", ".join(f"{v} at exactly {k:,}" for k, v in counts.items())
                   + (f"; cut at {limits[r]:,} chars" if limits[r] else "; no limit recorded"))
        hit = df[df["chars"].isin(TRUNCATION_LIMITS)]
        if len(hit) and example is None:
            row = hit.iloc[0]
            example = _example(r, row["question_id"], row["turn"], row["sample"])
    ev = ("Swallow keeps the first 8,192 characters of each answer (6,144 for the _truncate_6144 task), after "
          "reasoning removal, in both turns; FastChat does not cut. ")
    ev += ("No answer reaches a limit here, so truncation cannot explain a gap." if not any(at_limit.values())
           else f"{at_limit[ra]} (A) and {at_limit[rb]} (B) answers are exactly at a limit: cut there.")
    return _row("truncation", desc[ra], desc[rb], limits[ra] != limits[rb], ev, example)


def _reasoning(ans: dict[Run, pd.DataFrame], ra: Run, rb: Run) -> dict:
    desc, n, example = {}, {}, None
    for r in (ra, rb):
        df = ans[r]
        n[r] = int(df["think"].sum()) if len(df) else 0
        desc[r] = f"{n[r]} of {len(df)} judged answers contain <think>"
        if n[r] and example is None:
            row = df[df["think"]].iloc[0]
            example = _example(r, row["question_id"], row["turn"], row["sample"])
    ev = ("What the judge saw: FastChat (any version we could read) judges answers with their <think> blocks; "
          "Swallow stores only the final content when a reasoning parser split it off (LiteLLM also moves a "
          "leading <think> block away), so its judge never sees reasoning unless the tag was never closed.")
    return _row("reasoning", desc[ra], desc[rb], (n[ra] > 0) != (n[rb] > 0), ev, example)


def _reference_sets(reads: _Reads, run: Run) -> tuple[str, dict]:
    """(description, {(qid, turn): text} of the references this run's judge used)."""
    rows = reads.references[run.bench]
    by_judge: dict[str, dict] = {}
    for judge, qid, turn, text in rows:
        by_judge.setdefault(judge, {})[(qid, int(turn))] = text
    if not by_judge:
        return "none stored", {}
    used = run.judge if run.judge in by_judge else sorted(by_judge)[0]
    distinct = {json.dumps(sorted((f"{q}:{t}", linking.normalize(x)) for (q, t), x in v.items()), ensure_ascii=False)
                for v in by_judge.values()}
    if H.get(run.harness).reference_source == "dataset":
        desc = f"one set (the dataset's reference column, {len({q for q, _ in by_judge[used]})} questions)"
    else:
        desc = (f"{len(by_judge)} file(s) ({', '.join(sorted(by_judge))})"
                + ("; identical content" if len(distinct) == 1 else f"; {len(distinct)} different contents")
                + f"; judge {run.judge} reads {used}.jsonl")
    return desc, by_judge[used]


def _references(reads: _Reads, ra: Run, rb: Run) -> dict:
    da, refs_a = _reference_sets(reads, ra)
    db, refs_b = _reference_sets(reads, rb)
    lm = reads.link_map(ra.bench, rb.bench)
    differ, compared, example = [], 0, None
    for (qid, turn), text in sorted(refs_a.items(), key=lambda kv: (linking.id_key(kv[0][0]).zfill(8), kv[0][1])):
        if qid not in lm or (lm[qid][0], turn) not in refs_b:
            continue
        compared += 1
        if linking.normalize(text) != linking.normalize(refs_b[(lm[qid][0], turn)]):
            differ.append((qid, turn))
    qs = sorted({q for q, _ in differ}, key=linking.id_key)
    if differ:
        example = _example(ra, differ[0][0], differ[0][1])
    ev = (f"Compared on {compared} linked question turns: the reference texts differ on {len(differ)} "
          f"({len(qs)} questions{': ' + ', '.join(qs[:10]) if qs else ''}). Only math, reasoning and coding "
          "prompts show the reference to the judge.")
    return _row("references", da, db, bool(differ) if compared else None, ev, example)


def _parse_failures(reads: _Reads, ra: Run, rb: Run) -> dict:
    desc, rates, example = {}, {}, None
    for r in (ra, rb):
        total, failed = reads.stats[r]["total"], reads.stats[r]["failed"]
        rule = H.get(r.harness).failure_treatment
        desc[r] = f"{failed} of {total} judgments without a rating ({100 * failed / max(total, 1):.1f}%); {rule}"
        rates[r] = (failed, r.harness)
        if failed and example is None:
            first = reads.stats[r]["first_failed"]
            example = _example(r, first["q"], first["t"], first["s"])
    ev = ("JudgeLens leaves every judgment without a usable rating out of its means, the same way for both runs; "
          "a harness's own number may treat them differently (see the Overview's harness column).")
    differs = rates[ra][1] != rates[rb][1] or (rates[ra][0] > 0) != (rates[rb][0] > 0)
    return _row("parse_failures", desc[ra], desc[rb], differs, ev, example)


def _scale(reads: _Reads, ra: Run, rb: Run) -> dict:
    desc, scales = {}, {}
    for r in (ra, rb):
        lo, hi = reads.stats[r]["min"], reads.stats[r]["max"]
        reported = reads.reported[r]
        scales[r] = H.get(r.harness).scale_for(r.bench)   # the harness rules' scale on this bench
        low, high = scales[r]
        desc[r] = (f"{low:g}-{high:g} per judgment (seen {lo:g}-{hi:g})" if lo is not None else "no scores") + (
            _reported_scale(r) if reported else "")
    return _row("scale", desc[ra], desc[rb],
                scales[ra] != scales[rb] or desc[ra].split(";")[1:] != desc[rb].split(";")[1:],
                "JudgeLens compares every run on its judges' own ratings (each harness's scale: 1-10 for FastChat "
                "and Swallow, 0-10 for Nejumi); Swallow's headline numbers are the same means divided by 10.")


def _reported_scale(run: Run) -> str:
    h = H.get(run.harness)
    if h.reported_scale == 1:
        return ""
    return f"; the results file reports 0-{h.scale[1] * h.reported_scale:g} (means ÷ {1 / h.reported_scale:g})"


def _questions(reads: _Reads, ra: Run, rb: Run) -> dict:
    n = {r: len(reads.questions[r.bench]) for r in (ra, rb)}
    if ra.bench == rb.bench:
        return _row("questions", f"{n[ra]} in {ra.bench}", f"{n[rb]} in {rb.bench}", False, "The same bench.")
    links_df = reads.links(ra.bench, rb.bench)
    s = linking.summary_of(links_df, n[ra], n[rb])
    loose = links_df[links_df["method"].isin(["edited", "fuzzy"])]
    example = _example(ra, loose.iloc[0]["question_id_a"], (loose.iloc[0]["edited_turns"] or [1])[0]) if len(loose) else None
    ev = (f"{s['linked']} linked: {s['exact']} exact, {s['edited']} edited, {s['fuzzy']} fuzzy, {s['manual']} manual; "
          f"{n[ra] - s['linked']} of A's questions unlinked. Edited and fuzzy links ask a differently worded question.")
    return _row("questions", f"{n[ra]} in {ra.bench}", f"{n[rb]} in {rb.bench}",
                bool(s["edited"] or s["fuzzy"] or s["linked"] < max(n[ra], n[rb])), ev, example)


def setup_context(store: Store, benches: tuple[str, ...]) -> dict:
    """What a setup table reads that no pick of a run changes, for ``harness_diff(..., context=...)`` and
    ``harness_diffs``: the questions and reference answers of ``benches`` and the system prompt of every imported
    judge prompt name, the links between each two of them in both orientations (one read a pair) and every model's
    count of reported metrics (small tables). A page keeps it per data version (and links version) for every
    bench a pick can name (the Compare page's two-harness view: every bench of the model's runs), so picking
    another run, judge or model reads only the runs' own rows (on a DuckLake store each query pays its catalog
    look-ups: 4 of a pick's 9 queries were these)."""
    benches = list(dict.fromkeys(benches))
    reads = _Reads(store, *(Run("", b, "", "") for b in benches))
    names = [row[0] for row in _rows(store, "SELECT DISTINCT name FROM judge_prompts", [])]
    prompts = reads.system_prompts(names)
    links = {}
    for i, a in enumerate(benches):
        for b in benches[i + 1:]:
            links.update(linking.links_both_ways(store, a, b))
    return {"questions": reads.questions, "references": reads.references,
            "system_prompts": {n: prompts[n] for n in sorted(prompts)}, "links": links,
            "reported": _reported_counts(store, None)}


def link_summary_of(context: dict, bench_a: str, bench_b: str) -> dict[str, int]:
    """``linking.link_summary`` of two different benches from their ``setup_context`` (no read)."""
    return linking.summary_of(context["links"][(bench_a, bench_b)], len(context["questions"][bench_a]),
                              len(context["questions"][bench_b]))


def harness_diff(store: Store, a: dict | Run, b: dict | Run, *, answers: tuple | None = None,
                 context: dict | None = None) -> pd.DataFrame:
    """The setup table "area | run A | run B | differs | evidence" (+ ``example``, a relative item link).

    ``answers``: ``(model_answers of A's bench and model, model_answers of B's)`` when the caller keeps them (every
    run of a model on a bench was judged on the same answers: a page picking another judge reads none again).
    ``context``: ``setup_context`` of the runs' benches, when the caller keeps it."""
    ra, rb = resolve_pair(store, a, b)
    reads = _Reads(store, ra, rb)  # each table read once, for both runs
    reads.use_context(context)
    if answers is not None:
        reads.__dict__["answers"] = {ra: answers[0], rb: answers[1]}  # the cached property, filled
    return _table(reads, ra, rb)


def model_answers(store: Store, bench: str, model: str) -> pd.DataFrame:
    """The answers every run of ``model`` on ``bench`` was judged on, as the setup table reads them (for
    ``harness_diff(..., answers=...)``; each answer text read costs its compressed vector or Parquet page)."""
    run = Run("", bench, "", model)
    return _Reads(store, run).answers[run]


def harness_diffs(store: Store, pairs: list[tuple[Run, Run]], areas=AREAS, *,
                  context: dict | None = None) -> list[pd.DataFrame]:
    """``harness_diff`` of several pairs of runs, each table read once for all their runs (the agreement page's
    setup lines: one pair per two judges, 10 pairs of 5 judges read every table 10 times). ``areas``: the rows
    wanted, in ``AREAS`` order (the answer areas' rows read every answer text of the runs' models)."""
    unknown = sorted(set(areas) - set(AREAS))
    if unknown:
        raise ValueError(f"unknown setup area(s): {', '.join(unknown)}")
    reads = _Reads(store, *(r for pair in pairs for r in pair))
    reads.use_context(context)  # as in ``harness_diff``
    return [_table(reads, ra, rb, areas) for ra, rb in pairs]


def _table(reads: _Reads, ra: Run, rb: Run, areas=AREAS) -> pd.DataFrame:
    make = {"judge_model": lambda: _judge_model(reads, ra, rb), "judge_prompt": lambda: _judge_prompt(reads, ra, rb),
            "system_prompt": lambda: _system_prompt(reads.answers, ra, rb),
            "samples": lambda: _samples(reads, reads.answers, ra, rb),
            "temperature": lambda: _temperature(reads.answers, ra, rb),
            "truncation": lambda: _truncation(reads.answers, ra, rb), "reasoning": lambda: _reasoning(reads.answers, ra, rb),
            "references": lambda: _references(reads, ra, rb), "parse_failures": lambda: _parse_failures(reads, ra, rb),
            "scale": lambda: _scale(reads, ra, rb), "questions": lambda: _questions(reads, ra, rb)}
    if "judge_prompt" in areas:  # its prompt rows beside the answers it (or the answer areas) reads
        reads.read_examples(answers=any(area in ANSWER_AREAS for area in areas))
    if any(area in ANSWER_AREAS for area in areas):
        reads.answers  # before the judge prompt's examples: they come from it then, not from a read of their own
    df = pd.DataFrame([make[area]() for area in AREAS if area in areas], columns=COLUMNS)
    df["differs"] = df["differs"].astype(object)
    df["example"] = df["example"].astype(object).where(df["example"].notna(), None)
    df.attrs.update(run_a=ra.selector, run_b=rb.selector, label_a=ra.label, label_b=rb.label)
    return df


def records(df: pd.DataFrame) -> list[dict]:
    """The table as the CLI's JSON: area, a, b, differs, evidence (an example item's link ends the evidence)."""
    out = []
    for row in df.to_dict(orient="records"):
        ev = row["evidence"] + (f" Example: {row['example']}" if row.get("example") else "")
        out.append({"area": row["area"], "a": row["a"], "b": row["b"], "differs": row["differs"], "evidence": ev})
    return out
