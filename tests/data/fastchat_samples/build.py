"""Build this constructed multi-sample FastChat fork sample (see README.md): python tests/data/fastchat_samples/build.py"""
import json
import random
from pathlib import Path

BENCH = Path(__file__).resolve().parent / "ja_mt_bench"
N = 5
SINGLE = ("[Instruction]\nPlease act as an impartial judge ...\n\n[Question]\n{q}\n\n[The Start of Assistant's Answer]\n"
          "{a}\n[The End of Assistant's Answer]")
MULTI = ("<|The Start of Assistant A's Conversation with User|>\n\n### User:\n{q1}\n\n### Assistant A:\n{a1}\n\n"
         "### User:\n{q2}\n\n### Assistant A:\n{a2}\n\n<|The End of Assistant A's Conversation with User|>")


def write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main() -> None:
    rng = random.Random(5)
    questions = [{"question_id": i, "category": c, "turns": [f"問{i}の1", f"問{i}の2"]}
                 for i, c in enumerate(["writing", "roleplay", "math", "coding", "stem", "humanities"], 1)]
    write(BENCH / "question.jsonl", questions)
    judgments = []
    for model in ("fork-a", "fork-b"):
        answers = [{"question_id": q["question_id"], "model_id": model,
                    "choices": [{"index": i, "turns": [f"{model}/{i}の答え1", f"{model}/{i}の答え2"]} for i in range(N)]}
                   for q in questions]
        write(BENCH / "model_answer" / f"{model}.jsonl", answers)
        for q, a in zip(questions, answers):
            for turn in (1, 2):
                scores = [rng.randint(1, 10) for _ in range(N)]
                if q["question_id"] == 3 and model == "fork-a":
                    scores[turn] = -1   # a rating that was not parsed
                prompts = [SINGLE.format(q=q["turns"][0], a=c["turns"][0]) if turn == 1 else
                           MULTI.format(q1=q["turns"][0], a1=c["turns"][0], q2=q["turns"][1], a2=c["turns"][1])
                           for c in a["choices"]]
                judgments.append({"question_id": q["question_id"], "model": model,
                                  "judge": ["gpt-4", "single-v1" if turn == 1 else "single-v1-multi-turn"],
                                  "user_prompt": prompts, "judgment": [f"Rating: [[{s}]]" for s in scores],
                                  "score": scores, "turn": turn, "tstamp": 1700000000.0 + len(judgments)})
    write(BENCH / "model_judgment" / "gpt-4_single.jsonl", judgments)


if __name__ == "__main__":
    main()
