"""The evaluator's typed outcome. Every speed claim kbot makes is read from one of these.

JSON form (`Verdict.to_json()`), printed by `kbot eval --json` under the envelope's `data`:
accepted, stage, reasons [{rule, message, line}], device, cases [{case, correctness, timing}],
summary figures, worker output.
"""

from __future__ import annotations

import enum
import math
from dataclasses import asdict, dataclass, field
from typing import Any

NOT_TIMED = "not timed (no GPU)"


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
    roofline_fraction: float  # of the device's measured copy bandwidth / matmul rate, in [0, 1]
    speedup_vs_eager: float  # 1.0 when inside the measured spread
    speedup_vs_compile: float | None


@dataclass(frozen=True)
class CaseResult:
    case: dict[str, Any]
    correctness: CaseCorrectness | None
    timing: CaseTiming | None  # None on CPU: reported as NOT_TIMED


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

    @property
    def timed(self) -> bool:
        return bool(self.cases) and all(c.timing is not None for c in self.cases)

    def speedup_geomean(self, baseline: str = "compile") -> float | None:
        """Geometric mean over cases of the speedup vs `eager` or `compile`; None if not timed."""
        if not self.accepted or not self.timed:
            return None
        values = [
            c.timing.speedup_vs_compile if baseline == "compile" else c.timing.speedup_vs_eager
            for c in self.cases
            if c.timing is not None
        ]
        if not values or any(v is None or v <= 0 for v in values):
            return None
        return math.exp(sum(math.log(v) for v in values) / len(values))

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["stage"] = self.stage.value
        data["timed"] = self.timed
        for case in data["cases"]:
            if case["timing"] is None:
                case["timing"] = NOT_TIMED
        data["speedup_geomean_vs_compile"] = self.speedup_geomean("compile")
        data["speedup_geomean_vs_eager"] = self.speedup_geomean("eager")
        return data
