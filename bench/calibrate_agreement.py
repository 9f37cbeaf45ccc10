"""Coverage of the Judge agreement page's 95 % intervals (issue 23). Not a test.

Simulates judge pairs with planted agreement (``lib.analysis.agreement_calibration``: 2 models x 2 turns per
question, a question effect and per-judge question leniencies, integer 1-10 scores) at 10, 80 and 800
questions, and runs every statistic through the page's cluster bootstrap over questions
(``lib.analysis.agreement_ci``) with each interval method. Per statistic, method and number of questions:

- coverage: share of replicates whose interval holds the planted value (goal 0.93-0.97; the +- is 2 SE); the
  statistics are the pair statistics and Krippendorff's alpha (interval, ordinal) of the two judges;
- width: mean interval width; below / above: the truth fell below / above the interval.

A last block resamples *items* instead of questions at 80 questions, for contrast (the wrong unit).

    .venv/bin/python bench/calibrate_agreement.py                       # ~5 min on one core
    .venv/bin/python bench/calibrate_agreement.py --replicates 10:200,80:200 --json bench/out/agreement.json
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lib.analysis.agreement_calibration import calibrate, planted_truth  # noqa: E402

GOAL = (0.93, 0.97)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--replicates", default="10:1000,80:500,800:200",
                        help="comma-separated QUESTIONS:REPLICATES")
    parser.add_argument("--boot", type=int, default=1000, help="bootstrap replicates per interval")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-contrast", action="store_true", help="skip the item-level bootstrap block")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    truth = planted_truth()
    print("Planted truth: " + ", ".join(f"{k} {v:.4f}" for k, v in truth.items()))
    rows = []
    plan = [tuple(int(x) for x in part.split(":")) for part in args.replicates.split(",") if part.strip()]
    blocks = [(g, r, False) for g, r in plan] + ([] if args.no_contrast else [(80, 200, True)])
    for g, r, item_level in blocks:
        start = time.perf_counter()
        result = calibrate(g, r, args.seed, n_boot=args.boot, truth=truth, item_level=item_level)
        unit = "ITEMS (wrong unit, contrast)" if item_level else "questions"
        slack = 2 * math.sqrt(0.95 * 0.05 / r)
        print(f"\n## {g} questions, {r} replicates, {args.boot} bootstrap draws resampling {unit}, "
              f"{time.perf_counter() - start:.0f} s (±{slack:.3f} = 2 SE)")
        print("| statistic | method | coverage | width | below | above | verdict |\n|---|---|---|---|---|---|---|")
        for row in sorted(result, key=lambda x: (x["statistic"], x["method"])):
            ok = GOAL[0] - slack <= row["coverage"] <= GOAL[1] + slack
            print(f"| {row['statistic']} | {row['method']} | {row['coverage']:.3f} | {row['mean_width']:.3f} | "
                  f"{row['truth_below']:.3f} | {row['truth_above']:.3f} | {'ok' if ok else 'MISS'} |")
            rows.append({**row, "unit": "item" if item_level else "question", "seed": args.seed})
    print("\nGoal: coverage 0.93-0.97 (within 2 SE). The page uses the 'expanded' method; below 20 questions it "
          "warns that intervals may be too narrow.")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
