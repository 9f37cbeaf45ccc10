"""The Item view under AppTest: what one item shows is cached (``cached_item_query``) and follows the data."""
from __future__ import annotations

import json
import os
import textwrap

from conftest import JA

from lib.ingest.importer import ingest
from lib.store import Store

JUDGMENTS = JA / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"


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
