"""Capture what torch.compile generates for the suite's problems (GPU only).

For each problem and compile mode this writes, under --out:
    <op>__<mode>.py    the output code inductor generated (its `call()` and Triton kernels)
    <op>__<mode>.json  per kernel: the launch config inductor's autotuner settled on, its
                       inductor_meta / triton_meta, and the case and versions it was made with

These files are the fixtures the `inductor` proposer's CPU tests read: inductor cannot generate
CUDA Triton code on a machine without a GPU.

    python bench/inductor_capture.py --out /tmp/captures --ops rmsnorm,silu_and_mul
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))


def _jsonable(value):
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


def _kernels(module) -> dict:
    found = {}
    for name, obj in vars(module).items():
        launchers = getattr(obj, "launchers", None)
        if launchers is None or not hasattr(obj, "inductor_meta"):
            continue
        configs = []
        for launcher in launchers:
            config = getattr(launcher, "config", None)
            if config is None:
                continue
            configs.append(
                {
                    "kwargs": _jsonable(dict(config.kwargs)),
                    "num_warps": config.num_warps,
                    "num_stages": config.num_stages,
                }
            )
        found[name] = {
            "launch_configs": configs,
            "candidate_configs": [
                {"kwargs": _jsonable(dict(c.kwargs)), "num_warps": c.num_warps}
                for c in getattr(obj, "configs", []) or []
            ],
            "inductor_meta": _jsonable(getattr(obj, "inductor_meta", {})),
            "triton_meta": _jsonable(getattr(obj, "triton_meta", {})),
        }
    return found


def capture(problem_path: Path, out: Path, case_index: int, dynamic: bool) -> str:
    import torch
    import triton
    from torch._inductor import codecache
    from torch._inductor.utils import run_and_get_code

    from kbot.problem import load_problem
    from kbot.problem.runtime import case_inputs, import_file, init_inputs

    spec = load_problem(problem_path)
    module = import_file(problem_path, prefix="kbot_capture")
    case = dict(spec.cases[case_index])
    torch.manual_seed(0)
    model = module.Model(*init_inputs(module)).cuda()
    inputs = [v.cuda() if isinstance(v, torch.Tensor) else v for v in case_inputs(module, case)]
    torch._dynamo.reset()
    compiled = torch.compile(model, dynamic=dynamic)
    with torch.no_grad():
        _, codes = run_and_get_code(compiled, *inputs)
    mode = "dynamic" if dynamic else "static"
    stem = f"{problem_path.stem}__{mode}"
    source = "\n\n# ---- next graph ----\n\n".join(codes)
    (out / f"{stem}.py").write_text(source)
    kernels = {}
    for loaded in list(codecache.PyCodeCache.modules):
        if getattr(loaded, "__file__", None) and Path(loaded.__file__).read_text() in codes:
            kernels.update(_kernels(loaded))
    meta = {
        "problem": problem_path.name,
        "case": case,
        "dynamic": dynamic,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "gpu": torch.cuda.get_device_name(),
        "kernels": kernels,
    }
    (out / f"{stem}.json").write_text(json.dumps(meta, indent=2) + "\n")
    return f"{stem}: {len(codes)} graph(s), {len(kernels)} kernel(s)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--ops", default="rmsnorm,add_rmsnorm,silu_and_mul,rope_neox,softcap")
    parser.add_argument("--case", type=int, default=-2, help="index into CASES (default: -2)")
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    failed = 0
    for op in args.ops.split(","):
        for dynamic in (True, False):
            try:
                print(capture(ROOT / "problems" / f"{op}.py", out, args.case, dynamic), flush=True)
            except Exception as exc:  # one op's failure must not hide the others'
                failed += 1
                print(f"{op} dynamic={dynamic}: {type(exc).__name__}: {exc}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
