"""Extern programs (issue 17): a forward with several declared extern ops, or one reading a
computed value, runs as kernels and extern calls in graph order. The problems are in
tests/codegen/problems/extern_*.py, where test_codegen_candidates.py runs every variant
through the evaluator; here, the launcher's shape: which kernels run between which calls."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kbot.problem import load_problem
from kbot.propose.codegen import generate

PROBLEMS = Path(__file__).parent / "problems"
PROGRAMS = [
    "extern_linear_sigmoid_linear_logsumexp",
    "extern_matmul_softmax_matmul",
    "extern_conv_depthwise_pointwise",
    "extern_pool_conv_transpose",
    "extern_sdpa",
]


def _launcher_steps(name: str) -> list[str]:
    """The launcher's extern calls and kernel launches, in order, as `call NAME = ...` and
    `kernel NAME`."""
    # the one-launch variant (a problem of several sizes has its decode composite first)
    candidates = generate(load_problem(PROBLEMS / f"{name}.py"), limit=2)
    source = next(c for c in candidates if " up to " not in c.note).source
    steps = []
    for line in source.splitlines():  # only the launcher launches kernels and calls ops
        line = line.strip()
        if line.endswith("[grid]("):
            steps.append(f"kernel {line.removesuffix('[grid](')}")
        elif "_out = torch." in line:
            steps.append(f"call {line}")
    return steps


def test_a_kernel_between_two_linears_and_one_after():
    steps = _launcher_steps("extern_linear_sigmoid_linear_logsumexp")
    assert steps == [
        "call mm_out = torch.nn.functional.linear(x, up_weight)",
        "kernel _extern_linear_sigmoid_linear_logsumexp_stage1_kernel",
        "call mm_1_out = torch.nn.functional.linear(sigmoid_buf, down_weight)",
        "kernel _extern_linear_sigmoid_linear_logsumexp_kernel",
    ]


def test_the_softmax_between_two_matmuls_is_one_kernel():
    steps = _launcher_steps("extern_matmul_softmax_matmul")
    assert [s.split(" = ")[0] for s in steps] == [
        "call bmm_out",
        "kernel _extern_matmul_softmax_matmul_stage1_kernel",
        "call bmm_1_out",
        "kernel _extern_matmul_softmax_matmul_kernel",
    ]
    assert steps[2].startswith("call bmm_1_out = torch.matmul(div_buf.")


def test_convolutions_back_to_back_have_no_kernel_between_them():
    steps = _launcher_steps("extern_conv_depthwise_pointwise")
    assert [s.split(" = ")[0] for s in steps] == [
        "call convolution_out",
        "call convolution_1_out",
        "kernel _extern_conv_depthwise_pointwise_kernel",
    ]
    assert "conv2d(convolution_out, pointwise_weight, None," in steps[1]


def test_a_pooled_operand_is_written_by_a_kernel_before_the_call():
    steps = _launcher_steps("extern_pool_conv_transpose")
    assert steps[0] == "kernel _extern_pool_conv_transpose_stage1_kernel"
    assert steps[1].startswith("call convolution_out = torch.nn.functional.conv_transpose2d(")
    assert "(avg_pool2d_buf, up_weight, up_bias," in steps[1]


def test_sdpa_scales_q_and_k_then_runs_bmm_softmax_bmm():
    steps = _launcher_steps("extern_sdpa")
    assert [s.split(" = ")[0].split("_stage")[-1] for s in steps] == [
        "1_flat_kernel",  # q scaled: the flat kernel, or the row kernel for a non-contiguous q
        "1_kernel",
        "2_kernel",
        "call bmm_out",
        "3_kernel",
        "call bmm_1_out",
        "kernel _extern_sdpa_kernel",
    ]


@pytest.mark.parametrize("name", PROGRAMS)
def test_the_kernel_module_imports_only_torch_and_triton(name):
    candidate = generate(load_problem(PROBLEMS / f"{name}.py"), limit=1)[0]
    imported = set()
    for node in ast.walk(ast.parse(candidate.source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add(node.module.split(".")[0])
    assert imported <= {"torch", "triton"}
    assert candidate.params["extern"] is True
    assert candidate.params["schedule"].startswith("extern_")
