"""Offline instruction counts of codegen's kernels for sm_90 (no GPU needed).

Compiles the first pointwise codegen variant of each pointwise bench problem, and its pairs
variant where codegen offers one (a cat of equal pieces: emit_pairs.py), (the row-reduction, tiled and GEMM
schedules size their blocks at launch and are left out) with Triton's own compiler for
an sm_90 target, with the specialisations a launch on real tensors gets (unit inner strides,
16-divisible pointers, outer strides and widths), and counts the PTX instructions per element
a thread handles, and the global loads and stores by width. A proxy for where a kernel spends
issue slots, not a timing: the H200 decides (bench/optimize_suite.py).

    python bench/ptx_counts.py [--ops rope_neox,silu_and_mul] [--out bench/results/ptx.md]
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "bench" / "problems"
# Per parameter name: what a launch on contiguous tensors of the bench problems specialises.
POINTER_TYPES = {"positions_ptr": "*i64", "cos_sin_cache_ptr": "*fp32"}
DIVISIBLE = re.compile(r"_ptr$|_stride0$|^n_cols$|^n_half$|^n_elements$|^size_\d+$|_size1$")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="", help="comma-separated problem names (default: all)")
    parser.add_argument("--out", type=Path, default=None, help="also write the table here")
    args = parser.parse_args()
    os.environ["TRITON_INTERPRET"] = "0"  # @triton.jit must build compilable kernels
    sys.path.insert(0, str(ROOT))
    import triton

    from kbot.problem import load_problem
    from kbot.problem.runtime import import_file
    from kbot.propose.codegen import generate

    names = [n for n in args.ops.split(",") if n] or sorted(p.stem for p in PROBLEMS.glob("*.py"))
    import datetime

    import torch

    today = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    command = "python bench/ptx_counts.py" + (f" --ops {args.ops}" if args.ops else "")
    lines = [
        "# Offline PTX counts of codegen's pointwise kernels (sm_90, no GPU)",
        "",
        f"- date: {today}; compiled on a CPU machine, nothing ran on a GPU",
        f"- torch {torch.__version__}, Triton {triton.__version__}, target sm_90 (32 lanes)",
        f"- command: `{command}`",
        "",
        "Instructions are PTX lines (ptxas schedules and may fold some); a proxy for issue cost,",
        "not a timing.",
        "",
        "| op | variant | kernel | elements a thread | PTX instructions | per element | "
        "global loads | global stores |",
        "|---|---|---|---|---|---|---|---|",
    ]
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            candidates = generate(load_problem(PROBLEMS / f"{name}.py"))
            if candidates[0].params.get("schedule") != "pointwise":
                continue
            # The first pointwise variant, and the pairs schedule's prefill tile where it is
            # offered (codegen's first variant there).
            pairs = [c for c in candidates if "pairs" in c.params and "decode" not in c.params]
            pointwise = [c for c in candidates if "pairs" not in c.params]
            for k, candidate in enumerate([*pointwise[:1], *pairs[:1]]):
                path = Path(scratch) / f"{name}_candidate_{k}.py"
                path.write_text(candidate.source)
                module = import_file(path, prefix="ptx_counts")
                for kernel_name in re.findall(r"^def (_\w+_kernel)\(", candidate.source, re.M):
                    row = _count(
                        triton, getattr(module, kernel_name), _params(candidate.params, kernel_name)
                    )
                    label = candidate.note.split(": ", 1)[1]
                    cells = " | ".join(row)
                    lines.append(f"| {name} | {label} | `{kernel_name}` | {cells} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


def _params(params: dict, kernel_name: str) -> dict:
    """The launch parameters of one kernel of a candidate: a flat candidate (emit_flat.py) has
    its flat kernel's, and its row kernel's (the fallback for strided inputs) under
    `strided`."""
    if "flat_block" not in params:
        return params
    if kernel_name.endswith("_flat_kernel"):
        return {"flat_block": params["flat_block"], "num_warps": params["flat_num_warps"]}
    return params["strided"]


def _count(triton, kernel, params: dict) -> list[str]:
    """[elements a thread, instructions, per element, loads, stores] of one pointwise kernel."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    names = kernel.arg_names
    if "flat_block" in params:  # one program's BLOCK consecutive elements
        block, warps = int(params["flat_block"]), int(params["num_warps"])
        constexprs = {"BLOCK": block, "BITWISE_ROUNDING": False}
        params = {**params, "rows_per_program": 1}
    else:
        block, warps = int(params["block_n"]), int(params["num_warps"])
        constexprs = {"ROWS": params["rows_per_program"], "BLOCK_N": block}
        constexprs["BITWISE_ROUNDING"] = False
    constexprs.update({"BLOCK_M": params["block_m"]} if "BLOCK_M" in names else {})
    constexprs.update({"ON_GPU": True} if "ON_GPU" in names else {})
    constexprs.update({n: 1 for n in names if n.endswith("_stride1")})
    signature = {n: POINTER_TYPES.get(n, "*bf16") if n.endswith("_ptr") else "i32" for n in names}
    signature.update({n: "constexpr" for n in constexprs})
    attrs = {
        (i,): [["tt.divisibility", 16]]
        for i, n in enumerate(names)
        if n not in constexprs and DIVISIBLE.search(n)
    }
    compiled = triton.compile(
        ASTSource(fn=kernel, signature=signature, constexprs=constexprs, attrs=attrs),
        target=GPUTarget("cuda", 90, 32),
        options={"num_warps": warps, "enable_fp_fusion": True},
    )
    instructions = [
        line.split(None, 1)[1] if line.startswith("@") else line  # drop a predicate guard
        for line in (raw.strip() for raw in compiled.asm["ptx"].splitlines())
        if line and not line.startswith(("//", ".", "{", "}")) and not line.endswith(":")
    ]
    instructions = [i for i in instructions if not i.startswith("ret")]
    # The pairs schedule writes each of its pieces from every tile element.
    tile = params["rows_per_program"] * params.get("block_m", 1) * block * params.get("pairs", 1)
    per_thread = tile // (32 * warps)
    memory = collections.Counter(
        i.split()[0].removesuffix(";") for i in instructions if re.match(r"(ld|st)\.global", i)
    )
    loads = ", ".join(f"{n} x {k[10:]}" for k, n in sorted(memory.items()) if k.startswith("ld."))
    stores = ", ".join(f"{n} x {k[10:]}" for k, n in sorted(memory.items()) if k.startswith("st."))
    count = len(instructions)
    return [str(per_thread), str(count), f"{count / per_thread:.1f}", loads, stores]


if __name__ == "__main__":
    raise SystemExit(main())
