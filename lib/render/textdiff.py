"""Character-level diffs that work for Japanese (no spaces, so word diffs are useless).

``char_diff`` aligns lines first and then characters inside changed lines, so two 8,000-character
answers diff in milliseconds. ``diff_html`` renders the result with every character HTML-escaped:
the output contains no markup from the inputs, only our own <span> tags.
"""
from __future__ import annotations

import html
from difflib import SequenceMatcher

Op = tuple[str, str]  # ("equal" | "delete" | "insert", text)

MAX_CHAR_BLOCK = 6000  # inside one changed block, beyond this compare lines only


def _merge(ops: list[Op]) -> list[Op]:
    out: list[Op] = []
    for op, text in ops:
        if not text:
            continue
        if out and out[-1][0] == op:
            out[-1] = (op, out[-1][1] + text)
        else:
            out.append((op, text))
    return out


def _chars(a: str, b: str) -> list[Op]:
    if len(a) + len(b) > MAX_CHAR_BLOCK:
        return [("delete", a), ("insert", b)]
    ops: list[Op] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "equal":
            ops.append(("equal", a[i1:i2]))
        else:
            ops.append(("delete", a[i1:i2]))
            ops.append(("insert", b[j1:j2]))
    return ops


def char_diff(a: str | None, b: str | None) -> list[Op]:
    """Diff two texts: lines are aligned first, then changed lines are compared character by character."""
    a, b = a or "", b or ""
    la, lb = a.splitlines(keepends=True), b.splitlines(keepends=True)
    ops: list[Op] = []
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
        left, right = "".join(la[i1:i2]), "".join(lb[j1:j2])
        ops.extend([("equal", left)] if tag == "equal" else _chars(left, right))
    return _merge(ops)


def diff_stats(ops: list[Op]) -> dict[str, float]:
    same = sum(len(t) for op, t in ops if op == "equal")
    deleted = sum(len(t) for op, t in ops if op == "delete")
    inserted = sum(len(t) for op, t in ops if op == "insert")
    total = same * 2 + deleted + inserted
    return {"equal": same, "deleted": deleted, "inserted": inserted,
            "similarity": (2 * same / total) if total else 1.0}


BOX = ("white-space:pre-wrap;word-break:break-word;font-family:ui-monospace,monospace;font-size:0.85rem;"
       "line-height:1.45;border:1px solid #ddd;border-radius:6px;padding:10px;max-height:32rem;overflow:auto")
DELETED = "background:#ffd7d5;color:#82071e;text-decoration:line-through"
INSERTED = "background:#ccffd8;color:#055d20"


def diff_html(ops: list[Op]) -> str:
    """Inline diff as HTML: deletions struck through in red, insertions in green. Inputs are escaped."""
    parts = []
    for op, text in ops:
        safe = html.escape(text, quote=True)
        if op == "equal":
            parts.append(safe)
        else:
            parts.append(f'<span style="{DELETED if op == "delete" else INSERTED}">{safe}</span>')
    return f'<div class="jl-diff" style="{BOX}">{"".join(parts)}</div>'


REFERENCE_MARK = "background:#ffe0b2;color:#7a3e00"
ANSWER_MARK = "background:#c8e6c9;color:#1b5e20"


def highlight_html(text: str | None, reference_spans: list[tuple[int, int]],
                   answer_spans: list[tuple[int, int]] = ()) -> str:
    """``text`` with character spans marked (orange: copied from the reference, green: from the answer).
    Every character is HTML-escaped; the only markup is ours."""
    text = text or ""
    marks = sorted([(a, b, REFERENCE_MARK) for a, b in reference_spans] + [(a, b, ANSWER_MARK) for a, b in answer_spans])
    parts, pos = [], 0
    for a, b, style in marks:
        a = max(a, pos)
        if a >= b:
            continue
        parts.append(html.escape(text[pos:a], quote=True))
        parts.append(f'<span style="{style}">{html.escape(text[a:b], quote=True)}</span>')
        pos = b
    parts.append(html.escape(text[pos:], quote=True))
    return f'<div class="jl-diff" style="{BOX}">{"".join(parts)}</div>'
