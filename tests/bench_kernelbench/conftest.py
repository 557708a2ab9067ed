"""A tiny fake KernelBench checkout written per test (our own problems in its layout:
KernelBench/level<L>/<N>_<Name>.py), and a fake optimize() that returns scripted results."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from kbot.search import StopReason

PROBLEM = '''
"""Our own level-{level} problem {number}: {what}."""

import torch
import torch.nn as nn

batch_size = {rows}
dim = {cols}


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return {expr}


def get_inputs():
    return [torch.randn(batch_size, dim)]


def get_init_inputs():
    return []
'''

PROBLEMS = {
    (1, 19, "ReLU"): ("relu", "torch.relu(x)"),
    (1, 23, "Softmax"): ("softmax over rows", "torch.softmax(x, dim=1)"),
    (1, 47, "Sum_reduction"): ("sum over dim 1", "torch.sum(x, dim=1, keepdim=True)"),
    (2, 5, "Sort_Add"): ("sort then add (codegen has no sort)", "torch.sort(x, dim=1)[0] + 1.0"),
}


def write_root(base: Path, rows: int = 4, cols: int = 33, only=None) -> Path:
    root = base / "KernelBench-checkout"
    for (level, number, name), (what, expr) in PROBLEMS.items():
        if only is not None and (level, number) not in only:
            continue
        folder = root / "KernelBench" / f"level{level}"
        folder.mkdir(parents=True, exist_ok=True)
        text = PROBLEM.format(
            level=level, number=number, what=what, rows=rows, cols=cols, expr=expr
        )
        (folder / f"{number}_{name}.py").write_text(textwrap.dedent(text).lstrip())
    return root


@pytest.fixture
def kernelbench_root(tmp_path):
    return write_root(tmp_path)


class FakeOptimize:
    """Stands in for kbot.search.optimize: a winner with the scripted speedups per problem
    name (None: no candidate accepted), `interrupt_at` a problem whose run is interrupted."""

    def __init__(self, work_dir: Path, speedups: dict, interrupt_at: str | None = None):
        self.work_dir = work_dir
        self.speedups = speedups
        self.interrupt_at = interrupt_at
        self.calls: list[tuple[str, str | None]] = []

    def __call__(self, spec, options, work_dir, *, progress, resume_run_id=None):
        name = spec.path.stem
        run_id = resume_run_id or f"{name}-run"
        self.calls.append((name, resume_run_id))
        progress.started(run_id, name, "fake GPU")
        if name == self.interrupt_at:
            self.interrupt_at = None  # the next invocation finishes it
            return _result(run_id, None, StopReason.INTERRUPTED, self.work_dir, [])
        figures = self.speedups.get(name)
        if figures is None:
            rejections = [{"reason": "correctness: [mismatch]", "candidates": 3, "example": "x"}]
            return _result(run_id, None, StopReason.GENERATIONS, self.work_dir, rejections)
        return _result(run_id, _verdict(*figures), StopReason.GENERATIONS, self.work_dir, [])


def _verdict(eager: float, compiled: float):
    timing = SimpleNamespace(
        speedup_vs_eager=eager, speedup_vs_compile=compiled, roofline_fraction=0.5
    )
    return SimpleNamespace(accepted=True, timed=True, cases=(SimpleNamespace(timing=timing),))


def _result(run_id, verdict, stop, work_dir, rejections):
    report = work_dir / f"{run_id}.json"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(json.dumps({"rejections": rejections, "notes": []}))
    return SimpleNamespace(
        run_id=run_id,
        has_winner=verdict is not None,
        verdict=verdict,
        message="winner" if verdict else "no candidate accepted out of 3",
        candidates=3,
        accepted=1 if verdict else 0,
        stop_reason=stop,
        report_json_path=report,
        best_candidate_path=work_dir / "best.py" if verdict else None,
    )
