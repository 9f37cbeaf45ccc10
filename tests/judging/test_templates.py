"""Judge templates: built-ins reproduce the real harness prompts byte for byte, the sandbox stops
injection and resource exhaustion fast, and versions are stored, diffed and referenced."""
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lib.judging import templates as T
from lib.keys import ItemKey, PairKey
from lib.judging.context import (CONTEXT_VARIABLES, build_context, build_contexts, preprocess_text,
                               select_items)

FASTCHAT = ["pair-v2", "pair-v2-multi-turn", "pair-math-v1", "pair-math-v1-multi-turn", "single-v1",
            "single-math-v1", "single-v1-multi-turn", "single-math-v1-multi-turn"]
EXPECTED_BUILTINS = (FASTCHAT + ["ja-" + n for n in FASTCHAT]
                     + ["swallow-single-v1", "swallow-single-math-v1", "swallow-single-v1-multi-turn",
                        "swallow-single-math-v1-multi-turn", "tencent-ti-ref", "unitxt-pair-multiturn-ref",
                        "order-bug-demo"])


def simple(content: str, role: str = "user") -> T.Template:
    return T.Template("t", [{"role": role, "content": content}], {"kind": "fastchat_single"})


# ------------------------------------------------------------------------------------------------
# Built-ins and the documented context

def test_builtin_names_and_provenance():
    items = T.builtins()
    assert [t.name for t in items] == EXPECTED_BUILTINS
    for t in items:
        assert t.provenance, t.name
    by = {t.name: t for t in items}
    assert "0e6d3e4b" in by["single-v1"].provenance and "Apache-2.0" in by["single-v1"].provenance
    assert "3a39b786" in by["ja-single-v1"].provenance
    assert "swallow-llm/swallow-evaluation-instruct" in by["swallow-single-v1"].provenance
    assert by["swallow-single-v1"].preprocess == {"truncate": 8192}
    assert by["pair-v2"].mode == "pairwise" and by["single-v1"].mode == "single"
    assert by["order-bug-demo"].parser == {"kind": "score_colon", "scale": [1, 5]}
    # the JA harness adds its language sentence; upstream FastChat does not
    assert "correct language" in by["ja-single-v1"].messages[1]["content"]
    assert "correct language" not in by["single-v1"].messages[1]["content"]


def test_every_builtin_uses_only_documented_context_variables():
    documented = {name.split(".")[0] for name in CONTEXT_VARIABLES}
    for t in T.builtins():
        assert set(T.undeclared_variables(t)) <= documented, t.name


def _stored_prompts(store, harness):
    with store.read() as cur:
        return cur.execute(
            """SELECT bench, judge, prompt_name, model, question_id, turn, sample, judge_prompt FROM single_judgments
               WHERE harness = ? ORDER BY bench, judge, prompt_name, model, question_id, turn, sample""",
            [harness]).fetchall()


def test_fastchat_and_ja_builtins_reproduce_every_stored_judge_prompt(sample_store):
    """All 1,120 FastChat-family single judgments in the sample: the built-in template, rendered with
    the documented context (reference answers of the same judge), gives the judge's user prompt exactly."""
    rows = _stored_prompts(sample_store, "fastchat")
    assert len(rows) == 1120
    groups: dict = {}
    for bench, judge, prompt, model, qid, turn, sample, stored in rows:
        name = ("ja-" if bench == "ja_mt_bench" else "") + prompt
        groups.setdefault((name, judge), []).append((ItemKey(bench, qid, turn, model, sample), stored))
    checked = 0
    for (name, judge), members in groups.items():
        t = T.builtins()[EXPECTED_BUILTINS.index(name)]
        ctxs = build_contexts(sample_store, [m[0] for m in members], preprocess=t.preprocess, judge_hint=judge)
        results = T.render_many(t, [c.context for c in ctxs], [c.missing for c in ctxs])
        for (item, stored), res in zip(members, results):
            assert res.ok, (name, item, res.error)
            assert res.messages[-1]["content"] == stored, (name, item)
            assert res.messages[0] == {"role": "system", "content": t.messages[0]["content"]}
            checked += 1
    assert checked == 1120


def test_swallow_builtins_reproduce_every_stored_message_list(sample_store):
    """Swallow stores the exact message list it sent: all 3,200 (4 runs) are reproduced (system + user)."""
    rows = _stored_prompts(sample_store, "swallow")
    assert len(rows) == 3200
    groups: dict = {}
    for bench, judge, prompt, model, qid, turn, sample, stored in rows:
        groups.setdefault(prompt, []).append((ItemKey(bench, qid, turn, model, sample), json.loads(stored)))
    by = {t.name: t for t in T.builtins()}
    for name, members in groups.items():
        t = by[name]
        ctxs = build_contexts(sample_store, [m[0] for m in members], preprocess=t.preprocess)
        results = T.render_many(t, [c.context for c in ctxs], [c.missing for c in ctxs])
        for (item, stored), res in zip(members, results):
            assert res.ok, (name, item, res.error)
            assert res.messages == [{"role": m["role"], "content": m["content"]} for m in stored], (name, item)


def test_fastchat_pair_builtins_reproduce_stored_pairwise_prompts(sample_store):
    with sample_store.read() as cur:
        rows = cur.execute("""SELECT prompt_name, model_1, model_2, question_id, turn, g1_user_prompt, g2_user_prompt
                              FROM pair_judgments ORDER BY question_id, turn""").fetchall()
    by = {t.name: t for t in T.builtins()}
    assert rows
    games = [PairKey("mt_bench", qid, turn, a, b) for _, m1, m2, qid, turn, _, _ in rows for a, b in ((m1, m2), (m2, m1))]
    contexts = [c.context for c in build_contexts(sample_store, games, judge_hint="gpt-4")]
    for k, (prompt, m1, m2, qid, turn, g1, g2) in enumerate(rows):
        r1, r2 = T.render_many(by[prompt], contexts[2 * k: 2 * k + 2])
        assert r1.messages[-1]["content"] == g1, (prompt, qid, turn)
        assert r2.messages[-1]["content"] == g2, (prompt, qid, turn)
    assert len(rows) == 75


def test_remaining_builtins_render_against_real_items(sample_store):
    by = {t.name: t for t in T.builtins()}
    # Tencent TI style on a turn-2 math item of the Swallow reasoner (answers with <think> blocks)
    reasoner = "hosted_vllm/fake-org/Fake-JA-Reasoner-32B"
    items = select_items(sample_store, bench="japanese_mt_bench", model=reasoner, category="math", turn=2)
    ctx = build_context(sample_store, items[0], preprocess=by["tencent-ti-ref"].preprocess)
    msgs = T.render(by["tencent-ti-ref"], ctx)
    user = msgs[1]["content"]
    assert ctx["data"]["gt"] in user and ctx["data"]["question"] in user
    assert "[Conversation so far]" in user and "assistant: " in user       # data.history (turn 1)
    assert "<think>" not in ctx["response"]["content"]                       # strip_think toggle
    # unitxt-style pairwise multi-turn with the reference dialog
    pair = build_context(sample_store, PairKey("mt_bench", "101", 2, "phi-3", "phi-3-dpo"), judge_hint="gpt-4")
    text = T.render(by["unitxt-pair-multiturn-ref"], pair)[1]["content"]
    assert text.count("### Reference answer:") == 2 and text.count("### Assistant A:") == 2
    assert pair["ref_answer_2"] in text and pair["answer_b_2"] in text
    # the order-bug demo: question, then the reference labelled "answer", then the prediction "pred"
    ja = select_items(sample_store, bench="ja_mt_bench", category="math", turn=1, judged_by="gpt-4o")[0]
    demo = T.render(by["order-bug-demo"], build_context(sample_store, ja, judge_hint="gpt-4o"))[0]["content"]
    assert demo.index("question:") < demo.index("answer:") < demo.index("pred:")


def test_reference_templates_on_items_without_a_reference_say_why(sample_store):
    t = T.get_template(sample_store, "order-bug-demo")
    item = select_items(sample_store, bench="mt_bench", category="writing", turn=1)[0]
    ctx = build_contexts(sample_store, [item])[0]
    res = T.render_many(t, [ctx.context], [ctx.missing])[0]
    assert not res.ok and res.kind == "undefined"
    assert "no reference answer" in res.error


def test_stability_templates_appear_only_when_imported(store):
    assert not [t for t in T.builtins(store) if t.name.startswith("stability-")]
    record = {"name": "single-v1", "type": "single", "system_prompt": "あなたは有益な助手です。",
              "prompt_template": "[指示]\n評価してください。例：評価：[[5]]\n\n[質問]\n{question}\n\n[回答]\n{answer}\n",
              "description": "synthetic Stability-style record for this test", "category": "general",
              "output_format": "[[評価]]"}
    with store.write() as cur:
        cur.execute("""INSERT INTO sources (sha256, path, file_name, harness, kind, bytes, rows_imported)
                       VALUES ('x', 'judge_ja_prompts.jsonl', 'judge_ja_prompts.jsonl', 'fastchat', 'judge_prompts', 1, 1)""")
        cur.execute("""INSERT INTO judge_prompts VALUES (1, 'fastchat', 'single-v1', 'single', ?, ?, '', 'general',
                       '[[評価]]', ?)""", [record["system_prompt"], record["prompt_template"], json.dumps(record)])
    found = [t for t in T.builtins(store) if t.name.startswith("stability-")]
    assert [t.name for t in found] == ["stability-single-v1"]
    assert found[0].parser["kind"] == "ja_rating"
    assert T.render(found[0], {"question": "Q", "answer": "A"})[1]["content"].endswith("[回答]\nA\n")


# ------------------------------------------------------------------------------------------------
# FastChat format strings -> Jinja2

def test_fastchat_to_jinja_examples():
    assert T.fastchat_to_jinja("Q: {question}\nA: {answer}") == "Q: {{ question }}\nA: {{ answer }}"
    src = T.fastchat_to_jinja('JSON like {{"score": 1}} and Jinja-looking {{% raw %}} {{# x #}} text: {question}')
    out = T.render(simple(src), {"question": "Why?"})[0]["content"]
    assert out == 'JSON like {"score": 1} and Jinja-looking {% raw %} {# x #} text: Why?'
    with pytest.raises(T.TemplateError, match="Positional"):
        T.fastchat_to_jinja("{0}")
    with pytest.raises(T.TemplateError, match="format spec"):
        T.fastchat_to_jinja("{score:.2f}")
    with pytest.raises(T.TemplateError, match="Not a valid format string"):
        T.fastchat_to_jinja("unbalanced {")


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.text(alphabet="ab {}%#\n評", max_size=8),
                          st.sampled_from(["{question}", "{answer}", "{{", "}}"])), max_size=8))
def test_fastchat_to_jinja_renders_like_str_format(parts):
    text = "".join(parts)
    try:
        expected = text.format(question="Q{{1}}", answer="A%}")
    except (ValueError, IndexError, KeyError):
        return  # not a valid format string: nothing to compare
    out = T.render(simple(T.fastchat_to_jinja(text)), {"question": "Q{{1}}", "answer": "A%}"})
    assert out[0]["content"] == expected


def test_import_judge_prompts_from_any_fork(tmp_path):
    items = T.import_judge_prompts(T.LMSYS_PROMPTS, prefix="fork-")
    assert [t.name for t in items] == ["fork-" + n for n in FASTCHAT]
    one = tmp_path / "judge_prompts.jsonl"
    one.write_text(json.dumps({"name": "my-judge", "type": "single", "system_prompt": "Be strict.",
                               "prompt_template": "{question}\n{answer}\nRating: [[rating]]",
                               "output_format": "[[rating]]"}) + "\n")
    (t,) = T.import_judge_prompts(one)
    assert t.messages == [{"role": "system", "content": "Be strict."},
                          {"role": "user", "content": "{{ question }}\n{{ answer }}\nRating: [[rating]]"}]
    with pytest.raises(T.TemplateError, match="unknown output_format"):
        T.import_judge_prompts([{"name": "x", "prompt_template": "{q}", "output_format": "<score>"}])


# ------------------------------------------------------------------------------------------------
# Rendering rules and the sandbox

def test_data_is_never_evaluated_and_undefined_is_strict():
    out = T.render(simple("A: {{ answer }}"), {"answer": "{{ 7*7 }} {% for x in y %}"})
    assert out == [{"role": "user", "content": "A: {{ 7*7 }} {% for x in y %}"}]
    assert T.undeclared_variables(simple("{{ answr }} {{ data.gt }} {% set x = 1 %}{{ x }} {{ range(2)|list }}")) == \
        ["answr", "data"]
    with pytest.raises(T.TemplateError, match=r"variable\(s\) this item does not have: answr") as exc:
        T.render(simple("{{ answr }}"), {"answer": "x"})
    assert "Available: answer" in exc.value.message
    with pytest.raises(T.TemplateError, match="has no attribute 'gt'"):
        T.render(simple("{{ data.gt }}"), {"data": {"question": "q"}})
    assert T.render(simple("{{ data.gt | default('none') }}|{{ 'y' if data.gt is defined else 'n' }}"),
                    {"data": {}})[0]["content"] == "none|n"


def test_trailing_newline_and_no_autoescape_keep_prompts_exact():
    out = T.render(simple("if x < 3 && y > 2: print('<b>')\n"), {})
    assert out[0]["content"] == "if x < 3 && y > 2: print('<b>')\n"


def test_syntax_errors_name_the_message_and_line():
    t = T.Template("t", [{"role": "system", "content": "ok"}, {"role": "user", "content": "line1\n{{ x }"}],
                   {"kind": "fastchat_single"})
    with pytest.raises(T.TemplateError, match=r"Syntax error in message 2 \(user\), line 2") as exc:
        T.check_template(t)
    assert exc.value.kind == "syntax"


PAYLOADS = [
    ("{{ cycler.__init__.__globals__.os.popen('id').read() }}", "security", "unsafe"),
    ("{{ ''.__class__.__mro__ }}", "security", "unsafe"),
    ("{{ 'x' * 50000000 }}", "security", "Repeating text or lists with *"),
    ("{{ 'x'|center(30000000) }}", "security", "center width 30,000,000 is over the limit"),
    ("{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}", "security",
     "range() of 100,000 items is over the limit"),
    ("{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}", "timeout", "took longer than"),
    ("{% for i in range(10000) %}{% for j in range(10000) %}x{% endfor %}{% endfor %}", "limit",
     "renders to more than 400,000 characters"),
    ("{% set ns = namespace(a='xxxxxxxxxx') %}{% for i in range(60) %}{% set ns.a = ns.a ~ ns.a %}{% endfor %}",
     ("timeout", "memory"), ""),
    ("{{ [1, 2] * 30000000 }}", "security", "Repeating text or lists"),
    ("{{ 9 ** 9999999 }}", "security", "** operator"),
    ("{{ '%0999999999d' % 1 }}", "security", "String formatting with %"),
    ("{{ 'a'.ljust(100000000) }}", "security", "unsafe"),
    ("{{ 'x'.replace('x', 'yyyyyyyyyyyyyyyyyyyy').replace('y', 'zz') }}", None, ""),
    ("{% set s = range(5000)|join('-') %}{{ s.replace('-', s) }}", "security", "replace would build"),
    ("{{ question|attr('__class__') }}", "syntax", "No filter named 'attr'"),
    ("{{ '{0.__class__}'.format(question) }}", "security", "unsafe"),
    ("{{ [].append(1) }}", "security", "unsafe"),
    ("{{ lipsum(100000) }}", "undefined", "lipsum"),
]


@pytest.mark.parametrize("payload, kind, message", PAYLOADS, ids=[p[0][:45] for p in PAYLOADS])
def test_sandbox_stops_injection_and_exhaustion_fast(payload, kind, message):
    """Each payload is stopped by the limit named in ``kind`` (a check before rendering, the render's time or
    memory bound, the output cap): the mechanism, not how long it took on a loaded machine."""
    if kind is None:  # harmless: renders
        assert T.render(simple(payload), {"question": "q"})
        return
    with pytest.raises(T.TemplateError) as exc:
        T.render(simple(payload), {"question": "q"})
    kinds = kind if isinstance(kind, tuple) else (kind,)
    assert exc.value.kind in kinds, exc.value.message
    assert message in exc.value.message
    assert "PWNED" not in exc.value.message and "uid=" not in exc.value.message


def test_worker_recovers_after_a_timeout():
    with pytest.raises(T.TemplateError, match="took longer"):
        T.render(simple("{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}"), {})
    assert T.render(simple("{{ question }}"), {"question": "still works"})[0]["content"] == "still works"


def test_size_caps_on_the_template():
    with pytest.raises(T.TemplateError, match="limit is 60,000"):
        T.check_template(simple("x" * 60_001))
    with pytest.raises(T.TemplateError, match="at most 40 messages"):
        T.check_template(T.Template("t", [{"role": "user", "content": "x"}] * 41, {"kind": "fastchat_single"}))
    with pytest.raises(T.TemplateError, match="role"):
        T.check_template(T.Template("t", [{"role": "tool", "content": "x"}], {"kind": "fastchat_single"}))
    with pytest.raises(T.TemplateError, match="Parser: Unknown parser kind"):
        T.check_template(T.Template("t", [{"role": "user", "content": "x"}], {"kind": "?"}))
    with pytest.raises(T.TemplateError, match="Unknown pre-processing"):
        T.check_template(T.Template("t", [{"role": "user", "content": "x"}], {"kind": "fastchat_single"},
                                    preprocess={"run_python": "import os"}))


def test_preprocessing_toggles():
    text = "<|im_start|>assistant\n<think>plan it</think>The answer is 42.<|im_end|></s>"
    assert preprocess_text(text, {}) == text
    assert preprocess_text(text, {"strip_think": True}) == "<|im_start|>assistant\nThe answer is 42.<|im_end|></s>"
    assert preprocess_text(text, {"strip_think": True, "strip_chat_tokens": True}) == "The answer is 42."
    assert preprocess_text("<|start_header_id|>assistant<|end_header_id|>\n\nHi<|eot_id|>",
                           {"strip_chat_tokens": True}) == "Hi"
    assert preprocess_text("[INST] q [/INST] a", {"strip_chat_tokens": True}) == " q  a"
    assert preprocess_text("あ" * 10, {"truncate": 3}) == "あああ"
    assert preprocess_text("<think>never closed", {"strip_think": True}) == ""


def test_swallow_truncation_applies_to_answers_only(sample_store):
    item = select_items(sample_store, bench="japanese_mt_bench", limit=1)[0]
    full = build_context(sample_store, item)
    cut = build_context(sample_store, item, preprocess={"truncate": 5})
    assert cut["answer"] == full["answer"][:5] and cut["response"]["content"] == full["answer"][:5]
    assert cut["question"] == full["question"]


# ------------------------------------------------------------------------------------------------
# Versions in the store

def test_versions_parents_diff_and_lookup(store):
    v1 = T.get_template(store, "single-v1")            # built-ins are stored as version 1 on first use
    assert (v1.version, v1.builtin, v1.label) == (1, True, "single-v1@v1")
    edited = v1.edited(messages=[v1.messages[0], {"role": "user", "content": v1.messages[1]["content"]
                                                  + "\nAnswer in English."}])
    v2 = T.save_template(store, edited)
    assert (v2.version, v2.parent_id, v2.builtin) == (2, v1.template_id, False)
    assert T.save_template(store, edited).template_id == v2.template_id   # same content: no new version
    assert T.get_template(store, "single-v1").version == 2
    assert T.get_template(store, "single-v1@v1").template_id == v1.template_id
    assert T.get_template(store, "single-v1@1").template_id == v1.template_id
    assert T.get_template(store, v2.template_id).label == "single-v1@v2"
    diff = T.diff_versions(store, "single-v1@v1", "single-v1@v2")
    assert "--- single-v1@v1" in diff and "+++ single-v1@v2" in diff and "+Answer in English." in diff
    assert T.diff_versions(store, "single-v1@v1", v1) == ""
    other = T.diff_versions(store, "single-v1@v1", "ja-single-v1@v1")
    assert "+" in other and "correct language" in other
    df = T.list_templates(store)
    assert set(EXPECTED_BUILTINS) <= set(df["name"])
    assert list(df[df["name"] == "single-v1"]["label"]) == ["single-v1@v1", "single-v1@v2"]
    assert set(df[df["name"] == "pair-v2"]["mode"]) == {"pairwise"}


def test_unknown_template_names_close_matches(store):
    with pytest.raises(T.TemplateNotFound, match="Did you mean single-v1"):
        T.get_template(store, "single-v2")
    with pytest.raises(T.TemplateNotFound, match="'single-v1@v9'"):
        T.get_template(store, "single-v1@v9")


def test_template_json_round_trip(store, tmp_path):
    t = T.Template("mine", [{"role": "user", "content": "{{ question }} -> {{ answer }}. Score: X"}],
                   {"kind": "score_colon", "scale": [1, 5]}, {"strip_think": True})
    back = T.template_from_json(json.loads(json.dumps(t.to_json())))
    saved = T.save_template(store, back)
    assert saved.content() == t.content() and saved.label == "mine@v1"
    assert saved.preprocess == {"strip_think": True, "strip_chat_tokens": False, "truncate": None}


def test_an_imported_judge_prompts_file_becomes_templates(sample_store):
    sources = T.stored_prompt_sources(sample_store)
    assert list(sources["prompts"]) == [8]                       # the JA harness's judge_prompts.jsonl
    added = T.save_stored_prompts(sample_store, int(sources["source_id"].iloc[0]), prefix="fork-")
    assert sorted(t.name for t in added) == sorted(f"fork-{n}" for n in (
        "pair-v2", "pair-v2-multi-turn", "pair-math-v1", "pair-math-v1-multi-turn",
        "single-v1", "single-math-v1", "single-v1-multi-turn", "single-math-v1-multi-turn"))
    single = next(t for t in added if t.name == "fork-single-v1")
    assert "{{ question }}" in single.messages[-1]["content"] and single.parser["kind"] == "fastchat_single"
    again = T.save_stored_prompts(sample_store, int(sources["source_id"].iloc[0]), prefix="fork-")
    assert [t.template_id for t in again] == [t.template_id for t in added]   # same content: same versions


def test_suggestion_starts_from_the_shipped_prompt_not_a_later_edit():
    """A batch on an edited built-in stored ja-single-v1@v2; the next visit still starts from the prompt the
    harness's verdict was made with (v1), so an edit is not applied twice."""
    labels = ["ja-single-v1@v1", "ja-single-v1@v2", "ja-single-v1@v3", "single-v1@v1"]
    assert T.suggest_template(labels, "single-v1", "ja_mt_bench", "fastchat") == "ja-single-v1@v1"
    assert T.suggest_template(labels, "ja-single-v1@v3", "ja_mt_bench", "judgelens") == "ja-single-v1@v3"


def test_a_kept_context_data_gives_the_contexts_the_store_gives(sample_store):
    """The Workbench keeps a bench's questions and references per data version and one model's answers to one
    question per question and model (``bench_texts``, ``context_data``), and makes each turn's context from them:
    the same context as ``build_context`` reading the store (every turn, Swallow samples, a judge's own reference,
    pre-processing), one query for the answers, none for another turn, and the same error for a missing answer."""
    from conftest import reads_counted, sample_item_keys

    from lib.errors import ContextError
    from lib.judging.context import bench_texts, context_data

    items = sample_item_keys(sample_store, 8, 2)
    with sample_store.read() as cur:
        judges = [r[0] for r in cur.execute("SELECT DISTINCT judge FROM reference_answers ORDER BY 1").fetchall()]
    texts = {b: bench_texts(sample_store, b) for b in {i.bench for i in items}}
    assert any(t.refs for t in texts.values())
    for item in items:
        with reads_counted(sample_store) as seen:
            data = context_data(sample_store, item.bench, item.model, item.question_id, texts=texts[item.bench])
        assert len(seen) == 1  # the answers alone
        for turn in (1, 2):
            other = ItemKey(item.bench, item.question_id, turn, item.model, item.sample)
            for pre, hint in ((None, None), ({"strip_think": True, "truncate": 20}, judges[-1])):
                with reads_counted(sample_store) as seen:
                    got = build_context(sample_store, other, preprocess=pre, judge_hint=hint, data=data)
                assert not seen
                assert got == build_context(sample_store, other, preprocess=pre, judge_hint=hint)
                assert got == build_context(sample_store, other, preprocess=pre, judge_hint=hint,
                                            data=context_data(sample_store, item.bench, item.model, item.question_id))
    missing = ItemKey(items[0].bench, items[0].question_id, 1, "no-such-model")
    with pytest.raises(ContextError) as want:
        build_context(sample_store, missing)
    with pytest.raises(ContextError) as got:
        build_context(sample_store, missing, data=context_data(sample_store, missing.bench, missing.model,
                                                               missing.question_id, texts=texts[missing.bench]))
    assert str(got.value) == str(want.value)


def test_the_workbench_reads_a_question_item_side_by_side(sample_store):
    """``question_item``: the verdicts of every turn (no judge prompt, no rationale) and the context data of one model's
    answer to one question, the same as ``question_verdicts`` and ``context_data`` read one after the other."""
    import pandas as pd

    from lib.analysis import item_view as iv
    from lib.judging.context import bench_texts, context_data, question_item

    with sample_store.read() as cur:
        keys = [ItemKey(*r) for r in cur.execute(
            "SELECT DISTINCT bench, question_id, turn, model, sample FROM single_judgments "
            "ORDER BY hash(bench, question_id, turn, model, sample) LIMIT 4").fetchall()]
    for key in keys:
        texts = bench_texts(sample_store, key.bench)
        verdicts, data = question_item(sample_store, key.bench, key.question_id, key.model, key.sample, texts=texts)
        pd.testing.assert_frame_equal(verdicts, iv.question_verdicts(sample_store, key.bench, key.question_id,
                                                                     key.model, key.sample, prompts=False,
                                                                     rationales=False))
        alone = context_data(sample_store, key.bench, key.model, key.question_id)
        assert (data.questions, data.answers, data.refs) == (alone.questions, alone.answers, alone.refs)
