"""How good a verdict is. On a GPU: speedup over torch.compile (or eager when compile was not
measured), compared above the noise floor. On a CPU nothing is timed, so fitness is correctness
only and the simplest accepted candidate (fewest kernels, then fewest lines) wins."""

from __future__ import annotations

import ast
import math
from dataclasses import dataclass

from kbot.evaluate.verdict import NOT_MEASURED, NOT_TIMED, Verdict, measured


@dataclass(frozen=True)
class Fitness:
    accepted: bool
    timed: bool
    speedup: float | None  # geomean over cases vs `baseline`; None when not timed
    baseline: str | None  # "torch.compile" or "eager"
    roofline_fraction: float | None  # of the largest timed case; None when not timed/measured
    noise: float  # the largest relative spread of the candidate's timings; 0 when not timed
    kernels: int
    code_lines: int
    roofline_peak: str = ""  # the peak that bounds roofline_fraction ("fp32 FMA 50.4 TFLOP/s")

    def sort_key(self) -> tuple[bool, float, int, int]:
        """Larger is better."""
        return (self.accepted, self.speedup or 0.0, -self.kernels, -self.code_lines)

    def beats(self, other: Fitness | None) -> bool:
        """True when this is better than `other` by more than the noise floor."""
        if not self.accepted:
            return False
        if other is None or not other.accepted:
            return True
        if self.timed and other.timed and self.speedup is not None and other.speedup is not None:
            return self.speedup > other.speedup * (1.0 + max(self.noise, other.noise))
        return self.sort_key() > other.sort_key()

    def describe(self) -> str:
        if not self.accepted:
            return "rejected"
        if not self.timed or self.speedup is None:
            return f"accepted, {self.kernels} kernel(s), {self.code_lines} lines ({NOT_TIMED})"
        peak = f" ({self.roofline_peak})" if self.roofline_peak else ""
        roof = (
            f", {100 * self.roofline_fraction:.0f}% of roofline{peak}"
            if self.roofline_fraction is not None
            else f", roofline {NOT_MEASURED}"
        )
        return f"{self.speedup:.2f}x vs {self.baseline}{roof}"


def fitness_of(verdict: Verdict, source: str) -> Fitness:
    kernels, code_lines = simplicity(source)
    if not verdict.accepted or not verdict.timed:
        return Fitness(verdict.accepted, False, None, None, None, 0.0, kernels, code_lines)
    speedup = verdict.speedup_geomean("compile")
    baseline = "torch.compile"
    if speedup is None:
        speedup, baseline = verdict.speedup_geomean("eager"), "eager"
    timings = [c.timing for c in verdict.cases if c.timing is not None]
    spreads = [t.candidate_graph.spread for t in timings if math.isfinite(t.candidate_graph.spread)]
    largest = max(timings, key=lambda t: (t.bytes_moved, t.flops))
    return Fitness(
        accepted=True,
        timed=speedup is not None,
        speedup=speedup,
        baseline=baseline if speedup is not None else None,
        roofline_fraction=(
            largest.roofline_fraction if measured(largest.roofline_fraction) else None
        ),
        noise=max(spreads, default=0.0),
        kernels=kernels,
        code_lines=code_lines,
        roofline_peak=largest.roofline_peak if measured(largest.roofline_fraction) else "",
    )


def simplicity(source: str) -> tuple[int, int]:
    """(number of Triton kernels launched, lines that are neither blank nor comments)."""
    lines = sum(
        1 for line in source.splitlines() if line.strip() and not line.strip().startswith("#")
    )
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0, lines
    jitted = {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and any(_is_jit(d) for d in node.decorator_list)
    }
    # Kernels are the jitted functions launched as `kernel[grid](...)`; @triton.jit helpers
    # called from inside kernels (a bf16 rounding helper) are not launches.
    launched = {
        node.func.value.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Subscript)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in jitted
    }
    return len(launched or jitted), lines


def _is_jit(decorator: ast.expr) -> bool:
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", "")
    return name in ("jit", "autotune", "heuristics")
