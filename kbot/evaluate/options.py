"""How the evaluator runs: device, GPUs, trials, limits. One frozen record, checked once."""

from __future__ import annotations

from dataclasses import dataclass

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

    def __post_init__(self) -> None:
        if self.device not in ("auto", "cpu", "cuda"):
            raise UsageError(f"device must be auto, cpu or cuda, not {self.device!r}")
        if self.seeds < MIN_SEEDS:
            raise UsageError(f"--seeds must be at least {MIN_SEEDS} (got {self.seeds})")
        if self.timeout_s <= 0 or self.baseline_timeout_s <= 0 or self.timing_budget_s <= 0:
            raise UsageError("timeouts and the timing budget must be positive numbers of seconds")
        if any(g < 0 for g in self.gpus) or len(set(self.gpus)) != len(self.gpus):
            raise UsageError(f"--gpus must list distinct GPU indices like 0,1 (got {self.gpus})")
        if self.gpus and self.device == "cpu":
            raise UsageError("--gpus cannot be combined with --device cpu")
