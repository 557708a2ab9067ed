"""Gated activations of the MLP block: `act(x[..., :d]) * x[..., d:]`."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from tinyserve.layers.custom_op import CustomOp


class SiluAndMul(CustomOp):
    """SwiGLU's gate: `silu(gate) * up` for `x = cat([gate, up], dim=-1)`."""

    def forward_native(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        return F.silu(x[..., :d]) * x[..., d:]

    def forward_cuda(self, x: torch.Tensor) -> torch.Tensor:
        # Imported here so that CPU-only users of this layer never need Triton.
        from tinyserve.layers.triton_kernels import silu_and_mul

        return silu_and_mul(x)


class GeluAndMul(CustomOp):
    """GeGLU's gate: `gelu(gate) * up`, with the tanh approximation by default."""

    def __init__(self, approximate: str = "tanh") -> None:
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ValueError(f"approximate must be 'none' or 'tanh', not {approximate!r}")
        self.approximate = approximate

    def forward_native(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1] // 2
        return F.gelu(x[..., :d], approximate=self.approximate) * x[..., d:]

    def extra_repr(self) -> str:
        return f"approximate={self.approximate!r}"


@torch.compile(dynamic=True)
def quick_gelu(x: torch.Tensor) -> torch.Tensor:
    """CLIP's sigmoid approximation of GELU, as vision towers of multimodal models use it."""
    return x * torch.sigmoid(1.702 * x)
