"""Output parsers: every family's verdict format, and failures recorded as such (never clamped)."""

import pytest

from lib.judging.sandbox import RENDER_TIMEOUT_S
from lib.judging.parsers import ParserSpecError, check_spec, mode_of, parse, to_ten_scale

FC = {"kind": "fastchat_single"}


@pytest.mark.parametrize("text, status, method, value", [
    ("Good answer. Rating: [[8]]", "ok", "double_bracket", 8.0),
    ("Rating: [[8.5]]", "ok", "double_bracket", 8.5),
    ("Rating: [[7.]]", "ok", "double_bracket", 7.0),
    ("Rating: [9]", "ok", "single_bracket_fallback", 9.0),
    # FastChat's backup pattern takes any [N], also a list marker, when no [[N]] exists (its quirk, kept)
    ("[1] first point\n[2] second point", "ok", "single_bracket_fallback", 1.0),
    ("[1] first point ... Rating: [[7]]", "ok", "double_bracket", 7.0),
    ("Rating: [[3]] ... on reflection [[9]]", "ok", "double_bracket", 3.0),  # first match wins, as FastChat
    ("Rating: [[11]]", "out_of_range", "double_bracket", 11.0),
    ("Rating: [[0]]", "out_of_range", "double_bracket", 0.0),
    ("I cannot rate this.", "not_parsed", "none", None),
    ("$ERROR$", "not_parsed", "none", None),
    ("", "not_parsed", "none", None),
])
def test_fastchat_single(text, status, method, value):
    r = parse(text, FC)
    assert (r.status, r.method, r.value) == (status, method, value)
    assert r.score == (value if status == "ok" else None)  # never clamped: out of range has no score


def test_none_and_take_last():
    assert parse(None, FC).status == "not_parsed"
    assert parse("Rating: [[3]] ... [[9]]", {"kind": "fastchat_single", "take": "last"}).score == 9


@pytest.mark.parametrize("spec, text, status, value", [
    ({"kind": "rating_double_bracket"}, "Explanation. Rating: [[6]]", "ok", 6),
    ({"kind": "rating_double_bracket"}, "Explanation. [[6]]", "not_parsed", None),
    ({"kind": "score_double_bracket"}, "Score: [[4]]", "ok", 4),
    ({"kind": "score_double_bracket"}, "score:[[10]]", "ok", 10),
    ({"kind": "score_colon", "scale": [1, 5]}, "The pred matches.\nScore: 5", "ok", 5),
    ({"kind": "score_colon", "scale": [1, 5]}, "**Score:** 4", "ok", 4),
    ({"kind": "score_colon", "scale": [1, 5]}, "Score：3", "ok", 3),
    ({"kind": "score_colon", "scale": [1, 5]}, "Score: 7", "out_of_range", 7),
    ({"kind": "score_colon", "scale": [1, 5]}, "Score: -1", "out_of_range", -1),
    ({"kind": "score_colon", "scale": [1, 5]}, "Rating: [[4]]", "not_parsed", None),
])
def test_labelled_scores(spec, text, status, value):
    r = parse(text, spec)
    assert r.status == status
    assert r.value == (None if value is None else float(value))


@pytest.mark.parametrize("text, status, method, value", [
    ("回答は正確です。評価：[[8]]", "ok", "ja_label_double_bracket", 8),
    ("評価: [[6.5]]", "ok", "ja_label_double_bracket", 6.5),
    ("総合的に見て [[7]] とします", "ok", "double_bracket", 7),
    ("評価：[[８]]", "ok", "ja_label_double_bracket_fullwidth", 8),
    ("Rating: [[９]]", "ok", "double_bracket_fullwidth", 9),
    ("評価：[[12]]", "out_of_range", "ja_label_double_bracket", 12),
    ("評価できません", "not_parsed", "none", None),
])
def test_japanese_rating(text, status, method, value):
    r = parse(text, {"kind": "ja_rating"})
    assert (r.status, r.method) == (status, method)
    assert r.value == (None if value is None else float(value))
    if "fullwidth" in method:
        assert "full-width" in r.note


@pytest.mark.parametrize("text, status, verdict, note", [
    ("Assistant A is better. [[A]]", "ok", "A", False),
    ("[[B]]", "ok", "B", False),
    ("Both equally good: [[C]]", "ok", "tie", False),
    ("Not [[B]] but rather [[A]]", "ok", "A", True),  # FastChat checks A first
    ("I prefer A.", "not_parsed", None, False),
])
def test_pairwise_abc(text, status, verdict, note):
    r = parse(text, {"kind": "pairwise_abc"})
    assert (r.status, r.verdict, r.note is not None) == (status, verdict, note)
    assert mode_of({"kind": "pairwise_abc"}) == "pairwise"


@pytest.mark.parametrize("text, status, verdict, label", [
    ("My final verdict is [[A>>B]]", "ok", "A", "A>>B"),
    ("[[A>B]]", "ok", "A", "A>B"),
    ("[[A=B]]", "ok", "tie", "A=B"),
    ("[[B>A]]", "ok", "B", "B>A"),
    ("[[B>>A]]", "ok", "B", "B>>A"),
    ("[[B<A]]", "ok", "A", "A>B"),
    ("[[A>B]] or maybe [[B>A]]", "not_parsed", None, None),   # Arena-Hard: conflicting labels = no verdict
    ("[[A>B]] ... [[A>B]]", "ok", "A", "A>B"),
    ("[[A>>>B]]", "out_of_range", None, "A>>>B"),
    ("A is better", "not_parsed", None, None),
])
def test_pairwise_five_levels(text, status, verdict, label):
    r = parse(text, {"kind": "pairwise_five"})
    assert (r.status, r.verdict, r.label) == (status, verdict, label)


def test_two_score_pairwise():
    assert parse("[[8, 7.95]]", {"kind": "fastchat_two_score"}).verdict == "tie"
    assert parse("[[3,9]]", {"kind": "fastchat_two_score"}).verdict == "B"
    assert parse("[9, 2]", {"kind": "fastchat_two_score"}).verdict == "A"
    assert parse("[[11, 2]]", {"kind": "fastchat_two_score"}).status == "out_of_range"


def test_user_regex_number_and_verdict():
    spec = {"kind": "regex", "pattern": r"Final grade: (\d+)/10", "scale": [1, 10]}
    r = parse("Reasoning... Final grade: 7/10", spec)
    assert (r.status, r.method, r.score) == ("ok", "regex", 7)
    assert parse("Final grade: 12/10", spec).status == "out_of_range"
    assert parse("no grade", spec).status == "not_parsed"
    vspec = {"kind": "regex", "pattern": r"Winner: (\w+)", "verdicts": {"first": "A", "second": "B", "neither": "tie"}}
    assert mode_of(vspec) == "pairwise"
    assert parse("Winner: second", vspec).verdict == "B"
    bad = parse("Winner: both", vspec)
    assert bad.status == "out_of_range" and "both" in bad.note


def test_user_regex_catastrophic_backtracking_is_stopped():
    # 2**40 steps of backtracking: only the worker's time limit ends this parse (the method says which limit)
    r = parse("a" * 40 + "!", {"kind": "regex", "pattern": r"^(a+)+$"})
    assert (r.status, r.method) == ("not_parsed", "regex_timeout")
    assert f"took longer than {RENDER_TIMEOUT_S:g} s" in r.note
    # the worker restarts: the next regex works
    assert parse("Score 4", {"kind": "regex", "pattern": r"Score (\d)"}).score == 4


@pytest.mark.parametrize("spec, message", [
    ({"kind": "nope"}, "Unknown parser kind"),
    ({"kind": "fastchat_single", "scale": [10, 1]}, "low < high"),
    ({"kind": "fastchat_single", "scale": "1-10"}, "scale must be"),
    ({"kind": "regex", "pattern": "("}, "does not compile"),
    ({"kind": "regex", "pattern": r"\d+"}, "capture group"),
    ({"kind": "regex", "pattern": "x" * 600 + "(a)"}, "limit"),
    ({"kind": "regex", "pattern": "(a)", "verdicts": {"a": "winner"}}, "verdicts maps"),
    ({"kind": "fastchat_single", "take": "middle"}, "take must be"),
])
def test_bad_specs_are_explained(spec, message):
    with pytest.raises(ParserSpecError, match=message):
        check_spec(spec)


def test_scale_mapping_to_common_scale():
    assert to_ten_scale(7, [1, 10]) == 7
    assert [to_ten_scale(v, [1, 5]) for v in (1, 3, 5)] == [1.0, 5.5, 10.0]
    assert to_ten_scale(1, [0, 1]) == 10.0


# FastChat's [[N]]-else-[N] chain has one home (lib.vocab.fastchat_rating): the parsers end in it and the flags ask
# it which pattern a re-judged rating came from, without importing lib.judging (a lower layer).
from hypothesis import given, settings, strategies as st  # noqa: E402

from lib import vocab  # noqa: E402
from lib.analysis.flags import used_fallback  # noqa: E402
from lib.judging.parsers import SINGLE_KINDS  # noqa: E402

_PIECES = st.sampled_from(["[[8]]", "[8]", "[3]", "[[１０]]", "[１]", "評価：[[7]]", "Rating: [[9]]", "Score: 4", "[",
                           "]", "[[", "text ", "\n", "[12]", "[[2.5]]", "7"])


def test_the_chain_kinds_are_single_answer_parsers():
    assert vocab.FASTCHAT_CHAIN_KINDS <= set(SINGLE_KINDS)


@settings(max_examples=300, deadline=None)
@given(pieces=st.lists(_PIECES, max_size=8), kind=st.sampled_from(SINGLE_KINDS), take=st.sampled_from(["first", "last"]))
def test_flags_and_parsers_agree_on_the_single_bracket_fallback(pieces, kind, take):
    text, spec = "".join(pieces), {"kind": kind, "take": take}
    assert used_fallback(text, spec) == (parse(text, spec).method.startswith("single_bracket_fallback"))


def test_fastchat_rating_first_and_last():
    assert vocab.fastchat_rating("a [2] b [[7]] c [[9]]")[1].group(0) == "[[7]]"
    assert vocab.fastchat_rating("a [2] b [[7]] c [[9]]", "last")[1].group(0) == "[[9]]"
    method, m = vocab.fastchat_rating("1. [3] then [5]")
    assert (method, m.group(1)) == ("single_bracket_fallback", "3")
    assert vocab.fastchat_rating("no rating") is None and vocab.fastchat_rating(None) is None
