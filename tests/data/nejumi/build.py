"""Build this constructed Nejumi Leaderboard 4 sample (see README.md): python tests/data/nejumi/build.py"""
import hashlib
import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE / "japanese_mt_bench"
CATS = ["writing", "roleplay", "reasoning", "math", "coding", "extraction", "stem", "humanities"]
JUDGE = "gpt-4o-2024-11-20"
RUNS = {"run-a": "2025-03-01 10:00:00.000001", "run-b": "2025-03-08 09:30:00.000002"}  # the hash is of a time
MODEL = "llm-jp/llm-jp-3-13b-instruct"
SINGLE = "[Instruction]\nPlease act as an impartial judge ...\n\n[Question]\n{q}\n\n[The Start of Assistant's Answer]\n{a}\n[The End of Assistant's Answer]"
MULTI = ("<|The Start of Assistant A's Conversation with User|>\n\n### User:\n{q1}\n\n### Assistant A:\n{a1}\n\n"
         "### User:\n{q2}\n\n### Assistant A:\n{a2}\n\n<|The End of Assistant A's Conversation with User|>")


def write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main() -> None:
    rng = random.Random(22)
    questions = [{"question_id": i + 1, "category": CATS[i // 2], "turns": [f"質問{i + 1}の1", f"質問{i + 1}の2"]}
                 for i in range(16)]
    write(BENCH / "question.jsonl", questions)
    for run, started in RUNS.items():
        model_id = f"{MODEL.replace('/', '--')}_hash_{hashlib.sha256(started.encode()).hexdigest()}"
        answers = [{"question_id": q["question_id"], "model_id": model_id,
                    "choices": [{"index": 0, "turns": [f"{run}の回答{q['question_id']}の1", f"{run}の回答{q['question_id']}の2"]}]}
                   for q in questions]
        write(BENCH / "model_answer" / f"{model_id}.jsonl", answers)
        judge_count = 2 if run == "run-a" else 1   # cfg.mtbench.judge_count: every match repeated
        for turn in (1, 2):
            rows = []
            for _ in range(judge_count):
                for q, a in zip(questions, answers):
                    t = a["choices"][0]["turns"]
                    prompt = (SINGLE.format(q=q["turns"][0], a=t[0]) if turn == 1 else
                              MULTI.format(q1=q["turns"][0], a1=t[0], q2=q["turns"][1], a2=t[1]))
                    score = rng.choice([0, 1, 3, 5, 6, 7, 8, 9, 10])
                    if q["question_id"] == 5 and turn == 2 and run == "run-a":
                        score = -1  # the leaderboard drops -1
                    rows.append({"question_id": q["question_id"], "model": model_id, "judge_model": JUDGE,
                                 "judge_prompt_template": "single-v1" if turn == 1 else "single-v1-multi-turn",
                                 "judge_prompt": prompt, "judgment": f"説明。評価：[[{score}]]", "score": score,
                                 "turn": turn, "tstamp": 1740800000.0 + len(rows)})
            write(BENCH / "model_judgment" / f"{JUDGE}_single" / f"{model_id}__{turn}turn.jsonl", rows)


if __name__ == "__main__":
    main()
