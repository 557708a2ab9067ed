"""Root-mean-square normalization, with the residual add that precedes it fused in."""

from __future__ import annotations

import torch
from torch import nn

from tinyserve.layers.custom_op import CustomOp


# kbot: optimize
class RMSNorm(CustomOp):
    """`y = x / sqrt(mean(x^2) + eps) * weight`, optionally after `x = x + residual`.

    With a residual, returns `(y, x + residual)`: the sum is the next layer's residual, so
    serving engines compute both in one pass instead of re-reading `x` from memory.
    """

    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.hidden_size = hidden_size
        self.variance_epsilon = eps
        self.weight = nn.Parameter(torch.ones(hidden_size))

    def forward_native(
        self, x: torch.Tensor, residual: torch.Tensor | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        orig_dtype = x.dtype
        # bf16 has 8 bits of mantissa: squaring and averaging 4096 values in it loses the norm.
        hidden = x.float()
        if residual is not None:
            hidden = hidden + residual.float()
            residual = hidden.to(orig_dtype)
        variance = hidden.pow(2).mean(dim=-1, keepdim=True)
        hidden = hidden * torch.rsqrt(variance + self.variance_epsilon)
        out = (hidden * self.weight.float()).to(orig_dtype)
        if residual is None:
            return out
        return out, residual

    def forward_cuda(
        self, x: torch.Tensor, residual: torch.Tensor | None = None
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        return self.forward_native(x, residual)

    def extra_repr(self) -> str:
        return f"hidden_size={self.hidden_size}, eps={self.variance_epsilon}"
