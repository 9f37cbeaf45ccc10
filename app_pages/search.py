"""Search: find text in questions, answers, references, rationales and rendered judge prompts, with filters.

Case-insensitive substring after NFKC (full-width = half-width), or a regular expression. The whole search
(text, fields, filters, page) lives in the URL, so the address bar is a deep link. Snippets are plain text in
a dataframe, the hit between « and »: text is never rendered as HTML or Markdown.
"""
import math

import streamlit as st
from streamlit.runtime import Runtime
from streamlit.runtime.scriptrunner import get_script_run_ctx

from lib import harness as H
from lib.analysis import item_view
from lib.analysis import search as S
from lib.analysis.flags import FLAGS
from lib.analysis.search_view import group_samples
from lib.errors import JudgeLensError
from lib.render.safe_text import csv_text
from app_pages._state import publish_to_url, seed_from_url
from app_pages._store import cached_query, page_start
from app_pages._widgets import readable_dataframe, show_error

PAGE_SIZE = 50
ANY = "(any)"

store, version = page_start("Search")
if cached_query(S.index_pending, version):  # stores made before search existed: index them once (the check is
    S.ensure_index(store)                    # cached per data version: a rerun asks the store nothing)

seed_from_url("sr", {"q": "sr_q", "in": "sr_in", "re": "sr_re", "bench": "sr_bench", "harness": "sr_harness",
                     "judge": "sr_judge", "model": "sr_model", "cat": "sr_cat", "turn": "sr_turn",
                     "smin": "sr_smin", "smax": "sr_smax", "parse": "sr_parse", "flag": "sr_flag",
                     "dis": "sr_dis", "jamax": "sr_jamax", "jamin": "sr_jamin", "page": "sr_page"},
              ints=("page",), lists=("in", "judge", "flag"))
# URL values arrive as text; coerce the few non-text widgets. A value a widget cannot hold (smin=nan, smax=11,
# turn=3) is dropped with a message: silently kept it would find nothing, silently dropped it would find too much.
bad_link = []
for param, key, top in (("smin", "sr_smin", 10.0), ("smax", "sr_smax", 10.0), ("dis", "sr_dis", 9.0),
                        ("jamax", "sr_jamax", 1.0), ("jamin", "sr_jamin", 1.0)):
    value = st.session_state.get(key)
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if math.isfinite(number) and 0.0 <= number <= top:
            st.session_state[key] = number
        else:
            del st.session_state[key]
            bad_link.append(f"{param}={value!r} (a number from 0 to {top:g})")
if st.session_state.get("sr_turn") not in (None, ANY, "1", "2"):
    bad_link.append(f"turn={st.session_state['sr_turn']!r} (1 or 2)")
    del st.session_state["sr_turn"]
if bad_link:
    st.warning("This link's " + "; ".join(bad_link) + " cannot be used: left out of the search below.",
               icon=":material/link_off:")
if isinstance(st.session_state.get("sr_re"), str):
    st.session_state["sr_re"] = st.session_state["sr_re"] in ("1", "true", "True")

facets = cached_query(S.facets, version)


def choice(label: str, options: list, key: str, col) -> str | None:
    options = [ANY, *options]
    if st.session_state.get(key) not in options:
        st.session_state[key] = ANY
    value = col.selectbox(label, options, key=key, on_change=reset_page)
    return None if value == ANY else value


def reset_page() -> None:
    """Another search (text, fields or a filter) starts on its first page."""
    st.session_state["sr_page"] = 1


text = st.text_input("Find", key="sr_q", placeholder="e.g. 英語, language, ｐｙｔｈｏｎ, [[1]]", on_change=reset_page,
                     help="Case-insensitive; full-width and half-width forms match (NFKC). No word splitting: "
                          "any substring matches, Japanese included.")
c1, c2 = st.columns([4, 1])
st.session_state.setdefault("sr_in", list(S.FIELDS))
st.session_state["sr_in"] = [f for f in st.session_state["sr_in"] if f in S.FIELDS] or list(S.FIELDS)
fields = c1.multiselect("In", list(S.FIELDS), key="sr_in", on_change=reset_page)
regex = c2.toggle("Regular expression", key="sr_re", on_change=reset_page, help=S.REGEX_HELP)

with st.expander("Filters", expanded=True):
    f1, f2, f3, f4 = st.columns(4)
    bench = choice("Bench", facets["bench"], "sr_bench", f1)
    harness = choice("Harness", facets["harness"], "sr_harness", f2)
    model = choice("Model", facets["model"], "sr_model", f3)
    category = choice("Category", facets["category"], "sr_cat", f4)
    g1, g2, g3, g4 = st.columns(4)
    st.session_state["sr_judge"] = [j for j in st.session_state.get("sr_judge", []) if j in facets["judge"]]
    judges = g1.multiselect("Judges", facets["judge"], key="sr_judge", on_change=reset_page)
    turn = choice("Turn", ["1", "2"], "sr_turn", g2)
    parse = choice("Parse status", list(S.PARSE_STATUSES), "sr_parse", g3)
    st.session_state["sr_flag"] = [f for f in st.session_state.get("sr_flag", []) if f in FLAGS]
    flags = g4.multiselect("Flagged by", list(FLAGS), key="sr_flag", on_change=reset_page, help="Only items a stored-data flag found")
    h1, h2, h3 = st.columns(3)
    score_min = h1.number_input("Score at least", 0.0, 10.0, value=None, step=1.0, key="sr_smin", on_change=reset_page,
                                help="1-10 score of the judgment (answers/questions: of some judgment of the item)")
    score_max = h2.number_input("Score at most", 0.0, 10.0, value=None, step=1.0, key="sr_smax", on_change=reset_page)
    disagree = h3.number_input("Judges disagree by at least", 0.0, 9.0, value=None, step=1.0, key="sr_dis", on_change=reset_page,
                               help="Items whose judges' scores (highest minus lowest) differ by at least this")

    a1, a2, a3, a4 = st.columns(4)  # what the judged answer is (lib.text_features)
    ja_max = a1.number_input("Japanese share at most", 0.0, 1.0, value=None, step=0.1, key="sr_jamax", on_change=reset_page,
                             help="Share of Japanese characters in the answer (visible text, <think> removed). "
                                  "Questions and references are no model's answer: they drop out.")
    ja_min = a2.number_input("Japanese share at least", 0.0, 1.0, value=None, step=0.1, key="sr_jamin", on_change=reset_page)
    YES_NO = {"any": None, "yes": True, "no": False}
    for key in ("sr_code", "sr_think"):
        if st.session_state.get(key) not in YES_NO:
            st.session_state[key] = "any"
    has_code = YES_NO[a3.selectbox("Code block", list(YES_NO), key="sr_code", on_change=reset_page)]
    has_think = YES_NO[a4.selectbox("<think> reasoning", list(YES_NO), key="sr_think", on_change=reset_page)]

query = S.SearchQuery(text=text or "", fields=tuple(fields) or S.FIELDS, regex=bool(regex), bench=bench,
                      harness=harness, judges=tuple(judges), model=model, category=category,
                      turn=int(turn) if turn else None, score_min=score_min, score_max=score_max,
                      parse_status=parse, flags=tuple(flags), disagree_min=disagree, japanese_min=ja_min,
                      japanese_max=ja_max, has_code=has_code, has_think=has_think)

if not text and not (bench or harness or judges or model or category or turn or parse or flags
                     or score_min is not None or score_max is not None or disagree is not None
                     or ja_min is not None or ja_max is not None or has_code is not None or has_think is not None):
    st.info("Type something to find, or set a filter.")
    publish_to_url("sr", {})
    st.stop()

def session_gone():
    """A callable for ``S.stop_when``: true once this browser session has ended (the tab closed), so its search
    is interrupted instead of running on for nobody."""
    ctx = get_script_run_ctx()
    if ctx is None or not Runtime.exists():
        return lambda: False
    runtime, session = Runtime.instance(), ctx.session_id
    return lambda: not runtime.is_active_session(session)


stop = session_gone()


def run(fn, **kwargs):
    """A cached search query, stopped when this tab closes; a bad pattern, one too long or a search past its time
    limit is said and stops the page."""
    try:
        with S.stop_when(stop):
            return cached_query(fn, version, q=query, **kwargs)
    except JudgeLensError as exc:
        show_error(exc)
        st.stop()


# The page's rows first (one more than a page: is there a next one?). Counting every match reads every text of the
# chosen fields, seconds at a million judgments while a page of a common word takes a fraction: the counts come from
# the rows when the first page holds them all, and otherwise only when asked for (the toggle below).
# Each page read tells how many matches some fields hold (those it read to their end); kept per data version in
# this session, the next page, or the same text with more filters, skips them (S.carried_counts) instead of reading
# every answer again for a word no answer holds.
seen = st.session_state.get("_sr_seen")
if not seen or seen[0] != version:
    seen = st.session_state["_sr_seen"] = (version, [])


def remember(counts: dict[str, int]) -> None:
    """This query's counts, with what was known of it before, first in this session's last 20 searches."""
    before = next((c for q, c in seen[1] if q == query), {})
    seen[1][:] = [(query, {**before, **counts}), *[e for e in seen[1] if e[0] != query]][:20]


def read_page(number: int):
    found = run(S.search_page, limit=PAGE_SIZE + 1, offset=(number - 1) * PAGE_SIZE,
                _known=S.carried_counts(query, seen[1]))
    remember(found.counts)
    return found.rows


page = st.session_state.get("sr_page")
page = page if isinstance(page, int) and page >= 1 else 1
count_all = bool(st.session_state.get("sr_count"))
raw = read_page(page)
by_field = None
if count_all or (page > 1 and raw.empty):  # asked for, or a page past the end (a link): how many there are
    by_field = run(S.count_by_field)
    remember({f: by_field.get(f, 0) for f in query.fields})
    last = max(1, -(-sum(by_field.values()) // PAGE_SIZE))
    if page > last:
        page = last
        raw = read_page(page)
elif page == 1 and len(raw) <= PAGE_SIZE:  # every match is on this page: its rows are the counts
    by_field = {f: int(n) for f, n in raw["field"].value_counts().items()}
st.session_state["sr_page"] = page
more = len(raw) > PAGE_SIZE
raw = raw.iloc[:PAGE_SIZE]
offset = (page - 1) * PAGE_SIZE
total = sum(by_field.values()) if by_field is not None else None if more else offset + len(raw)
pages = None if total is None else max(1, -(-total // PAGE_SIZE))

if total is None:
    st.subheader(f"More than {offset + PAGE_SIZE:,} matching records")
else:
    st.subheader(f"{total:,} matching record(s)")
caption = " — a record is one question turn, answer turn, reference turn, rationale or judge prompt."
if by_field is not None:
    st.caption(" · ".join(f"{f}: {by_field.get(f, 0):,}" for f in S.FIELDS if f in query.fields) + caption)
else:
    st.caption("Counted by field on request: counting every match reads every text of the fields searched "
               "(seconds on a million judgments)." + caption)
st.toggle("Count every match, by field", key="sr_count",
          help="Off: the count comes from the results when they fit on one page, else the page says how many there "
               "are at least. On: every search counts its matches in each field (slower on a large store).")
if total != 0:
    p1, p2 = st.columns([1, 4])
    page = p1.number_input(f"Page (of {pages:,})" if pages else f"Page (of {page + 1:,}+)", 1, pages, key="sr_page")
    results = group_samples(raw)  # Swallow's identical samples of one answer: one row with a count
    hit = {"hit": text, **({"hit_re": "1"} if regex else {})} if text else {}
    results.insert(0, "open", [
        item_view.link(_params) for _params in (
            {**item_view.link_params(r.bench, r.question_id, r.turn, r.model,
                                     [r.judge] if r.judge else None, harness=r.harness or H.DEFAULT.name),
             **({"sample": str(int(r.sample))} if r.sample == r.sample and r.sample not in (None, 0) else {}),
             **hit, "hit_in": r.field}
            if r.model else {"bench": r.bench, "q": str(r.question_id), "turn": str(int(r.turn)), **hit,
                             "hit_in": r.field}
            for r in results.itertuples())])
    grouped = len(raw) - len(results)
    p2.caption("The hit in its context comes first, between « and ». Click a row to open its item (the hit marked "
               "there too); the open column opens it in a new tab. Question and reference rows open the item with "
               "the first model." + (f" {grouped:,} identical Swallow sample(s) on this page are folded into their "
                                     "answer's row (samples = how many)." if grouped else ""))
    order = ["open", "snippet", "field", "bench", "question_id", "turn", "model", "judge", "samples", "score"]
    shown = results[[c for c in order if c in results] + [c for c in results if c not in order + ["harness", "sample"]]]
    event = readable_dataframe(shown, hide_index=True, width="stretch", on_select="rerun",
                               selection_mode="single-row", key="sr_table",
                               column_config={"open": st.column_config.LinkColumn("open", display_text="open ↗",
                                                                                  width="small"),
                                              "snippet": st.column_config.TextColumn("hit in context", width=640),
                                              "score": st.column_config.NumberColumn(format="%.1f")})
    d1, d2 = st.columns(2)
    d1.download_button("This page as CSV", lambda: csv_text(results.drop(columns=["open"])).encode(),
                       "search_page.csv", "text/csv", on_click="ignore", icon=":material/download:")
    d2.download_button("All results as CSV (up to 10,000)",
                       data=lambda: csv_text(S.search(store, query, limit=10_000)).encode(),
                       file_name="search.csv", mime="text/csv", on_click="ignore", icon=":material/download:")
    rows = event.selection.rows if event else []
    if rows:
        r = results.iloc[rows[0]]
        params = {"bench": r["bench"], "q": str(r["question_id"]), "turn": str(int(r["turn"]))}
        if r["model"]:
            params = item_view.link_params(r["bench"], r["question_id"], r["turn"], r["model"],
                                           [r["judge"]] if r["judge"] else None, harness=r["harness"] or H.DEFAULT.name)
        params.update(hit, hit_in=r["field"])
        st.switch_page("app_pages/item_view.py", query_params=params)
else:
    page = 1

url = {"q": text or "", "in": "" if set(fields) == set(S.FIELDS) else ",".join(fields), "re": "1" if regex else "", "bench": bench or "",
       "harness": harness or "", "judge": ",".join(judges), "model": model or "", "cat": category or "",
       "turn": turn or "", "smin": "" if score_min is None else f"{score_min:g}",
       "smax": "" if score_max is None else f"{score_max:g}", "parse": parse or "", "flag": ",".join(flags),
       "dis": "" if disagree is None else f"{disagree:g}", "jamax": "" if ja_max is None else f"{ja_max:g}",
       "jamin": "" if ja_min is None else f"{ja_min:g}", "page": str(page) if page > 1 else ""}
publish_to_url("sr", {k: v for k, v in url.items() if v})
