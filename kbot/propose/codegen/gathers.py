"""Gathers as index rewrites (views.py dispatches to them): `src[idx]` / `index_select` load
the index tensor and read src at the loaded value along the indexed dims; `src.gather(dim,
index)` reads src at the output's index with its `dim` entry replaced by the loaded index."""

from __future__ import annotations

import torch
import torch.fx

from kbot.propose.codegen.indexing import Ix, Lowering, shape_of
from kbot.propose.codegen.trace import Unsupported


def gather_index(body: Lowering, node: torch.fx.Node, idx: tuple[Ix, ...], indices: list) -> str:
    """`src[..., index, ...]` with one index tensor (`cos_sin_cache[positions]`): the loaded
    index, negative ones counted from the end, takes the place of the dims it indexes."""
    src = node.args[0]
    present = [(p, t) for p, t in enumerate(indices) if t is not None]
    if len(present) != 1:
        raise Unsupported("indexing with more than one index tensor")
    pos, index_node = present[0]
    index_rank = len(shape_of(index_node))
    body.comment_source(node)
    raw = body.value(index_node, idx[pos : pos + index_rank])
    src_shape = shape_of(src)
    var = body.fresh(f"{index_node.name}_index")
    # Negative indices count from the end, as in torch.
    body.emit(
        f"{var} = tl.where({raw} < 0, {raw} + {body.size(src_shape[pos])}, {raw}).to(tl.int64)"
    )
    guards: list[str] = []
    for ix in idx[pos : pos + index_rank]:
        guards += [g for g in ix.guards if g not in guards]
    gathered = Ix(var, tuple(guards), wide=True)
    new = idx[:pos] + (gathered,) + idx[pos + index_rank :]
    return body.value(src, new)


def gather_along(body: Lowering, node: torch.fx.Node, idx: tuple[Ix, ...], dim: int) -> str:
    """`src.gather(dim, index)`: output element i reads src at i with its `dim` index replaced
    by index[i] (cross-entropy's pick of each row's target logit). `index` has the output's
    shape; torch refuses an index outside src, so the value is used as it is."""
    src, index_node = node.args[0], node.args[2]
    body.comment_source(node)
    raw = body.value(index_node, idx)
    var = body.fresh(f"{index_node.name}_index")
    body.emit(f"{var} = {raw}.to(tl.int64)")
    new = list(idx)
    new[dim] = Ix(var, idx[dim].guards, wide=True)
    return body.value(src, tuple(new))
