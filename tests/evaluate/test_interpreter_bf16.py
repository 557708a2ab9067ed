"""Triton's CPU interpreter computing bf16 operations on values, not on their uint16 bits
(kbot.evaluate.interpreter_bf16): native bf16 arithmetic, negation, comparisons, minimum and max
reductions, as a GPU computes them; and an honest kernel written that way accepted on a CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem

# Runs in a child: the patch changes the interpreter of the process that installs it.
PROBE = r"""
import json, sys
import torch, triton, triton.language as tl
from kbot.evaluate import interpreter_bf16, interpreter_rounding

@triton.jit
def _ops(x_ptr, y_ptr, out_ptr, max_ptr, arg_ptr, n, B: tl.constexpr):
    o = tl.arange(0, B)
    m = o < n
    a = tl.load(x_ptr + o, mask=m, other=0.0)
    b = tl.load(y_ptr + o, mask=m, other=0.0)
    r = a * b - a
    r = tl.where(a < b, r, -r)  # a comparison of negative values
    r = r * 0.25 + tl.minimum(a, b)
    tl.store(out_ptr + o, r, mask=m)
    v, i = tl.max(tl.where(m, a, float("-inf")), axis=0, return_indices=True)
    tl.store(max_ptr, v)
    tl.store(arg_ptr, i)

if sys.argv[-1] == "install":
    interpreter_rounding.install()
    interpreter_bf16.install()
torch.manual_seed(0)
a, b = torch.randn(16, dtype=torch.bfloat16), torch.randn(16, dtype=torch.bfloat16)
out, top, arg = torch.empty_like(a), torch.empty(1, dtype=torch.bfloat16), torch.empty(1, dtype=torch.int32)
_ops[(1,)](a, b, out, top, arg, 16, B=16)
def bf(t):
    return t.to(torch.bfloat16).float()
af, bfl = a.float(), b.float()
r = bf(bf(af * bfl) - af)
r = torch.where(af < bfl, r, -r)
ref = bf(bf(r * 0.25) + torch.minimum(af, bfl))
print(json.dumps({
    "error": (out.float() - ref).abs().max().item(),
    "max_right": top.item() == a.max().item(),
    "argmax_right": arg.item() == int(a.float().argmax()),
}))
"""


def test_bf16_arithmetic_runs_on_bits_until_installed_then_on_values(interpreter_probe):
    before = interpreter_probe(PROBE)
    assert before["error"] > 1.0 or not before["max_right"]  # Triton 3.9's interpreter
    after = interpreter_probe(PROBE, "install")
    assert after["error"] <= 2**-6 * 8  # a few bf16 ulps of values of order 1..8
    assert after["max_right"] and after["argmax_right"]


LIGER_STYLE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _silu_mul_kernel(a_ptr, b_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(a_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    b = tl.load(b_ptr + offs, mask=mask, other=0.0)
    # Liger's way: the activation in fp32, then the product in the inputs' own dtype
    out = (a * tl.sigmoid(a)).cast(b.dtype) * b
    tl.store(out_ptr + offs, out, mask=mask)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        d = x.shape[-1] // 2
        a, b = x[..., :d].contiguous(), x[..., d:].contiguous()
        out = torch.empty_like(a)
        n = out.numel()
        _silu_mul_kernel[(triton.cdiv(n, 1024),)](a, b, out, n, BLOCK=1024)
        return out
"""

SILU_MUL_BF16 = """
import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def forward(self, x):
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]


KBOT = dict(extern_ops=["matmul"])  # lets the launcher make its halves contiguous
CASES = [dict(T=4)]


def get_inputs(T):
    return [torch.randn(T, 256, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
"""


def test_an_honest_kernel_with_native_bf16_arithmetic_is_accepted_on_the_cpu(tmp_path: Path):
    problem_path = tmp_path / "silu_mul_bf16.py"
    problem_path.write_text(SILU_MUL_BF16)
    with Evaluator(EvalOptions(device="cpu")) as evaluator:
        verdict = evaluator.evaluate(load_problem(problem_path), LIGER_STYLE, "liger_style.py")
    assert verdict.accepted, [str(r) for r in verdict.reasons]


@pytest.mark.parametrize("wrong", ["* b * 1.05", "* b + 0.5"])
def test_a_wrong_bf16_kernel_is_still_rejected(tmp_path: Path, wrong: str):
    problem_path = tmp_path / "silu_mul_bf16.py"
    problem_path.write_text(SILU_MUL_BF16)
    source = LIGER_STYLE.replace("* b\n", f"{wrong}\n")
    with Evaluator(EvalOptions(device="cpu")) as evaluator:
        verdict = evaluator.evaluate(load_problem(problem_path), source, "wrong.py")
    assert not verdict.accepted
