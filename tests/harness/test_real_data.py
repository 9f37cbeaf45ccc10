"""The bundled real data gives the harnesses' own numbers (fastchat-format.md §11, swallow-format.md -1 trap)."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections import defaultdict
from statistics import mean

import pytest
from conftest import JA, ROOT, SAME_MODELS, SWALLOW

from lib.analysis import queries

JA_JUDGMENTS = sorted((JA / "ja_mt_bench" / "model_judgment").glob("*_single.jsonl"))
L70 = "shisa-ai/shisa-v2-llama3.3-70b"
L8 = "shisa-ai/shisa-v2-llama3.1-8b"
# fastchat-format.md §11: what the JA harness's own show_result gives (T1, T2), 80 items per turn
HARNESS_MEANS = {
    ("gpt-4o", L70): (9.0750, 7.8125),
    ("gpt-4.1-2025-04-14", L70): (8.9625, 7.8500),
    ("gpt-4.1-mini-2025-04-14", L70): (8.8875, 7.9625),
    ("gpt-4o", L8): (7.6375, 7.1750),
    ("gpt-4.1-2025-04-14", L8): (7.4125, 6.5750),
    ("gpt-4.1-mini-2025-04-14", L8): (7.6125, 6.9375),
}
SWALLOW_RUNS = ["hosted_vllm/fake-org/Fake-JA-Chat-8B", "hosted_vllm/fake-org/Fake-JA-Reasoner-32B",
                # data/sample/swallow-same-models: the two JA-harness models through the Swallow pipeline
                "hosted_vllm/shisa-ai/shisa-v2-llama3.1-8b", "hosted_vllm/shisa-ai/shisa-v2-llama3.3-70b"]


@pytest.fixture(scope="module")
def cli_scores_json(_sample_db, tmp_path_factory) -> list[dict]:
    db = tmp_path_factory.mktemp("cli") / "copy.duckdb"
    shutil.copy(_sample_db, db)
    proc = subprocess.run([sys.executable, "-m", "lib.cli", "scores", "--db", str(db), "--by", "judge,model,turn",
                           "--format", "json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    # the whole sample is in the store: keep the JA harness's two models (the other benches judge other models)
    return [r for r in rows if r["model"] in (L70, L8)]


def means_from_jsonl() -> dict[tuple[str, str, int], tuple[float, int]]:
    """FastChat's rule straight from the files: drop score == -1, group by judge[0], model, turn."""
    groups: dict[tuple[str, str, int], list[float]] = defaultdict(list)
    for path in JA_JUDGMENTS:
        for line in path.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            rec = json.loads(line)
            if rec["score"] == -1:
                continue
            groups[(rec["judge"][0], rec["model"], rec["turn"])].append(float(rec["score"]))
    return {k: (mean(v), len(v)) for k, v in groups.items()}


def test_cli_scores_match_the_harness(cli_scores_json):
    got = {(r["judge"], r["model"], r["turn"]): (r["mean"], r["n"]) for r in cli_scores_json}
    assert set(cli_scores_json[0]) == {"judge", "model", "turn", "mean", "n", "rule"}
    expected = {}
    for (judge, model), (t1, t2) in HARNESS_MEANS.items():
        expected[(judge, model, 1)] = t1
        expected[(judge, model, 2)] = t2
    assert set(got) == set(expected)
    for key, value in expected.items():
        assert got[key][0] == pytest.approx(value, abs=5e-5), key
        assert got[key][1] == 80, key


def test_cli_scores_match_an_independent_computation(cli_scores_json):
    independent = means_from_jsonl()
    got = {(r["judge"], r["model"], r["turn"]): (r["mean"], r["n"]) for r in cli_scores_json}
    assert len(independent) == 12 and set(got) == set(independent)
    for key, (m, n) in independent.items():
        assert got[key][0] == pytest.approx(m, rel=1e-12), key
        assert got[key][1] == n == 80, key


def _harness_turn_avg(rows: list[tuple[str, float]]) -> float:
    """Swallow's judge_score_overall_turn_k_avg: per doc the mean of its 5 raw samples INCLUDING -1, docs whose
    mean is -1 dropped, the mean of the rest, / 10 (swallow-format.md, "the -1 trap")."""
    per_doc: dict[str, list[float]] = defaultdict(list)
    for qid, raw in rows:
        per_doc[qid].append(raw)
    assert all(len(v) == 5 for v in per_doc.values())
    doc_means = [sum(v) / len(v) for v in per_doc.values()]
    kept = [m for m in doc_means if m != -1]
    return sum(kept) / len(kept) / 10


@pytest.mark.parametrize("model", SWALLOW_RUNS)
@pytest.mark.parametrize("turn", [1, 2])
def test_swallow_reported_turn_average_is_reproduced(sample_store, model, turn):
    """Nothing was lost or changed in the explode: the harness's own number comes back from the stored rows."""
    with sample_store.read() as cur:
        rows = cur.execute("SELECT question_id, raw_score FROM single_judgments WHERE harness = 'swallow' "
                           "AND model = ? AND turn = ?", [model, turn]).fetchall()
        reported = cur.execute("SELECT value FROM reported_metrics WHERE model = ? AND metric = ? AND task = "
                               "'swallow|japanese_mt_bench|0'", [model, f"judge_score_overall_turn_{turn}_avg"]).fetchall()
    assert len(rows) == 400 and len(reported) == 1
    assert _harness_turn_avg(rows) == pytest.approx(reported[0][0], abs=1e-9)


def test_swallow_results_file_is_what_was_stored(sample_store):
    paths = sorted((SWALLOW / "results").rglob("results_*.json")) + sorted((SAME_MODELS / "results").rglob("results_*.json"))
    assert len(paths) == 4
    for path in paths:
        doc = json.loads(path.read_text(encoding="utf-8"))
        model = doc["config_general"]["model_name"]
        metrics = doc["results"]["swallow|japanese_mt_bench|0"]
        with sample_store.read() as cur:
            stored = dict(cur.execute("SELECT metric, value FROM reported_metrics WHERE model = ? AND task = "
                                      "'swallow|japanese_mt_bench|0'", [model]).fetchall())
        assert stored == {k: v for k, v in metrics.items() if not k.endswith("_stderr") and isinstance(v, float)}


def test_leaderboard(sample_store):
    board = queries.leaderboard(sample_store)
    swallow = board[board.harness == "swallow"].set_index("model")
    for model in SWALLOW_RUNS:
        with sample_store.read() as cur:
            reported = dict(cur.execute("SELECT metric, value FROM reported_metrics WHERE model = ?", [model]).fetchall())
        assert swallow.loc[model, "t1_harness"] == pytest.approx(10 * reported["judge_score_overall_turn_1_avg"], abs=1e-12)
        assert swallow.loc[model, "t2_harness"] == pytest.approx(10 * reported["judge_score_overall_turn_2_avg"], abs=1e-12)
        # JudgeLens's own number leaves -1 out instead of averaging it in, so it is higher, never equal
        assert swallow.loc[model, "t1"] > swallow.loc[model, "t1_harness"]
        # items: (question, turn) with at least one usable sample; a doc whose 5 samples all failed has none
        with sample_store.read() as cur:
            raw = cur.execute("SELECT question_id, turn, raw_score FROM single_judgments WHERE model = ?", [model]).fetchall()
        assert swallow.loc[model, "n_items"] == len({(q, t) for q, t, r in raw if r != -1})
    # same-models: 19 and 11 failed samples, but no item lost all five (its README)
    assert swallow["n_items"].to_dict() == {SWALLOW_RUNS[0]: 159, SWALLOW_RUNS[1]: 154, SWALLOW_RUNS[2]: 160,
                                            SWALLOW_RUNS[3]: 160}
    ja = board[(board.harness == "fastchat") & (board.bench == "ja_mt_bench")].set_index(["judge", "model"])
    for (judge, model), (t1, t2) in HARNESS_MEANS.items():
        assert ja.loc[(judge, model), "t1"] == pytest.approx(t1, abs=5e-5)
        assert ja.loc[(judge, model), "t1_harness"] == pytest.approx(t1, abs=5e-5)
        assert ja.loc[(judge, model), "t2"] == pytest.approx(t2, abs=5e-5)
        assert ja.loc[(judge, model), "n_items"] == 160
