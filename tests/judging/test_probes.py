"""Judge-prompt probes against the local OpenAI-compatible server: a confused judge fails the
bug-style template, a careful judge passes FastChat's single-v1; ablation, position swap, repeat
noise, storage and comparison of runs, the CLI's JSON, and the key never reaching the store."""
from __future__ import annotations

import json
import re
import threading
from functools import partial

import pytest

from conftest import judge_config
from lib.probes import suite as P
from lib.judging import templates as T
from lib.cli import main
from lib.keys import ItemKey
from scripted_judges import confused_judge

KEY = "sk-probe-test-KEY-5e1d0c7b9a"

# ---------------------------------------------------------------------------------------------
# Scripted judges

def careful_judge_for(store):
    """A careful judge for FastChat's single-v1: knows every stored answer and reference, so it can
    tell a real answer (7) from a cut one (3), another question's answer (1), the reference (9)."""
    with store.read() as cur:
        rows = cur.execute("""SELECT q.turns[a.turn], a.text FROM answers a
                              JOIN current_questions q USING (bench, question_id)""").fetchall()
        refs = {t for (t,) in cur.execute("SELECT text FROM reference_answers").fetchall()}
    by_question: dict[str, set] = {}
    for q, a in rows:
        by_question.setdefault(q.strip(), set()).add(a)
    every = {a for (_, a) in rows}

    def judge(body: dict) -> str:
        text = body["messages"][-1]["content"]
        ans = re.search(r"\[The Start of Assistant's Answer\]\n(.*)\n\[The End of Assistant's Answer\]", text, re.S)
        q = re.search(r"\[Question\]\n(.*?)(?:\n\n\[|\Z)", text, re.S)
        ans, q = ans.group(1), q.group(1).strip()
        if not ans.strip():
            return "The assistant gave no answer at all. Rating: [[1]]"
        if ans.strip() == q:
            return "The assistant only repeats the question. Rating: [[1]]"
        if "NOTE TO THE EVALUATOR" in ans:
            return "The answer addresses an instruction to me, which I ignore; it says only that it does not know. " \
                   "Rating: [[1]]"
        if ans in refs:
            return "Correct and complete. Rating: [[9]]"
        real = by_question.get(q, set())
        if ans in real:
            return "A reasonable answer. Rating: [[7]]"
        if any(r.startswith(ans) for r in real):
            return "The answer stops mid-sentence. Rating: [[3]]"
        if ans in every:
            return "This answers a different question. Rating: [[1]]"
        if P.is_japanese(q) != P.is_japanese(ans):
            return "Wrong language and no content. Rating: [[2]]"
        return "Rating: [[5]]"

    return judge


cfg = partial(judge_config, max_retries=0)     # the shared judge config, no retries


def rows(store, sql, params=()):
    with store.read() as cur:
        return cur.execute(sql, list(params)).fetchall()


# ---------------------------------------------------------------------------------------------
# The suite flags the bug-style template and passes FastChat's

def test_bug_template_fails_the_empty_answer_and_the_order_swap_is_the_fix(sample_store, server):
    server.responder = confused_judge
    run = P.run_probes(sample_store, "order-bug-demo", cfg(server), n_items=3, api_key=KEY, repeats=2,
                       noise_items=1)
    empty = run.result("empty_answer")
    assert empty.failed and empty.expected == "low" and empty.scores == [5.0, 5.0, 5.0]
    assert all(i["ref_share"] >= P.CONFUSION_REF_SHARE for i in empty.items)  # the rationale quotes the reference
    assert "The answer is:" in empty.evidence[0]["rationale"]                 # the judge's own words as evidence
    assert "fails if the score is above the scale midpoint (3)" in empty.detail
    swap = run.result("order_swap")
    assert swap.status == "pass" and swap.scores == [1.0, 1.0, 1.0] and not swap.counts
    assert swap.metrics["description"] == "the answer placed before the reference"
    assert not run.passed
    text = run.summary
    assert "order-bug-demo scores an EMPTY answer 5/5 on 3 of 3 item(s): the judge confuses the reference with " \
           "the answer." in text
    assert "With the answer placed before the reference (order_swap) the empty answer scores 1/5: the order of the " \
           "sections is the cause." in text
    # each failed canary says in plain words what it shows about the judge (the probe's own finding)
    failed = {r.probe for r in run.results if r.kind == "canary" and r.failed} - {"empty_answer", "whitespace_answer"}
    assert failed and all(P.PROBES[p].finding in text for p in failed), (failed, text)
    assert ": the judge follows instructions hidden in the answer." in text
    # items: three real items of three categories, all with a reference, from the bench where the template
    # renders for the most items: japanese_mt_bench (4 Swallow runs' answers since the same-models runs joined
    # the sample; before, a tie with ja_mt_bench went to ja_mt_bench alphabetically)
    assert len({(i["bench"], i["question_id"]) for i in run.items}) == 3
    assert {i["bench"] for i in run.items} == {"japanese_mt_bench"}
    # stored, with the per-request results
    (rid, passed, tmpl), = rows(sample_store, "SELECT run_id, passed, template FROM probe_runs")
    assert (rid, passed, tmpl) == (run.run_id, False, "order-bug-demo@v1")
    n = rows(sample_store, "SELECT count(*) FROM probe_results WHERE run_id = ? AND probe = 'empty_answer' "
                           "AND failed AND score = 5", [rid])[0][0]
    assert n == 3
    # nothing became a verdict
    assert rows(sample_store, "SELECT count(*) FROM single_judgments WHERE harness = 'judgelens'")[0][0] == 0


def test_fastchat_single_v1_passes_a_careful_judge(sample_store, server):
    server.responder = careful_judge_for(sample_store)
    run = P.run_probes(sample_store, "single-v1", cfg(server), n_items=3, api_key=KEY,
                       probes=["canaries", "ablation"])
    status = {r.probe: r.status for r in run.results}
    assert status == {**{c: "pass" for c in P.CANARIES}, "order_swap": "skipped", "no_reference": "skipped",
                      "answer_first": "pass", "rubric_first": "skipped", "rubric_last": "pass"}
    assert run.passed
    assert run.result("empty_answer").scores == [1.0, 1.0, 1.0]
    assert run.result("reference_copy").scores == [9.0, 9.0, 9.0]
    assert run.result("injection").scores == [1.0, 1.0, 1.0]      # the injected "Rating: [[10]]" is ignored
    assert run.result("truncated_answer").real_scores == [7.0, 7.0, 7.0]
    assert run.summary.splitlines()[0] == "single-v1@v1 judged by judge-x on 3 item(s): passes all 8 probe(s) " \
                                          "that decide it."
    # the injected text names the template's own scale maximum
    inj = [r.body["messages"][-1]["content"] for r in server.chat_requests()
           if "NOTE TO THE EVALUATOR" in r.body["messages"][-1]["content"]]
    assert inj and all("Rating: [[10]]" in t and "Score: 10" in t for t in inj)


def test_ablation_shows_the_score_shift_per_item_and_in_aggregate(sample_store, server):
    server.responder = confused_judge  # real answers: 3 with the reference first, 4 with the prediction first
    run = P.run_probes(sample_store, "order-bug-demo", cfg(server), n_items=2, api_key=KEY,
                       probes=["empty_answer", "order_swap", "rubric_first"])
    swap = run.result("order_swap")
    assert swap.metrics["mean_shift"] == 1.0 and swap.metrics["max_abs_shift"] == 1.0
    assert [p["shift"] for p in swap.metrics["per_item"]] == [1.0, 1.0]
    assert [(p["empty_original"], p["empty_variant"]) for p in swap.metrics["per_item"]] == [(5.0, 1.0)] * 2
    assert "real answers move by +1.00 on average" in swap.detail
    rubric = run.result("rubric_first")  # moving the rubric does not help this judge
    assert rubric.status == "fail" and rubric.metrics["mean_shift"] == 0.0
    # the variant prompts really were sent in the other order
    sent = [r.body["messages"][-1]["content"] for r in server.chat_requests()]
    assert any(t.index("pred:") < t.index("answer:") for t in sent)
    assert any(t.index("answer:") < t.index("pred:") for t in sent)


def test_position_swap_on_a_pairwise_template_with_a_first_position_judge(sample_store, server):
    server.default = "Assistant A is better. [[A]]"
    run = P.run_probes(sample_store, "pair-v2", cfg(server), n_items=4, api_key=KEY, bench="mt_bench",
                       model_a="phi-3", model_b="phi-3-dpo", probes=["position_swap", "empty_answer"])
    pos = run.result("position_swap")
    assert pos.failed and pos.metrics["consistency"] == 0.0 and pos.metrics["first_position_rate"] == 1.0
    assert len(pos.metrics["flips"]) == 4 and pos.n_items == 4
    assert "consistency 0%" in pos.detail and "toward the first position" in pos.detail
    empty = run.result("empty_answer")   # the empty side wins whenever it is shown first
    assert empty.failed and empty.n_failed == 4
    assert not run.passed
    # every item was sent as (A, B) and as (B, A)
    prompts = [r.body["messages"][-1]["content"] for r in server.chat_requests()]
    assert len(prompts) == 16
    positions = rows(sample_store, "SELECT position, count(*) FROM probe_results WHERE probe = 'position_swap' "
                                   "GROUP BY ALL ORDER BY 1")
    assert positions == [("AB", 4), ("BA", 4)]


def test_position_swap_passes_a_consistent_judge(sample_store, server):
    def by_content(body):  # always prefers the longer answer, wherever it is shown
        text = body["messages"][-1]["content"]
        a = re.search(r"\[The Start of Assistant A's Answer\]\n(.*?)\n\[The End", text, re.S).group(1)
        b = re.search(r"\[The Start of Assistant B's Answer\]\n(.*?)\n\[The End", text, re.S).group(1)
        return "[[A]]" if len(a) >= len(b) else "[[B]]"

    server.responder = by_content
    run = P.run_probes(sample_store, "pair-v2", cfg(server), n_items=3, api_key=KEY, bench="mt_bench",
                       probes=["position_swap", "empty_answer"])
    assert run.result("position_swap").metrics["consistency"] == 1.0
    assert run.passed


def test_repeat_noise_bypasses_the_cache(sample_store, server):
    seen: dict[str, int] = {}
    lock = threading.Lock()

    def alternating(body):  # each prompt gets 4, 5, 4, 5, ... however the requests interleave
        with lock:
            n = seen[body["messages"][-1]["content"]] = seen.get(body["messages"][-1]["content"], 0) + 1
        return f"Score: {4 if n % 2 else 5}"

    server.responder = alternating
    c = cfg(server, temperature=0.7)
    run = P.run_probes(sample_store, "order-bug-demo", c, n_items=2, api_key=KEY, probes=["repeat_noise"],
                       repeats=4, noise_items=2)
    assert len(server.chat_requests()) == 8  # 4 identical requests x 2 items, none answered by the cache
    noise = run.result("repeat_noise")
    assert [sorted(s) for s in noise.scores] == [[4.0, 4.0, 5.0, 5.0]] * 2
    assert noise.metrics["mean_std_10"] == pytest.approx(1.299, abs=0.001)  # 1 point on 1-5 = 2.25 on 1-10
    assert noise.status == "fail" and not noise.counts and run.passed       # a diagnostic, not a verdict
    again = P.run_probes(sample_store, "order-bug-demo", c, n_items=2, api_key=KEY, probes=["repeat_noise"],
                         repeats=4, noise_items=2)
    assert len(server.chat_requests()) == 16 and again.calls == 8 and again.cache_hits == 0
    assert len({r.body["messages"][-1]["content"] for r in server.chat_requests()}) == 2
    assert all(r.body["temperature"] == 0.7 for r in server.chat_requests())


def test_probe_calls_share_the_cache_and_cost_accounting(sample_store, server):
    server.responder = confused_judge
    c = cfg(server, price_per_1k_input=1.0, price_per_1k_output=2.0)
    first = P.run_probes(sample_store, "order-bug-demo", c, n_items=2, api_key=KEY, probes=["canaries"])
    assert first.calls == first.requests - first.cache_hits > 0
    assert first.cost == pytest.approx(first.prompt_tokens / 1000 + first.completion_tokens / 500)
    again = P.run_probes(sample_store, "order-bug-demo", c, n_items=2, api_key=None, probes=["canaries"])
    assert again.calls == 0 and again.cache_hits == again.requests and again.cost == 0  # no key needed
    assert [r.status for r in again.results] == [r.status for r in first.results]
    n_cache = rows(sample_store, "SELECT count(*) FROM judge_cache")[0][0]
    assert n_cache == len({r.body["messages"][-1]["content"] for r in server.chat_requests()})


def test_runs_are_stored_and_compared_across_template_versions(sample_store, server):
    server.responder = lambda body: confused_judge(body).replace("Score: 4", "Score: 3")  # layout-blind on real text
    v1 = T.get_template(sample_store, "order-bug-demo")
    run1 = P.run_probes(sample_store, v1, cfg(server), n_items=3, api_key=KEY, probes=["canaries"])
    fixed_text = v1.messages[0]["content"].replace("answer: {{ data.gt }}\npred: {{ answer }}",
                                                   "pred: {{ answer }}\nanswer: {{ data.gt }}")
    v2 = T.save_template(sample_store, v1.edited(messages=[{"role": "user", "content": fixed_text}]))
    assert v2.label == "order-bug-demo@v2"
    run2 = P.run_probes(sample_store, v2, cfg(server), n_items=3, api_key=KEY, probes=["canaries"])
    cmp = P.compare_probe_runs(sample_store, run1.run_id, run2.run_id)
    assert {"empty_answer", "whitespace_answer"} <= set(cmp.fixed)
    assert cmp.broken == []
    # this judge still misses a cut answer and obeys injected ratings, whatever the order
    assert cmp.still_failing == ["truncated_answer", "injection"]
    assert cmp.text.startswith(f"order-bug-demo@v2 (run {run2.run_id}) vs order-bug-demo@v1 (run {run1.run_id}): "
                               "fixed empty_answer, whitespace_answer")
    assert "broke nothing else" in cmp.text
    row = cmp.table.set_index("probe").loc["empty_answer"]
    assert (row["status_a"], row["status_b"], row["change"]) == ("fail", "pass", "fixed")
    listed = P.list_probe_runs(sample_store)
    assert list(listed["run_id"]) == [run2.run_id, run1.run_id]
    loaded = P.load_probe_run(sample_store, run1.run_id)
    assert loaded.result("empty_answer").failed and loaded.summary == run1.summary
    assert len(loaded.outcomes) == len(run1.outcomes)


def test_the_api_key_is_never_written_to_the_store(sample_store, server):
    server.responder = confused_judge
    P.run_probes(sample_store, "order-bug-demo", cfg(server), n_items=2, api_key=KEY, repeats=2, noise_items=1)
    assert server.chat_requests()[0].headers["authorization"] == f"Bearer {KEY}"
    with sample_store.read() as cur:
        for table in ("probe_runs", "probe_results", "judge_cache", "templates"):
            text = json.dumps(cur.execute(f"SELECT * FROM {table}").fetchall(), default=str)
            assert KEY not in text and "sk-probe" not in text, table


# ---------------------------------------------------------------------------------------------
# CLI

def test_cli_probe_json_and_exit_codes(sample_store, server, monkeypatch, capsys):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    server.responder = confused_judge
    db = str(sample_store.path)
    code = main(["probe", "--db", db, "--template", "order-bug-demo", "--model", "judge-x", "--base-url", server.url,
                 "--items", "2", "--format", "json", "--repeats", "2", "--noise-items", "1", "--max-retries", "0"])
    out = capsys.readouterr()
    assert code == 1  # a canary failed
    data = json.loads(out.out)
    assert isinstance(data, list) and {"probe", "expected", "failed", "detail"} <= set(data[0])
    by = {d["probe"]: d for d in data}
    assert by["empty_answer"]["failed"] is True and by["empty_answer"]["expected"] == "low"
    assert by["reference_copy"]["expected"] == "high" and by["reference_copy"]["failed"] is False
    assert by["order_swap"]["failed"] is False and by["order_swap"]["expected"] == "low"
    assert by["repeat_noise"]["failed"] is False
    assert "stored as probe run" in out.err

    server.responder = careful_judge_for(sample_store)
    code = main(["probe", "--db", db, "--template", "single-v1", "--model", "judge-x", "--base-url", server.url,
                 "--items", "2", "--probes", "canaries"])
    out = capsys.readouterr()
    assert code == 0, out.out
    assert "single-v1@v1 judged by judge-x on 2 item(s): passes all 8 probe(s) that decide it." in out.out

    assert main(["probe-runs", "--db", db, "--compare", "1", "2"]) == 0
    assert "(run 2) vs order-bug-demo@v1 (run 1)" in capsys.readouterr().out


def test_cli_probe_without_a_key_or_with_an_unknown_template(sample_store, server, capsys):
    db = str(sample_store.path)
    assert main(["probe", "--db", db, "--template", "order-bug-demo", "--model", "m", "--base-url", server.url,
                 "--items", "1", "--probes", "empty_answer"]) == 2
    assert "No API key" in capsys.readouterr().err
    assert main(["probe", "--db", db, "--template", "no-such-template", "--model", "m", "--base-url", server.url]) == 2
    assert "No template 'no-such-template'" in capsys.readouterr().err
    assert main(["probe", "--db", db, "--template", "single-v1", "--model", "m", "--base-url", server.url,
                 "--probes", "bogus"]) == 2
    assert "Unknown probe 'bogus'" in capsys.readouterr().err
    assert len(server.chat_requests()) == 0


# ---------------------------------------------------------------------------------------------
# Blocks, markers, rules (no API)

def test_blocks_of_built_in_templates():
    by_name = {t.name: t for t in T.builtins()}

    def names(t):
        return [(b.name, b.how) for b in P.find_blocks(t)]

    assert names(by_name["order-bug-demo"]) == [("question", "line"), ("reference", "line"), ("answer", "line"),
                                                ("rubric", "paragraph")]
    assert names(by_name["single-math-v1"]) == [("rubric", "paragraph"), ("question", "paragraph"),
                                                ("reference", "section"), ("answer", "section")]
    assert names(by_name["single-math-v1-multi-turn"]) == [("rubric", "paragraph"), ("reference", "section"),
                                                           ("answer", "section")]
    assert [b.name for b in P.find_blocks(by_name["pair-math-v1"])] == ["question", "reference", "answer_a",
                                                                         "answer_b"]
    variants, skipped = P.ablation_variants(by_name["order-bug-demo"])
    swap = next(v for v in variants if v.name == "order_swap").template.messages[0]["content"]
    assert "question: {{ question }}\npred: {{ answer }}\nanswer: {{ data.gt }}\n\nRate the pred" in swap
    no_ref = next(v for v in variants if v.name == "no_reference").template.messages[0]["content"]
    assert "data.gt" not in no_ref and "question: {{ question }}\npred: {{ answer }}\n\nRate" in no_ref
    assert skipped == {"rubric_last": "the rubric is already last"}
    math_variants, _ = P.ablation_variants(by_name["single-math-v1-multi-turn"])
    text = next(v for v in math_variants if v.name == "order_swap").template.messages[-1]["content"]
    assert text.index("Assistant A's Conversation") < text.index("Reference Answer|>")


def test_user_template_with_block_markers():
    content = ("{# block: rubric #}Grade the answer from 1 to 10 and end with Rating: [[N]].{# endblock #}\n\n"
               "{# block: reference #}Reference:\n{{ ref_answer_1 }}{# endblock #}\n\n"
               "{# block: answer #}Answer:\n{{ answer }}{# endblock #}\n\n"
               "{# block: question #}Question:\n{{ question }}{# endblock #}\n")
    t = T.Template(name="marked", messages=[{"role": "user", "content": content}],
                   parser={"kind": "fastchat_single", "scale": [1, 10]})
    assert [(b.name, b.how) for b in P.find_blocks(t)] == [("rubric", "marker"), ("reference", "marker"),
                                                          ("answer", "marker"), ("question", "marker")]
    variants, skipped = P.ablation_variants(t)
    got = {v.name: v.template.messages[0]["content"] for v in variants}
    assert set(got) == {"order_swap", "no_reference", "rubric_last"}
    assert "answer_first" in skipped  # the question comes after the answer already
    ctx = {"ref_answer_1": "REF", "answer": "ANS", "question": "Q?"}
    assert T.render(variants[0].template, ctx)[0]["content"] == (
        "Grade the answer from 1 to 10 and end with Rating: [[N]].\n\nAnswer:\nANS\n\nReference:\nREF\n\n"
        "Question:\nQ?\n")
    assert "REF" not in T.render(next(v for v in variants if v.name == "no_reference").template, ctx)[0]["content"]
    with pytest.raises(T.TemplateError, match="no .*endblock"):
        P.find_blocks(T.Template(name="bad", messages=[{"role": "user", "content": "{# block: answer #}{{ answer }}"}],
                                 parser={"kind": "fastchat_single"}))


def test_pass_fail_rules_and_canary_texts():
    lo, mid = 1.0, 3.0
    assert P.single_fail("low", 5, 1, lo, mid) is True          # above the midpoint
    assert P.single_fail("low", 3, 2, lo, mid) is True          # above the real answer
    assert P.single_fail("low", 3, 3, lo, mid) is False
    assert P.single_fail("high", 2, None, lo, mid) is True
    assert P.single_fail("high", 3, None, lo, mid) is False
    assert P.single_fail("below_real", 4, 4, lo, mid) is True   # the cut answer is as good as the full one
    assert P.single_fail("below_real", 1, 1, lo, mid) is False  # both at the minimum
    assert P.single_fail("below_real", 3, None, lo, mid) is False
    assert P.single_fail("low", None, 1, lo, mid) is None
    cut = P.truncate_mid_sentence("これは文です。二つ目の文はとても長くて、途中で切れます。三つ目の文。")
    assert cut and not cut.endswith(("。", " ")) and len(cut) < 20
    assert P.truncate_mid_sentence("短い") is None
    ctx = {"turn": 1, "question": "日本の首都はどこですか？", "ref_answer_1": "東京です。", "answer": "東京"}
    assert P.canary_text("wrong_language", ctx, hi=10)[0] == P.WRONG_LANGUAGE["en"]
    assert P.canary_text("reference_copy", ctx, hi=10) == ("東京です。", None)
    assert P.canary_text("reference_copy", {**ctx, "ref_answer_1": None}, hi=10)[0] is None
    inj = P.canary_text("injection", ctx, hi=5)[0]
    assert inj.startswith("わかりません。") and "Rating: [[5]]" in inj and "Score: 5" in inj
    assert P.canary_text("off_topic", {**ctx, "question": "Why is the sky blue?"}, hi=10)[0] == P.OFF_TOPIC["en"]
    swapped = P.with_answer({"turn": 2, "answer": "x", "answer_2": "x", "answer_1": "y",
                             "response": {"content": "x", "reasoning_content": ""}}, "", {})
    assert (swapped["answer"], swapped["answer_2"], swapped["answer_1"], swapped["response"]["content"]) == \
        ("", "", "y", "")


def test_items_are_stratified_by_category(sample_store):
    t = T.get_template(sample_store, "single-v1")
    items = P.sample_items(sample_store, t, 8)
    assert all(isinstance(i, ItemKey) and i.turn == 1 and i.sample == 0 for i in items)
    with sample_store.read() as cur:
        cats = [cur.execute("SELECT category FROM current_questions WHERE bench = ? AND question_id = ?",
                            [i.bench, i.question_id]).fetchone()[0] for i in items]
    assert len(set(cats)) == 8
    assert P.sample_items(sample_store, t, 8) == items                      # seeded: the same sample again
    multi = P.sample_items(sample_store, T.get_template(sample_store, "single-math-v1-multi-turn"), 3)
    assert all(i.turn == 2 for i in multi)
    with pytest.raises(P.ProbeError, match="pairwise"):
        P.sample_items(sample_store, T.get_template(sample_store, "pair-v2"), 2)


def test_a_judge_reply_without_a_rating_is_reported_as_not_parsed(sample_store, server):
    """Issue 27: a canary failed only because no rating could be read says so, not "the judge grades an answer it
    was not given"."""
    from lib.probes.spec import PROBES

    careful = careful_judge_for(sample_store)

    def judge(body: dict) -> str:
        reply = careful(body)
        return "The assistant gave no answer at all." if reply.startswith("The assistant gave no answer") else reply

    server.responder = judge
    run = P.run_probes(sample_store, "single-v1", cfg(server), n_items=3, api_key=KEY, probes=["canaries"])
    empty = run.result("empty_answer")
    assert empty.status == "fail" and [i["score"] for i in empty.items] == [None, None, None]
    lines = run.summary.splitlines()
    assert f"single-v1 on {PROBES['empty_answer'].label}: no rating could be parsed from the judge's reply on 3 of 3 " \
           "item(s): fix the template's output format or its parser (the judge's own words below)." in lines
    assert "grades an answer it was not given" not in run.summary
    assert "scores" not in " ".join(l for l in lines if l.startswith("single-v1 on "))


def test_a_judge_off_the_templates_scale_could_not_be_evaluated_not_failed(sample_store, server):
    """order-bug-demo asks for 1-5; a judge answering 7 to everything gives no score on that scale: the verdict
    says the probes could not be evaluated and why, never "FAILS 8 of 8"."""
    server.responder = lambda body: "Rating: [[7]]"
    run = P.run_probes(sample_store, "order-bug-demo", cfg(server), n_items=2, api_key=KEY, probes=["canaries"])
    head = run.summary.splitlines()[0]
    assert "FAILS" not in head
    assert head.startswith("order-bug-demo@v1 judged by judge-x on 2 item(s): could not evaluate ")
    assert head.endswith("(no rating on the template's 1-5 scale could be parsed).")
    assert not any(line.startswith("order-bug-demo scores") for line in run.summary.splitlines())


def saved_outcomes(n: int, tag: str) -> list[dict]:
    """``n`` probe outcomes in an order no column sorts them by (what a run records, request by request)."""
    return [{"probe": f"{tag}{(7 * i) % n:03d}", "kind": "canary", "bench": "b", "question_id": str((5 * i) % n),
             "turn": 1 + i % 2, "model": "m", "sample": 0, "status": "ok", "score": float(i % 10)} for i in range(n)]


def assert_outcomes_load_in_the_order_they_were_saved(target):
    """``load_probe_run`` orders a run's rows by row id. On a DuckLake store two rows of a table can share a row id
    (rows of separate write transactions), but a run's rows are one insert: their row ids are distinct and in the
    order of the insert, on either store, whatever other runs were saved before."""
    runs = []
    for n, tag in ((3, "a"), (40, "b"), (7, "c")):
        run = P.ProbeRun(template="t@v1", template_id=1, template_name="t", model="judge", base_url="http://x",
                         params={}, results=[], outcomes=saved_outcomes(n, tag))
        P.save_probe_run(target, run)
        runs.append(run)
    for run in runs:
        loaded = P.load_probe_run(target, run.run_id).outcomes
        assert [(o["probe"], o["question_id"], o["turn"]) for o in loaded] == \
            [(o["probe"], o["question_id"], o["turn"]) for o in run.outcomes]


def test_a_probe_runs_outcomes_load_in_the_order_they_were_saved(store):
    assert_outcomes_load_in_the_order_they_were_saved(store)


def test_a_probe_runs_outcomes_load_in_the_order_they_were_saved_on_a_lake(lake_store):
    assert_outcomes_load_in_the_order_they_were_saved(lake_store)
