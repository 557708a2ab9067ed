"""The row/column tiling shared by the pointwise and reduction kernels.

The iteration space is viewed as rows x columns: columns run along `col_dim` (the last dim, or
the reduced one), rows are every other dim flattened. A program owns `ROWS` rows; its row ids
are int64 because `row * stride` passes 2**31 at prefill sizes (16384 x 128256 logits).
"""

from __future__ import annotations

from kbot.propose.codegen.classify import OutputKind, Schedule
from kbot.propose.codegen.lowering import ZERO, Ix, KernelBody, shape_of
from kbot.propose.codegen.ops import TL_DTYPES, dtype_of
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.views import reshape_index

ROW_GUARD = "row_mask"
COL_GUARD = "col_mask"


def row_dims(schedule: Schedule) -> list[int]:
    return [d for d in range(len(schedule.iter_shape)) if d not in schedule.col_dims]


def launcher_extent_lines(schedule: Schedule, sizes: SizeNames) -> list[str]:
    dims = row_dims(schedule)
    rows = " * ".join(_group(sizes.python(schedule.iter_shape[d])) for d in dims) or "1"
    cols = " * ".join(_group(sizes.python(schedule.iter_shape[d])) for d in schedule.col_dims)
    return [f"n_rows = {rows}", f"n_cols = {cols}"]


def _group(expr: str) -> str:
    return expr if expr.isidentifier() or expr.isdigit() else f"({expr})"


def emit_row_indices(
    body: KernelBody, schedule: Schedule, innermost_row_dim: int | None = None
) -> dict[int, Ix]:
    """Program's rows, and each row dim's index decomposed from the flat row id.
    `innermost_row_dim`: that dim varies fastest along the rows (say channels, so that a
    program's rows are neighbouring channels of a channels-last tensor); any order of the row
    dims covers the same rows, since every index is then used through its dim's stride."""
    body.reserve("rows", "row_mask", "cols", "col_mask", "mask", "n_rows", "n_cols")
    body.emit("# int64 row ids: row * stride overflows int32 at prefill sizes.")
    body.emit("row_start = tl.program_id(0).to(tl.int64) * ROWS")
    body.emit("rows = row_start + tl.arange(0, ROWS)[:, None]")
    body.emit("row_mask = rows < n_rows")
    dims = row_dims(schedule)
    if innermost_row_dim is not None and innermost_row_dim in dims:
        dims = [d for d in dims if d != innermost_row_dim] + [innermost_row_dim]
        body.emit(f"# Rows in ({', '.join(f'dim {d}' for d in dims)}) order, the last fastest.")
    return split_rows(body, schedule.iter_shape, dims)


def decompose_rows(body: KernelBody, schedule: Schedule) -> dict[int, Ix]:
    """Each row dim's index from the flat int64 row id `rows` (already defined)."""
    return split_rows(body, schedule.iter_shape, row_dims(schedule))


def split_rows(body: KernelBody, shape: tuple, dims: list[int]) -> dict[int, Ix]:
    """The index along each of `dims` (of `shape`, outermost first) of the flat row id `rows`."""
    index: dict[int, Ix] = {}
    for k, dim in enumerate(dims):
        inner = [body.size(shape[d]) for d in dims[k + 1 :]]
        expr = "rows"
        if inner:
            expr = f"rows // ({' * '.join(inner)})"
        if k > 0:
            expr = f"({expr}) % {body.size(shape[dim])}"
        if expr == "rows":
            index[dim] = Ix("rows", (ROW_GUARD,), wide=True)
        else:
            name = body.fresh(f"i{dim}")
            body.emit(f"{name} = {expr}")
            index[dim] = Ix(name, (ROW_GUARD,), wide=True)
    return index


def full_index(
    schedule: Schedule, rows: dict[int, Ix], body: KernelBody | None = None
) -> tuple[Ix, ...]:
    """Every dim's index of the tile's elements. Columns over several reduced dims are the flat
    column id split into one digit per dim (the sizes are kernel arguments, so this needs
    `body`); the offsets then use each dim's stride, so any layout is read correctly."""
    cols = {schedule.col_dim: Ix("cols", (COL_GUARD,))}
    if len(schedule.col_dims) > 1:
        assert body is not None, "a reduction over several dims needs the kernel body"
        cols = {}
        dims = schedule.col_dims
        for k, dim in enumerate(dims):
            inner = [body.size(schedule.iter_shape[d]) for d in dims[k + 1 :]]
            expr = f"cols // ({' * '.join(inner)})" if inner else "cols"
            if k > 0:
                expr = f"({expr}) % {body.size(schedule.iter_shape[dim])}"
            cols[dim] = Ix(expr, (COL_GUARD,))
    return tuple(cols[d] if d in cols else rows[d] for d in range(len(schedule.iter_shape)))


def row_index(schedule: Schedule, rows: dict[int, Ix], shape: tuple) -> tuple[Ix, ...]:
    """Index of a per-row value: keepdim shapes read 0 along the reduced dims."""
    if len(shape) == len(schedule.iter_shape):
        return tuple(ZERO if d in schedule.col_dims else rows[d] for d in range(len(shape)))
    return tuple(rows[d] for d in row_dims(schedule))


def output_names(schedule: Schedule) -> list[str]:
    if schedule.out_names:
        return list(schedule.out_names)
    if len(schedule.outputs) == 1:
        return ["out"]
    return [f"out{k}" for k in range(len(schedule.outputs))]


def register_outputs(body: KernelBody, schedule: Schedule) -> list[str]:
    names = output_names(schedule)
    for name, (node, _) in zip(names, schedule.outputs):
        body.tensor_arg(f"output:{name}", name, len(shape_of(node)))
    return names


def store(body: KernelBody, arg: str, node, idx: tuple[Ix, ...], value: str) -> None:
    offset, mask = body.offset(arg, idx)
    dtype = TL_DTYPES[dtype_of(node)]
    pointer = f"{arg}_ptr + {offset}" if offset != "0" else f"{arg}_ptr"
    if not idx:
        # A 0-dim result (a full reduction) of the program's one row: a [ROWS, 1] pointer
        # block, masked to the real row, since a block cannot be stored through a scalar.
        pointer, mask = f"{arg}_ptr + rows * 0", ROW_GUARD
    mask_arg = f", mask={mask}" if mask else ""
    body.emit(f"tl.store({pointer}, ({value}).to({dtype}){mask_arg})")


def store_outputs(
    body: KernelBody,
    schedule: Schedule,
    names: list[str],
    kind: OutputKind,
    full: tuple[Ix, ...],
    rows: dict[int, Ix],
) -> None:
    for name, (node, out_kind) in zip(names, schedule.outputs):
        if out_kind != kind:
            continue
        shape = shape_of(node)
        if kind == OutputKind.ROW:
            idx = row_index(schedule, rows, shape)
        elif len(shape) == len(schedule.iter_shape) and all(
            SizeNames.same(a, b) for a, b in zip(shape, schedule.iter_shape)
        ):
            idx = full
        else:  # a full output of another shape (GroupNorm's): the iteration index reshaped
            idx = reshape_index(body, shape, schedule.iter_shape, full)
        value = body.value(node, idx)
        store(body, name, node, idx, value)
