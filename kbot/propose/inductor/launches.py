"""One `kernel.run(...)` of inductor's `call()` as a `kernel[grid](...)` launch: the grid from
the grid type and the numel arguments, the autotuner's chosen constexprs as module constants
(so `tune` finds them), `num_warps` and `num_stages` from the captured config."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kbot.propose.inductor.kernels import KernelSource
from kbot.propose.inductor.records import LaunchConfig, Unsupported

FIXED_GRID = "FixedGrid"  # a template's grid, three sizes passed to its launch
GRIDS = ("Grid1D", "Grid2D", "Grid3D", "Grid2DWithYZOverflow", FIXED_GRID)
# CUDA's limit on a grid's y (and z) size; inductor spreads more y blocks over z
# (torch._inductor.runtime.triton_heuristics.get_max_y_grid).
MAX_Y_GRID = 65535


@dataclass(frozen=True)
class Renames:
    kernels: dict[str, str]  # inductor kernel name -> candidate kernel name
    single: bool  # one kernel: constants keep their own names (XBLOCK, R0_BLOCK)


def constant_name(param: str, index: int, renames: Renames) -> str:
    return param if renames.single else f"{param}_{index}"


def launch_lines(
    call: ast.Call,
    kernel: str,
    kernels: dict[str, KernelSource],
    configs: dict[str, LaunchConfig],
    rewriter: ast.NodeTransformer,
    renames: Renames,
) -> tuple[list[str], list[tuple[str, int, str]]]:
    source = kernels.get(kernel)
    config = configs.get(kernel)
    if source is None:
        raise Unsupported(f"call() runs {kernel}, which the output code does not define")
    if config is None:
        raise Unsupported(f"no launch config was captured for {kernel}")
    if config.grid_type not in GRIDS:
        raise Unsupported(f"{kernel} uses grid type {config.grid_type or 'unknown'}")
    extra = [k.arg for k in call.keywords if k.arg not in ("stream", "grid")]
    if extra:
        raise Unsupported(f"{kernel}.run(...) passes {', '.join(map(str, extra))}")
    runtime = [p for p in source.params if p not in source.constexpr_params]
    fixed = []
    if config.grid_type == FIXED_GRID:
        # a template's launch: its runtime arguments, then the grid's three sizes
        if len(call.args) != len(runtime) + 3:
            raise Unsupported(
                f"{kernel}.run(...) passes {len(call.args)} args for {len(runtime)} "
                "parameters and a grid of three"
            )
        *arguments, x, y, z = call.args
        call = ast.Call(call.func, arguments, call.keywords)
        fixed = [ast.unparse(rewriter.visit(size)) for size in (x, y, z)]
    if len(call.args) != len(runtime):
        raise Unsupported(
            f"{kernel}.run(...) passes {len(call.args)} args for {len(runtime)} parameters"
        )
    args = [ast.unparse(rewriter.visit(a)) for a in call.args]
    by_name = dict(zip(runtime, args))
    chosen = dict(config.kwargs)
    index = list(renames.kernels).index(kernel)
    keywords, tunables = [], []
    for param in source.constexpr_params:
        if param not in chosen:
            raise Unsupported(f"the captured config of {kernel} does not set {param}")
        constant = constant_name(param, index, renames)
        tunables.append((constant, int(chosen[param]), renames.kernels[kernel]))
        keywords.append(f"{param}={constant}")
    axis = lambda numel, block: _grid_axis(by_name, numel, block, source, index, renames, kernel)  # noqa: E731
    grid = fixed or [axis("xnumel", "XBLOCK")]
    lines = []
    if config.grid_type in ("Grid2D", "Grid3D"):
        grid.append(axis("ynumel", "YBLOCK"))
    if config.grid_type == "Grid3D":
        grid.append(axis("znumel", "ZBLOCK"))
    if config.grid_type == "Grid2DWithYZOverflow":
        # More y blocks than CUDA allows on y: the kernel reads its y block as
        # program_id(1) + program_id(2) * num_programs(1), so they are spread over y and z.
        lines += [
            f"y_blocks = {axis('ynumel', 'YBLOCK')}",
            f"z_blocks = max(1, triton.cdiv(y_blocks, {MAX_Y_GRID}))",
        ]
        grid += ["triton.cdiv(y_blocks, z_blocks)", "z_blocks"]
    grid += ["1"] * (3 - len(grid))
    keywords += [f"num_warps={config.num_warps}", f"num_stages={config.num_stages}"]
    name = renames.kernels[kernel]
    return [
        *lines,
        f"grid = ({', '.join(grid)})",
        f"{name}[grid]({', '.join(args + keywords)})",
    ], tunables


def _grid_axis(
    by_name: dict[str, str],
    numel: str,
    block: str,
    source: KernelSource,
    index: int,
    renames: Renames,
    kernel: str,
) -> str:
    if numel not in by_name:
        raise Unsupported(f"{kernel} takes no {numel} argument to size its grid")
    if block not in source.constexpr_params:
        return by_name[numel]  # the block is fixed at 1 inside the kernel
    return f"triton.cdiv({by_name[numel]}, {constant_name(block, index, renames)})"
