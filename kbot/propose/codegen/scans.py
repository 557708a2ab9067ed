"""Inclusive scans (cumsum, cumprod) along the tile's columns, at the index their consumer asks.

A scan is full-shaped, so in the one-pass row schedule it is `tl.cumsum` over the row in
registers. It is computed where it is read rather than once per row: lane `c` of the tile holds
the scan's input at the column the consumer reads (`j(c)`), masked lanes hold the neutral value,
and the scan runs forwards when `j` grows with `c`, backwards when it falls. That is right only
when the lanes before `c` (after `c`, backwards) hold exactly the scan indices below `j(c)`,
which holds for the three column indices handled here:

- `c`: the plain scan (lanes past the scan's length are masked off by an upper bound);
- `c - k` behind a guard `c >= k`: a scan read by the piece of a `cat` that starts at column
  `k`; `cat([zeros, cumsum(x[:, :-1])])` is the exclusive cumsum;
- `n - 1 - c`: a scan read through `flip`; `cumsum(x.flip(d), d).flip(d)` is the reverse cumsum.

Any other index (a scan sliced, strided, reshaped or read at another row) is refused.
"""

from __future__ import annotations

import re

import torch
import torch.fx

from kbot.propose.codegen.indexing import Ix, Lowering, shape_of
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.trace import TracedProblem, Unsupported

aten = torch.ops.aten

# The Triton scan and the value a masked lane holds so that it changes no prefix.
SCAN_FUNCTIONS = {
    aten.cumsum.default: ("tl.cumsum", "0.0"),
    aten.cumprod.default: ("tl.cumprod", "1.0"),
}


def lower_scan(body: Lowering, node: torch.fx.Node, idx: tuple[Ix, ...]) -> str:
    tile = body.scan_tile
    if tile is None:
        raise Unsupported(f"{node.name}: a scan outside the one-pass row schedule")
    rank = len(shape_of(node))
    dim = node.args[1] % rank
    if len(idx) != len(tile) or any(idx[d] != tile[d] for d in range(rank) if d != dim):
        raise Unsupported(f"{node.name}: a scan read at other rows than the tile's (a view)")
    reverse = _direction(body, node, idx[dim], tile[dim])
    function, neutral = SCAN_FUNCTIONS[node.target]
    mask = " & ".join(dict.fromkeys(g for ix in idx for g in ix.guards))
    x = body.value(node.args[0], idx)
    body.comment_source(node)
    var = body.fresh(node.name)
    direction = ", reverse=True" if reverse else ""
    body.emit(f"{var} = {function}(tl.where({mask}, {x}, {neutral}), axis=1{direction})")
    return var


def _direction(body: Lowering, node: torch.fx.Node, ix: Ix, col: Ix) -> bool:
    """Whether the scan read at column index `ix` runs backwards; refuses an index whose
    lanes do not hold every earlier scan index (module doc)."""
    cols = col.expr
    extra = [g for g in ix.guards if g not in col.guards]
    upper = re.compile(rf"\({re.escape(cols)} < (\w+)\)")
    below = [g for g in extra if not upper.fullmatch(g)]
    if ix.expr == cols and not below:
        return False
    shifted = re.fullmatch(rf"{re.escape(cols)} - (\w+)", ix.expr)
    if shifted and below == [f"({cols} >= {shifted.group(1)})"]:
        return False
    size = body.size(shape_of(node)[node.args[1] % len(shape_of(node))])
    if ix.expr == f"{size} - 1 - {cols}" and not extra:
        return True
    raise Unsupported(
        f"{node.name}: a scan read at column `{ix.expr}` (codegen reads scans at i, i - k "
        "after a cat, or n - 1 - i through a flip)"
    )


def scan_tile(traced: TracedProblem, scan_shapes: list[tuple], dim: int) -> tuple:
    """The tile of a schedule whose reductions are all scans: the outputs' shape where it
    differs from the scans' only along the scanned dim (`cat([zeros, cumsum(x[:, :-1])])`,
    an exclusive cumsum, is one column wider than its scan), else the first scan's shape.
    Scans are computed at the index their reader asks (scans.py), so the tile must cover
    every column a reader stores and every column of every scan."""
    out_shapes = [shape_of(out) for out in traced.outputs]
    tile = scan_shapes[0]
    if not any(_same(shape, tile) for shape in out_shapes) and all(
        _same(shape, out_shapes[0]) for shape in out_shapes
    ):
        tile = out_shapes[0]
    for shape in scan_shapes:
        if len(shape) != len(tile) or not all(
            SizeNames.same(a, b) for d, (a, b) in enumerate(zip(shape, tile)) if d != dim
        ):
            raise Unsupported("scans over tensors of different shapes")
        if _hint(shape[dim]) > _hint(tile[dim]):
            raise Unsupported("a scan longer than the output it is read for (a sliced scan)")
    return tile


def _same(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(SizeNames.same(x, y) for x, y in zip(a, b))


def _hint(size: object) -> int:
    return int(size.node.hint) if isinstance(size, torch.SymInt) else int(size)
