"""lib.generation: setups, request plans, the runner and stored regenerated runs, through the real openai client
against the scripted model server (tests/fake_model.py)."""
from __future__ import annotations

import threading

import pytest

from lib.analysis.runs import Run
from lib.errors import LabelInUseError, UnknownSystemPromptError
from lib.generation import plan as gp
from lib.generation.runner import cached_texts, run_plan
from lib.generation.setups import (FACTORS, SWALLOW_SYSTEM_PROMPT, GenerationSetup, differing_factors, diff,
                                   setup_from_dict, setup_to_dict)
from lib.generation.storage import generate_run, regen_label, stored_setup
from fake_model import FakeModel, answer_for, h
from fake_openai import Reply

Q = [gp.Question("b", "1", "writing", ("Write a poem.", "Make it shorter.")),
     gp.Question("b", "2", "math", ("What is 2+2?", "And 3+3?")),
     gp.Question("b", "3", "stem", ("Why is the sky blue?", "Explain to a child."))]
FASTCHAT = GenerationSetup.fastchat(system_prompt="You are a helpful assistant.")
SWALLOW = GenerationSetup.swallow()


@pytest.fixture
def model():
    with FakeModel() as server:
        yield server


def cached(store, server) -> dict:
    """What the request cache holds of the requests ``server`` received."""
    return cached_texts(store, [gp.request_key(server.url, b) for b in server.answer_requests()])


# -- setups -------------------------------------------------------------------------------------------------

def test_harness_facts():
    assert SWALLOW.system_prompt == "あなたは誠実で優秀な日本人のアシスタントです。"
    assert (SWALLOW.samples, SWALLOW.copy_at_zero, SWALLOW.turn2_context, SWALLOW.max_tokens) == (5, True, "sample0",
                                                                                                 None)
    assert (FASTCHAT.samples, FASTCHAT.copy_at_zero, FASTCHAT.turn2_context, FASTCHAT.max_tokens) == (1, False, "own",
                                                                                                     8000)
    for s in (FASTCHAT, SWALLOW):
        assert [s.temperature_for(c) for c in ("writing", "roleplay", "stem", "humanities", "math", "coding")] == \
            [0.7, 0.7, 0.1, 0.1, 0.0, 0.0]
    assert FASTCHAT.temperature_for("unknown") == 0.7 and SWALLOW.temperature_for("unknown") == 0.0
    assert FASTCHAT.temperature_for("math", required_temperature=0.3) == 0.3      # FastChat honours it
    assert SWALLOW.temperature_for("math", required_temperature=0.3) == 0.0       # the category map wins
    forced = GenerationSetup.fastchat(system_prompt=None, temperature_override=1.0)
    assert forced.temperature_for("math", required_temperature=0.3) == 1.0


def test_switch_and_diff():
    assert differing_factors(FASTCHAT, SWALLOW) == ["system_prompt", "temperature", "samples", "turn2_context",
                                                    "max_tokens"]
    # the two temperature maps agree; only the default of an unknown category and required_temperature differ
    s = FASTCHAT
    for f in FACTORS:
        s = s.switch(SWALLOW, f)
    assert differing_factors(s, SWALLOW) == []
    one = FASTCHAT.switch(SWALLOW, "system_prompt")
    assert one.system_prompt == SWALLOW_SYSTEM_PROMPT and one.samples == 1
    assert one.name == "fastchat+system_prompt:swallow"
    rows = diff(FASTCHAT, SWALLOW)
    assert [r["field"] for r in rows] == ["system_prompt", "temperature", "samples", "turn2_context", "max_tokens",
                                          "seed"]
    assert [r["differs"] for r in rows] == [True, True, True, True, True, False]
    assert setup_from_dict(setup_to_dict(SWALLOW)) == SWALLOW
    assert [r["source"] for r in one.describe()][:3] == ["harness rule (swallow)", "harness rule", "harness rule"]
    edited = SWALLOW.restate(samples=3)
    assert edited.samples == 3 and edited.describe()[2]["source"] == "stated"


def test_fastchat_system_prompt_is_never_guessed():
    with pytest.raises(UnknownSystemPromptError) as e:
        GenerationSetup.for_harness("fastchat")
    assert str(e.value).startswith("The system prompt of this FastChat setup is unknown: FastChat answer files do "
                                   "not record it")
    assert GenerationSetup.for_harness("fastchat", system_prompt=None).system_prompt is None


def test_from_run_reads_the_files(sample_store):
    sw = Run("swallow", "japanese_mt_bench", "gpt-4o", "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b")
    setup = GenerationSetup.from_run(sample_store, sw)
    assert setup.system_prompt == SWALLOW_SYSTEM_PROMPT and setup.samples == 5 and setup.max_chars == 8192
    assert dict(setup.provenance)["system_prompt"] == "files"
    assert setup.temperature_for("writing") == 0.7 and setup.temperature_for("math") == 0.0
    fc = Run("fastchat", "ja_mt_bench", "gpt-4o", "shisa-ai/shisa-v2-llama3.1-8b")
    with pytest.raises(UnknownSystemPromptError) as e:
        GenerationSetup.from_run(sample_store, fc)
    assert "The system prompt of the run fastchat · ja_mt_bench · gpt-4o · shisa-ai/shisa-v2-llama3.1-8b is " \
           "unknown" in str(e.value)
    stated = GenerationSetup.from_run(sample_store, fc, system_prompt="You are a helpful assistant.")
    assert stated.samples == 1 and dict(stated.provenance)["system_prompt"] == "stated"


# -- plans --------------------------------------------------------------------------------------------------

def test_plan_swallow_copies_and_conditioning():
    plan = gp.plan_generation(Q, SWALLOW, model="m", base_url="http://x/v1/")
    assert len(plan.slots) == 3 * 2 * 5
    math = [s for s in plan.slots if s.question.question_id == "2"]
    assert [s.copy_of for s in math if s.turn == 1] == [None, 0, 0, 0, 0]
    assert plan.requests == 3 * 2 * 5 - 2 * 4            # math: 1 call per turn, copied 4 times
    assert {s.condition_on for s in plan.slots if s.turn == 2} == {0}
    assert [s.seed for s in plan.slots if s.question.question_id == "1" and s.turn == 1] == [0, 1, 2, 3, 4]
    slot = next(s for s in plan.slots if s.question.question_id == "1" and s.turn == 2 and s.sample == 3)
    assert gp.messages_for(SWALLOW, slot, "T1") == [
        {"role": "system", "content": SWALLOW_SYSTEM_PROMPT}, {"role": "user", "content": "Write a poem."},
        {"role": "assistant", "content": "T1"}, {"role": "user", "content": "Make it shorter."}]
    assert gp.request_body(plan, slot, "T1") == {"model": "m", "messages": gp.messages_for(SWALLOW, slot, "T1"),
                                                 "n": 1, "temperature": 0.7, "seed": 3}
    assert plan.base_url == "http://x/v1"


def test_plan_fastchat_own_turn1():
    setup = GenerationSetup.fastchat(system_prompt=None, samples=3)
    plan = gp.plan_generation(Q[:1], setup, model="m", base_url="http://x/v1")
    assert [(s.turn, s.sample, s.condition_on) for s in plan.slots if s.turn == 2] == [(2, 0, 0), (2, 1, 1), (2, 2, 2)]
    assert gp.messages_for(setup, plan.slots[0])[0] == {"role": "user", "content": "Write a poem."}
    assert gp.request_body(plan, plan.slots[0])["max_tokens"] == 8000


# -- running through the real openai client ---------------------------------------------------------------

def test_planted_effects_and_cost_equals_requests(store, model):
    plan = gp.plan_generation(Q, SWALLOW, model="m", base_url=model.url)
    est = gp.estimate(plan, price_per_1k_input=1.0, price_per_1k_output=2.0)
    result = run_plan(plan, store, concurrency=3)
    assert result.complete
    assert est.requests == est.to_send == len(model.chat_requests()) == result.sent == 22
    assert est.copies == 8 and est.cost is not None
    # (1) Japanese system prompt -> Japanese answers
    assert all(a.text.startswith("回答") for a in result.answers.values())
    # (2) temperature > 0: samples differ by seed; temperature 0: copies of one answer
    w1 = result.texts("b", "1", 1)
    assert len(set(w1)) == 5 and all(f"〔変化{h('seed', i)}〕" in t for i, t in enumerate(w1))
    assert len(set(result.texts("b", "2", 1))) == 1
    # (3) every turn 2 follows sample 0's turn 1
    t1_0 = result.texts("b", "1", 1)[0]
    assert all(f"前の答え{h('t1', t1_0)}を受けて" in t for t in result.texts("b", "1", 2))
    # the server saw exactly the planned bodies
    bodies = model.answer_requests()
    assert all(b["messages"][0] == {"role": "system", "content": SWALLOW_SYSTEM_PROMPT} for b in bodies)
    assert sorted(b["temperature"] for b in bodies if len(b["messages"]) == 2) == [0.0] + [0.1] * 5 + [0.7] * 5


def test_fastchat_setup_english_own_conditioning_and_max_tokens(store, model):
    setup = GenerationSetup.fastchat(system_prompt="You are a helpful assistant.", samples=2, max_tokens=40)
    plan = gp.plan_generation(Q[:1], setup, model="m", base_url=model.url)
    result = run_plan(plan, store)
    t1, t2 = result.texts("b", "1", 1), result.texts("b", "1", 2)
    assert all(t.startswith("Answer ") and len(t) == 40 for t in t1 + t2)
    for s in range(2):   # each sample's turn 2 names its own turn 1
        body = next(b for b in model.answer_requests() if len(b["messages"]) == 4 and b["seed"] == s)
        assert body["messages"][2]["content"] == t1[s]
        assert t2[s] == answer_for(body)


def test_swallow_character_cap_applies_before_turn2(store, model):
    setup = GenerationSetup.swallow(max_chars=50)
    plan = gp.plan_generation(Q[:1], setup, model="m", base_url=model.url)
    result = run_plan(plan, store)
    t1 = result.texts("b", "1", 1)
    assert all(len(t) == 50 for t in t1 + result.texts("b", "1", 2))
    # the fork cuts each text to its first max_gen_text_length characters, then turn 2 follows sample 0's cut text
    assert {b["messages"][2]["content"] for b in model.answer_requests() if len(b["messages"]) == 4} == {t1[0]}


def test_same_seed_same_text_again(store, tmp_path, model):
    from lib.store import Store

    plan = gp.plan_generation(Q[:1], SWALLOW, model="m", base_url=model.url, turns=1)
    a = run_plan(plan, store)
    with Store(tmp_path / "other.duckdb") as other:   # another store: no cache, the server answers again
        b = run_plan(plan, other)
    assert a.sent == b.sent == 5 and a.texts("b", "1", 1) == b.texts("b", "1", 1)
    assert run_plan(plan, store).cached == 5 and len(model.chat_requests()) == 10   # the cache answers


def test_cancel_then_resume_sends_nothing_twice(store, model):
    plan = gp.plan_generation(Q, SWALLOW, model="m", base_url=model.url)
    cancel = threading.Event()

    def progress(done, total):
        if done == 5:
            cancel.set()

    first = run_plan(plan, store, progress=progress, cancel=cancel, concurrency=1)
    n = len(model.chat_requests())   # 5, or 6 when the worker had taken the next request before the cancel
    assert first.cancelled and first.sent == n and n in (5, 6)   # the one in flight is kept, not lost
    est = gp.estimate(plan, answered=lambda keys: cached_texts(store, keys))
    assert (est.cached, est.to_send) == (n, 22 - n)
    second = run_plan(plan, store)
    assert second.complete and second.cached == n and second.sent == 22 - n
    keys = [gp.request_key(model.url, b) for b in model.answer_requests()]
    assert len(keys) == len(set(keys)) == 22


def test_failed_turn1_leaves_its_dependants_out(store, model):
    plan = gp.plan_generation(Q[1:2], SWALLOW, model="m", base_url=model.url)
    model.queue(Reply.error(400, "boom"))
    result = run_plan(plan, store)
    assert result.sent == 0 and not result.answers
    assert result.failed[0][0] == ("b", "2", 1, 0) and "Server says: boom" in result.failed[0][1]
    assert {m for _, m in result.failed[1:]} == {"not made: sample 0 it copies is missing",
                                                 "not sent: the turn-1 answer it follows is missing"}


# -- stored regenerated runs --------------------------------------------------------------------------------

def test_generate_run_is_stored_and_resumes(sample_store, model):
    sw = Run("swallow", "japanese_mt_bench", "gpt-4o", "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b")
    from lib.generation.questions import questions_for_run

    qs = questions_for_run(sample_store, sw, linked_to="ja_mt_bench", limit=4)
    assert [q.question_id for q in qs] == ["1", "2", "3", "4"]
    setup = GenerationSetup.from_run(sample_store, sw)
    plan = gp.plan_generation(qs, setup, model=sw.model, base_url=model.url)   # served under its own name
    cancel = threading.Event()
    seen = []

    def progress(done, total):
        seen.append((done, total))
        if done == 3:
            cancel.set()

    sid, first = generate_run(sample_store, plan, answer_model=sw.model, progress=progress,
                              cancel=cancel, concurrency=1)
    n = len(model.chat_requests())      # 3, or 4 when the next one was already in flight: kept too
    assert first.cancelled and n in (3, 4) and first.sent == n
    assert len(cached(sample_store, model)) == n
    sid2, second = generate_run(sample_store, plan, answer_model=sw.model)
    assert sid2 == sid and second.complete and second.cached == n
    assert len(model.chat_requests()) == plan.requests == gp.estimate(plan).requests
    label = regen_label(sw.model, setup)
    assert label == "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b [regen: swallow]"
    with sample_store.read() as cur:
        src = cur.execute("SELECT harness, kind, path, rows_imported FROM sources WHERE source_id = ?",
                          [sid]).fetchone()
        n, prompts = cur.execute("SELECT count(*), list(DISTINCT system_prompt) FROM answers WHERE model = ?",
                                 [label]).fetchone()
        copies = cur.execute("SELECT count(*) FROM generations WHERE source_id = ? AND copy_of = 0",
                             [sid]).fetchone()[0]
    assert src == ("judgelens", "generate", f"generate:{label}", 4 * 2 * 5) and n == 40
    assert prompts == [SWALLOW_SYSTEM_PROMPT]
    assert copies == 4 * 2 * 4                    # q1-4 are coding (temperature 0): samples 1-4 copy sample 0
    assert stored_setup(sample_store, label) == setup
    # visible as answers of their own, never standing in for the stored ones
    from lib.analysis import item_view
    from lib.analysis.search import SearchQuery, search

    stored = item_view.answer(sample_store, item_view.ItemKey("japanese_mt_bench", "1", 1, sw.model, 0))
    regen = item_view.answer(sample_store, item_view.ItemKey("japanese_mt_bench", "1", 1, label, 0))
    assert not stored["text"].startswith("回答") and regen["text"].startswith("回答")
    assert regen["system_prompt"] == SWALLOW_SYSTEM_PROMPT and regen["temperature"] == 0.0
    hits = search(sample_store, SearchQuery(text=regen["text"][:14], fields=("answer",)))
    assert set(hits["model"]) == {label}
    other = gp.plan_generation(qs, setup.switch(GenerationSetup.fastchat(system_prompt=None), "system_prompt"),
                               model=sw.model, base_url=model.url)
    with pytest.raises(LabelInUseError):
        generate_run(sample_store, other, answer_model=sw.model, label=label)
    # removing the source removes all of it
    from lib.ingest.importer import remove_source

    assert remove_source(sample_store, sid)
    with sample_store.read() as cur:
        left = [cur.execute(f"SELECT count(*) FROM {t} WHERE source_id = ?", [sid]).fetchone()[0]
                for t in ("answers", "generations", "generation_runs")]
    # the request cache keeps what was paid for (as for re-judges): making the run again sends nothing
    assert left == [0, 0, 0] and len(cached(sample_store, model)) == plan.requests


def test_generate_run_on_a_ducklake_store(tmp_path, request, model):
    from conftest import lake_target
    from lib.store import Store

    target, data = lake_target("sqlite", tmp_path, request)
    with Store(target, data_path=data) as lake:
        plan = gp.plan_generation(Q, SWALLOW, model="m", base_url=model.url)
        sid, result = generate_run(lake, plan, answer_model="M")
        again_sid, again = generate_run(lake, plan, answer_model="M")
        with lake.read() as cur:
            n = cur.execute("SELECT count(*) FROM answers WHERE model = 'M [regen: swallow]'").fetchone()[0]
            # the regenerated answers' features (lib.text_features), written with them, once each
            feats = cur.execute("""SELECT a.text, f.length, f.japanese_share FROM answers a JOIN answer_features f
                                   USING (source_id, bench, model, question_id, turn, sample)
                                   WHERE a.model = 'M [regen: swallow]'""").fetchall()
            n_feats = cur.execute("SELECT count(*) FROM answer_features WHERE source_id = ?", [sid]).fetchone()[0]
    from lib.text_features import features

    assert n_feats == len(feats) == n
    assert all(length == features(text)["length"] and share == pytest.approx(features(text)["japanese_share"])
               for text, length, share in feats)
    assert result.complete and again_sid == sid and again.cached == plan.requests and again.sent == 0
    assert n == len(plan.slots) == 30 and len(model.chat_requests()) == plan.requests == 22
