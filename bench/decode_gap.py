"""Where torch.compile's own kernel loses 0.1-0.2 µs at decode when kbot runs it (GPU only).

On the H100 (bench/results/optimize.md, 2026-12-06 11:03 UTC) gelu_tanh_and_mul's and
swiglu_clamped's winners were max-autotune's kernels, extracted by the inductor proposer from a
compile with the token dim dynamic at the largest case, and they measured 1.70 and 1.25 µs at
T=1 where torch.compile's graph took 1.50 and 1.18. The baseline compiles each case with static
shapes. This script times, per op and case, in one process and by one clock (CUDA-graph
replays, triton.testing.do_bench_cudagraph, median of --rep ms of replays):

    eager                      the problem's Model
    compile static             torch.compile(dynamic=False) compiled at this case (the baseline)
    compile dynamic            the varying dims marked dynamic, compiled once at the largest
                               case as the inductor proposer captures (dynamo still
                               specialises a size of 1: T=1 recompiles)
    kbot largest / smallest    the inductor proposer's extractions (capture_problem at the
                               largest and the smallest clean case, then extract), run as
                               candidate modules

so a gap that torch.compile's own dynamic compile shows too is the dynamic shapes', and one only
the extraction shows is the extraction's. One --mode a run (default or max-autotune).

With --evaluator, four more columns time the static compile and the largest case's extraction
by the evaluator's own method (kbot.evaluate.timing: one graph over rotated input copies, L2
flushed before each replay, the four interleaved until stable), once with only the first call's
outputs kept (the graph's pool then reuses one output buffer for the other calls: how the
evaluator captured its baselines before 2026-12-06 19:00) and once with every call's outputs
kept (how it captures a candidate, and its baselines since).

    python bench/decode_gap.py --ops gelu_tanh_and_mul,swiglu_clamped --out $OUT/decode_gap.md
"""

from __future__ import annotations

import argparse
import datetime
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "bench" / "problems"
sys.path.insert(0, str(ROOT))

COLUMNS = ("eager", "compile static", "compile dynamic", "kbot largest", "kbot smallest")
METHOD_COLUMNS = (
    "ev compile reused", "ev compile kept", "ev kbot reused", "ev kbot kept",
)  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="gelu_tanh_and_mul,swiglu_clamped")
    parser.add_argument("--mode", default="max-autotune", choices=("default", "max-autotune"))
    parser.add_argument("--max-rows", type=int, default=64, help="cases up to this T only")
    parser.add_argument("--rep", type=int, default=200, help="ms of replays per measurement")
    parser.add_argument(
        "--evaluator", action="store_true",
        help="also time by the evaluator's method, outputs reused and kept (ev columns)",
    )  # fmt: skip
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("decode_gap.py needs a GPU", file=sys.stderr)
        return 2
    rows = (
        (op, case, row)
        for op in [o for o in args.ops.split(",") if o]
        for case, row in op_rows(
            PROBLEMS / f"{op}.py", args.mode, args.max_rows, args.rep, args.evaluator
        )
    )
    title = f"torch.compile's kernel at decode: {args.mode} mode"
    notes = ["CUDA-graph medians in µs (do_bench_cudagraph, one process):"]
    if args.evaluator:
        notes.append("ev: the evaluator's method, outputs of the other copies reused or kept.")
    columns = COLUMNS + (METHOD_COLUMNS if args.evaluator else ())
    write_table(args.out, title, notes, columns, rows)
    return 0


def write_table(out: Path, title: str, notes: list[str], columns, rows) -> None:
    """A markdown table of µs per op and case, with the date, GPU and versions, each row
    printed as it comes (a command stopped at its limit still shows the rows it measured)."""
    import torch
    import triton

    lines = [
        f"# {title}",
        "",
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, "
        f"{torch.cuda.get_device_name()}, torch {torch.__version__}, triton {triton.__version__}",
        "",
        *notes,
        "",
        f"| op | case | {' | '.join(columns)} |",
        "|---|---|" + "---|" * len(columns),
    ]
    for op, case, row in rows:
        cells = " | ".join(row.get(c, "—") for c in columns)
        lines.append(f"| {op} | {case} | {cells} |")
        print(lines[-1], flush=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"wrote {out}")


def op_rows(path: Path, mode: str, max_rows: int, rep: int, evaluator: bool = False):
    """(case label, {column: µs as text}) for each case of the problem up to `max_rows`."""
    import torch
    from torch._inductor import config as inductor_config

    from kbot.problem import load_problem
    from kbot.problem.runtime import build_on, case_inputs, import_file, init_inputs
    from kbot.propose.inductor.capture import (
        COMPILE_MODES,
        _no_duck_sizing,
        _shapes,
        capture_case,
        capture_problem,
        varying_dims,
    )
    from kbot.propose.inductor.extract import extract
    from kbot.propose.inductor.records import capture_from_json

    spec = load_problem(path)
    module = import_file(path, prefix="decode_gap")
    init = init_inputs(module)
    model = build_on("cuda", lambda: module.Model(*init), seed=0).cuda().eval()
    shapes = _shapes(module, spec.cases)
    dims = varying_dims(shapes)
    largest = capture_case(shapes, dims)
    options = COMPILE_MODES[mode]

    def inputs_of(case: dict) -> list:
        torch.manual_seed(0)
        return [v.cuda() if isinstance(v, torch.Tensor) else v for v in case_inputs(module, case)]

    extracted = {}
    for at in ("largest", "smallest"):
        meta = capture_problem(path, mode, at)
        if meta.get("same_case"):
            continue
        source = extract(capture_from_json(meta.pop("code"), meta), spec)
        folder = Path(tempfile.mkdtemp(prefix="decode_gap_"))
        (folder / "candidate.py").write_text(source)
        candidate = import_file(folder / "candidate.py", prefix="decode_gap_candidate")
        new = build_on("cuda", lambda c=candidate: c.ModelNew(*init), seed=0).cuda().eval()
        new.load_state_dict(model.state_dict(), strict=False)
        extracted[f"kbot {at}"] = new

    decode = [
        (index, case)
        for index, case in enumerate(spec.cases)
        if shapes[index] and shapes[index][0] and shapes[index][0][0] <= max_rows
    ]
    rows = {index: {} for index, _ in decode}
    for index, case in decode:
        inputs = inputs_of(case)
        rows[index]["eager"] = graph_us(lambda x=inputs: model(*x), rep)
        for name, new in extracted.items():
            rows[index][name] = graph_us(lambda new=new, x=inputs: new(*x), rep)
    # Dynamo caches by the forward's code, so each compile below starts from a reset.
    with torch.no_grad(), _no_duck_sizing(), inductor_config.patch(options):
        torch._dynamo.reset()
        dynamic = torch.compile(model, dynamic=False)
        warm = inputs_of(spec.cases[largest])
        for i, dim in sorted(dims):
            torch._dynamo.mark_dynamic(warm[i], dim)
        dynamic(*warm)
        for index, case in decode:
            inputs = inputs_of(case)
            rows[index]["compile dynamic"] = graph_us(lambda x=inputs: dynamic(*x), rep)
        for index, case in decode:
            torch._dynamo.reset()
            static = torch.compile(model, dynamic=False)
            inputs = inputs_of(case)
            rows[index]["compile static"] = graph_us(lambda f=static, x=inputs: f(*x), rep)
            if evaluator and "kbot largest" in extracted:
                rows[index].update(
                    evaluator_us({"compile": static, "kbot": extracted["kbot largest"]}, inputs)
                )
        torch._dynamo.reset()
    for index, case in decode:
        yield ", ".join(f"{k}={v}" for k, v in case.items()), rows[index]


def evaluator_us(callables: dict, inputs: list, budget_s: float = 3.0) -> dict[str, str]:
    """µs per call as text by the evaluator's method, each callable twice: "ev NAME reused"
    (only the first call's outputs kept during capture) and "ev NAME kept" (every call's)."""
    import torch

    from kbot.evaluate.roofline import tensor_bytes
    from kbot.evaluate.timing import Implementation, capture, l2_flush_buffer, measure, to_stat
    from kbot.evaluate.timing_job import _all_copies, _rotated_copies

    flush = l2_flush_buffer(inputs[0].device)
    with torch.no_grad():
        first = callables["compile"](*inputs)
    written = tensor_bytes(list(first) if isinstance(first, (tuple, list)) else [first])
    copies = _rotated_copies(inputs, flush.numel(), written)

    def reused(f):
        def run_all():
            out = f(*copies[0])
            for copy in copies[1:]:
                f(*copy)
            return out

        return run_all

    impls = []
    for name, f in callables.items():
        kept = _all_copies(lambda c, f=f: f(*c), copies)  # as the evaluator captures
        for how, run_all in (("reused", reused(f)), ("kept", kept)):
            graph, outputs = capture(run_all)
            calls = [lambda f=f, c=c: f(*c) for c in copies]
            impls.append(Implementation(f"ev {name} {how}", graph, calls, outputs, len(copies)))
    measure(impls, flush, budget_s)
    return {i.name: f"{to_stat(i.graph_us).median_us:.2f}" for i in impls}


def graph_us(call, rep: int) -> str:
    """µs per call as text: the median of do_bench_cudagraph, compiled and warmed first."""
    import torch
    import triton

    with torch.no_grad():
        call()  # compile and warm outside the graph
        torch.cuda.synchronize()
        ms = triton.testing.do_bench_cudagraph(call, rep=rep)
    return f"{ms * 1000:.2f}"


if __name__ == "__main__":
    raise SystemExit(main())
