"""fp8 (e4m3fn) outputs and inputs: the quantization serving engines run before an fp8
GEMM (lmdeploy's static per-tensor quant had no schedule: "dtype torch.float8_e4m3fn"). The
kernel computes in fp32, divides as torch does (`tl.div_rn`: an fp8 output is compared bit for
bit, and a division one ulp off can cross a rounding boundary) and rounds where the reference
casts. On the CPU the candidate's process makes Triton's interpreter round into fp8 as a GPU
does (kbot.evaluate.interpreter_rounding.install_fp8); every variant of the three
quantizations (static, per token, per group of 128 columns) and of a dequantization (fp8 in,
bf16 out) is accepted by the evaluator in test_codegen_candidates.py."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from kbot.evaluate import EvalOptions, evaluate, interpreter_rounding
from kbot.problem import load_problem
from kbot.propose.codegen import generate

PROBLEMS = Path(__file__).parent / "problems"


@pytest.mark.parametrize("name", ["fp8_quant_per_token", "fp8_quant_per_group", "fp8_quant_static"])
def test_an_fp8_output_is_rounded_and_stored_as_e4m3(name):
    (first, *_) = generate(load_problem(PROBLEMS / f"{name}.py"))
    assert "tl.div_rn(" in first.source and " / " not in _kernel_lines(first.source)
    assert ".to(tl.float8e4nv)" in first.source
    assert "dtype=torch.float8_e4m3fn" in first.source


def test_the_per_token_quant_is_accepted_with_its_scales():
    problem = load_problem(PROBLEMS / "fp8_quant_per_token.py")
    (first, *_) = generate(problem)
    verdict = evaluate(problem, first.source, EvalOptions(device="cpu"))
    assert verdict.accepted, [str(r) for r in verdict.reasons]


def test_the_interpreter_rounds_into_fp8_as_torch_does():
    """Triton 3.9's interpreter drops the carry of a rounding into the exponent (31.52 became
    16, not 32); install_fp8 replaces the cast where it is wrong."""
    assert interpreter_rounding.install_fp8()
    import triton.language as tl
    from triton.runtime import interpreter

    torch.manual_seed(0)
    values = (torch.randn(4096) * 100).clamp(-448, 448).numpy()
    handle = interpreter.TensorHandle(values, tl.float32)
    cast = interpreter.InterpreterBuilder.create_fp_to_fp
    got = np.asarray(cast(interpreter.interpreter_builder, handle, tl.float8e4nv, None).data)
    expected = torch.from_numpy(values).to(torch.float8_e4m3fn).view(torch.uint8).numpy()
    assert np.array_equal(got.view(np.uint8), expected)


def _kernel_lines(source: str) -> str:
    """The @triton.jit functions' bodies, less comments."""
    parts = source.split("@triton.jit")[1:]
    lines = [line.split("#")[0] for part in parts for line in part.split("\n\n\n")[0].splitlines()]
    return "\n".join(line for line in lines if '"""' not in line)
