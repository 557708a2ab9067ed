"""Pointwise chains: one kernel over a ROWS x BLOCK_N tile grid of the output.

Chunk/slice/strided views and broadcasts are index rewrites (see views.py), so a gated
activation reads each half of `x` once and writes the output once: one pass over memory.
"""

from __future__ import annotations

from kbot.propose.codegen.classify import OutputKind, Schedule
from kbot.propose.codegen.emitted import Emitted, Tunable
from kbot.propose.codegen.kernel import KernelSource
from kbot.propose.codegen.lowering import KernelBody
from kbot.propose.codegen.rows import (
    emit_row_indices,
    full_index,
    launcher_extent_lines,
    register_outputs,
    store_outputs,
)
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.trace import TracedProblem


def emit_pointwise(
    traced: TracedProblem,
    schedule: Schedule,
    sizes: SizeNames,
    op: str,
    *,
    rows: int,
    block_n: int,
    num_warps: int,
    extern_args: dict[str, str] | None = None,
    gpu_math: bool = False,
    innermost_row_dim: int | None = None,
) -> Emitted:
    """`innermost_row_dim`: see emit_row_indices (a channels-last input's channel dim)."""
    body = KernelBody(traced, sizes)
    body.extern_args.update(extern_args or {})
    body.gpu_math = gpu_math
    names = register_outputs(body, schedule)
    row_index = emit_row_indices(body, schedule, innermost_row_dim)
    body.emit("cols = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
    body.emit("col_mask = cols < n_cols")
    full = full_index(schedule, row_index, body)
    store_outputs(body, schedule, names, OutputKind.FULL, full, row_index)
    kernel = KernelSource(
        name=f"_{op}_kernel",
        doc=f"{op}: a ROWS x BLOCK_N tile of the output per program, fp32 math, cast on store.",
        body=body,
        leading=[("n_rows", "n_rows"), ("n_cols", "n_cols")],
        constexprs=["ROWS", "BLOCK_N"],
    )
    launcher = launcher_extent_lines(schedule, sizes)
    launcher.append("grid = (triton.cdiv(n_rows, ROWS_PER_PROGRAM), triton.cdiv(n_cols, BLOCK_N))")
    launcher += kernel.launch(
        "grid", {"ROWS": "ROWS_PER_PROGRAM", "BLOCK_N": "BLOCK_N"}, "NUM_WARPS"
    )
    tunables = [
        Tunable("ROWS_PER_PROGRAM", rows, "rows per program: >1 amortises a narrow row's launch"),
        Tunable("BLOCK_N", block_n, "columns per program: one vectorised sweep of a row"),
        Tunable(
            "NUM_WARPS", num_warps, "warps per program, scaled with ROWS_PER_PROGRAM x BLOCK_N"
        ),
    ]
    params = {
        "schedule": schedule.kind.value,
        "rows_per_program": rows,
        "block_n": block_n,
        "num_warps": num_warps,
    }
    if gpu_math:
        params["gpu_math"] = True
    return Emitted([kernel], launcher, tunables, params)
