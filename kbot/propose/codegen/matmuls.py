"""Matmuls and convolutions in a traced graph: which the problem declares extern, their extern
op names, and whether the Triton GEMM template can hold the epilogue (`matmul_schedule`)."""

from __future__ import annotations

import torch
import torch.fx

from kbot.propose.codegen.lowering import REDUCTIONS, VIEW_OPS, shape_of
from kbot.propose.codegen.schedule import OutputKind, Schedule, ScheduleKind
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.trace import TracedProblem, Unsupported

aten = torch.ops.aten

MATMULS = {aten.mm.default, aten.bmm.default}
CONVOLUTIONS = {aten.convolution.default}

_VIEW_LIKE = VIEW_OPS | {aten.split_with_sizes.default, aten.split.Tensor}
FLAT_VIEWS = {aten.view.default, aten._unsafe_view.default, aten.reshape.default}


def conv_name(conv: torch.fx.Node) -> str:
    """The extern op name of an aten.convolution: conv2d, or conv_transpose3d when transposed."""
    rank = len(shape_of(conv)) - 2
    transposed = len(conv.args) > 6 and bool(conv.args[6])
    return f"conv_transpose{rank}d" if transposed else f"conv{rank}d"


def extern_declared(matmul: torch.fx.Node, extern_ops: tuple[str, ...]) -> bool:
    if matmul.target == aten.mm.default:
        return bool({"mm", "matmul", "linear", "addmm"} & set(extern_ops))
    if matmul.target == aten.bmm.default:
        return bool({"bmm", "matmul"} & set(extern_ops))
    return conv_name(matmul) in extern_ops


def aten_name(node: torch.fx.Node) -> str:
    return str(node.target).replace("aten.", "").split(".")[0]


def matmul_schedule(traced: TracedProblem, matmul: torch.fx.Node) -> Schedule:
    """The GEMM template keeps the accumulator in registers, so every path from the matmul to
    an output must be elementwise on the same flat (rows, cols) positions."""
    shape = shape_of(traced.outputs[0])
    for out in traced.outputs:
        if not SizeNames.same_shape(shape_of(out), shape):
            raise Unsupported("matmul epilogue outputs of different shapes")
    mm_shape = shape_of(matmul)
    if not SizeNames.same(shape[-1], mm_shape[-1]):
        raise Unsupported("the epilogue changes the matmul's columns")
    stack = [u for u in matmul.users]
    seen: set[torch.fx.Node] = set()
    while stack:
        node = stack.pop()
        if node in seen or node.op == "output":
            continue
        seen.add(node)
        if node.target in REDUCTIONS or (
            node.target in _VIEW_LIKE and node.target not in FLAT_VIEWS
        ):
            raise Unsupported(f"the matmul result goes through {aten_name(node)}, not elementwise")
        if not SizeNames.same_shape(shape_of(node), shape) and not SizeNames.same_shape(
            shape_of(node), mm_shape
        ):
            raise Unsupported(f"the matmul result is broadcast by {aten_name(node)}")
        stack += list(node.users)
    return Schedule(
        ScheduleKind.MATMUL_EPILOGUE,
        iter_shape=shape,
        col_dim=len(shape) - 1,
        outputs=tuple((o, OutputKind.FULL) for o in traced.outputs),
        matmul=matmul,
    )
