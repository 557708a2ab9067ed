"""How many programs a wide row's split launch should use at decode sizes (GPU only).

codegen's decode launch for rows of 16k+ columns splits each row over SPLITS programs
(emit_split.py); since 2026-12-06 a row gets fewer once the launch passes TOTAL_SPLITS
programs in all. On the H100 softmax_64k's 128-way split was 2.09x torch.compile at T=1 and
0.88x at T=64 (8192 programs). This script times codegen's first candidate (the decode
composite) per decode case with DECODE_TOTAL_SPLITS set to each of --totals, beside eager and
a static torch.compile per case, in one process by one clock (CUDA-graph replays,
triton.testing.do_bench_cudagraph):

    python bench/split_count.py --ops softmax_64k,log_softmax_50k --out $OUT/split_count.md
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "bench" / "problems"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from decode_gap import graph_us, write_table  # noqa: E402  (bench/'s scripts import each other by name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="softmax_64k,log_softmax_50k")
    parser.add_argument("--totals", default="256,512,1024,2048,8192")
    parser.add_argument("--max-rows", type=int, default=64, help="cases up to this T only")
    parser.add_argument("--rep", type=int, default=100, help="ms of replays per measurement")
    parser.add_argument("--time-limit", type=float, default=0, help="s; 0: none")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("split_count.py needs a GPU", file=sys.stderr)
        return 2
    deadline = time.time() + args.time_limit if args.time_limit else float("inf")
    totals = [int(t) for t in args.totals.split(",") if t]
    rows = (
        (op, case, row)
        for op in [o for o in args.ops.split(",") if o]
        for case, row in op_rows(PROBLEMS / f"{op}.py", totals, args.max_rows, args.rep, deadline)
    )
    notes = [
        "CUDA-graph medians in µs (do_bench_cudagraph, one process); `total N`: codegen's",
        "decode composite with DECODE_TOTAL_SPLITS = N (splits a row in brackets).",
    ]
    columns = ["eager", "torch.compile", *(f"total {t}" for t in totals)]
    write_table(args.out, "Programs of the split launch at decode sizes", notes, columns, rows)
    return 0


def op_rows(path: Path, totals: list[int], max_rows: int, rep: int, deadline: float):
    """(case label, {column: µs as text}) for each case of the problem up to `max_rows`."""
    import torch

    from kbot.problem import load_problem
    from kbot.problem.runtime import build_on, case_inputs, import_file, init_inputs
    from kbot.propose.codegen import generate

    spec = load_problem(path)
    module = import_file(path, prefix="split_count")
    init = init_inputs(module)
    model = build_on("cuda", lambda: module.Model(*init), seed=0).cuda().eval()
    composite = generate(spec)[0]
    if "DECODE_TOTAL_SPLITS" not in composite.source:
        raise SystemExit(f"{path.stem}: codegen's first candidate has no split launch")
    folder = Path(tempfile.mkdtemp(prefix="split_count_"))
    (folder / "candidate.py").write_text(composite.source)
    candidate = import_file(folder / "candidate.py", prefix="split_count_candidate")
    new = build_on("cuda", lambda: candidate.ModelNew(*init), seed=0).cuda().eval()
    new.load_state_dict(model.state_dict(), strict=False)
    for case in spec.cases:
        if time.time() > deadline:
            return
        torch.manual_seed(0)
        inputs = [v.cuda() if isinstance(v, torch.Tensor) else v for v in case_inputs(module, case)]
        rows = inputs[0].shape[0] if inputs and isinstance(inputs[0], torch.Tensor) else 0
        if rows > max_rows:
            continue
        with torch.no_grad():
            expected = model(*inputs)
        row = {"eager": graph_us(lambda x=inputs: model(*x), rep)}
        torch._dynamo.reset()
        static = torch.compile(model, dynamic=False)
        row["torch.compile"] = graph_us(lambda f=static, x=inputs: f(*x), rep)
        for total in totals:
            candidate.DECODE_TOTAL_SPLITS = total
            splits = candidate.DECODE_SPLITS
            while splits > 1 and rows * splits > total:
                splits //= 2
            with torch.no_grad():
                torch.testing.assert_close(new(*inputs), expected, atol=2e-2, rtol=2e-2)
            row[f"total {total}"] = f"{graph_us(lambda x=inputs: new(*x), rep)} ({splits})"
        yield ", ".join(f"{k}={v}" for k, v in case.items()), row


if __name__ == "__main__":
    raise SystemExit(main())
