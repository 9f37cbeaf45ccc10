"""Property: any text survives JSONL -> ingest -> query unchanged, \\uXXXX-escaped or raw UTF-8."""
from __future__ import annotations

import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lib.analysis import queries
from lib.ingest.formats import fastchat
from lib.ingest.formats.jsonl import WHITESPACE, parse_file
from lib.ingest.importer import ingest
from lib.store import Store

# lone surrogates cannot be written as UTF-8 at all; everything else is fair game
ANY_CHAR = st.characters(blacklist_categories=("Cs",))
SPECIAL = st.sampled_from(["日本語の回答です。", "評価：[[7]]", "😀🎉👩‍👩‍👧", "{{ question }}", "{% raw %}", "<script>alert(1)</script>",
                           "$ERROR$", "0", "\\u00e9", "\u2028\u2029", "\x00", "line\nbreak\r\n", "\ufeffBOM inside", "'; DROP"])
TEXT = st.one_of(st.text(alphabet=ANY_CHAR, max_size=60), SPECIAL,
                 st.tuples(SPECIAL, st.text(alphabet=ANY_CHAR, max_size=20), SPECIAL).map("".join))
NAME = TEXT.filter(lambda s: s.strip(WHITESPACE) != "")  # a blank model name is refused on purpose


def write(path: Path, records: list[dict], ensure_ascii: bool) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline="") as fh:
        for rec in records:
            fh.write(json.dumps(rec, ensure_ascii=ensure_ascii) + "\n")
    return path


@settings(max_examples=30, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(judgment=TEXT, user_prompt=TEXT, model=NAME, answer=TEXT)
def test_text_round_trips(judgment, user_prompt, model, answer):
    records = [{"question_id": 1, "model": model, "judge": ["gpt-4", "single-v1"], "user_prompt": user_prompt,
                "judgment": judgment, "score": 6, "turn": 1, "tstamp": 1.5}]
    answers = [{"question_id": 1, "model_id": model, "choices": [{"index": 0, "turns": [answer]}]}]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for bench, ensure_ascii in (("ascii", True), ("utf8", False)):
            write(root / "data" / bench / "model_judgment" / "gpt-4_single.jsonl", records, ensure_ascii)
            write(root / "data" / bench / "model_answer" / "m.jsonl", answers, ensure_ascii)
        # the line-by-line reader (the fast path's reference) keeps it too
        for bench in ("ascii", "utf8"):
            path = root / "data" / bench / "model_judgment" / "gpt-4_single.jsonl"
            parsed = parse_file(path, path.name, lambda o: fastchat.single_judgment_rows(o, bench))
            assert parsed.problems == []
            assert [(r[4], r[11], r[12]) for r in parsed.rows] == [(model, judgment, user_prompt)]
        with Store(":memory:") as store:  # fresh per example; no disk syncs, so the property stays fast
            report = ingest(store, [root / "data"])
            assert len(report.imported) == 4
            with store.read() as cur:
                judged = cur.execute("SELECT bench, model, rationale, judge_prompt, score FROM single_judgments "
                                     "ORDER BY bench").fetchall()
                answered = cur.execute("SELECT bench, model, text FROM answers_view ORDER BY bench").fetchall()
            score = None if judgment.strip(WHITESPACE) == "$ERROR$" else 6.0  # an API error has no score
            assert judged == [("ascii", model, judgment, user_prompt, score),
                              ("utf8", model, judgment, user_prompt, score)]
            assert answered == [("ascii", model, answer), ("utf8", model, answer)]
            by_model = queries.scores(store, ["bench", "model"])
            expected = [["ascii", model, 6.0, 1], ["utf8", model, 6.0, 1]] if score else []
            assert by_model[["bench", "model", "mean", "n"]].values.tolist() == expected
