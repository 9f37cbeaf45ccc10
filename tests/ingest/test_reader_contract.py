"""The reader contract: every registered reader (``lib.ingest.formats.registry.READERS``) over its sample folder.

Each reader must recognise its files (by name, and by content where it says it can), read them (the counts below
follow from the sample's shape), give a few exact values straight from the files, and, where its harness defines
a number of its own (``lib.harness``: show_result.py, a results file), reproduce that number.
A new reader gets its entry in ``EXPECTED``: the first test fails until it has one.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import ROOT

from lib import harness as H
from lib.analysis import queries
from lib.ingest.formats import registry
from lib.ingest.importer import discover, ingest
from lib.store import Store, frame

L70 = "shisa-ai/shisa-v2-llama3.3-70b"
L8 = "shisa-ai/shisa-v2-llama3.1-8b"
TABLES = ("judge_prompts", "questions", "reference_answers", "answers", "single_judgments", "pair_judgments",
          "reported_metrics", "human_verdicts", "human_pair_votes")

EXPECTED = {
    # the JA MT-Bench harness: 80 questions x 2 turns; 3 judges (one reference file each); 2 models
    "fastchat": {
        "files": {"judge_prompts": 1, "questions": 1, "reference_answers": 3, "answers": 2, "single_judgments": 3},
        "rows": {"judge_prompts": 8, "questions": 80, "reference_answers": 3 * 80 * 2, "answers": 2 * 80 * 2,
                 "single_judgments": 3 * 2 * 80 * 2},
        "by_content": ("questions", "answers", "single_judgments"),
        # fastchat-format.md §11: the JA harness's own show_result.py, (judge, model, turn) -> mean
        "own": {("gpt-4o", L70, 1): 9.0750, ("gpt-4o", L70, 2): 7.8125, ("gpt-4o", L8, 1): 7.6375,
                ("gpt-4o", L8, 2): 7.1750, ("gpt-4.1-2025-04-14", L8, 2): 6.5750,
                ("gpt-4.1-mini-2025-04-14", L70, 1): 8.8875},
    },
    # Swallow's fork: 2 runs (models) x 80 questions; 5 samples x 2 turns each; one results file per run
    "swallow": {
        "files": {"swallow_results": 2, "swallow_details": 2},
        "rows": {"questions": 2 * 80, "reference_answers": 2 * 80 * 2, "answers": 2 * 80 * 5 * 2,
                 "single_judgments": 2 * 80 * 5 * 2,
                 "reported_metrics": 2 * 9 * 4},  # per run: overall + 8 categories x (3 judge + 1 japanese_ratio)
        "by_content": (),
    },
    # shaberi (tests/data/shaberi/PROVENANCE.md): shisa-v2-llama3.1-8b on ja-mt-bench-1shot (60 questions, two judges;
    # 2 gpt-5.1 rows hold reprocess-forgotten-scores.py's backfill {"score": 5 | 4, "judge_output": ...}) + a
    # constructed ELYZA-tasks-100 model (3 questions, scale 1-5, two judges, one {"score": null} failure)
    "shaberi": {
        "files": {"answers": 2, "judgements": 4},
        "rows": {"questions": 60 + 3, "answers": 60 + 3, "single_judgments": 2 * 60 + 2 * 3},
        "by_content": (),
        # results_vizualization.py: the mean of score per judge, dataset and model (backfilled scores count, nulls
        # are skipped); 295 over the 58 plain rows + 5 + 4 backfilled
        "own": {("gpt-5.1-2025-11-13", L8, 1): (295 + 5 + 4) / 60, ("gpt-4.1-2025-04-14", L8, 1): 410 / 60,
                ("gpt-4.1-2025-04-14", "constructed/model", 1): 4.0,
                ("gpt-5.1-2025-11-13", "constructed/model", 1): 7 / 3},
    },
    # tests/data/nejumi/README.md (constructed from mtbench.py): 1 model x 2 runs, 16 questions x 2 turns, judge_count 2
    # in run-a; the question file is FastChat's (read by its reader)
    "nejumi": {
        "files": {"answers": 2, "single_judgments": 4},
        "with": {"fastchat": {"questions": 1}},
        "rows": {"questions": 16, "answers": 2 * 16 * 2, "single_judgments": (2 + 1) * 16 * 2},
        "by_content": (),
        "own_by": ["judge", "model"],
        "own": lambda folder: nejumi_leaderboard(folder),
    },
    # tests/data/fastchat_samples/README.md (constructed): 6 questions x 2 models x 2 turns, 5 choices judged per row
    "fastchat_samples": {
        "files": {"single_judgments": 1},
        "with": {"fastchat": {"questions": 1, "answers": 2}},
        "rows": {"questions": 6, "answers": 2 * 6 * 5 * 2, "single_judgments": 2 * 6 * 2 * 5},
        "by_content": ("single_judgments",),
        "own": lambda folder: sample_runs_number(folder),
    },
    # tests/data/inspect_ai/README.md (constructed from the log format): a zstd .eval (4 questions x 2 epochs, one
    # unscored) and a .json log (3 C/I grades)
    "inspect_ai": {
        "files": {"inspect_log": 2},
        "rows": {"questions": 4 + 3, "answers": 8 + 3, "single_judgments": 7 + 3, "reported_metrics": 2 + 1},
        "by_content": ("inspect_log",),
        "own_by": ["judge", "model"],
        "own": lambda folder: inspect_metrics(folder),
    },
    # tests/data/fastchat_wide/README.md (constructed): 5 questions; single wide rows 2 judges x 2 models; 5 pair rows
    "fastchat_wide": {
        "files": {"single_judgments": 1, "pair_judgments": 1},
        "with": {"fastchat": {"questions": 1}},
        "rows": {"questions": 5, "single_judgments": 2 * 2 * 5 * 2, "pair_judgments": 5},
        "by_content": ("single_judgments", "pair_judgments"),
        "own": lambda folder: wide_show_result(folder),
    },
    # tests/data/human/README.md: 5 verdicts by two analysts, 6 MT-Bench human pairwise votes
    "human": {
        "files": {"verdicts": 1, "human_pairs": 1},
        "rows": {"human_verdicts": 5, "human_pair_votes": 6},
        "by_content": ("verdicts", "human_pairs"),
    },
}

def nejumi_leaderboard(folder: Path) -> dict:
    """wandb/llm-leaderboard mtbench.py's AVG_mtbench, recomputed from the sample's files with its pandas steps, x 10
    (JudgeLens keeps the judge's 0-10 scale; the harness rules' reported_scale is 0.1)."""
    import pandas as pd

    from lib.ingest.formats.nejumi import run_model

    bench = folder / "japanese_mt_bench"
    questions = pd.read_json(bench / "question.jsonl", lines=True)[["question_id", "category"]]
    out = {}
    for path in sorted((bench / "model_judgment").rglob("*.jsonl")):
        df = pd.read_json(path, lines=True)
        out.setdefault((df.judge_model[0], run_model(df.model[0])), []).append(df)
    board = {}
    for key, frames in out.items():
        df = pd.concat(frames).merge(questions, on="question_id", how="left")
        per_q = df.query("score != -1").groupby(["question_id", "turn", "category"], as_index=False).score.mean()
        summary = per_q.groupby(["category"], as_index=False).score.mean()
        summary["score"] = summary["score"] / 10.0
        board[key] = summary.score.mean() / H.NEJUMI.reported_scale
    return board


def sample_runs_number(folder: Path) -> dict:
    """The multi-sample fork's number per (judge, model, turn), from the files: per choice index the mean of the
    scores not at -1, then the mean over the choice indexes."""
    runs: dict = {}
    for path in (folder / "ja_mt_bench" / "model_judgment").glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            rec = json.loads(line)
            for i, score in enumerate(rec["score"]):
                if score != -1:
                    runs.setdefault((rec["judge"][0], rec["model"], rec["turn"]), {}).setdefault(i, []).append(score)
    return {key: sum(sum(v) / len(v) for v in per_run.values()) / len(per_run) for key, per_run in runs.items()}


def inspect_metrics(folder: Path) -> dict:
    """Each log's own number as the log states it: results.scores[].metrics (mean, else accuracy), per scorer."""
    from lib.ingest.formats.inspect_ai import load

    out = {}
    for path in sorted((folder / "logs").iterdir()):
        header, _ = load(path)
        for scored in header["results"]["scores"]:
            metrics = scored["metrics"]
            out[(scored["name"], header["eval"]["model"])] = (metrics.get("mean") or metrics["accuracy"])["value"]
    return out


def wide_show_result(folder: Path) -> dict:
    """show_result.py's mean per (judge, model, turn) over the wide rows' score_turn1 / score_turn2, -1 dropped."""
    cells: dict = {}
    for line in (folder / "ja_mt_bench" / "model_judgment" / "wide_single.jsonl").read_text().splitlines():
        rec = json.loads(line)
        for turn in (1, 2):
            if rec[f"score_turn{turn}"] != -1:
                cells.setdefault((rec["judge_id"], rec["model_id"], turn), []).append(rec[f"score_turn{turn}"])
    return {key: sum(v) / len(v) for key, v in cells.items()}


READERS = list(registry.READERS)
IDS = [r.name for r in READERS]


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))


@pytest.fixture(scope="module")
def stores(tmp_path_factory) -> dict[str, Path]:
    """One DuckDB file per reader, holding its sample imported (the real import, fast path included)."""
    out = {}
    for reader in READERS:
        path = tmp_path_factory.mktemp(reader.name) / "sample.duckdb"
        with Store(path) as s:
            ingest(s, [ROOT / reader.sample])
        out[reader.name] = path
    return out


def test_every_reader_has_a_sample_and_expectations():
    assert IDS == list(dict.fromkeys(IDS)), "reader names must be unique"
    for reader in READERS:
        assert reader.name in EXPECTED, f"add the expected counts of {reader.name}'s sample to EXPECTED"
        assert (ROOT / reader.sample).is_dir(), reader.sample
        assert H.get(reader.harness) is not H.GENERIC, f"{reader.name}: harness {reader.harness!r} has no rules"


@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_recognises_its_files_by_name_or_content(reader):
    claimed: dict[str, dict[str, int]] = {}
    for path in _files(ROOT / reader.sample):
        found = registry.claim(path, explicit=False)
        if found is None:
            continue
        mine = claimed.setdefault(found.reader.name, {})
        mine[found.kind] = mine.get(found.kind, 0) + 1
    # the files of other readers a sample needs (a question file read by FastChat's reader) are listed in "with"
    assert claimed == {reader.name: EXPECTED[reader.name]["files"], **EXPECTED[reader.name].get("with", {})}


@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_recognises_files_by_content_under_any_name(reader, tmp_path):
    """Judgment files without a telling name (issue 22): a copy named x.<suffix>, given on its own."""
    wanted = EXPECTED[reader.name]["by_content"]
    seen = set()
    for path in _files(ROOT / reader.sample):
        found = registry.claim(path, explicit=False)
        if found is None or found.kind not in wanted or found.kind in seen:
            continue
        copy = tmp_path / found.kind / f"x{path.suffix}"
        copy.parent.mkdir()
        shutil.copy(path, copy)
        again = registry.claim(copy, explicit=True)
        assert again is not None and (again.reader, again.kind) == (reader, found.kind), path
        seen.add(found.kind)
    assert seen == set(wanted)


@pytest.mark.parametrize("reader", READERS, ids=IDS)
def test_reads_its_sample(reader, stores):
    with Store(stores[reader.name], read_only=True) as s:
        with s.read() as cur:
            counts = {t: cur.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES}
            harnesses = {h for (h,) in cur.execute("SELECT DISTINCT harness FROM sources").fetchall()}
    assert {t: n for t, n in counts.items() if n} == EXPECTED[reader.name]["rows"]
    assert harnesses == {reader.harness, *(registry.reader(r).harness for r in EXPECTED[reader.name].get("with", {}))}


@pytest.mark.parametrize("reader", [r for r in READERS if not r.separate], ids=[r.name for r in READERS
                                                                             if not r.separate])
def test_the_line_reader_gives_what_the_import_stored(reader, stores):
    """``Reader.read`` on every file (no fast path) gives the rows the import stored (which may be the fast path)."""
    with Store(stores[reader.name], read_only=True) as s:
        items = discover([ROOT / reader.sample])
        per_table: dict[str, int] = {}
        for item in items:
            item.size = item.path.stat().st_size
            item.reader.read(item, items, s)
            assert not [p for parsed in item.tables.values() for p in parsed.problems], item.display
            for table, parsed in item.tables.items():
                per_table[table] = per_table.get(table, 0) + len(parsed.rows)
        assert per_table == EXPECTED[reader.name]["rows"]
        judgments = [r for item in items if "single_judgments" in item.tables
                     for r in item.tables["single_judgments"].rows]
        stored = frame(s, "SELECT harness, bench, judge, prompt_name, model, question_id, turn, sample, raw_score, "
                          "score, parse_status, rationale FROM single_judgments", plain=True)
    mine = sorted(tuple(r[:12]) for r in judgments)
    theirs = sorted(tuple(None if v != v else v for v in row) for row in stored.itertuples(index=False))
    assert mine == theirs


def test_fastchat_exact_values(stores):
    """The first judgment line of gpt-4o_single.jsonl, as the file says, is stored as one row."""
    path = ROOT / registry.reader("fastchat").sample / "ja_mt_bench" / "model_judgment" / "gpt-4o_single.jsonl"
    rec = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    with Store(stores["fastchat"], read_only=True) as s:
        rows = frame(s, "SELECT judge, prompt_name, raw_score, rationale FROM single_judgments WHERE bench = "
                        "'ja_mt_bench' AND model = ? AND question_id = ? AND turn = ? AND judge = 'gpt-4o'",
                     [rec["model"], str(rec["question_id"]), rec["turn"]], plain=True)
        categories = frame(s, "SELECT category, count(*) AS n FROM questions GROUP BY 1 ORDER BY 1", plain=True)
    assert rows.values.tolist() == [[rec["judge"][0], rec["judge"][1], float(rec["score"]), rec["judgment"]]]
    assert categories["n"].tolist() == [10] * 8  # MT-Bench: 8 categories of 10 questions


def test_swallow_exact_values(stores):
    """The run's model comes from the folder layout; every item has 5 samples; the judge is the fork's own."""
    with Store(stores["swallow"], read_only=True) as s:
        models = frame(s, "SELECT DISTINCT model FROM single_judgments ORDER BY 1", plain=True)["model"].tolist()
        samples = frame(s, "SELECT DISTINCT count(*) AS n FROM single_judgments GROUP BY model, question_id, turn",
                        plain=True)["n"].tolist()
        judges = frame(s, "SELECT DISTINCT judge FROM single_judgments", plain=True)["judge"].tolist()
    assert models == ["hosted_vllm/fake-org/Fake-JA-Chat-8B", "hosted_vllm/fake-org/Fake-JA-Reasoner-32B"]
    assert samples == [H.SWALLOW.samples_per_item] == [5]
    assert judges == ["gpt-4o-2024-08-06"]


def test_human_exact_values(stores):
    """ana's verdict on question 1 keeps her score 4 and later label; her cleared score on question 2 is gone."""
    with Store(stores["human"], read_only=True) as s:
        scores = frame(s, "SELECT judge, question_id, score FROM item_scores WHERE harness = 'human' ORDER BY 1, 2",
                       plain=True)
        votes = frame(s, "SELECT judge, count(*) AS n FROM human_pair_votes GROUP BY 1 ORDER BY 1", plain=True)
    assert scores.values.tolist() == [["human:ana", "1", 4.0], ["human:bo", "3", 7.0]]
    assert dict(votes.values.tolist()) == {"gpt-4:pair-v2": 1, "human:author_0": 1, "human:expert_0": 3,
                                           "human:expert_1": 1}


OWN_NUMBER_READERS = [r for r in READERS if H.get(r.harness).own_rule != H.ITEM or "own" in EXPECTED[r.name]]


@pytest.mark.parametrize("reader", OWN_NUMBER_READERS, ids=[r.name for r in OWN_NUMBER_READERS])
def test_the_harness_own_number_is_reproduced(reader, stores):
    rules = H.get(reader.harness)
    by = EXPECTED[reader.name].get("own_by", ["judge", "model", "turn"])
    with Store(stores[reader.name], read_only=True) as s:
        got = queries.scores(s, by=by, rule="harness")
        got = got[got["harness"] == reader.harness]
        if "own" in EXPECTED[reader.name]:  # the published numbers, or the harness's own code's steps
            own = EXPECTED[reader.name]["own"]
            expected = own(ROOT / reader.sample) if callable(own) else own
        else:  # the harness's results file, on the judges' scale
            reported = frame(s, "SELECT model, metric, value FROM reported_metrics", plain=True)
            by_metric = {(m, k): v for m, k, v in reported.itertuples(index=False)}
            judge = got["judge"].iloc[0]
            expected = {(judge, model, turn): by_metric[(model, rules.reported_metrics[turn])] / rules.reported_scale
                        for model in got["model"].unique() for turn in (1, 2)}
    assert set(got["rule"]) == {rules.own_rule_label}
    table = {tuple(int(v) if k == "turn" else v for k, v in zip(by, row[:-1])): row[-1]
             for row in got[[*by, "mean"]].itertuples(index=False)}
    assert len(expected) >= (4 if "turn" in by else 2)
    for key, value in expected.items():
        assert table[key] == pytest.approx(value, abs=5e-5), key


def test_shaberi_exact_values(stores):
    """A null score is a failure keeping the judge's text; a backfilled {"score": 5, ...} counts as 5; ELYZA-tasks-100
    is rated on 1-5 (the harness rules' per-bench scale), so a 6 there would be out of range, a 6 on MT-Bench not."""
    from lib.ingest.formats.base import score_status

    with Store(stores["shaberi"], read_only=True) as s:
        failed = frame(s, "SELECT bench, judge, raw_score, parse_status, rationale FROM single_judgments "
                          "WHERE parse_status <> 'ok'", plain=True)
        backfilled = frame(s, "SELECT raw_score FROM single_judgments WHERE judge = 'gpt-5.1-2025-11-13' AND "
                              "question_id = '26' AND bench = 'shisa-ai/ja-mt-bench-1shot'", plain=True)
    assert failed.values.tolist() == [["elyza/ELYZA-tasks-100", "gpt-4.1-2025-04-14", None, "not_parsed",
                                       "評価できません"]]
    assert backfilled["raw_score"].tolist() == [5.0]
    with Store(stores["shaberi"], read_only=True) as s:  # the scale each source was read on is stored with it
        scales = frame(s, "SELECT DISTINCT bench, scale_min, scale_max, failure_code FROM sources WHERE kind = "
                          "'judgements' ORDER BY 1", plain=True).values.tolist()
    assert scales == [["elyza/ELYZA-tasks-100", 1.0, 5.0, None], ["shisa-ai/ja-mt-bench-1shot", 1.0, 10.0, None]]
    assert score_status(6.0, H.SHABERI, "elyza/ELYZA-tasks-100") == "out_of_range"
    assert score_status(6.0, H.SHABERI, "shisa-ai/ja-mt-bench-1shot") == "ok"


def test_nejumi_exact_values(stores):
    """Hash -> run id, '--' -> '/'; a 0 is a legal rating (0-10), -1 is the failure code; the question text the judge
    saw comes from judge_prompt."""
    with Store(stores["nejumi"], read_only=True) as s:
        models = frame(s, "SELECT DISTINCT model FROM single_judgments ORDER BY 1", plain=True)["model"].tolist()
        status = frame(s, "SELECT raw_score, parse_status, count(*) AS n FROM single_judgments WHERE raw_score IN "
                          "(-1, 0) GROUP BY ALL ORDER BY 1", plain=True)
        answers = frame(s, "SELECT DISTINCT model FROM answers ORDER BY 1", plain=True)["model"].tolist()
        seen = frame(s, "SELECT count(*) AS n FROM judge_questions", plain=True)["n"].tolist()
    assert models == answers == ["llm-jp/llm-jp-3-13b-instruct [run 3c7e96ef]",
                                 "llm-jp/llm-jp-3-13b-instruct [run 6939bdc3]"]
    assert status["parse_status"].tolist() == ["not_parsed", "ok"] and status["n"].iloc[1] > 0
    assert seen == [16 * 2]
    from lib.analysis import distributions

    with Store(stores["nejumi"], read_only=True) as s:   # a 0 gets its own bin (not counted as a 1)
        hist = distributions.score_histogram(s, unit="judgment")
        zeros = frame(s, "SELECT count(*) AS n FROM single_judgments WHERE score = 0", plain=True)["n"].iloc[0]
    assert hist["bin"].tolist() == list(range(0, 11)) and hist["count"].iloc[0] == zeros > 0


def test_fastchat_wide_pairs_map_each_game(stores):
    """winner_ab is game 1 (A = model_1); winner_ba is game 2, positions swapped (A there = model_2)."""
    path = ROOT / registry.reader("fastchat_wide").sample / "ja_mt_bench" / "model_judgment" / "gpt-4o_wide-a_vs_wide-b.jsonl"
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    game1 = {"A": "model_1", "B": "model_2", "tie": "tie"}
    game2 = {"A": "model_2", "B": "model_1", "tie": "tie"}
    with Store(stores["fastchat_wide"], read_only=True) as s:
        got = frame(s, "SELECT question_id, model_1, model_2, g1_winner, g2_winner FROM pair_judgments "
                       "ORDER BY question_id::INTEGER", plain=True).values.tolist()
    assert got == [[str(r["question_id"]), "wide-a", "wide-b", game1[r["winner_ab"]], game2[r["winner_ba"]]] for r in recs]


def test_fastchat_rating_in_text_rows(tmp_path):
    """Rows with no score field: the rating is read from the judgment the FastChat way (評価：[[9]]); none: -1."""
    folder = tmp_path / "ja" / "model_judgment"
    folder.mkdir(parents=True)
    rows = [{"question_id": 1, "model": "m", "judge": ["gpt-4", "single-v1"], "turn": 1,
             "judgment": "よい回答です。\n\n評価：[[9]]"},
            {"question_id": 2, "model": "m", "judge": ["gpt-4", "single-v1"], "turn": 1, "judgment": "評価できません"}]
    (folder / "gpt-4_single.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    with Store(tmp_path / "s.duckdb") as s:
        ingest(s, [tmp_path / "ja"])
        got = frame(s, "SELECT question_id, raw_score, parse_status FROM single_judgments ORDER BY 1", plain=True)
    assert got.values.tolist() == [["1", 9.0, "ok"], ["2", -1.0, "not_parsed"]]


def test_nejumi3_rows_are_fastchat_rows_with_hashed_models(tmp_path):
    """Nejumi 3 wrote FastChat's rows (judge list, user_prompt) under the same hashed model ids: the Nejumi reader
    takes them by the file name's hash and names the run."""
    model_id = "tokyotech-llm--Swallow-7b-instruct-v0.1_hash_" + "ab" * 32
    folder = tmp_path / "japanese_mt_bench" / "model_judgment" / "gpt-4_single"
    folder.mkdir(parents=True)
    row = {"question_id": 1, "model": model_id, "judge": ["gpt-4", "single-v1"], "turn": 1, "score": 0,
           "judgment": "評価：[[0]]", "user_prompt": "[Question]\n質問\n\n[The Start of Assistant's Answer]\n…"}
    (folder / f"{model_id}__1turn.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="utf-8")
    with Store(tmp_path / "s.duckdb") as s:
        ingest(s, [tmp_path / "japanese_mt_bench"])
        got = frame(s, "SELECT harness, judge, prompt_name, model, raw_score, parse_status FROM single_judgments",
                    plain=True).values.tolist()
    assert got == [["nejumi", "gpt-4", "single-v1", "tokyotech-llm/Swallow-7b-instruct-v0.1 [run abababab]", 0.0,
                    "ok"]]
