"""Drawing the next token from the logits: stochastic, so no kernel can match it bit for bit."""

from __future__ import annotations

import torch
from torch import nn


class Sampler(nn.Module):  # kbot: optimize
    """Samples one token id per row from `softmax(logits / temperature)`.

    Uses the exponential race: `argmax(p / q)` with `q ~ Exp(1)` draws index `i` with
    probability `p_i`, without the CPU-GPU synchronization that `torch.multinomial` costs.
    A temperature of 0 means greedy decoding for that row.
    """

    def forward(self, logits: torch.Tensor, temperatures: torch.Tensor) -> torch.Tensor:
        """`logits` `[T, vocab]`, `temperatures` `[T]` -> token ids `[T]` (int64)."""
        greedy = temperatures <= 0
        safe_temperatures = torch.where(greedy, torch.ones_like(temperatures), temperatures)
        probs = torch.softmax(logits.float() / safe_temperatures.unsqueeze(-1).float(), dim=-1)
        race = torch.empty_like(probs).exponential_()
        sampled = (probs / race).argmax(dim=-1)
        return torch.where(greedy, logits.argmax(dim=-1), sampled)
