"""libdevice's math functions under Triton's CPU interpreter (kbot.evaluate.
interpreter_libdevice): computed in the argument's precision, unsupported ones named; and an
honest GELU-tanh kernel calling `libdevice.tanh` accepted on a CPU, a wrong one rejected."""

from __future__ import annotations

import numpy as np
import pytest

from kbot.evaluate.interpreter_libdevice import function_name

# Runs in a child: the patch changes the interpreter of the process that installs it.
PROBE = r"""
import json, math, sys
import torch, triton, triton.language as tl
from triton.language.extra import libdevice
from kbot.evaluate import interpreter_libdevice

@triton.jit
def _math(x_ptr, y_ptr, out_ptr, n, B: tl.constexpr):
    o = tl.arange(0, B)
    m = o < n
    x = tl.load(x_ptr + o, mask=m, other=0.5)
    y = tl.load(y_ptr + o, mask=m, other=0.5)
    tl.store(out_ptr + 0 * n + o, libdevice.tanh(x), mask=m)
    tl.store(out_ptr + 1 * n + o, libdevice.erf(x), mask=m)
    tl.store(out_ptr + 2 * n + o, libdevice.pow(tl.abs(x), y), mask=m)
    tl.store(out_ptr + 3 * n + o, libdevice.fma(x, y, x), mask=m)
    tl.store(out_ptr + 4 * n + o, libdevice.rsqrt(tl.abs(x) + 1.0), mask=m)
    tl.store(out_ptr + 5 * n + o, libdevice.round(x * 4.0), mask=m)
    tl.store(out_ptr + 6 * n + o, libdevice.isnan(x / 0.0 * 0.0).to(tl.float32), mask=m)
    tl.store(out_ptr + 7 * n + o, libdevice.atan2(x, y), mask=m)

@triton.jit
def _bits(x_ptr, out_ptr):
    tl.store(out_ptr, libdevice.popc(tl.load(x_ptr)))

if sys.argv[-1] == "install":
    interpreter_libdevice.install()
torch.manual_seed(0)
n = 37
x, y = torch.randn(n), torch.randn(n)
x[:4] = torch.tensor([0.125, -0.375, 2.5, -2.5]) / 4  # halves: round() goes away from zero
out = torch.empty(8 * n)
try:
    _math[(1,)](x, y, out, n, B=64)
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__ + ": " + str(exc)[:200]}))
    sys.exit(0)
ref = torch.stack([
    torch.tanh(x), torch.erf(x), x.abs() ** y, torch.addcmul(x, x, y),
    torch.rsqrt(x.abs() + 1), torch.sign(x * 4) * torch.floor((x * 4).abs() + 0.5),
    torch.ones(n), torch.atan2(x, y),
]).flatten()
error = ((out - ref).abs() / (ref.abs() + 1e-6)).max().item()
try:
    _bits[(1,)](torch.tensor([7], dtype=torch.int32), torch.empty(1, dtype=torch.int32))
    bits = "ran"
except Exception as exc:
    bits = str(exc)[:300]
print(json.dumps({"error": error, "bits": bits}))
"""


def test_symbols_map_to_their_functions():
    assert function_name("__nv_tanhf") == "tanh"
    assert function_name("__nv_erf") == "erf"  # the fp64 erf is not "er" + "f"
    assert function_name("__nv_erff") == "erf"
    assert function_name("__nv_fast_expf") == "exp"
    assert function_name("__nv_fadd_rn") == "add"
    assert function_name("__nv_fmaf_rn") == "fma"
    assert function_name("__nv_isnand") == "isnan"
    assert function_name("__nv_powif") == "powi"
    assert function_name("__nv_fadd_rz") == "fadd_rz"  # another rounding: not computed


def test_without_the_patch_the_interpreter_refuses_libdevice(interpreter_probe):
    assert "error" in interpreter_probe(
        PROBE, "plain"
    )  # a stub returning None, or extern_elementwise refused


def test_libdevice_functions_compute_as_cuda_does(interpreter_probe):
    result = interpreter_probe(PROBE, "install")
    assert result["error"] < 1e-6, result
    assert "popc" in result["bits"] and "GPU" in result["bits"], result


GELU_PROBLEM = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return nn.functional.gelu(x, approximate="tanh")


CASES = [dict(T=3), dict(T=5)]


def get_inputs(T):
    return [torch.randn(T, 300)]


def get_init_inputs():
    return []
"""

GELU_CANDIDATE = """
import torch
import torch.nn as nn
import triton
import triton.language as tl
from triton.language.extra import libdevice


@triton.jit
def _gelu_tanh(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    inner = 0.7978845608028654 * (x + 0.044715 * x * x * x)
    tl.store(out_ptr + offs, 0.5 * x * (1.0 + libdevice.tanh(inner)), mask=mask)


class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.empty_like(x)
        n = x.numel()
        _gelu_tanh[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
        return out
"""


@pytest.mark.parametrize("wrong", [False, True])
def test_a_libdevice_kernel_is_judged_on_a_cpu(evaluator, tmp_path, wrong):
    from kbot.problem import load_problem

    path = tmp_path / "gelu_tanh.py"
    path.write_text(GELU_PROBLEM, encoding="utf-8")
    source = GELU_CANDIDATE.replace("0.044715", "0.047") if wrong else GELU_CANDIDATE
    verdict = evaluator.evaluate(load_problem(path), source, "gelu_libdevice.py")
    if wrong:
        assert not verdict.accepted and verdict.reasons[0].rule == "mismatch", verdict.reasons
    else:
        assert verdict.accepted, [str(r) for r in verdict.reasons]


def test_zero_dimensional_values_keep_their_shape():
    from kbot.evaluate.interpreter_libdevice import UNARY

    assert UNARY["erf"](np.float32(0.5) * np.ones((), np.float32)).shape == ()
