"""The opening paragraph of each HTML report: what was compared and the headline numbers, in plain words.

Pure functions over the frames the reports already compute (``lib.reports`` inserts the text, escaped)."""
from __future__ import annotations

import pandas as pd

from lib.analysis.runs import gap_headline


def agreement_summary(judges: list[str], table: pd.DataFrame, n_items: int, worst: pd.DataFrame,
                      filters: str, deltas_all: list[tuple[str, pd.Series]] = ()) -> str:
    """'Compares 3 judges (a, b, c) on 480 items (filters: none). Agreement (quadratic weighted kappa) ranges
    from 0.84 (a vs b) to 0.88 (b vs c); ... The largest disagreement is 7 points apart.'"""
    text = f"Compares {len(judges)} judges ({', '.join(judges)}) on {n_items:,} items (filters: {filters})."
    pairs = table.dropna(subset=["qwk"]) if "qwk" in table else table.iloc[0:0]
    if len(pairs) == 1:
        r = pairs.iloc[0]
        text += (f" Agreement: quadratic weighted kappa {r['qwk']:.2f}, Spearman {r['spearman']:.2f}, exact agreement "
                 f"{r['exact']:.0%}, within one point {r['within1']:.0%}, on {int(r['n']):,} items both scored.")
    elif len(pairs) > 1:
        lo, hi = pairs.loc[pairs["qwk"].idxmin()], pairs.loc[pairs["qwk"].idxmax()]
        text += (f" Agreement (quadratic weighted kappa) ranges from {lo['qwk']:.2f} ({lo['judge_a']} vs "
                 f"{lo['judge_b']}) to {hi['qwk']:.2f} ({hi['judge_a']} vs {hi['judge_b']}).")
    for bench, row in deltas_all:
        ci = (f" (95% CI {row['ci_low']:+.2f} to {row['ci_high']:+.2f})" if pd.notna(row.get("ci_low"))
              and pd.notna(row.get("ci_high")) else "")
        text += (f" On {bench}, {judges[0]} minus {judges[1]} = {row['delta']:+.2f} points{ci} over "
                 f"{int(row['n_questions'])} questions.")
    if not worst.empty:
        text += f" The largest disagreement is {worst['spread'].max():g} points apart."
    return text


def harness_summary(label_a: str, label_b: str, model: str, table: pd.DataFrame, setup: pd.DataFrame,
                    links_line: str) -> str:
    """'Compares shisa-… under A = … and B = … on 80 linked questions. A − B = +0.41 points (…). Largest
    categories: … The setups differ in: judge_model, judge_prompt, ….'"""
    text = f"Compares {model} under A = {label_a} and B = {label_b} on {links_line}."
    head = gap_headline(table)
    text += " " + head if head else " Nothing pairs."
    differ = setup.loc[setup["differs"] == True, "area"].tolist()  # noqa: E712 (None = cannot tell)
    if differ:
        text += " The two setups differ in: " + ", ".join(differ) + "."
    return text
