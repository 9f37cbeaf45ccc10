"""lib.analysis.item_view lookups of one item."""
from __future__ import annotations

from contextlib import contextmanager

from lib.analysis import item_view as iv
from lib.keys import ItemKey


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
    seen = []
    make = sample_store.read

    @contextmanager
    def counted():
        with make() as cur:
            seen.append(cur)
            yield cur

    sample_store.read = counted
    for bench, qid, turn, sample in items:
        del seen[:]
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
