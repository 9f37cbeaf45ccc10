"""``scores --rule``, ``compare`` and ``pairwise`` on the command line: each harness's own numbers, exactly.

Expected numbers are computed here independently from the files, following the harnesses' own code
(FastChat show_result.py's pandas steps; Swallow's results_*.json), never from the store.
"""
from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conftest import SAMPLE

from lib.analysis import agreement, deltas
from lib.cli import main as cli
from lib.ingest.importer import ingest
from lib.store import Store

SWALLOW_RESULTS = sorted(SAMPLE.glob("swallow*/**/results_*.json"))  # every bundled Swallow run
PAIR_FILE = SAMPLE / "stefanstud-fastchat" / "mt_bench" / "model_judgment" / "gpt-4_pair.jsonl"
CATEGORIES = ["coding", "extraction", "humanities", "math", "reasoning", "roleplay", "stem", "writing"]


@pytest.fixture
def db(_sample_db, tmp_path) -> Path:
    path = tmp_path / "copy.duckdb"
    shutil.copy(_sample_db, path)
    return path


def run_json(capsys, *argv):
    assert cli(list(argv)) == 0
    out, err = capsys.readouterr()
    return json.loads(out), err


def write_jsonl(path: Path, records: list) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# scores --rule harness: Swallow
# ---------------------------------------------------------------------------------------------

def test_harness_rule_reproduces_every_swallow_judge_metric(db, capsys):
    reported = {}
    for path in SWALLOW_RESULTS:
        doc = json.loads(path.read_text(encoding="utf-8"))
        model = doc["config_general"]["model_name"]
        for metric, value in doc["results"]["swallow|japanese_mt_bench|0"].items():
            if metric.startswith("judge_score_") and not metric.endswith("_stderr"):
                reported[(model, metric)] = value
    assert len(SWALLOW_RESULTS) == 4 and len(reported) == 4 * 27

    got = {}
    common = ["--db", str(db), "--rule", "harness", "--harness", "swallow", "--format", "json"]
    for by, name in (("model,turn", "judge_score_overall_turn_{turn}_avg"), ("model", "judge_score_overall_avg"),
                     ("model,category,turn", "judge_score_{category}_turn_{turn}_avg"),
                     ("model,category", "judge_score_{category}_avg")):
        rows, err = run_json(capsys, "scores", "--by", by, *common)
        assert "averaged in" in err and all(r["rule"] == "swallow results file" for r in rows)
        for r in rows:
            got[(r["model"], name.format(**r))] = r["mean"]
    assert set(got) == set(reported)
    for key, value in reported.items():
        assert got[key] == pytest.approx(10 * value, abs=1e-9), key

    # The item rule (failures left out) is not the harness's number on this data: that is why both exist.
    rows, _ = run_json(capsys, "scores", "--db", str(db), "--by", "model", "--harness", "swallow", "--format", "json")
    item = {r["model"]: r["mean"] for r in rows}
    assert all(r["rule"] == "item" for r in rows)
    assert max(abs(item[m] - 10 * reported[(m, "judge_score_overall_avg")]) for m in item) > 0.1


# ---------------------------------------------------------------------------------------------
# scores --rule harness: FastChat show_result.py, with duplicates
# ---------------------------------------------------------------------------------------------

def _judgment(qid, model, turn, score, judge="gpt-4"):
    prompt = "single-v1" if turn == 1 else "single-v1-multi-turn"
    text = "no rating here" if score == -1 else f"Rating: [[{score}]]"
    return {"question_id": qid, "model": model, "judge": [judge, prompt], "user_prompt": "p", "judgment": text,
            "score": score, "turn": turn, "tstamp": 1700000000.0}


def fastchat_root_with_duplicates(root: Path, bench: str) -> Path:
    rng = np.random.default_rng(9)
    questions = [{"question_id": q, "category": CATEGORIES[(q - 1) // 3], "turns": ["a", "b"]} for q in range(1, 25)]
    write_jsonl(root / bench / "question.jsonl", questions)
    records = []
    for model in ("m-dup", "m-plain"):
        for q in range(1, 25):
            for turn in (1, 2):
                records.append(_judgment(q, model, turn, int(rng.integers(1, 11))))
    # m-dup: a whole re-run appended for turn 1 (uniform x2) with different verdicts, an uneven third copy of
    # some items, two unparseable ratings (-1) and an out-of-range 11 (show_result keeps it).
    records += [_judgment(q, "m-dup", 1, int(rng.integers(1, 11))) for q in range(1, 25)]
    records += [_judgment(q, "m-dup", 2, int(rng.integers(1, 11))) for q in (2, 3, 5, 7, 11)]
    records += [_judgment(4, "m-dup", 1, -1), _judgment(6, "m-dup", 2, -1), _judgment(8, "m-dup", 2, 11)]
    order = rng.permutation(len(records))                   # gen_judgment's --parallel order is arbitrary
    return write_jsonl(root / bench / "model_judgment" / "gpt-4_single.jsonl", [records[i] for i in order])


def show_result_single(path: Path) -> dict:
    """FastChat show_result.py display_result_single, its pandas steps verbatim (fastchat-format.md §8)."""
    df_all = pd.read_json(path, lines=True)
    df = df_all[["model", "score", "turn"]]
    df = df[df["score"] != -1]
    df_1 = df[df["turn"] == 1].groupby(["model", "turn"]).mean()
    df_2 = df[df["turn"] == 2].groupby(["model", "turn"]).mean()      # printed for --bench-name mt_bench only
    df_3 = df[["model", "score"]].groupby(["model"]).mean()           # "Average", mt_bench only
    out = {(m, t): float(v) for (m, t), v in df_1["score"].items()}
    out.update({(m, t): float(v) for (m, t), v in df_2["score"].items()})
    out.update({(m, None): float(v) for m, v in df_3["score"].items()})
    counts = {(m, t): int(n) for (m, t), n in df.groupby(["model", "turn"]).size().items()}
    counts.update({(m, None): int(n) for m, n in df.groupby("model").size().items()})
    return {k: (v, counts[k]) for k, v in out.items()}


@pytest.mark.parametrize("bench", ["mt_bench", "ja_mt_bench"])
def test_harness_rule_is_show_result_on_a_file_with_duplicates(tmp_path, capsys, bench):
    path = fastchat_root_with_duplicates(tmp_path / "data", bench)
    db = tmp_path / "dup.duckdb"
    with Store(db) as store:
        ingest(store, [tmp_path / "data"])
    expected = show_result_single(path)

    by_turn, err = run_json(capsys, "scores", "--db", str(db), "--rule", "harness", "--by", "model,turn",
                            "--format", "json")
    pooled, _ = run_json(capsys, "scores", "--db", str(db), "--rule", "harness", "--by", "model", "--format", "json")
    assert "turn 1 only for any bench other than mt_bench" in err
    got = {(r["model"], r["turn"]): (r["mean"], r["n"]) for r in by_turn}
    got.update({(r["model"], None): (r["mean"], r["n"]) for r in pooled})
    assert set(got) == set(expected)
    for key, (mean, n) in expected.items():
        assert got[key][0] == pytest.approx(mean, rel=1e-12, abs=1e-12), key
        assert got[key][1] == n, key
    assert all(r["rule"] == "fastchat show_result.py" and r["harness"] == "fastchat" for r in by_turn + pooled)
    assert list(by_turn[0]) == ["harness", "model", "turn", "mean", "n", "rule"]

    # The item rule averages duplicates per item first. A uniform re-run (turn 1: every item twice) leaves the
    # mean unchanged; uneven copies and the out-of-range 11 (turn 2) do not.
    items, _ = run_json(capsys, "scores", "--db", str(db), "--by", "model,turn", "--format", "json")
    item = {(r["model"], r["turn"]): r["mean"] for r in items}
    assert item[("m-plain", 2)] == pytest.approx(expected[("m-plain", 2)][0])
    assert item[("m-dup", 1)] == pytest.approx(expected[("m-dup", 1)][0])
    assert abs(item[("m-dup", 2)] - expected[("m-dup", 2)][0]) > 0.05


def test_scores_rows_carry_the_rule_in_csv_and_keep_full_precision(tmp_path, capsys):
    root = tmp_path / "data"
    write_jsonl(root / "b" / "question.jsonl", [{"question_id": q, "category": "math", "turns": ["a", "b"]}
                                                 for q in (1, 2, 3)])
    write_jsonl(root / "b" / "model_judgment" / "gpt-4_single.jsonl",
                [_judgment(1, "m", 1, 7), _judgment(2, "m", 1, 7), _judgment(3, "m", 1, 8)])
    db = tmp_path / "p.duckdb"
    with Store(db) as store:
        ingest(store, [root])
    (row,), _ = run_json(capsys, "scores", "--db", str(db), "--by", "model", "--format", "json")
    assert row["mean"] == 22 / 3 and row["rule"] == "item"            # not rounded to 10 digits
    for rule, label in (("item", "item"), ("harness", "fastchat show_result.py")):
        assert cli(["scores", "--db", str(db), "--by", "model", "--format", "csv", "--rule", rule]) == 0
        rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
        assert [r["rule"] for r in rows] == [label]
    assert cli(["scores", "--db", str(db), "--by", "model", "--rule", "harness"]) == 0
    assert "Rule 'harness'" in capsys.readouterr().out


# ---------------------------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------------------------

def test_compare_json_keys_levels_and_families(db, capsys):
    rows, err = run_json(capsys, "compare", "--db", str(db), "--a", "judge=gpt-4o", "--b", "judge=gpt-4.1-2025-04-14",
                         "--format", "json")
    assert all(list(r) == deltas.COLUMNS for r in rows)
    assert [r["level"] for r in rows] == ["cell"] * 16 + ["category"] * 8 + ["turn"] * 2 + ["all"]
    assert all(r["model"] is None for r in rows)
    assert all(r["turn"] is None for r in rows if r["level"] in ("category", "all"))
    assert all(r["category"] is None for r in rows if r["level"] in ("turn", "all"))
    assert all(r["significant"] == (r["p_adjusted"] < 0.05) for r in rows)
    assert "Student's t" in err
    direct = deltas.compare(Store(db), {"judge": "gpt-4o"}, {"judge": "gpt-4.1-2025-04-14"}, levels=("category",))
    cats = [r for r in rows if r["level"] == "category"]
    assert [r["p_adjusted"] for r in cats] == direct["p_adjusted"].tolist()   # the level is its own family

    per_model, _ = run_json(capsys, "compare", "--db", str(db), "--a", "judge=gpt-4o",
                            "--b", "judge=gpt-4.1-2025-04-14", "--per-model", "--level", "all", "--format", "json")
    assert sorted(r["model"] for r in per_model) == ["shisa-ai/shisa-v2-llama3.1-8b", "shisa-ai/shisa-v2-llama3.3-70b"]
    small = next(r for r in per_model if r["model"].endswith("8b"))
    assert small["delta"] == pytest.approx(0.4125) and small["p_adjusted"] == small["p_value"]


def test_compare_usage_errors(db, capsys):
    assert cli(["compare", "--db", str(db), "--a", "judge=gpt-4o,colour=red", "--b", "judge=x"]) == 2
    assert "allowed keys: harness, bench, judge, model" in capsys.readouterr().err
    assert cli(["compare", "--db", str(db), "--a", "judge=gpt-4o,model=a", "--b", "model=b", "--per-model"]) == 2
    assert "different models" in capsys.readouterr().err
    assert cli(["compare", "--db", str(db), "--a", "bench=ja_mt_bench", "--b", "bench=mt_bench"]) == 2
    assert "different benches" in capsys.readouterr().err


# ---------------------------------------------------------------------------------------------
# pairwise
# ---------------------------------------------------------------------------------------------

def show_result_pairwise(path: Path, baseline: str | None) -> dict:
    """FastChat show_result.py display_result_pairwise, its steps verbatim (fastchat-format.md §8)."""
    df_all = pd.read_json(path, lines=True)
    df_all = df_all[(df_all["g1_winner"] != "error") & (df_all["g2_winner"] != "error")]
    list_res = []
    for _, row in df_all.iterrows():
        if baseline is not None and baseline not in [row["model_1"], row["model_2"]]:
            continue
        if row["g1_winner"] == "tie" or row["g1_winner"] != row["g2_winner"]:
            list_res.append({"model": row["model_1"], "win": 0, "loss": 0, "tie": 1})
            list_res.append({"model": row["model_2"], "win": 0, "loss": 0, "tie": 1})
        else:
            if row["g1_winner"] == "model_1":
                winner, loser = row["model_1"], row["model_2"]
            else:
                winner, loser = row["model_2"], row["model_1"]
            list_res.append({"model": winner, "win": 1, "loss": 0, "tie": 0})
            list_res.append({"model": loser, "win": 0, "loss": 1, "tie": 0})
    df = pd.DataFrame(list_res).groupby(["model"]).sum()
    if baseline is not None:
        df = df[df.index != baseline]
    total = df["win"] + df["loss"] + df["tie"]
    df["win_rate"] = df["win"] / total
    df["loss_rate"] = df["loss"] / total
    df["win_rate_adjusted"] = (df["win"] + 0.5 * df["tie"]) / total
    return {m: r.to_dict() for m, r in df.iterrows()}


PAIR_KEYS = ("win", "loss", "tie", "win_rate", "loss_rate", "win_rate_adjusted")


def assert_same(got_rows: list[dict], expected: dict) -> None:
    got = {r["model"]: r for r in got_rows}
    assert set(got) == set(expected)
    for model, exp in expected.items():
        for key in PAIR_KEYS:
            assert got[model][key] == pytest.approx(exp[key], rel=1e-12), (model, key)


def test_pairwise_all_is_show_result_on_the_real_file(db, capsys):
    out, err = run_json(capsys, "pairwise", "--db", str(db), "--bench", "mt_bench", "--format", "json")
    assert out["policy"] == "fastchat" and "show_result" in err
    assert_same(out["win_rates"], show_result_pairwise(PAIR_FILE, None))
    dpo = next(r for r in out["win_rates"] if r["model"] == "phi-3-dpo")
    assert (dpo["win"], dpo["loss"], dpo["tie"], round(dpo["win_rate_adjusted"], 4)) == (20, 18, 35, 0.5137)
    page = agreement.position_consistency(Store(db), bench="mt_bench")        # what the Judge agreement page shows
    (pos,) = out["position_consistency"]
    assert list(pos) == ["bench", "judge", "n", "consistent", "rate", "favors_first", "favors_second"]
    row = page.iloc[0]
    assert (pos["n"], pos["consistent"], pos["rate"], pos["favors_first"], pos["favors_second"]) == (
        row["n"], row["consistent"], row["consistency"], row["favors_first"], row["favors_second"])


def test_pairwise_baseline_mode_on_a_constructed_file(tmp_path, capsys):
    rng = np.random.default_rng(4)
    models = ["base", "m1", "m2", "m3"]
    outcomes = ["model_1", "model_2", "tie", "error"]
    records = []
    for q in range(1, 41):
        for turn in (1, 2):
            for i, j in ((0, 1), (0, 2), (3, 0), (1, 2), (2, 3)):
                g1, g2 = rng.choice(outcomes, p=[0.35, 0.3, 0.25, 0.1]), rng.choice(outcomes, p=[0.35, 0.3, 0.25, 0.1])
                records.append({"question_id": q, "model_1": models[i], "model_2": models[j], "g1_winner": str(g1),
                                "g2_winner": str(g2), "judge": ["gpt-4", "pair-v2"], "g1_user_prompt": "p",
                                "g1_judgment": "j", "g2_user_prompt": "p", "g2_judgment": "j", "turn": turn,
                                "tstamp": 1.0})
    path = write_jsonl(tmp_path / "data" / "b" / "model_judgment" / "gpt-4_pair.jsonl", records)
    db = tmp_path / "pairs.duckdb"
    with Store(db) as store:
        ingest(store, [tmp_path / "data"])
    out, _ = run_json(capsys, "pairwise", "--db", str(db), "--baseline", "base", "--format", "json")
    assert_same(out["win_rates"], show_result_pairwise(path, "base"))
    assert {r["baseline"] for r in out["win_rates"]} == {"base"}
    everyone, _ = run_json(capsys, "pairwise", "--db", str(db), "--format", "json")
    assert_same(everyone["win_rates"], show_result_pairwise(path, None))
    assert cli(["pairwise", "--db", str(db), "--policy", "strict"]) == 0
    assert "== position consistency" in capsys.readouterr().out
