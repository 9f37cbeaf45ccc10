"""The question the judge saw (issue 22): Stability's jp-stable has question.jsonl and question_full.jsonl for one
bench, with different texts for shared ids; pages must show what the judges' prompts hold, else FastChat's own
question.jsonl, whatever the import order. Constructed here: two question files and judgments whose prompts hold
question.jsonl's text (question 1) or a text neither file has any more (question 2, turn 1)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from lib.analysis import item_view, search
from lib.ingest.importer import ingest
from lib.store import Store, frame
from lib.vocab import question_seen

BENCH = "japanese_mt_bench"
QUESTION = [  # question.jsonl: what FastChat reads
    {"question_id": 1, "category": "humanities", "turns": ["ソクラテスは彼の時代の主流の考えにどのように挑戦しましたか？",
                                                           "現代に置き換えてください。"]},
    {"question_id": 2, "category": "writing", "turns": ["旅行ブログを書いてください。", "要約してください。"]},
]
FULL = [  # question_full.jsonl: q1 edited after judging, q2 the same, q3 only here
    {"question_id": 1, "category": "humanities", "turns": ["ソクラテスはどの手段を用い当時の一般常識へ反論しましたか。",
                                                           "現代に置き換えてください。"]},
    {"question_id": 2, "category": "writing", "turns": ["旅行ブログを書いてください。", "要約してください。"]},
    {"question_id": 3, "category": "stem", "turns": ["光合成とは？", "例を挙げて。"]},
]
SEEN_Q2 = "ハワイ旅行のブログ記事を書いてください。"  # what the judge saw for q2 turn 1: in neither file any more

SINGLE = ("[Instruction]\nPlease act as an impartial judge ...\n\n[Question]\n{q}\n\n"
          "[The Start of Assistant's Answer]\n{a}\n[The End of Assistant's Answer]")
MULTI = ("<|The Start of Assistant A's Conversation with User|>\n\n### User:\n{q1}\n\n### Assistant A:\n{a1}\n\n"
         "### User:\n{q2}\n\n### Assistant A:\n{a2}\n\n<|The End of Assistant A's Conversation with User|>")


def _judgments() -> list[dict]:
    out = []
    for qid, (q1, q2) in ((1, QUESTION[0]["turns"]), (2, (SEEN_Q2, QUESTION[1]["turns"][1]))):
        out.append({"question_id": qid, "model": "m", "judge": ["gpt-4", "single-v1"], "turn": 1, "score": 7,
                    "judgment": "Rating: [[7]]", "user_prompt": SINGLE.format(q=q1, a="答え")})
        out.append({"question_id": qid, "model": "m", "judge": ["gpt-4", "single-v1-multi-turn"], "turn": 2,
                    "score": 6, "judgment": "Rating: [[6]]",
                    "user_prompt": MULTI.format(q1=q1, a1="答え", q2=q2, a2="答え2")})
    return out


def _write(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def files(tmp_path) -> dict[str, Path]:
    root = tmp_path / "data" / BENCH
    return {"question": _write(root / "question.jsonl", QUESTION),
            "full": _write(root / "question_full.jsonl", FULL),
            "judgments": _write(root / "model_judgment" / "gpt-4_single.jsonl", _judgments())}


ORDERS = {"one import": [("question", "full", "judgments")],
          "full first": [("full",), ("question",), ("judgments",)],
          "question first": [("question",), ("full",), ("judgments",)],
          "judgments first, full last": [("judgments",), ("question",), ("full",)]}


@pytest.mark.parametrize("order", list(ORDERS))
def test_the_judges_question_whatever_the_import_order(order, files, tmp_path):
    notes = []
    with Store(tmp_path / "s.duckdb") as s:
        for group in ORDERS[order]:
            report = ingest(s, [files[k] for k in group])
            notes += [w for f in report.files for w in f.warnings if "disagree" in w]
        q1, q2, q3 = (item_view.question(s, BENCH, q) for q in ("1", "2", "3"))
        sets = frame(s, "SELECT coalesce(question_set, '(own)') AS qs, count(*) AS n FROM question_sets GROUP BY 1 ORDER BY 1", plain=True)
        hits = {text: search.count(s, search.SearchQuery(text=text, fields=("question",)))
                for text in (QUESTION[0]["turns"][0], FULL[0]["turns"][0])}
    assert q1["turns"] == QUESTION[0]["turns"] and q1["differs"] == [False, False]
    assert q2["turns"] == [SEEN_Q2, QUESTION[1]["turns"][1]]
    assert q2["file_turns"] == QUESTION[1]["turns"] and q2["differs"] == [True, False]
    assert q3["turns"] == FULL[2]["turns"] and q3["question_set"] == "question_full"  # kept as a named set
    assert sets.values.tolist() == [["(own)", 2], ["question_full", 3]]
    # the two files are named, with the number of ids whose text differs (q1 only): imported together each names
    # the other, imported apart the second names the first
    assert len(notes) == (2 if len(ORDERS[order]) == 1 else 1)
    assert all("disagree on 1 of 2 shared question id(s)" in n and "reads question.jsonl only" in n for n in notes)
    # Search finds the question the judge saw, not the edited file's text
    assert hits == {QUESTION[0]["turns"][0]: 1, FULL[0]["turns"][0]: 0}


def test_swallow_prompts_are_json_messages():
    system = "Please act as an impartial judge ..."
    prompt = json.dumps([{"role": "system", "content": system},
                         {"role": "user", "content": MULTI.format(q1="問1", a1="a", q2="問2", a2="b")}],
                        ensure_ascii=False)
    assert question_seen(prompt, 2) == ("問1", "問2")
    assert question_seen(SINGLE.format(q="問1\n\n続き", a="x"), 1) == ("問1\n\n続き", None)
    assert question_seen("[指示]\n…\n\n[質問]\n日本語の質問\n\n[アシスタントの回答の開始]\nx", 1) == ("日本語の質問", None)
    assert question_seen("no markers here", 1) == (None, None)


def test_items_cli_gives_the_judges_question_and_the_files(files, tmp_path, capsys):
    from lib import cli

    db = tmp_path / "s.duckdb"
    with Store(db) as s:
        ingest(s, [files["full"], files["question"], files["judgments"]])
    assert cli.main(["items", "--db", str(db), "--bench", BENCH, "--question-id", "2", "--format", "jsonl"]) == 0
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(i["turn"], i["question"], i["question_file_text"], i["question_differs"]) for i in got] == [
        (1, SEEN_Q2, QUESTION[1]["turns"][0], True), (2, QUESTION[1]["turns"][1], None, False)]
    assert [(j["judge"], j["harness"], j["score"], j["rationale"]) for j in got[0]["judges"]] == [
        ("gpt-4", "fastchat", 7.0, "Rating: [[7]]")]
    assert cli.main(["items", "--db", str(db), "--judge", "gpt-4", "--turn", "2", "--format", "csv"]) == 0
    header, *rows = capsys.readouterr().out.splitlines()
    assert header.split(",")[-2:] == ["score:gpt-4", "rationale:gpt-4"] and len(rows) == 2


def test_the_item_view_shows_the_judges_question_and_flags_the_file(files, tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from conftest import ROOT

    db = tmp_path / "app.duckdb"
    with Store(db) as s:
        ingest(s, [files["question"], files["full"], files["judgments"]])
    monkeypatch.setenv("JUDGELENS_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params.update({"bench": BENCH, "q": "2", "turn": "1", "model": "m"})
    at.run()
    at.switch_page("app_pages/item_view.py").run()
    assert not at.exception
    texts = [t.value for t in at.text]
    assert SEEN_Q2 in texts and QUESTION[1]["turns"][0] in texts   # what the judge saw, then the file's text
    assert any("The judges saw the text above" in w.value for w in at.warning)


def test_removing_the_judgments_gives_the_question_file_back(files, tmp_path):
    from lib.ingest.importer import remove_source

    with Store(tmp_path / "s.duckdb") as s:
        report = ingest(s, [files["question"], files["judgments"]])
        assert item_view.question(s, BENCH, "2")["turns"][0] == SEEN_Q2
        [judged] = [f.source_id for f in report.imported if f.kind == "single_judgments"]
        assert remove_source(s, judged)
        q2 = item_view.question(s, BENCH, "2")
        left = frame(s, "SELECT count(*) AS n FROM judge_prompt_questions", plain=True)["n"].tolist()
    assert q2["turns"] == QUESTION[1]["turns"] and q2["differs"] == [False, False] and left == [0]


def test_a_groups_question_is_read_from_its_first_models_prompt(tmp_path):
    """One judgment file, judge, prompt name and question turn give one prompt: the smallest prompt of the group's
    first model by name (only that model's prompts are read back at import). Here model "a" saw one question text
    and "b" another whose prompt is the smaller string: "a"'s text is the one counted."""
    seen_a, seen_b = "Bの質問ではありません。", "Aの質問"  # "Aの…" < "Bの…": b's prompt is the smaller one
    rows = [{"question_id": 1, "model": model, "judge": ["gpt-4", "single-v1"], "turn": 1, "score": 7,
             "judgment": "Rating: [[7]]", "user_prompt": SINGLE.format(q=q, a="答え")}
            for model, q in (("b", seen_b), ("a", seen_a))]
    path = _write(tmp_path / "data" / BENCH / "model_judgment" / "gpt-4_single.jsonl", rows)
    assert min(r["user_prompt"] for r in rows) == rows[0]["user_prompt"]  # b's: what min() over all would pick
    with Store(tmp_path / "s.duckdb") as store:
        ingest(store, [path])
        with store.read() as cur:
            assert cur.execute("SELECT question_id, turn, text, n_prompts FROM judge_questions").fetchall() == [
                ("1", 1, seen_a, 1)]


def test_a_group_whose_first_model_has_no_prompt_reads_the_next_models(tmp_path):
    """The first model is found without reading the prompts; a group whose first model by name has no prompt at all
    takes the first model that has one ("b" here, not "a"), as before, and a group with prompts everywhere is
    untouched (question 2: "a"'s prompt)."""
    seen_b, seen_c, seen_q2 = "Bの見た質問", "Cの見た質問", "二問目の質問"
    rows = [{"question_id": 1, "model": model, "judge": ["gpt-4", "single-v1"], "turn": 1, "score": 7,
             "judgment": "Rating: [[7]]", **({"user_prompt": SINGLE.format(q=q, a="答え")} if q else {})}
            for model, q in (("a", None), ("c", seen_c), ("b", seen_b))]
    rows += [{"question_id": 2, "model": model, "judge": ["gpt-4", "single-v1"], "turn": 1, "score": 7,
              "judgment": "Rating: [[7]]", "user_prompt": SINGLE.format(q=q, a="答え")}
             for model, q in (("a", seen_q2), ("b", "別の質問"))]
    path = _write(tmp_path / "data" / BENCH / "model_judgment" / "gpt-4_single.jsonl", rows)
    with Store(tmp_path / "s.duckdb") as store:
        report = ingest(store, [path])
        assert [f.fast for f in report.imported] == [True]
        with store.read() as cur:
            assert cur.execute("SELECT count(*) FROM single_judgments WHERE judge_prompt IS NULL").fetchone() == (1,)
            assert cur.execute("SELECT question_id, turn, text, n_prompts FROM judge_questions ORDER BY ALL"
                               ).fetchall() == [("1", 1, seen_b, 1), ("2", 1, seen_q2, 1)]
