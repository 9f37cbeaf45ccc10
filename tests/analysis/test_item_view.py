"""lib.analysis.item_view lookups of one item."""
from __future__ import annotations

import pandas as pd
from conftest import reads_counted, sample_item_keys

from lib.analysis import item_view as iv
from lib.judging import human
from lib.keys import ItemKey
from lib.vocab import QID_ORDER


def test_answers_of_finds_what_answer_finds_for_every_model_in_one_query(sample_store):
    """The answers of several models (the item view's "also offer answers of other models") come from one query:
    on a DuckLake store each query pays catalog look-ups and a Parquet read. Each model's text is the one
    ``answer`` finds (model, model_id or file name; '/' and '__' and case alike; the newest file)."""
    with sample_store.read() as cur:
        items = cur.execute("SELECT DISTINCT bench, question_id, turn, sample FROM answers "
                            "ORDER BY ALL LIMIT 6").fetchall()
        models = [r[0] for r in cur.execute("SELECT DISTINCT model FROM answers ORDER BY model").fetchall()]
    swallow = next(m for m in models if m.startswith("hosted_vllm/"))
    asked = [*models, "no-such-model", swallow.replace("/", "__").upper()]
    for bench, qid, turn, sample in items:
        with reads_counted(sample_store) as seen:
            got = iv.answers_of(sample_store, bench, qid, turn, sample, asked)
        assert len(seen) == 1
        want = {}
        for m in asked:
            found = iv.answer(sample_store, ItemKey(bench, qid, turn, m, sample))
            if found:
                want[m] = found["text"]
        assert got == want and list(got) == list(want)
    assert any(len(iv.answers_of(sample_store, *item, asked)) > 1 for item in items)
    assert iv.answers_of(sample_store, *items[0], []) == {}


def test_items_of_finds_what_the_one_item_lookups_find_in_three_queries(sample_store):
    """A report's largest disagreements: ``items_of`` gives each key's question, answer and verdicts as ``question``,
    ``answer`` and ``verdicts`` do one by one (Swallow samples, repeats, a model named by its file, an item the
    store does not hold), in one read instead of three per item."""
    with sample_store.read() as cur:
        judged = [ItemKey(*r) for r in cur.execute(
            "SELECT DISTINCT bench, question_id, turn, model, sample FROM single_judgments "
            "ORDER BY hash(bench, question_id, turn, model, sample) LIMIT 12").fetchall()]
        swallow = [ItemKey(*r) for r in cur.execute(
            "SELECT DISTINCT bench, question_id, turn, model, sample FROM single_judgments "
            "WHERE harness = 'swallow' AND sample > 0 ORDER BY ALL LIMIT 3").fetchall()]
    assert swallow
    keys = [*judged, *swallow, ItemKey(judged[0].bench, "no-such-question", 1, judged[0].model),
            ItemKey(judged[0].bench, judged[0].question_id, judged[0].turn, "no-such-model"), judged[0]]
    with reads_counted(sample_store) as seen:
        got = iv.items_of(sample_store, keys)
    assert len(seen) == 1
    assert len(got) == len(keys)
    for key, found in zip(keys, got):
        assert found["question"] == iv.question(sample_store, key.bench, key.question_id)
        assert found["answer"] == iv.answer(sample_store, key)
        want = iv.verdicts(sample_store, key)
        assert list(found["verdicts"].columns) == list(want.columns)
        assert found["verdicts"].astype(str).to_dict("records") == want.astype(str).to_dict("records")
    assert all(len(f["verdicts"]) and f["answer"] for f in got[:len(judged) + len(swallow)]) and got[-3]["question"] is None
    assert got[-2]["verdicts"].empty and got[-2]["answer"] is None
    assert iv.items_of(sample_store, []) == []
    without = iv.items_of(sample_store, keys, prompts=False)  # a report's items: the same, judge prompts left empty
    assert any(found["verdicts"]["judge_prompt"].notna().any() for found in got)
    for found, bare in zip(got, without):
        assert (bare["question"], bare["answer"]) == (found["question"], found["answer"])
        assert bare["verdicts"]["judge_prompt"].isna().all()
        pd.testing.assert_frame_equal(bare["verdicts"].drop(columns="judge_prompt"),
                                      found["verdicts"].drop(columns="judge_prompt"))


def test_items_of_on_a_lake_reads_the_texts_the_file_store_reads(sample_store, sample_lake):
    """``items_of`` filters the texts by row id each store's cheapest way (a DuckDB file: their range and list, a lake:
    ``list_contains``): the same rationales, answers and questions, key by key."""
    with sample_store.read() as cur:
        keys = [ItemKey(*r) for r in cur.execute(
            "SELECT DISTINCT bench, question_id, turn, model, sample FROM single_judgments "
            "ORDER BY hash(bench, question_id, turn, model, sample) LIMIT 12").fetchall()]
    on_file = iv.items_of(sample_store, keys, prompts=False)
    on_lake = iv.items_of(sample_lake.store, keys, prompts=False)
    for key, f, lk in zip(keys, on_file, on_lake):
        assert (lk["question"], lk["answer"]) == (f["question"], f["answer"]), key
        texts = [sorted(map(tuple, side["verdicts"][["harness", "judge", "score", "rationale"]].values.tolist()))
                 for side in (lk, f)]  # the order of repeats follows source ids, which each store numbers itself
        assert texts[0] == texts[1], key
    assert all(f["answer"] and len(f["verdicts"]) for f in on_file)


def assert_window_texts_match(store, bench_models):
    """``window_texts`` of each block of a model's order finds what ``answer`` and ``verdicts(prompts=False)`` find
    for each of its items, in one read; an item of no block (not judged) is read alone."""
    blocks = 0
    for bench, model, sample in bench_models:
        order = iv.item_order(store, bench, model)
        assert len(order) > iv.WINDOW  # more than one block
        firsts = {iv.window_of(order, q, t) for q, t in order}
        assert sorted(item for block in firsts for item in block) == sorted(order)  # blocks partition the order
        for block in sorted(firsts)[:3]:
            with reads_counted(store) as seen:
                got = iv.window_texts(store, bench, model, sample, block)
            assert len(seen) == 1 and list(got) == list(block)
            for (q, t), texts in got.items():
                key = ItemKey(bench, q, t, model, sample)
                assert texts["answer"] == iv.answer(store, key)
                pd.testing.assert_frame_equal(texts["verdicts"], iv.verdicts(store, key, prompts=False))
            blocks += 1
        assert iv.window_of(order, "no-such-question", 1) == (("no-such-question", 1),)
        alone = iv.window_texts(store, bench, model, sample, (("no-such-question", 1),))
        assert alone[("no-such-question", 1)]["answer"] is None and alone[("no-such-question", 1)]["verdicts"].empty
    assert blocks > 2


def sample_models(store):
    with store.read() as cur:  # a FastChat model (sample 0) and a Swallow model on two of its samples
        fastchat = cur.execute("SELECT bench, model FROM single_judgments WHERE harness = 'fastchat' "
                               "ORDER BY bench, model LIMIT 1").fetchone()
        swallow = cur.execute("SELECT bench, model FROM single_judgments WHERE harness = 'swallow' "
                              "ORDER BY bench, model LIMIT 1").fetchone()
    return [(*fastchat, 0), (*swallow, 0), (*swallow, 3)]


def test_window_texts_finds_what_the_one_item_lookups_find(sample_store):
    assert_window_texts_match(sample_store, sample_models(sample_store))


def test_window_texts_on_a_lake(sample_lake):
    assert_window_texts_match(sample_lake.store, sample_models(sample_lake.store))


def ranked_by_means(store, bench: str, limit: int = 1000) -> list[tuple[str, int, str]]:
    """The disagreement ranking as ``agreement.disagreements`` gives it over every judge scoring the bench (a pivot
    of each judge's mean per item)."""
    from lib.analysis.agreement import disagreements

    with store.read() as cur:
        judges = [r[0] for r in cur.execute("SELECT DISTINCT judge FROM item_scores WHERE bench = ? AND score IS NOT "
                                            "NULL ORDER BY judge", [bench]).fetchall()]
    if len(judges) < 2:
        return []
    ranked = disagreements(store, judges, bench=bench, limit=limit)
    return list(zip(ranked["question_id"], ranked["turn"].astype(int), ranked["model"]))


def test_disagreement_order_is_the_ranking_of_the_judges_means_in_one_read(sample_store):
    """Next biggest disagreement's ranking: the items in the order of the spread of the judges' means (then bench,
    question, model, turn), as ``disagreements`` ranks them, in one read while each judge scores the bench under one
    harness (an analyst's verdicts too: judge human:<name>). A judge under two harnesses (its mean is then no single
    row) sends the ranking through ``disagreements``: the same order with a judge scored twice and a judge alone."""
    benches = iv.benches(sample_store)
    ranked = {}
    for bench in benches:
        for limit in (1000, 7):
            with reads_counted(sample_store) as seen:
                ranked[bench, limit] = iv.disagreement_order(sample_store, bench, limit)
            assert ranked[bench, limit] == ranked_by_means(sample_store, bench, limit)
            assert len(seen) == 1
    assert any(len(r) == 7 for (_, limit), r in ranked.items() if limit == 7)
    bench = next(b for b in benches if len(ranked[b, 1000]) > 7)
    last = ranked[bench, 1000][-1]  # an analyst's 1 on the least disputed item: now a disagreement
    human.record(sample_store, author="ann", bench=bench, question_id=last[0], turn=last[1], model=last[2], score=1)
    with reads_counted(sample_store) as seen:
        got = iv.disagreement_order(sample_store, bench)
    assert got == ranked_by_means(sample_store, bench) != ranked[bench, 1000] and len(seen) == 1
    with sample_store.read() as cur:
        (judge, model, qid, turn, category), (alone_model, alone_qid, alone_turn) = cur.execute(
            """SELECT a.judge, a.model, a.question_id, a.turn, a.category FROM item_scores a
               JOIN item_scores b USING (bench, model, question_id, turn)
               WHERE a.bench = ? AND a.judge < b.judge AND a.score IS NOT NULL AND b.score = a.score
               ORDER BY ALL LIMIT 1""", [bench]).fetchone(), cur.execute(
            """SELECT model, question_id, turn FROM item_scores WHERE bench = ? AND score IS NOT NULL
               GROUP BY ALL HAVING count(*) = 1 ORDER BY ALL LIMIT 1""", [bench]).fetchone() or (None, None, None)
    with sample_store.write() as cur:
        # judge, agreeing with another judge on this item, scored again under another harness: its mean moves by 4
        # (the rows' max - min says 8); a judge alone on an item, scored twice: still one judge, not ranked
        cur.execute("INSERT INTO item_scores (harness, bench, judge, model, question_id, turn, category, score) "
                    "VALUES ('rejudge', $b, $j, $m, $q, $t, $c, 8.0 + (SELECT score FROM item_scores WHERE bench = $b "
                    "AND judge = $j AND model = $m AND question_id = $q AND turn = $t))",
                    {"b": bench, "j": judge, "m": model, "q": qid, "t": turn, "c": category})
        if alone_model is not None:
            cur.execute("INSERT INTO item_scores (harness, bench, judge, model, question_id, turn, score) "
                        "SELECT 'rejudge', bench, judge, model, question_id, turn, 10 - score FROM item_scores "
                        "WHERE bench = ? AND model = ? AND question_id = ? AND turn = ?",
                        [bench, alone_model, alone_qid, alone_turn])
    with sample_store.read() as cur:  # the spread of the rows, not of the judges' means: another order
        naive = [(q, int(t), m) for q, t, m in cur.execute(
            f"""SELECT question_id, turn, model FROM item_scores WHERE bench = ? AND score IS NOT NULL
               GROUP BY question_id, model, turn HAVING count(*) >= 2
               ORDER BY max(score) - min(score) DESC, {QID_ORDER}, model, turn LIMIT 1000""", [bench]).fetchall()]
    got = iv.disagreement_order(sample_store, bench)
    assert got == ranked_by_means(sample_store, bench) != naive


def test_question_verdicts_hold_every_turn_as_verdicts_finds_it(sample_store):
    """The Workbench reads the verdicts of every turn of a question at once (its Turn control then reads nothing):
    each turn read out of them is what ``verdicts`` finds for that turn (Swallow samples, repeats, column ids), with
    and without the judge prompts, and without the rationales, in one query."""
    keys = sample_item_keys(sample_store, 10, 3)
    keys.append(ItemKey(keys[0].bench, keys[0].question_id, keys[0].turn, "no-such-model"))
    for key in keys:
        for prompts, rationales in ((True, True), (False, True), (False, False)):
            with reads_counted(sample_store) as seen:
                every = iv.question_verdicts(sample_store, key.bench, key.question_id, key.model, key.sample,
                                             prompts=prompts, rationales=rationales)
            assert len(seen) == 1
            assert ("rationale" in every.columns) == rationales
            for turn in (1, 2):
                want = iv.verdicts(sample_store, ItemKey(key.bench, key.question_id, turn, key.model, key.sample),
                                   prompts=prompts)
                want = want if rationales else want.drop(columns=["rationale"])
                got = iv.turn_verdicts(every, turn)
                assert list(got.columns) == list(want.columns)
                assert got.astype(str).to_dict("records") == want.astype(str).to_dict("records")
    assert len(iv.turn_verdicts(iv.question_verdicts(sample_store, keys[0].bench, keys[0].question_id,
                                                     keys[0].model, keys[0].sample), keys[0].turn))
