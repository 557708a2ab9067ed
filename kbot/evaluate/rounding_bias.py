"""A 16-bit output whose differences from the reference lie nearly all on one side: a kernel
that rounds one way. kbot.evaluate.compare asks it once an output is within tolerance."""

from __future__ import annotations

import torch

HALF_WIDTH = (torch.bfloat16, torch.float16)  # the outputs judged for a bias
# A 16-bit output differs from the reference's rounding in many elements, nearly all on one side:
# the kernel rounds one way (truncates), which the per-element tolerance (a bf16 ulp is 0.4%
# to 0.8%) lets through while every result is biased (red-team round thirteen's c13 cast fp32
# to bf16 by dropping bits, 49% of elements one ulp toward zero). A correct kernel's 1-ulp
# differences from a reference rounded otherwise fall on both sides; one with a biased fp32
# approximation flips a few elements per 2^16 (BIAS_MIN_SHARE keeps those out).
BIAS_MIN_DIFFER = 64  # elements that differ from the reference, at least
BIAS_MIN_SHARE = 0.01  # of the elements compared, at least
BIAS_ONE_SIDED = 0.9  # the share of them on one side that is a bias


def rounding_bias(differ: int, count: int, sides: dict[str, int]) -> str | None:
    """What is biased, when `differ` of `count` elements differ from the reference and
    `sides` counts them by side (up, down, toward zero, away from zero); else None."""
    if differ < BIAS_MIN_DIFFER or differ < BIAS_MIN_SHARE * count:
        return None
    side, n = max(sides.items(), key=lambda item: item[1])
    if n < BIAS_ONE_SIDED * differ:
        return None
    return (
        f"{differ} of {count} elements differ from the reference, {n} of them {side}: the "
        "kernel rounds one way (a truncating cast, a biased scale); round to nearest even"
    )
