"""Batches: new verdicts become an ordinary judge; progress, cancel and resume; failures recorded."""
import itertools
import json
import threading

import pytest
from fake_openai import FakeOpenAI, Reply
from waiting import join_threads_named, threads_named

from conftest import judge_config
from lib.analysis import agreement
from lib.analysis import queries
from lib.errors import LabelInUseError
from lib.judging.batch import RejudgeBatch, run_batch, run_hash
from lib.judging import templates as T
from lib.cli import main
from lib.ingest.importer import remove_source
from lib.judging.context import select_items, select_pair_items

KEY = "sk-batch-test-0123456789"


@pytest.fixture
def judge_responder():
    """The shared ``server`` answers with a score that depends on the message."""
    return lambda body: f"Judgment. Rating: [[{len(body['messages'][-1]['content']) % 10 + 1}]]"


cfg = judge_config


def rows(store, sql, params=()):
    with store.read() as cur:
        return cur.execute(sql, list(params)).fetchall()


def test_batch_becomes_a_new_judge_compared_like_any_other(sample_store, server):
    template = T.get_template(sample_store, "ja-single-v1")
    items = select_items(sample_store, bench="ja_mt_bench", turn=1, judged_by="gpt-4o")
    assert len(items) == 160
    # Each answer takes 50 ms, so requests overlap whenever the batch really sends them concurrently
    # (an instant server let one request finish before the next began on a loaded machine).
    server.latency = 0.05
    seen = []
    summary = run_batch(sample_store, template, cfg(server), items, "rejudge-4o", concurrency=6,
                          api_key=KEY, progress=lambda d, t, eta: seen.append((d, t, eta)), judge_hint="gpt-4o")
    assert (summary.written, summary.ok, summary.calls, summary.cache_hits) == (160, 160, 160, 0)
    assert 1 < server.max_in_flight <= 6
    assert seen[-1][:2] == (160, 160) and all(t == 160 for _, t, _ in seen)
    assert [d for d, _, _ in seen] == sorted(d for d, _, _ in seen)
    assert any(eta is not None and eta > 0 for _, _, eta in seen[:-1]) or len(seen) <= 2
    (sid, path, kind, harness, n, sha) = rows(sample_store, """SELECT source_id, path, kind, harness, rows_imported,
        sha256 FROM sources WHERE kind = 'rejudge'""")[0]
    assert (path, kind, harness, n, sid) == ("rejudge:rejudge-4o", "rejudge", "judgelens", 160, summary.source_id)
    assert sha == run_hash("rejudge-4o", template, cfg(server))
    j = rows(sample_store, """SELECT DISTINCT harness, judge, prompt_name FROM single_judgments WHERE source_id = ?""", [sid])
    assert j == [("judgelens", "rejudge-4o", "ja-single-v1@v1")]
    r = rows(sample_store, "SELECT count(*), count(DISTINCT request_hash), any_value(template_id) FROM rejudgments "
                           "WHERE source_id = ?", [sid])[0]
    assert r == (160, 160, template.template_id)
    # the rendered prompt that was sent is stored with each verdict, like Swallow's message list
    stored = [json.loads(p) for (p,) in rows(sample_store, "SELECT judge_prompt FROM single_judgments "
                                                           "WHERE source_id = ?", [sid])]
    assert all(r.body["messages"] in stored for r in server.chat_requests())
    # stored vs new is an ordinary comparison everywhere
    scores = queries.scores(sample_store, ["judge", "model", "turn"], {"bench": "ja_mt_bench"})
    assert set(scores[scores["judge"] == "rejudge-4o"]["n"]) == {80}
    agree = agreement.agreement(sample_store, ["gpt-4o", "rejudge-4o"], bench="ja_mt_bench", turn=1)
    assert int(agree["n"].iloc[0]) == 160


def test_rerun_is_free_and_removal_keeps_the_cache(sample_store, server):
    template = T.get_template(sample_store, "single-v1")
    items = select_items(sample_store, bench="mt_bench", turn=1, limit=20)
    first = run_batch(sample_store, template, cfg(server), items, "rerun", api_key=KEY)
    again = run_batch(sample_store, template, cfg(server), items, "rerun", api_key=KEY)
    assert (first.calls, again.calls, again.skipped_done, again.written) == (20, 0, 20, 0)
    assert remove_source(sample_store, first.source_id)
    assert rows(sample_store, "SELECT count(*) FROM rejudgments WHERE source_id = ?", [first.source_id])[0][0] == 0
    assert rows(sample_store, "SELECT count(*) FROM single_judgments WHERE judge = 'rerun'")[0][0] == 0
    third = run_batch(sample_store, template, cfg(server), items, "rerun", api_key=None)  # no key needed
    assert (third.calls, third.cache_hits, third.written) == (0, 20, 20)
    assert len(server.chat_requests()) == 20


def test_cancel_then_resume_without_paying_twice(sample_store):
    template = T.get_template(sample_store, "single-v1")
    items = select_items(sample_store, bench="mt_bench", limit=60)
    cancel = threading.Event()

    arrivals = itertools.count()

    def progress(done, total, eta):
        if done >= 10:
            cancel.set()

    def held_after_ten(body):   # answers beyond the 10th wait for the cancel, however slowly progress runs
        if next(arrivals) >= 10:
            cancel.wait(60)
        return "Rating: [[5]]"

    with FakeOpenAI(latency=0.05) as server:
        server.responder = held_after_ten
        c = cfg(server)
        batch = RejudgeBatch(sample_store, template, c, items, "cancelled")
        est = batch.prepare()
        assert est.to_send == 60
        first = batch.run(api_key=KEY, concurrency=3, progress=progress, cancel=cancel)
        assert first.cancelled and 10 <= first.written <= 10 + 3   # the 10 and those in flight at the cancel
        assert "resume" in first.text()
        sent_first = len(server.chat_requests())
        assert sent_first == first.calls  # requests in flight at cancel were kept
        second = run_batch(sample_store, template, c, items, "cancelled", api_key=KEY, concurrency=3)
        assert not second.cancelled and second.skipped_done == first.written
        assert first.written + second.written == 60
        assert len(server.chat_requests()) == 60  # every item paid for exactly once
    n = rows(sample_store, "SELECT count(*) FROM single_judgments WHERE judge = 'cancelled'")[0][0]
    assert n == 60


def test_unparsed_out_of_range_and_api_errors_are_recorded_not_clamped(sample_store, server):
    template = T.get_template(sample_store, "single-v1")
    items = select_items(sample_store, bench="mt_bench", turn=1, model="phi-3-dpo", limit=6)
    texts = {}

    def responder(body):
        k = len(texts)
        texts[k] = body
        return [Reply("Rating: [[7]]"), Reply("I refuse to rate."), Reply("Rating: [[12]]"),
                Reply("Rating: [[0]]"), Reply.server_error(500), Reply.server_error(500)][k % 6]

    server.responder = responder
    summary = run_batch(sample_store, template, cfg(server, max_retries=0), items, "messy", concurrency=1,
                          api_key=KEY)
    assert (summary.ok, summary.not_parsed, summary.out_of_range, summary.api_errors) == (1, 1, 2, 2)
    got = rows(sample_store, """SELECT parse_status, raw_score, score FROM single_judgments WHERE judge = 'messy'
                                ORDER BY parse_status, raw_score""")
    assert got == [("api_error", None, None), ("api_error", None, None), ("not_parsed", None, None),
                   ("ok", 7.0, 7.0), ("out_of_range", 0.0, None), ("out_of_range", 12.0, None)]
    note = rows(sample_store, "SELECT warnings FROM sources WHERE source_id = ?", [summary.source_id])[0][0]
    assert any("5 verdict(s) have no usable score" in w for w in note)
    # resume: only the API errors are asked again, and their rows are replaced
    server.responder = lambda body: "Rating: [[2]]"
    again = run_batch(sample_store, template, cfg(server, max_retries=0), items, "messy", api_key=KEY)
    assert (again.skipped_done, again.calls, again.ok) == (4, 2, 2)
    statuses = sorted(r[0] for r in rows(sample_store, "SELECT parse_status FROM single_judgments WHERE judge = 'messy'"))
    assert statuses == ["not_parsed", "ok", "ok", "ok", "out_of_range", "out_of_range"]
    assert rows(sample_store, "SELECT count(*) FROM rejudgments WHERE source_id = ?", [summary.source_id])[0][0] == 6


def test_a_refused_key_stops_the_batch(sample_store, server):
    server.responder = lambda body: Reply.error(401, "Incorrect API key provided")
    items = select_items(sample_store, bench="mt_bench", limit=40)
    summary = run_batch(sample_store, T.get_template(sample_store, "single-v1"), cfg(server), items, "badkey",
                          concurrency=4, api_key="wrong")
    assert "API key was refused" in summary.error and summary.written == 0
    assert len(server.chat_requests()) <= 4 + 4  # stops after the requests already started
    assert "stopped:" in summary.text()


def test_labels_cannot_merge_with_other_judges(sample_store, server):
    template = T.get_template(sample_store, "single-v1")
    items = select_items(sample_store, bench="mt_bench", limit=3)
    with pytest.raises(LabelInUseError, match="'gpt-4o' is already used by source"):
        run_batch(sample_store, template, cfg(server), items, "gpt-4o", api_key=KEY)
    run_batch(sample_store, template, cfg(server), items, "mine", api_key=KEY)
    with pytest.raises(LabelInUseError, match="different template version, model"):
        run_batch(sample_store, template, cfg(server, temperature=0.5), items, "mine", api_key=KEY)
    default = RejudgeBatch(sample_store, template, cfg(server), items)
    assert default.label == "judge-x+single-v1@v1"
    template.messages[1]["content"] += "\nBe brief."  # edited after loading: the batch stores and uses a new version
    edited = RejudgeBatch(sample_store, template, cfg(server), items)
    assert (edited.template.label, edited.template.parent_id) == ("single-v1@v2", template.template_id)


def test_five_point_scale_is_mapped_and_raw_kept(sample_store, server):
    template = T.get_template(sample_store, "order-bug-demo")
    items = select_items(sample_store, bench="ja_mt_bench", category="math", turn=1, judged_by="gpt-4o", limit=4)
    server.responder = lambda body: "Score: 5" if "pred: \n" in body["messages"][-1]["content"] else "Score: 3"
    summary = run_batch(sample_store, template, cfg(server), items, "bugdemo", api_key=KEY, judge_hint="gpt-4o")
    assert summary.ok == 4
    assert set(rows(sample_store, "SELECT raw_score, score FROM single_judgments WHERE judge = 'bugdemo'")) == {(3.0, 5.5)}


def test_items_a_template_cannot_render_are_reported_not_sent(sample_store, server):
    template = T.get_template(sample_store, "tencent-ti-ref")  # needs a reference answer (data.gt)
    items = select_items(sample_store, bench="mt_bench", turn=1, model="phi-3-dpo")
    summary = run_batch(sample_store, template, cfg(server), items, "tencent", api_key=KEY, judge_hint="gpt-4")
    with_ref = {"math", "reasoning", "coding"}
    assert summary.written == summary.calls == 30 and summary.not_renderable == 50
    assert "no reference answer" in summary.problems[0]
    cats = rows(sample_store, """SELECT DISTINCT q.category FROM single_judgments j JOIN current_questions q
                                 USING (bench, question_id) WHERE j.judge = 'tencent'""")
    assert {c for (c,) in cats} == with_ref


def test_cost_estimate_before_and_after(sample_store, server):
    template = T.get_template(sample_store, "single-v1")
    items = select_items(sample_store, bench="mt_bench", limit=10)
    c = cfg(server, price_per_1k_input=0.5, price_per_1k_output=1.5, max_tokens=100)
    batch = RejudgeBatch(sample_store, template, c, items, "priced")
    est = batch.prepare()
    assert est.to_send == 10 and est.prompt_tokens > 1000 and est.max_completion_tokens == 1000
    assert est.cost_upper == pytest.approx(est.prompt_tokens / 1000 * 0.5 + 1000 / 1000 * 1.5)
    summary = batch.run(api_key=KEY)
    assert summary.prompt_tokens > 0 and summary.completion_tokens > 0
    assert summary.cost == pytest.approx(summary.prompt_tokens / 1000 * 0.5 + summary.completion_tokens / 1000 * 1.5)
    assert summary.estimated_cost is not None and "cost ~$" in summary.text()


def test_pairwise_batch_plays_both_orders(sample_store, server):
    template = T.get_template(sample_store, "pair-v2")
    items = select_pair_items(sample_store, "phi-3", "phi-3-dpo", bench="mt_bench", turn=1, category="writing")
    assert len(items) == 10
    server.responder = lambda body: "Assistant A is better. [[A]]"  # always the first position: position bias
    summary = run_batch(sample_store, template, cfg(server), items, "pair-judge", api_key=KEY, judge_hint="gpt-4")
    assert (summary.calls, summary.written, summary.ok) == (20, 10, 20)
    got = set(rows(sample_store, "SELECT model_1, model_2, g1_winner, g2_winner, prompt_name FROM pair_judgments "
                                 "WHERE judge = 'pair-judge'"))
    assert got == {("phi-3", "phi-3-dpo", "model_1", "model_2", "pair-v2@v1")}
    models = {m for (m,) in rows(sample_store, "SELECT DISTINCT model FROM rejudgments WHERE source_id = ?",
                                 [summary.source_id])}
    assert models == {"phi-3 vs phi-3-dpo", "phi-3-dpo vs phi-3"}
    with pytest.raises(ValueError, match="pairwise template"):
        run_batch(sample_store, template, cfg(server), select_items(sample_store, limit=1), "x", api_key=KEY)


def test_cli_rejudge_then_scores(sample_store, server, monkeypatch, capsys, tmp_path):
    path = str(sample_store.path)
    sample_store.close()
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    code = main(["rejudge", "--template", "ja-single-v1", "--model", "judge-x", "--base-url", server.url,
                 "--label", "cli-judge", "--turn", "1", "--judged-by", "gpt-4o",
                 "--answer-model", "shisa-ai/shisa-v2-llama3.1-8b", "--limit", "12", "--concurrency", "3",
                 "--db", path])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "12 to send" in err and "verdicts written: 12" in out
    assert main(["scores", "--by", "judge,model,turn", "--db", path]) == 0
    out, _ = capsys.readouterr()
    assert "cli-judge" in out
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in server.chat_requests())
    # a template file, and a clear error for a pairwise template without two models
    tfile = tmp_path / "mine.json"
    tfile.write_text('{"name": "mine", "messages": [{"role": "user", "content": "{{ question }} {{ answer }}"}],'
                     ' "parser": {"kind": "fastchat_single"}}')
    assert main(["rejudge", "--template", str(tfile), "--model", "judge-x", "--base-url", server.url,
                 "--bench", "mt_bench", "--limit", "2", "--db", path]) == 0
    assert main(["rejudge", "--template", "pair-v2", "--model", "judge-x", "--base-url", server.url,
                 "--db", path]) == 2
    assert "--answer-model A --vs B" in capsys.readouterr().err
    monkeypatch.delenv("OPENAI_API_KEY")
    assert main(["rejudge", "--template", "single-v1", "--model", "judge-x", "--base-url", server.url,
                 "--bench", "mt_bench", "--limit", "50", "--db", path]) == 2
    assert "No API key" in capsys.readouterr().err


def test_items_by_disagreement_rank(sample_store):
    judges = ["gpt-4o", "gpt-4.1-2025-04-14"]
    items = select_items(sample_store, disagreement_judges=judges, bench="ja_mt_bench", turn=2, limit=5)
    ranked = agreement.disagreements(sample_store, judges, bench="ja_mt_bench", turn=2, limit=5)
    assert [(i.question_id, i.model) for i in items] == list(zip(ranked["question_id"], ranked["model"]))
    assert all(i.turn == 2 and i.sample == 0 for i in items)
    assert list(ranked["spread"]) == sorted(ranked["spread"], reverse=True)


def test_a_failing_progress_callback_stops_the_workers(sample_store):
    items = select_items(sample_store, bench="mt_bench", limit=40)

    def progress(done, total, eta):
        if done:
            raise KeyboardInterrupt("the page went away")

    before = threads_named("judgelens-judge-")
    with FakeOpenAI(latency=0.05) as server:
        with pytest.raises(KeyboardInterrupt):
            run_batch(sample_store, T.get_template(sample_store, "single-v1"), cfg(server), items, "stopped",
                        concurrency=2, progress=progress, api_key=KEY)
        sent = len(server.chat_requests())
        join_threads_named("judgelens-judge-", exclude=before)   # the dispatcher's workers end ...
        assert len(server.chat_requests()) <= sent + 2 and sent < 40   # ... after at most one more each
    (n,) = rows(sample_store, "SELECT rows_imported FROM sources WHERE path = 'rejudge:stopped'")[0]
    assert n == rows(sample_store, "SELECT count(*) FROM single_judgments WHERE judge = 'stopped'")[0][0] > 0
