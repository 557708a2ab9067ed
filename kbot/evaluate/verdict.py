"""The evaluator's typed outcome. Every speed claim kbot makes is read from one of these.

JSON form (`Verdict.to_json()`), printed by `kbot eval --json` under the envelope's `data`:
accepted, stage, reasons [{rule, message, line}], device, cases [{case, correctness, timing}],
summary figures, worker output. `Verdict.from_json` is the one reader of that form (the worker
protocol, the search store and the publisher's run directory all use it): a figure that was not
measured travels as null (JSON has no NaN) and comes back as NaN; a missing required field is a
`VerdictFormatError` naming it.
"""

from __future__ import annotations

import enum
import math
from dataclasses import asdict, dataclass, field
from typing import Any

NOT_TIMED = "not timed (no GPU)"
NOT_MEASURED = "not measured"
# Rules naming the evaluator's own failure, never the candidate's doing: a baseline that would
# not build, a candidate process or judge that would not start. Such a verdict is never cached.
EVALUATOR_FAILURE_RULES = frozenset({"evaluator-error", "worker"})


class VerdictFormatError(ValueError):
    """Verdict JSON that does not match this kbot's format; the message names the field."""


def finite_json(value: Any) -> Any:
    """`value` with every NaN/inf float replaced by null: JSON has no NaN, and a figure that
    could not be measured is written as null ("not measured"), never as a number."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    return value


def measured(value: float | None) -> bool:
    """A figure that was measured: not None, not NaN."""
    return value is not None and not math.isnan(value)


def _field(data: Any, key: str, where: str) -> Any:
    if not isinstance(data, dict):
        raise VerdictFormatError(f"{where} must be a JSON object, not {type(data).__name__}")
    if key not in data:
        raise VerdictFormatError(f"{where} lacks `{key}`")
    return data[key]


def _float(value: Any, where: str) -> float:
    """null is a figure that was not measured (NaN); inf survives where JSON carries it."""
    if value is None:
        return math.nan
    try:
        return float(value)
    except (TypeError, ValueError):
        raise VerdictFormatError(f"{where} must be a number, not {value!r}") from None


def _int(value: Any, where: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise VerdictFormatError(f"{where} must be an integer, not {value!r}") from None


class Stage(str, enum.Enum):
    """How far a candidate got; a rejected verdict names the stage that rejected it."""

    INPUT = "input"  # the problem or candidate could not be read
    STATIC = "static"  # AST rules
    LOAD = "load"  # import / construction in the worker
    CORRECTNESS = "correctness"
    TIMING = "timing"
    DONE = "done"  # accepted after every stage that applies on this device


@dataclass(frozen=True)
class Reason:
    """Why a candidate was rejected (or a note on an accepted one): a named rule and what to fix."""

    rule: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"[{self.rule}]{where} {self.message}"

    @classmethod
    def from_json(cls, data: Any) -> Reason:
        line = data.get("line") if isinstance(data, dict) else None
        return cls(
            str(_field(data, "rule", "a reason")),
            str(_field(data, "message", "a reason")),
            None if line is None else _int(line, "a reason's `line`"),
        )


@dataclass(frozen=True)
class Stat:
    """A timing distribution in microseconds: the median, the interquartile range, the count."""

    median_us: float
    iqr_us: float
    runs: int

    @property
    def spread(self) -> float:
        """IQR relative to the median: the noise floor for comparisons."""
        return self.iqr_us / self.median_us if self.median_us > 0 else math.inf

    @property
    def median_half_width_us(self) -> float:
        """Half-width of the median's 95% confidence interval, 1.58·IQR/√n (a box plot's
        notch): how far the median itself may be off, narrower than the spread of samples."""
        return 1.58 * self.iqr_us / math.sqrt(self.runs) if self.runs > 0 else math.inf

    @classmethod
    def from_json(cls, data: Any, where: str = "a timing") -> Stat | None:
        if data is None:
            return None
        return cls(
            median_us=_float(_field(data, "median_us", where), f"{where}'s median_us"),
            iqr_us=_float(_field(data, "iqr_us", where), f"{where}'s iqr_us"),
            runs=_int(_field(data, "runs", where), f"{where}'s runs"),
        )


@dataclass(frozen=True)
class CaseCorrectness:
    case: dict[str, Any]
    trials: int
    distributions: tuple[str, ...]
    max_abs_error: float
    max_rel_norm_error: float
    atol: float
    rtol: float
    passed: bool
    # Trials in which the candidate missed the reference as written (bf16/fp16 rounding after
    # every op) but matched the same reference run in float32 and rounded once, as a kernel
    # that computes in fp32 does (RoPE's q1*cos - q2*sin cancels: two roundings differ by more
    # than the tolerance from one).
    float32_reference_trials: int = 0

    @classmethod
    def from_json(cls, data: Any, case: dict[str, Any]) -> CaseCorrectness:
        where = "a case's correctness"

        def get(key: str) -> Any:
            return _field(data, key, where)

        return cls(
            case=dict(data.get("case") or case),
            trials=_int(get("trials"), f"{where}'s trials"),
            distributions=tuple(str(d) for d in data.get("distributions", ())),
            max_abs_error=_float(get("max_abs_error"), f"{where}'s max_abs_error"),
            max_rel_norm_error=_float(get("max_rel_norm_error"), f"{where}'s max_rel_norm_error"),
            atol=_float(get("atol"), f"{where}'s atol"),
            rtol=_float(get("rtol"), f"{where}'s rtol"),
            passed=bool(get("passed")),
            float32_reference_trials=_int(
                data.get("float32_reference_trials", 0), f"{where}'s float32_reference_trials"
            ),
        )


_REQUIRED_STATS = ("candidate_graph", "candidate_plain", "eager_graph", "eager_plain")
_OPTIONAL_STATS = (
    "compile_graph",
    "compile_plain",
    "compile_max_autotune_graph",
    "candidate_host",
    "eager_host",
    "compile_host",
)


@dataclass(frozen=True)
class CaseTiming:
    """Timings of one case. `*_graph` is CUDA-graph replay (kernel time), `*_plain` plain launches."""

    candidate_graph: Stat
    candidate_plain: Stat
    eager_graph: Stat
    eager_plain: Stat
    compile_graph: Stat | None
    compile_plain: Stat | None
    compile_max_autotune_graph: Stat | None
    bytes_moved: int
    flops: int
    # of the device's measured copy bandwidth or the FLOP rate of the reference's arithmetic
    # (fp32 FMA, TF32 or bf16 tensor cores), whichever bound is tighter, in [0, 1]; NaN when
    # the device's peaks could not be measured (JSON: null, shown as "not measured")
    roofline_fraction: float
    speedup_vs_eager: float  # 1.0 when inside the noise; NaN when not measured
    speedup_vs_compile: float | None
    # the peak that bound the fraction, e.g. "fp32 FMA 51.2 TFLOP/s" or "copy 4.25 TB/s";
    # "" where not measured, and in verdicts written before kbot named it
    roofline_peak: str = ""
    # CPU µs to issue one plain call (what an eager caller pays per call while the GPU keeps
    # up); None in verdicts written before kbot measured it
    candidate_host: Stat | None = None
    eager_host: Stat | None = None
    compile_host: Stat | None = None

    @classmethod
    def from_json(cls, data: Any) -> CaseTiming:
        where = "a case's timing"
        stats: dict[str, Stat | None] = {}
        for name in _REQUIRED_STATS:
            stat = Stat.from_json(_field(data, name, where), name)
            if stat is None:
                raise VerdictFormatError(f"{where} lacks `{name}`")
            stats[name] = stat
        for name in _OPTIONAL_STATS:
            stats[name] = Stat.from_json(data.get(name), name)
        compile_speedup = data.get("speedup_vs_compile")
        return cls(
            **stats,  # type: ignore[arg-type]
            bytes_moved=_int(_field(data, "bytes_moved", where), "bytes_moved"),
            flops=_int(_field(data, "flops", where), "flops"),
            roofline_fraction=_float(data.get("roofline_fraction"), "roofline_fraction"),
            speedup_vs_eager=_float(data.get("speedup_vs_eager"), "speedup_vs_eager"),
            speedup_vs_compile=(
                None if compile_speedup is None else _float(compile_speedup, "speedup_vs_compile")
            ),
            roofline_peak=str(data.get("roofline_peak") or ""),
        )


@dataclass(frozen=True)
class CaseResult:
    case: dict[str, Any]
    correctness: CaseCorrectness | None
    timing: CaseTiming | None  # None on CPU: reported as NOT_TIMED

    @classmethod
    def from_json(cls, data: Any) -> CaseResult:
        case = dict(_field(data, "case", "a case") or {})
        correctness = data.get("correctness")
        timing = data.get("timing")  # NOT_TIMED (a string) or null: not timed
        return cls(
            case=case,
            correctness=(
                CaseCorrectness.from_json(correctness, case) if correctness is not None else None
            ),
            timing=CaseTiming.from_json(timing) if isinstance(timing, dict) else None,
        )


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    stage: Stage
    reasons: tuple[Reason, ...]
    device: str  # "cpu" or the GPU name, e.g. "NVIDIA H200"
    cases: tuple[CaseResult, ...] = ()
    seeds: int = 0
    wall_s: float = 0.0
    worker_output: str = ""  # the candidate's stdout/stderr, trimmed
    versions: dict[str, str] = field(default_factory=dict)  # torch, triton, driver, cuda
    base_seed: int | None = None  # seeds the reference's construction and the timing inputs;
    # correctness trials draw their seeds from the OS (a rejection names the one it failed on)
    # Where the evaluation's wall time went: the judge's phases and steps of the whole job
    # ("compile baselines", "check c.py: correctness trials", "timing"), seconds each; a job
    # of several candidates gives each of them its timeline.
    steps_s: tuple[tuple[str, float], ...] = ()

    @property
    def timed(self) -> bool:
        """At least one case was timed. A case that could not be timed (its reference cannot
        be captured in a CUDA graph) leaves the others' measurements standing; see
        `untimed_cases` for the ones that were not."""
        return any(c.timing is not None for c in self.cases)

    @property
    def evaluator_failed(self) -> bool:
        """The verdict reports the evaluator's own failure (EVALUATOR_FAILURE_RULES), so it
        says nothing about the candidate: shown, but never cached as the candidate's verdict."""
        return any(r.rule in EVALUATOR_FAILURE_RULES for r in self.reasons)

    @property
    def untimed_cases(self) -> tuple[dict[str, Any], ...]:
        """The cases without a timing, in a verdict with some timed ones (else ())."""
        if not self.timed:
            return ()
        return tuple(c.case for c in self.cases if c.timing is None)

    def speedup_geomean(self, baseline: str = "compile") -> float | None:
        """Geometric mean of the speedup vs `eager` or `compile` over the timed cases; None
        if no case was timed or a timed case lacks that baseline."""
        if not self.accepted or not self.timed:
            return None
        values = [
            c.timing.speedup_vs_compile if baseline == "compile" else c.timing.speedup_vs_eager
            for c in self.cases
            if c.timing is not None
        ]
        if not values or any(not measured(v) or v <= 0 for v in values):
            return None
        return math.exp(sum(math.log(v) for v in values) / len(values))

    @classmethod
    def from_json(cls, data: Any) -> Verdict:
        """Reads `to_json()`'s form (derived keys such as `timed` are recomputed, not read).
        Raises VerdictFormatError naming the first field that does not fit."""
        try:
            stage = Stage(_field(data, "stage", "a verdict"))
        except ValueError:
            raise VerdictFormatError(f"unknown verdict stage {data.get('stage')!r}") from None
        base_seed = data.get("base_seed")
        versions = data.get("versions") or {}
        if not isinstance(versions, dict):
            raise VerdictFormatError("a verdict's `versions` must be a JSON object")
        return cls(
            accepted=bool(_field(data, "accepted", "a verdict")),
            stage=stage,
            reasons=tuple(Reason.from_json(r) for r in data.get("reasons") or ()),
            device=str(_field(data, "device", "a verdict")),
            cases=tuple(CaseResult.from_json(c) for c in data.get("cases") or ()),
            seeds=_int(data.get("seeds", 0), "seeds"),
            wall_s=_float(data.get("wall_s", 0.0), "wall_s"),
            worker_output=str(data.get("worker_output") or ""),
            versions={str(k): str(v) for k, v in versions.items()},
            base_seed=None if base_seed is None else _int(base_seed, "base_seed"),
            steps_s=tuple(
                (str(label), _float(seconds, "steps_s"))
                for label, seconds in (data.get("steps_s") or ())
            ),
        )

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["stage"] = self.stage.value
        data["timed"] = self.timed
        data["untimed_cases"] = list(self.untimed_cases)
        for case in data["cases"]:
            if case["timing"] is None:
                case["timing"] = NOT_TIMED
        data["speedup_geomean_vs_compile"] = self.speedup_geomean("compile")
        data["speedup_geomean_vs_eager"] = self.speedup_geomean("eager")
        return data
