"""The static rules on small sources: each rule fires on its pattern, with the right line, and
honest launcher code (grid math on sizes, allocation, views, declared extern ops) passes."""

import textwrap

import pytest

from kbot.evaluate.static import RULES, check_source, problem_dtype_hint
from kbot.problem.spec import ProblemOptions

HEADER = """\
import torch
import torch.nn as nn
import torch.nn.functional as F
import triton
import triton.language as tl


@triton.jit
def _op_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

"""


def candidate(
    launcher_body: str, forward: str = "return op(x, self.weight, self.eps)", extra: str = ""
) -> str:
    launcher = "def op(x, weight, eps):\n" + textwrap.indent(textwrap.dedent(launcher_body), "    ")
    model = (
        "class ModelNew(nn.Module):\n"
        "    def __init__(self, hidden, eps=1e-6):\n"
        "        super().__init__()\n"
        "        self.weight = nn.Parameter(torch.ones(hidden))\n"
        "        self.eps = eps\n\n"
        f"    def forward(self, x):\n        {forward}\n"
    )
    return HEADER + extra + "\n" + launcher + "\n\n" + model


HONEST_LAUNCHER = """\
M, N = x.shape
x2d = x.contiguous().view(-1, N)
out = torch.empty_like(x2d)
BLOCK = triton.next_power_of_2(N)
num_warps = 4 if BLOCK <= 1024 else 8
grid = lambda meta: (triton.cdiv(M * N, meta["BLOCK"]),)
rows = x2d.numel() // x2d.shape[-1]
_op_kernel[grid](x2d, out, rows * N, BLOCK=BLOCK, num_warps=num_warps)
return out.view(*x.shape[:-1], N)
"""


DEFAULTS = ProblemOptions()


def rules(source: str, options: ProblemOptions = DEFAULTS, hint=None) -> list[str]:
    return [r.rule for r in check_source(source, options, hint)]


def test_honest_launcher_passes():
    assert check_source(candidate(HONEST_LAUNCHER), ProblemOptions()) == ()


@pytest.mark.parametrize(
    "line",
    [
        "y = torch.exp(x)",
        "y = x.sum()",
        "y = x * weight",
        "y = F.silu(x)",
        "y = x.to(torch.float32)",
        "y = x.float()",
        "y = -x",
        "y = x[weight.long()]",
        "y = x > 0",
        "y = torch.matmul(x, x)",
        "y = x @ x",
        "x[0] = 1.0",
        "y = x.clone()",
        "y = max(x, weight)",
    ],
)
def test_torch_compute_in_the_launcher_is_rejected_with_its_line(line):
    source = candidate(line + "\n" + HONEST_LAUNCHER)
    reasons = check_source(source, ProblemOptions())
    assert reasons and {r.rule for r in reasons} == {"torch-compute-in-forward"}, reasons
    assert {source.splitlines()[r.line - 1].strip() for r in reasons} == {line}


def test_compute_directly_in_forward_is_rejected():
    source = candidate(HONEST_LAUNCHER, forward="return op(x, self.weight, self.eps) * 2")
    assert rules(source) == ["torch-compute-in-forward"]


def test_compute_in_a_helper_called_by_the_launcher_is_rejected():
    extra = "def _prepare(t):\n    return t.softmax(-1)\n\n"
    source = candidate("x = _prepare(x)\n" + HONEST_LAUNCHER, extra=extra)
    assert rules(source) == ["torch-compute-in-forward"]


def test_module_level_compute_is_import_time_code_not_the_forward_rule():
    source = candidate(HONEST_LAUNCHER, extra="_TABLE = torch.arange(16).float().exp()\n")
    assert rules(source) == ["import-time-code"]


def test_declared_extern_ops_are_allowed():
    launcher = "h = torch.matmul(x, weight.t())\ng = x @ weight\n" + HONEST_LAUNCHER
    assert rules(candidate(launcher)) == ["torch-compute-in-forward"] * 2
    assert rules(candidate(launcher), ProblemOptions(extern_ops=("matmul",))) == []


def test_any_declared_matmul_allows_the_whole_family():
    """The compute guard counts mm, matmul, addmm and linear alike: `torch.mm(x, w.t())` under
    a declared `matmul` is as allowed as `x @ w` (the count stays the reference's)."""
    launcher = "h = torch.mm(x, weight.t())\ng = x.mm(weight)\n" + HONEST_LAUNCHER
    assert rules(candidate(launcher), ProblemOptions(extern_ops=("matmul",))) == []
    assert rules(candidate(launcher), ProblemOptions(extern_ops=("linear",))) == []
    assert (
        rules(candidate(launcher), ProblemOptions(extern_ops=("conv2d",)))
        == ["torch-compute-in-forward"] * 2
    )


def test_arange_is_an_allocation_from_numbers_only():
    ok = "pos = torch.arange(x.shape[0], device=x.device)\n" + HONEST_LAUNCHER
    assert rules(candidate(ok)) == []
    copied = "pos = torch.arange(weight)\n" + HONEST_LAUNCHER
    assert rules(candidate(copied)) == ["torch-compute-in-forward"]


def test_device_of_may_be_entered():
    launcher = "with torch.cuda.device_of(x):\n" + textwrap.indent(HONEST_LAUNCHER, "    ")
    assert rules(candidate(launcher)) == []


@pytest.mark.parametrize(
    "line",
    [
        "scale = 0.5 if torch.cuda.device_count() > 1 else 1.0",
        "scale = float(torch.cuda.current_device() + 1)",
        "scale = 1.0 if 'H100' in torch.cuda.get_device_name() else 0.5",
        "scale = float(x.get_device() + 1)",
    ],
)
def test_which_devices_the_machine_has_is_not_read_in_forward(line):
    # red-team round thirteen's c07: the judge sees one GPU at index 0, a user's rank another
    reasons = check_source(candidate(line + "\n" + HONEST_LAUNCHER), ProblemOptions())
    assert [r.rule for r in reasons] == ["torch-compute-in-forward"], reasons
    assert "which devices this machine has" in reasons[0].message


def test_the_devices_own_properties_stay_queries():
    tuning = (
        "sms = torch.cuda.get_device_properties(x.device).multi_processor_count\n"
        "major, _ = torch.cuda.get_device_capability(x.device)\n"
    )
    assert rules(candidate(tuning + HONEST_LAUNCHER)) == []


def test_linear_submodule_needs_the_linear_extern():
    source = candidate(HONEST_LAUNCHER, forward="return op(self.proj(x), self.weight, self.eps)")
    source = source.replace(
        "        self.eps = eps\n",
        "        self.eps = eps\n        self.proj = nn.Linear(hidden, hidden)\n",
    )
    assert rules(source) == ["torch-compute-in-forward"]
    assert rules(source, ProblemOptions(extern_ops=("linear",))) == []


SUBMODULE = """
class TritonOp(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        return op(x, self.weight, self.eps)


"""


def test_an_nn_module_class_of_the_file_is_followed_as_a_submodule():
    source = candidate(HONEST_LAUNCHER, forward="return self.inner(x)", extra=SUBMODULE)
    source = source.replace(
        "        self.eps = eps\n\n",
        "        self.eps = eps\n        self.inner = TritonOp(hidden, eps)\n\n",
    )
    assert rules(source) == []
    computing = source.replace(
        "return op(x, self.weight, self.eps)", "return op(x, self.weight, self.eps) + x"
    )
    assert rules(computing) == ["torch-compute-in-forward"]
    no_launch = source.replace("return op(x, self.weight, self.eps)", "return x")
    assert rules(no_launch) == ["no-triton-kernel"]
    rebound = source.replace(
        "self.inner = TritonOp(hidden, eps)\n",
        "self.inner = TritonOp(hidden, eps)\n        self.inner = nn.SiLU()\n",
    )
    assert "torch-compute-in-forward" in rules(rebound)


def test_a_layer_cast_after_construction_is_still_that_layer():
    source = candidate(HONEST_LAUNCHER, forward="return op(self.proj(x), self.weight, self.eps)")
    source = source.replace(
        "        self.eps = eps\n",
        "        self.eps = eps\n        self.proj = nn.Linear(hidden, hidden).half().to('cpu')\n",
    )
    assert rules(source, ProblemOptions(extern_ops=("linear",))) == []


def test_a_local_bound_only_to_kernels_is_launched():
    launcher = HONEST_LAUNCHER.replace(
        "_op_kernel[grid]", "kernel = _op_kernel if N > 64 else _op_kernel\nkernel[grid]"
    )
    assert rules(candidate(launcher)) == []
    other = HONEST_LAUNCHER.replace(
        "_op_kernel[grid]", "kernel = _op_kernel if N > 64 else weight\nkernel[grid]"
    )
    assert "torch-compute-in-forward" in rules(candidate(other))


def test_missing_model_new_and_missing_launch():
    assert rules(HEADER) == ["model-new"]
    no_launch = candidate("return torch.empty_like(x)")
    assert rules(no_launch) == ["no-triton-kernel"]


@pytest.mark.parametrize(
    "snippet,rule",
    [
        ("import os\n", "io-access"),
        ("import subprocess\n", "threads"),
        ("from concurrent.futures import ThreadPoolExecutor\n", "threads"),
        ("import importlib\n", "dynamic-import"),
        ("import ctypes\n", "dynamic-import"),
        ("import gc\n", "introspection"),
        ("import numpy\n", "imports"),
        ("_F = getattr(torch, 'comp' + 'ile')\n", "dynamic-import"),
        ("_S = eval('1')\n", "dynamic-import"),
        ("_G = globals()\n", "introspection"),
        ("_B = torch.Tensor.__dict__\n", "introspection"),
        ("torch.backends.cuda.matmul.allow_tf32 = True\n", "module-patching"),
        ("setattr(torch, 'exp', None)\n", "module-patching"),
        ("torch.manual_seed(0)\n", "module-patching"),
        ("_L = torch.library.Library('aten', 'IMPL')\n", "module-patching"),
        ("_E = torch.cuda.Event(enable_timing=True)\n", "streams"),
        ("_G = torch.cuda.CUDAGraph()\n", "streams"),
        ("_C = torch._C\n", "private-api"),
        ("_J = torch.jit.script\n", "torch-compile"),
        ("_D = torch._dynamo\n", "torch-compile"),
        ("_P = open\n", "io-access"),
        ("_W = torch.load\n", "io-access"),
        ("_T = triton.testing.do_bench\n", "io-access"),
        ("async def _later():\n    pass\n", "threads"),
        ("class _Sneaky(torch.Tensor):\n    pass\n", "module-patching"),
    ],
)
def test_forbidden_pattern_is_named_by_its_rule(snippet, rule):
    source = candidate(HONEST_LAUNCHER, extra=snippet)
    assert rule in rules(source), check_source(source, ProblemOptions())


def test_try_except_anywhere_is_rejected():
    launcher = "try:\n    pass\nexcept RuntimeError:\n    pass\n" + HONEST_LAUNCHER
    assert rules(candidate(launcher)) == ["try-except-fallback"]


def test_precision_downgrade_only_for_fp32_problems():
    launcher = "dtype = torch.bfloat16\n" + HONEST_LAUNCHER
    assert rules(candidate(launcher), hint="float32") == ["precision-downgrade"]
    assert rules(candidate(launcher), hint=None) == []
    assert (
        rules(candidate(launcher), ProblemOptions(allow_low_precision=True), hint="float32") == []
    )
    tf32 = HEADER.replace(
        "tl.load(x_ptr + offs, mask=offs < n)", "tl.dot(a, b, input_precision='tf32')"
    )
    assert "precision-downgrade" in rules(
        candidate(HONEST_LAUNCHER).replace(HEADER, tf32), hint="float32"
    )
    # A bare tl.dot of fp32 operands is TF32 on a GPU; input_precision="ieee" is fp32.
    for dot, downgrade in (("tl.dot(a, b)", True), ("tl.dot(a, b, input_precision='ieee')", False)):
        source = candidate(HONEST_LAUNCHER).replace(
            HEADER, HEADER.replace("tl.load(x_ptr + offs, mask=offs < n)", dot)
        )
        assert ("precision-downgrade" in rules(source, hint="float32")) == downgrade, dot


def test_problem_dtype_hint():
    assert problem_dtype_hint("x = torch.randn(4)") == "float32"
    assert problem_dtype_hint("x = torch.randn(4, dtype=torch.bfloat16)") is None


def test_syntax_error_is_a_reason_not_an_exception():
    reasons = check_source("def broken(:\n", ProblemOptions())
    assert [r.rule for r in reasons] == ["syntax"] and reasons[0].line == 1


def test_every_rule_is_documented():
    from pathlib import Path

    doc = (Path(__file__).parents[2] / "docs" / "evaluator.md").read_text()
    for rule in RULES:
        assert f"`{rule}`" in doc, rule


def test_importing_the_evaluator_does_not_import_torch():
    import subprocess
    import sys

    code = "import sys, kbot.evaluate, kbot.evaluate.static; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    "extra,lines",
    [
        ("", "parts = [x, weight]\ny = parts[0] * 2"),
        ("", "parts = []\nparts.append(x)\ny = parts[0] * 2"),
        ("", "y = sum([x, weight])"),
        ("_STASH = {}\n", "_STASH[0] = x\ny = _STASH[0] * 2"),
        ("_PRE = torch.ones(4)\n", "y = _PRE * 2"),
        ("", "first, second = x, weight\ny = first + second"),
    ],
)
def test_tensors_hidden_in_containers_or_globals_are_still_tensors(extra, lines):
    source = candidate(lines + "\n" + HONEST_LAUNCHER, extra=extra)
    assert "torch-compute-in-forward" in rules(source), check_source(source, ProblemOptions())


def test_state_kept_on_self_across_calls_is_a_tensor():
    forward = "out = op(x, self.weight, self.eps)\n        self.previous = out\n        return self.previous * 1"
    assert rules(candidate(HONEST_LAUNCHER, forward=forward)) == ["torch-compute-in-forward"]


def test_number_tables_and_math_constants_stay_numbers():
    extra = "import math\n\n_BLOCKS = (128, 256)\n_WARPS = {128: 4, 256: 8}\n_LOG2E = math.log2(math.e)\nBLOCK_M: tl.constexpr = 64\n"
    launcher = (
        "scale = _LOG2E * 2\n"
        "for b in _BLOCKS:\n    bigger = b * 2\n"
        "warps = _WARPS[128] * 2\n"
        "tile = BLOCK_M * 2\n" + HONEST_LAUNCHER
    )
    assert rules(candidate(launcher, extra=extra)) == []


def test_a_torch_layers_settings_are_numbers_not_tensors():
    forward = (
        "out = torch.empty((x.shape[0], self.emb.embedding_dim), device=x.device, dtype=x.dtype)\n"
        "        return op(out, self.weight, self.emb.padding_idx or self.eps)"
    )
    source = candidate(HONEST_LAUNCHER, forward=forward).replace(
        "        self.eps = eps\n",
        "        self.eps = eps\n        self.emb = nn.Embedding(16, hidden)\n",
    )
    assert rules(source) == []
    # the layer's tensors stay tensors
    assert rules(source.replace("self.emb.embedding_dim", "self.emb.weight")) == [
        "torch-compute-in-forward"
    ]


_ALIAS_LAUNCHER = HONEST_LAUNCHER.replace("triton.next_power_of_2(N)", "next_power_of_2(N)")


def test_a_triton_helper_named_once_at_the_top_is_an_alias():
    # unsloth writes `next_power_of_2 = triton.next_power_of_2` at module level
    source = candidate(_ALIAS_LAUNCHER, extra="next_power_of_2 = triton.next_power_of_2\n")
    assert check_source(source, ProblemOptions()) == ()


@pytest.mark.parametrize(
    "extra,launcher",
    [
        # bound a second time: the flow-insensitive alias would be a lie
        (
            "next_power_of_2 = triton.next_power_of_2\n"
            "def _swap():\n    global next_power_of_2\n    next_power_of_2 = len\n",
            _ALIAS_LAUNCHER,
        ),
        ("next_power_of_2 = triton.next_power_of_2\n", "next_power_of_2 = abs\n" + _ALIAS_LAUNCHER),
        # a torch function, which computes
        ("_sigmoid = torch.sigmoid\n", HONEST_LAUNCHER),
        # not at the module's top
        ("def _helpers():\n    return triton.next_power_of_2\n", HONEST_LAUNCHER),
    ],
)
def test_other_functions_as_values_stay_refused(extra, launcher):
    assert "module-as-value" in rules(candidate(launcher, extra=extra))


@pytest.mark.parametrize(
    "allocation,refused",
    [
        ("scratch = torch.empty(M, device=x.device)", True),
        ("scratch = torch.zeros((M, N), device=x.device)", True),
        ("scratch = torch.full((M,), 0.0, device=x.device)", True),
        ("scratch = torch.empty(M, device=x.device, dtype=torch.float32)", False),
        ("scratch = torch.empty_like(x)", False),
        ("scratch = torch.zeros(M, **{'dtype': x.dtype, 'device': x.device})", False),
    ],
)
def test_forward_allocations_name_their_dtype(allocation, refused):
    launcher = HONEST_LAUNCHER.replace("M, N = x.shape\n", f"M, N = x.shape\n{allocation}\n")
    assert ("default-dtype" in rules(candidate(launcher))) is refused
