"""The analyst's verdicts: history and latest, the human judge in item_scores and agreement, review queue,
export/import round trip, the CLI, MT-Bench pairwise human judgments with compute_agreement.py's numbers, and the
verdict panel and Review page under AppTest."""
from __future__ import annotations

import json
import math
from datetime import datetime

import pandas as pd
import pytest
from pandas import testing as pd_testing

from lib.analysis import agreement
from lib.analysis.queries import judges_by_harness
from lib.cli.main import main as cli_main
from lib.ingest.importer import ingest, remove_source
from lib.judging import human
from lib.store import Store

BENCH = "ja_mt_bench"
M8B = "shisa-ai/shisa-v2-llama3.1-8b"
LLM_JUDGES = ["gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14", "gpt-4o"]


def item_score(store, judge, qid, turn, model):
    with store.read() as cur:
        row = cur.execute("SELECT score FROM item_scores WHERE judge = ? AND bench = ? AND question_id = ? AND turn = ? "
                          "AND model = ?", [judge, BENCH, qid, turn, model]).fetchone()
    return row[0] if row else None


def test_edits_add_rows_and_the_latest_counts(sample_store):
    t0 = datetime(2026, 1, 1, 12, 0, 0)
    human.record(sample_store, author="ana", bench=BENCH, question_id="1", turn=1, model=M8B, score=3,
                 label="both wrong", created_at=t0)
    human.record(sample_store, author="ana", bench=BENCH, question_id="1", turn=1, model=M8B, score=8,
                 note="on second reading", created_at=t0.replace(minute=5))
    human.record(sample_store, author="bo", bench=BENCH, question_id="1", turn=1, model=M8B, score=6, created_at=t0)
    hist = human.history(sample_store, question_id="1")
    assert len(hist) == 3
    ana = hist[hist["author"] == "ana"]
    assert ana["score"].tolist() == [8.0, 3.0] and ana["latest"].tolist() == [True, False]
    assert item_score(sample_store, "human:ana", "1", 1, M8B) == 8.0
    assert item_score(sample_store, "human:bo", "1", 1, M8B) == 6.0
    # the LLM judges are untouched
    assert item_score(sample_store, "gpt-4o", "1", 1, M8B) is not None
    latest = human.latest(sample_store)
    assert sorted(zip(latest["author"], latest["score"])) == [("ana", 8.0), ("bo", 6.0)]


def test_bad_verdicts_are_refused(sample_store):
    from lib.errors import UsageError

    for kw in ({"author": "", "score": 5}, {"author": "ana", "score": 11}, {"author": "ana"}):
        with pytest.raises(UsageError):
            human.record(sample_store, bench=BENCH, question_id="1", turn=1, model=M8B, **kw)
    assert human.history(sample_store).empty


def test_human_judge_appears_in_agreement_next_to_the_llm_judges(sample_store):
    queue = human.review_queue(sample_store, "ana", bench=BENCH, n=5)
    assert len(queue) == 5 and not queue["decided"].any()
    given = {}
    for i, r in enumerate(queue.itertuples()):
        score = [2, 9, 4, 10, 5][i]
        human.record(sample_store, author="ana", bench=BENCH, question_id=r.question_id, turn=r.turn, model=r.model,
                     score=score)
        given[(r.question_id, int(r.turn), r.model)] = score
        if i == 2:
            assert human.next_undecided(human.review_queue(sample_store, "ana", bench=BENCH, n=5)) == \
                tuple(list(zip(queue["question_id"], queue["turn"], queue["model"]))[3])
    assert human.review_queue(sample_store, "ana", bench=BENCH, n=5)["decided"].all()
    assert "human:ana" in agreement.known_judges(sample_store)
    judges = LLM_JUDGES + ["human:ana"]
    table = agreement.agreement(sample_store, judges, bench=BENCH)
    row = table[(table["judge_a"] == "gpt-4o") & (table["judge_b"] == "human:ana")].iloc[0]
    gpt4o = {k: item_score(sample_store, "gpt-4o", *k) for k in given}
    assert row["n"] == 5
    assert row["mae"] == pytest.approx(sum(abs(gpt4o[k] - given[k]) for k in given) / 5)
    assert row["mean_diff"] == pytest.approx(sum(gpt4o[k] - given[k] for k in given) / 5)
    loaded = judges_by_harness(sample_store)
    assert loaded[loaded["judge"] == "human:ana"]["judgments"].sum() == 5
    worst = agreement.disagreements(sample_store, judges, bench=BENCH, limit=5)
    assert "human:ana" in worst.columns


def test_export_import_round_trip_into_a_second_database(sample_store, tmp_path):
    for i, (score, label) in enumerate([(7, None), (None, "reference wrong"), (3, "language rule misapplied")]):
        human.record(sample_store, author="ana", bench=BENCH, question_id=str(i + 1), turn=1, model=M8B,
                     score=score, label=label, note="日本語のメモ" if i == 2 else None)
    human.record(sample_store, author="bo", bench=BENCH, question_id="1", turn=2, model=M8B, score=5)
    out = tmp_path / "verdicts.jsonl"
    first = sample_store.path
    sample_store.close()
    assert cli_main(["verdicts", "export", "--db", str(first), "--out", str(out)]) == 0
    with Store(tmp_path / "second.duckdb") as second:
        report = ingest(second, [out])
        assert [(f.kind, f.status, f.rows) for f in report.files] == [("human_verdicts", "imported", 4)]
        again = tmp_path / "again.jsonl"
        human.export_jsonl(second, again)
        assert again.read_bytes() == out.read_bytes()
        # the same file again changes nothing; a copy with other bytes adds no duplicates
        assert [f.status for f in ingest(second, [out]).files] == ["unchanged"]
        copy = tmp_path / "copy.jsonl"
        copy.write_text(out.read_text(encoding="utf-8") + "\n", encoding="utf-8")
        assert [(f.status, f.rows) for f in ingest(second, [copy]).files] == [("imported", 0)]
        assert len(human.history(second)) == 4
        assert item_score(second, "human:ana", "1", 1, M8B) == 7.0
        # each verdict belongs to the file that first brought it: removing that file removes them and their scores
        with second.read() as cur:
            sid = cur.execute("SELECT source_id FROM sources WHERE file_name = 'verdicts.jsonl'").fetchone()[0]
        remove_source(second, sid)
        assert human.history(second).empty and item_score(second, "human:ana", "1", 1, M8B) is None
    with Store(first) as again_first:
        assert human.export_jsonl(again_first, tmp_path / "bo.jsonl", author="bo") == 1
    with Store(tmp_path / "third.duckdb") as third:  # only one author
        ingest(third, [tmp_path / "bo.jsonl"])
        assert human.authors(third) == ["bo"]


def test_cli_verdict(sample_store, capsys):
    db = str(sample_store.path)
    sample_store.close()
    assert cli_main(["verdict", "--db", db, "--bench", BENCH, "--question", "3", "--turn", "2", "--model", M8B,
                     "--score", "4", "--label", "judge A right", "--note", "n", "--author", "ana"]) == 0
    assert "human:ana" in capsys.readouterr().out
    assert cli_main(["verdict", "--db", db, "--bench", BENCH, "--question", "3", "--turn", "2", "--model", M8B,
                     "--score", "0", "--author", "ana"]) == 2
    assert cli_main(["verdicts", "list", "--db", db, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["author"], r["score"], r["label"]) for r in rows] == [("ana", 4.0, "judge A right")]


# ----------------------------------------------------------------------------------------------
# MT-Bench pairwise human judgments

def conv(q, a):
    return [{"role": "user", "content": q}, {"role": "assistant", "content": a}]


def vote(qid, a, b, winner, judge, turn):
    return {"question_id": qid, "model_a": a, "model_b": b, "winner": winner, "judge": judge, "turn": turn,
            "conversation_a": conv("q", "answer a"), "conversation_b": conv("q", "answer b")}


VOTES = [
    # question 81: alpaca-13b vs gpt-3.5-turbo (already in alphabetical order)
    vote(81, "alpaca-13b", "gpt-3.5-turbo", "model_b", "expert_0", 1),
    vote(81, "alpaca-13b", "gpt-3.5-turbo", "model_b", "expert_1", 1),
    vote(81, "alpaca-13b", "gpt-3.5-turbo", "tie", "author_0", 1),
    vote(81, "alpaca-13b", "gpt-3.5-turbo", "model_b", ["gpt-4", "pair-v2"], 1),
    vote(81, "alpaca-13b", "gpt-3.5-turbo", "model_a", "expert_0", 2),
    vote(81, "alpaca-13b", "gpt-3.5-turbo", "tie", "expert_1", 2),
    vote(81, "alpaca-13b", "gpt-3.5-turbo", "model_a", ["gpt-4", "pair-v2"], 2),
    # question 82: gpt-4 shown as A, claude-v1 as B: keyed (claude-v1, gpt-4), so winners flip
    vote(82, "gpt-4", "claude-v1", "model_a", "expert_0", 1),
    vote(82, "gpt-4", "claude-v1", "tie (bothbad)", "expert_2", 1),
    vote(82, "claude-v1", "gpt-4", "model_b", ["gpt-4", "pair-v2"], 1),
]

# By hand, as compute_agreement.py counts:
# gpt4-pair vs human, turn 1: q81 gpt4 B vs humans [B, B] -> 2/2; q82 gpt4 (gpt-4) vs humans [gpt-4, tie] -> 1/2
#   with ties 3/4; without: the tie vote is dropped -> 3/3
# gpt4-pair vs human, turn 2: q81 gpt4 A vs [A, tie] -> 1/2; without ties 1/1
# human vs human, turn 1: q81 (B, B) agree; q82 (gpt-4, tie) disagree -> 1/2; without ties 1/1
# human vs human, turn 2: q81 (A, tie) -> 0/1; without ties 0/0
# author vs human, turn 1: q81 author tie vs [B, B] -> 0/2; without ties 0/0. Turn 2: no author votes -> 0/0
EXPECTED = {
    ("gpt4-pair", "human", 1, "with ties"): (3, 4), ("gpt4-pair", "human", 1, "without ties"): (3, 3),
    ("gpt4-pair", "human", 2, "with ties"): (1, 2), ("gpt4-pair", "human", 2, "without ties"): (1, 1),
    ("human", "human", 1, "with ties"): (1, 2), ("human", "human", 1, "without ties"): (1, 1),
    ("human", "human", 2, "with ties"): (0, 1), ("human", "human", 2, "without ties"): (0, 0),
    ("author", "human", 1, "with ties"): (0, 2), ("author", "human", 1, "without ties"): (0, 0),
    ("author", "human", 2, "with ties"): (0, 0), ("author", "human", 2, "without ties"): (0, 0),
}


@pytest.mark.parametrize("as_array", [False, True])
def test_mt_bench_human_judgments_import_and_agreement(store, tmp_path, as_array):
    path = tmp_path / "mt_bench" / "model_judgment" / ("human_judgments.json" if as_array else "human_judgments.jsonl")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(VOTES) if as_array else "".join(json.dumps(v) + "\n" for v in VOTES), encoding="utf-8")
    report = ingest(store, [tmp_path / "mt_bench"] if not as_array else [path])
    assert [(f.kind, f.status, f.rows) for f in report.files] == [("human_pair_votes", "imported", len(VOTES))]
    votes = human.pair_votes(store)
    assert sorted(votes["judge"].unique()) == ["gpt-4:pair-v2", "human:author_0", "human:expert_0", "human:expert_1",
                                                "human:expert_2"]
    table = human.pair_agreement(store)
    got = {(r.judge_1, r.judge_2, r.turn, r.ties): (r.agree, r.total) for r in table.itertuples()}
    assert got == EXPECTED
    ratio = table.set_index(["judge_1", "judge_2", "turn", "ties"])["ratio"]
    assert ratio[("gpt4-pair", "human", 1, "with ties")] == 0.75
    assert math.isnan(ratio[("human", "human", 2, "without ties")])


def test_a_bad_human_judgment_line_is_named(store, tmp_path):
    from lib.errors import FormatError

    path = tmp_path / "human.jsonl"
    path.write_text(json.dumps(VOTES[0]) + "\n" + json.dumps({**VOTES[1], "winner": "model_c"}) + "\n",
                    encoding="utf-8")
    with pytest.raises(FormatError, match=r"human.jsonl:2: .*model_c"):
        ingest(store, [path])
    assert human.pair_votes(store).empty


# ----------------------------------------------------------------------------------------------
# Pages

@pytest.fixture
def app(sample_app):
    return sample_app


def test_verdict_panel_records_scores_and_the_queue_moves(app):
    app.switch_page("app_pages/item_view.py").run()
    assert not app.exception
    assert any("Set your name" in i.value for i in app.info)
    app.text_input(key="jl_author_input").set_value("mika").run()
    assert app.selectbox(key="iv_v_label").options[1:] == list(human.DEFAULT_LABELS)
    app.text_area(key="jl_labels_input").set_value("both wrong\nkeigo ignored\n").run()
    assert app.selectbox(key="iv_v_label").options == ["(no label)", "both wrong", "keigo ignored"]
    app.selectbox(key="iv_v_label").set_value("both wrong").run()
    app.text_input(key="iv_v_note").set_value("言語ルール").run()
    app.button(key="iv_v_s7").click().run()
    assert not app.exception
    saved = [s.value.replace("\\", "") for s in app.success]  # md_escape'd
    assert any("human:mika" in s and "score 7" in s for s in saved), saved
    from app_pages._store import get_store

    hist = human.history(get_store())
    assert hist[["author", "score", "label", "note"]].values.tolist() == [["mika", 7.0, "both wrong", "言語ルール"]]
    assert app.text_input(key="iv_v_note").value == ""
    # U: the first undecided item of the queue
    app.button(key="iv_v_next").click().run()
    first = human.review_queue(get_store(), "mika", bench=app.session_state["iv_bench"], n=20)
    assert (app.session_state["iv_q"], int(app.session_state["iv_turn"]), app.session_state["iv_model"]) == \
        human.next_undecided(first)
    app.button(key="iv_v_s10").click().run()
    assert any("score 10" in s.value for s in app.success)
    # the agreement page offers the human judge next to the LLM judges
    app.switch_page("app_pages/agreement.py").run()
    assert "human:mika" in app.multiselect(key="agr_judges").options
    app.switch_page("app_pages/review.py").run()
    assert not app.exception
    progress = [str(p.proto) for p in app.get("progress")]
    assert any("decided by human:mika" in p for p in progress), progress


def test_verdict_and_human_judgment_uploads_import_like_on_the_import_page(sample_store, store, tmp_path):
    from lib.ingest.uploads import stage_uploads

    human.record(sample_store, author="ana", bench=BENCH, question_id="2", turn=1, model=M8B, score=9)
    human.export_jsonl(sample_store, tmp_path / "v.jsonl")
    pairs = "".join(json.dumps(v) + "\n" for v in VOTES).encode()
    staged = stage_uploads([("v.jsonl", (tmp_path / "v.jsonl").read_bytes()), ("human_judgments.jsonl", pairs)],
                           tmp_path / "upload", "ja_mt_bench")
    report = ingest(store, staged.paths, allowed_roots=[tmp_path / "upload"])
    assert sorted((f.kind, f.status, f.rows) for f in report.files) == [
        ("human_pair_votes", "imported", len(VOTES)), ("human_verdicts", "imported", 1)]
    assert item_score(store, "human:ana", "2", 1, M8B) == 9.0


def test_the_author_comes_from_secrets(app, tmp_path):
    app.secrets["judgelens"] = {"author": "sec-ret"}
    app.switch_page("app_pages/review.py").run()
    assert not app.exception, app.exception[0].stack_trace
    assert app.text_input(key="jl_author_input").value == "sec-ret"


def test_no_verdicts_yet(sample_store):
    assert human.history(sample_store).empty and human.latest(sample_store).empty
    assert human.export_records(sample_store) == []


# ----------------------------------------------------------------------------------------------
# Which verdict counts: each field is the author's latest value for it; only a clear empties one

def plain(value):
    """None for pandas' missing values (NaN, NaT, pd.NA), else the value."""
    return None if value is None or pd.isna(value) else value


def current(store, **kw):
    df = human.latest(store, **kw)
    assert len(df) <= 1
    return None if df.empty else {k: plain(df.iloc[0][k]) for k in ("score", "label", "note")}


def test_a_label_or_note_after_a_score_keeps_the_score(sample_store):
    key = dict(author="ana", bench=BENCH, question_id="4", turn=1, model=M8B)
    t0 = datetime(2026, 1, 1, 12, 0, 0)
    human.record(sample_store, **key, score=3, label="both wrong", created_at=t0)
    human.record(sample_store, **key, label="judge A right", created_at=t0.replace(minute=1))
    human.record(sample_store, **key, note="checked the reference", created_at=t0.replace(minute=2))
    assert item_score(sample_store, "human:ana", "4", 1, M8B) == 3.0
    assert current(sample_store, author="ana", question_id="4") == {
        "score": 3.0, "label": "judge A right", "note": "checked the reference"}
    hist = human.history(sample_store, question_id="4")  # every row as recorded, newest first
    assert [plain(s) for s in hist["score"]] == [None, None, 3.0]
    assert hist["latest"].tolist() == [True, False, False]
    # only an explicit clear empties a field; the other fields stay
    human.record(sample_store, **key, clear=["score"], created_at=t0.replace(minute=3))
    assert item_score(sample_store, "human:ana", "4", 1, M8B) is None
    assert current(sample_store, author="ana", question_id="4") == {
        "score": None, "label": "judge A right", "note": "checked the reference"}
    human.record(sample_store, **key, score=6, created_at=t0.replace(minute=4))
    human.record(sample_store, **key, clear=["label", "note"], created_at=t0.replace(minute=5))
    assert current(sample_store, author="ana", question_id="4") == {"score": 6.0, "label": None, "note": None}
    assert item_score(sample_store, "human:ana", "4", 1, M8B) == 6.0
    assert human.history(sample_store, question_id="4")["cleared"].iloc[0] == ["label", "note"]


def test_clearing_is_checked(sample_store):
    from lib.errors import UsageError

    key = dict(author="ana", bench=BENCH, question_id="1", turn=1, model=M8B)
    for kw in ({"score": 5, "clear": ["score"]}, {"clear": ["verdict"]}, {"clear": "score"}, {"clear": []}):
        with pytest.raises(UsageError):
            human.record(sample_store, **key, **kw)
    assert human.history(sample_store).empty


def test_export_import_keeps_the_current_verdicts(sample_store, tmp_path):
    key = dict(author="ana", bench=BENCH, turn=1, model=M8B)
    t0 = datetime(2026, 1, 1, 12, 0, 0)
    human.record(sample_store, **key, question_id="1", score=4, created_at=t0)
    human.record(sample_store, **key, question_id="1", label="reference wrong", created_at=t0.replace(minute=1))
    human.record(sample_store, **key, question_id="2", score=9, label="both wrong", created_at=t0)
    human.record(sample_store, **key, question_id="2", clear=["score"], created_at=t0.replace(minute=1))
    out = tmp_path / "v.jsonl"
    assert human.export_jsonl(sample_store, out) == 4
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r.get("cleared") for r in records] == [None, None, None, ["score"]]  # written only where it clears
    with Store(tmp_path / "second.duckdb") as second:
        assert [(f.status, f.rows) for f in ingest(second, [out]).files] == [("imported", 4)]
        mine = human.latest(sample_store).drop(columns=["verdict_id"])
        theirs = human.latest(second).drop(columns=["verdict_id"])
        pd_testing.assert_frame_equal(mine, theirs)
        assert item_score(second, "human:ana", "1", 1, M8B) == 4.0 and item_score(second, "human:ana", "2", 1, M8B) is None
        human.export_jsonl(second, tmp_path / "again.jsonl")
        assert (tmp_path / "again.jsonl").read_bytes() == out.read_bytes()
        assert [f.rows for f in ingest(second, [out.rename(tmp_path / "copy.jsonl")]).files] == [0]


def test_cli_verdict_keeps_and_clears_fields(sample_store, capsys):
    db = str(sample_store.path)
    sample_store.close()
    base = ["verdict", "--db", db, "--bench", BENCH, "--question", "3", "--turn", "1", "--model", M8B, "--author", "ana"]
    assert cli_main(base + ["--score", "4"]) == 0
    assert cli_main(base + ["--label", "judge B right"]) == 0
    assert "now: score 4, label 'judge B right'" in capsys.readouterr().out
    assert cli_main(["verdicts", "list", "--db", db, "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["score"], r["label"], r["edits"]) for r in rows] == [(4.0, "judge B right", 2)]
    assert cli_main(base + ["--clear-score"]) == 0
    assert "cleared the score" in capsys.readouterr().out
    assert cli_main(["verdicts", "list", "--db", db, "--all", "--format", "json"]) == 0
    assert [r["cleared"] for r in json.loads(capsys.readouterr().out)] == [["score"], None, None]
    assert cli_main(base + ["--score", "5", "--clear-score"]) == 2
    with Store(db) as s:
        assert current(s, author="ana") == {"score": None, "label": "judge B right", "note": None}
        assert item_score(s, "human:ana", "3", 1, M8B) is None


def _store_made_before_clears(tmp_path):
    """A store holding ana's score 7 whose human_verdicts table has no cleared column (as stores made before it)."""
    import duckdb

    path = tmp_path / "old.duckdb"
    with Store(path) as s:
        human.record(s, author="ana", bench=BENCH, question_id="1", turn=1, model=M8B, score=7)
    con = duckdb.connect(str(path))
    con.execute("ALTER TABLE human_verdicts DROP COLUMN cleared")
    con.close()
    return path


def test_a_store_made_before_clears_gets_the_column(tmp_path):
    path = _store_made_before_clears(tmp_path)
    with Store(path) as s:
        human.record(s, author="ana", bench=BENCH, question_id="1", turn=1, model=M8B, clear=["score"])
        assert current(s, author="ana") is not None and current(s, author="ana")["score"] is None


def test_an_older_store_opened_read_only_reads_its_verdicts(tmp_path, capsys):
    """The CLI's reading commands open read-only: a store made before the cleared column gets it on that open
    too (through a short read-write connection), so `verdicts list` reads it instead of failing on the column."""
    path = _store_made_before_clears(tmp_path)
    with Store(path, read_only=True) as s:
        assert current(s, author="ana")["score"] == 7
    assert cli_main(["verdicts", "list", "--db", str(path), "--format", "json"]) == 0
    assert [r["score"] for r in json.loads(capsys.readouterr().out)] == [7]


def test_panel_label_after_a_score_keeps_it_and_clear_score_removes_it(app):
    from app_pages._store import get_store

    app.switch_page("app_pages/item_view.py").run()
    app.text_input(key="jl_author_input").set_value("mika").run()
    item = (app.session_state["iv_bench"], app.session_state["iv_q"], int(app.session_state["iv_turn"]),
            app.session_state["iv_model"])
    app.button(key="iv_v_s7").click().run()  # keyboard: 7
    app.selectbox(key="iv_v_label").set_value("judge A right").run()
    app.button(key="iv_v_label_only").click().run()
    assert not app.exception
    assert app.button(key="iv_v_s7").proto.type == "primary"  # the 7 still shows as your score
    assert any("score 7" in s.value and "judge A right" in s.value for s in app.success)
    store = get_store()
    with store.read() as cur:
        got = cur.execute("SELECT score FROM item_scores WHERE judge = 'human:mika' AND bench = ? AND question_id = ? "
                          "AND turn = ? AND model = ?", list(item)).fetchall()
    assert got == [(7.0,)]
    app.button(key="iv_v_clear_score").click().run()
    assert not app.exception
    assert app.button(key="iv_v_s7").proto.type == "secondary" and app.button(key="iv_v_clear_score").disabled
    assert current(store, author="mika") == {"score": None, "label": "judge A right", "note": None}
    with store.read() as cur:
        assert cur.execute("SELECT count(*) FROM item_scores WHERE judge = 'human:mika'").fetchone() == (0,)
    assert len(human.history(store)) == 3


# ----------------------------------------------------------------------------------------------
# Swallow: 5 samples per item. A verdict is on one sample; the queue ranks items; an item is decided when any sample
# has the author's score or label.

SWALLOW = "japanese_mt_bench"


def swallow_item(store):
    with store.read() as cur:
        judge, model, qid = cur.execute(
            "SELECT judge, model, question_id FROM single_judgments WHERE bench = ? GROUP BY ALL "
            "HAVING count(DISTINCT sample) = 5 ORDER BY model, question_id LIMIT 1", [SWALLOW]).fetchone()
    return judge, model, qid


def swallow_score(store, judge, qid, turn, model):
    with store.read() as cur:
        row = cur.execute("SELECT score, n_rows FROM item_scores WHERE judge = ? AND bench = ? AND question_id = ? "
                          "AND turn = ? AND model = ?", [judge, SWALLOW, qid, turn, model]).fetchone()
    return row


def test_swallow_samples_in_the_review_queue(sample_store):
    judge, model, _ = swallow_item(sample_store)
    with sample_store.read() as cur:  # a colleague's scores disagree with the LLM judge: the queue's second judge
        items = cur.execute("SELECT question_id, turn, avg(score) FROM single_judgments WHERE bench = ? AND model = ? "
                            "GROUP BY ALL ORDER BY question_id, turn LIMIT 4", [SWALLOW, model]).fetchall()
    for i, (qid, turn, score) in enumerate(items):
        human.record(sample_store, author="bo", bench=SWALLOW, question_id=qid, turn=turn, model=model,
                     score=10 if score < 5.5 else 1)
    queue = human.review_queue(sample_store, "ana", bench=SWALLOW, judges=[judge, "human:bo"], n=4)
    assert len(queue) == 4 and not queue["decided"].any()
    assert not queue.duplicated(["question_id", "turn", "model"]).any()  # items, not samples
    (q1, t1, m1), (q2, t2, m2) = list(zip(queue["question_id"], queue["turn"].astype(int), queue["model"]))[:2]
    key1 = dict(author="ana", bench=SWALLOW, question_id=q1, turn=t1, model=m1)

    def decided():
        q = human.review_queue(sample_store, "ana", bench=SWALLOW, judges=[judge, "human:bo"], n=4)
        return dict(zip(zip(q["question_id"], q["turn"].astype(int)), q["decided"]))

    human.record(sample_store, **key1, sample=0, note="a note alone decides nothing")
    assert not decided()[(q1, t1)]
    human.record(sample_store, **key1, sample=3, score=2)  # a score on sample 3 only decides the item
    assert decided()[(q1, t1)] and not decided()[(q2, t2)]
    assert swallow_score(sample_store, "human:ana", q1, t1, m1) == (2.0, 2)  # 2 samples with a verdict, 1 score
    human.record(sample_store, **key1, sample=0, score=6)
    assert swallow_score(sample_store, "human:ana", q1, t1, m1) == (4.0, 2)  # the mean over the samples scored
    human.record(sample_store, author="ana", bench=SWALLOW, question_id=q2, turn=t2, model=m2, sample=4,
                 label="both wrong")  # a label alone decides too, with no score
    assert decided()[(q2, t2)] and swallow_score(sample_store, "human:ana", q2, t2, m2) is None
    queue = human.review_queue(sample_store, "ana", bench=SWALLOW, judges=[judge, "human:bo"], n=4)
    assert human.next_undecided(queue) == tuple(list(zip(queue["question_id"], queue["turn"].astype(int),
                                                         queue["model"]))[2])
    # clearing the scores of both samples undecides it again
    human.record(sample_store, **key1, sample=0, clear=["score"])
    human.record(sample_store, **key1, sample=3, clear=["score"])
    assert not decided()[(q1, t1)] and swallow_score(sample_store, "human:ana", q1, t1, m1) is None
    per_sample = human.latest(sample_store, author="ana", question_id=q1)
    assert sorted(per_sample["sample"].tolist()) == [0, 3]


def test_the_panel_records_on_the_sample_shown(app):
    from app_pages._store import get_store

    store = get_store()
    judge, model, qid = swallow_item(store)
    app.session_state["iv_bench"], app.session_state["iv_q"] = SWALLOW, qid
    app.session_state["iv_turn"], app.session_state["iv_model"] = 1, model
    app.switch_page("app_pages/item_view.py").run()
    app.text_input(key="jl_author_input").set_value("mika").run()
    app.session_state["iv_sample"] = 2
    app.run()
    app.button(key="iv_v_s5").click().run()
    assert not app.exception
    hist = human.history(store, author="mika")
    assert hist[["question_id", "turn", "model", "sample", "score"]].values.tolist() == [[qid, 1, model, 2, 5.0]]
    app.session_state["iv_sample"] = 0
    app.run()
    assert app.button(key="iv_v_s5").proto.type == "secondary"  # sample 0 has no verdict of yours
    captions = [c.value.replace("\\", "") for c in app.caption]  # md_escape'd
    assert any("sample 2: score 5" in c for c in captions), captions


def test_the_item_views_review_queue_is_ranked_once_per_data_version(app, monkeypatch):
    """With a name set, the Item view shows the review queue's progress: ranked once per data version (a rerun or
    Next reads it from the cache, as the Review page does), again after a verdict (which changes the version), and
    the progress counts that verdict."""
    import functools

    ranked = []
    real = human.review_queue

    @functools.wraps(real)
    def counting(*args, **kwargs):
        ranked.append(kwargs.get("author"))
        return real(*args, **kwargs)

    monkeypatch.setattr(human, "review_queue", counting)
    app.switch_page("app_pages/item_view.py").run()
    app.text_input(key="jl_author_input").set_value("rin").run()
    assert not app.exception and ranked == ["rin"]
    app.run()
    next(b for b in app.button if b.label == "Next").click().run()
    assert not app.exception and ranked == ["rin"]  # a rerun and another item: from the cache
    app.button(key="iv_v_s7").click().run()
    assert not app.exception and ranked == ["rin", "rin"]  # a verdict: a new data version, ranked again
    from app_pages._store import get_store

    queue = real(get_store(), "rin", bench=app.session_state["iv_bench"], n=20)
    progress = [str(p.proto) for p in app.get("progress")]
    assert any(f"{int(queue['decided'].sum())} of the {len(queue)} largest" in p for p in progress), progress


# ----------------------------------------------------------------------------------------------
# The Review page's "All verdicts" tab: one read of the verdict table (a DuckLake statement costs catalog rounds)

def record_a_history(store, bench=BENCH, model=M8B):
    t0 = datetime(2026, 1, 1, 12, 0, 0)
    key = dict(bench=bench, turn=1, model=model)
    human.record(store, author="ana", **key, question_id="1", score=4, label="both wrong", created_at=t0)
    human.record(store, author="ana", **key, question_id="1", note="again", created_at=t0.replace(minute=1))
    human.record(store, author="ana", **key, question_id="2", score=9, created_at=t0)
    human.record(store, author="ana", **key, question_id="2", clear=["score"], created_at=t0.replace(minute=2))
    human.record(store, author="bo", **key, question_id="1", score=7, created_at=t0.replace(minute=3))


def assert_all_verdicts_match(store, store_item=(BENCH, M8B)):
    from conftest import reads_counted

    for author in (None, "ana", "bo", "nobody"):
        with reads_counted(store) as seen:
            views = human.all_verdicts(store, author=author)
        assert len(seen) == 1
        assert views["authors"] == human.authors(store) == ["ana", "bo"]
        pd_testing.assert_frame_equal(views["latest"], human.latest(store, author=author))
        pd_testing.assert_frame_equal(views["history"], human.history(store, author=author))
        assert views["records"] == human.export_records(store, author=author)
    assert len(human.all_verdicts(store)["history"]) == 5
    for author, qid in (("ana", "1"), ("bo", "1"), ("ana", "2"), ("bo", "2")):  # the Item view's verdict panel
        key = dict(bench=store_item[0], question_id=qid, turn=1, model=store_item[1])
        with reads_counted(store) as seen:
            views = human.item_verdicts(store, author=author, **key, sample=0)
        assert len(seen) == 1
        pd_testing.assert_frame_equal(views["history"], human.history(store, **key, sample=0))
        pd_testing.assert_frame_equal(views["latest"], human.latest(store, author=author, **key))
    assert len(human.item_verdicts(store, author="ana", bench=store_item[0], question_id="1", turn=1,
                                   model=store_item[1], sample=0)["history"]) == 3
    assert len(human.all_verdicts(store, author="ana")["latest"]) == 2
    assert human.all_verdicts(store, author="nobody")["records"] == []


def test_all_verdicts_is_latest_history_and_export_from_one_read(sample_store):
    assert human.all_verdicts(sample_store)["latest"].empty
    record_a_history(sample_store)
    assert_all_verdicts_match(sample_store)


def test_all_verdicts_on_a_lake(lake_store):
    record_a_history(lake_store, bench="b", model="m")  # items the store does not hold may get verdicts
    assert_all_verdicts_match(lake_store, ("b", "m"))
