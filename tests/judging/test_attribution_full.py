"""The full harness-to-harness waterfall against two local servers: the scripted model under test
(tests/fake_model.py) and a scripted judge, both real HTTP through the openai client, every planted effect
recovered exactly in both orders, the planted interaction reported, the cost estimate equal to the requests the
servers counted, and a cancelled ladder resumed without sending anything twice.

One model "m" under two harnesses on two linked benches: "fc" (FastChat: 1 sample, judge "judge-a") and "sw"
(Swallow: 5 samples, its Japanese system prompt, temperatures and character cap recorded, judge gpt-4o).
Questions: two "writing" (temperature 0.7 in both harnesses) and two "other" (a category neither map names:
FastChat 0.7, Swallow 0.0).

The model server (fake_model): Japanese only when the system prompt asks for it; at temperature > 0 a variant
tag per seed and FLOURISH on odd seeds; a turn 2 that follows another sample's turn 1 says OTHER_SAMPLE; no
max_tokens sent -> cut at its default of 200 characters (END_MARK lost).

The scripted judge starts at 8 and:
- the Swallow judge prompt ("The expected language is Japanese"): -2
- the judge model gpt-4o-2024-08-06: -1
- judge max_tokens 4096: +1
- an English answer: -2, and -2 more under the Swallow prompt (the planted INTERACTION: system prompt x prompt)
- FLOURISH shown: +1;  OTHER_SAMPLE shown: -1;  END_MARK missing: -1
"""
from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import CLI_WITH_CTRL_C, store_linked_pair

from lib.attribution import ladder as L
from lib.errors import LadderInterrupted
from lib.generation.setups import SWALLOW_SYSTEM_PROMPT
from lib.judging.config import JudgeConfig
from fake_model import END_MARK, FakeModel
from fake_openai import FakeOpenAI
from scripted_judges import planted_judge
from waiting import wait_for

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-full-ladder"
FC_PROMPT = "You are a helpful assistant."
CATS = {"1": "writing", "2": "writing", "3": "other", "4": "other"}
A_STORED, B_STORED = 7.0, 4.0
SERVER_DEFAULT_TOKENS = 200


# -- the specification of the plants, independent of the ladder: a state's expected mean ---------------------

FC = {"lang": "en", "temps": {"writing": 0.7, "other": 0.7}, "samples": 1, "copy": False, "turn2": "own",
      "cut": False}
SW = {"lang": "ja", "temps": {"writing": 0.7, "other": 0.0}, "samples": 5, "copy": True, "turn2": "sample0",
      "cut": True}
GEN_FIELDS = {"system_prompt": ("lang",), "temperature": ("temps",), "samples": ("samples", "copy"),
              "turn2_context": ("turn2",), "max_tokens": ("cut",)}
FC_JUDGE = {"prompt_sw": False, "gpt": False, "jmt4096": False}
SW_JUDGE = {"prompt_sw": True, "gpt": True, "jmt4096": True}
JUDGE_FIELDS = {"prompt": "prompt_sw", "judge": "gpt", "judge_max_tokens": "jmt4096"}


def expected_mean(gen: dict, jd: dict) -> float:
    scores = []
    for cat in CATS.values():
        t = gen["temps"][cat]
        for turn in (1, 2):
            per = []
            for s in range(gen["samples"]):
                s_eff = 0 if (gen["copy"] and t == 0) else s
                v = 8 - 2 * jd["prompt_sw"] - jd["gpt"] + jd["jmt4096"]
                v -= 0 if gen["lang"] == "ja" else (4 if jd["prompt_sw"] else 2)
                v += 1 if (t > 0 and s_eff % 2 == 1) else 0
                v -= 1 if (turn == 2 and gen["turn2"] == "sample0" and t > 0 and s_eff != 0) else 0
                v -= 1 if gen["cut"] else 0
                per.append(v)
            scores.append(sum(per) / len(per))
    return sum(scores) / len(scores)


def expected_deltas(order, x_gen, x_judge, y_gen, y_judge, y_replay_model_is_gpt=False) -> dict:
    """factor -> expected delta when switching ``order`` cumulatively from X to Y."""
    gen, jd = dict(x_gen), dict(x_judge, gpt=False)     # today's judge endpoint: "judge-x" until the judge step
    out, prev = {}, expected_mean(gen, jd)
    out["regenerate_mean"] = prev
    for f in order:
        if f in GEN_FIELDS:
            for k in GEN_FIELDS[f]:
                gen[k] = y_gen[k]
        elif f in JUDGE_FIELDS:
            jd[JUDGE_FIELDS[f]] = y_judge[JUDGE_FIELDS[f]]
        cur = expected_mean(gen, jd)
        out[f] = cur - prev
        prev = cur
    out["final_mean"] = prev
    return out


# -- the store and the servers -------------------------------------------------------------------------------

@pytest.fixture
def pair_store(store):
    rows_q, rows_ans, rows_j, rows_ref = [], [], [], []
    for qid, cat in CATS.items():
        turns = [f"質問{qid}：短い詩を書いてください。", f"質問{qid}の続き：もっと短く。"]
        for bench in ("fc", "sw"):
            rows_q.append((bench, qid, cat, turns))
        for t in (1, 2):
            rows_ref.append(("fc", "judge-a", qid, t, f"REF-A {qid}/{t}"))
            rows_ref.append(("sw", "gpt-4o-2024-08-06", qid, t, f"REF-B {qid}/{t}"))
            rows_ans.append(("fastchat", "fc", "m", qid, 0, t, f"stored answer {qid}/{t} {END_MARK}", None, None, None))
            rows_j.append(("fastchat", "fc", "judge-a", "single-v1", "m", qid, t, 0, A_STORED, A_STORED, "ok"))
            temp = 0.7 if cat == "writing" else 0.0
            for s in range(5):
                rows_ans.append(("swallow", "sw", "hosted_vllm/m", qid, s, t, f"保存された回答{qid}/{t}/{s} {END_MARK}",
                                 temp, 8192, SWALLOW_SYSTEM_PROMPT))
                rows_j.append(("swallow", "sw", "gpt-4o-2024-08-06", "swallow-single-v1", "hosted_vllm/m", qid, t, s,
                               B_STORED, B_STORED, "ok"))
    return store_linked_pair(store, rows_q, rows_ref, rows_ans, rows_j)


@pytest.fixture
def servers():
    with FakeOpenAI() as judge_srv, FakeModel(default_max_tokens=SERVER_DEFAULT_TOKENS) as model_srv:
        judge_srv.responder = planted_judge
        yield judge_srv, model_srv


def cfg(srv) -> JudgeConfig:
    return JudgeConfig(base_url=srv.url, model="judge-x", timeout_s=10, max_retries=1, backoff_base_s=0.01,
                       backoff_cap_s=0.02)


A = {"harness": "fastchat", "model": "m"}
B = {"harness": "swallow", "model": "m"}


def attribution(pair_store, servers, **kw) -> L.Attribution:
    judge_srv, model_srv = servers
    return L.Attribution(pair_store, A, B, cfg(judge_srv), answer=L.AnswerEndpoint(model_srv.url, "m", api_key="x"),
                         a_system_prompt=FC_PROMPT, **kw)


def by_step(df) -> dict:
    return {r["step"]: r for r in df.to_dict(orient="records")}


# -- tests ---------------------------------------------------------------------------------------------------

def test_every_planted_effect_in_both_orders_and_the_interaction(pair_store, servers):
    judge_srv, model_srv = servers
    lad = attribution(pair_store, servers, both_orders=True)
    est = lad.prepare()
    assert len(judge_srv.chat_requests()) == len(model_srv.chat_requests()) == 0      # cost first
    res = lad.run(judge_api_key=KEY, concurrency=4)
    # the cost estimate equals the requests each server counted (identical ones sent once, the cache the rest):
    # generation exactly before any call; judging at most before any call (the answers are not made yet: a
    # <think> block or a long answer would make the reasoning and truncation steps' requests differ), exactly
    # once every answer is made, before any judge call
    assert est["gen_to_send"] == len(model_srv.chat_requests())
    assert lad.judge_exact["judge_to_send"] == len(judge_srv.chat_requests()) <= est["judge_to_send"]
    assert len({json.dumps(r.body, sort_keys=True) for r in model_srv.chat_requests()}) == est["gen_to_send"]
    fwd, rev = by_step(res.forward), by_step(res.reverse)
    assert list(res.forward["step"]) == ["a", "replay", "regenerate", *L.FACTORS, "residual", "b"]
    want_f = expected_deltas(L.FACTORS, FC, FC_JUDGE, SW, SW_JUDGE)
    want_r = expected_deltas(L.FACTORS, SW, SW_JUDGE, FC, FC_JUDGE)
    for f in L.FACTORS[:8]:      # every factor with a plant (reference, truncation, reasoning: none here, 0)
        assert fwd[f]["delta"] == pytest.approx(want_f[f]), f
        assert rev[f]["delta"] == pytest.approx(want_r[f]), f
    for f in ("reference", "truncation", "reasoning"):
        assert fwd[f]["delta"] == rev[f]["delta"] == 0
    # the hand-checked numbers of the A->B order
    assert [fwd[f]["delta"] for f in ("system_prompt", "temperature", "samples", "turn2_context", "max_tokens",
                                      "prompt", "judge", "judge_max_tokens")] == pytest.approx(
        [2, 0, 0.2, -0.2, -1, -2, -1, 1])
    assert fwd["replay"]["mean"] == 8 and fwd["replay"]["delta"] == 1
    assert fwd["regenerate"]["mean"] == pytest.approx(want_f["regenerate_mean"]) == 6
    assert fwd["residual"]["delta"] == pytest.approx(B_STORED - want_f["final_mean"])
    assert rev["residual"]["delta"] == pytest.approx(A_STORED - want_r["final_mean"])
    assert A_STORED + sum(fwd[k]["delta"] for k in ("replay", "regenerate", *L.FACTORS, "residual")) == \
        pytest.approx(B_STORED)
    # the planted interaction: the system prompt is worth +2 under FastChat's judge prompt, +4 under Swallow's
    inter = res.interactions.set_index("factor")
    assert inter.loc["system_prompt", "forward"] == pytest.approx(2)
    assert inter.loc["system_prompt", "reverse"] == pytest.approx(4)
    assert bool(inter.loc["system_prompt", "interacts"]) and bool(inter.loc["prompt", "interacts"])
    assert not inter.loc["judge_max_tokens", "interacts"] and not inter.loc["max_tokens", "interacts"]
    # what was sent: FastChat's and Swallow's generation requests as the harnesses make them
    bodies = [r.body for r in model_srv.chat_requests()]
    assert {b["messages"][0]["content"] for b in bodies} == {FC_PROMPT, SWALLOW_SYSTEM_PROMPT}
    assert {b.get("max_tokens") for b in bodies} == {8000, None}
    assert {(b["model"], b["max_tokens"]) for b in (r.body for r in judge_srv.chat_requests())} == {
        ("judge-x", 2048), ("judge-x", 4096), ("gpt-4o-2024-08-06", 2048), ("gpt-4o-2024-08-06", 4096),
        ("judge-a", 4096), ("judge-a", 2048)}
    # again: nothing to send, nothing sent, the same numbers
    again = attribution(pair_store, servers, both_orders=True)
    assert again.prepare()["to_send"] == 0
    res2 = again.run(judge_api_key=KEY)
    assert len(model_srv.chat_requests()) == est["gen_to_send"]
    assert len(judge_srv.chat_requests()) == lad.judge_exact["judge_to_send"]
    assert res2.forward["delta"].tolist()[1:] == pytest.approx(res.forward["delta"].tolist()[1:])
    # the regenerated runs are runs of their own, labelled with their setup
    with pair_store.read() as cur:
        labels = [r[0] for r in cur.execute("SELECT label FROM generation_runs ORDER BY label").fetchall()]
    assert any(lab.startswith("m [regen: fastchat #") for lab in labels)
    assert any(lab.startswith("hosted_vllm/m [regen: swallow #") for lab in labels)


def test_shapley_average_over_orders(pair_store, servers):
    judge_srv, model_srv = servers
    first = attribution(pair_store, servers, order=["system_prompt", "prompt", "max_tokens"])
    first.run(judge_api_key=KEY)
    sent = len(model_srv.chat_requests()), len(judge_srv.chat_requests())
    lad = attribution(pair_store, servers, order=["system_prompt", "prompt", "max_tokens"], shapley=6)
    assert len(lad.shapley_orders) == 6                      # all 3! orders
    est = lad.prepare()
    res = lad.run(judge_api_key=KEY)
    assert est["gen_to_send"] == len(model_srv.chat_requests()) - sent[0]
    assert lad.judge_exact["judge_to_send"] == len(judge_srv.chat_requests()) - sent[1]
    shap = res.shapley.set_index("factor")
    want = {f: [] for f in ("system_prompt", "prompt", "max_tokens")}
    for perm in itertools.permutations(want):
        d = expected_deltas(perm, FC, FC_JUDGE, SW, SW_JUDGE)
        for f in perm:
            want[f].append(d[f])
    for f, vals in want.items():                              # exact Shapley values: every order was run
        assert shap.loc[f, "mean"] == pytest.approx(sum(vals) / len(vals))
        assert (shap.loc[f, "lowest"], shap.loc[f, "highest"]) == pytest.approx((min(vals), max(vals)))
    assert shap.loc["system_prompt", "mean"] == pytest.approx(3) and shap.loc["prompt", "mean"] == pytest.approx(-3)
    inter = res.interactions.set_index("factor")
    assert bool(inter.loc["system_prompt", "interacts"]) and not inter.loc["max_tokens", "interacts"]


def test_cancel_then_resume_sends_nothing_twice(pair_store, servers):
    judge_srv, model_srv = servers
    order = ["system_prompt", "samples", "prompt"]
    lad = attribution(pair_store, servers, order=order)
    est = lad.prepare()

    def stop_when(phase: str, step: str, after: int):
        cancel = threading.Event()

        def progress(text, done, total):
            if phase in text and f"({step})" in text and done >= after:
                cancel.set()
        return progress, cancel

    progress, cancel = stop_when("generating", "samples", 3)      # 1. stopped while generating
    with pytest.raises(LadderInterrupted, match="run the same ladder again to resume"):
        lad.run(judge_api_key=KEY, progress=progress, cancel=cancel, concurrency=1)
    gen_first = len(model_srv.chat_requests())
    assert 0 < gen_first < est["gen_to_send"] and not judge_srv.chat_requests()
    again = attribution(pair_store, servers, order=order)
    assert again.prepare()["gen_to_send"] == est["gen_to_send"] - gen_first
    progress, cancel = stop_when("judging", "system_prompt", 2)   # 2. stopped while judging
    with pytest.raises(LadderInterrupted):
        again.run(judge_api_key=KEY, progress=progress, cancel=cancel, concurrency=1)
    judge_first = len(judge_srv.chat_requests())
    assert len(model_srv.chat_requests()) == est["gen_to_send"] and 0 < judge_first < again.judge_exact["judge_to_send"]
    last = attribution(pair_store, servers, order=order)         # 3. to the end
    assert last.prepare()["gen_to_send"] == 0
    res = last.run(judge_api_key=KEY)
    assert last.judge_exact["judge_to_send"] == again.judge_exact["judge_to_send"] - judge_first
    gen_bodies = [json.dumps(r.body, sort_keys=True) for r in model_srv.chat_requests()]
    judge_bodies = [json.dumps(r.body, sort_keys=True) for r in judge_srv.chat_requests()]
    assert len(gen_bodies) == len(set(gen_bodies)) == est["gen_to_send"]                     # none sent twice
    assert len(judge_bodies) == len(set(judge_bodies)) == again.judge_exact["judge_to_send"]
    want = expected_deltas(order, FC, FC_JUDGE, SW, SW_JUDGE)
    assert [by_step(res.forward)[f]["delta"] for f in order] == pytest.approx([want[f] for f in order])


def test_cli_subprocess_both_orders(pair_store, servers, tmp_path):
    judge_srv, model_srv = servers
    db = pair_store.path
    pair_store.close()
    env = {**os.environ, "OPENAI_API_KEY": KEY, "PYTHONPATH": str(ROOT)}
    base = [sys.executable, "-m", "lib.cli", "attribute", "--db", str(db), "--a", "harness=fastchat,model=m",
            "--b", "harness=swallow,model=m", "--model", "judge-x", "--base-url", judge_srv.url,
            "--answer-base-url", model_srv.url, "--answer-model", "m", "--format", "json",
            "--order", "system_prompt,max_tokens,prompt,judge_max_tokens"]
    refused = subprocess.run(base + ["--both-orders"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert refused.returncode == 2
    assert ("The system prompt of the run fastchat · fc · judge-a · m (side A) is unknown: FastChat answer files do "
            "not record it") in refused.stderr and "--a-system-prompt TEXT" in refused.stderr
    dry = subprocess.run(base + ["--both-orders", "--a-system-prompt", FC_PROMPT], capture_output=True, text=True,
                         cwd=ROOT, env=env, timeout=300)
    assert dry.returncode == 0 and "Nothing sent. Add --yes" in dry.stderr
    assert not model_srv.chat_requests() and not judge_srv.chat_requests()
    out = subprocess.run(base + ["--both-orders", "--a-system-prompt", FC_PROMPT, "--yes", "--report",
                                 str(tmp_path / "r.html")], capture_output=True, text=True, cwd=ROOT, env=env,
                         timeout=600)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)
    fwd = {r["step"]: r for r in rows if r["order"] == "A->B"}
    rev = {r["step"]: r for r in rows if r["order"] == "B->A"}
    assert list(fwd) == ["a", "replay", "regenerate", "system_prompt", "max_tokens", "prompt", "judge_max_tokens",
                         "residual", "b"]
    assert (fwd["system_prompt"]["delta"], rev["system_prompt"]["delta"]) == (2, -4)
    assert fwd["system_prompt"]["interacts"] is True and fwd["max_tokens"]["interacts"] is False
    assert "Interactions (a factor's effect changes between orders" in out.stderr
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "Generation setups" in html and "Does the order matter?" in html and "Cost, counted before any call" in html


def test_same_models_pair_every_cause_has_its_own_bar(sample_store, servers):
    """The bundled pair (data/sample: one model under the JA harness and under Swallow), both orders: a bar for
    every cause, the bars add up from A stored to B stored, the residual is B stored minus A fully switched."""
    judge_srv, model_srv = servers
    a = {"harness": "fastchat", "judge": "gpt-4o", "model": "shisa-ai/shisa-v2-llama3.1-8b"}
    b = {"harness": "swallow", "model": "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b"}
    lad = L.Attribution(sample_store, a, b, cfg(judge_srv), answer=L.AnswerEndpoint(model_srv.url, "shisa", api_key="x"),
                        a_system_prompt=FC_PROMPT, both_orders=True, items=8)
    est = lad.prepare()
    res = lad.run(judge_api_key=KEY, concurrency=4)
    assert est["gen_to_send"] == len(model_srv.chat_requests())
    assert lad.judge_exact["judge_to_send"] == len(judge_srv.chat_requests()) <= est["judge_to_send"]
    for table, first, last in ((res.forward, "fastchat", "swallow"), (res.reverse, "swallow", "fastchat")):
        s = by_step(table)
        assert list(table["step"]) == ["a", "replay", "regenerate", *L.FACTORS, "residual", "b"]
        assert all(r["n"] == 8 for r in s.values())
        assert s["a"]["mean"] + sum(s[k]["delta"] for k in ("replay", "regenerate", *L.FACTORS, "residual")) == \
            pytest.approx(s["b"]["mean"])
        assert s["residual"]["delta"] == pytest.approx(s["b"]["mean"] - s["reasoning"]["mean"])
        assert first in table.attrs["label_a"] and last in table.attrs["label_b"]
    # the seed causes the scripted servers plant: the system prompt (English -> Japanese), the generation length
    # (FastChat's 8000 vs the backend default that cuts), the judge prompt and the judge's max_tokens
    fwd = by_step(res.forward)
    assert (fwd["system_prompt"]["delta"], fwd["max_tokens"]["delta"], fwd["prompt"]["delta"],
            fwd["judge_max_tokens"]["delta"]) == (2, -1, -2, 1)
    assert bool(res.interactions.set_index("factor").loc["system_prompt", "interacts"])


def test_cli_ctrl_c_then_the_same_command_resumes(pair_store, servers):
    import signal

    judge_srv, model_srv = servers
    gate, arrivals, answer = threading.Event(), itertools.count(), model_srv.responder

    def responder(body):
        if next(arrivals) >= 3:
            gate.wait(600)         # the 4th request waits until the test has pressed Ctrl-C
        return answer(body)

    model_srv.responder = responder
    db = pair_store.path
    pair_store.close()
    env = {**os.environ, "OPENAI_API_KEY": KEY, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-c", CLI_WITH_CTRL_C, "attribute", "--db", str(db), "--a", "harness=fastchat,model=m",
           "--b", "harness=swallow,model=m", "--model", "judge-x", "--base-url", judge_srv.url,
           "--answer-base-url", model_srv.url, "--answer-model", "m", "--a-system-prompt", FC_PROMPT,
           "--order", "system_prompt,prompt", "--answer-concurrency", "1", "--format", "json", "--yes"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT, env=env)
    try:   # the 4th request has arrived and waits at the gate: the CLI is mid-ladder, its Ctrl-C handler in place
        wait_for(lambda: len(model_srv.chat_requests()) >= 4 or proc.poll() is not None, timeout=600,
                 what="the 4th generation request")
        assert proc.poll() is None, proc.communicate()[1]
        proc.send_signal(signal.SIGINT)
    finally:
        gate.set()
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 130, err
    assert "Cancelling: waiting for the requests in flight" in err and "run the same ladder again to resume" in err
    first = len(model_srv.chat_requests())
    assert first >= 4 and not judge_srv.chat_requests()
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    bodies = [json.dumps(r.body, sort_keys=True) for r in model_srv.chat_requests()]
    assert len(bodies) == len(set(bodies)) == 16                 # 8 FastChat + 8 FastChat-with-Swallow's-prompt
    assert f"{16 - first} generation request(s)" in done.stderr      # the resumed estimate: only what is left
    rows = {r["step"]: r for r in json.loads(done.stdout)}
    assert (rows["system_prompt"]["delta"], rows["prompt"]["delta"]) == (2, -2)


def test_interaction_flag_is_calibrated():
    """Two orders, the same true effect, independent per-item noise: the interaction flag (change between orders
    beyond the 95% interval of that change) fires about 5% of the time; a change of 1 sd most of the time.

    Each run's step table holds the delta and t interval ``J.paired`` gives (checked on the first runs), all runs of a
    setting computed in one ``compare_pairs`` (each run its own family): a call per table took half a minute."""
    import numpy as np
    import pandas as pd

    from lib.analysis.deltas import compare_pairs
    from lib.attribution import judge as J

    rng = np.random.default_rng(7)
    items = 16

    def tables(effects: list[np.ndarray]) -> list[pd.DataFrame]:
        runs = len(effects)
        frame = pd.DataFrame({"model": np.repeat(np.arange(runs), items),
                              "question": np.tile([f"q{i}" for i in range(items)], runs), "category": "c", "turn": 1,
                              "score_a": np.concatenate(effects), "score_b": 0.0})
        rows = compare_pairs(frame, levels=("all",), per_model=True).set_index("model")
        out = [pd.DataFrame([{"step": "system_prompt", **rows.loc[run, ["delta", "ci_low", "ci_high"]].to_dict()}])
               for run in range(runs)]
        for run in range(3):   # what the ladder's own paired() gives for that run's items
            one = pd.DataFrame({"question": [f"q{i}" for i in range(items)], "category": "c", "turn": 1,
                                "before": 0.0, "after": effects[run]})
            assert J.paired(one, "after", "before") == pytest.approx(out[run].iloc[0, 1:].to_dict(), rel=1e-12)
        return out

    def flagged(shift: float, runs: int) -> float:
        fwd, rev = [], []
        for _ in range(runs):
            fwd.append(rng.normal(0.5, 1.0, items))
            rev.append(-rng.normal(0.5 + shift, 1.0, items))       # the reverse order reads B->A: signs turned
        return sum(bool(L.interactions(f, r)["interacts"].iloc[0]) for f, r in zip(tables(fwd), tables(rev))) / runs

    assert 0.02 <= flagged(0.0, 300) <= 0.09
    assert flagged(1.0, 100) >= 0.6
