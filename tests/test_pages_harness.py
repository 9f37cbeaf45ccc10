"""The harness comparison under AppTest (Compare → one model under two harnesses; Overview's matrix) and its report."""
from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from lib.reports import harness_report

MODEL_8B = "shisa-ai/shisa-v2-llama3.1-8b"


@pytest.fixture
def app(sample_app):
    return sample_app


def test_compare_one_model_under_two_harnesses(app):
    app.switch_page("pages/compare.py")
    app.query_params["view"] = "harness"
    app.run()
    assert not app.exception
    assert app.session_state["hx_model"] == MODEL_8B
    assert app.session_state["hx_a"] == f"fastchat · ja_mt_bench · gpt-4o · {MODEL_8B}"
    assert app.session_state["hx_b"].startswith("swallow · japanese_mt_bench · gpt-4o-2024-08-06 · hosted_vllm/")
    assert any("80 linked questions" in c.value and "80 exact" in c.value for c in app.caption)
    frames = [d.value for d in app.dataframe]
    gap = next(f for f in frames if "delta" in f.columns)
    assert len(gap) == 8 and set(gap["n_questions"]) == {10}
    coding = gap[gap["category"] == "coding"].iloc[0]
    assert coding["delta"] > 1 and coding["significant"]
    # the headline first: the gap, its interval, the largest categories
    head = next(m.value for m in app.markdown if m.value.startswith("**A − B = ")).replace("\\", "")
    assert "80 questions" in head and "Largest categories: coding +" in head
    # the setup: one card per differing row, the others in an expander, the full table one click away
    cards = [m.value for m in app.markdown if " · differs: " in m.value]
    assert cards[:2] == ["**judge\\_model** · differs: yes", "**judge\\_prompt** · differs: yes"]
    app.session_state["hx_setup_table_open"] = True
    app.run()
    setup = next(d.value for d in app.dataframe if "area" in d.value.columns)
    assert setup["area"].tolist()[:3] == ["judge_model", "judge_prompt", "system_prompt"]
    assert setup.set_index("area").loc["system_prompt", "differs"] == "cannot tell"   # FastChat does not record it
    # sample 0 only: no sample noise left, so categories rule (a) never touches show a zero gap
    app.radio(key="hx_samples").set_value("first").run()
    gap = next(d.value for d in app.dataframe if "delta" in d.value.columns)
    assert gap.set_index("category").loc["humanities", "delta"] == 0
    assert "first" in str(app.query_params["samples"])  # the address bar links to this view


def test_overview_matrix_joins_one_model_across_harnesses(app):
    app.switch_page("pages/overview.py").run()
    assert not app.exception
    assert not any(any("(harness)" in c for c in d.value.columns) and "t1" not in d.value.columns
                   for d in app.dataframe)                             # a lazy expander: drawn once opened
    app.session_state["overview_matrix_open"] = True
    app.run()
    matrix = next(d.value for d in app.dataframe if "model" in d.value.columns
                  and any("(harness)" in c for c in d.value.columns) and "t1" not in d.value.columns)
    row = matrix.set_index("model").loc[MODEL_8B]
    # shown as the grid shows it: 3 decimals, and an em dash where a model has no run (never None)
    assert row["fastchat · ja_mt_bench · gpt-4o"] == "7.406"
    assert row["swallow · japanese_mt_bench · gpt-4o-2024-08-06 (harness)"] == "6.794"
    assert "—" in set(matrix.drop(columns=["model"]).to_numpy().ravel())
    assert not {"None", "nan", "<NA>"} & set(map(str, matrix.to_numpy().ravel()))


def test_harness_report(sample_store):
    text = harness_report(sample_store, {"harness": "fastchat", "judge": "gpt-4o", "model": MODEL_8B},
                          {"harness": "swallow", "model": MODEL_8B}, swallow_samples="first")
    assert "Harness vs harness: shisa-ai/shisa-v2-llama3.1-8b" in text
    assert "80 linked questions (80 exact" in text
    assert "The expected language is Japanese." in text and "judge_prompt" in text
    assert "<td>1.600</td>" in text                                    # coding, sample 0: 1.6 points
    assert "default-src 'none'" in text
    assert not re.search(r"""<(script|link|img|iframe)[^>]+(src|href)=["']?https?:""", text)
