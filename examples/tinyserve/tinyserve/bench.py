"""A small workload over every layer, in the order a decoder step calls them.

This is what a profiler should watch to learn which ops matter and at which sizes, e.g.
`kbot scan . --profile-module tinyserve.bench:run`. It has no weights to load and no matmuls:
only the layers this package defines, at decode (T=1, T=16) and short prefill (T=128) sizes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tinyserve.layers.activation import GeluAndMul, SiluAndMul, quick_gelu
from tinyserve.layers.logits import fused_add_scale, logit_softcap
from tinyserve.layers.norm import RMSNorm
from tinyserve.layers.rotary import RotaryEmbedding
from tinyserve.layers.sampler import Sampler


@dataclass(frozen=True)
class ModelShape:
    hidden_size: int = 1024
    num_heads: int = 8
    num_kv_heads: int = 2
    head_size: int = 128
    intermediate_size: int = 2816
    vocab_size: int = 8192
    max_position: int = 4096


def run(
    token_counts: tuple[int, ...] = (1, 16, 128),
    steps: int = 2,
    shape: ModelShape = ModelShape(),
    device: str | None = None,
) -> dict[int, torch.Tensor]:
    """Runs `steps` decoder steps per batch size; returns the last step's tokens per size."""
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    generator = torch.Generator(device=device).manual_seed(0)
    layers = _Layers(shape, device)
    tokens: dict[int, torch.Tensor] = {}
    for num_tokens in token_counts:
        for _ in range(steps):
            tokens[num_tokens] = layers.step(num_tokens, generator)
    return tokens


class _Layers:
    def __init__(self, shape: ModelShape, device: str) -> None:
        self.shape = shape
        self.device = device
        self.dtype = torch.bfloat16
        self.input_norm = RMSNorm(shape.hidden_size).to(device)
        self.post_attention_norm = RMSNorm(shape.hidden_size).to(device)
        self.rotary = RotaryEmbedding(shape.head_size, shape.head_size, shape.max_position).to(
            device
        )
        self.silu_and_mul = SiluAndMul()
        self.gelu_and_mul = GeluAndMul(approximate="tanh")
        self.sampler = Sampler()
        self.logit_bias = torch.zeros(shape.vocab_size, device=device, dtype=self.dtype)

    def _randn(self, *size: int, generator: torch.Generator) -> torch.Tensor:
        return torch.randn(*size, generator=generator, device=self.device).to(self.dtype)

    def step(self, num_tokens: int, generator: torch.Generator) -> torch.Tensor:
        s = self.shape
        hidden = self._randn(num_tokens, s.hidden_size, generator=generator)
        residual = self._randn(num_tokens, s.hidden_size, generator=generator)
        hidden, residual = self.input_norm(hidden, residual)
        positions = torch.randint(
            0, s.max_position, (num_tokens,), generator=generator, device=self.device
        )
        query = self._randn(num_tokens, s.num_heads * s.head_size, generator=generator)
        key = self._randn(num_tokens, s.num_kv_heads * s.head_size, generator=generator)
        query, key = self.rotary(positions, query, key)
        hidden, residual = self.post_attention_norm(hidden, residual)
        gate_up = self._randn(num_tokens, 2 * s.intermediate_size, generator=generator)
        self.silu_and_mul(gate_up)
        quick_gelu(self.gelu_and_mul(gate_up))
        logits = self._randn(num_tokens, s.vocab_size, generator=generator)
        logits = logit_softcap(fused_add_scale(logits, self.logit_bias, 1.0))
        temperatures = torch.full((num_tokens,), 0.8, device=self.device)
        return self.sampler(logits, temperatures)
