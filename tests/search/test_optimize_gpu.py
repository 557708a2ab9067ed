"""`kbot optimize` on a GPU: timed fitness, re-measured finalists, timings in the report and in
kernel.py's header. Run on the H200: `pytest tests/search/test_optimize_gpu.py -m gpu -q -s`."""

import json

import pytest

from kbot.evaluate.roofline import ROOFLINE_LIMIT
from kbot.problem import load_problem
from kbot.search import Budget, OptimizeOptions, OptimizeStatus, optimize

RMSNORM = """import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, hidden_size=4096, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x):
        variance = x.float().pow(2).mean(-1, keepdim=True)
        normed = (x.float() * torch.rsqrt(variance + self.eps)).to(x.dtype)
        return normed * self.weight.to(x.dtype)  # bf16 out, as serving engines keep it


CASES = [dict(T=16), dict(T=4096)]


def get_inputs(T=16):
    return [torch.randn(T, 4096, dtype=torch.bfloat16, device="cuda")]


def get_init_inputs():
    return [4096]
"""


@pytest.mark.gpu
def test_gpu_optimize_times_remeasures_and_reports(tmp_path):
    path = tmp_path / "rmsnorm.py"
    path.write_text(RMSNORM)
    options = OptimizeOptions(
        proposers=("codegen", "tune"),
        device="cuda",
        # small enough for bench/h200.sh's 200 s per-test limit, torch.compile baselines included
        budget=Budget(generations=2, time_s=90.0, max_candidates=8),
    )
    result = optimize(load_problem(path), options, tmp_path / "work")
    print(f"\n{result.status.value}: {result.message}\nreport: {result.report_md_path}")
    assert result.status in (OptimizeStatus.IMPROVED, OptimizeStatus.NOT_FASTER)
    assert result.verdict is not None and result.verdict.timed
    report = json.loads(result.report_json_path.read_text())
    assert report["timed"] and report["finalists"], "finalists must be re-measured on a GPU"
    for case in report["cases"]:
        timing = case["timing"]
        assert timing["candidate_graph"]["median_us"] > 0 and timing["speedup_vs_eager"] > 0
        # the evaluator accepts up to ROOFLINE_LIMIT: timing noise above a roofline-bound kernel
        assert 0 < timing["roofline_percent"] <= 100 * ROOFLINE_LIMIT
    header = result.kernel_path.read_text().split('"""')[1]
    assert result.verdict.device in header and "Timings (median µs" in header
    print(result.report_md_path.read_text())
