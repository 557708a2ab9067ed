"""Sums over a few elements as pointwise sums (kbot.propose.codegen.trace's decomposition of
`aten.sum.dim_IntList`): a 2 x 2 rotation's row summed over its axis of 2 needs no reduction
schedule."""

from __future__ import annotations

import itertools
import math
from typing import Any

import torch

aten = torch.ops.aten

# A sum over dims of at most this many elements in all, of sizes fixed in the source, is
# written as their pointwise sum.
FEW_ELEMENTS = 4


def sum_of_few(x, dim=None, keepdim=False, *, dtype=None):  # type: ignore[no-untyped-def]
    """`x.sum(-1)` over an axis of 2 (a 2 x 2 rotation's row: lingua's rotary sums q and k of
    different head counts so) as the sum of its elements, selected: a pointwise expression, where
    two reductions of different shapes have no schedule. Only where the reduced sizes are fixed
    (`fixed_size`) and few; anything else stays a reduction."""
    if not dim or dtype is not None or not x.is_floating_point():
        return NotImplemented
    dims = sorted({d % x.dim() for d in dim})
    sizes = [fixed_size(x.shape[d]) for d in dims]
    if None in sizes or math.prod(sizes) > FEW_ELEMENTS:
        return NotImplemented
    total = None
    for index in itertools.product(*(range(n) for n in sizes)):
        part = x
        for d, i in sorted(zip(dims, index), reverse=True):  # the last dim first: the others keep
            part = aten.select.int(part, d, i)
        total = part if total is None else aten.add.Tensor(total, part)
    for d in dims if keepdim else ():
        total = aten.unsqueeze.default(total, d)
    return total


def fixed_size(size: Any) -> int | None:
    """A size that is the same whatever the problem's sizes are: a literal in the source, or an
    expression of sizes that keeps its value when every size doubles and quadruples
    (`head_dim // (head_dim // 2)`, the -1 of a reshape into pairs); None otherwise."""
    from torch.fx.experimental.symbolic_shapes import is_concrete_int

    if is_concrete_int(size):
        return int(size)
    node = getattr(size, "node", None)
    expr, env = getattr(node, "expr", None), getattr(node, "shape_env", None)
    if expr is None or env is None:
        return None
    try:
        known = getattr(env, "backed_var_to_val", None) or env.var_to_val  # torch 2.13, 2.11
        hints = {s: int(known[s]) for s in expr.free_symbols}
        values = {int(expr.xreplace({s: v * k for s, v in hints.items()})) for k in (1, 2, 4)}
    except (KeyError, TypeError, ValueError):
        return None
    return values.pop() if len(values) == 1 else None
