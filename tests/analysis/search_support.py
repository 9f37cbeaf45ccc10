"""What the search tests share: writing FastChat JSONL, a judgment record, the sample's counts read from its JSONL
files directly (plain Python, no JudgeLens), and texts that do and do not get a lowered NFKC copy."""
from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

from conftest import ROOT
from lib.analysis import search as S

SAMPLE = ROOT / "data" / "sample"


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


def judgment(qid, model, judge, text, score, turn=1, prompt="[Instruction] judge this"):
    return {"question_id": qid, "model": model, "judge": [judge, "single-v1"], "user_prompt": prompt,
            "judgment": text, "score": score, "turn": turn, "tstamp": 1.0}


def nfkc_lower(text: str) -> str:
    return unicodedata.normalize("NFKC", text).lower()


def plain_count(needle: str, regex: str | None = None, root: Path = SAMPLE) -> dict[str, int]:
    """Count records containing the needle by reading the sample's FastChat JSONL files directly."""
    counts = dict.fromkeys(S.FIELDS, 0)

    def hit(text):
        text = nfkc_lower(text or "")
        return bool(re.search(regex, text, re.I)) if regex else nfkc_lower(needle) in text

    for path in root.rglob("*.jsonl"):
        rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        if path.name == "question.jsonl":
            counts["question"] += sum(hit(t) for r in rows for t in r["turns"])
        elif path.parent.name in ("model_answer", "reference_answer"):
            field = "answer" if path.parent.name == "model_answer" else "reference"
            counts[field] += sum(hit(t) for r in rows for c in r["choices"] for t in c["turns"])
        elif path.name.endswith("_single.jsonl"):
            counts["rationale"] += sum(hit(r["judgment"]) for r in rows)
            counts["prompt"] += sum(hit(r["user_prompt"]) for r in rows)
    return counts


MIXED = [  # (text, does it get a lowered copy? None: no, but NFKC changes local characters: norm '')
    ("Plain ASCII Python text", False),
    ("日本語の説明です。理由を述べます", False),
    ("ＰＹＴＨＯＮ（全角）で書かれた文章", None),  # NFKC changes only local characters (full-width ASCII)
    ("ｶﾞｲﾄﾞ ﾃｷｽﾄ half-width katakana", True),
    ("ligature ﬁle and №１０", True),
    ("İstanbul ẞTRASSE σοφός", True),   # stable, but case folding there differs from lower(): copied too
    ("Straße über naïve", False),
    ("cafe\u0301 combining", True),
]
