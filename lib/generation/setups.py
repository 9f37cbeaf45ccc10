"""Generation setups: how a harness makes the answers of the model under test.

A ``GenerationSetup`` says everything that shapes an answer before any judge sees it: the system prompt of the
model under test, the temperature per category (and an override), how many samples per turn, whether a
temperature-0 turn is one call copied to every sample, which turn-1 sample a turn-2 request is conditioned on,
``max_tokens``, a character cap applied after generation, and how the per-sample seed is derived.

Constructors:

- ``GenerationSetup.fastchat(system_prompt=...)``: FastChat ``gen_api_answer.py`` (JA MT-Bench harness).
  The system prompt comes from the model adapter's conversation template and is **not** stored in answer
  files, so it must be stated (``system_prompt=None`` means "send no system message", which is a statement
  too); ``from_run`` refuses a FastChat run whose prompt is not given (``UnknownSystemPromptError``).
- ``GenerationSetup.swallow()``: the Swallow lighteval fork's ``japanese_mt_bench`` task.
- ``GenerationSetup.from_run(store, run, system_prompt=...)``: what a stored run's files show (Swallow: the
  system prompt, sample count, temperatures and character cap recorded in the details; FastChat: the sample
  count stored, the rest from the harness facts below) with ``provenance`` saying where each field came from.

``describe()`` gives the rows of a setup table, ``diff(a, b)`` the rows that differ, and
``switch(other, factor)`` returns this setup with one ladder factor (``FACTORS``) taken from ``other``: the
ladder's generation steps ``system_prompt``, ``temperature``, ``samples``, ``turn2_context``, ``max_tokens``.

The harness facts (temperature maps, samples, conditioning, limits, the example system prompts) are the
``Generation`` records of ``lib.harness`` (fastchat.py, swallow.py say where each comes from).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Mapping

from lib.errors import UnknownSystemPromptError, UsageError
from lib.harness import FASTCHAT, SWALLOW

# The harness facts live in lib.harness (one home: the setup table reads the same records); these names are
# views of them, for the setups below.
_FC, _SW = FASTCHAT.generation, SWALLOW.generation
FASTCHAT_TEMPERATURES: Mapping[str, float] = _FC.temperature
FASTCHAT_DEFAULT_TEMPERATURE = _FC.temperature_default
FASTCHAT_MAX_TOKENS = _FC.max_tokens
FASTCHAT_TYPICAL_SYSTEM_PROMPT = _FC.system_prompt_example   # a suggestion to show, never a default

SWALLOW_SYSTEM_PROMPT = _SW.system_prompt_example
SWALLOW_TEMPERATURES: Mapping[str, float] = _SW.temperature
SWALLOW_DEFAULT_TEMPERATURE = _SW.temperature_default
SWALLOW_SAMPLES = _SW.samples
SWALLOW_MAX_CHARS = _SW.truncate_chars

TURN2_OWN = "own"          # each sample's turn 2 follows its own turn 1 (FastChat)
TURN2_SAMPLE0 = "sample0"  # every sample's turn 2 follows sample 0's turn 1 (Swallow)
TURN2_RULES = (TURN2_OWN, TURN2_SAMPLE0)
SEED_SAMPLE_INDEX = "sample_index"
SEED_NONE = "none"

# Ladder factors (generation side): which fields each one switches.
FACTORS: dict[str, tuple[str, ...]] = {
    "system_prompt": ("system_prompt",),
    "temperature": ("temperatures", "default_temperature", "temperature_override"),
    "samples": ("samples", "copy_at_zero"),
    "turn2_context": ("turn2_context",),
    "max_tokens": ("max_tokens", "max_chars"),
}


# provenance keys (describe() rows) per factor, and per field
_PROV_KEYS = {"system_prompt": ("system_prompt",), "temperature": ("temperature",), "samples": ("samples",),
              "turn2_context": ("turn2_context",), "max_tokens": ("max_tokens",)}
_FIELD_PROV = {"temperatures": "temperature", "default_temperature": "temperature",
               "temperature_override": "temperature", "honour_required_temperature": "temperature",
               "copy_at_zero": "samples", "max_chars": "max_tokens", "seed_rule": "seed"}


@dataclass(frozen=True)
class GenerationSetup:
    """How answers are generated. Frozen and hashable; ``temperatures`` is a sorted tuple of (category, t)."""

    name: str                                  # 'fastchat' | 'swallow' | anything the user calls it
    system_prompt: str | None                  # None: no system message is sent
    temperatures: tuple[tuple[str, float], ...]
    default_temperature: float                 # a category not in the map
    temperature_override: float | None = None  # FastChat --force-temperature; wins over everything
    honour_required_temperature: bool = False  # FastChat: a question's required_temperature wins over the map
    samples: int = 1
    copy_at_zero: bool = False                 # temperature 0: one call, copied to every sample
    turn2_context: str = TURN2_OWN
    max_tokens: int | None = None              # None: not sent (the backend's default)
    max_chars: int | None = None               # texts cut to their first max_chars characters afterwards
    seed_rule: str = SEED_SAMPLE_INDEX
    provenance: tuple[tuple[str, str], ...] = field(default=(), compare=False)  # field -> where it came from

    def __post_init__(self):
        if self.samples < 1:
            raise UsageError(f"A generation setup needs at least 1 sample per turn (got {self.samples}).")
        if self.turn2_context not in TURN2_RULES:
            raise UsageError(f"turn2_context must be one of {', '.join(TURN2_RULES)} (got {self.turn2_context!r}).")
        if self.seed_rule not in (SEED_SAMPLE_INDEX, SEED_NONE):
            raise UsageError(f"seed_rule must be {SEED_SAMPLE_INDEX!r} or {SEED_NONE!r} (got {self.seed_rule!r}).")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise UsageError(f"max_tokens must be at least 1 (got {self.max_tokens}).")

    # -- constructors
    @classmethod
    def fastchat(cls, *, system_prompt: str | None, samples: int = 1, max_tokens: int | None = FASTCHAT_MAX_TOKENS,
                 temperature_override: float | None = None, provenance: Mapping[str, str] | None = None
                 ) -> "GenerationSetup":
        """FastChat ``gen_api_answer.py``: the system prompt must be stated (the answer files do not hold it)."""
        return cls("fastchat", system_prompt, _sorted(FASTCHAT_TEMPERATURES), FASTCHAT_DEFAULT_TEMPERATURE,
                   temperature_override, True, samples, False, TURN2_OWN, max_tokens, None, SEED_SAMPLE_INDEX,
                   _prov({"system_prompt": "stated", **(provenance or {})}))

    @classmethod
    def swallow(cls, *, system_prompt: str | None = SWALLOW_SYSTEM_PROMPT, samples: int = SWALLOW_SAMPLES,
                max_tokens: int | None = None, max_chars: int | None = SWALLOW_MAX_CHARS,
                provenance: Mapping[str, str] | None = None) -> "GenerationSetup":
        """The Swallow fork's ``japanese_mt_bench`` with the official example's system prompt."""
        return cls("swallow", system_prompt, _sorted(SWALLOW_TEMPERATURES), SWALLOW_DEFAULT_TEMPERATURE,
                   None, False, samples, True, TURN2_SAMPLE0, max_tokens, max_chars, SEED_SAMPLE_INDEX,
                   _prov(provenance or {}))

    @classmethod
    def for_harness(cls, harness: str, *, system_prompt: str | None | object = ..., **kw) -> "GenerationSetup":
        """``fastchat`` or ``swallow`` by name; FastChat without a stated system prompt is refused."""
        if harness == "swallow":
            return cls.swallow(**kw) if system_prompt is ... else cls.swallow(system_prompt=system_prompt, **kw)
        if harness == "fastchat":
            if system_prompt is ...:
                raise UnknownSystemPromptError(_unknown_prompt_message("this FastChat setup"))
            return cls.fastchat(system_prompt=system_prompt, **kw)
        raise UsageError(f"Unknown generation setup {harness!r}: use fastchat or swallow.")

    @classmethod
    def from_run(cls, store, run, *, system_prompt: str | None | object = ...) -> "GenerationSetup":
        """The setup a stored run's files show. ``run`` is a ``lib.analysis.runs.Run``.

        Swallow: system prompt, samples per item, per-category temperatures and the character cap as recorded
        in the details (``full_prompt``, ``specifics``); a given ``system_prompt`` replaces the recorded one.
        FastChat: samples = the choices stored; the system prompt must be given (``UnknownSystemPromptError``
        otherwise, never a guess); temperatures and ``max_tokens`` are the harness facts (marked so)."""
        from lib.generation.questions import run_answer_facts

        facts = run_answer_facts(store, run)
        if run.harness == "swallow":
            prov = {"system_prompt": "files", "samples": "files", "temperature": "files",
                    "max_tokens": "harness rule (the fork sends none); character cap from the files"}
            recorded = facts["system_prompts"]
            if system_prompt is not ...:
                sp, prov["system_prompt"] = system_prompt, "stated"
            elif len(recorded) == 1:
                sp = recorded[0]
            elif not recorded:
                sp = None
            else:
                raise UsageError(f"The run {run.label} records {len(recorded)} different system prompts; "
                                 "state the one to use.")
            temps = dict(SWALLOW_TEMPERATURES)
            temps.update(facts["temperatures"])
            if not facts["temperatures"]:
                prov["temperature"] = "harness default (not recorded)"
            base = cls.swallow(system_prompt=sp, samples=facts["samples"] or SWALLOW_SAMPLES,
                               max_chars=facts["max_chars"] or SWALLOW_MAX_CHARS)
            return dataclasses.replace(base, temperatures=_sorted(temps), provenance=_prov(prov))
        if run.harness == "fastchat":
            if system_prompt is ...:
                raise UnknownSystemPromptError(_unknown_prompt_message(f"the run {run.label}"))
            return cls.fastchat(system_prompt=system_prompt, samples=facts["samples"] or 1, provenance={
                "samples": "files", "temperature": "harness rule (not recorded)",
                "max_tokens": "harness default (not recorded)"})
        raise UsageError(f"No generation rules for harness {run.harness!r} (runs of fastchat or swallow only).")

    # -- rules
    def temperature_for(self, category: str | None, required_temperature: float | None = None) -> float:
        """The temperature a turn of this category is sent with (override > required > map > default)."""
        if self.temperature_override is not None:
            return float(self.temperature_override)
        if self.honour_required_temperature and required_temperature is not None:
            return float(required_temperature)
        return float(dict(self.temperatures).get(category or "", self.default_temperature))

    def seed_for(self, sample: int) -> int | None:
        return sample if self.seed_rule == SEED_SAMPLE_INDEX else None

    def switch(self, other: "GenerationSetup", factor: str) -> "GenerationSetup":
        """This setup with ``factor`` (a key of ``FACTORS``) taken from ``other``; the name says so."""
        if factor not in FACTORS:
            raise UsageError(f"Unknown generation factor {factor!r}: one of {', '.join(FACTORS)}.")
        changes = {f: getattr(other, f) for f in FACTORS[factor]}
        prov = dict(self.provenance)
        theirs = dict(other.provenance)
        for key in _PROV_KEYS[factor]:
            prov[key] = theirs.get(key, "harness rule") + f" ({other.name})"
        return dataclasses.replace(self, name=f"{self.name}+{factor}:{other.name}", provenance=_prov(prov), **changes)

    def restate(self, **changes) -> "GenerationSetup":
        """This setup with fields the user edited (``samples=3``, ``system_prompt=...``); they read as stated."""
        prov = dict(self.provenance)
        for f in changes:
            prov[_FIELD_PROV.get(f, f)] = "stated"
        return dataclasses.replace(self, provenance=_prov(prov), **changes)

    # -- presentation
    def describe(self) -> list[dict]:
        """Rows ``{"field", "value", "source"}`` for a setup table (plain text, never markup)."""
        prov = dict(self.provenance)
        temps = ", ".join(f"{c} {t:g}" for c, t in self.temperatures) + f"; other {self.default_temperature:g}"
        if self.temperature_override is not None:
            temps = f"forced {self.temperature_override:g} (overrides the map: {temps})"
        elif self.honour_required_temperature:
            temps += "; a question's required_temperature wins"
        rows = [
            ("system_prompt", "(none sent)" if self.system_prompt is None else self.system_prompt, "system_prompt"),
            ("temperature", temps, "temperature"),
            ("samples", f"{self.samples} per turn" + ("; at temperature 0 one call copied to every sample"
                                                      if self.copy_at_zero and self.samples > 1 else ""), "samples"),
            ("turn2_context", "each sample's own turn 1" if self.turn2_context == TURN2_OWN
             else "sample 0's turn 1 for every sample", "turn2_context"),
            ("max_tokens", ("not sent (backend default)" if self.max_tokens is None else str(self.max_tokens))
             + (f"; texts cut to {self.max_chars} characters" if self.max_chars else ""), "max_tokens"),
            ("seed", "sample index" if self.seed_rule == SEED_SAMPLE_INDEX else "none sent", "seed"),
        ]
        return [{"field": f, "value": v, "source": prov.get(k, "harness rule")} for f, v, k in rows]


def setup_to_dict(setup: GenerationSetup) -> dict:
    """A JSON-ready dict of ``setup`` (what a regenerated run stores); ``setup_from_dict`` reads it back."""
    d = dataclasses.asdict(setup)
    d["temperatures"] = [list(x) for x in setup.temperatures]
    d["provenance"] = [list(x) for x in setup.provenance]
    return d


def setup_from_dict(d: Mapping) -> GenerationSetup:
    d = dict(d)
    d["temperatures"] = tuple((str(c), float(t)) for c, t in d.get("temperatures", ()))
    d["provenance"] = tuple((str(k), str(v)) for k, v in d.get("provenance", ()))
    return GenerationSetup(**d)


def diff(a: GenerationSetup, b: GenerationSetup) -> list[dict]:
    """Setup-table rows for two setups: ``{"field", "a", "b", "differs"}`` in ladder order."""
    ra, rb = a.describe(), b.describe()
    return [{"field": x["field"], "a": x["value"], "b": y["value"], "differs": x["value"] != y["value"]}
            for x, y in zip(ra, rb)]


def differing_factors(a: GenerationSetup, b: GenerationSetup) -> list[str]:
    """The ladder factors (``FACTORS`` order) on which two setups differ."""
    return [f for f, fields in FACTORS.items() if any(getattr(a, x) != getattr(b, x) for x in fields)]


def _sorted(m: Mapping[str, float]) -> tuple[tuple[str, float], ...]:
    return tuple(sorted((str(k), float(v)) for k, v in m.items()))


def _prov(m: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(m.items()))


def _unknown_prompt_message(what: str) -> str:
    return (f"The system prompt of {what} is unknown: FastChat answer files do not record it (it comes from the "
            "model adapter's conversation template). State it (--system-prompt TEXT, or --system-prompt '' for "
            f"none); the common one is {FASTCHAT_TYPICAL_SYSTEM_PROMPT!r}, but JudgeLens never guesses.")
