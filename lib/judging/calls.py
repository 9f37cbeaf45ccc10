"""What a call to a model returns (``CallResult``) and the tally of many calls (``CallStats``): the one
accounting of requests, calls sent, cache hits, tokens, cost and time that re-judge batches
(``BatchSummary``), probe runs (``ProbeRun``) and anything else sending through the dispatcher share."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class CallResult:
    text: str | None
    request_hash: str
    cached: bool
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    attempts: int = 0
    finish_reason: str | None = None


@dataclass(kw_only=True)
class CallStats:
    """Counts of one run's calls. Subclasses add their own fields before these (keyword-only here)."""

    requests: int = 0                  # requests the run needed
    calls: int = 0                     # requests actually sent (answered or failed)
    cache_hits: int = 0                # requests answered by the cache (or by an identical request of the run)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = None          # from the endpoint's prices, when it has them (``JudgeConfig.cost``)
    elapsed_s: float = 0.0

    def add_answer(self, result: CallResult) -> None:
        """Count the tokens of an answered call."""
        self.prompt_tokens += result.prompt_tokens
        self.completion_tokens += result.completion_tokens

    @property
    def requests_per_s(self) -> float:
        return self.calls / self.elapsed_s if self.elapsed_s > 0 else 0.0
