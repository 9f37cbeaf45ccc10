"""Character diffs (Japanese has no spaces) and the escaped HTML the pages hand to st.html."""
from lib.render import textdiff
from lib.render.safe_text import md_escape
from lib.render.textdiff import char_diff, diff_html, diff_stats, highlight_html


def rebuild(ops, side):
    keep = {"equal", "delete"} if side == "left" else {"equal", "insert"}
    return "".join(text for op, text in ops if op in keep)


def test_diff_is_character_level_and_lossless_on_japanese():
    a, b = "三角形の面積は3です。\n次の行。", "三角形の面積は6です。\n次の行。"
    ops = char_diff(a, b)
    assert rebuild(ops, "left") == a and rebuild(ops, "right") == b
    assert ("delete", "3") in ops and ("insert", "6") in ops        # one character, not the whole line
    stats = diff_stats(ops)
    assert stats["deleted"] == stats["inserted"] == 1 and 0.9 < stats["similarity"] < 1


class CountingMatcher(textdiff.SequenceMatcher):
    """difflib's matcher, recording (kind, total size) of the sequences it is asked to align in ``calls``."""
    calls: list[tuple[str, int]]

    def __init__(self, isjunk=None, a="", b="", autojunk=True):
        kind = "chars" if isinstance(a, str) else "lines"
        CountingMatcher.calls.append((kind, len(a) + len(b)))
        super().__init__(isjunk, a, b, autojunk)


def test_long_answers_diff_fast_and_stay_lossless(monkeypatch):
    # Fast because of how the work is cut, asserted on the work itself: lines are aligned first, characters
    # are compared only inside the changed lines, and never in a changed block over MAX_CHAR_BLOCK characters.
    monkeypatch.setattr(textdiff, "SequenceMatcher", CountingMatcher)
    CountingMatcher.calls = []
    a = "\n".join(f"行{i}: これは回答の文章です。" * 3 for i in range(300))
    b = a.replace("行150:", "行一五〇:").replace("文章です。", "文です。", 5)
    ops = char_diff(a, b)
    assert rebuild(ops, "left") == a and rebuild(ops, "right") == b
    lines = [n for kind, n in CountingMatcher.calls if kind == "lines"]
    chars = [n for kind, n in CountingMatcher.calls if kind == "chars"]
    assert lines == [600]                                    # one alignment of 300 + 300 lines
    assert chars and sum(chars) < 500, chars                # only the 3 changed lines (~50 characters each side)
    CountingMatcher.calls = []
    wholly_new = "\n".join("全部違う文章です。" * 40 for _ in range(20))
    ops = char_diff(a, wholly_new)                          # one changed block of ~24,000 characters
    assert rebuild(ops, "left") == a and rebuild(ops, "right") == wholly_new
    assert [kind for kind, _ in CountingMatcher.calls] == ["lines"]   # too big to compare character by character
    assert textdiff.MAX_CHAR_BLOCK < len(a) + len(wholly_new)


def test_diff_html_escapes_every_character_of_the_inputs():
    import re

    html = diff_html(char_diff("<script>alert(1)</script>", '<img src=x onerror="alert(2)">'))
    tags = re.findall(r"<[^>]*>", html)
    assert tags and all(re.fullmatch(r'</?(div|span)( (class|style)="[^"<>]*")*>', t) for t in tags), tags
    same = diff_html(char_diff("<script>x</script>", "<script>x</script>"))
    assert "&lt;script&gt;x&lt;/script&gt;" in same


def test_highlight_marks_spans_and_escapes():
    text = "<b>copied from the reference</b> and mine"
    html = highlight_html(text, [(3, 28)], [(37, 41)])
    assert "<b>" not in html and "&lt;b&gt;" in html
    assert html.count("<span") == 2 and ">copied from the reference</span>" in html


def test_md_escape_neutralises_markdown_images_links_and_directives():
    out = md_escape("![x](http://127.0.0.1:9/p.png) :red[hi] $x$ **b**")
    for raw in ("![", "](", ":red[", "$x$", "**", "http://"):
        assert raw not in out
    assert out.replace("\\", "").replace("\u2060", "") == "![x](http://127.0.0.1:9/p.png) :red[hi] $x$ **b**"


def test_cards_html_escapes_every_text_and_keeps_the_order():
    from lib.render.safe_text import cards_html

    out = cards_html([{"title": "judge_prompt", "note": "differs: yes", "sides": [("A", "<img src=x onerror=alert(1)>"),
                                                                                    ("B", "line 1\nline 2 & more")],
                       "footer": "![x](http://evil/)"},
                      {"title": "samples", "note": "differs: yes", "sides": [("A", "1"), ("B", "5")], "footer": None}])
    assert "<img" not in out and "&lt;img src=x onerror=alert(1)&gt;" in out
    assert "line 1 line 2 &amp; more" in out  # one line per value, as md_escape shows it
    assert "![x](http://evil/)" in out  # HTML is not Markdown: shown as written
    assert out.index("<b>judge_prompt</b> · differs: yes") < out.index("<b>samples</b> · differs: yes")
    assert out.count('opacity:0.6;overflow-wrap') == 1  # the second card has no footer
