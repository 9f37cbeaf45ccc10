"""Flags on stored data: what each finds in the bundled sample (real findings), and crafted items
for the cases the sample does not have. No API calls."""
from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest

from lib.analysis import flags as F
from lib.cli import main
from lib.store import insert_rows

SWALLOW_JUDGE = "gpt-4o-2024-08-06"
REASONER = "hosted_vllm/fake-org/Fake-JA-Reasoner-32B"
CHAT = "hosted_vllm/fake-org/Fake-JA-Chat-8B"


def q(store, sql, params=()):
    with store.read() as cur:
        return cur.execute(sql, list(params)).fetchall()


def params_of(link: str) -> dict:
    assert link.startswith("item_view?")
    return {k: v[0] for k, v in parse_qs(link.split("?", 1)[1]).items()}


@pytest.fixture(scope="module")
def sample_flags(_sample_db, tmp_path_factory):
    """Every flag on one copy of the bundled sample (read-only use)."""
    import shutil

    from lib.store import Store

    path = tmp_path_factory.mktemp("flags") / "flags.duckdb"
    shutil.copy(_sample_db, path)
    with Store(path) as s:
        yield s, F.all_flags(s)


# ---------------------------------------------------------------------------------------------
# Real findings in the bundled sample

def test_every_flag_has_the_common_columns_and_item_links(sample_flags):
    store, found = sample_flags
    assert list(found) == list(F.FLAGS)
    for name, df in found.items():
        assert list(df.columns[:len(F.BASE_COLUMNS)]) == F.BASE_COLUMNS, name
        assert (df["flag"] == name).all()
        for row in df.head(20).itertuples():
            p = params_of(row.link)
            assert (p["bench"], p["q"], p["turn"], p["model"]) == (row.bench, row.question_id, str(row.turn),
                                                                   row.model)
            assert p["cols"] == f"{row.harness}:{row.judge}"
            assert p.get("sample", "0") == str(row.sample)


def test_empty_answers_scored_high_are_the_reasoner_answers_with_no_final_answer(sample_flags):
    store, found = sample_flags
    df = found["empty_high"]
    # 85 Reasoner answers are an unclosed <think> block only; 51 of their judgments scored 6 or more
    assert len(df) == 51 and len(df[["question_id", "turn"]].drop_duplicates()) == 30
    assert set(df["model"]) == {REASONER} and set(df["judge"]) == {SWALLOW_JUDGE}
    assert set(df["reason"]) == {"only reasoning: a <think> block and no final answer"}
    assert (df["visible_chars"] == 0).all() and (df["score"] >= F.HIGH_SCORE).all()
    assert q(store, f"""SELECT count(*) FROM answers WHERE model = '{REASONER}'
                        AND trim(regexp_replace(text, '(?s)<think>.*?(?:</think>|$)\\s*', '', 'g')) = ''""")[0][0] == 85
    first = df.iloc[0]
    assert (first["question_id"], first["turn"], first["sample"], first["score"]) == ("19", 1, 0, 8.0)
    assert first["answer_excerpt"].startswith("<think>")
    per = F.summarize(df)
    assert per.to_dict("records")[0] == {"harness": "swallow", "judge": SWALLOW_JUDGE,
                                         "prompt_name": "swallow-single-v1", "n": 24}
    assert per["n"].sum() == 51
    assert F.empty_high_scores(store, min_score=11).empty
    assert len(F.empty_high_scores(store, min_score=1)) == 83  # every scored judgment of those answers


def test_reference_leaks_in_gpt4_math_judgments(sample_flags):
    store, found = sample_flags
    df = found["reference_leak"]
    assert len(df) == 8
    assert set(zip(df["bench"], df["judge"], df["model"])) == {("mt_bench", "gpt-4", "phi-3-dpo")}
    assert set(df["prompt_name"]) == {"single-math-v1", "single-math-v1-multi-turn"}  # prompts that show the reference
    top = df.iloc[0]
    assert (top["question_id"], top["turn"]) == ("128", 1)
    assert top["ref_share"] > 0.5 and top["answer_share"] < 0.02
    assert ((df["ref_share"] >= F.LEAK_MIN_SHARE) & (df["ref_share"] >= F.LEAK_FACTOR * df["answer_share"])).all()
    # the spans really are reference text: GPT-4 wrote out the reference's solution as "the correct function"
    rationale = q(store, "SELECT rationale FROM single_judgments WHERE bench = 'mt_bench' AND question_id = '128' "
                         "AND turn = 1 AND judge = 'gpt-4'")[0][0]
    reference = q(store, "SELECT text FROM reference_answers WHERE bench = 'mt_bench' AND question_id = '128' "
                         "AND turn = 1")[0][0]
    longest = max(top["ref_spans"], key=lambda s: s[1] - s[0])
    assert rationale[longest[0]:longest[1]] in reference
    # single-v1 prompts show no reference: compared only where the answer itself begins like the reference
    # (extraction questions), and then the shared text counts for neither side
    everything = F.reference_leaks(store, include_all=True)
    no_ref = everything[everything["prompt_name"].isin(["single-v1", "single-v1-multi-turn", "swallow-single-v1"])]
    assert len(no_ref) == 30 and set(no_ref["question_id"]) == {"11", "12", "15", "17"} and not no_ref["leak"].any()
    assert everything["leak"].sum() == 8 and len(everything) > 900


def test_single_bracket_ratings_are_swallow_rating_labels(sample_flags):
    store, found = sample_flags
    df = found["single_bracket"]
    assert len(df) == 43 and set(df["harness"]) == {"swallow"} and set(df["judge"]) == {SWALLOW_JUDGE}
    assert df["model"].value_counts().to_dict() == {CHAT: 21, REASONER: 22}
    assert set(df["looks_like"]) == {"rating"} and not df["suspicious"].any()
    row = df.iloc[0]
    assert (row["question_id"], row["turn"], row["sample"], row["match"], row["score"]) == ("15", 1, 0, "[7]", 7.0)
    rationale = q(store, f"""SELECT rationale FROM single_judgments WHERE bench = 'japanese_mt_bench'
                             AND question_id = '15' AND turn = 1 AND sample = 0 AND model = '{CHAT}'""")[0][0]
    a, b = row["match_span"]
    assert rationale[a:b] == "[7]" and rationale[a - 8:a] == "Rating: "
    assert (df["raw_score"] == df["score"]).all()


def test_no_out_of_range_rating_in_the_sample(sample_flags):
    _, found = sample_flags
    assert found["out_of_range"].empty


def test_turn2_conditioning_applies_to_every_swallow_turn2_item_with_temperature(sample_flags):
    store, found = sample_flags
    df = found["swallow_turn2_conditioning"]
    expected = {(m, qid) for m, qid in q(store, """SELECT DISTINCT model, question_id FROM answers
                                                   WHERE harness = 'swallow' AND turn = 2 AND temperature > 0""")}
    assert len(expected) == 160  # 4 Swallow runs x 40 questions at temperature > 0
    assert set(zip(df["model"], df["question_id"])) == expected
    assert (df["turn"] == 2).all() and (df["samples"].map(tuple) == (1, 2, 3, 4)).all()
    assert set(df["temperature"]) == {0.1, 0.7} and (df["sample"] == 1).all()
    assert set(df["prompt_name"]) == {"swallow-single-v1-multi-turn"}
    assert "generated after sample 0's turn-1 answer" in df.iloc[0]["evidence"]
    # at temperature 0 the five samples are copies: nothing to flag
    zero = {(m, qid) for m, qid in q(store, """SELECT DISTINCT model, question_id FROM answers
                                              WHERE harness = 'swallow' AND temperature = 0""")}
    assert not zero & set(zip(df["model"], df["question_id"]))


def test_swallow_truncation_at_8192_characters(sample_flags):
    store, found = sample_flags
    df = found["swallow_truncation"]
    assert len(df) == 42 and set(df["model"]) == {CHAT}
    assert (df["answer_chars"] == 8192).all() and (df["max_chars"] == 8192).all()
    judged = df[df["truncated_turn"] == df["turn"]]
    shown = df[df["truncated_turn"] != df["turn"]]
    assert len(judged) == 23  # the 23 answers cut at 8,192 characters, each judged once
    assert len(shown) == 19 and (shown["turn"] == 2).all() and (shown["truncated_turn"] == 1).all()
    assert q(store, "SELECT count(*) FROM answers WHERE length(text) = 8192")[0][0] == 23
    q10 = judged[(judged["question_id"] == "10") & (judged["turn"] == 1)]
    assert sorted(q10["sample"]) == [0, 1, 2, 3, 4]
    assert "= the harness's limit of 8,192: cut there" in q10.iloc[0]["evidence"]


def test_cli_flags_json_and_table(sample_flags, capsys):
    store, found = sample_flags
    assert main(["flags", "--db", str(store.path), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data) == sum(len(df) for df in found.values()) == 51 + 8 + 43 + 160 + 42
    assert {"flag", "bench", "question_id", "model", "turn", "judge", "sample", "evidence", "link"} <= set(data[0])
    leak = next(d for d in data if d["flag"] == "reference_leak")
    assert isinstance(leak["ref_spans"], list) and isinstance(leak["ref_spans"][0], list)
    assert main(["flags", "--db", str(store.path), "--flag", "swallow_truncation", "--limit", "3"]) == 0
    out = capsys.readouterr().out
    assert "== swallow_truncation: 42 row(s)" in out and "… 39 more" in out
    assert main(["flags", "--db", str(store.path), "--flag", "nope"]) == 2


# ---------------------------------------------------------------------------------------------
# Crafted items

def _add(store, *, answers=(), judgments=(), refs=(), questions=()):
    with store.write() as cur:
        for bench, qid, cat, turns in questions:
            cur.execute("INSERT INTO questions VALUES (1, ?, ?, ?, ?)", [bench, qid, cat, turns])
        for bench, judge, qid, turn, text in refs:
            cur.execute("INSERT INTO reference_answers VALUES (1, ?, ?, NULL, ?, ?, ?)",
                        [bench, judge, qid, turn, text])
        for a in answers:
            a = {"harness": "fastchat", "sample": 0, "temperature": None, "max_chars": None, **a}
            cur.execute("""INSERT INTO answers (source_id, harness, bench, model, question_id, sample, turn, text,
                                               temperature, max_chars)
                           VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?)""",
                        [a["harness"], a["bench"], a["model"], a["question_id"], a["sample"], a["turn"], a["text"],
                         a["temperature"], a["max_chars"]])
        for j in judgments:
            j = {"harness": "fastchat", "sample": 0, "prompt_name": "single-v1", "judge_prompt": None,
                 "parse_status": "ok", **j}
            j.setdefault("score", j["raw_score"] if j["parse_status"] == "ok" else None)
            insert_rows(cur, "single_judgments", [{  # the writers' insert: derives the single-bracket flag
                "source_id": 1, **{k: j[k] for k in ("harness", "bench", "judge", "prompt_name", "model", "question_id",
                                                      "turn", "sample", "raw_score", "score", "parse_status",
                                                      "rationale", "judge_prompt")}}])


def test_crafted_empty_and_near_empty_answers(store):
    answers = [dict(bench="b", model="m1", question_id=str(i), turn=1, text=t)
               for i, t in enumerate(["", "  \n\t ", "<think>only thoughts</think>\n", "OK", "A full answer here.",
                                      "c", "<think>unclosed"])]
    judgments = [dict(bench="b", judge="j", model="M1", question_id=str(i), turn=1, raw_score=s, rationale="r")
                 for i, s in enumerate([9, 7, 8, 10, 9, 3, 6])]
    _add(store, answers=answers, judgments=judgments)
    df = F.empty_high_scores(store)
    got = dict(zip(df["question_id"], df["reason"]))
    assert got == {"0": "empty", "1": "whitespace only", "2": "only reasoning: a <think> block and no final answer",
                   "3": "2 visible character(s)", "6": "only reasoning: a <think> block and no final answer"}
    assert "5" not in got  # a 1-character answer scored 3 is not "high"
    assert set(df["model"]) == {"M1"}  # the judgment's model name, matched to the answer case-insensitively
    assert F.empty_high_scores(store, max_chars=0)["question_id"].tolist() == ["0", "1", "2", "6"]
    assert F.empty_high_scores(store, judge="other").empty


def test_crafted_single_bracket_list_marker_and_out_of_range(store):
    judgments = [
        dict(bench="b", judge="j", model="m", question_id="1", turn=1, raw_score=1,
             rationale="[1] The answer is correct.\n[2] It is well written.\nOverall a strong response."),
        dict(bench="b", judge="j", model="m", question_id="2", turn=1, raw_score=8,
             rationale="Good answer. Rating: [8]"),
        dict(bench="b", judge="j", model="m", question_id="3", turn=1, raw_score=7,
             rationale="Fine. Rating: [[7]] (see [1])"),
        dict(bench="b", judge="j", model="m", question_id="4", turn=1, raw_score=12, parse_status="out_of_range",
             rationale="Outstanding! Rating: [[12]]"),
        dict(bench="b", judge="j", model="m", question_id="5", turn=1, raw_score=-1, parse_status="not_parsed",
             rationale="no rating"),
    ]
    _add(store, judgments=judgments)
    sb = F.single_bracket_ratings(store).set_index("question_id")
    assert list(sb.index) == ["1", "2"]  # q3 has a [[7]]: FastChat never used the fallback there
    assert (sb.loc["1", "match"], sb.loc["1", "looks_like"], bool(sb.loc["1", "suspicious"])) == \
        ("[1]", "list marker or citation", True)
    assert sb.loc["1", "match_span"] == [0, 3] and sb.loc["1", "n_single_brackets"] == 2
    assert "at the start of a line" in sb.loc["1", "evidence"] and "probably a list marker" in sb.loc["1", "evidence"]
    assert (sb.loc["2", "looks_like"], bool(sb.loc["2", "suspicious"])) == ("rating", False)
    oor = F.out_of_range_ratings(store)
    assert oor["question_id"].tolist() == ["4"] and oor.iloc[0]["raw_score"] == 12
    assert oor.iloc[0]["match"] == "[[12]]" and "outside 1-10" in oor.iloc[0]["evidence"]


def test_crafted_reference_leak_in_japanese_with_spans(store):
    ref = "東京は日本の首都であり、人口は約千四百万人です。政治と経済の中心地でもあります。"
    ans = "大阪が首都だと思います。"
    leak = "参照回答によると、東京は日本の首都であり、人口は約千四百万人です。正しいです。評価：[[9]]"
    fair = "アシスタントは大阪が首都だと思いますと答えていますが、誤りです。評価：[[2]]"
    prompt = f"[Reference]\n{ref}\n[Answer]\n{ans}"
    _add(store, refs=[("b", "j", "1", 1, ref)], answers=[dict(bench="b", model="m", question_id="1", turn=1, text=ans)],
         judgments=[dict(bench="b", judge="j", model="m", question_id="1", turn=1, raw_score=9, rationale=leak,
                         judge_prompt=prompt, prompt_name="single-math-v1"),
                    dict(bench="b", judge="j2", model="m", question_id="1", turn=1, raw_score=2, rationale=fair,
                         judge_prompt=prompt, prompt_name="single-math-v1"),
                    dict(bench="b", judge="j3", model="m", question_id="1", turn=1, raw_score=9, rationale=leak,
                         judge_prompt="a prompt without the reference", prompt_name="single-v1")])
    df = F.reference_leaks(store)
    assert df["judge"].tolist() == ["j"]  # j2 quotes the answer; j3 never saw the reference
    row = df.iloc[0]
    (a, b), = row["ref_spans"]
    assert leak[a:b] == "東京は日本の首都であり、人口は約千四百万人です。"
    assert row["answer_share"] == 0 and row["ref_share"] > 0.4 and row["reference_judge"] == "j"
    ov = F.reference_overlap(fair, ref, ans)
    (a, b), = ov.answer_spans
    assert ov.ref_share == 0 and not ov.leak and fair[a:b] == "大阪が首都だと思います"


def test_crafted_swallow_conditioning_only_where_turn1_samples_differ(store):
    answers = []
    for s in range(5):
        answers.append(dict(harness="swallow", bench="jb", model="m", question_id="1", turn=1, sample=s,
                            text=f"turn one, sample {s}", temperature=0.7))
        answers.append(dict(harness="swallow", bench="jb", model="m", question_id="2", turn=1, sample=s,
                            text="identical", temperature=0.0))
    judgments = [dict(harness="swallow", bench="jb", judge="j", model="m", question_id=qid, turn=2, sample=s,
                      raw_score=5, rationale="Rating: [[5]]", prompt_name="swallow-single-v1-multi-turn")
                 for qid in ("1", "2") for s in range(5)]
    _add(store, answers=answers, judgments=judgments)
    df = F.swallow_turn2_conditioning(store)
    assert df["question_id"].tolist() == ["1"] and df.iloc[0]["samples"] == [1, 2, 3, 4]
    assert params_of(df.iloc[0]["link"])["sample"] == "1"


def test_crafted_truncation_needs_the_harness_limit(store):
    answers = [dict(harness="swallow", bench="jb", model="m", question_id="1", turn=1, text="x" * 100, max_chars=100),
               dict(harness="swallow", bench="jb", model="m", question_id="2", turn=1, text="x" * 99, max_chars=100),
               dict(bench="b", model="m", question_id="3", turn=1, text="y" * 9000)]
    judgments = [dict(harness="swallow", bench="jb", judge="j", model="m", question_id=qid, turn=1, raw_score=5,
                      rationale="Rating: [[5]]") for qid in ("1", "2")] + [
        dict(bench="b", judge="j", model="m", question_id="3", turn=1, raw_score=5, rationale="Rating: [[5]]")]
    _add(store, answers=answers, judgments=judgments)
    df = F.swallow_truncation(store)
    assert df["question_id"].tolist() == ["1"] and df.iloc[0]["answer_chars"] == 100


# ---------------------------------------------------------------------------------------------
# A DuckLake store finds what the file finds

FLAG_KEYS = ["harness", "bench", "judge", "prompt_name", "model", "question_id", "turn", "sample", "score"]


def flag_rows(df, extra=()) -> list[tuple]:
    return sorted(map(tuple, df[FLAG_KEYS + list(extra)].astype(str).values.tolist()))


def test_a_lake_flags_the_judgments_the_file_flags(sample_store, sample_lake):
    """On a DuckLake store two judgments can share a row id (rows separate imports wrote inline in the catalog): a
    flag that told judgments apart by row id alone kept one of two (near-empty answers up to 50 characters: 166
    judgments on the lake, 167 in the file) or paired a judgment's keys with another's rationale (every compared
    judgment of the reference check: 25 more on the lake than in the file)."""
    with sample_lake.store.read() as cur:
        assert cur.execute("SELECT count(DISTINCT rowid) < count(*) FROM single_judgments").fetchone()[0]
    for max_chars in (5, 50, 256):
        on_file = F.empty_high_scores(sample_store, min_score=1, max_chars=max_chars)
        on_lake = F.empty_high_scores(sample_lake.store, min_score=1, max_chars=max_chars)
        assert flag_rows(on_lake, ["visible_chars", "reason"]) == flag_rows(on_file, ["visible_chars", "reason"])
    on_file = F.reference_leaks(sample_store, include_all=True)
    on_lake = F.reference_leaks(sample_lake.store, include_all=True)
    assert len(on_file) > 900
    assert flag_rows(on_lake, ["ref_share", "answer_share", "leak"]) == \
        flag_rows(on_file, ["ref_share", "answer_share", "leak"])
