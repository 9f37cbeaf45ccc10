"""The Probes page under AppTest: the probe suite against the local judge server, and stored-data flags."""
from __future__ import annotations


import pytest
from fake_openai import FakeOpenAI
from scripted_judges import confused_judge


KEY = "sk-probes-page-5555555555"


@pytest.fixture
def app(sample_app):
    at = sample_app
    at.switch_page("app_pages/probes.py").run()
    assert not at.exception
    return at


def test_flags_tab_lists_the_real_findings_with_links(app):
    assert not any("flag" in d.value.columns for d in app.dataframe)  # a lazy tab: not drawn until opened
    app.session_state["pr_tab"] = "Flags on stored verdicts"
    app.run()
    assert not app.exception
    counts = next(d.value for d in app.dataframe if "flag" in d.value.columns and "rows" in d.value.columns)
    found = dict(zip(counts["flag"], counts["rows"]))
    assert found["swallow_truncation"] > 0 and found["reference_leak"] > 0
    tables = [d.value for d in app.dataframe if "link" in d.value.columns]
    assert tables and all(t["link"].str.startswith("item_view?").all() for t in tables)


def test_probe_suite_from_the_page_reports_the_order_bug_in_plain_words(app):
    with FakeOpenAI() as server:
        server.responder = confused_judge
        app.session_state["ep_open"] = True  # open the endpoint form (a lazy expander)
        app.run()
        app.text_input(key="ep_url").set_value(server.url)
        app.text_input(key="ep_model").set_value("judge-x")
        app.text_input(key="ep_key").set_value(KEY).run()
        assert app.selectbox(key="pr_template").value.startswith("order-bug-demo@")
        app.multiselect(key="pr_groups").set_value(["canaries", "ablation"])
        next(b for b in app.button if b.label == "Run the probe suite").click().run()
    assert not app.exception
    summary = "\n".join(c.value for c in app.code)
    assert "scores an EMPTY answer 5/5" in summary and "the order of the sections is the cause" in summary
    assert any("fails" in e.value for e in app.error)
    table = next(d.value for d in app.dataframe if "probe" in d.value.columns and "result" in d.value.columns)
    assert table.set_index("probe").loc["empty_answer", "result"] == "fail"


def test_a_judge_off_the_scale_could_not_be_evaluated_on_the_page(app):
    """order-bug-demo asks for 1-5; a judge answering 7 is not a failing template: the page says so, with why."""
    with FakeOpenAI() as server:
        server.responder = lambda body: "Rating: [[7]]"
        app.session_state["ep_open"] = True
        app.run()
        app.text_input(key="ep_url").set_value(server.url)
        app.text_input(key="ep_model").set_value("judge-x")
        app.text_input(key="ep_key").set_value(KEY).run()
        app.multiselect(key="pr_groups").set_value(["canaries"])
        next(b for b in app.button if b.label == "Run the probe suite").click().run()
    assert not app.exception
    assert not any("fails" in e.value for e in app.error)
    assert any("could not be evaluated" in w.value for w in app.warning)
    summary = "\n".join(c.value for c in app.code)
    assert "could not evaluate" in summary and "no rating on the template's 1-5 scale could be parsed" in summary
    assert "FAILS" not in summary
