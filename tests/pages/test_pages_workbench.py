"""The Workbench page under AppTest, talking HTTP to the project's local OpenAI-compatible server."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest
from waiting import wait_for

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
    return open_workbench(sample_app, server)


def open_workbench(at: AppTest, server) -> AppTest:
    """``at`` on the Workbench at ITEM, the endpoint form filled in: the test server, judge-x, KEY."""
    at.query_params.update(ITEM)
    at.switch_page("app_pages/workbench.py").run()
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
    _estimate_then_confirm(app)


def _estimate_then_confirm(app, requests: int | None = None) -> None:
    """Estimate, check that nothing was sent and that the confirmation names requests and tokens, then run."""
    button(app, "Estimate").click().run()
    assert "wb_job" not in app.session_state
    note = next(i.value for i in app.info if "request(s) to send" in i.value)
    assert "prompt tokens" in note and "completion tokens" in note
    confirm = next(b for b in app.button if b.label.startswith("Run ") and b.label.endswith("request(s)"))
    if requests is not None:
        assert confirm.label == f"Run {requests} request(s)"
    confirm.click().run()
    assert app.session_state["wb_job"]["run"].wait(60)   # joins the background batch
    app.run()


def test_a_batch_asks_before_it_sends_even_at_zero_prices(app, server):
    _open_batch(app)
    app.number_input(key="wb_b_limit").set_value(3)
    app.text_input(key="wb_b_label").set_value("asked-first").run()
    button(app, "Estimate").click().run()
    assert server.chat_requests() == []                                    # nothing sent on the estimate
    note = next(i.value for i in app.info if "request(s) to send" in i.value)
    assert note.startswith("3 item(s) as judge asked\\-first: 3 request(s) to send, 0 answered from the cache.")
    assert "no prices set, so no cost estimate" in note
    button(app, "Cancel").click().run()
    assert not any(b.label.startswith("Run ") for b in app.button) and server.chat_requests() == []


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
    _estimate_then_confirm(app, 2)
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
    at.switch_page("app_pages/workbench.py").run()
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
    at.switch_page("app_pages/probes.py").run()                                   # and on another page
    assert any("judge-q at api.openai.com" in c for c in captions())


def _tab(server) -> AppTest:
    """Another browser tab on the same server: a second AppTest in this process shares the app's store."""
    at = AppTest.from_file(str(Path(__file__).resolve().parents[2] / "app.py"), default_timeout=120)
    at.run()
    return open_workbench(at, server)


def test_the_same_batch_in_two_tabs_is_paid_once(app, server):
    """Issue 27: the second tab says "Another batch with this label is running" (no raw constraint error, no second
    round of paid calls); requests counted at the judge server."""
    import re
    import socket
    import threading

    gate = threading.Event()
    server.responder = lambda body: (gate.wait(120), "Rating: [[3]]")[1]
    other = _tab(server)
    for tab in (app, other):
        _open_batch(tab)
        tab.number_input(key="wb_b_limit").set_value(5)
        tab.text_input(key="wb_b_label").set_value("two-tabs").run()
    button(app, "Estimate").click().run()
    next(b for b in app.button if b.label == "Run 5 request(s)").click().run()
    wait_for(server.chat_requests, what="the first tab's first request")
    button(other, "Estimate").click().run()
    next(b for b in other.button if b.label.startswith("Run ") and b.label.endswith("request(s)")).click().run()
    assert other.session_state["wb_job"]["run"].wait(60)   # joins the refused batch
    other.run()
    gate.set()
    assert app.session_state["wb_job"]["run"].wait(60)   # joins the paid batch
    app.run()
    assert not other.exception and not app.exception
    assert [e.value for e in other.error] == ["**Another batch with this label is running**"]
    message = next(c.value for c in other.code if c.value.startswith("Another batch"))
    assert re.fullmatch(re.escape(f"Another batch with this label is running: 'two-tabs' (process {os.getpid()} on "
                                  f"{socket.gethostname()}, started ") + r"\d+" + re.escape(
        " s ago). Nothing was sent. When it has finished, run this batch again: it resumes from that batch's "
        "verdicts and pays only for what is still missing."), message)
    assert app.session_state["wb_job"]["run"].result.written == 5
    assert len(server.chat_requests()) == 5
    store = Store(os.environ["JUDGELENS_DB"])
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM sources WHERE kind = 'rejudge'").fetchone()[0] == 1
        assert cur.execute("SELECT count(*) FROM single_judgments WHERE judge = 'two-tabs'").fetchone()[0] == 5


def test_the_endpoint_url_and_model_survive_a_reload_but_the_key_never_leaves_the_session(app, server, caplog):
    """The URL and model go to the address bar (a reload or a link keeps them); the key does not; and drawing the
    form from session values raises no "default value but also set via the Session State API" warning."""
    assert app.query_params["judge_url"] == server.url and app.query_params["judge_model"] == "judge-x"
    assert all(KEY not in str(v) for v in app.query_params.values())
    reloaded = AppTest.from_file(app._script_path, default_timeout=120)
    reloaded.query_params.update({**ITEM, "judge_url": server.url, "judge_model": "judge-x"})
    reloaded.switch_page("app_pages/workbench.py").run()
    reloaded.session_state["ep_open"] = True
    reloaded.run()
    assert not reloaded.exception
    assert reloaded.text_input(key="ep_url").value == server.url
    assert reloaded.text_input(key="ep_model").value == "judge-x"
    assert reloaded.text_input(key="ep_key").value == ""
    shown = [e.value for e in (*reloaded.warning, *reloaded.exception, *reloaded.error)]
    assert not any("Session State API" in str(v) for v in shown)
    assert "Session State API" not in caplog.text


def test_the_diffs_read_the_stored_judges_own_rationale_and_prompt(app, server):
    """A pick reads the stored verdicts without their texts; beside a new verdict the page reads the item's own:
    the stored judge's rationale is shown and diffed, and its rendered prompt in the prompt diff."""
    from lib.analysis import item_view as iv
    from lib.keys import ItemKey
    from lib.render.textdiff import char_diff, diff_html

    button(app, "Re-judge").click().run()
    assert not app.exception
    store = Store(os.environ["JUDGELENS_DB"], read_only=True)
    try:
        stored = iv.verdicts(store, ItemKey(ITEM["bench"], ITEM["q"], int(ITEM["turn"]), ITEM["model"]))
    finally:
        store.close()
    new = app.session_state["wb_result"][1]
    stored_rationale = stored[stored["judge"] == ITEM["judge"]]["rationale"].iloc[0]
    assert stored_rationale and stored_rationale in [t.value for t in app.text]
    assert [h.proto.body for h in app.get("html")][-1] == diff_html(char_diff(stored_rationale, new["text"]))
    app.session_state["wb_diff"] = "prompt"
    app.run()
    assert not app.exception
    stored_prompt = stored[stored["judge"] == ITEM["judge"]]["judge_prompt"].iloc[0]
    sent = "\n\n".join(m["content"] for m in new["messages"] if m["role"] == "user")
    assert stored_prompt and sent
    assert [h.proto.body for h in app.get("html")][-1] == diff_html(char_diff(stored_prompt, sent))


def test_a_workbench_rerun_reads_only_the_data_version(sample_app):
    """A rerun of the Workbench on the same item (nothing changed) asks the store for its data version alone."""
    from conftest import reads_counted

    from app_pages._store import get_store

    sample_app.query_params.update(ITEM)
    sample_app.switch_page("app_pages/workbench.py").run()
    sample_app.run()  # the first open stored the built-in templates: a new data version
    assert not sample_app.exception
    with reads_counted(get_store()) as seen:
        sample_app.run()
    assert not sample_app.exception
    assert len(seen) == 1  # Store.data_version
