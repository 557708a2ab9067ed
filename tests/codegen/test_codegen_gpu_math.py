"""`gpu-math` variants for graphs with tanh (softcap, GELU-tanh): libdevice's tanh on the GPU
behind an `ON_GPU` constexpr (the CPU interpreter has no libdevice, so there the exp-based
helper runs) and division by a scalar as a multiply by its reciprocal. On the CPU: the twins
exist, are accepted by the evaluator, and keep fp32 accuracy at edge values (0, -0, tiny,
huge, +-inf, nan); offline, the GPU branch compiles for sm_90 with Triton's own compiler. The
`gpu` test checks the libdevice branch itself at the same edge values on the H200."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem
from kbot.problem.runtime import import_file
from kbot.propose.codegen import generate
from kbot.propose.codegen.ops import _reciprocal, literal

BENCH = Path(__file__).parents[2] / "bench" / "problems"
SOFTCAP = BENCH / "softcap.py"
SM90_COMPILE = Path(__file__).parent / "sm90_compile.py"
EDGE = [0.0, -0.0, 1e-30, -1e-30, 1e-3, -0.05, 0.09, 0.11, 2.9, -3.1, 17.0, 29.0, -31.0, 300.0]
EDGE += [-1e4, 1e30, -1e30, float("inf"), float("-inf"), float("nan")]


def _gpu_math(candidates):
    return [c for c in candidates if c.params.get("gpu_math")]


def _small(tmp_path: Path, problem: Path, dtype: torch.dtype = torch.bfloat16) -> Path:
    """The problem at decode sizes (T=1, 3), its inputs in `dtype` (the trace follows them)."""
    small = tmp_path / f"{problem.stem}_{str(dtype)[6:]}.py"
    text = problem.read_text().replace("dtype=torch.bfloat16", f"dtype={dtype}")
    small.write_text(re.sub(r"(?m)^CASES = .*$", "CASES = [dict(T=1), dict(T=3)]", text))
    return small


def test_tanh_graphs_get_gpu_math_twins_right_after_each_variant():
    candidates = generate(load_problem(SOFTCAP))
    flags = [bool(c.params.get("gpu_math")) for c in candidates]
    assert flags == [False, True] * (len(candidates) // 2)
    # several sizes: the decode composite and its twin lead, the twins still paired
    assert " up to 64 rows" in candidates[0].note and " up to 64 rows" in candidates[1].note
    for plain, twin in zip(candidates[::2], candidates[1::2]):
        assert twin.note == f"{plain.note} gpu-math"
        assert "from triton.language.extra import libdevice" in twin.source
        assert "libdevice.tanh(x)" in twin.source and "ON_GPU=out.is_cuda" in twin.source
        assert "x_1 * (1.0 / cap)" in twin.source
        assert "libdevice.tanh" not in plain.source and "x_1 / cap" in plain.source
    # gelu_tanh_and_mul has a tanh too; rmsnorm does not, so it gets no twins
    assert _gpu_math(generate(load_problem(BENCH / "gelu_tanh_and_mul.py")))
    assert not _gpu_math(generate(load_problem(BENCH / "rmsnorm.py")))


@pytest.mark.parametrize("name", ["softcap", "gelu_tanh_and_mul"])
def test_gpu_math_variants_are_accepted_by_the_evaluator(name, tmp_path):
    spec = load_problem(_small(tmp_path, BENCH / f"{name}.py"))
    twins = _gpu_math(generate(spec))
    assert twins
    with Evaluator(EvalOptions(device="cpu")) as evaluator:
        for candidate in twins[:2]:
            verdict = evaluator.evaluate(spec, candidate.source)
            assert verdict.accepted, (candidate.note, [str(r) for r in verdict.reasons])


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_softcap_variants_at_edge_values(dtype, tmp_path, load_candidate, device):
    """Every variant (the helper and the gpu-math twin with its reciprocal division) against
    eager at values where tanh saturates, underflows, or is not a number."""
    problem = _small(tmp_path, SOFTCAP, dtype)
    reference = import_file(problem)
    x = torch.tensor(EDGE, dtype=dtype).repeat(3, 1).to(device)
    expected = reference.Model(30.0).to(device)(x)
    # fp32: the interpreter's tanh is NumPy's; a GPU's is a few ulp from eager's (as in the
    # gpu twin of this test below)
    tol = (1e-6 if device == "cpu" else 1e-5) if dtype == torch.float32 else 8e-3
    candidates = generate(load_problem(problem))
    assert _gpu_math(candidates) and len(candidates) > len(_gpu_math(candidates))
    for candidate in candidates:
        module = load_candidate(candidate.source)
        got = module.ModelNew(30.0).to(device)(x)
        assert got.dtype == dtype
        torch.testing.assert_close(got, expected, atol=tol, rtol=tol, equal_nan=True)
        assert torch.equal(torch.signbit(got[:, :2]), torch.signbit(expected[:, :2]))


def test_reciprocal_only_for_scalars_with_a_normal_fp32_inverse():
    assert _reciprocal(2.0, "2.0") == "0.5"
    assert _reciprocal(-4, "-4") == "-0.25"
    assert _reciprocal(30.0, "cap") == "(1.0 / cap)"  # a Model attribute passed at launch
    for divisor in (0.0, float("inf"), float("nan"), 1e-39, 1e39):
        assert _reciprocal(divisor, literal(divisor)) is None, divisor


def _sm90_compile(tmp_path: Path, source: str, kernel: str, **job) -> dict:
    """PTX and cubin size of `kernel` in `source`, compiled for sm_90 by Triton's own compiler
    (no GPU needed) in a child process: this one runs kernels under the interpreter, which
    leaves `triton.language` patched (see sm90_compile.py)."""
    candidate, job_path, out = (tmp_path / n for n in ("sm90.py", "sm90_job.json", "sm90.json"))
    candidate.write_text(source)
    job_path.write_text(json.dumps({"candidate": str(candidate), "kernel": kernel, **job}))
    child = subprocess.run(
        [sys.executable, str(SM90_COMPILE), str(job_path), str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert child.returncode == 0, child.stderr[-3000:]
    return json.loads(out.read_text())


def test_gpu_math_kernel_compiles_for_sm90_with_libdevice(tmp_path):
    """Triton's own compiler (no GPU needed) takes the ON_GPU branch to PTX: libdevice's tanhf
    inlined, with flush-to-zero exp2 and reciprocal."""
    twin = _gpu_math(generate(load_problem(SOFTCAP)))[0]
    constexprs = {"ROWS": 1, "BLOCK_N": 4096, "BITWISE_ROUNDING": False, "ON_GPU": True}
    constexprs.update(out_stride1=1, x_stride1=1)
    compiled = _sm90_compile(
        tmp_path, twin.source, "_softcap_kernel", pointer="bf16", types={"cap": "fp32"},
        constexprs=constexprs, num_warps=8,
    )  # fmt: skip
    ptx = compiled["ptx"]
    assert "ex2.approx.ftz.f32" in ptx and "rcp.approx.ftz" in ptx
    assert compiled["cubin_bytes"] > 0


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_libdevice_branch_at_edge_values_on_gpu(dtype, tmp_path, load_candidate):
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    problem = _small(tmp_path, SOFTCAP, dtype)
    reference = import_file(problem)
    x = torch.tensor(EDGE, dtype=dtype, device="cuda").repeat(5, 1)
    x = torch.cat([x, torch.randn(64, len(EDGE), device="cuda").to(dtype) * 20])
    expected = reference.Model(30.0)(x)
    tol = 1e-5 if dtype == torch.float32 else 8e-3
    twins = _gpu_math(generate(load_problem(problem)))
    assert twins
    for candidate in twins:
        module = load_candidate(candidate.source)
        got = module.ModelNew(30.0)(x)
        torch.testing.assert_close(got, expected, atol=tol, rtol=tol, equal_nan=True)


@pytest.mark.parametrize(("dtype", "short"), [(torch.bfloat16, "bf16"), (torch.float16, "fp16")])
def test_rounding_of_low_precision_products_survives_the_gpu_compiler(dtype, short, tmp_path):
    """`a*b - c*d` in bf16/fp16 rounds each product, as eager does. Written as a cast pair,
    LLVM fused one product into the subtraction (`fma.rn.bf16`, one rounding instead of two:
    RoPE's mismatches on the H200); the helpers' inline `cvt.rn` keeps both roundings."""
    problem = tmp_path / f"mul_sub_{short}.py"
    problem.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "CASES = [dict(T=2)]\n\n\n"
        "class Model(nn.Module):\n"
        "    def forward(self, a, b, c, d):\n"
        "        return a * b - c * d\n\n\n"
        "def get_inputs(T):\n"
        f"    return [torch.randn(T, 256, dtype={dtype}) for _ in range(4)]\n\n\n"
        "def get_init_inputs():\n"
        "    return []\n"
    )
    candidate = generate(load_problem(problem))[0]
    helper = "_round_product_to_bf16" if dtype == torch.bfloat16 else "_round_product_to_fp16"
    assert f"{helper}(a_1 * b_1, BITWISE_ROUNDING)" in candidate.source
    constexprs = {"ROWS": 1, "BLOCK_N": 1024, "BITWISE_ROUNDING": False}
    ptx = _sm90_compile(
        tmp_path, candidate.source, f"_mul_sub_{short}_kernel", pointer=short, types={},
        constexprs=constexprs, num_warps=4,
    )["ptx"]  # fmt: skip
    ptx_type = {"bf16": "bf16", "fp16": "f16"}[short]
    assert f"fma.rn.{ptx_type}" not in ptx and "fma.rn.f32" not in ptx
    # Per thread: 1024 elements / 128 threads = 8, two products each, both rounded.
    assert ptx.count(f"cvt.rn.{ptx_type}.f32") >= 16


def test_roundings_that_no_add_consumes_stay_plain_casts():
    """The inline rounding costs instructions (with it on every rounding, gelu_tanh_and_mul's
    prefill winners were 8-10% slower on the H200): only a product that an add, subtract or sum
    consumes gets it. GELU's rounded output is multiplied, not added; RoPE's four products are
    subtracted or added."""
    gelu = generate(load_problem(BENCH / "gelu_tanh_and_mul.py"))[0].source
    assert "_round_product_to" not in gelu and "_round_to_bf16(mul_5, BITWISE_ROUNDING)" in gelu
    rope = next(  # the pointwise kernel (the pairs ones, first, load each half once)
        c.source for c in generate(load_problem(BENCH / "rope_neox.py")) if ": pointwise" in c.note
    )
    kernel = rope[rope.index("def _rope_neox_kernel(") :]
    assert kernel.count("_round_product_to_bf16(query_") == 4
    assert kernel.count("_round_to_bf16(cos_sin_cache_") == 4  # the reference's .to(q.dtype)
