"""Model's values as the judge sends them to ModelNew (kbot.evaluate.jobs): each parameter that
a fresh Model holds at one constant value is redrawn first.

A checkpoint loads trained values into every parameter, and a fresh Model often holds
constants there (LayerNorm's and LLaMA's RMSNorm weight of ones, a zero bias, Gemma's zero
offset). A kernel that never reads such a parameter is right at its initial value only: judged
with the constant, it passed every trial (red-team round twelve, `judge_constant_weight`).
"""

from __future__ import annotations

import torch

# a nonzero constant v becomes v * (1 + u), u uniform in [-SPREAD, SPREAD] (its sign kept:
# an epsilon stays positive); a zero becomes uniform in (0, SPREAD]
SPREAD = 0.1


def vary_constant_parameters(model: torch.nn.Module, seed: int) -> list[str]:
    """Redraws, in place, each floating-point parameter of `model` whose elements all hold one
    value, around that value; returns their names. Both sides of the comparison then use the
    redrawn values: the reference is `model`, and ModelNew loads them from its state."""
    generator = torch.Generator().manual_seed(seed)
    changed = []
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if not parameter.is_floating_point() or parameter.numel() == 0:
                continue
            flat = parameter.reshape(-1)
            value = float(flat[0])
            if not bool((flat == flat[0]).all()):
                continue
            draw = torch.rand(parameter.shape, generator=generator)
            if value == 0.0:
                varied = draw.mul_(SPREAD).add_(SPREAD * 2.0**-10)  # (0, SPREAD]
            else:
                varied = draw.mul_(2 * SPREAD).sub_(SPREAD).add_(1.0).mul_(value)
            parameter.copy_(varied.to(device=parameter.device, dtype=parameter.dtype))
            changed.append(name)
    return changed
