"""An op that is not compiled itself but runs compiled code, or that compiled code calls,
keeps torch.compile as the path a kernel must beat (kbot.scan.compiled_context). Seen on the
H200: nano-vllm's `RMSNorm.forward` (dispatching to `@torch.compile` methods) and
`apply_rotary_emb` (called by a compiled `forward`) were judged against eager PyTorch, and
their drafts served sizes where the kernel was 2-5% slower than the compiled code."""

from __future__ import annotations

from kbot.scan import ScanOptions, scan
from kbot.search.by_size import original_path_of

LAYERS = """import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))

    @torch.compile
    def rms_forward(self, x):
        var = x.float().pow(2).mean(dim=-1, keepdim=True)
        return (x.float() * torch.rsqrt(var + self.eps)).to(x.dtype) * self.weight

    def forward(self, x):
        return self.rms_forward(x)


def apply_rotary_emb(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1)


class RotaryEmbedding(nn.Module):
    @torch.compile
    def forward(self, q, cos, sin):
        return apply_rotary_emb(q, cos, sin)


class LayerNorm(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward(self, x):
        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.weight)


class GemmaRMSNorm(RMSNorm):
    def forward(self, x):
        return self.rms_forward(x) * 2.0  # work of its own besides the compiled method
"""

# Another module's compiled function that calls the helper through an import.
ATTENTION = """import torch

from fastlm.layers import rotate_half


@torch.compile
def rope_q(q):
    return rotate_half(q)
"""

HELPERS = """import torch


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)
"""


def test_ops_that_run_or_are_run_by_compiled_code_keep_torch_compile_as_their_path(tmp_path):
    root = tmp_path / "repo"
    (root / "fastlm").mkdir(parents=True)
    (root / "fastlm" / "__init__.py").write_text("")
    (root / "fastlm" / "norms.py").write_text(LAYERS)
    (root / "fastlm" / "layers.py").write_text(HELPERS)
    (root / "fastlm" / "attention.py").write_text(ATTENTION)
    findings = {f.callable_qualname: f for f in scan(root, ScanOptions()).findings}

    norm = findings["RMSNorm"]  # its forward calls the compiled rms_forward
    assert (
        norm.compiled_by
        == "fastlm/norms.py:16 (RMSNorm.forward calls the compiled RMSNorm.rms_forward)"
    )
    rope = findings["apply_rotary_emb"]  # the compiled RotaryEmbedding.forward calls it
    assert rope.compiled_by == "fastlm/norms.py:27 (the compiled RotaryEmbedding.forward calls it)"
    half = findings["rotate_half"]  # called through an import by a compiled function
    assert half.compiled_by == "fastlm/attention.py:7 (the compiled rope_q calls it)"
    assert findings["LayerNorm"].compiled_by == ""  # nothing compiled around it
    assert findings["RMSNorm.rms_forward"].compiled_by == ""  # compiled itself: its own kind
    for finding in (norm, rope, half, findings["RMSNorm.rms_forward"]):
        target = {"kind": finding.kind.value, "compiled_by": finding.compiled_by,
                  "also_found_as": [k.value for k in finding.also_found_as]}  # fmt: skip
        assert original_path_of(target) == "torch.compile", finding.callable_qualname
    assert original_path_of({"kind": "named_op", "compiled_by": ""}) == "eager"


def test_a_forward_whose_every_path_is_a_target_is_skipped_with_its_paths(tmp_path):
    # kbot.scan.dispatchers: nano-vllm's RMSNorm.forward, returning its compiled methods' calls,
    # got a third, overlapping PR on the H200
    from kbot.config import load_config
    from kbot.scan.findings import Status

    root = tmp_path / "repo"
    (root / "fastlm").mkdir(parents=True)
    (root / "fastlm" / "norms.py").write_text(LAYERS)
    found = {f.callable_qualname: f for f in scan(root, ScanOptions()).findings}
    dispatcher = found["RMSNorm"]
    assert dispatcher.status == Status.SKIPPED
    assert dispatcher.skip_reason == (
        "dispatches to targets of their own (RMSNorm.rms_forward): each gets its own problem and PR"
    )
    assert found["RMSNorm.rms_forward"].status == Status.TARGET
    assert found["GemmaRMSNorm"].status == Status.TARGET  # computes besides the call
    # named in .kbot.yml, the forward is the user's target
    (root / ".kbot.yml").write_text(
        "version: 1\ntargets:\n  - target: fastlm/norms.py::RMSNorm\n"
        "    inputs: {x: {shape: [T, 64]}}\n"
    )
    options = ScanOptions(targets=load_config(root).targets)
    found = {f.callable_qualname: f for f in scan(root, options).findings}
    assert found["RMSNorm"].status == Status.TARGET
