"""The attribution ladder against the local OpenAI-compatible server, scripted so every judge-side factor has a
known effect: the ladder must recover each one exactly, in both directions.

Two runs of one model on two linked benches: "fc" (FastChat-style, judge "judge-a", answers with a <think>
block and a tail past 8,192 characters) and "sw" (Swallow-style, judge gpt-4o-2024-08-06, answers cut at
8,192). The scripted judge starts at 8 and
- the Swallow language sentence in the prompt ("The expected language is Japanese"): -2
- the judge model gpt-4o-2024-08-06: -1
- B's reference ("REF-B", shown only for math/reasoning/coding prompts): +1
- the answer's tail ("END-OF-ANSWER") cut off: -1
- no "<think>" in the prompt: +1
"""
from __future__ import annotations

import json

import pytest

from conftest import store_linked_pair, judge_config
from lib.cli import main
from lib.attribution import ladder as L
from lib.render import charts

KEY = "sk-ladder-test"
CATS = ["math", "coding", "reasoning", "writing"]  # 3 of 4 categories show the reference
QUESTIONS = {str(i + 1): (CATS[i % 4], [f"質問{i + 1}：三角形の面積を求めてください。", f"質問{i + 1}の続き：円の面積は？"])
             for i in range(8)}
A_STORED, B_STORED = 7.0, 4.0


def scripted(body: dict) -> str:
    text = "\n".join(m["content"] for m in body["messages"])
    score = 8
    if "The expected language is Japanese" in text:
        score -= 2
    if body["model"] == "gpt-4o-2024-08-06":
        score -= 1
    if "REF-B" in text:
        score += 1
    if "END-OF-ANSWER" not in text:
        score -= 1
    if "<think>" not in text:
        score += 1
    return f"Scripted judgment. Rating: [[{score}]]"


@pytest.fixture
def ladder_store(store):
    rows_q, rows_ref, rows_ans, rows_j = [], [], [], []
    long_tail = "あ" * 8300 + "END-OF-ANSWER"
    for qid, (cat, turns) in QUESTIONS.items():
        for bench in ("fc", "sw"):
            rows_q.append((bench, qid, cat, turns))
        for t in (1, 2):
            rows_ref.append(("fc", "judge-a", qid, t, f"REF-A answer {qid}/{t}"))
            rows_ref.append(("sw", "gpt-4o-2024-08-06", qid, t, f"REF-B answer {qid}/{t}"))
            rows_ans.append(("fastchat", "fc", "m", qid, 0, t, f"<think>考え中 {qid}</think>答え{qid}-{t}" + long_tail,
                             None, None, None))
            rows_j.append(("fastchat", "fc", "judge-a", "single-v1", "m", qid, t, 0, A_STORED, A_STORED, "ok"))
            for s in range(5):
                rows_ans.append(("swallow", "sw", "hosted_vllm/m", qid, s, t, f"答え{qid}-{t}" + "あ" * 8000, 0.0, 8192,
                                 None))
                rows_j.append(("swallow", "sw", "gpt-4o-2024-08-06", "swallow-single-v1", "hosted_vllm/m", qid, t, s,
                               B_STORED, B_STORED, "ok"))
    return store_linked_pair(store, rows_q, rows_ref, rows_ans, rows_j)


@pytest.fixture
def judge_responder():
    """The shared ``server`` answers as ``scripted`` says."""
    return scripted


cfg = judge_config


A = {"harness": "fastchat", "model": "m"}
B = {"harness": "swallow", "model": "m"}


def by_step(df) -> dict:
    return {r["step"]: r for r in df.to_dict(orient="records")}


def test_the_ladder_recovers_every_planted_effect(ladder_store, server):
    ladder = L.Attribution(ladder_store, A, B, cfg(server))
    est = ladder.prepare()
    assert (est["steps"], est["items"], est["judge_to_send"], est["gen_to_send"]) == (7, 16, 108, 0)
    assert len(server.chat_requests()) == 0                     # nothing sent before run(): the estimate is free
    df = ladder.run(judge_api_key=KEY, concurrency=4).forward
    assert list(df["step"]) == ["a", "replay", "prompt", "judge", "judge_max_tokens", "reference", "truncation",
                                "reasoning", "residual", "b"]
    s = by_step(df)
    assert s["a"]["mean"] == A_STORED and s["b"]["mean"] == B_STORED
    assert s["replay"]["mean"] == 8 and s["replay"]["delta"] == 1          # drift of today's judge, on its own
    assert s["prompt"]["delta"] == -2
    assert s["judge"]["delta"] == -1
    assert s["judge_max_tokens"]["delta"] == 0                              # this judge ignores its max_tokens
    assert s["reference"]["delta"] == pytest.approx(0.75)                   # +1 on the 3 of 4 reference categories
    assert s["truncation"]["delta"] == -1
    assert s["reasoning"]["delta"] == 1
    assert s["residual"]["mean"] == B_STORED and s["residual"]["delta"] == pytest.approx(B_STORED - 5.75)
    assert s["b"]["delta"] == B_STORED - A_STORED
    # the bars add up: A + every delta up to the residual = B
    assert A_STORED + sum(s[k]["delta"] for k in ("replay", *L.JUDGE_FACTORS, "residual")) == pytest.approx(B_STORED)
    assert all(r["n"] == 16 for r in s.values())
    assert s["prompt"]["calls"] == 16 and s["prompt"]["cached"] == 0
    assert s["prompt"]["ci_low"] == s["prompt"]["ci_high"] == -2            # a constant effect: no spread
    # what was sent: B's judge from the judge step on, the Swallow prompt, B's reference, cut answers; the judge
    # max_tokens of the setup in force: A's 2048 (FastChat) until judge_max_tokens switches to B's 4096
    sent = [r.body for r in server.chat_requests()]
    assert {b["model"] for b in sent} == {"judge-x", "gpt-4o-2024-08-06"}
    # the estimate = what the server saw: 7 steps x 16 items, less the 4 writing items of the reference step
    # (no reference shown: the same requests as the step before, answered by the cache)
    assert len(sent) == est["judge_to_send"] == 108 and s["reference"]["cached"] == 4
    assert sorted({(b["model"], b["max_tokens"]) for b in sent}) == [
        ("gpt-4o-2024-08-06", 2048), ("gpt-4o-2024-08-06", 4096), ("judge-x", 2048)]
    # again: everything comes from the cache and the re-judged verdicts already stored
    again = L.Attribution(ladder_store, A, B, cfg(server))
    assert again.prepare()["to_send"] == 0
    df2 = again.run(judge_api_key=KEY).forward
    assert len(server.chat_requests()) == 108
    assert df2["delta"].round(9).tolist()[1:] == df["delta"].round(9).tolist()[1:]
    assert by_step(df2)["prompt"]["calls"] == 0 and by_step(df2)["prompt"]["cached"] == 16


def test_order_and_reverse_ladder(ladder_store, server):
    order = L.Attribution(ladder_store, A, B, cfg(server), order=["reasoning", "truncation", "prompt"]
                          ).run(judge_api_key=KEY).forward
    s = by_step(order)
    assert list(order["step"]) == ["a", "replay", "reasoning", "truncation", "prompt", "residual", "b"]
    assert (s["reasoning"]["delta"], s["truncation"]["delta"], s["prompt"]["delta"]) == (1, -1, -2)
    # B's answers judged A's way: the Swallow prompt's -2 comes back as +2, the judge name is A's (no -1)
    res = L.Attribution(ladder_store, A, B, cfg(server), both_orders=True, items=6).run(judge_api_key=KEY)
    df = res.reverse
    s = by_step(df)
    assert s["a"]["mean"] == B_STORED and s["b"]["mean"] == A_STORED
    # 6 items = both turns of one coding, one math and one reasoning question: all show the reference
    assert s["replay"]["mean"] == 8 - 2 + 1 - 1 + 1       # Swallow prompt, Swallow's reference, no tail, no <think>
    assert s["prompt"]["delta"] == 2 and s["judge"]["delta"] == 0
    assert s["reference"]["delta"] == -1
    assert s["truncation"]["delta"] == 0 and s["reasoning"]["delta"] == 0  # already cut; nothing to strip
    assert s["residual"]["delta"] == A_STORED - 8 and s["b"]["delta"] == A_STORED - B_STORED
    assert s["a"]["n"] == 6
    # B's five identical samples per item are judged once (identical requests are sent once)
    assert s["replay"]["calls"] == 6 and s["replay"]["cached"] == 24
    # the judge model interacts with the order: -1 A->B (judge-x -> gpt-4o), 0 B->A (judge-x -> judge-a)
    inter = res.interactions.set_index("factor")
    assert bool(inter.loc["judge", "interacts"]) and inter.loc["judge", "change"] == 1
    assert not inter.loc["prompt", "interacts"]


def test_waterfall_chart_and_cli(ladder_store, server, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)  # the CLI reads the key from the environment only
    args = ["attribute", "--db", str(ladder_store.path), "--a", "harness=fastchat,model=m", "--b",
            "harness=swallow,model=m", "--model", "judge-x", "--base-url", server.url, "--items", "4",
            "--order", "prompt,judge", "--format", "json"]
    assert main(args) == 0                                      # cost first: nothing sent without --yes
    assert "Nothing sent. Add --yes to send these 12 request(s)." in capsys.readouterr().err
    assert len(server.chat_requests()) == 0
    assert main(args + ["--yes"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [d["step"] for d in data] == ["a", "replay", "prompt", "judge", "residual", "b"]
    assert all(set(d) == {"order", "step", "mean", "delta", "ci_low", "ci_high", "n", "calls", "cached"} for d in data)
    assert data[2]["delta"] == -2 and data[3]["delta"] == -1 and data[0]["delta"] is None
    fig = charts.ladder_waterfall(L.Attribution(ladder_store, A, B, cfg(server), order=["prompt", "judge"], items=4)
                                  .run(judge_api_key=KEY).forward)
    bar = fig.data[0]
    assert list(bar.measure) == ["absolute", "relative", "relative", "relative", "relative", "total"]
    assert list(bar.y[1:5]) == [1, -2, -1, pytest.approx(4 - 5)]
    assert main(["attribute", "--db", str(ladder_store.path), "--a", "harness=fastchat,model=m", "--b",
                 "harness=swallow,model=m", "--model", "judge-x", "--base-url", server.url, "--order", "prompt,nope"]) == 2
    assert main(["attribute", "--db", str(ladder_store.path), "--a", "harness=fastchat,model=m", "--b",
                 "harness=swallow,model=m", "--model", "judge-x", "--base-url", server.url, "--order",
                 "system_prompt,prompt"]) == 2
    assert "give the endpoint serving the model under test (--answer-base-url and --answer-model)" in \
        capsys.readouterr().err
    report = ladder_store.path.parent / "gap.html"
    assert main(["attribute", "--db", str(ladder_store.path), "--a", "harness=fastchat,model=m", "--b",
                 "harness=swallow,model=m", "--model", "judge-x", "--base-url", server.url, "--items", "4",
                 "--order", "prompt,judge", "--both-orders", "--yes", "--report", str(report)]) == 0
    html = report.read_text(encoding="utf-8")
    assert "Waterfall B-&gt;A" in html and '<td class="t">replay (judge drift)</td>' in html
    assert "How the two runs were set up" in html and "What each bar means" in html
