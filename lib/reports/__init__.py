"""Self-contained HTML reports (a judge comparison, a probe run, one model under two harnesses): safe to email,
open offline. They assemble analyses, so they sit above lib.analysis and lib.judging (lib.render holds the
pure helpers they draw with).

Everything is in one file: the filters, the headline tables, the charts (plotly.js inlined once) and
the largest disagreements with each judge's rationale. Every piece of text from the store is
HTML-escaped; the file loads nothing from the network.
"""
from __future__ import annotations

import datetime as dt
import html
from concurrent.futures import ThreadPoolExecutor

import pandas as pd

from lib.analysis import agreement, agreement_ci, reliability
from lib.render import charts
from lib.analysis import deltas
from lib.analysis import item_view
from lib.keys import ItemKey
from lib.reports.summary import agreement_summary, harness_summary
from lib.store import Store

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:1100px;color:#222;padding:0 1rem}
h1{margin-bottom:.2rem} .meta{color:#666;font-size:.9rem} table{border-collapse:collapse;margin:.6rem 0 1.2rem;font-size:.85rem}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:right} th{background:#f5f5f5} td.t,th.t{text-align:left}
pre{white-space:pre-wrap;word-break:break-word;background:#f7f7f7;border:1px solid #e5e5e5;border-radius:6px;padding:8px;
font-size:.8rem;max-height:24rem;overflow:auto} .item{border-top:2px solid #eee;margin-top:1.4rem;padding-top:.6rem}
.cols{display:grid;grid-template-columns:repeat(auto-fit,minmax(300px,1fr));gap:12px} .note{color:#555;font-size:.85rem}
.summary{font-size:1.05rem;line-height:1.5;background:#f3f6fb;border-left:4px solid #4a7bd0;padding:.6rem .9rem}
"""


def _e(value) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def _table(df: pd.DataFrame, digits: int = 3) -> str:
    head = "".join(f'<th class="{"t" if df[c].dtype == object else ""}">{_e(c)}</th>' for c in df.columns)
    rows = []
    for rec in df.itertuples(index=False):
        cells = []
        for value in rec:
            if isinstance(value, float):
                cells.append(f"<td>{'' if pd.isna(value) else f'{value:.{digits}f}'}</td>")
            else:
                cells.append(f'<td class="t">{_e(value)}</td>')
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def build_report(store: Store, judges: list[str], *, bench: str | None = None, model: str | None = None,
                 turn: int | None = None, category: str | None = None, top: int = 15,
                 table: pd.DataFrame | None = None, intervals: pd.DataFrame | None = None, heatmap=None) -> str:
    """The report as one HTML string (about 2 MB: plotly.js is inlined, compressed, so it works offline).

    ``table`` and ``intervals``: ``agreement.agreement`` and ``agreement_ci.agreement_ci`` of these judges and
    filters, and ``heatmap``, ``charts.agreement_heatmap(table, "qwk")``, when the caller has them already (the
    page's cache: the intervals are a 2,000-replicate bootstrap per pair); computed here otherwise."""
    judges = agreement.check_choice(judges, minimum=2)  # item_matrix checks the names against the store
    filters = {"bench": bench, "model": model, "turn": turn, "category": category}
    with ThreadPoolExecutor(1) as pool:
        # The largest disagreements and their texts, read while the tables and charts below are computed: their
        # rationales lie scattered through the judgments (on a lake, through every row group of the column): at a
        # million judgments on a lake, these reads take about 0.35 s beside 0.3 s of bootstrap and figures.
        largest = pool.submit(_largest_disagreements, store, judges, filters, top)
        return _report(store, judges, filters, largest, table, intervals, heatmap)


def _largest_disagreements(store: Store, judges: list[str], filters: dict,
                           top: int) -> tuple[pd.DataFrame, list[ItemKey], list[dict]]:
    """The report's ``top`` largest disagreements, their keys and ``item_view.items_of`` of them."""
    worst = agreement.disagreements(store, judges, limit=top, **filters)
    keys = [ItemKey(r.bench, r.question_id, int(r.turn), r.model) for r in worst.itertuples()]
    return worst, keys, item_view.items_of(store, keys, prompts=False)  # 3 queries, not 3 per item; no prompt shown


def _report(store: Store, judges: list[str], filters: dict, largest, table, intervals, heatmap) -> str:
    """``build_report``'s HTML; ``largest``: the future of ``_largest_disagreements``."""
    bench, model = filters["bench"], filters["model"]
    matrix = agreement.item_matrix(store, judges, **filters)
    if table is None:
        table = agreement.pairwise_agreement(matrix, judges)
    if intervals is None:
        intervals = agreement_ci.pairwise_agreement_ci(matrix, judges)
    alpha = reliability.reliability_table(matrix, judges, by=())

    figures = [("Agreement (quadratic weighted kappa)",
                heatmap if heatmap is not None else charts.agreement_heatmap(table, "qwk")),
               ("Scores of each judge pair (bubble area = items)", charts.scatter_grid(matrix, judges))]
    sections, deltas_all = [], []
    if len(judges) == 2:
        benches = [bench] if bench else sorted(matrix["bench"].unique())
        for b in benches:
            a_side = {"bench": b, "judge": judges[0], **({"model": model} if model else {})}
            b_side = {"bench": b, "judge": judges[1], **({"model": model} if model else {})}
            d = deltas.compare_levels(store, a_side, b_side, levels=("category", "turn", "all"))
            if d.empty:
                continue
            cat = d.drop(columns=["model"])
            cat["turn"] = ["both" if pd.isna(t) else int(t) for t in cat["turn"]]
            overall = d[d["level"] == "all"]
            if not overall.empty:
                deltas_all.append((b, overall.iloc[0]))
            sections.append(f"<h2>Per-category deltas · {_e(deltas.describe_comparison(a_side, b_side))}</h2>"
                            f'<p class="note">{_e(DELTA_NOTE)}</p>{_table(cat)}')
            figures.append((f"Deltas on {b}", charts.delta_forest(d[d["level"] == "category"], judges[0], judges[1])))

    chart_html = [charts.report_figures_html(figures)]  # plotly.js once, compressed

    items = []
    worst, keys, found_items = largest.result()
    for r, key, found in zip(worst.itertuples(), keys, found_items):
        verdicts = found["verdicts"]
        verdicts = verdicts[verdicts["judge"].isin(judges)]
        q = found["question"] or {"turns": [], "category": None}
        ans = found["answer"]
        cols = "".join(
            f"<div><b>{_e(v.judge)}</b> · score {_e(v.raw_score if v.parse_status != 'ok' else f'{v.score:g}')}"
            f" ({_e(v.parse_status)})<pre>{_e(v.rationale)}</pre></div>" for v in verdicts.itertuples())
        turn_text = q["turns"][key.turn - 1] if len(q["turns"]) >= key.turn else ""
        items.append(
            f'<div class="item"><h3>{_e(r.bench)} · question {_e(r.question_id)} · turn {key.turn} · {_e(r.model)}'
            f" · spread {r.spread:g}</h3><p class=\"note\">category {_e(r.category)}</p>"
            f"<b>Question (turn {key.turn})</b><pre>{_e(turn_text)}</pre>"
            f"<b>Answer</b><pre>{_e(ans['text'] if ans else '(no answer text in the store)')}</pre>"
            f'<div class="cols">{cols}</div></div>')

    shown_filters = ", ".join(f"{k} = {v}" for k, v in filters.items() if v is not None) or "none"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data:; font-src data:">
<title>JudgeLens report: {_e(' vs '.join(judges))}</title><style>{CSS}</style></head><body>
<h1>JudgeLens report: {_e(' vs '.join(judges))}</h1>
<p class="summary">{_e(agreement_summary(judges, table, len(matrix), worst, shown_filters, deltas_all))}</p>
<p class="meta">Generated {_e(dt.datetime.now().strftime('%Y-%m-%d %H:%M'))} · filters: {_e(shown_filters)} ·
{len(matrix)} items with a score from at least one of these judges.</p>
<h2>Agreement</h2><p class="note">{_e(agreement.AGREEMENT_NOTE)}</p>{_table(table)}
<h3>95% intervals</h3><p class="note">{_e(intervals.attrs["note"])} {_e(intervals.attrs["warning"])}</p>
{_table(agreement_ci.interval_text(intervals))}
<h3>Krippendorff's alpha (all these judges)</h3><p class="note">{_e(reliability.RELIABILITY_NOTE)}</p>{_table(alpha)}
{''.join(sections)}
<h2>Charts</h2>{''.join(chart_html)}
<h2>Largest disagreements</h2><p class="note">Items ranked by spread (highest minus lowest score of these judges),
with each judge's full rationale.</p>{''.join(items) or '<p>None: no item is scored by two of these judges.</p>'}
</body></html>"""


DELTA_NOTE = ("Delta = A minus B per item, averaged. 95% t intervals and p-values on question-level mean deltas "
              "(questions are the unit: both turns and every paired model move together); p_adjusted is "
              "Holm-corrected within each level. A category holds 10 questions: wide intervals "
              "are expected, and an interval that includes 0 means the difference is inside the noise. In the chart: "
              "red = significant after Holm, orange = interval excludes 0 but not significant after Holm, "
              "grey = inside the noise.")


def probe_report(run, verdict: str | None = None) -> str:
    """A self-contained HTML page of one probe run (lib.probes.suite.ProbeRun): the verdict in plain words
    (``verdict``: ``lib.probes.suite.verdict_word(run)``), one row per probe with its rule, and the judge's own
    rationales as evidence. All text escaped."""
    table = pd.DataFrame([{"probe": r.probe, "expected": r.expected or "", "result": r.status,
                           "failed items": f"{r.n_failed}/{r.n_items}", "detail": r.detail} for r in run.results])
    evidence = []
    for r in run.results:
        for ev in (r.evidence or [])[:3]:
            ev = ev if isinstance(ev, dict) else {"rationale": str(ev)}
            text = ev.get("rationale")
            where = " ".join(f"{k} {ev[k]}" for k in ("bench", "question_id", "turn", "model") if ev.get(k) is not None)
            score = ev.get("score")
            evidence.append(f"<h3>{_e(r.probe)} · {_e(where)}" + (f" · score {_e(score)}" if score is not None else "")
                            + f"</h3><pre>{_e(text)}</pre>")
    verdict = (verdict or ("passes" if run.passed else "fails")).upper()
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<title>JudgeLens probes: {_e(run.template)}</title><style>{CSS}</style></head><body>
<h1>Probe report: {_e(run.template)} {verdict}</h1>
<p class="meta">judge {_e(run.model)} at {_e(run.base_url)} · {len(run.items)} item(s) · {run.calls} call(s), {run.cache_hits}
from the cache · run {_e(run.run_id)} · {_e(run.created_at)}</p>
<pre>{_e(run.summary)}</pre>
<h2>Probes</h2>{_table(table)}
<h2>Evidence: the judge's own words</h2>{''.join(evidence) or '<p>No failing probe to show.</p>'}
</body></html>"""


def harness_report(store: Store, a: dict, b: dict, *, swallow_samples: str = "mean",
                   exclude_links: tuple[str, ...] = (), ladder: pd.DataFrame | None = None,
                   reverse_ladder: pd.DataFrame | None = None, attribution=None) -> str:
    """One model (or any two runs) under two harnesses, as one self-contained HTML file: the runs, the
    linked questions, the per-category gap with its intervals, the setup table (judge prompt templates with
    the differing text highlighted) and, when given, the attribution ladder (table and waterfall): ``ladder`` /
    ``reverse_ladder`` (one order each) or ``attribution`` (a ``lib.attribution.ladder.LadderResult``: every
    order side by side, the generation setups, the interactions, the Shapley split and what each bar means)."""
    from lib.analysis import harness_diff, linking, runs
    from lib.render.textdiff import diff_html

    ra, rb = runs.resolve_run(store, a, "A"), runs.resolve_run(store, b, "B")
    table = runs.compare_runs(store, ra, rb, levels=("category", "turn", "all"), swallow_samples=swallow_samples,
                              exclude_links=exclude_links)
    setup = harness_diff.harness_diff(store, ra, rb)
    prompts = harness_diff.judge_prompt_diff(store, ra, rb)
    summary = linking.link_summary(store, ra.bench, rb.bench) if ra.bench != rb.bench else None
    figures = []
    if not table.empty:
        figures.append(("Per-category gap (A minus B)", charts.delta_forest(table[table["level"] == "category"],
                                                                          "A", "B")))
    ladder_html = ""
    for title, lad in (("Attribution ladder (A's answers, judged A's way, then one factor at a time B's way)", ladder),
                       ("Reverse ladder (B's answers, judged B's way, then one factor at a time A's way)",
                        reverse_ladder)):
        if lad is None or lad.empty:
            continue
        figures.append((title, charts.ladder_waterfall(lad)))
        shown = lad[[c for c in ("step", "mean", "delta", "ci_low", "ci_high", "n", "calls", "cached") if c in lad]]
        ladder_html += f"<h2>{_e(title)}</h2><p class=\"note\">{_e(LADDER_NOTE)}</p>{_table(shown)}"
    if attribution is not None:
        ladder_html += _attribution_html(attribution, figures)
    chart_html = [charts.report_figures_html(figures)]  # plotly.js once, compressed
    gap = table.drop(columns=["model"]).copy() if not table.empty else table
    if not gap.empty:
        gap["category"] = gap["category"].map(lambda c: "(all)" if c is None else c)
        gap["turn"] = ["both" if pd.isna(t) else int(t) for t in gap["turn"]]
    setup_rows = setup.assign(differs=setup["differs"].map({True: "yes", False: "no", None: "cannot tell"}))[
        ["area", "a", "b", "differs", "evidence"]]
    prompt_html = "".join(
        f"<h3>{_e(p['kind'])}</h3><p class=\"note\">Red struck through: only in A ({_e(ra.harness)}); green: only "
        f"in B ({_e(rb.harness)}).</p>{diff_html(p['ops'])}" for p in prompts)
    links_line = (f"{summary['linked']} linked questions ({summary['exact']} exact, {summary['edited']} edited, "
                  f"{summary['fuzzy']} fuzzy, {summary['manual']} manual)" if summary else "the same bench")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data:; font-src data:">
<title>JudgeLens: {_e(ra.model)} under two harnesses</title><style>{CSS}</style></head><body>
<h1>Harness vs harness: {_e(ra.model)}</h1>
<p class="summary">{_e(harness_summary(ra.label, rb.label, ra.model, table, setup, links_line))}</p>
<p class="meta">Generated {_e(dt.datetime.now().strftime('%Y-%m-%d %H:%M'))} · A = {_e(ra.label)} · B = {_e(rb.label)} ·
{_e(links_line)} · Swallow samples: {_e(swallow_samples)}{' · excluded links: ' + _e(', '.join(exclude_links)) if exclude_links else ''}.</p>
<h2>The gap, per category and turn</h2><p class="note">{_e(DELTA_NOTE)}</p>{_table(gap) if not gap.empty else '<p>Nothing pairs.</p>'}
<h2>How the two runs were set up</h2>{_table(setup_rows)}
<h2>Judge prompt templates (rebuilt from the stored prompts)</h2>{prompt_html or '<p>No stored prompts.</p>'}
{ladder_html}
<h2>Charts</h2>{''.join(chart_html)}
</body></html>"""


LADDER_NOTE = ("Each step re-judges the same linked items with one more judge-side factor switched to B's setting; "
               "delta is the change from the previous step with a 95% t interval on question-level differences "
               "(calls: requests sent, cached: answered from the cache). replay = A's setup on today's endpoint "
               "(drift of the judge, never blamed on a factor). residual = B's stored score minus A's answers judged "
               "B's way: what the answers themselves contribute (system prompt, sampling, generation).")


def _attribution_html(result, figures: list) -> str:
    """The full waterfall's sections: every order's table, the generation setups, interactions, Shapley split
    and what each bar means (``lib.attribution.ladder``)."""
    from lib.attribution import ladder as L

    figures.append(("The waterfall, every order side by side", charts.ladder_waterfalls(
        {k: v for k, v in result.orders.items() if not k.startswith(L.SHAPLEY)})))
    parts = []
    first = next(iter(result.orders.values()))
    gen_a, gen_b = first.attrs.get("gen_a"), first.attrs.get("gen_b")
    if gen_a and gen_b:
        rows = pd.DataFrame([{"field": x["field"], "A": x["value"], "A source": x["source"], "B": y["value"],
                              "B source": y["source"]} for x, y in zip(gen_a, gen_b)])
        parts.append(f"<h2>Generation setups (how each harness makes the answers)</h2>{_table(rows)}")
    for label, lad in result.orders.items():
        shown = lad.assign(step=lad["step"].map(lambda s: L.STEP_LABELS.get(s, s)))
        parts.append(f"<h2>Waterfall {_e(label)}: {_e(lad.attrs.get('label_a'))} to {_e(lad.attrs.get('label_b'))}"
                     f"</h2><p class=\"note\">{_e(L.NOTE)}</p>{_table(shown)}")
    if not result.interactions.empty:
        parts.append("<h2>Does the order matter? (interactions)</h2><p class=\"note\">Each factor's effect in "
                     "every order run, read A to B. interacts = it changes by more than its interval: the factor's "
                     f"effect depends on what was switched before it.</p>{_table(result.interactions)}")
    if result.shapley is not None:
        parts.append("<h2>Shapley-style split (each factor's effect averaged over the orders)</h2>"
                     f"{_table(result.shapley)}")
    est = getattr(result, "estimate", None) or {}
    if isinstance(est.get("per_step"), pd.DataFrame):
        parts.append(f"<h2>Cost, counted before any call</h2><p class=\"note\">{_e(L.estimate_text(est))}</p>"
                     f"{_table(est['per_step'])}")
    meaning = "".join(f"<tr><td class=\"t\">{_e(L.STEP_LABELS.get(k, k))}</td><td class=\"t\">{_e(v)}</td></tr>"
                      for k, v in L.STEP_MEANING.items())
    parts.append(f"<h2>What each bar means</h2><table><tbody>{meaning}</tbody></table>")
    return "".join(parts)
