"""How the evaluator runs: device, GPUs, trials, limits. One frozen record, checked once."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from kbot.errors import UsageError

MIN_SEEDS = 5  # the floor: fewer trials let per-seed memorisation through


@dataclass(frozen=True)
class EvalOptions:
    """`time=None` means: time on a GPU, not on a CPU. `timeout_s` bounds each stage a
    candidate's code runs in (import + correctness, and timing); `baseline_timeout_s` bounds
    compiling the torch.compile baselines, once per problem and worker."""

    device: str = "auto"  # auto | cpu | cuda
    gpus: tuple[int, ...] = ()
    seeds: int = 5
    timeout_s: float = 180.0
    time: bool | None = None
    compile_baselines: bool = True
    baseline_timeout_s: float = 900.0
    timing_budget_s: float = 1.0  # per case, all implementations together
    # auto: namespaces where the machine allows them; namespaces: required (an error if not);
    # off: plain processes (benchmarks of the sandbox's cost; refused beside a credential).
    sandbox: str = "auto"
    # Run candidates unconfined where namespaces cannot be set up, even beside a credential.
    allow_unsandboxed: bool = field(
        default_factory=lambda: os.environ.get("KBOT_ALLOW_UNSANDBOXED", "") in ("1", "true", "yes")
    )

    def __post_init__(self) -> None:
        if self.device not in ("auto", "cpu", "cuda"):
            raise UsageError(f"device must be auto, cpu or cuda, not {self.device!r}")
        if self.seeds < MIN_SEEDS:
            raise UsageError(f"--seeds must be at least {MIN_SEEDS} (got {self.seeds})")
        if self.timeout_s <= 0 or self.baseline_timeout_s <= 0 or self.timing_budget_s <= 0:
            raise UsageError("timeouts and the timing budget must be positive numbers of seconds")
        if any(g < 0 for g in self.gpus) or len(set(self.gpus)) != len(self.gpus):
            raise UsageError(f"--gpus must list distinct GPU indices like 0,1 (got {self.gpus})")
        if self.sandbox not in ("auto", "namespaces", "off"):
            raise UsageError(f"sandbox must be auto, namespaces or off, not {self.sandbox!r}")
        if self.gpus and self.device == "cpu":
            raise UsageError("--gpus cannot be combined with --device cpu")
