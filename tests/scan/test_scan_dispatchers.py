"""A forward that only dispatches to methods that are targets of their own is skipped, its
paths named (kbot.scan.dispatchers): nano-vllm's RMSNorm got three overlapping PRs on the H200."""

from __future__ import annotations

from kbot.scan import ScanOptions, scan
from kbot.scan.findings import Status

NORMS = """import torch
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

    @torch.compile
    def add_rms_forward(self, x, residual):
        x = x + residual
        return self.rms_forward(x), x

    def forward(self, x, residual=None):
        if residual is None:
            return self.rms_forward(x)
        return self.add_rms_forward(x, residual)


class GemmaRMSNorm(nn.Module):
    def __init__(self, hidden_size, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(hidden_size))

    @torch.compile
    def rms_forward(self, x):
        var = x.float().pow(2).mean(dim=-1, keepdim=True)
        return x.float() * torch.rsqrt(var + self.eps)

    def forward(self, x):
        # work of its own besides the compiled method: a target
        return self.rms_forward(x) * (1.0 + self.weight.float())
"""


def test_a_forward_whose_every_path_is_a_target_is_skipped_with_its_paths(tmp_path):
    root = tmp_path / "engine"
    root.mkdir()
    (root / "norms.py").write_text(NORMS)
    found = {f.callable_qualname: f for f in scan(root, ScanOptions()).findings}
    dispatcher = found["RMSNorm"]
    assert dispatcher.status == Status.SKIPPED
    assert dispatcher.skip_reason == (
        "dispatches to targets of their own (RMSNorm.rms_forward, RMSNorm.add_rms_forward): "
        "each gets its own problem and PR"
    )
    assert found["RMSNorm.rms_forward"].status == Status.TARGET
    assert found["RMSNorm.add_rms_forward"].status == Status.TARGET
    assert found["GemmaRMSNorm"].status == Status.TARGET  # computes besides the call

    # named in .kbot.yml, the forward is the user's target
    (root / ".kbot.yml").write_text(
        "version: 1\ntargets:\n  - target: norms.py::RMSNorm\n    inputs: {x: {shape: [T, 64]}}\n"
    )
    from kbot.config import load_config

    options = ScanOptions(targets=load_config(root).targets)
    found = {f.callable_qualname: f for f in scan(root, options).findings}
    assert found["RMSNorm"].status == Status.TARGET
