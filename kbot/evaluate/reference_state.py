"""Model's values as the judge sends them to ModelNew (kbot.evaluate.jobs): each parameter that
a fresh Model holds at one constant value is redrawn first.

A checkpoint loads trained values into every parameter, and a fresh Model often holds
constants there (LayerNorm's and LLaMA's RMSNorm weight of ones, a zero bias, Gemma's zero
offset). A kernel that never reads such a parameter is right at its initial value only: judged
with the constant, it passed every trial (red-team round twelve, `judge_constant_weight`).
Trained norm weights also hold some values of the other sign, so a parameter of several
elements gets some of its values' signs flipped where the reference stays finite with them: a
kernel squaring the weight inside a root (`sqrt(w * w / ms)`) was right for positive weights
only (round fourteen's c10). A one-element parameter (a learned epsilon or temperature) keeps
its sign.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from kbot.evaluate.compare import as_outputs

# a nonzero constant v becomes v * (1 + u), u uniform in [-SPREAD, SPREAD] (its sign kept:
# an epsilon stays positive); a zero becomes uniform in (0, SPREAD]
SPREAD = 0.1
# the share of a signed draw's elements whose sign is flipped (at least one)
FLIPPED = 0.125


def vary_constant_parameters(model: torch.nn.Module, seed: int, signed: bool = False) -> list[str]:
    """Redraws, in place, each floating-point parameter of `model` whose elements all hold one
    value, around that value, and with `signed` flips the sign of some elements of each such
    parameter of several elements; returns their names. Both sides of the comparison then use
    the redrawn values: the reference is `model`, and ModelNew loads them from its state."""
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
            if signed and parameter.numel() > 1:
                flips = torch.rand(parameter.shape, generator=generator) < FLIPPED
                first = torch.randint(parameter.numel(), (1,), generator=generator)
                flips.view(-1)[first] = True
                varied = torch.where(flips, -varied, varied)
            parameter.copy_(varied.to(device=parameter.device, dtype=parameter.dtype))
            changed.append(name)
    return changed


def signs_keep_finite(
    build: Callable[[], torch.nn.Module], seed: int, make_inputs: Callable[[], list]
) -> bool:
    """Whether the reference (`build()`, a fresh Model) stays finite on `make_inputs()`
    wherever it is with its constant parameters redrawn unsigned, when they are redrawn signed:
    a weight whose root or logarithm the op takes must keep its sign. True without constant
    parameters (nothing is run); False where a call fails."""
    try:
        plain = build()
        if not vary_constant_parameters(plain, seed):
            return True
        signed = build()
        vary_constant_parameters(signed, seed, signed=True)
        inputs = make_inputs()
        with torch.no_grad():
            finite = _non_finite(plain(*_copies(inputs)))
            del plain
            flipped = _non_finite(signed(*_copies(inputs)))
    except Exception:  # the problem's own code; its failure is reported where it runs for real
        return False
    return len(finite) == len(flipped) and all(
        not bool((f & ~p).any()) for p, f in zip(finite, flipped)
    )


def _copies(inputs: list) -> list:
    return [x.clone() if isinstance(x, torch.Tensor) else x for x in inputs]


def _non_finite(value: object) -> list[torch.Tensor]:
    return [
        ~torch.isfinite(v)
        for v in as_outputs(value)
        if isinstance(v, torch.Tensor) and v.is_floating_point()
    ]
