"""Pairs: an output that is a `cat` of equal pieces along its last dim, computed piece by piece.

The pointwise schedule reads `cat((a, b), -1)` at one column as `tl.where(col < half, a, b)`:
each output element computes both pieces and issues both pieces' loads, half of them masked
off. For RoPE's `cat((q1*cos - q2*sin, q2*cos + q1*sin), -1)` that is four q loads and four
cos/sin loads an element, 38.1 sm_90 PTX instructions an element against silu_and_mul's 11.2
(bench/results/ptx.md).

Here a program tiles one piece's shape instead and computes every piece at the same index `j`:
what the pieces share (q1 and q2, cos and sin) is loaded once, by the lowering's memo, and
piece k is stored at column `k * half + j` of the cat. With 3 or more dims the tile is
rows (the outer dims flattened) x mids (the next-to-last dim: RoPE's heads) x cols (the half),
so a value broadcast along the mids (cos/sin gathered per token, `unsqueeze(-2)`) is loaded
once per row and broadcast over them, not gathered again for every head.

Between the cat and the output only reshapes, copies and a cast to the output's dtype may
stand (the store rounds). A cat that feeds more compute (the rotate-half RoPE,
`x * cos + cat((-x2, x1), -1) * sin`) and has the output's shape is the other form: the whole
output is computed at piece k's columns, k by k, and at those columns the cat is piece k itself
(`Ix.span`): no `tl.where` between the pieces, x's halves loaded once each. Anything else is
refused and the pointwise variants stand.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.fx

from kbot.propose.codegen.emitted import Emitted, Tunable
from kbot.propose.codegen.indexing import ZERO, Ix, shape_of
from kbot.propose.codegen.kernel import KernelSource
from kbot.propose.codegen.lowering import KernelBody
from kbot.propose.codegen.ops import FLOAT_TYPES, dtype_of
from kbot.propose.codegen.rows import COL_GUARD, ROW_GUARD, register_outputs, split_rows, store
from kbot.propose.codegen.schedule import Schedule, ScheduleKind
from kbot.propose.codegen.sizes import SizeNames, size_expr
from kbot.propose.codegen.trace import TracedProblem, Unsupported
from kbot.propose.codegen.views import reshape_index

aten = torch.ops.aten
prims = torch.ops.prims

# Row-major reinterpretations: the cat's index maps to the output's by `reshape_index`.
_RESHAPES = {
    aten.view.default,
    aten._unsafe_view.default,
    aten.reshape.default,
    aten.unsqueeze.default,
    aten.squeeze.dim,
    aten.squeeze.dims,
    aten.clone.default,
    aten.alias.default,
    aten.detach.default,
}
_CASTS = {aten._to_copy.default, prims.convert_element_type.default}
MID_GUARD = "mid_mask"


@dataclass(frozen=True)
class CatOfPieces:
    output: torch.fx.Node  # what is stored
    cat: torch.fx.Node  # cat(pieces, -1), the output up to reshapes and a cast
    pieces: tuple[torch.fx.Node, ...]  # of one shape
    # A stack (`torch.stack(pieces, -1)`, as gpt-fast's interleaved RoPE writes its pairs) is a
    # cat of pieces one wide: the tile is then a piece without that dim, and piece k is stored
    # at index k of it, interleaved.
    stacked: bool
    tile: tuple  # the shape a program tiles: a piece's, without a stack's one-wide dim
    # The cat feeds more compute (RoPE's rotate-half form, `x * cos + cat((-x2, x1)) * sin`)
    # and has the output's shape: the whole output is computed a piece's columns at a time.
    inner: bool = False


def cat_of_pieces(traced: TracedProblem, schedule: Schedule) -> CatOfPieces:
    """The one output's cat of equal pieces along the last dim; Unsupported says why not."""
    if schedule.kind != ScheduleKind.POINTWISE or schedule.extern or schedule.groups:
        raise Unsupported("pairs: only a plain pointwise schedule")
    if len(schedule.outputs) != 1:
        raise Unsupported("pairs: one output only")
    output = schedule.outputs[0][0]
    node = output
    while node.op == "call_function" and node.target != aten.cat.default:
        cast = (
            node.target in _CASTS
            and dtype_of(node) == dtype_of(output)
            and dtype_of(node.args[0]) in FLOAT_TYPES
        )
        if node.target not in _RESHAPES and not cast:
            break
        node = node.args[0]
    sizes = SizeNames(traced)
    if node.op != "call_function" or node.target != aten.cat.default:
        inner = _inner_cat(output, sizes)
        if inner is None:
            raise Unsupported(
                f"pairs: {output.name} is not a cat up to reshapes and a cast, and no cat of "
                "its shape along the last dim feeds it"
            )
        _joins_last_dim(inner)
        pieces = _pieces(inner, sizes)
        if sizes.equal(shape_of(pieces[0])[-1], 1):
            raise Unsupported(f"pairs: {inner.name} is a stack inside the op")
        return CatOfPieces(output, inner, pieces, False, tuple(shape_of(pieces[0])), inner=True)
    _joins_last_dim(node)
    pieces = _pieces(node, sizes)
    stacked = sizes.equal(shape_of(pieces[0])[-1], 1)
    tile = tuple(shape_of(pieces[0])[:-1] if stacked else shape_of(pieces[0]))
    if not tile:
        raise Unsupported(f"pairs: {node.name} stacks scalars")
    return CatOfPieces(output, node, pieces, stacked, tile)


def _joins_last_dim(node: torch.fx.Node) -> None:
    rank = len(shape_of(node))
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    if rank < 2 or dim % rank != rank - 1:
        raise Unsupported(f"pairs: {node.name} joins dim {dim} of {rank}, not the last of 2+")


def _pieces(node: torch.fx.Node, sizes: SizeNames) -> tuple[torch.fx.Node, ...]:
    pieces = tuple(p for p in node.args[0] if _numel_hint(p) > 0)
    width = shape_of(pieces[0])[-1] if pieces else 0
    if len(pieces) < 2 or not all(sizes.equal(shape_of(p)[-1], width) for p in pieces):
        raise Unsupported(f"pairs: {node.name}'s pieces are not of one width")
    return pieces


def _inner_cat(output: torch.fx.Node, sizes: SizeNames) -> torch.fx.Node | None:
    """The cat nearest the output, among what it is computed from, that has the output's shape
    (every piece's columns are then a slice of the output's)."""
    seen, frontier = {output}, [output]
    while frontier:
        node = frontier.pop(0)
        if node.op == "call_function" and node.target == aten.cat.default:
            if sizes.same_shape(shape_of(node), shape_of(output)):
                return node
        for parent in node.all_input_nodes:
            if parent not in seen:
                seen.add(parent)
                frontier.append(parent)
    return None


def _numel_hint(node: object) -> int:
    count = 1
    for size in shape_of(node):
        hint = size.node.hint if isinstance(size, torch.SymInt) else size
        if hint is None:
            raise Unsupported(f"pairs: a size of {node} has no traced value")
        count *= int(hint)
    return count


def emit_pairs(
    traced: TracedProblem,
    schedule: Schedule,
    sizes: SizeNames,
    op: str,
    extern_args: dict[str, str] | None = None,
    *,
    rows: int,
    block_m: int,
    block_n: int,
    num_warps: int,
    gpu_math: bool = False,
) -> Emitted:
    found = cat_of_pieces(traced, schedule)
    body = KernelBody(traced, sizes)
    body.extern_args.update(extern_args or {})
    body.gpu_math = gpu_math
    (name,) = register_outputs(body, schedule)
    shape = found.tile
    rank = len(shape)
    mid = rank >= 3  # a next-to-last dim of its own tile axis
    body.reserve("rows", ROW_GUARD, "mids", MID_GUARD, "cols", COL_GUARD)
    body.reserve("n_rows", "n_mids", "n_half", "mid_blocks")
    if mid:
        # Row blocks and mid blocks share grid axis 0 (axis 1 stops at 65535 programs).
        body.emit("mid_blocks = tl.cdiv(n_mids, BLOCK_M)")
        body.emit("# int64 row ids: row * stride overflows int32 at prefill sizes.")
        body.emit("row_start = (tl.program_id(0) // mid_blocks).to(tl.int64) * ROWS")
        body.emit("rows = row_start + tl.arange(0, ROWS)[:, None, None]")
        body.emit(f"{ROW_GUARD} = rows < n_rows")
        body.emit("mid_start = (tl.program_id(0) % mid_blocks) * BLOCK_M")
        body.emit("mids = mid_start + tl.arange(0, BLOCK_M)[None, :, None]")
        body.emit(f"{MID_GUARD} = mids < n_mids")
        cols = "tl.arange(0, BLOCK_N)[None, None, :]"
    else:
        body.emit("# int64 row ids: row * stride overflows int32 at prefill sizes.")
        body.emit("rows = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]")
        body.emit(f"{ROW_GUARD} = rows < n_rows")
        cols = "tl.arange(0, BLOCK_N)[None, :]"
    body.emit(f"cols = tl.program_id(1) * BLOCK_N + {cols}")
    body.emit(f"{COL_GUARD} = cols < n_half")
    index = split_rows(body, shape, list(range(rank - 2 if mid else rank - 1)))
    if mid:
        index[rank - 2] = Ix("mids", (MID_GUARD,))
    index[rank - 1] = Ix("cols", (COL_GUARD,))
    at = tuple(index[d] for d in range(rank))
    widths = [size_expr(shape_of(piece)[-1]) for piece in found.pieces]
    if found.inner:
        _store_by_piece(body, name, found, at, widths)
    else:
        _store_pieces(body, name, found, at, widths)
    count = len(found.pieces)
    kernel = KernelSource(
        name=f"_{op}_kernel",
        doc=f"{op}: a cat's {count} pieces at one index (inputs loaded once); fp32 math.",
        body=body,
        leading=[("n_rows", "n_rows")]
        + ([("n_mids", "n_mids")] if mid else [])
        + [("n_half", "n_half")],
        constexprs=["ROWS", "BLOCK_M", "BLOCK_N"] if mid else ["ROWS", "BLOCK_N"],
    )
    launcher = [f"n_rows = {_product(sizes, shape[: rank - 2 if mid else rank - 1])}"]
    if mid:
        launcher.append(f"n_mids = {sizes.python(shape[rank - 2])}")
    if len({body.size(width) for width in widths}) == 1:
        launcher.append(f"n_half = {sizes.python(shape[-1])}")
    else:  # equal at the traced sizes, perhaps not at an odd one: the widest, each guarded
        launcher.append(f"n_half = max({', '.join(sizes.python(w) for w in widths)})")
    row_blocks = "triton.cdiv(n_rows, ROWS_PER_PROGRAM)"
    if mid:
        row_blocks += " * triton.cdiv(n_mids, BLOCK_M)"
    launcher.append(f"grid = ({row_blocks}, triton.cdiv(n_half, BLOCK_N))")
    constexprs = {"ROWS": "ROWS_PER_PROGRAM", "BLOCK_N": "BLOCK_N"}
    if mid:
        constexprs["BLOCK_M"] = "BLOCK_M"
    launcher += kernel.launch("grid", constexprs, "NUM_WARPS")
    tunables = [Tunable("ROWS_PER_PROGRAM", rows, "rows per program (outer dims flattened)")]
    if mid:
        tunables.append(Tunable("BLOCK_M", block_m, "next-to-last dim (heads) per program"))
    tunables += [
        Tunable("BLOCK_N", block_n, "columns of each piece per program"),
        Tunable("NUM_WARPS", num_warps, "warps per program, scaled with the tile"),
    ]
    params = {
        "schedule": schedule.kind.value,
        "pairs": count,
        "rows_per_program": rows,
        "block_m": block_m if mid else 1,
        "block_n": block_n,
        "num_warps": num_warps,
    }
    if gpu_math:
        params["gpu_math"] = True
    return Emitted([kernel], launcher, tunables, params)


def _piece_column(body: KernelBody, widths: list, k: int, span: bool) -> Ix:
    """Where piece k's column `cols` lands in the cat: after the pieces before it, guarded by
    its own width where that may differ from the tile's, the first piece's (an odd head dim's
    halves); with
    `span`, marked as lying in piece k (`Ix.span`)."""
    start = size_expr(0)
    for width in widths[:k]:
        start = start + width
    first = body.size(start)
    guards = (COL_GUARD,)
    if body.size(widths[k]) != body.size(widths[0]):  # one name (or literal): equal always
        guards += (f"(cols < {body.size(widths[k])})",)
    expr = "cols" if first == "0" else f"{first} + cols"
    if not span:
        return Ix(expr, guards)
    return Ix(expr, guards, span=(expr, first, body.size(start + widths[k]), "cols"))


def _store_pieces(body: KernelBody, name: str, found: CatOfPieces, at: tuple, widths) -> None:
    """The output is the cat: each piece computed at the tile's index, stored at its columns."""
    values = [body.value(p, at + ((ZERO,) if found.stacked else ())) for p in found.pieces]
    body.comment_source(found.cat)
    cat_shape, out_shape = shape_of(found.cat), shape_of(found.output)
    narrowed = dtype_of(found.output)
    if narrowed in (torch.bfloat16, torch.float16) and dtype_of(found.cat) != narrowed:
        # The cast between the cat and the output, rounded as the pointwise lowering rounds it
        # (the interpreter's plain cast to bf16 does not round to nearest).
        values = [body.rounded(value, narrowed) for value in values]
    for k, value in enumerate(values):
        if found.stacked:
            target = at + (Ix(str(k)),)
        else:
            target = at[:-1] + (_piece_column(body, widths, k, span=False),)
        if not _same_shape(cat_shape, out_shape):
            target = reshape_index(body, out_shape, cat_shape, target)
        store(body, name, found.output, target, value)


def _store_by_piece(body: KernelBody, name: str, found: CatOfPieces, at: tuple, widths) -> None:
    """The cat feeds more compute and has the output's shape: the whole output computed at
    piece k's columns, k by k. At those columns the cat is piece k itself (`Ix.span`), and what
    the pieces share (x's halves, cos, sin) is loaded once by the lowering's memo."""
    for k in range(len(found.pieces)):
        target = at[:-1] + (_piece_column(body, widths, k, span=True),)
        store(body, name, found.output, target, body.value(found.output, target))


def _same_shape(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(SizeNames.same(x, y) for x, y in zip(a, b))


def _product(sizes: SizeNames, shape: tuple) -> str:
    terms = [sizes.python(s) for s in shape]
    return " * ".join(t if t.isidentifier() or t.isdigit() else f"({t})" for t in terms) or "1"
