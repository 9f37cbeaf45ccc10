"""What a harness is, as the rest of JudgeLens asks it: one frozen record per harness and the registry.

A harness is a program that made the answers and verdicts JudgeLens reads (FastChat's llm_judge and its forks,
Swallow's lighteval fork), or one of JudgeLens's own sources of verdicts (re-judges, the analyst's verdicts).
Every rule that depends on which harness a row came from is a field here; modules ask ``get(row.harness)``
instead of comparing names. The readers of each harness's files live in ``lib.ingest.formats``.

Adding a harness: a module beside ``fastchat.py`` with its ``Harness`` record, one line in ``lib.harness``'s
``_REGISTERED``, and its reader in ``lib.ingest.formats`` (see the README's "Where things live").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Iterable, Mapping

# How a harness turns stored judgment rows into its own number (``Harness.own_rule``):
SHOW_RESULT = "show_result"    # FastChat show_result.py: mean over judgment rows, failure code dropped, repeats count
RESULTS_FILE = "results_file"  # Swallow: per item the mean of its samples with failures averaged in, items at the
                               # failure code dropped, then the mean (the harness's results file, x its scale)
CATEGORY_MEANS = "category_means"  # Nejumi: per question-turn the mean of its rows (failure code dropped), per
                               # category the mean of those, then the mean of the category means (x reported_scale)
SAMPLE_RUNS = "sample_runs"    # multi-sample FastChat forks: per sample index the mean of its rows (a "run"),
                               # then the mean over runs; failure code dropped
ITEM = "item"                  # no rule of its own: JudgeLens's per-item mean

OWN_RULES = (SHOW_RESULT, RESULTS_FILE, CATEGORY_MEANS, SAMPLE_RUNS, ITEM)

# Judge prompt families: the built-in template names of a family start with its prefix.
PROMPT_FAMILY_PREFIX = MappingProxyType({"swallow": "swallow-", "ja": "ja-", "lmsys": ""})


@dataclass(frozen=True)
class Generation:
    """How the harness generated the answers it judges (what issue 21's generation follows)."""

    system_prompt: str                  # what system prompt the answers were generated with (in words)
    system_prompt_default: str | None   # the system message sent when none is configured (None: no message)
    temperature: Mapping[str, float]    # per question category
    temperature_default: float          # for a category not in ``temperature``
    temperature_note: str               # where the temperature comes from, who can override it
    samples: int                        # answers generated per question
    copies_at_zero: bool                # at temperature 0: one call copied to every sample
    turn2_after: str                    # "own": each sample's turn 2 follows its own turn 1; "sample0": sample 0's
    max_tokens: int | None              # generation max_tokens sent (None: not sent)
    truncate_chars: int | None          # answers cut to this many characters before judging (None: not cut)
    system_prompt_example: str | None = None   # the system prompt a typical run sends (FastChat: a suggestion to
                                               # show, never a default; Swallow: the official example's)
    max_tokens_note: str = ""           # where max_tokens comes from (versions differ)
    seeds: str = ""                     # what the harness does about seeds (JudgeLens sends seed = sample index)

    def temperature_for(self, category: str | None) -> float:
        """The temperature an answer of this category is generated at (the harness's map, else its default)."""
        return self.temperature.get(category or "", self.temperature_default)


@dataclass(frozen=True)
class Harness:
    """The rules of one harness. Field docs say who asks."""

    name: str                           # the ``harness`` column of stored rows
    title: str                          # for people
    imported: bool                      # read from files (has a reader in lib.ingest.formats)
    # -- scores --
    scale: tuple[float, float] = (1.0, 10.0)   # the judge's rating scale
    bench_scales: Mapping[str, tuple[float, float]] = field(default_factory=dict)  # benches on another scale
    failure_code: float | None = -1.0          # the raw score the harness writes when no rating was found
    reported_scale: float = 1.0                # the harness's headline numbers = means x this (Swallow: 0.1)
    reported_metrics: Mapping[int, str] = field(default_factory=dict)  # turn (0: both) -> results-file metric
    own_rule: str = ITEM                       # how the harness computes its own number (SHOW_RESULT, ...)
    own_rule_label: str = "item"               # the ``rule`` column of ``scores(rule="harness")``
    failure_treatment: str = "left out of means"   # how the harness's own number treats a failure (setup table)
    appends_reruns: bool = False               # re-runs append rows: an item judged twice is a duplicate
    # -- judging --
    samples_per_item: int = 1                  # answers judged per item (Swallow: 5; the item view picks one)
    judge_sees_think: bool = True              # the judge saw <think> blocks (False: stripped before judging)
    prompt_family: str | None = None           # built-in template family (None: recognised from stored prompts)
    japanese_prompt_prefix: str | None = None  # template name prefix of the harness's variant for Japanese benches
    prompt_as_text: bool = False               # stored judge prompts are the rendered text (False: JSON messages)
    judge_max_tokens: int | None = None        # the judge call's max_tokens
    judge_temperature: float | None = None     # the judge call's temperature
    judge_model_note: str = ""                 # a sentence about the judge model, for the setup table
    reference_source: str = "judge_files"      # "judge_files": one reference file per judge; "dataset": one set
    question_file: str | None = None           # the one question file the harness reads (others: named sets)
    parsed_by_template: bool = False           # ratings were parsed by a JudgeLens template's parser (re-judges)
    # -- answers / setup table --
    stores_system_prompt: bool = True          # answers record their system prompt
    stores_temperature: bool = True            # answers record their temperature
    system_prompt_missing: str = "none recorded"
    temperature_missing: str = ""              # appended to "not recorded" in the setup table
    generation: Generation | None = None

    def scale_for(self, bench: str | None) -> tuple[float, float]:
        """The rating scale of this harness's judges on ``bench`` (``bench_scales``, else ``scale``)."""
        return self.bench_scales.get(bench or "", self.scale)

    @property
    def multi_sample(self) -> bool:
        return self.samples_per_item > 1

    @property
    def turn2_after_sample0(self) -> bool:
        """Every turn-2 sample was generated after sample 0's turn-1 answer (the flag on such judgments)."""
        return self.generation is not None and self.generation.turn2_after == "sample0"

    def template_prefix(self, bench: str | None) -> str | None:
        """The prefix of this harness's own template variant for ``bench`` (None: the plain template)."""
        if self.japanese_prompt_prefix and bench and ("ja" in bench.split("_") or bench.startswith("japanese")):
            return self.japanese_prompt_prefix
        return None


# -- the registry ---------------------------------------------------------------------------------------------
_BY_NAME: dict[str, Harness] = {}


def register(h: Harness) -> Harness:
    if h.own_rule not in OWN_RULES:
        raise ValueError(f"harness {h.name}: unknown own_rule {h.own_rule!r}")
    _BY_NAME[h.name] = h
    return h


def get(name: str | None) -> Harness:
    """The rules of harness ``name``; a harness JudgeLens does not know follows the item rule (``GENERIC``)."""
    return _BY_NAME.get(name or "", GENERIC)


def all() -> tuple[Harness, ...]:  # noqa: A001 - the registry's one listing
    return tuple(_BY_NAME.values())


def names(*, imported: bool | None = None) -> tuple[str, ...]:
    return tuple(h.name for h in _BY_NAME.values() if imported is None or h.imported == imported)


def where(**conditions) -> tuple[Harness, ...]:
    """The registered harnesses whose fields (or properties) equal ``conditions``: ``where(own_rule=SHOW_RESULT)``."""
    return tuple(h for h in _BY_NAME.values() if _matches(h, conditions))


def _matches(h: Harness, conditions: dict) -> bool:
    return next((False for k, v in conditions.items() if getattr(h, k) != v), True)


def sql_in(harnesses: Iterable[Harness] | Iterable[str]) -> str:
    """A SQL list of harness names for ``harness IN (...)`` (names are code constants, not user text); ``NULL``
    when empty (use ``sql_is`` / ``sql_is_not``, which handle the empty case)."""
    quoted = [f"'{h if isinstance(h, str) else h.name}'" for h in harnesses]
    return ", ".join(quoted) if quoted else "NULL"


def sql_is(column: str, harnesses: Iterable[Harness]) -> str:
    """``column IN (...)`` for these harnesses; FALSE when there are none."""
    hs = list(harnesses)
    return f"{column} IN ({sql_in(hs)})" if hs else "FALSE"


def sql_is_not(column: str, harnesses: Iterable[Harness]) -> str:
    """``column NOT IN (...)`` for these harnesses; TRUE when there are none."""
    hs = list(harnesses)
    return f"{column} NOT IN ({sql_in(hs)})" if hs else "TRUE"


GENERIC = Harness(name="", title="another harness", imported=False)
