"""In-place ops on the reference's own temporaries, rewritten as the out-of-place ops they equal.

Serving code upcasts and then writes into the copy (`x = x.float(); x.mul_(rsqrt(...));
x = x.to(dtype).mul_(weight)`). The traced graph then holds `mul_`, which no schedule lowers,
although nothing outside the op can see the write. `y = a.op_(b)` on a tensor `a` that the op
made itself (not an input, parameter or buffer, not a view, with no views taken of it) equals
`y = op(a, b)` cast to `a`'s dtype, with every later read of `a` reading `y`. Writes into
inputs or through views stay in the graph, so the classifier still refuses them by name.

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
    rewritten = 0
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
