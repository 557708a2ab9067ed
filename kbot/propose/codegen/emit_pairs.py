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
stand (the store rounds); anything else is refused and the pointwise variants stand.
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
    if node.op != "call_function" or node.target != aten.cat.default:
        raise Unsupported(f"pairs: {output.name} is not a cat up to reshapes and a cast")
    rank = len(shape_of(node))
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", 0)
    if rank < 2 or dim % rank != rank - 1:
        raise Unsupported(f"pairs: {node.name} joins dim {dim} of {rank}, not the last of 2+")
    pieces = tuple(p for p in node.args[0] if _numel_hint(p) > 0)
    sizes = SizeNames(traced)
    width = shape_of(pieces[0])[-1] if pieces else 0
    if len(pieces) < 2 or not all(sizes.equal(shape_of(p)[-1], width) for p in pieces):
        raise Unsupported(f"pairs: {node.name}'s pieces are not of one width")
    stacked = sizes.equal(width, 1)
    tile = tuple(shape_of(pieces[0])[:-1] if stacked else shape_of(pieces[0]))
    if not tile:
        raise Unsupported(f"pairs: {node.name} stacks scalars")
    return CatOfPieces(output, node, pieces, stacked, tile)


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
    shape, stacked = found.tile, found.stacked
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
    values = [body.value(piece, at + ((ZERO,) if stacked else ())) for piece in found.pieces]
    body.comment_source(found.cat)
    cat_shape, out_shape = shape_of(found.cat), shape_of(found.output)
    narrowed = dtype_of(found.output)
    if narrowed in (torch.bfloat16, torch.float16) and dtype_of(found.cat) != narrowed:
        # The cast between the cat and the output, rounded as the pointwise lowering rounds it
        # (the interpreter's plain cast to bf16 does not round to nearest).
        values = [body.rounded(value, narrowed) for value in values]
    for k, value in enumerate(values):
        if stacked:
            target = at + (Ix(str(k)),)
        else:
            start = body.size(size_expr(shape[-1]) * k)
            column = Ix("cols" if start == "0" else f"{start} + cols", (COL_GUARD,))
            target = at[:-1] + (column,)
        if not _same_shape(cat_shape, out_shape):
            target = reshape_index(body, out_shape, cat_shape, target)
        store(body, name, found.output, target, value)
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
    launcher.append(f"n_half = {sizes.python(shape[-1])}")
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


def _same_shape(a: tuple, b: tuple) -> bool:
    return len(a) == len(b) and all(SizeNames.same(x, y) for x, y in zip(a, b))


def _product(sizes: SizeNames, shape: tuple) -> str:
    terms = [sizes.python(s) for s in shape]
    return " * ".join(t if t.isidentifier() or t.isdigit() else f"({t})" for t in terms) or "1"
