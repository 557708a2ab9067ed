"""In-place ops on the reference's own temporaries, rewritten as the out-of-place ops they equal.

Serving code upcasts and then writes into the copy (`x = x.float(); x.mul_(rsqrt(...));
x = x.to(dtype).mul_(weight)`). The traced graph then holds `mul_`, which no schedule lowers,
although nothing outside the op can see the write. `y = a.op_(b)` on a tensor `a` that the op
made itself (not an input, parameter or buffer, not a view, with no views taken of it) equals
`y = op(a, b)` cast to `a`'s dtype, with every later read of `a` reading `y`. A fresh buffer
filled piece by piece (`out = torch.empty_like(x); out[..., :h] = -x2; out[..., h:] = x1`,
rotate-half as serving code writes it) is the concatenation of its pieces, when they tile one
dim exactly. Other writes into inputs or through views stay in the graph, so the classifier
still refuses them by name.

(torch.func.functionalize does this in general, but under symbolic tracing it bakes the traced
sizes into views, and the launchers must read sizes at call time.)
"""

from __future__ import annotations

import torch
import torch.fx

aten = torch.ops.aten


def _aliases(node: torch.fx.Node) -> bool:
    """Whether the node's result shares storage with an argument (a view or an in-place op)."""
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return False
    return any(r.alias_info is not None for r in target._schema.returns)


def _functional(target: object) -> object | None:
    """`aten.mul.Tensor` for `aten.mul_.Tensor`; None when `target` is not an in-place op that
    writes its first argument or has no out-of-place twin of the same overload."""
    if not isinstance(target, torch._ops.OpOverload):
        return None
    schema = target._schema
    first = schema.arguments[0] if schema.arguments else None
    if first is None or first.alias_info is None or not first.alias_info.is_write:
        return None
    name = schema.name.split("::")[-1]
    if not name.endswith("_") or name.startswith("_"):
        return None
    packet = getattr(aten, name[:-1], None)
    return getattr(packet, target._overloadname, None) if packet is not None else None


def rewrite_in_place(graph: torch.fx.Graph) -> int:
    """Rewrites the in-place ops on temporaries of `graph`; returns how many it rewrote."""
    rewritten = sum(
        _fill_to_cat(graph, node) for node in list(graph.nodes) if node.target in _EMPTY
    )
    for node in list(graph.nodes):
        functional = _functional(node.target) if node.op == "call_function" else None
        written = node.args[0] if node.args else None
        if functional is None or not isinstance(written, torch.fx.Node):
            continue
        if written.op != "call_function" or _aliases(written):
            continue  # an input, parameter or buffer, or a view of something else
        if any(_aliases(user) for user in written.users if user is not node):
            continue  # a view of the temporary would see the write
        val = node.meta.get("val")
        if not isinstance(val, torch.Tensor) or not hasattr(val, "fake_mode"):
            continue
        with val.fake_mode:
            values = torch.fx.node.map_arg(node.args, lambda n: n.meta["val"])
            kwargs = torch.fx.node.map_arg(node.kwargs, lambda n: n.meta["val"])
            result = functional(*values, **kwargs)
        order = {n: i for i, n in enumerate(graph.nodes)}
        later = [u for u in written.users if u is not node and order[u] > order[node]]
        with graph.inserting_before(node):
            replacement = graph.call_function(functional, node.args, node.kwargs)
            replacement.meta = {**node.meta, "val": result}
            if result.dtype != val.dtype:  # `bf16.mul_(fp32)` stays bf16
                cast = graph.call_function(
                    aten._to_copy.default, (replacement,), {"dtype": val.dtype}
                )
                cast.meta = dict(node.meta)
                replacement = cast
        for user in later:
            user.replace_input_with(written, replacement)
        node.replace_all_uses_with(replacement)
        graph.erase_node(node)
        rewritten += 1
    return rewritten


_EMPTY = {
    aten.empty.memory_format,
    aten.empty_like.default,
    aten.empty_permuted.default,
    aten.empty_strided.default,
}
_FAR = 2**62  # a slice's end past any size (`x[h:]` is traced with end 2**63 - 1)


def _size_expr(value: object) -> object:
    """A slice bound as something comparable: an int, or a symbolic size's expression."""
    if isinstance(value, torch.fx.Node):
        value = value.meta.get("val")
    if isinstance(value, torch.SymInt):
        return value.node.expr
    return value


def _fill_to_cat(graph: torch.fx.Graph, buffer: torch.fx.Node) -> int:
    """`buffer` (an uninitialised tensor) written by `copy_` into slices along one dim that
    tile it from 0 to its end, then only read: the writes become one `cat` of their sources
    (each cast as `copy_` does; a source `copy_` would broadcast leaves the graph as it is)
    that the reads read. 1 when rewritten, else 0."""
    val = buffer.meta.get("val")
    if not isinstance(val, torch.Tensor) or not hasattr(val, "fake_mode"):
        return 0
    order = {n: i for i, n in enumerate(graph.nodes)}
    pieces, readers = [], []
    for user in buffer.users:
        copies = list(user.users)
        if (
            user.target == aten.slice.Tensor
            and len(copies) == 1
            and copies[0].target == aten.copy_.default
            and copies[0].args[0] is user
            and not copies[0].users
        ):
            pieces.append((user, copies[0]))
        else:
            readers.append(user)
    if not pieces:
        return 0
    rank = val.dim()
    dims = {(p.args[1] if len(p.args) > 1 else 0) % rank for p, _ in pieces}
    if len(dims) != 1 or any(len(p.args) > 4 and p.args[4] != 1 for p, _ in pieces):
        return 0
    dim = dims.pop()
    size = _size_expr(val.shape[dim])
    bounds = {}
    for piece, copy in pieces:
        start = _size_expr(piece.args[2] if len(piece.args) > 2 else 0)
        end = _size_expr(piece.args[3] if len(piece.args) > 3 else _FAR)
        end = size if isinstance(end, int) and end >= _FAR else end
        if start in bounds:
            return 0
        bounds[start] = (end, piece, copy)
    ordered, at = [], 0
    while at in bounds:  # the pieces in order, each starting where the last ended
        end, piece, copy = bounds.pop(at)
        ordered.append((piece, copy))
        at = end
        if at == size:
            break
    if at != size or bounds:
        return 0
    if not all(_same_shape(c.args[1], p) for p, c in ordered):
        return 0  # a source that copy_ would broadcast
    last_copy = max((c for _, c in ordered), key=order.__getitem__)
    if any(order[r] < order[last_copy] for r in readers):
        return 0  # read before it is filled
    with graph.inserting_after(last_copy):
        sources = [_as_piece(graph, copy.args[1], piece) for piece, copy in ordered]
        cat = graph.call_function(aten.cat.default, (sources, dim))
        with val.fake_mode:
            cat.meta = {**buffer.meta, "val": torch.cat([s.meta["val"] for s in sources], dim)}
    for reader in readers:
        reader.replace_input_with(buffer, cat)
    for piece, copy in ordered:
        graph.erase_node(copy)
        graph.erase_node(piece)
    graph.erase_node(buffer)
    return 1


def _same_shape(a: object, b: torch.fx.Node) -> bool:
    """Whether `copy_(b, a)` copies without broadcasting: the same sizes, or sizes the trace
    cannot prove equal (`n - n // 2` and `n // 2`) but that were equal and above 1 where traced;
    copy_ raised for any size where they would differ without a 1 to broadcast."""
    left = a.meta.get("val") if isinstance(a, torch.fx.Node) else None
    right = b.meta.get("val")
    if not isinstance(left, torch.Tensor) or not isinstance(right, torch.Tensor):
        return False
    if left.dim() != right.dim():
        return False
    for x, y in zip(left.shape, right.shape):
        if _size_expr(x) == _size_expr(y):
            continue
        hints = [s.node.hint if isinstance(s, torch.SymInt) else s for s in (x, y)]
        if None in hints or hints[0] != hints[1] or hints[0] <= 1:
            return False
    return True


def _as_piece(graph: torch.fx.Graph, source: torch.fx.Node, piece: torch.fx.Node) -> torch.fx.Node:
    """`source` as `copy_` writes it into `piece` (of the same shape): cast to its dtype."""
    target = piece.meta["val"]
    value = source.meta["val"]
    if value.dtype == target.dtype:
        return source
    with target.fake_mode:
        cast_val = value.to(target.dtype)
    cast = graph.call_function(aten._to_copy.default, (source,), {"dtype": target.dtype})
    cast.meta = {"val": cast_val}
    return cast
