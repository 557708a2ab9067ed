"""A split row reduction whose reductions depend on one another (a variance over the row's
mean, as LayerNorm takes it) gets one partials pass per depth: few very wide rows then fill the
GPU instead of running one program per row (KernelBench's 16-row LayerNorm ran at 0.07x
torch.compile that way). Correctness of every variant is checked by the evaluator in
test_codegen_candidates.py; this file checks the structure and runs the kernels directly."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from kbot.problem import load_problem
from kbot.propose.codegen import generate

PROBLEMS = Path(__file__).parent / "problems"


def _split(name: str):
    spec = load_problem(PROBLEMS / f"{name}.py")
    return [c for c in generate(spec) if c.params.get("loop") == "split"]


def _run(candidate, tmp_path, *args):
    path = tmp_path / "candidate.py"
    path.write_text(candidate.source)
    spec = importlib.util.spec_from_file_location(f"split_{abs(hash(candidate.source))}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ModelNew()(*args)


@pytest.mark.parametrize(("name", "passes"), [("reduce_var_wide", 3), ("softmax_wide", None)])
def test_each_depth_of_reduction_gets_its_own_pass(name, passes):
    variants = _split(name)
    assert variants, "a wide row is offered split variants"
    for candidate in variants:
        assert candidate.params.get("passes") == passes
        kernels = candidate.source.count("@triton.jit")
        assert (
            kernels == (passes or 2) or "up to" in candidate.note
        )  # a size-class dispatch adds one


def test_a_variance_over_few_wide_rows_matches_torch_in_every_split_variant(tmp_path, device):
    x = torch.randn(3, 20000, device=device) * 2 + 5
    for candidate in _split("reduce_var_wide"):
        out = _run(candidate, tmp_path, x)
        torch.testing.assert_close(out, torch.var(x, dim=-1, keepdim=True), rtol=1e-4, atol=1e-4)
