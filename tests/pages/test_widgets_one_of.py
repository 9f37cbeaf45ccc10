"""``one_of`` (app_pages/_widgets.py): a few options are a row of radio buttons (one click), more are a select box;
the choice is kept in the same session-state key when the widget changes, and radio labels (Markdown in Streamlit)
show names literally."""
from __future__ import annotations

from streamlit.testing.v1 import AppTest

from lib.render.safe_text import md_escape

OPTIONS = [f"judge-{i}" for i in range(6)] + ["**bold** [x](http://e.invalid)"]


def script():
    import streamlit as st

    from app_pages._widgets import one_of

    n = st.session_state.get("n", 3)
    st.session_state["picked"] = one_of("Judge", [f"judge-{i}" for i in range(n)] + ["**bold** [x](http://e.invalid)"],
                                       "judge_choice")


def test_a_few_options_are_radios_more_are_a_select_box_and_the_choice_is_kept():
    at = AppTest.from_function(script, default_timeout=60)
    at.run()
    assert not at.exception
    assert [r.key for r in at.radio] == ["judge_choice"] and not at.selectbox
    # drawn escaped (lib.render.safe_text.md_escape): "judge\\-0" shows as judge-0, the link and bold as typed
    assert at.radio(key="judge_choice").options == [md_escape(o) for o in OPTIONS[:3] + OPTIONS[-1:]]
    assert at.radio(key="judge_choice").options[-1].startswith("\\*\\*bold\\*\\* \\[x\\]")
    at.radio(key="judge_choice").set_value("judge-2").run()
    assert at.session_state["picked"] == "judge-2"
    at.session_state["n"] = 6  # seven options: more than ONE_CLICK_MOST
    at.run()
    assert not at.exception
    assert [s.key for s in at.selectbox] == ["judge_choice"] and not at.radio
    assert at.selectbox(key="judge_choice").value == "judge-2"  # the same key, the same choice
    assert at.session_state["picked"] == "judge-2"
