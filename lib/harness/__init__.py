"""The harness rules, one record per harness (``lib.harness.base.Harness``), and their registry.

Ask ``harness.get(name)`` for a stored row's harness instead of comparing names:

    from lib import harness
    h = harness.get(row.harness)
    h.own_rule, h.samples_per_item, h.judge_sees_think, h.generation.temperature["writing"], ...
    harness.where(own_rule=harness.SHOW_RESULT)       # the harnesses with that rule
    harness.sql_is("j.harness", harness.where(multi_sample=True))   # the same, as SQL

Adding a harness: its module here, one line in ``_REGISTERED``, its reader in ``lib.ingest.formats``.
"""
from __future__ import annotations

from lib.harness.base import (CATEGORY_MEANS, GENERIC, ITEM, SAMPLE_RUNS, OWN_RULES, PROMPT_FAMILY_PREFIX, RESULTS_FILE, SHOW_RESULT, Generation,
                              Harness, all, get, names, register, sql_in, sql_is, sql_is_not, where)
from lib.harness.fastchat import FASTCHAT
from lib.harness.fastchat_samples import FASTCHAT_SAMPLES
from lib.harness.fastchat_wide import FASTCHAT_WIDE
from lib.harness.inspect_ai import INSPECT
from lib.harness.local import HUMAN, REJUDGE
from lib.harness.nejumi import NEJUMI
from lib.harness.shaberi import SHABERI
from lib.harness.swallow import SWALLOW

_REGISTERED = (FASTCHAT, SWALLOW, SHABERI, NEJUMI, FASTCHAT_SAMPLES, FASTCHAT_WIDE, INSPECT, REJUDGE, HUMAN)
for _h in _REGISTERED:
    register(_h)

# the harness a link names when a row does not say (an imported FastChat judgment)
DEFAULT = FASTCHAT

__all__ = ["FASTCHAT", "SWALLOW", "SHABERI", "NEJUMI", "FASTCHAT_SAMPLES", "FASTCHAT_WIDE", "INSPECT", "REJUDGE", "HUMAN", "GENERIC",
           "DEFAULT", "Harness", "Generation", "ITEM",
           "SHOW_RESULT", "RESULTS_FILE", "CATEGORY_MEANS", "SAMPLE_RUNS", "OWN_RULES", "PROMPT_FAMILY_PREFIX", "all", "get", "names", "register",
           "sql_in", "sql_is", "sql_is_not", "where"]
