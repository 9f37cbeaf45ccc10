"""Calibration of the answer-feature split's intervals (issue 25, point 11). Not a test.

Runs ``lib.analysis.feature_calibration``: items of G questions fall in a feature bin independently (a question's
answers land in different bins); the bin mean's question-clustered t interval and the bin gap's paired t interval
(``deltas.compare_pairs``) are checked for coverage at 10 and 80 questions per bin (goal >= 0.93).

    .venv/bin/python bench/calibrate_feature_bins.py                 # 2,000 replicates per size
    .venv/bin/python bench/calibrate_feature_bins.py --replicates 500
"""
from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from lib.analysis.feature_calibration import calibrate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = {}
    for g in (10, 80):
        r = calibrate(args.replicates, g, seed=args.seed)
        se = 2 * math.sqrt(0.95 * 0.05 / r["replicates"])
        out[g] = r
        print(f"{g:3d} questions per bin: mean coverage {r['mean_coverage']:.3f}, gap coverage "
              f"{r['gap_coverage']:.3f} (+- {se:.3f}, {r['replicates']} replicates)")
    print(json.dumps(out))


if __name__ == "__main__":
    main()
