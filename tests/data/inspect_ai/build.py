"""Build this constructed Inspect AI sample (see README.md): python tests/data/inspect_ai/build.py"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))   # tests/, for zip_support
from zip_support import zstd_zip  # noqa: E402

QUESTIONS = {"1": ("writing", "春についての短い詩を書いてください。"), "2": ("math", "12 × 13 は？"),
             "3": ("stem", "光合成を説明してください。"), "4": ("humanities", "明治維新とは何ですか？")}
SCORES = {("1", 1): 8, ("1", 2): 7, ("2", 1): 10, ("2", 2): 9, ("3", 1): 6, ("3", 2): None, ("4", 1): 3, ("4", 2): 5}


def sample(qid: str, epoch: int, score) -> dict:
    category, question = QUESTIONS[qid]
    answer = f"回答{qid}（epoch {epoch}）"
    out = {"id": int(qid), "epoch": epoch, "input": [{"role": "user", "content": question}], "target": "",
           "messages": [{"role": "system", "content": "あなたは誠実なアシスタントです。"},
                        {"role": "user", "content": question},
                        {"role": "assistant", "content": [{"type": "text", "text": answer}]}],
           "output": {"model": "gpt-4o-mini-2024-07-18",
                      "choices": [{"message": {"role": "assistant", "content": [{"type": "text", "text": answer}]},
                                   "stop_reason": "stop"}], "completion": answer},
           "metadata": {"category": category}}
    if score is not None:
        out["scores"] = {"model_graded_score": {"value": score, "answer": answer,
                                                "explanation": f"よい回答です。Rating: [[{score}]]"}}
    return out


def main() -> None:
    samples = [sample(q, e, s) for (q, e), s in SCORES.items()]
    per_sample = {}
    for (q, _), s in SCORES.items():
        if s is not None:
            per_sample.setdefault(q, []).append(s)
    mean = sum(sum(v) / len(v) for v in per_sample.values()) / len(per_sample)   # epochs reduced by mean, then mean
    header = {"version": 2, "status": "success",
              "eval": {"run_id": "Fk2q8Lw3", "task": "ja_mt_bench_single", "task_id": "t1", "created":
                       "2026-02-01T10:00:00+00:00", "model": "openai/gpt-4o-mini",
                       "model_generate_config": {"temperature": 0.7}, "dataset": {"name": "ja_mt_bench", "samples": 4},
                       "config": {"epochs": 2}},
              "plan": {"name": "plan", "steps": [{"solver": "generate"}]},
              "results": {"total_samples": 4, "completed_samples": 4,
                          "scores": [{"name": "model_graded_score", "scorer": "model_graded_score", "reducer": "mean",
                                      "metrics": {"mean": {"name": "mean", "value": mean},
                                                  "stderr": {"name": "stderr", "value": 0.5}}}]},
              "stats": {"started_at": "2026-02-01T10:00:00+00:00", "completed_at": "2026-02-01T10:05:00+00:00"}}
    members = {"header.json": header, "_journal/start.json": {"version": 2, "eval": header["eval"]},
               "summaries.json": [{"id": s["id"], "epoch": s["epoch"]} for s in samples],
               **{f"samples/{s['id']}_epoch_{s['epoch']}.json": s for s in samples}}
    (HERE / "logs").mkdir(exist_ok=True)
    (HERE / "logs" / "2026-02-01T10-00-00+00-00_ja-mt-bench-single_Fk2q8Lw3.eval").write_bytes(
        zstd_zip({k: json.dumps(v, ensure_ascii=False, indent=2).encode() for k, v in members.items()}))
    # a .json log: the whole EvalLog; a C/I-graded (model_graded_qa) task, one epoch
    graded = [("1", "C"), ("2", "I"), ("3", "C")]
    json_samples = [{**sample(q, 1, None), "scores": {"model_graded_qa": {"value": v, "explanation": f"GRADE: {v}"}}}
                    for q, v in graded]
    accuracy = sum(1.0 if v == "C" else 0.0 for _, v in graded) / len(graded)
    log = {**header, "eval": {**header["eval"], "run_id": "Qa7Zp2", "task": "ja_qa_graded", "config": {"epochs": 1}},
           "results": {"total_samples": 3, "completed_samples": 3,
                       "scores": [{"name": "model_graded_qa", "scorer": "model_graded_qa",
                                   "metrics": {"accuracy": {"name": "accuracy", "value": accuracy}}}]},
           "samples": json_samples}
    (HERE / "logs" / "2026-02-01T11-00-00+00-00_ja-qa-graded_Qa7Zp2.json").write_text(
        json.dumps(log, ensure_ascii=False, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
