"""Runs and their comparison across linked benches (harness vs harness).

A *run* is one harness's judgments of one model on one bench by one judge: (harness, bench, judge,
model). A selector (``lib.analysis.selectors``) names a run with any subset of those keys; the model
name resolves through ``lib.analysis.aliases`` (``model=shisa-ai/shisa-v2-llama3.1-8b`` finds Swallow's
``hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b``).

``paired_runs(store, a, b)`` pairs run A's items with run B's on *linked* questions
(``lib.analysis.linking``: the same question in two benches) and the same turn, and returns the frame
``lib.analysis.deltas.compare_pairs`` takes. Item scores:

- ``swallow_samples="mean"`` (default): the item's mean over its valid samples (Swallow's 5; FastChat's
  repeats), parse failures left out, as everywhere in JudgeLens;
- ``"first"``: sample 0 only, the closest thing to FastChat's single sample (FastChat items are sample 0
  anyway; repeated judgments of it are averaged).

Links that are ``edited`` or ``fuzzy`` (the question text differs between the benches) are kept and marked
in the ``link`` column; ``exclude_links=("edited", "fuzzy")`` leaves them out.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from lib.analysis import aliases, linking
from lib.analysis.score_copy import ScoreCopy
from lib.analysis.selectors import check_selector, describe
from lib.errors import UsageError
from lib.store import Store

SAMPLE_MODES = ("mean", "first")
PAIRING_NOTE = ("Across two benches, items pair by linked question (the same question in both benches: exact, edited "
                "or fuzzy text match, or linked by hand) and turn; the question of A is the unit.")
PAIR_COLUMNS = ["question", "bench_a", "question_id_a", "bench_b", "question_id_b", "link", "similarity",
                "category", "turn", "score_a", "score_b"]


@dataclass(frozen=True)
class Run:
    harness: str
    bench: str
    judge: str
    model: str

    @property
    def selector(self) -> dict:
        return {"harness": self.harness, "bench": self.bench, "judge": self.judge, "model": self.model}

    @property
    def label(self) -> str:
        return f"{self.harness} · {self.bench} · {self.judge} · {self.model}"


def runs(store: Store) -> pd.DataFrame:
    """Every run in the store with its canonical model name and item count."""
    with store.read() as cur:
        df = cur.execute("""SELECT harness, bench, judge, model, count(*) FILTER (score IS NOT NULL) AS items
                            FROM item_scores GROUP BY ALL ORDER BY harness, bench, judge, model""").df()
    df.insert(4, "canonical", df["model"].map(aliases.canonical_map(store, df["model"].unique())))
    return df


def resolve_run(store: Store, selector: dict, name: str = "selector") -> Run:
    """The one run a selector names. ``UsageError`` if it names none or several (with the candidates)."""
    return _pick(store, selector, name, _candidates(store), None)


def resolve_pair(store: Store, a: dict | Run, b: dict | Run) -> tuple[Run, Run]:
    """Runs A and B of a comparison (``Run`` objects pass through), as ``resolve_run`` names them, from one read
    of the runs and one of the aliases (each query is a catalog round trip on a DuckLake store)."""
    if isinstance(a, Run) and isinstance(b, Run):
        return a, b
    cands = _candidates(store)
    table = aliases.alias_table(store)
    return tuple(r if isinstance(r, Run) else _pick(store, r, name, cands, table) for r, name in ((a, "A"), (b, "B")))


def _candidates(store: Store) -> list[tuple]:
    with store.read() as cur:
        return cur.execute("SELECT DISTINCT harness, bench, judge, model FROM item_scores WHERE score IS NOT NULL "
                           "ORDER BY ALL").fetchall()


def _pick(store: Store, selector: dict, name: str, cands: list[tuple], table) -> Run:
    sel = check_selector(selector, name)
    if "model" in sel:
        same = set(aliases.names_for(store, sel["model"], known=sorted({c[3] for c in cands}), table=table))
    for key, i in (("harness", 0), ("bench", 1), ("judge", 2)):
        if key in sel:
            cands = [c for c in cands if c[i] == sel[key] or c[i].casefold() == sel[key].casefold()]
    if "model" in sel:
        cands = [c for c in cands if c[3] in same]
    if not cands:
        raise UsageError(f"{name} {describe(sel)!r} selects no judged items. See python -m lib.cli scores "
                         "--by harness,bench,judge,model for what is loaded.")
    if len(cands) > 1:
        shown = "; ".join(f"harness={h},bench={b},judge={j},model={m}" for h, b, j, m in cands[:8])
        more = f" (and {len(cands) - 8} more)" if len(cands) > 8 else ""
        raise UsageError(f"{name} {describe(sel)!r} matches {len(cands)} runs: {shown}{more}. Add keys to pick one.")
    return Run(*cands[0])


def _item_scores(store: Store, run_a: Run, run_b: Run, samples: str,
                 copy: ScoreCopy | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Run A's and run B's item scores (question_id, turn, category, score), from one read of both (on a DuckLake
    store each statement pays its catalog look-ups); with ``samples`` "mean", of ``copy`` when given (the store's
    ``score_copy``: no read of the store)."""
    if samples not in SAMPLE_MODES:
        raise UsageError(f"swallow samples: choose {' or '.join(SAMPLE_MODES)}, not {samples!r}")
    keys = ("harness", "bench", "judge", "model")
    params = {f"{k}{i}": v for i, r in enumerate((run_a, run_b)) for k, v in r.selector.items()}
    # a join on the two runs' keys (with which side each is): DuckDB pushes its keys into the scan, so a DuckDB file
    # reads the two runs' blocks alone (an IN list of row values read every block: 4x slower at 1M)
    both = (f"JOIN (VALUES {', '.join('(' + ', '.join([str(i)] + [f'${k}{i}' for k in keys]) + ')' for i in (0, 1))}) "
            f"r(side, {', '.join(keys)}) ON {' AND '.join(f's.{k} = r.{k}' for k in keys)}")
    mean = f"""SELECT r.side, s.question_id, s.turn, s.category, s.score FROM item_scores s {both}
               WHERE s.score IS NOT NULL"""
    df = copy.frame(mean, [run_a.selector, run_b.selector], params) if copy is not None and samples == "mean" else None
    if df is None:
        with store.read() as cur:
            df = cur.execute(mean if samples == "mean" else f"""
                SELECT r.side, s.question_id, s.turn, any_value(q.category) AS category, avg(s.score) AS score
                FROM single_judgments s {both}
                LEFT JOIN current_questions q ON q.bench = s.bench AND q.question_id = s.question_id
                WHERE s.sample = 0 AND s.score IS NOT NULL
                GROUP BY r.side, s.question_id, s.turn""", params).df()
    return tuple(df.loc[df["side"] == i, ["question_id", "turn", "category", "score"]].reset_index(drop=True)
                 for i in (0, 1))


def _link_frame(store: Store, bench_a: str, bench_b: str, context: dict | None = None) -> pd.DataFrame:
    if bench_a == bench_b:
        if context is not None and bench_a in context["questions"]:
            df = pd.DataFrame({"question_id_a": list(context["questions"][bench_a])})
            df["question_id_b"] = df["question_id_a"]
        else:
            with store.read() as cur:
                df = cur.execute("SELECT question_id AS question_id_a, question_id AS question_id_b FROM "
                                 "current_questions WHERE bench = ?", [bench_a]).df()
        return df.assign(link="same", similarity=1.0)
    df = context["links"][(bench_a, bench_b)] if context is not None and (bench_a, bench_b) in context["links"] \
        else linking.links(store, bench_a, bench_b)
    df = df[df["method"].isin(["exact", "edited", "fuzzy", "manual"])]
    return df.rename(columns={"method": "link"})[["question_id_a", "question_id_b", "link", "similarity"]]


def paired_runs(store: Store, a: dict | Run, b: dict | Run, *, swallow_samples: str = "mean",
                exclude_links: tuple[str, ...] = (), context: dict | None = None,
                copy: ScoreCopy | None = None) -> pd.DataFrame:
    """Run A's and run B's items on linked questions, same turn (see the module docstring).

    Columns: ``PAIR_COLUMNS`` (``question`` = ``"bench_a:question_id_a"``, the cluster key ``compare_pairs``
    needs; ``link`` = exact | edited | fuzzy | manual | same). ``attrs``: ``run_a``, ``run_b``, ``links``
    (counts per method among the pairs), ``excluded`` (items left out by ``exclude_links``), ``note``
    (``run_a``/``run_b`` are the runs' full selectors: attrs stay JSON-serialisable for Streamlit).
    ``context``: ``harness_diff.setup_context`` of the runs' benches when the caller keeps it (its question ids and
    links, read again otherwise). ``copy``: the store's ``score_copy`` when the caller keeps it (the runs' item
    scores are read there).
    """
    run_a = a if isinstance(a, Run) else resolve_run(store, a, "A")
    run_b = b if isinstance(b, Run) else resolve_run(store, b, "B")
    if run_a == run_b:
        raise UsageError("A and B name the same run: pick two different ones.")
    sa, sb = _item_scores(store, run_a, run_b, swallow_samples, copy)
    lf = _link_frame(store, run_a.bench, run_b.bench, context)
    sa = sa.rename(columns={"question_id": "question_id_a", "category": "category_a", "score": "score_a"})
    sb = sb.rename(columns={"question_id": "question_id_b", "category": "category_b", "score": "score_b"})
    df = sa.merge(lf, on="question_id_a").merge(sb, on=["question_id_b", "turn"])
    df = df.assign(bench_a=run_a.bench, bench_b=run_b.bench,
                   question=run_a.bench + ":" + df["question_id_a"].astype(str),
                   category=df["category_a"].where(df["category_a"].notna(), df["category_b"]))
    df = df[PAIR_COLUMNS]
    excluded = int(df["link"].isin(exclude_links).sum()) if exclude_links else 0
    if exclude_links:
        df = df[~df["link"].isin(exclude_links)]
    df = df.sort_values(["question_id_a", "turn"], key=lambda s: pd.to_numeric(s, errors="coerce")
                        if s.name == "question_id_a" else s).reset_index(drop=True)
    df["turn"] = df["turn"].astype(int)
    df["category"] = df["category"].astype(object)
    note = ""
    if df.empty:
        if lf.empty:
            note = (f"No question of {run_a.bench} is linked to {run_b.bench}. Link them: python -m lib.cli links "
                    f"--a {run_a.bench} --b {run_b.bench} --auto (or on the Compare page).")
        else:
            note = f"{len(lf)} questions are linked, but A and B have no scored item on the same linked question and turn."
    df.attrs.update(run_a=run_a.selector, run_b=run_b.selector, links=df.drop_duplicates("question")["link"].value_counts().to_dict(),
                    excluded=excluded, note=note, swallow_samples=swallow_samples,
                    label=f"{run_a.label}  vs  {run_b.label}")
    return df


def compare_runs(store: Store, a: dict | Run, b: dict | Run, *, levels=("cell", "category", "turn", "all"),
                 swallow_samples: str = "mean", exclude_links: tuple[str, ...] = (), alpha: float = 0.05,
                 each_level: bool = True, context: dict | None = None, copy: ScoreCopy | None = None) -> pd.DataFrame:
    """``compare_pairs`` over ``paired_runs``: the A - B table across linked benches. With ``each_level``
    every level is its own Holm family (as the Compare page and the CLI show them, one level at a time).
    ``context``, ``copy``: as in ``paired_runs``."""
    from lib.analysis.deltas import compare_pairs

    pairs = paired_runs(store, a, b, swallow_samples=swallow_samples, exclude_links=exclude_links, context=context,
                        copy=copy)
    levels = (levels,) if isinstance(levels, str) else tuple(levels)
    if each_level:
        parts = [compare_pairs(pairs, levels=(lv,), alpha=alpha) for lv in levels]
        df = pd.concat(parts, ignore_index=True) if any(len(p) for p in parts) else parts[0]
        df.attrs.update(parts[0].attrs)
    else:
        df = compare_pairs(pairs, levels=levels, alpha=alpha)
    df.attrs.update({k: pairs.attrs[k] for k in ("run_a", "run_b", "links", "excluded", "note", "label",
                                                  "swallow_samples")})
    return df


def harness_matrix(store: Store) -> pd.DataFrame:
    """Model (canonical name) x run: JudgeLens's overall mean beside the harness's own number.

    Long format: model, harness, bench, judge, ours, harness_own, n_items (``lib.analysis.queries.leaderboard``
    per run; the model named by its canonical alias so one model's runs under both harnesses line up).
    """
    from lib.analysis.queries import leaderboard

    board = leaderboard(store)
    if board.empty:
        return pd.DataFrame(columns=["model", "harness", "bench", "judge", "ours", "harness_own", "n_items"])
    out = pd.DataFrame({"model": board["model"].map(aliases.canonical_map(store, board["model"].unique())), "harness": board["harness"], "bench": board["bench"],
                        "judge": board["judge"], "ours": board["overall"], "harness_own": board["overall_harness"],
                        "n_items": board["n_items"]})
    return out.sort_values(["model", "harness", "bench", "judge"]).reset_index(drop=True)


def matrix_wide(long: pd.DataFrame) -> pd.DataFrame:
    """``harness_matrix`` as one row per model and two columns per run: ``<run>`` (JudgeLens) and
    ``<run> (harness)`` (the harness's own number)."""
    if long.empty:
        return pd.DataFrame(columns=["model"])
    long = long.assign(run=long["harness"] + " · " + long["bench"] + " · " + long["judge"])
    ours = long.pivot_table(index="model", columns="run", values="ours", aggfunc="first")
    own = long.pivot_table(index="model", columns="run", values="harness_own", aggfunc="first")
    cols = {}
    for run in sorted(long["run"].unique()):
        cols[run] = ours.get(run)
        cols[f"{run} (harness)"] = own.get(run)
    return pd.DataFrame(cols).reset_index()


def harness_matrix_wide(store: Store) -> pd.DataFrame:
    """``matrix_wide(harness_matrix(store))``: what the Overview shows, in one call a page can cache (the pivot
    costs a few tenths of a second at 1,250 models)."""
    return matrix_wide(harness_matrix(store))


def gap_headline(table: pd.DataFrame, largest: int = 3) -> str:
    """The two-harness result in one line, from a ``compare_runs`` table holding the "all" row and the category
    rows: the gap A - B with its 95% interval and questions, then the ``largest`` categories by |delta|, each
    with its interval, marked when significant after Holm. '' when the table has no "all" row."""
    overall = table[table["level"] == "all"]
    if overall.empty:
        return ""
    row = overall.iloc[0]
    ci = _interval(row)
    n = int(row["n_questions"])
    text = f"A − B = {row['delta']:+.2f} points ({'95% CI ' + ci + ', ' if ci else ''}{n} question{'s' if n != 1 else ''})."
    cats = table[(table["level"] == "category") & table["delta"].notna()]
    if not cats.empty:
        top = cats.reindex(cats["delta"].abs().sort_values(ascending=False).index).head(largest)
        parts = []
        for _, c in top.iterrows():
            notes = [n for n in (_interval(c), "significant after Holm" if bool(c["significant"]) else "") if n]
            parts.append(f"{c['category']} {c['delta']:+.2f}" + (f" ({', '.join(notes)})" if notes else ""))
        text += " Largest categories: " + "; ".join(parts) + "."
    return text


def _interval(row) -> str:
    lo, hi = row.get("ci_low"), row.get("ci_high")
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return ""
    return f"{lo:+.2f} to {hi:+.2f}"
