"""Ops found by name (Kind.NAMED_OP): repositories such as gpt-fast, litgpt and torchtitan mark
nothing and compile whole models, so `kbot scan` found no target in them. A module or an
undecorated module-level function named as a common op (RMSNorm, apply_rotary_emb, SiluAndMul)
whose own body is the math is a target; layers that call submodules, Triton launchers, tests,
kernel libraries, registration plumbing, builders that take only numbers, abstract bases
(a method that raises NotImplementedError) and wrappers that reach a kernel of their own (a
custom op, a registered op, a launcher in the same file) are not."""

from __future__ import annotations

from kbot.scan import ScanOptions, scan
from kbot.scan.extract import EmitStatus, emit_problems
from kbot.scan.findings import Kind
from kbot.scan.model_config import load_model_config

MODEL = '''import torch
from torch import nn
import torch.nn.functional as F


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def _norm(self, x):
        return x * torch.rsqrt(torch.mean(x * x, dim=-1, keepdim=True) + self.eps)

    def forward(self, x):
        return self._norm(x.float()).type_as(x) * self.weight


class SwiGLU(nn.Module):
    """A layer: it calls its projections."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden)
        self.w3 = nn.Linear(dim, hidden)

    def forward(self, x):
        return F.silu(self.w1(x)) * self.w3(x)


class FusedRMSNorm(nn.Module):
    """A dispatcher: the math lives in its backend."""

    def __init__(self, impl):
        super().__init__()
        self.impl = impl

    def forward(self, x):
        return self.impl.forward(x)


class BaseRoPE(nn.Module):
    """An abstract base: forward reads a cache its subclasses build."""

    def __init__(self, dim: int):
        super().__init__()
        self.register_buffer("cache", self._build_cache(dim), persistent=False)

    def _build_cache(self, dim):
        raise NotImplementedError

    def forward(self, x):
        return x * self.cache


class TableRoPE(BaseRoPE):
    """Concrete: it builds the cache; forward is its base's."""

    def _build_cache(self, dim):
        return torch.ones(dim)


def apply_rotary_emb(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


def apply_rope_scaling(freqs, factor):
    return freqs / factor


def _vision_layer_norm(dim: int, eps: "float | None" = None) -> nn.LayerNorm:
    """A builder named like an op: it takes sizes, not tensors."""
    return nn.LayerNorm(dim, eps=eps or 1e-6)


@torch.library.custom_op("demo::silu_and_mul", mutates_args=())
def silu_and_mul_op(x: torch.Tensor) -> torch.Tensor:
    d = x.shape[-1] // 2
    return F.silu(x[..., :d]) * x[..., d:]


def rms_norm_launch(x, weight):
    out = torch.empty_like(x)
    _rms_kernel[(x.shape[0],)](x, weight, out)
    return out


def fused_silu_and_mul(x):
    """A wrapper around the custom op above (through a lambda): its fast path already."""
    call = lambda t: silu_and_mul_op(t)  # noqa: E731
    return call(x)


def gelu_and_mul(x):
    """A registered op of another library: its fast path already."""
    return torch.ops.vendor.gelu_and_mul(x)


class TritonRMSNorm(nn.Module):
    """Its forward calls the launcher above: a kernel already."""

    def __init__(self, dim: int):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return rms_norm_launch(x, self.weight)


def test_rms_norm():
    x = torch.randn(4, 8)
    assert RMSNorm(8)(x).shape == x.shape
'''


def _tree(tmp_path):
    root = tmp_path / "fastlm"
    (root / "kernels").mkdir(parents=True)
    (root / "model.py").write_text(MODEL)
    (root / "kernels" / "norms.py").write_text(
        "import torch\n\n\ndef rms_norm(x, w, eps: float = 1e-6):\n"
        "    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w\n"
    )
    return root


def test_ops_named_as_common_ops_are_targets_and_plumbing_is_not(tmp_path):
    result = scan(_tree(tmp_path), ScanOptions())
    named = {f.qualname for f in result.findings if f.kind == Kind.NAMED_OP}
    assert named == {"RMSNorm", "TableRoPE", "apply_rotary_emb"}
    rms = next(f for f in result.findings if f.qualname == "RMSNorm")
    assert rms.entry == "forward" and [p.name for p in rms.init_params] == ["dim", "eps"]


def test_a_named_op_gets_cases_from_a_model_config(tmp_path):
    options = ScanOptions(cases=({"T": 1}, {"T": 5}), model_config=load_model_config("llama-3-8b"))
    result = scan(_tree(tmp_path), options)
    emitted = {e.name: e for e in emit_problems(result, tmp_path / "problems", options)}
    norm = next(e for e in emitted.values() if e.target.endswith("::RMSNorm"))
    assert norm.status == EmitStatus.EMITTED, norm.message
    assert "dim=4096 (hidden_size for `dim`)" in norm.inputs_from
    # apply_rotary_emb(x, cos, sin): x is per-head and cos/sin are tables; the layout the
    # reference accepts is found by running its first case.
    rope = next(e for e in emitted.values() if e.target.endswith("::apply_rotary_emb"))
    assert rope.status == EmitStatus.EMITTED, rope.message
    assert "x [T, 32, 128] bfloat16" in rope.inputs_from
    assert "cos [T, 1, 64] float32" in rope.inputs_from


def test_a_repository_that_compiles_its_model_whole_runs_named_ops_compiled(tmp_path):
    # gpt-fast compiles decode_one_token in generate.py: its RMSNorm runs under torch.compile,
    # so a kernel for it must beat torch.compile (kbot.search.by_size.original_path_of).
    from kbot.search.by_size import original_path_of

    root = _tree(tmp_path)
    plain = scan(root, ScanOptions())
    assert all(f.compiled_by == "" for f in plain.findings)
    (root / "tests").mkdir()
    (root / "tests" / "test_speed.py").write_text("import torch\nstep = torch.compile(step)\n")
    assert all(f.compiled_by == "" for f in scan(root, ScanOptions()).findings)  # a test's
    (root / "generate.py").write_text(
        "import torch\n\n\n@torch.compile(dynamic=True)\ndef sample(x):\n    return x\n\n\n"
        "def main(step):\n    step = torch.compile(step, mode='reduce-overhead')\n"
    )
    result = scan(root, ScanOptions())
    named = [f for f in result.findings if f.kind == Kind.NAMED_OP]
    assert named and all(f.compiled_by == "generate.py:10" for f in named)
    others = [f for f in result.findings if Kind.NAMED_OP not in (f.kind, *f.also_found_as)]
    assert all(f.compiled_by == "" for f in others)
    assert original_path_of({"kind": "named_op", "compiled_by": "generate.py:10"}) == (
        "torch.compile"
    )
    assert original_path_of({"kind": "named_op", "compiled_by": ""}) == "eager"


LIBRARY_OPS = '''import torch
from torch import nn
from einops import rearrange
import sgl_kernel
from vllm import _custom_ops as ops
from .kernels.rope import rope_forward


def silu_and_mul(x, out=None):
    from flashinfer import silu_and_mul

    return silu_and_mul(x, out=out)


def gemma_rms_norm(x, weight, eps: float = 1e-6):
    return sgl_kernel.gemma_rmsnorm(x, weight, eps)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        out = torch.empty_like(x)
        ops.rms_norm(out, x, self.weight, self.eps)
        return out


def apply_rotary_emb(x, cos, sin):
    return _rope(x, cos, sin)


def _rope(x, cos, sin):
    return rope_forward(x, cos, sin)


def apply_rope(x, cos, sin):
    """Pure torch, through a helper library that is not a kernel library."""
    x1, x2 = rearrange(x, "... (two d) -> two ... d", two=2)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)
'''


def test_an_op_that_calls_a_kernel_library_is_skipped_for_its_fast_path(tmp_path):
    # mini-sglang's `silu_and_mul` is `from flashinfer import silu_and_mul` inside the function:
    # nothing in PyTorch to replace. Module-level, function-level and relative imports of kernel
    # libraries (flashinfer, sgl_kernel, vllm._custom_ops, a package's own kernels/) count;
    # einops does not.
    from kbot.scan.findings import Status

    root = tmp_path / "engine"
    root.mkdir()
    (root / "layers.py").write_text(LIBRARY_OPS)
    found = {f.qualname: f for f in scan(root, ScanOptions()).findings}
    assert set(found) == {"silu_and_mul", "gemma_rms_norm", "RMSNorm", "apply_rotary_emb",
                          "apply_rope"}  # fmt: skip
    expected = {
        "silu_and_mul": "calls flashinfer.silu_and_mul at line 12",
        "gemma_rms_norm": "calls sgl_kernel.gemma_rmsnorm at line 16",
        "RMSNorm": "calls vllm._custom_ops.rms_norm at line 27",
        "apply_rotary_emb": "calls kernels.rope.rope_forward at line 36",
    }
    for name, call in expected.items():
        assert found[name].has_fast_path and found[name].fast_path == call, name
        assert found[name].status == Status.SKIPPED and call in found[name].skip_reason
    assert found["apply_rope"].status == Status.TARGET and not found["apply_rope"].has_fast_path
    included = {f.qualname: f for f in scan(root, ScanOptions(include_existing=True)).findings}
    assert included["silu_and_mul"].status == Status.TARGET


AUTOGRAD_OPS = """import torch


class RMSNormFn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, eps):
        out = torch.empty_like(x)
        _rms_norm_kernel[(x.shape[0],)](x, weight, out, eps)
        return out


def rms_norm_fn(x, weight, eps: float = 1e-6):
    return RMSNormFn.apply(x, weight, eps)


def rms_norm_ref(x, weight, eps: float = 1e-6):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * weight


def gelu_and_mul(x):
    d = x.shape[-1] // 2
    return torch.nn.functional.gelu(x[..., :d]) * x[..., d:]
"""


def test_kernel_wrappers_and_their_oracles_are_not_targets(tmp_path):
    # mamba_ssm keeps Triton kernels in ops/triton/ beside their torch oracles (`rms_norm_ref`),
    # and wraps them as `LayerNormFn.apply(...)`, an autograd Function whose forward launches
    # the kernel: none of those is an op left to write.
    root = tmp_path / "ssm"
    (root / "ops" / "triton").mkdir(parents=True)
    (root / "ops" / "triton" / "layer_norm.py").write_text(AUTOGRAD_OPS)
    (root / "layers.py").write_text(AUTOGRAD_OPS)
    found = {(f.file, f.qualname) for f in scan(root, ScanOptions()).findings}
    assert found == {("layers.py", "gelu_and_mul")}


WRAPPERS = """import torch
from mamba_ssm.ops.triton.ssd_combined import _chunk_scan_fwd


@torch.compile(fullgraph=True)
def compiled_chunk_scan_fwd(x, dt, A):
    return _chunk_scan_fwd(x, dt, A)


@torch.compile
def compiled_softcap(x, cap: float):
    return cap * torch.tanh(x / cap)


def create_softcapped_score_mod(softcap, causal_mask):
    def score_mod(score, b, h, q_idx, kv_idx):
        return softcap * torch.tanh(score / softcap)

    return score_mod


def softcap(x, cap: float):
    return cap * torch.tanh(x / cap)
"""


def test_compiled_wrappers_of_kernel_libraries_and_closure_factories_are_not_targets(tmp_path):
    # lingua compiles wrappers of mamba_ssm's Triton scans (the kernel is the library's);
    # nanotron's `create_softcapped_causal_score_mod` returns flex attention's score_mod, a
    # function, not a tensor.
    from kbot.scan.findings import Status

    root = tmp_path / "engine"
    root.mkdir()
    (root / "ops.py").write_text(WRAPPERS)
    found = {f.qualname: f for f in scan(root, ScanOptions()).findings}
    assert set(found) == {"compiled_chunk_scan_fwd", "compiled_softcap", "softcap"}
    wrapper = found["compiled_chunk_scan_fwd"]
    assert wrapper.status == Status.SKIPPED
    assert (
        "calls mamba_ssm.ops.triton.ssd_combined._chunk_scan_fwd at line 7" in wrapper.skip_reason
    )
    assert found["compiled_softcap"].status == Status.TARGET
    assert found["softcap"].status == Status.TARGET
