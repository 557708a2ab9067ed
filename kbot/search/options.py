"""What one optimize run may do: proposers, budgets, islands, evaluator settings.

Defaults follow `docs/config.md` (`search:` section); `kbot.commands.optimize` resolves the
command line on top of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kbot.errors import UsageError
from kbot.propose.llm.settings import LLMSettings, settings_from_config

DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class Budget:
    """Limits that stop the search; None means no limit of that kind."""

    generations: int = 6
    time_s: float | None = 600.0
    max_candidates: int | None = 200
    max_tokens: int | None = None  # the LLM proposer reports tokens in ProposeOutcome
    max_usd: float | None = None


@dataclass(frozen=True)
class OptimizeOptions:
    proposers: tuple[str, ...] = ("codegen", "tune")
    device: str = "auto"  # auto | cpu | cuda
    gpus: tuple[int, ...] = ()
    budget: Budget = Budget()
    islands: int = 4
    migration_interval: int = 2  # generations between migrations
    patience: int = 3  # generations without improvement above the noise floor
    roofline_stop_fraction: float = 0.95
    proposals_per_island: int = 4  # per proposer call in generations after the first
    seeds: int = 5  # correctness trials per case, handed to the evaluator
    finalists: int = 3  # re-measured before a winner is declared
    sweep_points: int = 8  # the winner checked at other models' sizes (kbot.search.sweep)
    exploit_probability: float = 0.7
    seed: int = 0  # the search's own randomness (parent selection)
    llm: LLMSettings = LLMSettings()  # the llm proposer's models, prices and limits

    def __post_init__(self) -> None:
        if self.device not in DEVICES:
            raise UsageError(f"--device {self.device!r}: choose one of {', '.join(DEVICES)}")
        if self.islands < 1:
            raise UsageError("islands must be at least 1")
        if self.budget.generations < 1:
            raise UsageError("--generations must be at least 1")
        if self.budget.max_candidates is not None and self.budget.max_candidates < 1:
            raise UsageError("--max-candidates must be at least 1")
        if not self.proposers:
            raise UsageError("--proposers needs at least one name, e.g. codegen,tune")


def options_from_config(config: Any, notes: list[str]) -> OptimizeOptions:
    """The search settings of a resolved `kbot.config.Config` (docs/config.md `search:` and the
    `llm:` budgets). A proposer this build does not offer fails, naming where it was chosen;
    `notes` is for messages about the options a caller shows the user."""
    from kbot.propose.registry import PROPOSERS

    llm = settings_from_config(config.llm, config.source_of)
    names = tuple(config.search.proposers)
    if llm.configured and "llm" not in names and config.source_of("search.proposers") == "default":
        names = (*names, "llm")  # a model was named: it joins the default proposers
        notes.append("llm joins the default proposers: a model is configured")
    if "llm" in names and not llm.configured:
        raise UsageError(
            "the llm proposer needs a model: --llm-model NAME (and --llm-base-url URL for a "
            "server other than api.openai.com), or llm.model in .kbot.yml"
        )
    missing = [n for n in names if n not in PROPOSERS]
    if missing:
        raise UsageError(
            f"proposer(s) {', '.join(missing)} not available (from "
            f"{config.source_of('search.proposers')}); valid: {', '.join(sorted(PROPOSERS))}"
        )
    return OptimizeOptions(
        proposers=names,
        device=config.device,
        gpus=tuple(config.gpus),
        budget=Budget(
            generations=config.search.generations,
            time_s=config.search.time_budget_s,
            max_candidates=config.search.max_candidates,
            max_tokens=config.llm.max_tokens_per_run,
            max_usd=config.llm.max_usd_per_run,
        ),
        islands=config.search.islands,
        patience=config.search.patience,
        seeds=config.search.seeds,
        sweep_points=config.search.sweep_points,
        llm=llm,
    )


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration_s(text: str) -> float:
    """'10m' -> 600.0, '90s' -> 90.0, '45' -> 45.0 (seconds)."""
    match = _DURATION.match(str(text))
    if not match:
        raise UsageError(f"time budget {text!r} not understood; write e.g. 10m, 90s or 600")
    value = float(match.group(1)) * _UNIT_S[match.group(2)]
    if value <= 0:
        raise UsageError(f"time budget {text!r} must be positive")
    return value
