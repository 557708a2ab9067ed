"""Pointwise chains over contiguous tensors of one shape: one kernel over the flat element range.

Where every tensor the kernel reads has the output's shape (no broadcast operand, no view
between them) and is contiguous, element k of each sits at offset k. The ROWS x BLOCK_N tile
(emit_pointwise.py) then does work for nothing: it splits the flat row id into one index per
row dim (a `//` and a `%` each) and pads a narrow row to a power of two with masked lanes. On
the H100 its one-row-per-program variant took 60.9 ms against eager's 2.7 ms for the identity
epilogue of KernelBench level-1 problem 59's conv3d, a (16, 64, 254, 254, 10) fp32 result:
66M programs of 10 elements each. Compiled offline for sm_90 (a 3-column copy of that shape,
fp32), the flat kernel has 3.7 PTX instructions an element and 128-bit loads and stores; the row
kernel with rows packed 1024 to a program has 62.6 and 32-bit ones. Neither is timed here.

The launcher checks the inputs' contiguity at each call (the outputs are allocated contiguous)
and otherwise launches the row x column kernel, which reads any layout through its strides.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.fx

from kbot.propose.codegen.emitted import Emitted, Tunable
from kbot.propose.codegen.indexing import Ix, shape_of
from kbot.propose.codegen.kernel import KernelSource
from kbot.propose.codegen.lowering import IDENTITY_OPS, KernelBody
from kbot.propose.codegen.ops import supported
from kbot.propose.codegen.rows import launcher_extent_lines, register_outputs, store_outputs
from kbot.propose.codegen.schedule import OutputKind, Schedule, ScheduleKind
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.trace import TracedProblem

# Every dim's index of a flat kernel's elements: FlatBody turns it into the offset `offs`.
FLAT_INDEX = Ix("offs", ("mask",), wide=True)


def flat_fits(schedule: Schedule) -> bool:
    """Whether the flat kernel computes `schedule`: pointwise over two dims or more, every output
    of the iteration shape, every value an elementwise op of numbers, of 0-dim tensors (one value
    for all elements) and of tensors of the iteration shape (inputs or the extern result)."""
    if schedule.kind != ScheduleKind.POINTWISE or schedule.groups or schedule.stages:
        return False
    shape = tuple(schedule.iter_shape)
    if len(shape) < 2:
        return False  # over one dim the row kernel's columns are the flat index already
    outputs = [node for node, _ in schedule.outputs]
    if not all(SizeNames.same_shape(shape_of(node), shape) for node in outputs):
        return False
    leaves = {schedule.matmul} if schedule.extern else set()
    seen: set[torch.fx.Node] = set()
    stack = list(outputs)
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        if not isinstance(node.meta.get("val"), torch.Tensor):
            continue  # a size or a number: the kernel takes it as an argument
        if shape_of(node) and not SizeNames.same_shape(shape_of(node), shape):
            return False
        if node in leaves or node.op == "placeholder":
            continue
        if node.op != "call_function":
            return False
        if not (supported(node.target) or node.target in IDENTITY_OPS):
            return False  # a view, gather, pool, scan or arange reads other elements
        stack += node.all_input_nodes
    return True


class FlatBody(KernelBody):
    """A kernel body whose tensors are contiguous and of one shape: an element's offset is its
    flat index, so a tensor takes no strides."""

    def tensor_arg(self, key: str, arg_name: str, rank: int) -> str:
        return super().tensor_arg(key, arg_name, 0)

    def offset(self, arg: str, idx: tuple[Ix, ...]) -> tuple[str, str]:
        if not idx:
            return "0", ""  # a 0-dim tensor: one value for every element
        return FLAT_INDEX.expr, FLAT_INDEX.guards[0]


def emit_flat(
    traced: TracedProblem,
    schedule: Schedule,
    sizes: SizeNames,
    op: str,
    *,
    block: int,
    num_warps: int,
    strided: Callable[..., Emitted],  # a pointwise variant's emit: the fallback
    extern_args: dict[str, str] | None = None,
    gpu_math: bool = False,
) -> Emitted:
    """The flat kernel `_<op>_flat_kernel` and, for inputs that are not contiguous, `strided`'s
    row x column kernel `_<op>_kernel`; the launcher picks one at each call."""
    body = FlatBody(traced, sizes)
    body.extern_args.update(extern_args or {})
    body.gpu_math = gpu_math
    body.reserve("offs", "mask", "n_elements")
    names = register_outputs(body, schedule)
    body.emit("# int64 offsets: a tensor may hold 2**31 elements or more.")
    body.emit("offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)")
    body.emit("mask = offs < n_elements")
    index = (FLAT_INDEX,) * len(schedule.iter_shape)
    store_outputs(body, schedule, names, OutputKind.FULL, index, {})
    kernel = KernelSource(
        name=f"_{op}_flat_kernel",
        doc=f"{op} over contiguous tensors: BLOCK consecutive elements per program, fp32 math, "
        "cast on store.",
        body=body,
        leading=[("n_elements", "n_rows * n_cols")],
        constexprs=["BLOCK"],
    )
    launch = ["grid = (triton.cdiv(n_rows * n_cols, FLAT_BLOCK),)"]
    launch += kernel.launch("grid", {"BLOCK": "FLAT_BLOCK"}, "FLAT_NUM_WARPS")
    tunables = [
        Tunable("FLAT_BLOCK", block, "elements per program of the flat kernel"),
        Tunable("FLAT_NUM_WARPS", num_warps, "warps per program of the flat kernel"),
    ]
    params = {"schedule": schedule.kind.value, "flat_block": block, "flat_num_warps": num_warps}
    if gpu_math:
        params["gpu_math"] = True
    extent = launcher_extent_lines(schedule, sizes)
    inputs = [arg for key, (arg, _) in body.tensor_args.items() if not key.startswith("output:")]
    if not inputs:  # the outputs are constants: nothing to check
        return Emitted([kernel], extent + launch, tunables, params)
    fallback = strided(traced, schedule, sizes, op, extern_args, gpu_math=gpu_math)
    assert fallback.launcher[: len(extent)] == extent, "the row kernel's launcher changed"
    launcher = [
        *extent,
        "# Contiguous inputs (the outputs are allocated so): element k sits at offset k of each",
        "# tensor, so the flat kernel needs no index per dim; other layouts take the row kernel.",
        f"if {' and '.join(f'{arg}.is_contiguous()' for arg in inputs)}:",
        *[f"    {line}" for line in launch],
        "else:",
        *[f"    {line}" for line in fallback.launcher[len(extent) :]],
    ]
    params["strided"] = dict(fallback.params)
    return Emitted(
        [kernel, *fallback.kernels], launcher, tunables + fallback.tunables, params, fallback.note
    )
