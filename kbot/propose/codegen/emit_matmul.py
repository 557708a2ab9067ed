"""Matmul (mm/bmm, linear) and convolution with a fused epilogue, two ways:

- extern: the launcher calls the declared PyTorch op (cuBLAS/cuDNN) on views of the inputs, then
  one Triton kernel applies the whole epilogue (bias, activation, residual...) in one pass;
- template: a Triton GEMM (`tl.dot`, fp32 accumulator, grouped tile order for L2 reuse) whose
  epilogue runs on the accumulator in registers before the only store.
"""

from __future__ import annotations

import torch
import torch.fx

from kbot.propose.codegen.classify import OutputKind, Schedule
from kbot.propose.codegen.emitted import Emitted, Tunable
from kbot.propose.codegen.kernel import KernelSource
from kbot.propose.codegen.lowering import KernelBody, shape_of
from kbot.propose.codegen.ops import dtype_of
from kbot.propose.codegen.rows import decompose_rows, full_index, register_outputs, store_outputs
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.trace import TracedProblem, Unsupported

aten = torch.ops.aten

EXTERN_RESULT = "mm_out"


def view_source(
    node: object, traced: TracedProblem, sizes: SizeNames, loaded: dict[str, str] | None = None
) -> str:
    """A launcher expression rebuilding a matmul operand with views only (stages.py's
    REPLAYED_VIEWS) from the inputs or from `loaded` (node name -> a tensor the launcher
    already holds: an earlier extern op's result, a buffer a kernel wrote)."""
    if not isinstance(node, torch.fx.Node):
        raise Unsupported("a matmul operand that is not a tensor")
    if loaded and node.name in loaded:
        return loaded[node.name]
    if node.op == "placeholder":
        for graph_input in traced.inputs:
            if graph_input.node_name == node.name:
                return graph_input.arg_name
        raise Unsupported(f"graph input {node.name} has no launcher argument")
    inner = lambda: view_source(node.args[0], traced, sizes, loaded)  # noqa: E731
    if node.target == aten.permute.default:
        return f"{inner()}.permute({', '.join(str(d) for d in node.args[1])})"
    if node.target in (aten.view.default, aten._unsafe_view.default, aten.reshape.default):
        return f"{inner()}.reshape({', '.join(sizes.python(s) for s in shape_of(node))})"
    if node.target == aten.expand.default:
        return f"{inner()}.expand({', '.join(sizes.python(s) for s in shape_of(node))})"
    if node.target == aten.unsqueeze.default:
        return f"{inner()}.unsqueeze({node.args[1]})"
    if node.target in (aten.alias.default, aten.clone.default):
        return inner()
    raise Unsupported(f"a matmul operand computed by {node.target} (only views are replayed)")


def channels_last_conv(matmul: torch.fx.Node) -> bool:
    """A 2-d or 3-d convolution, transposed or not, which cuDNN may run faster in
    channels-last (its NHWC kernels; a transposed one is the backward-data convolution)."""
    if matmul.target != aten.convolution.default:
        return False
    return len(shape_of(matmul)) in (4, 5)


def extern_call(  # type: ignore[no-untyped-def]
    matmul: torch.fx.Node, extern_ops, traced, sizes, channels_last: bool = False, loaded=None
) -> str:
    """The launcher's call of the declared op. `channels_last`: a convolution's input and
    weight are made channels-last first (one copy each), so cuDNN runs its NHWC kernels and
    returns a channels-last result, which the epilogue reads by its strides and writes out in
    the reference's layout. `loaded`: operands the launcher already holds (view_source)."""

    def src(node: object) -> str:
        return view_source(node, traced, sizes, loaded)

    a, b = matmul.args[0], matmul.args[1]
    if matmul.target == aten.mm.default:
        if (
            "linear" in extern_ops
            and isinstance(b, torch.fx.Node)
            and b.target == aten.permute.default
            and list(b.args[1]) == [1, 0]
        ):
            weight = src(b.args[0])
            return f"torch.nn.functional.linear({src(a)}, {weight})"
        fn = "torch.mm" if "mm" in extern_ops else "torch.matmul"
        return f"{fn}({src(a)}, {src(b)})"
    if matmul.target == aten.bmm.default:
        fn = "torch.bmm" if "bmm" in extern_ops else "torch.matmul"
        return f"{fn}({src(a)}, {src(b)})"
    x, w, bias, stride, padding, dilation, transposed, output_padding, groups = matmul.args
    rank = len(shape_of(matmul)) - 2
    bias_src = src(bias) if bias is not None else "None"
    x_src, w_src = src(x), src(w)
    if channels_last and channels_last_conv(matmul):
        layout = "torch.channels_last" if rank == 2 else "torch.channels_last_3d"
        x_src = f"{x_src}.contiguous(memory_format={layout})"
        w_src = f"{w_src}.contiguous(memory_format={layout})"
    if transposed:  # torch's argument order differs: output_padding, groups, then dilation
        return (
            f"torch.nn.functional.conv_transpose{rank}d({x_src}, "
            f"{w_src}, {bias_src}, {list(stride)}, {list(padding)}, "
            f"{list(output_padding)}, {groups}, {list(dilation)})"
        )
    return (
        f"torch.nn.functional.conv{rank}d({x_src}, {w_src}, {bias_src}, {list(stride)}, "
        f"{list(padding)}, {list(dilation)}, {groups})"
    )


def emit_extern(
    traced: TracedProblem,
    schedule: Schedule,
    sizes: SizeNames,
    op: str,
    extern_ops: tuple[str, ...],
    epilogue,  # type: ignore[no-untyped-def]
    channels_last: bool = False,
) -> Emitted:
    """The declared op in the launcher, then the epilogue kernel reading its result."""
    call = extern_call(schedule.matmul, extern_ops, traced, sizes, channels_last)
    emitted = epilogue(traced, schedule, sizes, op, {schedule.matmul.name: EXTERN_RESULT})
    emitted.launcher[:0] = [
        f"# {schedule.matmul.target} runs as the declared extern op; the epilogue is fused below.",
        *(
            ["# In channels-last, as torch.compile lays out small convolutions; the epilogue",
             "# reads the result by its strides, a tile of channels at a time."]
            if channels_last
            else []
        ),
        f"{EXTERN_RESULT} = {call}",
    ]  # fmt: skip
    emitted.params["extern"] = True
    if channels_last:
        emitted.params["channels_last"] = True
    emitted.params["schedule"] = f"extern_{emitted.params['schedule']}"
    return emitted


def emit_gemm(
    traced: TracedProblem,
    schedule: Schedule,
    sizes: SizeNames,
    op: str,
    *,
    block_m: int,
    block_n: int,
    block_k: int,
    group_m: int,
    num_warps: int,
    num_stages: int,
) -> Emitted:
    matmul = schedule.matmul
    batched = matmul.target == aten.bmm.default
    in_dtype = dtype_of(matmul.args[0])
    body = KernelBody(traced, sizes)
    body.reserve("a", "b", "acc", "rm", "rn", "rk", "pid", "pid_m", "pid_n", "batch")
    names = register_outputs(body, schedule)
    b = "batch * a_stride0 + " if batched else ""
    bb = "batch * b_stride0 + " if batched else ""
    am, ak = ("a_stride1", "a_stride2") if batched else ("a_stride0", "a_stride1")
    bk, bn = ("b_stride1", "b_stride2") if batched else ("b_stride0", "b_stride1")
    body.emit(
        "# Grouped tile order: GROUP_M row-tiles share B's column tiles while they sit in L2."
    )
    body.emit("pid = tl.program_id(0)")
    body.emit("tiles_n = tl.cdiv(N, BLOCK_N)")
    body.emit("group = pid // (GROUP_M * tiles_n)")
    body.emit("first_m = group * GROUP_M")
    body.emit("group_rows = tl.minimum(tl.cdiv(M, BLOCK_M) - first_m, GROUP_M)")
    body.emit("pid_m = first_m + (pid % (GROUP_M * tiles_n)) % group_rows")
    body.emit("pid_n = (pid % (GROUP_M * tiles_n)) // group_rows")
    body.emit("batch = tl.program_id(1).to(tl.int64)" if batched else "batch = 0")
    body.emit("rm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)[:, None]")
    body.emit("rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)[None, :]")
    body.emit("acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)")
    body.emit("for k in range(0, K, BLOCK_K):")
    body.emit("    rk = k + tl.arange(0, BLOCK_K)")
    body.emit(
        f"    a = tl.load(a_ptr + {b}rm * {am} + rk[None, :] * {ak}, "
        "mask=(rm < M) & (rk[None, :] < K), other=0.0)"
    )
    body.emit(
        f"    b = tl.load(b_ptr + {bb}rk[:, None].to(tl.int64) * {bk} + rn * {bn}, "
        "mask=(rk[:, None] < K) & (rn < N), other=0.0)"
    )
    body.emit("    if DOT_IN_FP32:")
    body.emit("        # CPU interpreter: its bf16/fp16 tl.dot is wrong; fp32 is exact for them.")
    body.emit("        a = a.to(tl.float32)")
    body.emit("        b = b.to(tl.float32)")
    precision = ', input_precision="ieee"' if in_dtype == torch.float32 else ""
    body.emit(f"    acc += tl.dot(a, b{precision})")
    body.emit("# Epilogue on the fp32 accumulator, then the only store.")
    body.emit("rows = batch * M + rm")
    body.emit("row_mask = rm < M")
    body.emit("cols = rn")
    body.emit("col_mask = rn < N")
    body.reserve("rows", "row_mask", "cols", "col_mask")
    row_index = decompose_rows(body, schedule)
    full = full_index(schedule, row_index)
    if body.rounds(matmul):
        body.emit("# The reference's matmul returns its dtype: round like it before the epilogue.")
        body.emit(f"acc = {body.rounded('acc', dtype_of(matmul))}")
    body.precomputed[matmul] = "acc"
    store_outputs(body, schedule, names, OutputKind.FULL, full, row_index)
    # a and b come first: the launcher passes 2-d (3-d for bmm) views of the operands.
    kernel_body_args = dict(body.tensor_args)
    body.tensor_args.clear()
    rank = 3 if batched else 2
    body.tensor_args["operand:a"] = ("a", rank)
    body.tensor_args["operand:b"] = ("b", rank)
    body.tensor_args.update(kernel_body_args)
    kernel = KernelSource(
        name=f"_{op}_kernel",
        doc=f"{op}: a BLOCK_M x BLOCK_N tile of A @ B with the epilogue fused before the store.",
        body=body,
        leading=[("M", "M"), ("N", "N"), ("K", "K")],
        constexprs=["BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "DOT_IN_FP32"],
    )
    a_src = view_source(matmul.args[0], traced, sizes)
    b_src = view_source(matmul.args[1], traced, sizes)
    launcher = [
        f"a = {a_src}",
        f"b = {b_src}",
        "M, K = a.shape[-2], a.shape[-1]",
        "N = b.shape[-1]",
        "grid = (triton.cdiv(M, BLOCK_M) * triton.cdiv(N, BLOCK_N)"
        + (", a.shape[0])" if batched else ",)"),
    ]
    launcher += kernel.launch(
        "grid",
        {
            "BLOCK_M": "BLOCK_M",
            "BLOCK_N": "BLOCK_N",
            "BLOCK_K": "BLOCK_K",
            "GROUP_M": "GROUP_SIZE_M",
            "DOT_IN_FP32": "not a.is_cuda",
        },
        "NUM_WARPS",
    )
    launcher[-1:-1] = ["    num_stages=NUM_STAGES,"]
    tunables = [
        Tunable("BLOCK_M", block_m, "rows of C per program"),
        Tunable("BLOCK_N", block_n, "columns of C per program"),
        Tunable("BLOCK_K", block_k, "reduction step: one tl.dot per step"),
        Tunable("GROUP_SIZE_M", group_m, "row tiles per group in the L2-friendly order"),
        Tunable("NUM_WARPS", num_warps, "warps per program"),
        Tunable("NUM_STAGES", num_stages, "software-pipelining depth of the K loop"),
    ]
    params = {
        "schedule": schedule.kind.value,
        "block_m": block_m,
        "block_n": block_n,
        "block_k": block_k,
        "group_m": group_m,
        "num_warps": num_warps,
        "num_stages": num_stages,
    }
    return Emitted([kernel], launcher, tunables, params)
