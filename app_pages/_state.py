"""URL and session state shared by the pages: widget values kept valid across data changes and page switches,
and the address bar as a deep link (``seed_from_url`` / ``publish_to_url``)."""
from __future__ import annotations

import streamlit as st

# The judge endpoint fields kept in the address bar, query parameter per remembered field (the form is in
# _endpoint.py): not part of any page's deep link, so seed_from_url ignores them and publish_to_url keeps them.
REMEMBER_PARAMS = {"ep_url": "judge_url", "ep_model": "judge_model"}


def keep_valid(key: str, options: list, default=None) -> None:
    """Keep a widget's session value one of its current options (data or filters may have changed)."""
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default is not None else (options[0] if options else None)


def keep_values(*keys: str) -> None:
    """Keep these widgets' values while their widgets are not drawn (another page, a closed lazy expander or
    tab): Streamlit drops a widget's state on the first run that does not draw it, unless the run writes it."""
    for key in keys:
        if key in st.session_state:
            st.session_state[key] = st.session_state[key]


def keep_picks(key: str, options: list, default: list) -> None:
    """A multiselect's session value: ``default`` the first time, later only the picks still among ``options``
    (another bench may not have them). Set here, not with ``default=``, so the two never disagree."""
    before = st.session_state.get(key)
    kept = [v for v in before if v in options] if before is not None else None
    # the first time, or when none of the earlier picks exists here (another bench): the default
    st.session_state[key] = list(default) if before is None or (before and not kept) else kept


def seed_from_url(page: str, keys: dict[str, str], ints: tuple[str, ...] = (), lists: tuple[str, ...] = ()) -> bool:
    """Copy query parameters into widget state (``param -> widget key``) once per distinct URL; after
    that the widgets own the state and ``publish_to_url`` writes it back, so the address bar is a deep link.
    ``ints`` / ``lists`` name the params holding a whole number / a comma-separated list. Returns whether this
    run seeded (a URL the page had not seen: a deep link followed, or the page's first run)."""
    marker = f"_{page}_seeded"
    if st.session_state.get(marker) == _page_params():
        return False
    for param, key in keys.items():
        if param not in st.query_params:
            continue
        value = st.query_params[param]
        if param in ints:
            if not value.isdigit():
                continue
            value = int(value)
        elif param in lists:
            value = [v for v in value.split(",") if v]
        st.session_state[key] = value
    st.session_state[marker] = _page_params()
    return True


def _page_params() -> dict:
    """The address bar's parameters that belong to the page (not the remembered judge endpoint)."""
    return {k: v for k, v in st.query_params.to_dict().items() if k not in REMEMBER_PARAMS.values()}


def publish_to_url(page: str, params: dict[str, str]) -> None:
    kept = {p: st.query_params[p] for p in REMEMBER_PARAMS.values() if p in st.query_params}
    st.query_params.from_dict({**params, **kept})
    st.session_state[f"_{page}_seeded"] = _page_params()
