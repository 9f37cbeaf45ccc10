"""The shared vocabulary (lib/vocab.py): one rule each, and every layer applies the same one."""
from __future__ import annotations

import pytest

from lib import vocab
from lib.analysis import flags
from lib.judging.context import preprocess_text

THINK_CASES = [
    ("plain answer", "", "plain answer"),
    ("<think>plan</think>\n\nThe answer is 4.", "plan", "The answer is 4."),
    ("<think>a</think>x <think>b</think>y", "a\n\nb", "x y"),
    ("Intro <think>cut off mid-thought, never closed", "cut off mid-thought, never closed", "Intro "),
    ("<think>only reasoning</think>", "only reasoning", ""),
    ("<think>\nmulti\nline\n</think>\nDone", "\nmulti\nline\n", "Done"),
]


@pytest.mark.parametrize("text, think, visible", THINK_CASES)
def test_split_think_closed_or_unclosed_to_the_end(text, think, visible):
    assert vocab.split_think(text) == (think, visible)
    assert preprocess_text(text, {"strip_think": True}) == visible     # the judge-context rule is the same


def test_the_store_view_and_the_flag_sql_strip_think_exactly_like_python(store):
    texts = [t for t, _, _ in THINK_CASES]
    with store.write() as cur:
        for i, t in enumerate(texts):
            cur.execute("INSERT INTO answers (source_id, harness, bench, model, question_id, sample, turn, text) "
                        "VALUES (1, 'fastchat', 'b', 'm', ?, 0, 1, ?)", [str(i), t])
    with store.read() as cur:
        view = dict(cur.execute("SELECT question_id, text_no_think FROM answers_view").fetchall())
        sql = dict(cur.execute("SELECT question_id, regexp_replace(text, ?, '', 'g') FROM answers",
                               [flags.THINK_SQL]).fetchall())
    for i, (_, _, visible) in enumerate(THINK_CASES):
        assert view[str(i)] == visible and sql[str(i)] == visible


def test_model_key_in_python_and_sql_agree(store):
    names = ["shisa-ai__shisa-v2-llama3.1-8b", "Shisa-AI/Shisa-V2-Llama3.1-8B", "gpt-4o", None]
    with store.read() as cur:
        got = [cur.execute(f"SELECT {vocab.model_key_sql('?')}", [n]).fetchone()[0] for n in names[:3]]
    assert got == [vocab.model_key(n) for n in names[:3]]
    assert got[0] == got[1] == "shisa-ai/shisa-v2-llama3.1-8b" and vocab.model_key(None) == ""


def test_question_ids_sort_as_numbers_first_then_as_text(store):
    ids = ["10", "2", "b", "1", "a"]
    with store.read() as cur:
        got = [r[0] for r in cur.execute(f"SELECT question_id FROM (SELECT unnest(?) AS question_id) "
                                         f"ORDER BY {vocab.QID_ORDER}", [ids]).fetchall()]
    assert got == ["1", "2", "10", "a", "b"]
    assert vocab.qid_order("p") == "TRY_CAST(p.question_id AS BIGINT) NULLS LAST, p.question_id"


def test_fastchat_rating_patterns():
    assert vocab.DOUBLE_BRACKET_RE.search("Rating: [[8.5]]").group(1) == "8.5"
    assert vocab.SINGLE_BRACKET_RE.search("see [1] and [7]").group(1) == "1"
    assert vocab.REFERENCE_CATEGORIES == {"math", "reasoning", "coding"}
