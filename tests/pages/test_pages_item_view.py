"""The Item view under AppTest, on the bundled sample: deep links, Previous / Next, the biggest disagreement, the
diff, Swallow's samples and truncation, the reference where the judge saw it; what one item shows is cached
(``cached_item_query``) and follows the data."""
from __future__ import annotations

import json
import os
import textwrap

import pytest
from conftest import JA

from lib.analysis import agreement
from lib.ingest.importer import ingest
from lib.store import Store

JUDGMENTS = JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"
JUDGES = ["gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14", "gpt-4o"]
MODEL_8B = "shisa-ai/shisa-v2-llama3.1-8b"


def verdict_columns(at) -> list[str]:
    [columns] = [m for m in at.multiselect if m.label == "Columns (in this order)"]
    return list(columns.options)


def test_an_item_shows_a_judgment_imported_after_it_was_first_shown(sample_app, tmp_path):
    """The item's verdicts are cached on the data version: a rerun after an import (through a second handle on the
    file) shows the new judge's column, with its score, among the columns shown until you pick your own."""
    at = sample_app
    at.switch_page("app_pages/item_view.py").run()
    assert not at.exception
    qid, turn, model = at.session_state["iv_q"], int(at.session_state["iv_turn"]), at.session_state["iv_model"]
    before = verdict_columns(at)
    assert before and not any("judge-from-later" in c for c in before)
    at.run()  # a rerun on the same item: from the cache, the same columns
    assert verdict_columns(at) == before

    later = tmp_path / "later" / "ja_mt_bench" / "model_judgment"
    later.mkdir(parents=True)
    with open(JUDGMENTS, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    row = next(r for r in rows if str(r["question_id"]) == str(qid) and int(r["turn"]) == turn and r["model"] == model)
    row["judge"] = ["judge-from-later", row["judge"][1]]
    row["score"] = 3
    (later / "judge-from-later_single.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    store = Store(os.environ["JUDGELENS_DB"])
    ingest(store, [later.parent.parent])

    at.run()
    assert not at.exception
    after = verdict_columns(at)
    assert len(after) == len(before) + 1
    [new] = [c for c in after if "judge-from-later" in c]
    # until you pick columns, every judge of the item is shown: the new one too
    assert at.multiselect(key="iv_cols").value == after and len(at.metric) == len(after)
    assert "3" in [m.value for m in at.metric]
    at.multiselect(key="iv_cols").set_value([new]).run()  # once you pick, the columns are yours
    assert [m.value for m in at.metric] == ["3"]
    at.run()
    assert at.multiselect(key="iv_cols").value == [new]


def test_an_items_judge_prompts_are_read_only_when_shown(sample_app):
    """The verdict columns come without the rendered judge prompts (the largest text); opening a column's prompt
    shows that verdict's own prompt, and the diff offers every verdict's prompt."""
    from lib.analysis import item_view as iv
    from lib.keys import ItemKey

    at = sample_app
    at.switch_page("app_pages/item_view.py").run()
    assert not at.exception
    key = ItemKey(at.session_state["iv_bench"], at.session_state["iv_q"], int(at.session_state["iv_turn"]),
                  at.session_state["iv_model"])
    store = Store(os.environ["JUDGELENS_DB"], read_only=True)
    try:
        full, light = iv.verdicts(store, key), iv.verdicts(store, key, prompts=False)
    finally:
        store.close()
    assert "judge_prompt" not in light.columns
    assert light.equals(full.drop(columns="judge_prompt"))
    prompt = textwrap.dedent(full["judge_prompt"].iloc[0]).strip()  # as st.text shows it
    assert prompt and not any(t.value == prompt for t in at.text)  # closed: not drawn
    at.session_state[f"iv_prompt_open_{full['column_id'].iloc[0]}"] = True  # the user opens the first column's prompt
    at.run()
    assert not at.exception
    assert [t.value for t in at.text].count(prompt) == 1
    at.session_state["iv_diff_open"] = True
    at.run()
    assert not at.exception
    assert {f"Judge prompt · {c}" for c in full["column_id"]} <= set(at.selectbox(key="iv_a").options)


def test_a_rerun_on_the_same_item_reads_only_the_data_version(sample_app):
    """With a name set (the verdict panel and the review queue's progress shown), a rerun on the same item asks the
    store for its data version alone: everything else it shows is cached per data version."""
    from conftest import reads_counted

    from app_pages._store import get_store

    at = sample_app
    at.switch_page("app_pages/item_view.py").run()
    at.text_input(key="jl_author_input").set_value("rin").run()
    assert not at.exception and any("Review queue" in str(p.proto) for p in at.get("progress"))
    with reads_counted(get_store()) as seen:
        at.run()
    assert not at.exception
    assert len(seen) == 1  # Store.data_version


def test_the_search_box_opens_search_on_the_bench_picked(sample_app):
    """Enter in the Item view's search box opens Search with the text and the bench picked on the page (not the
    first bench)."""
    at = sample_app
    at.switch_page("app_pages/item_view.py").run()
    benches = list(at.selectbox(key="iv_bench").options)
    assert len(benches) > 1
    other = next(b for b in benches if b != at.selectbox(key="iv_bench").value)
    at.selectbox(key="iv_bench").set_value(other).run()
    at.text_input(key="iv_search").input("answer").run()
    assert not at.exception
    assert (at.session_state["sr_q"], at.session_state["sr_bench"]) == ("answer", other)


@pytest.fixture
def app(sample_app):
    return sample_app


def test_item_view_opens_from_query_params_and_jumps_to_the_biggest_disagreement(app, _sample_db):
    app.query_params.update({"bench": "ja_mt_bench", "q": "31", "turn": "2", "model": MODEL_8B,
                             "cols": "fastchat:gpt-4o", "a": "answer:" + MODEL_8B, "b": "rationale:fastchat:gpt-4o"})
    app.switch_page("app_pages/item_view.py").run()
    assert not app.exception
    assert app.selectbox(key="iv_q").value == "31" and app.radio(key="iv_turn").value == 2
    assert app.multiselect(key="iv_cols").value == ["fastchat:gpt-4o"]
    assert app.selectbox(key="iv_a").value == "answer:" + MODEL_8B
    assert len(app.metric) == 1                                   # only the chosen column
    next(b for b in app.button if b.label == "Next biggest disagreement").click().run()
    with Store(_sample_db) as s:
        ranked = agreement.disagreements(s, JUDGES, bench="ja_mt_bench", limit=1000)
    keys = list(zip(ranked["question_id"], ranked["turn"].astype(int), ranked["model"]))
    expected = keys[keys.index(("31", 2, MODEL_8B)) + 1]  # the next one down the ranking from where we were
    where = (app.selectbox(key="iv_q").value, app.radio(key="iv_turn").value, app.selectbox(key="iv_model").value)
    assert where == expected


def test_item_view_diff_waits_until_opened_and_then_joins_the_link(app):
    app.query_params.update({"bench": "ja_mt_bench", "q": "31", "turn": "2", "model": MODEL_8B})
    app.switch_page("app_pages/item_view.py").run()
    assert not app.exception
    assert {"iv_a", "iv_b"}.isdisjoint(s.key for s in app.selectbox)   # closed: the diff is neither drawn nor sent
    assert not app.get("html") and "a" not in app.query_params
    app.session_state["iv_diff_open"] = True                             # the user opens it
    app.run()
    left, right = app.selectbox(key="iv_a").value, app.selectbox(key="iv_b").value
    assert left.startswith("rationale:") and right.startswith("rationale:") and left != right
    assert len(app.get("html")) == 1 and any("similar" in c.value for c in app.caption)
    assert (app.query_params["a"], app.query_params["b"]) == (left, right)  # the address bar names the diff


def test_item_view_biggest_disagreement_on_a_one_judge_bench_says_why_not(app, _sample_db):
    app.query_params.update({"bench": "mt_bench", "q": "81", "turn": "1", "model": "phi-3-dpo"})
    app.switch_page("app_pages/item_view.py").run()
    next(b for b in app.button if b.label == "Next biggest disagreement").click().run()
    assert any("No item here has scores from two or more judges" in i.value for i in app.info)


def test_item_view_previous_and_next_walk_the_items(app):
    app.switch_page("app_pages/item_view.py").run()
    first = (app.selectbox(key="iv_q").value, app.radio(key="iv_turn").value)
    next(b for b in app.button if b.label == "Next").click().run()
    assert (app.selectbox(key="iv_q").value, app.radio(key="iv_turn").value) == (first[0], 2)
    next(b for b in app.button if b.label == "Previous").click().run()
    assert (app.selectbox(key="iv_q").value, app.radio(key="iv_turn").value) == first


def test_item_view_swallow_item_has_samples_and_a_truncation_note(app):
    app.query_params.update({"bench": "japanese_mt_bench", "q": "1", "turn": "1",
                             "model": "hosted_vllm/fake-org/Fake-JA-Chat-8B"})
    app.switch_page("app_pages/item_view.py").run()
    assert not app.exception
    assert app.get("button_group") or app.get("segmented_control")   # the 0-4 sample picker


def test_item_view_flags_a_rationale_that_quotes_the_reference(app):
    # GPT-4 on phi-3-dpo, mt_bench q128 turn 1: half the rationale is the reference's code (lib.analysis.flags finds it).
    app.query_params.update({"bench": "mt_bench", "q": "128", "turn": "1", "model": "phi-3-dpo"})
    app.switch_page("app_pages/item_view.py").run()
    assert not app.exception
    assert any("Quotes the reference far more than the answer" in w.value for w in app.warning)


def test_item_view_explains_swallow_turn_two_conditioning(app):
    # q71 is a writing question: Swallow samples it at temperature 0.7, so samples 1-4 differ from sample 0.
    app.query_params.update({"bench": "japanese_mt_bench", "q": "71", "turn": "2",
                             "model": "hosted_vllm/fake-org/Fake-JA-Chat-8B", "sample": "3"})
    app.switch_page("app_pages/item_view.py").run()
    assert not app.exception and app.session_state["iv_sample"] == 3
    assert any("after sample 0's turn-1 answer" in i.value for i in app.info)


def test_item_view_says_when_the_harness_cut_the_answer(app):
    # lib.analysis.flags finds the 8,192-character cut on q10 turn 1 of the Swallow chat run.
    app.query_params.update({"bench": "japanese_mt_bench", "q": "10", "turn": "1",
                             "model": "hosted_vllm/fake-org/Fake-JA-Chat-8B"})
    app.switch_page("app_pages/item_view.py").run()
    assert any("cut this answer at 8,192 characters" in w.value for w in app.warning)


def test_item_view_reference_answer_opens_where_the_judge_saw_it(app):
    # The reference expander is lazy: open (and drawn) on a reference category, closed and not drawn elsewhere,
    # unless the analyst opened or closed it on this question and turn.
    def reference_captions():
        return [c.value for c in app.caption if c.value.startswith("looked up by judge(s)")]

    app.query_params.update({"bench": "mt_bench", "q": "128", "turn": "1", "model": "phi-3-dpo"})  # coding
    app.switch_page("app_pages/item_view.py").run()
    assert not app.exception
    assert app.session_state["iv_ref_open"] is True and reference_captions()
    app.selectbox(key="iv_q").set_value("81").run()  # mt_bench q81: writing, no reference shown to the judge
    assert not app.exception
    assert app.session_state["iv_ref_open"] is False
    assert not any(c.value == "No reference answer for this question and turn." for c in app.caption)  # not drawn
    assert any(e.label.startswith("Reference answer (not used") for e in app.expander)
    app.session_state["iv_ref_open"] = True  # the analyst opens it here: it stays open on this item
    app.session_state["_iv_ref_item"] = ("mt_bench", app.selectbox(key="iv_q").value, 1)
    app.run()
    assert not app.exception and app.session_state["iv_ref_open"] is True
    assert any(c.value == "No reference answer for this question and turn." for c in app.caption)
    app.selectbox(key="iv_q").set_value("128").run()  # another item: the default again (open: coding)
    assert app.session_state["iv_ref_open"] is True and reference_captions()
