"""The harness comparison under AppTest (Compare → one model under two harnesses; Overview's matrix) and its report."""
from __future__ import annotations

import re

import pytest

from lib.reports import harness_report

MODEL_8B = "shisa-ai/shisa-v2-llama3.1-8b"


@pytest.fixture
def app(sample_app):
    return sample_app


def test_compare_one_model_under_two_harnesses(app):
    app.switch_page("app_pages/compare.py")
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
    cards = [h.proto.body for h in app.get("html") if " · differs: " in h.proto.body]  # the differing rows' cards
    assert len(cards) == 1 and cards[0].index("<b>judge_model</b> · differs: yes") \
        < cards[0].index("<b>judge_prompt</b> · differs: yes")
    assert "<b>system_prompt</b>" not in cards[0]  # cannot tell: in the expander, not among the differing rows
    # the links editor and the paired items: read and drawn once their expanders open
    assert not any({"question_id_a", "question_id_b"} & set(d.value.columns) for d in app.dataframe)
    app.session_state["hx_links_open"] = True
    app.session_state["hx_pairs_open"] = True
    app.session_state["hx_setup_table_open"] = True
    app.run()
    links = next(d.value for d in app.dataframe if "method" in d.value.columns and "question_id_b" in d.value.columns)
    pairs = next(d.value for d in app.dataframe if "link" in d.value.columns and "score_a" in d.value.columns)
    assert set(links["method"]) == {"exact"} and set(pairs["link"]) == {"exact"} and len(pairs) >= len(links)
    setup = next(d.value for d in app.dataframe if "area" in d.value.columns)
    assert setup["area"].tolist()[:3] == ["judge_model", "judge_prompt", "system_prompt"]
    assert setup.set_index("area").loc["system_prompt", "differs"] == "cannot tell"   # FastChat does not record it
    # the judge prompt templates: rebuilt (every stored prompt of both runs read) only once their expander opens
    assert not any("red struck through: only in A" in m.value for m in app.markdown)
    app.session_state["hx_prompts_open"] = True
    app.run()
    assert any("red struck through: only in A" in m.value for m in app.markdown)
    assert any(c.value == "Sentences only in B:" for c in app.caption)
    # sample 0 only: no sample noise left, so categories rule (a) never touches show a zero gap
    app.radio(key="hx_samples").set_value("first").run()
    gap = next(d.value for d in app.dataframe if "delta" in d.value.columns)
    assert gap.set_index("category").loc["humanities", "delta"] == 0
    assert "first" in str(app.query_params["samples"])  # the address bar links to this view


def test_overview_matrix_joins_one_model_across_harnesses(app):
    app.switch_page("app_pages/overview.py").run()
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


def test_full_waterfall_in_the_page(app):
    """No model endpoint: the stored-data view and judge-side steps only. With one (the scripted model and
    judge servers): each side's generation setup, the cost first, then the waterfall in both orders."""
    from fake_model import FakeModel
    from fake_openai import FakeOpenAI
    from scripted_judges import planted_judge as judge

    app.switch_page("app_pages/compare.py")
    app.query_params["view"] = "harness"
    app.run()
    assert not app.exception
    # a lazy expander: the attribution's fields and the stored answers' view are drawn once it is opened
    assert not any("copy_share" in d.value.columns for d in app.dataframe) and not app.multiselect
    app.session_state["hx_attr_open"] = True
    app.run()
    stored = next(d.value for d in app.dataframe if "copy_share" in d.value.columns)
    assert len(stored) == 2 and stored["samples_per_item"].tolist() == [1, 5]
    assert app.multiselect(key="hx_order").options == ["judge prompt", "judge model", "judge max_tokens",
                                                       "reference answers", "truncation", "reasoning stripped"]
    with FakeOpenAI() as judge_srv, FakeModel(default_max_tokens=200) as model_srv:
        judge_srv.responder = judge
        app.session_state["ep_url"], app.session_state["ep_model"] = judge_srv.url, "judge-x"
        app.session_state["ep_key"] = "sk-page"
        app.text_input(key="hx_ans_url").set_value(model_srv.url)
        app.text_input(key="hx_ans_model").set_value("shisa").run()
        assert not app.exception
        # FastChat's system prompt is not in its files: the page asks for it, never guesses
        assert any("Unknown system prompt" in e.value or "is unknown" in e.value for e in app.error)
        app.text_input(key="hx_sp_A").set_value("You are a helpful assistant.").run()
        setups = next(d.value for d in app.dataframe if "A source" in d.value.columns)
        assert setups.set_index("field").loc["samples", "B"].startswith("5 per turn")
        app.multiselect(key="hx_order").set_value(["system_prompt", "prompt"])
        app.number_input(key="hx_items").set_value(4).run()
        app.button(key="hx_estimate").click().run()
        assert not app.exception
        info = " ".join(i.value for i in app.info)
        assert "16 generation request" in info and "32 judge request" in info                 # cost first
        assert not model_srv.chat_requests() and not judge_srv.chat_requests()
        app.button(key="hx_run").click().run()
        assert not app.exception
        assert model_srv.chat_requests() and judge_srv.chat_requests()
        tables = [d.value for d in app.dataframe if "step" in d.value.columns and "delta" in d.value.columns]
        assert len(tables) == 2                                       # A->B and B->A side by side
        assert tables[0]["step"].tolist() == ["A stored", "replay (judge drift)", "regenerate (model drift)",
                                              "system prompt", "judge prompt", "residual", "B stored"]
        assert float(tables[0].set_index("step").loc["system prompt", "delta"]) == 2   # shown as "2.000"
        assert any("interact" in w.value for w in app.warning)


def test_the_attribution_fields_survive_closing_their_expander(app, monkeypatch):
    """A lazy expander drops its widgets' values when closed, unless the page keeps them: typed endpoint, item count
    and order come back when it is opened again, and no widget gets both a default and a session value (Streamlit
    logs a warning for that)."""
    from streamlit.elements.lib import policies

    warned = []
    monkeypatch.setattr(policies, "_shown_default_value_warning", False)
    monkeypatch.setattr(policies._LOGGER, "warning", lambda msg, *args, **kw: warned.append(msg % args))
    app.switch_page("app_pages/compare.py")
    app.query_params["view"] = "harness"
    app.session_state["hx_attr_open"] = True
    app.run()
    assert app.number_input(key="hx_items").value == 20 and app.toggle(key="hx_both").value is True
    app.text_input(key="hx_ans_url").set_value("http://127.0.0.1:9/v1")
    app.number_input(key="hx_items").set_value(7)
    app.toggle(key="hx_both").set_value(False)
    app.multiselect(key="hx_order").set_value(["truncation", "prompt"]).run()
    app.session_state["hx_attr_open"] = False
    app.run()
    assert not [w for w in app.number_input if w.key == "hx_items"]            # closed: not drawn
    app.session_state["hx_attr_open"] = True
    app.run()
    assert not app.exception
    assert app.text_input(key="hx_ans_url").value == "http://127.0.0.1:9/v1"
    assert app.number_input(key="hx_items").value == 7 and app.toggle(key="hx_both").value is False
    assert app.multiselect(key="hx_order").value == ["truncation", "prompt"]
    # a model endpoint adds the generation factors: the order starts again from every factor
    app.text_input(key="hx_ans_model").set_value("shisa").run()
    app.text_input(key="hx_sp_A").set_value("You are a helpful assistant.").run()   # FastChat's files: not stated
    assert app.multiselect(key="hx_order").value[:2] == ["system_prompt", "temperature"]
    assert app.text_input(key="hx_sp_B").value                                # Swallow's files show B's prompt
    assert not warned
