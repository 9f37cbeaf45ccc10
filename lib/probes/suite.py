"""The probe suite's public API in one import (``from lib.probes import suite as P``); the code lives in
one module per concern (see ``lib.probes``)."""
from __future__ import annotations

from lib.errors import ProbeError
from lib.probes.ablation import Block, Variant, ablation_variants, find_blocks
from lib.probes.canaries import (CONFUSION_REF_SHARE, INJECTION, NON_ANSWER, OFF_TOPIC, WHITESPACE, WRONG_LANGUAGE,
                                 canary_text, is_japanese, single_fail, truncate_mid_sentence, with_answer)
from lib.probes.items import sample_items, sample_pair_items, uses_turn_2
from lib.probes.runner import run_probes
from lib.probes.spec import (ABLATIONS, ALL_PROBES, CANARIES, DEFAULT_ITEMS, DEFAULT_NOISE_ITEMS, DEFAULT_REPEATS,
                             MIN_TRUNCATE_CHARS, NOISE_MAX_STD, NOISE_MIN_AGREEMENT, POSITION_CONSISTENCY_MIN,
                             PROBE_GROUPS, PROBES, TRUNCATE_SHARE, ProbeResult, ProbeRun, ProbeSpec)
from lib.probes.storage import (ProbeComparison, compare_probe_runs, list_probe_runs, load_probe_run, probe_table,
                                save_probe_run)
from lib.probes.verdict import summary_text, verdict_word

__all__ = [
    "ABLATIONS", "ALL_PROBES", "CANARIES", "CONFUSION_REF_SHARE", "DEFAULT_ITEMS", "DEFAULT_NOISE_ITEMS",
    "DEFAULT_REPEATS", "INJECTION", "MIN_TRUNCATE_CHARS", "NOISE_MAX_STD", "NOISE_MIN_AGREEMENT", "NON_ANSWER",
    "OFF_TOPIC", "POSITION_CONSISTENCY_MIN", "PROBES", "PROBE_GROUPS", "TRUNCATE_SHARE", "WHITESPACE",
    "WRONG_LANGUAGE", "Block", "ProbeComparison", "ProbeError", "ProbeResult", "ProbeRun", "ProbeSpec", "Variant",
    "ablation_variants", "canary_text", "compare_probe_runs", "find_blocks", "is_japanese", "list_probe_runs",
    "load_probe_run", "probe_table", "run_probes", "sample_items", "sample_pair_items", "save_probe_run",
    "single_fail", "summary_text", "truncate_mid_sentence", "uses_turn_2", "verdict_word", "with_answer",
]
