"""Build this constructed wide-row FastChat fork sample (see README.md): python tests/data/fastchat_wide/build.py"""
import json
import random
from pathlib import Path

BENCH = Path(__file__).resolve().parent / "ja_mt_bench"


def write(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def main() -> None:
    rng = random.Random(7)
    questions = [{"question_id": i, "category": c, "turns": [f"問{i}の1", f"問{i}の2"]}
                 for i, c in enumerate(["writing", "math", "stem", "humanities", "roleplay"], 1)]
    write(BENCH / "question.jsonl", questions)
    single = []
    for judge in ("gpt-4o", "gpt-4.1"):
        for model in ("wide-a", "wide-b"):
            for q in questions:
                s1, s2 = rng.randint(1, 10), rng.randint(1, 10)
                if (judge, model, q["question_id"]) == ("gpt-4o", "wide-a", 2):
                    s2 = -1
                single.append({"question_id": q["question_id"], "model_id": model, "judge_id": judge,
                               "score_turn1": s1, "score_turn2": s2, "judgment_turn1": f"評価：[[{s1}]]",
                               "judgment_turn2": f"評価：[[{s2}]]" if s2 > 0 else "評価できません"})
    write(BENCH / "model_judgment" / "wide_single.jsonl", single)
    pairs = []
    for q in questions:
        ab, ba = rng.choice(["A", "B", "tie"]), rng.choice(["A", "B", "tie"])
        winner = ab if (ab, ba) in (("A", "B"), ("B", "A"), ("tie", "tie")) and ab == {"A": "A", "B": "B",
                                                                                         "tie": "tie"}[ab] else "inconsistent"
        pairs.append({"question_id": q["question_id"], "model_a": "wide-a", "model_b": "wide-b", "judge_id": "gpt-4o",
                      "winner": winner, "winner_ab": ab, "winner_ba": ba, "turn": 1})
    write(BENCH / "model_judgment" / "gpt-4o_wide-a_vs_wide-b.jsonl", pairs)


if __name__ == "__main__":
    main()
