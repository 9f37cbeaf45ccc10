"""The Workbench page under AppTest, talking HTTP to the project's local OpenAI-compatible server."""
from __future__ import annotations

import os

import pytest

from lib.analysis import queries
from lib.store import Store

KEY = "sk-workbench-test-7777777777"
ITEM = {"bench": "ja_mt_bench", "q": "31", "turn": "1", "model": "shisa-ai/shisa-v2-llama3.1-8b", "judge": "gpt-4o"}


@pytest.fixture
def judge_responder():
    """The shared ``server`` always answers this."""
    return lambda body: "The answer is wrong at step 2. Rating: [[3]]"


@pytest.fixture
def app(sample_app, server):
    at = sample_app
    at.query_params.update(ITEM)
    at.switch_page("pages/workbench.py").run()
    assert not at.exception
    at.session_state["ep_open"] = True  # open the endpoint form (a lazy expander: closed, its fields are not drawn)
    at.run()
    at.text_input(key="ep_url").set_value(server.url)
    at.text_input(key="ep_model").set_value("judge-x")
    at.text_input(key="ep_key").set_value(KEY).run()
    return at


def button(at, label):
    return next(b for b in at.button if b.label == label)


def test_opens_on_the_linked_item_with_the_matching_template(app):
    assert app.selectbox(key="wb_q").value == "31" and app.selectbox(key="wb_judge").value == "gpt-4o"
    assert app.selectbox(key="wb_template").value.startswith("ja-single-math-v1@")   # math on the JA bench
    preview = [t.value for t in app.text]
    assert any("[The Start of Reference Answer]" in c for c in preview)             # the exact messages


def test_rejudge_one_item_shows_new_beside_stored_and_the_key_goes_only_to_the_server(app, server):
    button(app, "Re-judge").click().run()
    assert not app.exception
    assert [m.value for m in app.metric][-1] == "3"                        # the new verdict, parsed
    assert any("The answer is wrong at step 2." in t.value for t in app.text)
    assert server.chat_requests()[-1].headers.get("authorization") == f"Bearer {KEY}"
    n = len(server.chat_requests())
    button(app, "Re-judge").click().run()                                 # the same request: from the cache
    assert len(server.chat_requests()) == n
    assert any("from the cache" in c.value for c in app.caption)


def test_an_edited_template_is_saved_as_a_new_version(app):
    key = next(t.key for t in app.text_area if t.label.startswith("Message 2"))
    app.text_area(key=key).set_value(app.text_area(key=key).value + "\nBe strict.").run()
    app.text_input(key="wb_save_name").set_value("my-math")
    button(app, "Save version").click().run()
    assert app.selectbox(key="wb_template").value == "my-math@v1"


def _open_batch(app) -> None:
    """Open "Re-judge a batch" (a lazy expander: closed, its controls are not drawn)."""
    assert "wb_b_limit" not in {n.key for n in app.number_input}
    app.session_state["wb_batch_open"] = True
    app.run()


def _run_batch(app, limit: int, label: str) -> None:
    """Start a batch of ``limit`` items as judge ``label`` from the page and rerun once it is done."""
    _open_batch(app)
    app.number_input(key="wb_b_limit").set_value(limit)
    app.text_input(key="wb_b_label").set_value(label).run()
    button(app, "Estimate and run").click().run()
    assert app.session_state["wb_job"]["run"].wait(60)   # joins the background batch
    app.run()


def test_a_batch_becomes_a_new_judge(app, server):
    _run_batch(app, 5, "strict-judge")
    assert not app.exception
    assert app.session_state["wb_job"]["run"].result.written == 5
    assert any("Stored as judge strict-judge" in s.value for s in app.success)
    store = Store(os.environ["JUDGELENS_DB"])  # the same file the app has open (same process: shared)
    by_judge = queries.scores(store, ["judge"]).set_index("judge")
    assert by_judge.loc["strict-judge", "n"] == 5 and by_judge.loc["strict-judge", "mean"] == 3.0


def test_without_a_key_the_user_is_told_where_to_put_one(app):
    app.text_input(key="ep_key").set_value("").run()
    button(app, "Re-judge").click().run()
    assert any("OPENAI_API_KEY" in e.value or "API key" in e.value for e in app.error)


def test_the_batch_label_follows_the_sidebar_model_until_the_user_names_it(app, server):
    _open_batch(app)
    template = app.selectbox(key="wb_template").value.split("@")[0]
    assert app.text_input(key="wb_b_label").value == f"judge-x+{template}"   # not the first default gpt-4o-mini
    app.text_input(key="ep_model").set_value("judge-y").run()
    assert app.text_input(key="wb_b_label").value == f"judge-y+{template}"
    app.number_input(key="wb_b_limit").set_value(2).run()
    button(app, "Estimate and run").click().run()
    assert app.session_state["wb_job"]["run"].wait(60)   # joins the background batch
    app.run()
    assert any(f"Stored as judge judge-y+{template}." in s.value for s in app.success)
    assert {r.body["model"] for r in server.chat_requests()} == {"judge-y"}
    store = Store(os.environ["JUDGELENS_DB"])
    assert f"judge-y+{template}" in set(queries.scores(store, ["judge"])["judge"])
    app.text_input(key="wb_b_label").set_value("my-judge").run()            # a name the user typed stays
    app.text_input(key="ep_model").set_value("judge-z").run()
    assert app.text_input(key="wb_b_label").value == "my-judge"
    app.session_state["wb_batch_open"] = False  # closed and opened again: the typed name is kept
    app.run()
    _open_batch(app)
    assert app.text_input(key="wb_b_label").value == "my-judge"


def test_the_batch_cost_keeps_its_dollar_signs(app, server):
    """Two bare "$" in Markdown make the text between them LaTeX: the cost line escapes both."""
    app.number_input(key="ep_price_in").set_value(0.005)
    app.number_input(key="ep_price_out").set_value(0.015)
    _run_batch(app, 2, "priced-judge")
    cost = [c.value for c in app.caption if "estimated cost" in c.value]
    assert len(cost) == 1 and cost[0].count("~\\$") == 2, cost


def test_the_endpoint_form_is_closed_until_opened_and_keeps_what_was_typed(sample_app):
    at = sample_app
    at.switch_page("pages/workbench.py").run()
    assert not at.exception
    keys = lambda: {t.key for t in at.sidebar.text_input}  # noqa: E731
    captions = lambda: [c.value.replace("\\", "") for c in at.sidebar.caption]  # noqa: E731 (md_escape'd)
    assert "ep_url" not in keys()                                          # closed: its fields are not drawn
    assert any("gpt-4o-mini at api.openai.com" in c for c in captions())
    at.session_state["ep_open"] = True
    at.run()
    at.text_input(key="ep_model").set_value("judge-q").run()
    at.session_state["ep_open"] = False
    at.run()
    assert "ep_url" not in keys()
    assert any("judge-q at api.openai.com" in c for c in captions())  # closed, still judge-q
    at.switch_page("pages/probes.py").run()                                   # and on another page
    assert any("judge-q at api.openai.com" in c for c in captions())
