"""JudgeLens's own sources of verdicts: re-judges made here and the analyst's verdicts. Neither has a rule of its
own: their numbers are JudgeLens's per-item means."""
from __future__ import annotations

from lib.harness.base import ITEM, Harness

REJUDGE = Harness(name="judgelens", title="JudgeLens re-judge", imported=False, own_rule=ITEM,
                  parsed_by_template=True)    # stored judge prompts: the JSON message lists sent
HUMAN = Harness(name="human", title="the analysts' verdicts", imported=False, own_rule=ITEM)
