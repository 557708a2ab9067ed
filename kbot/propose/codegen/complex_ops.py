"""Complex arithmetic rewritten as real arithmetic on (real, imaginary) pairs.

Rotary embeddings are often written with complex numbers (`freqs_cis = torch.polar(...)` kept as
a complex64 buffer; `view_as_real(view_as_complex(x.reshape(..., -1, 2)) * freqs_cis)`), and no
schedule lowers a complex tensor. Every complex value of the graph is carried instead as its
`view_as_real` form, a float tensor with a trailing dim of 2: `view_as_complex` and
`view_as_real` become nothing, a view of a complex tensor the same view with that dim kept last,
and a product `(a + bi)(c + di)` the pair `(ac - bd, ad + bc)` concatenated on that dim. A
complex input (the buffer) is passed to the launcher as `torch.view_as_real(...)`, a view. Any
other op on complex values is refused by name.
"""

from __future__ import annotations

from typing import Any

import torch
import torch.fx

aten = torch.ops.aten

_COMPLEX = (torch.complex64, torch.complex128, torch.complex32)


class ComplexUnsupported(Exception):
    """A complex op the rewrite does not write as real arithmetic (the message names it)."""


def _is_complex(node: object) -> bool:
    val = node.meta.get("val") if isinstance(node, torch.fx.Node) else None
    return isinstance(val, torch.Tensor) and val.dtype in _COMPLEX


def decomplexify(graph: torch.fx.Graph) -> set[str]:
    """Rewrites `graph` without complex tensors; returns the names of the placeholders that were
    complex (now their `view_as_real` form). Raises ComplexUnsupported for any other use of a
    complex value."""
    if not any(_is_complex(n) for n in graph.nodes):
        return set()
    real: dict[torch.fx.Node, torch.fx.Node] = {}  # complex node -> its real form
    inputs: set[str] = set()
    rewritten: list[torch.fx.Node] = []
    for node in list(graph.nodes):
        if node.op == "placeholder":
            if _is_complex(node):
                node.meta["val"] = torch.view_as_real(node.meta["val"])
                real[node] = node
                inputs.add(node.name)
            continue
        if node.op == "output":
            returned: list[torch.fx.Node] = []  # one value, or a tuple of them
            torch.fx.node.map_arg(node.args[0], returned.append)
            if any(_is_complex(a) for a in returned):
                raise ComplexUnsupported("forward returns a complex tensor")
            continue
        args = [a for a in node.all_input_nodes if a in real]
        if not args and not _is_complex(node):
            continue
        with graph.inserting_before(node):
            replacement = _rewrite(graph, node, real)
        if _is_complex(node):
            real[node] = replacement
        else:
            node.replace_all_uses_with(replacement)
        rewritten.append(node)
    # Every reader reads the real forms now: the complex nodes and their old readers go.
    for node in reversed(rewritten):
        if node.users:
            raise ComplexUnsupported(f"{node.name} is still read after the rewrite")
        graph.erase_node(node)
    return inputs


def _rewrite(
    graph: torch.fx.Graph, node: torch.fx.Node, real: dict[torch.fx.Node, torch.fx.Node]
) -> torch.fx.Node:
    """The real-valued node that stands for `node` (its real form where `node` is complex)."""
    target, args = node.target, node.args
    where = f"{node.name} ({target})"
    if target == aten.view_as_complex.default:
        return args[0]  # the pairs are the real form
    if target == aten.view_as_real.default:
        return real[args[0]]
    source = real.get(args[0]) if isinstance(args[0], torch.fx.Node) else None
    if source is not None and target in _VIEWS:
        rank = node.meta["val"].dim()
        return _call(graph, node, target, (source, *_VIEWS[target](args[1:], rank)))
    if target == aten.sym_size.int and source is not None:  # a size of the complex tensor
        return _call(graph, node, target, (source, _dim(args[1], args[0].meta["val"].dim())))
    if target in (aten.clone.default, aten.alias.default) and source is not None:
        return _call(graph, node, target, (source,))
    if target in (aten.mul.Tensor, aten.add.Tensor, aten.sub.Tensor):
        return _arithmetic(graph, node, real)
    raise ComplexUnsupported(f"{where} on complex values has no real-arithmetic form here")


def _dim(d: int, rank: int) -> int:
    """A dim of the complex tensor as a dim of its real form (the pair dim is last)."""
    return d + rank if d < 0 else d


_VIEWS = {
    aten.unsqueeze.default: lambda a, r: (_dim(a[0], r + 1),),
    aten.squeeze.dim: lambda a, r: (_dim(a[0], r - 1 if r else 0),),
    aten.select.int: lambda a, r: (_dim(a[0], r + 1), *a[1:]),
    aten.slice.Tensor: lambda a, r: (_dim(a[0] if a else 0, r), *a[1:]),
    aten.view.default: lambda a, r: ([*a[0], 2],),
    aten.reshape.default: lambda a, r: ([*a[0], 2],),
    aten._unsafe_view.default: lambda a, r: ([*a[0], 2],),
    aten.expand.default: lambda a, r: ([*a[0], 2],),
    aten.permute.default: lambda a, r: ([_dim(d, r) for d in a[0]] + [r],),
    aten.transpose.int: lambda a, r: (_dim(a[0], r), _dim(a[1], r)),
    aten.index.Tensor: lambda a, r: (a[0],),  # indices address the leading dims
}


def _arithmetic(
    graph: torch.fx.Graph, node: torch.fx.Node, real: dict[torch.fx.Node, torch.fx.Node]
) -> torch.fx.Node:
    """a * b, a + b, a - b with either side complex (the other real or a number)."""
    if node.kwargs.get("alpha", 1) != 1:
        raise ComplexUnsupported(f"{node.name}: {node.target} with alpha")
    a, b = node.args[0], node.args[1]
    ra, rb = real.get(a), real.get(b)
    if ra is not None and rb is not None:
        if node.target != aten.mul.Tensor:
            return _call(graph, node, node.target, (ra, rb))
        a_re, a_im, b_re, b_im = (_part(graph, node, r, k) for r in (ra, rb) for k in (0, 1))
        mul, sub, add = aten.mul.Tensor, aten.sub.Tensor, aten.add.Tensor
        re = _call(graph, node, sub, (_call(graph, node, mul, (a_re, b_re)),
                                      _call(graph, node, mul, (a_im, b_im))))  # fmt: skip
        im = _call(graph, node, add, (_call(graph, node, mul, (a_re, b_im)),
                                      _call(graph, node, mul, (a_im, b_re))))  # fmt: skip
        pieces = [_call(graph, node, aten.unsqueeze.default, (p, -1)) for p in (re, im)]
        return _call(graph, node, aten.cat.default, (pieces, -1))
    if node.target != aten.mul.Tensor:
        raise ComplexUnsupported(f"{node.name}: adding a real value to a complex one")
    pair, other = (ra, b) if ra is not None else (rb, a)
    if isinstance(other, torch.fx.Node):  # a real tensor scales both parts
        other = _call(graph, node, aten.unsqueeze.default, (other, -1))
    return _call(graph, node, aten.mul.Tensor, (pair, other))


def _part(graph: torch.fx.Graph, node: torch.fx.Node, pair: torch.fx.Node, k: int):
    return _call(graph, node, aten.select.int, (pair, -1, k))


def _call(graph: torch.fx.Graph, like: torch.fx.Node, target: Any, args: tuple) -> torch.fx.Node:
    """A new node computing `target(*args)`, its value computed on the graph's fake tensors."""
    values = torch.fx.node.map_arg(args, lambda n: n.meta["val"])
    with _fake_mode(values):
        result = target(*values)
    made = graph.call_function(target, args)
    made.meta = {k: v for k, v in like.meta.items() if k != "val"}
    made.meta["val"] = result
    return made


def _faked(value: object) -> bool:
    return isinstance(value, torch.Tensor) and hasattr(value, "fake_mode")


def _fake_mode(values: object) -> Any:
    found: list[Any] = []
    torch.fx.node.map_aggregate(values, lambda v: found.append(v.fake_mode) if _faked(v) else v)
    if not found:
        raise ComplexUnsupported("a complex op on values the trace did not record")
    return found[0]
