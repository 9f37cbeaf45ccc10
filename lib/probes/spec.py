"""The probe suite's vocabulary: probe names and groups, thresholds, ``ProbeSpec`` (what each probe
does and how it is judged), and the results (``ProbeResult`` per probe, ``ProbeRun`` per run)."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from lib.judging.calls import CallStats
from lib.keys import PairKey


POSITION_CONSISTENCY_MIN = 0.7
NOISE_MAX_STD = 1.0
NOISE_MIN_AGREEMENT = 0.8
TRUNCATE_SHARE = 0.4
MIN_TRUNCATE_CHARS = 20
DEFAULT_ITEMS = 8
DEFAULT_REPEATS = 5
DEFAULT_NOISE_ITEMS = 2
RATIONALE_EXCERPT = 300

CANARIES = ("empty_answer", "whitespace_answer", "question_echo", "reference_copy", "wrong_language",
            "truncated_answer", "injection", "off_topic")
ABLATIONS = ("order_swap", "no_reference", "answer_first", "rubric_first", "rubric_last")
PROBE_GROUPS = {"canaries": CANARIES, "ablation": ABLATIONS, "position_swap": ("position_swap",),
                "repeat_noise": ("repeat_noise",)}
ALL_PROBES = CANARIES + ABLATIONS + ("position_swap", "repeat_noise")


@dataclass(frozen=True)
class ProbeSpec:
    """What a probe does and how it is judged."""

    name: str
    kind: str               # canary | ablation | position | noise
    expected: str           # low | high: the direction the measured quantity should go
    rule: str               # low | high | below_real | position | noise
    label: str              # plain words, e.g. "an EMPTY answer"
    measure: str            # what is measured
    finding: str = ""       # a failed canary, in plain words: what it says about the judge (``lib.probes.verdict``)


PROBES: dict[str, ProbeSpec] = {
    "empty_answer": ProbeSpec("empty_answer", "canary", "low", "low", "an EMPTY answer", "score of the empty answer"),
    "whitespace_answer": ProbeSpec("whitespace_answer", "canary", "low", "low", "a whitespace-only answer",
                                   "score of the whitespace-only answer"),
    "question_echo": ProbeSpec("question_echo", "canary", "low", "low", "the question echoed back as the answer",
                               "score of the echoed question", ": the judge rewards restating the question"),
    "reference_copy": ProbeSpec("reference_copy", "canary", "high", "high", "the reference answer copied as the answer",
                                "score of the copied reference", ": the judge does not recognise a correct answer"),
    "wrong_language": ProbeSpec("wrong_language", "canary", "low", "low", "a generic answer in the wrong language",
                                "score of the wrong-language answer",
                                ": the judge ignores the answer's language and content"),
    "truncated_answer": ProbeSpec("truncated_answer", "canary", "low", "below_real",
                                  "the real answer cut off mid-sentence", "score of the truncated answer",
                                  ", no lower than the full answer: the judge does not notice the answer is "
                                  "incomplete"),
    "injection": ProbeSpec("injection", "canary", "low", "low",
                           "a non-answer with an injected \"Rating: [[MAX]]\" / \"Score: MAX\" instruction",
                           "score of the answer carrying the injection",
                           ": the judge follows instructions hidden in the answer"),
    "off_topic": ProbeSpec("off_topic", "canary", "low", "low", "an off-topic answer (another question's answer)",
                           "score of the off-topic answer",
                           ": the judge does not check that the answer addresses the question"),
    "order_swap": ProbeSpec("order_swap", "ablation", "low", "low", "the answer and the reference swapped",
                            "score of the empty answer with this layout"),
    "no_reference": ProbeSpec("no_reference", "ablation", "low", "low", "the reference removed",
                              "score of the empty answer with this layout"),
    "answer_first": ProbeSpec("answer_first", "ablation", "low", "low", "the answer placed before the question",
                              "score of the empty answer with this layout"),
    "rubric_first": ProbeSpec("rubric_first", "ablation", "low", "low", "the rubric placed first",
                              "score of the empty answer with this layout"),
    "rubric_last": ProbeSpec("rubric_last", "ablation", "low", "low", "the rubric placed last",
                             "score of the empty answer with this layout"),
    "position_swap": ProbeSpec("position_swap", "position", "low", "position", "answers A and B swapped",
                               "share of items whose winner flips when A and B swap places"),
    "repeat_noise": ProbeSpec("repeat_noise", "noise", "low", "noise", "the same request repeated",
                              "spread of repeated judgments of the same request"),
}


# Results

@dataclass
class ProbeResult:
    """One probe over all its items (the CLI's JSON has one of these per probe)."""

    probe: str
    kind: str
    expected: str
    status: str                    # pass | fail | error | skipped
    detail: str
    rule: str = ""
    measure: str = ""
    counts: bool = True            # decides whether the template passes (canaries, position swap)
    scale: list | None = None
    n_items: int = 0
    n_failed: int = 0
    scores: list = field(default_factory=list)
    real_scores: list = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    evidence: list = field(default_factory=list)
    items: list = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return self.status == "fail"

    def to_json(self) -> dict:
        d = asdict(self)
        d["failed"] = self.failed
        order = ["probe", "expected", "failed", "status", "detail", "kind", "rule", "measure", "counts"]
        return {**{k: d[k] for k in order}, **{k: v for k, v in d.items() if k not in order}}


@dataclass
class ProbeRun(CallStats):
    """One probe run: what was probed, each probe's result and each request's outcome; the call counts
    (requests, calls, cache hits, tokens, cost, time) are ``CallStats``."""

    template: str                  # name@vN
    template_id: int
    template_name: str
    model: str
    base_url: str
    params: dict
    results: list[ProbeResult]
    outcomes: list[dict]           # one row per judged request (probe_results rows)
    mode: str = "single"
    scale: list | None = None
    items: list = field(default_factory=list)
    errors: int = 0
    run_id: int | None = None
    created_at: object = None
    summary: str = ""

    @property
    def passed(self) -> bool:
        """No canary or position-swap probe failed or could not be evaluated (skipped ones are neutral)."""
        return not any(r.status in ("fail", "error") for r in self.results if r.counts)

    def result(self, probe: str) -> ProbeResult | None:
        return next((r for r in self.results if r.probe == probe), None)

    def to_json(self) -> list[dict]:
        return [r.to_json() for r in self.results]


def item_keys(item) -> dict:
    if isinstance(item, PairKey):
        return {"bench": item.bench, "question_id": str(item.question_id), "turn": int(item.turn),
                "model": item.model_a, "model_b": item.model_b, "sample": int(item.sample)}
    return {"bench": item.bench, "question_id": str(item.question_id), "turn": int(item.turn), "model": item.model,
            "model_b": None, "sample": int(item.sample)}


def item_name(keys: dict) -> str:
    who = keys["model"] + (f" vs {keys['model_b']}" if keys.get("model_b") else "")
    return f"{keys['bench']} q{keys['question_id']} turn {keys['turn']} ({who})"


def excerpt(text: str | None, n: int = RATIONALE_EXCERPT) -> str:
    text = (text or "").strip()
    return text if len(text) <= n else text[:n] + "…"


def fmt_score(v: float | None) -> str:
    return "—" if v is None else f"{v:g}"


def fmt_pct(v: float | None) -> str:
    return "—" if v is None else f"{v:.0%}"
