"""Post-processing of the LM head's output before sampling."""

from __future__ import annotations

import torch


# kbot: optimize
@torch.compile(dynamic=True)
def logit_softcap(logits: torch.Tensor, cap: float = 30.0) -> torch.Tensor:
    """Squashes logits smoothly into `(-cap, cap)`, as Gemma 2 does for its final logits."""
    return torch.tanh(logits.float() / cap).mul(cap).to(logits.dtype)


@torch.compile(dynamic=True)
def fused_add_scale(x: torch.Tensor, bias: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
    """`(x + bias) * scale` in one pass, e.g. a bias add before a softmax temperature."""
    return (x + bias) * scale
