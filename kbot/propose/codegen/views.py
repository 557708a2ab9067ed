"""View ops as index rewrites: no data moves, the consumer's index is mapped to the producer's.

`x[..., :d]`, `x.chunk(2, -1)`, `x[..., ::2]`, `unsqueeze`, `expand`, `repeat` (index
`i % n`), `permute`, `view` (splitting and merging dims), `flip` (index `n - 1 - i`), `cat` (a
`tl.where` over the pieces, each read with a shifted, bounds-guarded index) and `src[idx]`
(gather: the index tensor is loaded and used as an index; gathers.py).
"""

from __future__ import annotations

import itertools
import operator

import torch
import torch.fx

from kbot.propose.codegen.gathers import gather_along, gather_index
from kbot.propose.codegen.indexing import ZERO, Ix, Lowering, shape_of
from kbot.propose.codegen.sizes import SizeNames, size_expr
from kbot.propose.codegen.trace import Unsupported

aten = torch.ops.aten


def _dim(dim: int, rank: int) -> int:
    return dim + rank if dim < 0 else dim


def _shift(ix: Ix, start: str, step: int = 1) -> Ix:
    if start == "0" and step == 1:
        return ix
    expr = ix.expr
    if step != 1:
        expr = f"{_p(expr)} * {step}"
    if start != "0":
        expr = f"{start} + {_p(expr)}" if expr != "0" else start
    return Ix(expr, ix.guards, ix.wide)


def _p(expr: str) -> str:
    return expr if expr.isidentifier() or expr.isdigit() else f"({expr})"


def _hint(size: object) -> int:
    if isinstance(size, int):
        return size
    if isinstance(size, torch.SymInt):
        hint = size.node.hint
        if hint is not None:
            return int(hint)
    raise Unsupported(f"size {size} has no traced value")


def lower_view(body: Lowering, node: torch.fx.Node, idx: tuple[Ix, ...]) -> str:
    target = node.target
    args = node.args
    if target == operator.getitem:
        return _split_piece(body, node, idx)
    src = args[0]
    in_shape = shape_of(src) if isinstance(src, torch.fx.Node) else ()
    if target == aten.slice.Tensor:
        dim = _dim(args[1] if len(args) > 1 else 0, len(in_shape))
        start = args[2] if len(args) > 2 and args[2] is not None else 0
        step = args[4] if len(args) > 4 else 1
        if isinstance(start, int) and start < 0:
            start = in_shape[dim] + start
        new = list(idx)
        new[dim] = _shift(idx[dim], body.size(start), step)
        return body.value(src, tuple(new))
    if target == aten.select.int:
        dim = _dim(args[1], len(in_shape))
        index = args[2]
        if isinstance(index, int) and index < 0:
            index = in_shape[dim] + index
        new = list(idx)
        new.insert(dim, Ix(body.size(index)))
        return body.value(src, tuple(new))
    if target == aten.unsqueeze.default:
        dim = _dim(args[1], len(in_shape) + 1)
        return body.value(src, idx[:dim] + idx[dim + 1 :])
    if target in (aten.squeeze.dim, aten.squeeze.dims):
        dims = args[1] if target == aten.squeeze.dims else [args[1]]
        dims = {_dim(d, len(in_shape)) for d in dims}
        squeezed = {d for d in dims if SizeNames.is_one(in_shape[d])}
        if len(in_shape) - len(squeezed) != len(idx) and len(in_shape) - len(dims) == len(idx):
            # every named dim went: a size the trace saw as 1 that its name cannot show is 1
            # (`s // (2 * (s // 2))`, the pair dim of a reshape to (..., -1, 2))
            squeezed = dims
        if len(in_shape) - len(squeezed) != len(idx):
            raise Unsupported(f"a squeeze of dims {sorted(dims)} of {list(in_shape)}")
        it = iter(idx)
        new = [ZERO if d in squeezed else next(it) for d in range(len(in_shape))]
        return body.value(src, tuple(new))
    if target == aten.expand.default:
        out_shape = shape_of(node)
        offset = len(out_shape) - len(in_shape)
        new = [
            ZERO
            if SizeNames.is_one(size) and not SizeNames.is_one(out_shape[offset + d])
            else idx[offset + d]
            for d, size in enumerate(in_shape)
        ]
        return body.value(src, tuple(new))
    if target == aten.repeat.default:
        return body.value(src, _repeat_index(body, in_shape, list(args[1]), idx))
    if target == aten.permute.default:
        new: list[Ix] = [ZERO] * len(in_shape)
        for k, d in enumerate(args[1]):
            new[_dim(d, len(in_shape))] = idx[k]
        return body.value(src, tuple(new))
    if target in (aten.view.default, aten._unsafe_view.default, aten.reshape.default):
        return body.value(src, reshape_index(body, in_shape, shape_of(node), idx))
    if target == aten.cat.default:
        return _cat(body, node, idx)
    if target == aten.flip.default:
        new = list(idx)
        for d in {_dim(d, len(in_shape)) for d in args[1]}:
            new[d] = flip_index(idx[d], body.size(in_shape[d]))
        return body.value(src, tuple(new))
    if target == aten.index.Tensor:
        return gather_index(body, node, idx, node.args[1])
    if target == aten.constant_pad_nd.default:
        return _pad(body, node, idx)
    if target == aten.embedding.default:  # weight[indices]: a row of the table per index
        return gather_index(body, node, idx, [args[1]])
    if target == aten.index_select.default:
        dim = _dim(args[1], len(in_shape))
        return gather_index(body, node, idx, [None] * dim + [args[2]])
    if target == aten.gather.default:
        return gather_along(body, node, idx, _dim(args[1], len(in_shape)))
    raise Unsupported(f"view op {target}")


def _repeat_index(body: Lowering, in_shape: tuple, repeats: list, idx: tuple[Ix, ...]) -> tuple:
    """`x.repeat(r0, r1, ...)`: output index i along a repeated dim reads `i % size`; leading
    repeats add dims the source does not have."""
    offset = len(repeats) - len(in_shape)
    new = []
    for d, size in enumerate(in_shape):
        ix, times = idx[offset + d], repeats[offset + d]
        if not isinstance(times, int):
            raise Unsupported("repeat by a count computed at run time")
        if SizeNames.is_one(size):
            new.append(ZERO)
        elif times == 1:
            new.append(ix)
        else:
            new.append(Ix(f"{_p(ix.expr)} % {_p(body.size(size))}", ix.guards, ix.wide))
    return tuple(new)


def flip_index(ix: Ix, size: str) -> Ix:
    """`size - 1 - i`; flipping a flipped index gives the index back (`x.flip(d).flip(d)`)."""
    prefix = f"{size} - 1 - "
    rest = ix.expr[len(prefix) :] if ix.expr.startswith(prefix) else ""
    if rest and (_p(rest) == rest or _one_group(rest)):
        return Ix(rest[1:-1] if _one_group(rest) else rest, ix.guards, ix.wide)
    return Ix(f"{prefix}{_p(ix.expr)}", ix.guards, ix.wide)


def _one_group(expr: str) -> bool:
    """Whether `expr` is one parenthesised group, `(a - b)` but not `(a) * (b)`."""
    if not (expr.startswith("(") and expr.endswith(")")):
        return False
    depth = 0
    for k, char in enumerate(expr):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and k < len(expr) - 1:
            return False
    return True


def _split_piece(body: Lowering, node: torch.fx.Node, idx: tuple[Ix, ...]) -> str:
    split, k = node.args
    if isinstance(split, torch.fx.Node) and split.target in MAX_POOLS:
        if k != 0:
            raise Unsupported("max_pool's indices (return_indices=True)")
        return lower_max_pool(body, split, idx)
    if not isinstance(split, torch.fx.Node) or split.target not in (
        aten.split_with_sizes.default,
        aten.split.Tensor,
    ):
        name = str(getattr(split, "target", split)).replace("aten.", "")
        raise Unsupported(f"op {name} has no Triton lowering")
    src = split.args[0]
    rank = len(shape_of(src))
    dim = _dim(split.args[2] if len(split.args) > 2 else 0, rank)
    if split.target == aten.split_with_sizes.default:
        start = sum((size_expr(s) for s in split.args[1][:k]), size_expr(0))
    else:
        start = size_expr(split.args[1]) * k
    start_name = body.size(start)
    new = list(idx)
    new[dim] = _shift(idx[dim], start_name)
    return body.value(src, tuple(new))


def reshape_index(
    body: Lowering, in_shape: tuple, out_shape: tuple, idx: tuple[Ix, ...]
) -> tuple[Ix, ...]:
    """Maps an index of the reshaped view to the source by grouping dims of equal extent."""
    new: list[Ix] = [ZERO] * len(in_shape)
    i = j = 0
    while i < len(in_shape) or j < len(out_shape):
        if i < len(in_shape) and SizeNames.is_one(in_shape[i]):
            i += 1
            continue
        if j < len(out_shape) and SizeNames.is_one(out_shape[j]):
            j += 1
            continue
        if i >= len(in_shape) or j >= len(out_shape):
            raise Unsupported("reshape whose sizes do not line up")
        gi, gj = [i], [j]
        pi, pj = _hint(in_shape[i]), _hint(out_shape[j])
        while pi != pj:
            if pi < pj:
                i += 1
                gi.append(i)
                pi *= _hint(in_shape[i])
            else:
                j += 1
                gj.append(j)
                pj *= _hint(out_shape[j])
        i, j = i + 1, j + 1
        # Flat position within the group, in the view's dims.
        out_sizes = tuple(body.size(out_shape[d]) for d in gj)
        origins = [idx[d].origin for d in gj]
        if len(gj) > 1 and all(
            o and o[0] == origins[0][0] and o[1] == out_sizes and o[2] == k
            for k, o in enumerate(origins)
        ):
            flat_ix = idx[gj[0]]
            guards = [g for d in gj for g in idx[d].guards]
            new[gi[0]] = Ix(origins[0][0], tuple(dict.fromkeys(guards)), flat_ix.wide)
            continue
        terms, guards, wide = [], [], False
        for k, dim in enumerate(gj):
            ix = idx[dim]
            wide = wide or ix.wide
            guards += [g for g in ix.guards if g not in guards]
            if ix.expr == "0":
                continue
            inner = [body.size(out_shape[d]) for d in gj[k + 1 :]]
            terms.append(" * ".join([_p(ix.expr)] + inner))
        flat = " + ".join(terms) or "0"
        for k, dim in enumerate(gi):
            inner = [body.size(in_shape[d]) for d in gi[k + 1 :]]
            expr = flat
            if inner and expr != "0":
                expr = f"{_p(expr)} // ({' * '.join(inner)})"
            if k > 0 and expr != "0":
                expr = f"{_p(expr)} % {body.size(in_shape[dim])}"
            in_sizes = tuple(body.size(in_shape[d]) for d in gi)
            origin = (flat, in_sizes, k) if len(gi) > 1 else ()
            new[dim] = Ix(expr, tuple(guards), wide, origin)
    return tuple(new)


def _pad(body: Lowering, node: torch.fx.Node, idx: tuple[Ix, ...]) -> str:
    """`F.pad(x, (left, right, ...), value=v)`: x read at the index shifted by each dim's left
    pad, `v` where that index falls outside x (a negative pad crops)."""
    src, pads = node.args[0], list(node.args[1])
    value = node.args[2] if len(node.args) > 2 and node.args[2] is not None else 0.0
    in_shape = shape_of(src)
    rank = len(in_shape)
    new = list(idx)
    inside: list[str] = []
    for k in range(len(pads) // 2):
        dim = rank - 1 - k
        left = pads[2 * k]
        if not isinstance(left, int) or not isinstance(pads[2 * k + 1], int):
            raise Unsupported(f"{node.name}: a pad that is not a number")
        ix = idx[dim]
        shifted = f"{_p(ix.expr)} - {left}" if left else ix.expr
        bounds = (f"({shifted} >= 0)", f"({shifted} < {body.size(in_shape[dim])})")
        inside += bounds
        new[dim] = Ix(shifted, ix.guards + bounds, ix.wide)
    loaded = body.value(src, tuple(new))
    body.comment_source(node)
    var = body.fresh(node.name)
    body.emit(f"{var} = tl.where({' & '.join(inside)}, {loaded}, {body.scalar(value)})")
    return var


def _cat(body: Lowering, node: torch.fx.Node, idx: tuple[Ix, ...]) -> str:
    pieces = [p for p in node.args[0] if not (shape_of(p) and _hint(shape_of(p)[0]) == 0)]
    rank = len(shape_of(node))
    dim = _dim(node.args[1] if len(node.args) > 1 else 0, rank)
    ix = idx[dim]
    if ix.span and ix.span[0] == ix.expr:
        start = size_expr(0)
        for piece in pieces:
            end = start + size_expr(shape_of(piece)[dim])
            if ix.span[1:3] == (body.size(start), body.size(end)):
                # The index lies in this piece (the pairs schedule computes a piece's columns
                # at a time): the piece itself at the index's offset into it, no select.
                new = list(idx)
                new[dim] = Ix(ix.span[3], ix.guards, ix.wide)
                return body.value(piece, tuple(new))
            start = end
    values, ends = [], []
    start = size_expr(0)
    for k, piece in enumerate(pieces):
        size = size_expr(shape_of(piece)[dim])
        start_name = body.size(start)
        end_name = body.size(start + size)
        guards = list(ix.guards)
        if k > 0:
            guards.append(f"({ix.expr} >= {start_name})")
        if k < len(pieces) - 1:
            guards.append(f"({ix.expr} < {end_name})")
        shifted = Ix(
            f"{_p(ix.expr)} - {start_name}" if start_name != "0" else ix.expr,
            tuple(guards),
            ix.wide,
            ix.origin if start_name == "0" else (),
        )
        new = list(idx)
        new[dim] = shifted
        values.append(body.value(piece, tuple(new)))
        ends.append(end_name)
        start = start + size
    body.comment_source(node)
    result = values[-1]
    for value, end in zip(reversed(values[:-1]), reversed(ends[:-1])):
        var = body.fresh(node.name)
        body.emit(f"{var} = tl.where({ix.expr} < {end}, {value}, {result})")
        result = var
    return result


POOLS = {aten.avg_pool2d.default, aten.avg_pool3d.default}
MAX_POOLS = {aten.max_pool2d_with_indices.default, aten.max_pool3d_with_indices.default}


def lower_avg_pool(body: Lowering, node: torch.fx.Node, idx: tuple[Ix, ...]) -> str:
    """`avg_pool{2,3}d` (avg_pool1d traces as a 2d pool over an unsqueezed dim): each output
    element the mean of its window; a read in the padding counts as 0 (torch's default
    count_include_pad), also when the pooled value is computed rather than loaded."""
    args = list(node.args) + [None] * 7
    kernel = list(args[1])
    ceil_mode, include_pad, divisor = bool(args[4]), args[5] is not False, args[6]
    padding = _per_dim(args[3], len(kernel), 0)
    if ceil_mode or divisor is not None or (not include_pad and any(padding)):
        raise Unsupported("avg_pool with ceil_mode, divisor_override or count_include_pad=False")
    terms = _window(body, node, idx, kernel, _per_dim(args[2], len(kernel), None), padding,
                    [1] * len(kernel), "0.0")  # fmt: skip
    count = 1
    for k in kernel:
        count *= k
    var = body.fresh(node.name)
    body.emit(f"{var} = ({' + '.join(terms)}) * {1.0 / count!r}")
    return var


def lower_max_pool(body: Lowering, node: torch.fx.Node, idx: tuple[Ix, ...]) -> str:
    """The values of `max_pool{2,3}d_with_indices` (max_pool1d traces as 2d): the largest read
    of each window, `i * stride + k * dilation - padding`; a read in the padding is -inf."""
    args = list(node.args) + [None] * 6
    kernel = list(args[1])
    if args[5]:
        raise Unsupported("max_pool with ceil_mode")
    terms = _window(body, node, idx, kernel, _per_dim(args[2], len(kernel), None),
                    _per_dim(args[3], len(kernel), 0), _per_dim(args[4], len(kernel), 1),
                    "float('-inf')")  # fmt: skip
    result = terms[0]
    for term in terms[1:]:
        var = body.fresh(node.name)
        body.emit(f"{var} = tl.maximum({result}, {term})")
        result = var
    return result


def _per_dim(value: object, rank: int, default: int | None) -> list[int]:
    """A pool argument as one int per pooled dim ([] or None: `default`, or the kernel size
    for a stride, which the caller fills in)."""
    if value is None or value == []:
        return [default] * rank  # type: ignore[list-item]
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    return values * rank if len(values) == 1 else values


def _window(
    body: Lowering,
    node: torch.fx.Node,
    idx: tuple[Ix, ...],
    kernel: list[int],
    stride: list[int | None],
    padding: list[int],
    dilation: list[int],
    pad_value: str,
) -> list[str]:
    """One value per window element, read at `i * stride + k * dilation - padding` along each
    pooled (trailing) dim; a read outside the input is `pad_value`."""
    src = node.args[0]
    in_shape = shape_of(src)
    lead = len(idx) - len(kernel)
    steps = [s if s is not None else k for s, k in zip(stride, kernel)]
    terms = []
    for offsets in itertools.product(*(range(k) for k in kernel)):
        new, inside = list(idx[:lead]), []
        for d, offset in enumerate(offsets):
            ix = idx[lead + d]
            expr = f"{_p(ix.expr)} * {steps[d]}" if steps[d] != 1 else ix.expr
            shift = offset * dilation[d] - padding[d]
            if shift:
                expr = f"{expr} {'+' if shift > 0 else '-'} {abs(shift)}"
            guards = ix.guards
            if padding[d]:
                size = body.size(in_shape[lead + d])
                inside += [f"({expr} >= 0)", f"({expr} < {size})"]
                guards = guards + tuple(inside[-2:])
            new.append(Ix(expr, guards, ix.wide))
        value = body.value(src, tuple(new))
        terms.append(f"tl.where({' & '.join(inside)}, {value}, {pad_value})" if inside else value)
    body.comment_source(node)
    return terms
