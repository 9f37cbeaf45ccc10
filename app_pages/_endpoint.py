"""The judge endpoint form in the sidebar, shared by Workbench, Probes and Compare's attribution."""
from __future__ import annotations

import streamlit as st

from app_pages._state import REMEMBER_PARAMS, keep_values
from lib.render.safe_text import md_escape

ENDPOINT_DEFAULTS = {"ep_url": "https://api.openai.com/v1", "ep_model": "gpt-4o-mini", "ep_temp": 0.0,
                     "ep_max_tokens": 2048, "ep_timeout": 60, "ep_price_in": 0.0, "ep_price_out": 0.0, "ep_key": ""}
ENDPOINT_KEYS = tuple(ENDPOINT_DEFAULTS)


def _remembered_endpoint() -> dict:
    """The endpoint URL and model this browser tab used before a reload: kept in the address bar (never the key,
    never on disk), so a reload or a link keeps them."""
    return {key: st.query_params[param] for key, param in REMEMBER_PARAMS.items() if st.query_params.get(param)}


def _remember_endpoint(base_url: str, model: str) -> None:
    for key, value in (("ep_url", base_url), ("ep_model", model)):
        param = REMEMBER_PARAMS[key]
        if value != ENDPOINT_DEFAULTS[key] and st.query_params.get(param) != value:
            st.query_params[param] = value
        elif value == ENDPOINT_DEFAULTS[key] and param in st.query_params:
            del st.query_params[param]


def judge_endpoint():
    """The judge endpoint form in the sidebar, shared by Workbench and Probes. Returns (config, api_key).

    The form is a lazy expander (closed at first, its eight fields drawn only while it is open: a new tab of
    Workbench or Probes does not pay for them); closed, the values are the ones last entered or the defaults,
    and a caption names the model, the host and whether a key was found.
    The API key comes from the password field (kept in this browser session only), then Streamlit secrets
    ([judgelens] OPENAI_API_KEY), then the OPENAI_API_KEY environment variable; it is never stored.
    """
    from lib.judging import config as J

    keep_values(*ENDPOINT_KEYS)  # across pages, and while the form is closed
    remembered = _remembered_endpoint()
    for key, default in ENDPOINT_DEFAULTS.items():  # the widgets read their value from here: no value= as well
        st.session_state.setdefault(key, remembered.get(key, default))
    box = st.sidebar.expander("Judge endpoint", icon=":material/cloud:", key="ep_open", on_change="rerun")
    if box.open:
        with box:
            st.text_input("Base URL", key="ep_url", help="Any OpenAI-compatible API: OpenAI, vLLM, Ollama, LiteLLM, …")
            st.text_input("Model", key="ep_model")
            st.number_input("Temperature", 0.0, 2.0, step=0.1, key="ep_temp")
            st.number_input("Max tokens", 1, 32768, key="ep_max_tokens")
            st.number_input("Timeout (s)", 1, 600, key="ep_timeout")
            st.number_input("$ per 1k input tokens (optional)", 0.0, 100.0, step=0.0005, format="%.4f",
                            key="ep_price_in")
            st.number_input("$ per 1k output tokens (optional)", 0.0, 100.0, step=0.0005, format="%.4f",
                            key="ep_price_out")
            st.text_input("API key (kept in this browser session only)", type="password", key="ep_key")
    value = {key: st.session_state.get(key, default) for key, default in ENDPOINT_DEFAULTS.items()}
    base_url, model, typed_key = value["ep_url"], value["ep_model"], value["ep_key"]
    temperature, max_tokens, timeout_s = value["ep_temp"], value["ep_max_tokens"], value["ep_timeout"]
    price_in, price_out = value["ep_price_in"], value["ep_price_out"]
    try:
        secrets = st.secrets.get("judgelens")
    except Exception:  # no secrets file
        secrets = None
    api_key = J.resolve_api_key(typed_key, secrets)
    try:
        config = J.JudgeConfig(base_url=base_url, model=model, temperature=float(temperature),
                               max_tokens=int(max_tokens), timeout_s=float(timeout_s),
                               price_per_1k_input=price_in or None, price_per_1k_output=price_out or None)
    except ValueError as exc:
        st.sidebar.error(str(exc))
        config = None
    _remember_endpoint(base_url, model)
    host = base_url.split("//", 1)[-1].split("/", 1)[0]
    st.sidebar.caption(md_escape(f"{model} at {host}") + " · Key: " + (
        "found" if api_key else "none yet (password field, [judgelens] in secrets, or OPENAI_API_KEY)"))
    return config, api_key
