"""Judge prompt templates: Jinja2 chat messages plus an output parser, versioned in the store.

A ``Template`` is a list of chat messages (``{"role": "system"|"user"|"assistant", "content": "<Jinja2>"}``;
few-shot turns are just more user/assistant messages), a parser spec (``lib.judging.parsers``) and optional
declarative pre-processing of the judged text (``lib.judging.context.PREPROCESS_KEYS``). No
user-supplied Python ever runs.

Rendering (``render``, ``render_many``)
---------------------------------------
Templates are untrusted input: every render happens in the sandbox (``lib.judging.sandbox``: a
locked-down Jinja2 environment in a separate worker process with time and memory limits). This module
checks the template first (``check_template``: roles, message count, total source size
``MAX_TEMPLATE_CHARS``, parser spec, Jinja syntax).

Undeclared variables are listed before rendering (``undeclared_variables``; ``render`` refuses a
context that lacks one of them and names the missing ones).

Versions
--------
``save_template`` stores a new version (name, version, messages, parser, preprocess, parent,
created); saving identical content returns the existing version. ``get_template("single-v1")`` is
the newest version, ``get_template("single-v1@v2")`` a given one; built-in templates are stored as
version 1 on first use (``ensure_builtins``). ``diff_versions`` shows what changed between any two.
Every re-judgment records the ``template_id`` it used (``rejudgments``), and the verdicts'
``prompt_name`` is ``name@vN``.
"""
from __future__ import annotations

import difflib
import json
import os
import re
import string
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from lib import harness as H
from lib.errors import ParserSpecError, TemplateError, TemplateNotFound
from lib.judging.parsers import check_spec, mode_of
from lib.judging.sandbox import RENDER_JOB_ITEMS, SANDBOX_GLOBALS, RenderResult, parse_env, render_in_worker
from lib.judging.sandbox import shutdown_sandbox  # noqa: F401 (part of this module's API)

if TYPE_CHECKING:  # the worker process never imports duckdb or pandas
    import pandas as pd

    from lib.store import Store

from lib.paths import REPO_ROOT as ROOT
LMSYS_PROMPTS = ROOT / "data" / "templates" / "lmsys_judge_prompts.jsonl"
JA_PROMPTS = ROOT / "data" / "sample" / "shisa-ja-mt-bench-harness" / "judge_prompts.jsonl"
SWALLOW_PROMPTS = ROOT / "data" / "sample" / "swallow" / "judge_prompt_templates.json"

# Limits on the template source (the sandbox has its own: lib.judging.sandbox) ---------------------
MAX_TEMPLATE_CHARS = 60_000      # all messages' Jinja source together (FastChat's longest prompt is ~1.6k)
MAX_MESSAGES = 40
ROLES = ("system", "user", "assistant")
PREPROCESS_KEYS = ("strip_think", "strip_chat_tokens", "truncate")


# ------------------------------------------------------------------------------------------------
# The template

@dataclass
class Template:
    name: str
    messages: list[dict]
    parser: dict
    preprocess: dict = field(default_factory=dict)
    provenance: str | None = None
    description: str | None = None
    builtin: bool = False
    template_id: int | None = None
    version: int | None = None
    parent_id: int | None = None
    created_at: Any = None

    @property
    def mode(self) -> str:
        """'single' (a score per answer) or 'pairwise' (a verdict between two answers)."""
        return mode_of(self.parser)

    @property
    def label(self) -> str:
        """``name@vN`` once stored (the verdicts' prompt_name), else the bare name."""
        return f"{self.name}@v{self.version}" if self.version else self.name

    def content(self) -> dict:
        """What makes two versions the same: messages, parser and pre-processing."""
        return {"messages": [{"role": m["role"], "content": m["content"]} for m in self.messages],
                "parser": self.parser, "preprocess": normalize_preprocess(self.preprocess)}

    def same_content(self, other: "Template") -> bool:
        """Whether ``other`` has the same content (messages, parser, pre-processing) as this one."""
        return _canon(self.content()) == _canon(other.content())

    def to_json(self) -> dict:
        """The file format ``python -m lib.cli rejudge --template FILE.json`` reads."""
        return {"name": self.name, **self.content(), "provenance": self.provenance, "description": self.description}

    def edited(self, **changes) -> "Template":
        """A copy with changes, not yet stored (save it to make a new version of the same name)."""
        return replace(self, template_id=None, version=None, builtin=False, created_at=None,
                       parent_id=self.template_id if self.template_id is not None else self.parent_id,
                       **changes)


def template_from_json(data: dict) -> Template:
    for key in ("name", "messages", "parser"):
        if key not in data:
            raise TemplateError(f"A template file needs the keys name, messages and parser; {key!r} is missing.",
                                kind="invalid")
    return Template(name=str(data["name"]), messages=list(data["messages"]), parser=dict(data["parser"]),
                    preprocess=dict(data.get("preprocess") or {}), provenance=data.get("provenance"),
                    description=data.get("description"))


def normalize_preprocess(pre: dict | None) -> dict:
    pre = dict(pre or {})
    unknown = sorted(set(pre) - set(PREPROCESS_KEYS))
    if unknown:
        raise TemplateError(f"Unknown pre-processing option(s) {', '.join(unknown)}; the options are "
                            f"{', '.join(PREPROCESS_KEYS)}.", kind="invalid")
    out = {"strip_think": bool(pre.get("strip_think", False)),
           "strip_chat_tokens": bool(pre.get("strip_chat_tokens", False)),
           "truncate": None}
    trunc = pre.get("truncate")
    if trunc not in (None, "", 0, False):
        try:
            trunc = int(trunc)
        except (TypeError, ValueError):
            raise TemplateError(f"truncate must be a number of characters, got {trunc!r}.", kind="invalid") from None
        if trunc < 1:
            raise TemplateError("truncate must be at least 1 character.", kind="invalid")
        out["truncate"] = trunc
    return out


def check_template(template: Template) -> Template:
    """Refuse a template that is malformed, too large or has a Jinja syntax error (nothing runs)."""
    if not isinstance(template.name, str) or not template.name.strip():
        raise TemplateError("A template needs a name.", kind="invalid")
    if "@" in template.name or len(template.name) > 120:
        raise TemplateError("A template name has at most 120 characters and no '@' (it is used as name@vN).",
                            kind="invalid")
    msgs = template.messages
    if not isinstance(msgs, list) or not msgs:
        raise TemplateError("A template needs at least one message.", kind="invalid")
    if len(msgs) > MAX_MESSAGES:
        raise TemplateError(f"A template has at most {MAX_MESSAGES} messages; this one has {len(msgs)}.", kind="limit")
    total = 0
    for i, m in enumerate(msgs, 1):
        if not isinstance(m, dict) or m.get("role") not in ROLES or not isinstance(m.get("content"), str):
            raise TemplateError(f"Message {i} must be {{\"role\": one of {', '.join(ROLES)}, \"content\": text}}.",
                                kind="invalid")
        total += len(m["content"])
    if total > MAX_TEMPLATE_CHARS:
        raise TemplateError(f"The template is {total:,} characters long; the limit is {MAX_TEMPLATE_CHARS:,}.",
                            kind="limit")
    try:
        check_spec(template.parser)
    except ParserSpecError as exc:
        raise TemplateError(f"Parser: {exc}", kind="invalid") from None
    normalize_preprocess(template.preprocess)
    env = parse_env()
    for i, m in enumerate(msgs, 1):
        try:
            env.parse(m["content"])
        except Exception as exc:  # TemplateSyntaxError, RecursionError on absurd nesting
            raise TemplateError(_syntax_message(i, m["role"], exc), kind="syntax") from None
    return template


def _syntax_message(i: int, role: str, exc: Exception) -> str:
    line = getattr(exc, "lineno", None)
    where = f"message {i} ({role})" + (f", line {line}" if line else "")
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return f"Syntax error in {where}: {text}"


def undeclared_variables(template: Template) -> list[str]:
    """Top-level names the template reads from the context (sorted), found without rendering."""
    from jinja2 import meta

    env = parse_env()
    names: set[str] = set()
    for i, m in enumerate(template.messages, 1):
        try:
            names |= meta.find_undeclared_variables(env.parse(m["content"]))
        except Exception as exc:
            raise TemplateError(_syntax_message(i, m.get("role", "?"), exc), kind="syntax") from None
    return sorted(names - set(SANDBOX_GLOBALS))


# ------------------------------------------------------------------------------------------------
# FastChat {placeholder} format strings -> Jinja2

def fastchat_to_jinja(text: str) -> str:
    """A FastChat ``str.format`` template as Jinja2 that renders to exactly the same text.

    ``{name}`` becomes ``{{ name }}``, ``{{``/``}}`` become literal braces, and any literal text that
    Jinja would read as syntax (``{{``, ``{%``, ``{#``) is wrapped in ``{% raw %}``.
    """
    out: list[str] = []
    try:
        parts = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise TemplateError(f"Not a valid format string: {exc}", kind="syntax") from None
    for literal, field_name, spec, conversion in parts:
        if literal:
            out.append(_jinja_literal(literal))
        if field_name is None:
            continue
        if field_name == "" or field_name.isdigit():
            raise TemplateError("Positional placeholders ({} or {0}) cannot be converted; use names like {question}.",
                                kind="syntax")
        if spec or conversion:
            raise TemplateError(f"The placeholder {{{field_name}{'!' + conversion if conversion else ''}"
                                f"{':' + spec if spec else ''}}} uses a conversion or format spec, which "
                                "judge prompts do not use; write it as a plain {name}.", kind="syntax")
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*|\[\w+\])*", field_name):
            raise TemplateError(f"Unsupported placeholder {{{field_name}}}.", kind="syntax")
        out.append("{{ " + field_name + " }}")
    return "".join(out)


def _jinja_literal(text: str) -> str:
    if "{" not in text and "}" not in text and "#" not in text and "%" not in text:
        return text
    if not any(d in text for d in ("{{", "{%", "{#")) and not text.endswith("{"):
        return text  # no Jinja delimiter can start here
    if "endraw" not in text:
        return "{% raw %}" + text + "{% endraw %}"
    return "{{ " + json.dumps(text, ensure_ascii=False) + " }}"


# ------------------------------------------------------------------------------------------------
# Built-in templates

_FASTCHAT_PROVENANCE = ("lm-sys/FastChat @ 0e6d3e4beaab66f4d3f93db72541a4abab8af28d, "
                        "fastchat/llm_judge/data/judge_prompts.jsonl (Apache-2.0); "
                        "copied byte for byte to data/templates/lmsys_judge_prompts.jsonl")
_JA_PROVENANCE = ("shisa-ai/ja-mt-bench-harness @ 3a39b7869c1e0210e2615843789c28700ecd7334, "
                  "fastchat/llm_judge/data/judge_prompts.jsonl (Apache-2.0); bundled as "
                  "data/sample/shisa-ja-mt-bench-harness/judge_prompts.jsonl")

OUTPUT_FORMAT_PARSERS = {
    "[[rating]]": {"kind": "fastchat_single", "scale": [1, 10]},
    "[[評価]]": {"kind": "ja_rating", "scale": [1, 10]},
    "[[A]]": {"kind": "pairwise_abc"},
    "[[rating_a,rating_b]]": {"kind": "fastchat_two_score", "scale": [1, 10]},
}

TENCENT_SYSTEM = (
    "You are a strict, impartial grader of AI assistant responses. You compare the response with the "
    "reference answer (gt) and grade correctness first, then helpfulness and clarity.")
TENCENT_USER = """{% if data.history %}[Conversation so far]
{% for m in data.history %}{{ m.role }}: {{ m.content }}
{% endfor %}
{% endif %}[Question]
{{ data.question }}

[Reference answer (gt)]
{{ data.gt }}

[Model response]
{{ response.content }}
{% if response.reasoning_content %}
[The model's reasoning before the response (not graded; for context only)]
{{ response.reasoning_content }}
{% endif %}
Grade the model response on a scale of 1 to 10 (10 = fully correct and helpful, 1 = wrong or no answer). \
An empty response gets 1. First explain briefly, then give the score in exactly this format: "Score: [[N]]".
"""

UNITXT_SYSTEM = (
    "Please act as an impartial judge and evaluate the quality of the responses provided by two AI assistants "
    "to the user questions. Your evaluation should consider correctness and helpfulness. You will be given "
    "reference answers, the assistant A's answers, the assistant B's answers. Your job is to determine which "
    "assistant provides correct and helpful answers to the second user question. Begin your evaluation by "
    "comparing both assistants' answers with the reference answers. Identify and correct any mistakes. Avoid "
    "any position biases and ensure that the order in which the responses were presented does not influence "
    "your decision. Do not allow the length of the responses to influence your evaluation. Do not favor "
    "certain names of the assistants. Be as objective as possible. After providing your explanation, output "
    "your final verdict by strictly following this format: \"[[A]]\" if assistant A is better, \"[[B]]\" if "
    "assistant B is better, and \"[[C]]\" for a tie.\n\n")
UNITXT_USER = """{%- set turns = [(question_1, ref_answer_1, answer_a_1, answer_b_1), (question_2, ref_answer_2, answer_a_2, answer_b_2)] -%}
<|The Start of Reference Answer|>

{% for q, ref, a, b in turns %}### User:
{{ q }}

### Reference answer:
{{ ref }}{% if not loop.last %}

{% endif %}{% endfor %}

<|The End of Reference Answer|>


<|The Start of Assistant A's Conversation with User|>

{% for q, ref, a, b in turns %}### User:
{{ q }}

### Assistant A:
{{ a }}{% if not loop.last %}

{% endif %}{% endfor %}

<|The End of Assistant A's Conversation with User|>


<|The Start of Assistant B's Conversation with User|>

{% for q, ref, a, b in turns %}### User:
{{ q }}

### Assistant B:
{{ b }}{% if not loop.last %}

{% endif %}{% endfor %}

<|The End of Assistant B's Conversation with User|>"""

ORDER_BUG_USER = """Evaluate the prediction for the question below.

question: {{ question }}
answer: {{ data.gt }}
pred: {{ answer }}

Rate the pred on a scale of 1 to 5, where 5 means it fully matches the answer. \
Reply with a single line in the form "Score: X".
"""


def _record_template(record: dict, name: str, provenance: str, parser: dict | None = None,
                     preprocess: dict | None = None) -> Template:
    output_format = record.get("output_format")
    parser = parser or OUTPUT_FORMAT_PARSERS.get(output_format)
    if parser is None:
        raise TemplateError(f"Judge prompt {record.get('name')!r}: unknown output_format {output_format!r}; "
                            f"known: {', '.join(OUTPUT_FORMAT_PARSERS)}. Give a parser explicitly.", kind="invalid")
    messages = []
    if record.get("system_prompt"):
        messages.append({"role": "system", "content": fastchat_to_jinja(record["system_prompt"])})
    messages.append({"role": "user", "content": fastchat_to_jinja(record.get("prompt_template") or "")})
    desc = record.get("description")
    return Template(name=name, messages=messages, parser=dict(parser), preprocess=dict(preprocess or {}),
                    provenance=provenance, description=desc)


def import_judge_prompts(path_or_records: str | os.PathLike | Iterable[dict], *, prefix: str = "",
                         provenance: str | None = None) -> list[Template]:
    """Templates from a FastChat-style ``judge_prompts.jsonl`` (any fork) or its parsed records.

    Each record's ``system_prompt`` and ``prompt_template`` become a system and a user message, the
    ``{placeholders}`` become Jinja2 and ``output_format`` picks the parser. Names are
    ``prefix + record name``. Nothing is stored: pass the result to ``save_template``.
    """
    if isinstance(path_or_records, (str, os.PathLike)):
        path = Path(path_or_records)
        text = path.read_text(encoding="utf-8-sig")
        if path.suffix == ".json":
            records = json.loads(text)
        else:
            records = [json.loads(line) for line in text.splitlines() if line.strip()]
        provenance = provenance or f"imported from {path.name}"
    else:
        records = list(path_or_records)
        provenance = provenance or "imported judge_prompts records"
    out = []
    for rec in records:
        if not isinstance(rec, dict) or "name" not in rec or "prompt_template" not in rec:
            raise TemplateError("A judge_prompts record needs at least name and prompt_template.", kind="invalid")
        out.append(check_template(_record_template(rec, prefix + rec["name"], provenance)))
    return out


def stored_prompt_sources(store: "Store") -> "pd.DataFrame":
    """Imported judge_prompts files (any fork's): source_id, file, path, number of prompts."""
    with store.read() as cur:
        return cur.execute("""SELECT p.source_id, s.file_name, s.path, count(*) AS prompts
                              FROM judge_prompts p JOIN sources s USING (source_id)
                              GROUP BY ALL ORDER BY p.source_id""").df()


def save_stored_prompts(store: "Store", source_id: int, prefix: str = "") -> list[Template]:
    """Turn the prompts of one imported judge_prompts file into stored templates (``prefix + name``)."""
    with store.read() as cur:
        rows = cur.execute("SELECT record FROM judge_prompts WHERE source_id = ? ORDER BY name", [source_id]).fetchall()
        origin = cur.execute("SELECT path FROM sources WHERE source_id = ?", [source_id]).fetchone()
    if not rows:
        raise TemplateNotFound(f"Source {source_id} holds no judge prompts.")
    found = import_judge_prompts([json.loads(r[0]) for r in rows], prefix=prefix,
                                 provenance=f"imported from {origin[0] if origin else f'source {source_id}'}")
    return [save_template(store, t) for t in found]


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def builtins(store: "Store | None" = None) -> list[Template]:
    """Every built-in template (not stored). With a store, also Stability's Japanese prompts if a
    judge_prompts.jsonl with the ``[[評価]]`` output format has been imported (stability-<name>)."""
    global _BUILTINS
    if _BUILTINS is None:
        _BUILTINS = _static_builtins()
    out = [replace(t, messages=[dict(m) for m in t.messages], parser=dict(t.parser), preprocess=dict(t.preprocess))
           for t in _BUILTINS]
    if store is not None:
        out.extend(check_template(t) for t in _stability_templates(store))
    return out


_BUILTINS: list[Template] | None = None


def _static_builtins() -> list[Template]:
    out: list[Template] = []
    for rec in _read_jsonl(LMSYS_PROMPTS):
        out.append(_record_template(rec, rec["name"], _FASTCHAT_PROVENANCE))
    if JA_PROMPTS.exists():
        for rec in _read_jsonl(JA_PROMPTS):
            out.append(_record_template(rec, "ja-" + rec["name"], _JA_PROVENANCE))
    if SWALLOW_PROMPTS.exists():
        for rec in json.loads(SWALLOW_PROMPTS.read_text(encoding="utf-8")):
            if not rec.get("used_by_task") or not rec.get("fastchat_counterpart"):
                continue  # the file's two Flow-Judge templates are not used by the task
            p = rec.get("provenance") or {}
            prov = (f"{p.get('repository')} @ {p.get('commit')}, {p.get('path')} ({p.get('license')}), "
                    f"function {rec.get('source_function')}; extracted verbatim to "
                    "data/sample/swallow/judge_prompt_templates.json. Swallow fills it with an f-string and "
                    "truncates answers to their first 8,192 characters.")
            out.append(_record_template(rec, "swallow-" + rec["fastchat_counterpart"], prov,
                                        preprocess={"truncate": 8192}))
    out.append(Template(
        name="tencent-ti-ref",
        messages=[{"role": "system", "content": TENCENT_SYSTEM}, {"role": "user", "content": TENCENT_USER}],
        parser={"kind": "score_double_bracket", "scale": [1, 10]},
        preprocess={"strip_think": True},
        provenance=("Written for JudgeLens in the style of Tencent Cloud TI-ONE automated evaluation judge prompts "
                    "(Jinja2 over data.* and response.*, per cloud.tencent.com/document/product/851/123251); "
                    "not copied from a Tencent file."),
        description="Reference-based grading with Tencent TI variable names: data.question, data.gt, "
                    "data.history, response.content, response.reasoning_content. Needs a reference answer."))
    out.append(Template(
        name="unitxt-pair-multiturn-ref",
        messages=[{"role": "system", "content": UNITXT_SYSTEM}, {"role": "user", "content": UNITXT_USER}],
        parser={"kind": "pairwise_abc"},
        provenance=("IBM/unitxt @ 8e164d7f07d5c35bb46e3aa57a8880677c74d699, prepare/templates/response_assessment/"
                    "pairwise_comparison/mt_bench_multi_turn_with_reference.py (Apache-2.0): instruction text and "
                    "dialog layout (DialogPairwiseChoiceTemplate, '### User:' labels, turns joined by blank lines) "
                    "re-expressed as Jinja2 loops. The instruction is FastChat's pair-math-v1-multi-turn."),
        description="Pairwise, both turns, with the reference dialog: which assistant answers the second question better."))
    out.append(Template(
        name="order-bug-demo",
        messages=[{"role": "user", "content": ORDER_BUG_USER}],
        parser={"kind": "score_colon", "scale": [1, 5]},
        provenance="Written for JudgeLens to reproduce a known failure mode; not copied from any harness.",
        description=("The prompt layout behind the 'empty answer scored 5' bug: the reference is labelled 'answer' "
                     "and the model output 'pred'. When pred is empty, judges grade the only answer they see "
                     "(the reference) and return 5. 1-5 scale, 'Score: X'; scores are mapped to 1-10 in the store.")))
    for t in out:
        t.builtin = True
    return [check_template(t) for t in out]


def _stability_templates(store: "Store") -> list[Template]:
    with store.read() as cur:
        rows = cur.execute(
            """SELECT name, record, source_id FROM judge_prompts
               WHERE output_format = '[[評価]]' ORDER BY source_id DESC, name""").fetchall()
        paths = dict(cur.execute("SELECT source_id, path FROM sources").fetchall())
    seen, out = set(), []
    for name, record, source_id in rows:
        if name in seen:
            continue
        seen.add(name)
        prov = (f"Stability-AI FastChat fork (jp-stable), data/judge_ja_prompts.jsonl as imported into this store "
                f"(source {source_id}: {paths.get(source_id)})")
        out.append(_record_template(json.loads(record), "stability-" + name, prov))
    return out


# ------------------------------------------------------------------------------------------------
# Versions in the store

def _canon(obj) -> str:
    return json.dumps(obj, ensure_ascii=False, sort_keys=True)


def _row_to_template(row, builtin_info: dict[str, Template] | None = None) -> Template:
    template_id, name, version, messages, parser, preprocess, parent_id, provenance, builtin, created = row
    info = (builtin_info or {}).get(name)
    return Template(name=name, messages=json.loads(messages), parser=json.loads(parser),
                    preprocess=json.loads(preprocess) if preprocess else {}, provenance=provenance,
                    description=info.description if info is not None else None, builtin=bool(builtin),
                    template_id=template_id, version=version, parent_id=parent_id, created_at=created)


_COLUMNS = "template_id, name, version, messages, parser, preprocess, parent_id, provenance, builtin, created_at"


def save_template(store: "Store", template: Template, *, parent: "Template | int | None" = None) -> Template:
    """Store ``template`` as the next version of its name and return the stored version.

    Saving content identical to the newest version returns that version unchanged. ``parent``
    (default: the template's own parent, else the newest version of the name) is recorded so the
    history of edits can be followed.
    """
    check_template(template)
    content = template.content()
    given_parent = parent.template_id if isinstance(parent, Template) else parent

    def save(cur):  # may run again on a DuckLake store (Store.transaction): decides from what cur reads
        parent_id = given_parent
        latest = cur.execute(f"SELECT {_COLUMNS} FROM templates WHERE name = ? ORDER BY version DESC LIMIT 1",
                             [template.name]).fetchone()
        if latest is not None:
            existing = _row_to_template(latest)
            if _canon(existing.content()) == _canon(content):
                return existing
        version = (latest[2] + 1) if latest else 1
        if parent_id is None:
            parent_id = template.parent_id if template.parent_id is not None else (latest[0] if latest else None)
        template_id = store.next_id(cur, "templates")
        cur.execute(
            """INSERT INTO templates (template_id, name, version, messages, parser, preprocess, parent_id, provenance,
                                     builtin)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)""",
            [template_id, template.name, version, _canon(content["messages"]), _canon(content["parser"]),
             _canon(content["preprocess"]), parent_id, template.provenance,
             version == 1 and _is_builtin_content(template.name, content)])
        return cur.execute(f"SELECT {_COLUMNS} FROM templates WHERE template_id = ?", [template_id]).fetchone()

    row = store.transaction(save)
    if isinstance(row, Template):  # identical to the newest version: that version, unchanged
        row.description = template.description
        return row
    saved = _row_to_template(row)
    saved.description = template.description
    return saved


def _is_builtin_content(name: str, content: dict) -> bool:
    same = [t for t in builtins() if t.name == name]
    return bool(same) and _canon(same[0].content()) == _canon(content)


def ensure_builtins(store: "Store") -> list[Template]:
    """Store every built-in template as version 1 of its name if that name is not stored yet."""
    items = builtins(store)
    with store.read() as cur:
        have = {r[0] for r in cur.execute("SELECT DISTINCT name FROM templates").fetchall()}
    missing = [t for t in items if t.name not in have]
    if missing:
        store.transaction(lambda cur: _store_builtins(store, cur, missing))
    return items


def _store_builtins(store: "Store", cur, missing: list[Template]) -> None:
    for t in missing:
        if cur.execute("SELECT 1 FROM templates WHERE name = ?", [t.name]).fetchone():
            continue
        c = t.content()
        cur.execute(
            """INSERT INTO templates (template_id, name, version, messages, parser, preprocess, parent_id,
                                     provenance, builtin)
               VALUES (?, ?, 1, ?, ?, ?, NULL, ?, true)""",
            [store.next_id(cur, "templates"), t.name, _canon(c["messages"]), _canon(c["parser"]),
             _canon(c["preprocess"]), t.provenance])


_REF = re.compile(r"^(?P<name>.+?)@v?(?P<version>\d+)$")


def parse_ref(ref: str) -> tuple[str, int | None]:
    """'single-v1' -> ('single-v1', None); 'single-v1@v2' or 'single-v1@2' -> ('single-v1', 2)."""
    m = _REF.match(ref.strip())
    return (m.group("name"), int(m.group("version"))) if m else (ref.strip(), None)


def get_template(store: "Store", ref: "str | int", version: int | None = None) -> Template:
    """A stored version: by template_id, by name (newest version) or ``name@vN``. Built-in names are
    stored as version 1 on first use."""
    info = {t.name: t for t in builtins(store)}
    with store.read() as cur:
        if isinstance(ref, int):
            row = cur.execute(f"SELECT {_COLUMNS} FROM templates WHERE template_id = ?", [ref]).fetchone()
            if row is None:
                raise TemplateNotFound(f"No template with id {ref}.")
            return _row_to_template(row, info)
        name, v = parse_ref(ref)
        v = version if version is not None else v
        sql = f"SELECT {_COLUMNS} FROM templates WHERE name = ?" + (" AND version = ?" if v else "") + \
            " ORDER BY version DESC LIMIT 1"
        row = cur.execute(sql, [name, v] if v else [name]).fetchone()
    if row is None and name in info and not v_stored(store, name):
        ensure_builtins(store)
        return get_template(store, name, v)
    if row is None:
        with store.read() as cur:
            known = sorted({r[0] for r in cur.execute("SELECT DISTINCT name FROM templates").fetchall()} | set(info))
        what = f"{name}@v{v}" if v else name
        close = difflib.get_close_matches(name, known, n=3)
        hint = f" Did you mean {', '.join(close)}?" if close else ""
        raise TemplateNotFound(f"No template {what!r}.{hint} Known templates: {', '.join(known)}.")
    return _row_to_template(row, info)


def suggest_template(labels: list[str], prompt_name: str | None, bench: str | None, harness: str | None) -> str:
    """The template label that best matches a stored verdict's prompt, to start editing from.

    Re-judged verdicts carry their template's ``name@vN``; Swallow's already use ``swallow-<name>``;
    FastChat verdicts on a Japanese bench get the JA harness variant (``ja-<name>``) when there is one.
    ``labels``: the stored versions (``list_templates(store)["label"]``).
    """
    known = set(labels)
    first = {}  # a harness's verdict was made by the prompt as shipped: the first version, never a later edit
    for label in sorted(known, key=lambda x: parse_ref(x)[1] or 0, reverse=True):
        first[parse_ref(label)[0]] = label
    candidates = []
    if prompt_name:
        if "@v" in prompt_name:
            candidates.append(prompt_name)
        prefix = H.get(harness).template_prefix(bench)
        if prefix:
            candidates.append(f"{prefix}{prompt_name}")
        candidates.append(prompt_name)
    candidates.append("single-v1")
    for c in candidates:
        if c in known:
            return c
        if c in first:
            return first[c]
    return sorted(known)[0]


def v_stored(store: "Store", name: str) -> bool:
    """Whether any version of this name is stored."""
    with store.read() as cur:
        return cur.execute("SELECT 1 FROM templates WHERE name = ? LIMIT 1", [name]).fetchone() is not None


def list_templates(store: "Store") -> "pd.DataFrame":
    """Every stored version (built-ins are stored first): template_id, name, version, label, mode,
    parser kind, parent_id, builtin, provenance, created_at."""
    ensure_builtins(store)
    with store.read() as cur:
        df = cur.execute(
            """SELECT template_id, name, version, name || '@v' || version AS label,
                      json_extract_string(parser, '$.kind') AS parser_kind, parent_id, builtin, provenance, created_at
               FROM templates ORDER BY name, version""").df()
    df.insert(4, "mode", [mode_of({"kind": k}) for k in df["parser_kind"]])
    return df


def template_text(template: Template) -> str:
    """A readable, diffable text of one version: each message, then the parser and pre-processing."""
    parts = []
    for i, m in enumerate(template.messages, 1):
        parts.append(f"### message {i} ({m['role']})\n{m['content']}")
    parts.append("### parser\n" + json.dumps(template.parser, ensure_ascii=False, sort_keys=True))
    parts.append("### preprocess\n" + json.dumps(normalize_preprocess(template.preprocess), sort_keys=True))
    return "\n\n".join(parts) + "\n"


def diff_versions(store: "Store", a: "str | int | Template", b: "str | int | Template") -> str:
    """Unified diff between two versions (any names/versions/ids); empty if they are the same."""
    ta = a if isinstance(a, Template) else get_template(store, a)
    tb = b if isinstance(b, Template) else get_template(store, b)
    lines = difflib.unified_diff(template_text(ta).splitlines(keepends=True),
                                 template_text(tb).splitlines(keepends=True),
                                 fromfile=ta.label, tofile=tb.label)
    return "".join(lines)


# ------------------------------------------------------------------------------------------------
# Rendering (in the sandbox worker: lib.judging.sandbox)

def render(template: Template, context: dict, missing_notes: dict[str, str] | None = None) -> list[dict]:
    """The exact chat messages that will be sent for this context. Raises TemplateError with a clear
    message (syntax, missing variables, sandbox refusal, size, time or memory limit)."""
    result = render_many(template, [context], [missing_notes or {}])[0]
    if not result.ok:
        raise TemplateError(result.error, kind=result.kind or "error")
    return result.messages


def render_many(template: Template, contexts: list[dict],
                missing_notes: list[dict[str, str]] | None = None) -> list[RenderResult]:
    """Render one template for many contexts in the sandbox worker. Per-item problems (a variable
    this item lacks) come back as failed RenderResults; problems of the template itself (syntax,
    sandbox refusal, time or memory limit) raise TemplateError."""
    check_template(template)
    needed = undeclared_variables(template)
    results: list[RenderResult | None] = [None] * len(contexts)
    to_send: list[int] = []
    for i, ctx in enumerate(contexts):
        absent = [n for n in needed if n not in ctx]
        if absent:
            notes = (missing_notes[i] if missing_notes else {}) or {}
            why = "; ".join(f"{n}: {notes[n]}" for n in absent if n in notes)
            results[i] = RenderResult(error=(
                f"The template uses variable(s) this item does not have: {', '.join(absent)}."
                + (f" ({why})" if why else "")
                + f" Available: {', '.join(sorted(k for k in ctx if not k.startswith('_')))}."), kind="undefined")
        else:
            to_send.append(i)
    for start in range(0, len(to_send), RENDER_JOB_ITEMS):  # bounded jobs: the per-item clock stays meaningful
        chunk = to_send[start:start + RENDER_JOB_ITEMS]
        job_contexts = [contexts[i] for i in chunk]
        notes = [(missing_notes[i] if missing_notes else {}) or {} for i in chunk]
        for i, res in zip(chunk, render_in_worker(template.messages, job_contexts, notes)):
            results[i] = res
    return results  # type: ignore[return-value]


def resolve_template_ref(store: Store, ref: str) -> Template:
    """A template named on the command line: a name (``single-v1``, ``name@v2``), a template ``.json``
    file, or a judge_prompts ``.jsonl`` file (``FILE#NAME`` picks one record). Files are saved as templates."""
    path_text, _, pick = ref.partition("#")
    path = Path(path_text)
    if path.suffix in (".json", ".jsonl") and path.is_file():
        if path.suffix == ".json":
            data = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(data, dict):
                return save_template(store, template_from_json(data))
        found = import_judge_prompts(path)
        if pick:
            found = [t for t in found if t.name == pick]
        if len(found) != 1:
            names = ", ".join(t.name for t in import_judge_prompts(path))
            raise TemplateError(f"{path} holds {len(found)} matching prompts; pick one with {path}#NAME ({names}).")
        return save_template(store, found[0])
    return get_template(store, ref)
