"""Rotary position embedding (RoPE), GPT-NeoX style: rotate pairs `(i, i + rotary_dim / 2)`."""

from __future__ import annotations

import torch
from torch import nn


class RotaryEmbedding(nn.Module):  # kbot: optimize
    """Rotates the first `rotary_dim` features of every query and key head by `position * freq`.

    cos and sin of every (position, frequency) pair are computed once into `cos_sin_cache`
    (`[max_position, rotary_dim]`, cos then sin); `forward` only gathers the rows for the
    batch's positions, which is what a decode step of a serving engine does.
    """

    def __init__(
        self,
        head_size: int,
        rotary_dim: int,
        max_position: int = 4096,
        base: float = 10000.0,
    ) -> None:
        super().__init__()
        if rotary_dim > head_size or rotary_dim % 2:
            raise ValueError(f"rotary_dim must be even and <= head_size, got {rotary_dim}")
        self.head_size = head_size
        self.rotary_dim = rotary_dim
        self.max_position = max_position
        self.base = base
        self.register_buffer("cos_sin_cache", self._compute_cos_sin_cache(), persistent=False)

    def _compute_cos_sin_cache(self) -> torch.Tensor:
        # float64 angles: in float32, `position * freq` at position 4000 is off by ~2e-4 rad.
        exponents = torch.arange(0, self.rotary_dim, 2, dtype=torch.float64) / self.rotary_dim
        inv_freq = 1.0 / (self.base**exponents)
        positions = torch.arange(self.max_position, dtype=torch.float64)
        freqs = torch.outer(positions, inv_freq)
        return torch.cat((freqs.cos(), freqs.sin()), dim=-1).float()

    def forward(
        self, positions: torch.Tensor, query: torch.Tensor, key: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`positions` `[T]`; `query` `[T, heads * head_size]`; `key` `[T, kv_heads * head_size]`."""
        cos, sin = self.cos_sin_cache.index_select(0, positions).chunk(2, dim=-1)
        return self._rotate(query, cos, sin), self._rotate(key, cos, sin)

    def _rotate(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        num_tokens = x.shape[0]
        heads = x.view(num_tokens, -1, self.head_size)
        rot, passthrough = heads[..., : self.rotary_dim], heads[..., self.rotary_dim :]
        compute_dtype = torch.promote_types(x.dtype, torch.float32)
        x1, x2 = rot.to(compute_dtype).chunk(2, dim=-1)
        cos, sin = cos.unsqueeze(1).to(compute_dtype), sin.unsqueeze(1).to(compute_dtype)
        rotated = torch.cat((x1 * cos - x2 * sin, x2 * cos + x1 * sin), dim=-1).to(x.dtype)
        return torch.cat((rotated, passthrough), dim=-1).reshape(num_tokens, -1)

    def extra_repr(self) -> str:
        return (
            f"head_size={self.head_size}, rotary_dim={self.rotary_dim}, "
            f"max_position={self.max_position}, base={self.base}"
        )
