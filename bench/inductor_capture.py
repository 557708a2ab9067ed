"""Capture what torch.compile generates for the suite's problems (GPU only), exactly as the
`inductor` proposer captures it (kbot.propose.inductor.capture.capture_problem).

For each problem this writes, under --out:
    <op>__dynamic.txt   the output code inductor generated (its `call()` and Triton kernels;
                        text, so linters leave the copied fixture alone)
    <op>__dynamic.json  per kernel: the launch config inductor's autotuner settled on and its
                        metas; what each of call()'s arguments is (dynamo's placeholder
                        sources); the case, the dims marked dynamic, and versions

These files are the fixtures the `inductor` proposer's CPU tests read
(tests/propose_inductor/fixtures/): inductor cannot generate CUDA Triton code without a GPU.

    python bench/inductor_capture.py --out /tmp/captures --ops rmsnorm,silu_and_mul
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

DEFAULT_OPS = (
    "rmsnorm,add_rmsnorm,silu_and_mul,rope_neox,softcap,moe_sum,linear_silu,log_softmax_128k,"
    "layernorm_residual"
)


def main() -> int:
    from kbot.propose.inductor.capture import capture_problem

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--ops", default=DEFAULT_OPS)
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for op in args.ops.split(","):
        try:
            meta = capture_problem(ROOT / "problems" / f"{op}.py")
        except Exception as exc:  # one op's failure must not hide the others'
            failed += 1
            print(f"{op}: {type(exc).__name__}: {exc}", flush=True)
            continue
        stem = f"{op}__dynamic"
        (out / f"{stem}.txt").write_text(meta.pop("code"))
        (out / f"{stem}.json").write_text(json.dumps(meta, indent=2) + "\n")
        print(
            f"{stem}: case {meta['case']}, dims marked dynamic {meta['dynamic_dims']}, "
            f"{meta['graph_count']} graph(s), {len(meta['kernels'])} kernel(s), "
            f"{len(meta['graph_inputs'])} graph input(s)",
            flush=True,
        )
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
