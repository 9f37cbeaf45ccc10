"""Section-order ablation: a template's blocks (question / reference / answer / rubric, found by
markers, FastChat sections or paragraphs: see ``lib.probes``) rearranged or removed, and what that does
to the real answers' scores and to the empty answer's."""
from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from lib.judging.templates import Template, TemplateError, check_template
from lib.probes.canaries import rule_text, single_fail
from lib.probes.spec import ABLATIONS, PROBES, ProbeResult, fmt_score


# ------------------------------------------------------------------------------------------------
# Blocks of a template

_MARK_OPEN = re.compile(r"\{#-?\s*block\s*:\s*([A-Za-z_][\w-]*)\s*-?#\}")
_MARK_CLOSE = re.compile(r"\{#-?\s*endblock\s*-?#\}")
_SECTION = re.compile(r"(?:\[|<\|)The Start of (?P<label>[^\]|\n]{1,80}?)(?:\]|\|>)"
                      r".*?(?:\[|<\|)The End of (?P=label)(?:\]|\|>)", re.S)
_PARA_SPLIT = re.compile(r"\n[ \t]*\n")
_JINJA_EXPR = re.compile(r"\{\{(.*?)\}\}|\{%(.*?)%\}", re.S)
_NAME = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_OPEN_TAG = re.compile(r"\{%-?\s*(if|for|macro|call|filter|raw|block|with|set)\b(.*?)-?%\}", re.S)
_CLOSE_TAG = re.compile(r"\{%-?\s*end(if|for|macro|call|filter|raw|block|with|set)\b", re.S)
_RUBRIC = re.compile(r"\b(rate|rating|score|scale|grade)\b|評価|採点|点数", re.IGNORECASE)
_VAR_CLASSES = [
    ("reference", re.compile(r"^(ref_answer(_\d+)?|data\.(gt|ref_answer))$")),
    ("answer_a", re.compile(r"^answer_a(_\d+)?$")),
    ("answer_b", re.compile(r"^answer_b(_\d+)?$")),
    ("answer", re.compile(r"^(answer(_\d+)?|response\.(content|reasoning_content))$")),
    ("question", re.compile(r"^(question(_\d+)?|data\.(question|messages|history))$")),
]


@dataclass(frozen=True)
class Block:
    """A movable part of one message of a template: ``content[start:end]`` of message ``message``."""

    name: str
    message: int
    start: int
    end: int
    how: str            # marker | section | paragraph | line


def _classes(text: str) -> set[str]:
    found = set()
    for m in _JINJA_EXPR.finditer(text):
        body = m.group(1) if m.group(1) is not None else m.group(2)
        for name in _NAME.findall(body or ""):
            for cls, pat in _VAR_CLASSES:
                if pat.match(name):
                    found.add(cls)
                    break
    return found


def _balanced(text: str) -> bool:
    opens: dict[str, int] = {}
    for m in _OPEN_TAG.finditer(text):
        kind = m.group(1)
        if kind == "set" and "=" in m.group(2):
            continue  # {% set x = ... %} has no end tag
        opens[kind] = opens.get(kind, 0) + 1
    for m in _CLOSE_TAG.finditer(text):
        opens[m.group(1)] = opens.get(m.group(1), 0) - 1
    return all(v == 0 for v in opens.values())


def _marker_blocks(text: str, mi: int) -> list[Block]:
    out, pos = [], 0
    while True:
        m = _MARK_OPEN.search(text, pos)
        if not m:
            return out
        close = _MARK_CLOSE.search(text, m.end())
        if not close:
            raise TemplateError(f"Message {mi + 1}: {{# block: {m.group(1)} #}} has no {{# endblock #}}.",
                                kind="invalid")
        nested = _MARK_OPEN.search(text, m.end(), close.start())
        if nested:
            raise TemplateError(f"Message {mi + 1}: block markers must not nest ({{# block: {nested.group(1)} #}} "
                                f"inside {{# block: {m.group(1)} #}}).", kind="invalid")
        out.append(Block(m.group(1), mi, m.start(), close.end(), "marker"))
        pos = close.end()


def _trimmed(text: str, a: int, b: int) -> tuple[int, int]:
    while a < b and text[a].isspace():
        a += 1
    while b > a and text[b - 1].isspace():
        b -= 1
    return a, b


def _detected_blocks(text: str, mi: int) -> list[Block]:
    out: list[Block] = []
    sections = list(_SECTION.finditer(text))
    labels = " ".join(m.group("label") for m in sections)
    pairwise = "Assistant B" in labels
    for m in sections:
        label = m.group("label")
        if "Reference" in label:
            name = "reference"
        elif "Assistant A" in label:
            name = "answer_a" if pairwise else "answer"
        elif "Assistant B" in label:
            name = "answer_b"
        elif "Assistant" in label or "Answer" in label:
            name = "answer"
        else:
            cls = _classes(m.group(0))
            name = next(iter(cls)) if len(cls) == 1 else None
        if name:
            out.append(Block(name, mi, m.start(), m.end(), "section"))
    gaps, pos = [], 0
    for m in sections:
        gaps.append((pos, m.start()))
        pos = m.end()
    gaps.append((pos, len(text)))
    for g0, g1 in gaps:
        starts = [g0] + [p.end() for p in _PARA_SPLIT.finditer(text, g0, g1)]
        ends = [p.start() for p in _PARA_SPLIT.finditer(text, g0, g1)] + [g1]
        for p0, p1 in zip(starts, ends):
            a, b = _trimmed(text, p0, p1)
            if a >= b:
                continue
            para = text[a:b]
            if not _balanced(para):
                continue
            cls = _classes(para)
            if len(cls) == 1:
                out.append(Block(next(iter(cls)), mi, a, b, "paragraph"))
            elif not cls:
                if _RUBRIC.search(para) and "{%" not in para:
                    out.append(Block("rubric", mi, a, b, "paragraph"))
            else:
                line_start = a
                for line in para.split("\n"):
                    l0, l1 = _trimmed(text, line_start, line_start + len(line))
                    line_start += len(line) + 1
                    if l0 >= l1:
                        continue
                    lc = _classes(text[l0:l1])
                    if len(lc) == 1 and _balanced(text[l0:l1]):
                        out.append(Block(next(iter(lc)), mi, l0, l1, "line"))
    return sorted(out, key=lambda b: b.start)


def find_blocks(template: Template) -> list[Block]:
    """The blocks of every message (see the module docstring), in message and text order."""
    out: list[Block] = []
    for mi, m in enumerate(template.messages):
        text = m["content"]
        marked = _marker_blocks(text, mi)
        out.extend(marked if marked else _detected_blocks(text, mi))
    return out


def _rearranged(text: str, blocks: list[Block], order: list[int], drop: set[int]) -> str:
    """``text`` with its blocks (sorted by start) rearranged: slot i receives block ``order[i]``; the
    blocks in ``drop`` are removed. Neighbours that were neighbours before keep the separator they had;
    new neighbours get a newline (two lines of one paragraph) or a blank line. If text other than
    whitespace sits between blocks, separators stay where they are instead, so nothing is lost."""
    k = len(blocks)
    gaps = {(i, i + 1): text[blocks[i].end:blocks[i + 1].start] for i in range(k - 1)}
    fixed = any(g.strip() for g in gaps.values())
    kept = [j for j in order if j not in drop]
    if fixed:
        tokens: list[tuple[str, int | None]] = []
        for i, j in enumerate(order):
            tokens.append((text[blocks[j].start:blocks[j].end], j))
            if i < k - 1:
                tokens.append((gaps[(i, i + 1)], None))
        for j in drop:
            pos = next(p for p, (_, b) in enumerate(tokens) if b == j)
            if pos + 1 < len(tokens) and tokens[pos + 1][1] is None:
                del tokens[pos:pos + 2]
            elif pos > 0 and tokens[pos - 1][1] is None:
                del tokens[pos - 1:pos + 1]
            else:
                del tokens[pos]
        body = "".join(t for t, _ in tokens)
    else:
        parts = []
        for n, j in enumerate(kept):
            parts.append(text[blocks[j].start:blocks[j].end])
            if n < len(kept) - 1:
                nxt = kept[n + 1]
                sep = gaps.get((j, nxt)) or gaps.get((nxt, j))
                if sep is None:
                    same_para = blocks[j].how == blocks[nxt].how == "line" and "\n\n" not in text[
                        min(blocks[j].end, blocks[nxt].end):max(blocks[j].start, blocks[nxt].start)]
                    sep = "\n" if same_para else "\n\n"
                parts.append(sep)
        body = "".join(parts)
    return text[:blocks[0].start] + body + text[blocks[-1].end:]


@dataclass
class Variant:
    name: str
    description: str
    template: Template


def _describe_swap(first: str, second: str) -> str:
    return f"the {first} placed before the {second}"


def ablation_variants(template: Template, names: tuple[str, ...] | list[str] = ABLATIONS
                      ) -> tuple[list[Variant], dict[str, str]]:
    """The section-order variants this template's blocks allow (``ABLATIONS``), and for the others
    why they do not apply."""
    blocks = find_blocks(template)
    by_msg: dict[int, list[Block]] = {}
    for b in blocks:
        by_msg.setdefault(b.message, []).append(b)
    variants, skipped = [], {}

    def first(msg_blocks, name):
        return next((i for i, b in enumerate(msg_blocks) if b.name == name), None)

    def build(changes: dict[int, tuple[list[int], set[int]]]) -> Template | str:
        messages = [dict(m) for m in template.messages]
        for mi, (order, drop) in changes.items():
            messages[mi]["content"] = _rearranged(messages[mi]["content"], by_msg[mi], order, drop)
        variant = template.edited(messages=messages)
        try:
            check_template(variant)
        except TemplateError as exc:
            return f"the rearranged template does not parse ({exc.message}); mark the blocks with {{# block: … #}}"
        if variant.messages == template.messages:
            return "the layout would not change"
        return variant

    for name in names:
        result: Template | str | None = None
        desc = PROBES[name].label
        if name == "order_swap":
            for mi, mb in by_msg.items():
                r, a = first(mb, "reference"), first(mb, "answer")
                if r is not None and a is not None:
                    order = list(range(len(mb)))
                    order[r], order[a] = order[a], order[r]
                    desc = _describe_swap("answer", "reference") if a > r else _describe_swap("reference", "answer")
                    result = build({mi: (order, set())})
                    break
            else:
                result = "the template has no reference block and answer block in the same message"
        elif name == "no_reference":
            changes = {mi: (list(range(len(mb))), {i for i, b in enumerate(mb) if b.name == "reference"})
                       for mi, mb in by_msg.items() if any(b.name == "reference" for b in mb)}
            if changes:
                # a message whose only block is the reference keeps an empty string instead
                result = build(changes)
            else:
                result = "the template has no reference block"
        elif name == "answer_first":
            for mi, mb in by_msg.items():
                q, a = first(mb, "question"), first(mb, "answer")
                if q is not None and a is not None and q < a:
                    order = list(range(len(mb)))
                    order[q], order[a] = order[a], order[q]
                    result = build({mi: (order, set())})
                    break
            else:
                result = "the template has no question block before an answer block in the same message"
        elif name in ("rubric_first", "rubric_last"):
            for mi, mb in by_msg.items():
                r = first(mb, "rubric")
                if r is None or len(mb) < 2 or not any(b.name in ("answer", "reference", "question") for b in mb):
                    continue
                order = [i for i in range(len(mb)) if i != r]
                if name == "rubric_first" and r != 0:
                    result = build({mi: ([r] + order, set())})
                elif name == "rubric_last" and r != len(mb) - 1:
                    result = build({mi: (order + [r], set())})
                else:
                    result = f"the rubric is already {'first' if name == 'rubric_first' else 'last'}"
                break
            else:
                result = "the template has no rubric block in the same message as the question or answer"
        if isinstance(result, Template):
            variants.append(Variant(name, desc, result))
        else:
            skipped[name] = result or "not applicable"
    return variants, skipped


def ablation_result(name, variants, skipped, usable, got, score_of, outcome, outcomes, lo, mid, scale,
                     render_errors) -> ProbeResult:
    spec = PROBES[name]
    v = next((x for x in variants if x.name == name), None)
    if v is None:
        return ProbeResult(name, "ablation", "low", "skipped", f"{spec.label}: not applicable ({skipped.get(name)}).",
                           measure=spec.measure, counts=False, scale=list(scale))
    shifts, empties, per_item, fails, errors = [], [], [], 0, 0
    for k in usable:
        r0 = score_of(got.get(("original", "real_answer", k)))
        r1 = score_of(got.get((name, "real_answer", k)))
        e0 = score_of(got.get(("original", "empty_answer", k)))
        er = got.get((name, "empty_answer", k))
        e1 = score_of(er)
        f = single_fail("low", e1, r1, lo, mid)
        if er is None or er.error is not None:
            errors += 1
            status = "error"
        elif f is None:
            f, status = True, "fail"
        else:
            status = "fail" if f else "pass"
        fails += 1 if status == "fail" else 0
        shift = (r1 - r0) if (r0 is not None and r1 is not None) else None
        if shift is not None:
            shifts.append(shift)
        if e1 is not None:
            empties.append(e1)
        per_item.append({"item": k, "real_original": r0, "real_variant": r1, "shift": shift, "empty_original": e0,
                         "empty_variant": e1, "status": status})
        outcome(name, "ablation", k, er, expected="low", failed=(status == "fail") if status != "error" else None,
                status=status, real=r1, layout=name,
                detail=(f"real answer {fmt_score(r0)} -> {fmt_score(r1)}" if shift is not None else "")
                + (f"; {er.error}" if er is not None and er.error else "")
                + (render_errors.get((name, "empty_answer", k), "") if er is None else ""))
    judged = [p for p in per_item if p["status"] in ("pass", "fail")]
    mean_shift = statistics.fmean(shifts) if shifts else None
    mean_abs = statistics.fmean(abs(s) for s in shifts) if shifts else None
    max_abs = max((abs(s) for s in shifts), default=None)
    if not judged:
        status, detail = "error", f"With {v.description} ({name}) no item could be judged."
    else:
        status = "fail" if fails else "pass"
        detail = (f"With {v.description} ({name}) the empty answer scores {', '.join(fmt_score(e) for e in empties)} "
                  f"(scale {scale[0]:g}-{scale[1]:g}; {fails} of {len(judged)} fail the 'low' rule)")
        if mean_shift is not None:
            detail += (f"; real answers move by {mean_shift:+.2f} on average (mean |shift| {mean_abs:.2f}, "
                       f"max {max_abs:g}) over {len(shifts)} item(s)")
        detail += ". Diagnostic: does not decide whether the template passes."
    return ProbeResult(name, "ablation", "low", status, detail, rule=rule_text("low", lo, mid) + " (empty answer, "
                       "this layout)", measure=spec.measure, counts=False, scale=list(scale), n_items=len(judged),
                       n_failed=fails, scores=empties,
                       real_scores=[p["real_variant"] for p in judged],
                       metrics={"description": v.description, "mean_shift": mean_shift, "mean_abs_shift": mean_abs,
                                "max_abs_shift": max_abs, "per_item": per_item,
                                "layout": v.template.messages})
