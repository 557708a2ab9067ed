"""kbot's evaluator pool on two GPUs (issue 19). On a machine with two GPUs, from the repo root:

    python bench/multi_gpu.py --problems rmsnorm,silu_and_mul,softcap --budget 30 \\
        --out multi_gpu.md --json multi_gpu.json

(`bash bench/device_run.sh multi-gpu` runs it as one device command.) Four parts, in this
order, each written to --out and --json as soon as it ends:

 2. pinning: an Evaluator over GPUs 0 and 1; each worker's judge reports where it runs
    (WorkerInfo.placement) and a probe candidate prints where its process runs;
 3. the same accepted kernel (codegen's first variant of the first problem, or --check-kernel)
    evaluated on both workers at once, --rounds times: the medians' difference per case;
 4. one batch over the pool with a crash, a hang and a judge killed mid-job beside good
    copies of that kernel: only those candidates lost, the other worker's verdicts accepted
    and timed, compared with part 3;
 1. `kbot optimize` per problem with `--gpus 0,1` and with `--gpus 0` (same budget, the
    search's fixed seed, a work directory each; the order alternates between problems):
    evaluations per minute from the run's own records, winners, and whether they agree.

Parts 1-3 need two CUDA GPUs; without them each says so in one line and nothing is measured.
Part 4 then runs on two CPU workers (correctness only: nothing is timed), on the evaluator
tests' small QuickGELU problem and kernel unless --check-problem and --check-kernel say
otherwise. Part 1 runs last because it takes most of the time: --time-limit stops it starting
runs that cannot end in time, and says which. The short summary table is printed last.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import os
import platform
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

from multi_gpu_markdown import Header, Results, render, results_json, summary_table
from multi_gpu_report import (
    FAULT_ROLES,
    OpComparison,
    RunFacts,
    fault_summary,
    pinning_problems,
    run_facts,
)

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "bench" / "problems"
CPU_PROBLEM = ROOT / "tests" / "evaluate" / "problems" / "quick_gelu.py"
CPU_KERNEL = ROOT / "tests" / "evaluate" / "candidates" / "quick_gelu.py"
DEFAULT_FAULTS = "crash,good,hang,good,judge-kill,good,good,good"
MULTICAST_SWITCHES = (
    "NCCL_NVLS_ENABLE",
    "TORCH_SYMM_MEM_DISABLE_MULTICAST",
    "NVSHMEM_DISABLE_NVLS",
)
# A run's wall time beyond its budget (process start, the evaluator's preparation with the
# torch.compile baselines, finalists): ~30 s for a 45 s KernelBench problem on the H200
# (bench/results/kernelbench.md). The estimate until a run has taken its own.
OPTIMIZE_OVERHEAD_S = 45.0
RUN_GRACE_S = 240.0  # a run past its budget by more is stopped (SIGINT) and reported as it is
NEEDS_TWO_GPUS = {
    "pinning": "pinning",
    "pair": "same kernel on both GPUs",
    "optimize": "kbot optimize --gpus 0,1 against --gpus 0",
}
# The runs stop on their time budget, not on patience; no shape sweep after the search
RUN_CONFIG = "version: 1\nsearch:\n  patience: 1000\n  sweep_points: 0\n"


def main() -> int:
    args = _arguments()
    started = time.monotonic()
    command = "python " + shlex.join(["bench/multi_gpu.py", *sys.argv[1:]])
    devices = cuda_devices() if args.device != "cpu" else []
    on_gpus = len(devices) >= 2
    results = Results(header(command, devices), args.budget, args.proposers)
    if not on_gpus:
        found = f"{len(devices)} found" + (", --device cpu" if args.device == "cpu" else "")
        results = _skip(
            results,
            *(
                f"{title}: needs two CUDA GPUs ({found})"
                for part, title in NEEDS_TWO_GPUS.items()
                if part in args.parts
            ),
        )
    write(args, results)
    try:
        if {"pinning", "pair", "faults"} & set(args.parts):
            results = pool_parts(args, results, on_gpus, devices)
        if "optimize" in args.parts and on_gpus:
            results = optimize_part(args, results, started)
    except KeyboardInterrupt:  # SIGINT at the device command's limit: keep what was measured
        results = _skip(_written, "the rest: stopped by SIGINT")
        write(args, results)
        print("\n".join(summary_table(results)))
        return 130
    print("\n".join(summary_table(results)))
    return 0


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--problems",
        default="rmsnorm,silu_and_mul,softcap",
        help="bench/problems names, comma-separated",
    )
    parser.add_argument("--budget", type=float, default=35.0, help="seconds per optimize run")
    parser.add_argument("--out", type=Path, required=True, help="markdown")
    parser.add_argument("--json", type=Path, required=True)
    parser.add_argument(
        "--time-limit",
        type=float,
        default=520.0,
        help="start no optimize run that cannot end before this many seconds",
    )
    parser.add_argument("--parts", default="pinning,pair,faults,optimize")
    parser.add_argument("--device", choices=("auto", "cpu"), default="auto")
    parser.add_argument("--proposers", default="codegen,tune")
    parser.add_argument("--rounds", type=int, default=3, help="part 3's evaluations per GPU")
    parser.add_argument(
        "--faults",
        default=DEFAULT_FAULTS,
        help=f"part 4's batch, in order, of {', '.join(FAULT_ROLES)}",
    )
    parser.add_argument(
        "--fault-timeout",
        type=float,
        default=30.0,
        help="the evaluator's timeout_s in parts 2-4: what the hang costs",
    )
    parser.add_argument("--check-problem", type=Path, help="parts 2-4's problem")
    parser.add_argument("--check-kernel", type=Path, help="parts 3-4's accepted kernel")
    parser.add_argument("--work-dir", type=Path, help="the optimize runs' work directories")
    args = parser.parse_args()
    args.parts = [p for p in args.parts.split(",") if p]
    args.faults = [r for r in args.faults.split(",") if r]
    unknown = [r for r in args.faults if r not in FAULT_ROLES]
    if unknown:
        parser.error(
            f"--faults: unknown role(s) {', '.join(unknown)}; valid: {', '.join(FAULT_ROLES)}"
        )
    return args


_written: Results  # the last results written, for a run stopped by SIGINT


def write(args: argparse.Namespace, results: Results) -> None:
    global _written
    _written = results
    for path in (args.out, args.json):
        path.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(render(results), encoding="utf-8")
    args.json.write_text(json.dumps(results_json(results), indent=1) + "\n", encoding="utf-8")


# --- the machine ------------------------------------------------------------------------------


def cuda_devices() -> list[dict[str, str]]:
    """Index, name and UUID of every GPU as a worker pinned by CUDA_VISIBLE_DEVICES=<index>
    counts them (in a child, so this process holds no CUDA context), with nvidia-smi's PCI
    address where its UUIDs match. [] without CUDA."""
    script = (
        "import json, torch\n"
        "print(json.dumps([{'index': str(i), 'name': torch.cuda.get_device_name(i),"
        " 'uuid': str(torch.cuda.get_device_properties(i).uuid)}"
        " for i in range(torch.cuda.device_count())]))"
    )
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    try:
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
        )
        devices = json.loads(done.stdout.strip().splitlines()[-1]) if done.returncode == 0 else []
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError, IndexError):
        return []
    smi = _smi("uuid,pci.bus_id")
    for device in devices:
        for row in smi:
            if row[0].lower().removeprefix("gpu-") == device["uuid"].lower().removeprefix("gpu-"):
                device["pci_bus_id"] = row[1]
    return devices


def _smi(fields: str) -> list[list[str]]:
    try:
        done = subprocess.run(
            ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return []
    return [[c.strip() for c in line.split(",")] for line in done.stdout.splitlines() if line]


def header(command: str, devices: list[dict[str, str]]) -> Header:
    import torch
    import triton

    driver = next(iter(_smi("driver_version")), ["not found (no nvidia-smi)"])[0]
    gpus = tuple(
        f"{d['index']}: {d['name']} (PCI {d.get('pci_bus_id', '?')}, {d['uuid']})" for d in devices
    ) or ("none: CUDA sees no GPU",)
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=30,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain"], capture_output=True, text=True, cwd=ROOT, timeout=30
        ).stdout.count("\n")
        commit = f"{commit} ({dirty} paths differ from it)" if commit else "tree without git"
    except (OSError, subprocess.SubprocessError):
        commit = "tree without git"
    return Header(
        date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        gpus=gpus,
        driver=driver,
        versions=f"torch {torch.__version__} (CUDA {torch.version.cuda}), Triton "
        f"{triton.__version__}, Python {platform.python_version()}",
        commit=commit,
        environment=" ".join(f"{n}={os.environ.get(n, '(unset)')}" for n in MULTICAST_SWITCHES),
        command=command,
    )


# --- parts 2-4: the evaluator's pool ------------------------------------------------------------


def pool_parts(args, results: Results, on_gpus: bool, devices: list[dict[str, str]]) -> Results:
    from multi_gpu_pool import ObservedPool, check_pinning, run_faults, time_pair

    from kbot.evaluate import EvalOptions
    from kbot.problem import load_problem

    first = args.problems.split(",")[0]
    problem_path = args.check_problem or (PROBLEMS / f"{first}.py" if on_gpus else CPU_PROBLEM)
    problem = load_problem(problem_path)
    kernel, why = check_kernel(args, problem, on_gpus)
    options = EvalOptions(
        device="cuda" if on_gpus else "cpu",
        gpus=(0, 1) if on_gpus else (),
        timeout_s=args.fault_timeout,
        compile_baselines=False,  # only the kernel's own medians are compared here
    )
    with ObservedPool(options, cpu_pool=not on_gpus) as pool:
        failure = pool.prepare(problem)
        if failure is not None:
            line = f"parts 2-4: the evaluator could not prepare {problem_path.name}: {failure}"
            return _skip(results, line)
        if on_gpus and "pinning" in args.parts:
            placements = check_pinning(pool, problem)
            expected = {int(d["index"]): d["uuid"] for d in devices}
            results = dataclasses.replace(
                results,
                placements=tuple(placements),
                pinning=tuple(pinning_problems(placements, expected)),
            )
            write(args, results)
        if kernel is None:
            return _skip(results, f"same kernel and faults: {why}")
        clean = []
        if on_gpus and "pair" in args.parts:
            clean, notes = time_pair(pool, problem, kernel, args.rounds)
            results = dataclasses.replace(
                results, pair_problem=f"{problem_path.name} ({why})", pair_cases=tuple(clean)
            )
            if notes:
                results = _skip(results, *(f"same kernel: {n}" for n in notes))
            write(args, results)
        if "faults" in args.parts:
            rows, respawned = run_faults(pool, problem, kernel, args.faults, clean)
            summary = fault_summary(rows, timed=on_gpus, respawned=respawned)
            results = dataclasses.replace(results, faults=tuple(rows), fault=summary)
            write(args, results)
    return results


def check_kernel(args, problem, on_gpus: bool) -> tuple[str | None, str]:
    """Parts 3-4's kernel and where it came from; None and why when there is none."""
    path = args.check_kernel or (None if on_gpus else CPU_KERNEL)
    if path is not None:
        return path.read_text(encoding="utf-8"), f"kernel {path.name}"
    from kbot.propose.codegen import generate
    from kbot.propose.codegen.trace import Unsupported

    try:
        candidate = generate(problem, limit=1)[0]
    except Unsupported as exc:
        return None, f"codegen offers no kernel for {problem.name}: {exc}"
    return candidate.source, f"kernel: {candidate.note}"


def _skip(results: Results, *lines: str) -> Results:
    return dataclasses.replace(results, skipped=(*results.skipped, *lines))


# --- part 1: kbot optimize with two GPUs and with one --------------------------------------------


def optimize_part(args, results: Results, started: float) -> Results:
    """Both runs of each problem, or neither: a lone run answers nothing. Which of the two goes
    first alternates, so neither setting always meets the warmer caches."""
    work = args.work_dir or Path(os.environ.get("TMPDIR", "/tmp")) / f"kbot-mgpu-{os.getpid()}"
    overheads_s: list[float] = []  # each run's wall time beyond its budget
    for position, name in enumerate(n for n in args.problems.split(",") if n):
        overhead_s = max(overheads_s, default=OPTIMIZE_OVERHEAD_S)
        left_s = args.time_limit - (time.monotonic() - started)
        if left_s < 2 * (args.budget + overhead_s):
            results = _skip(
                results,
                f"kbot optimize {name}: {left_s:.0f} s of --time-limit left, its two runs take "
                f"about {2 * (args.budget + overhead_s):.0f} s",
            )
            write(args, results)
            continue
        runs: dict[str, RunFacts] = {}
        for gpus in ("0,1", "0") if position % 2 == 0 else ("0", "0,1"):
            began = time.monotonic()
            left_s = args.time_limit - (began - started)
            folder = work / f"{name}-gpus{gpus.replace(',', '')}"
            limit_s = min(left_s, args.budget + RUN_GRACE_S)
            runs[gpus] = optimize_run(args, PROBLEMS / f"{name}.py", gpus, folder, limit_s)
            overheads_s.append(time.monotonic() - began - args.budget)
        comparison = OpComparison(name, runs["0,1"], runs["0"])
        results = dataclasses.replace(results, comparisons=(*results.comparisons, comparison))
        write(args, results)
    return results


def optimize_run(args, problem: Path, gpus: str, folder: Path, limit_s: float) -> RunFacts:
    """One `kbot optimize --json` in its own work directory; SIGINT 30 s before `limit_s` (the
    run then writes its report), SIGKILL 60 s after that."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kbot.yml").write_text(RUN_CONFIG, encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "kbot",
        "optimize",
        str(problem),
        "--device",
        "cuda",
        "--gpus",
        gpus,
        "--time-budget",
        f"{args.budget:g}",
        "--generations",
        "1000",
        "--max-candidates",
        "100000",
        "--proposers",
        args.proposers,
        "--work-dir",
        str(folder),
        "--config",
        str(folder / "kbot.yml"),
        "--json",
    ]
    envelope_path, progress_path = folder / "envelope.json", folder / "progress.jsonl"
    with envelope_path.open("w") as out, progress_path.open("w") as err:
        child = subprocess.Popen(command, stdout=out, stderr=err, cwd=ROOT)
        try:
            code = child.wait(timeout=max(1.0, limit_s - 30))
        except subprocess.TimeoutExpired:
            code = _stop(child)
        except KeyboardInterrupt:  # the run writes its report before this script goes
            _stop(child)
            raise
    envelope = _json(envelope_path)
    report_path = ((envelope or {}).get("data") or {}).get("report_json")
    report = _json(Path(report_path)) if report_path else None
    lines = progress_path.read_text(encoding="utf-8", errors="replace").splitlines()
    facts = run_facts(problem.stem, gpus, code, envelope, report, lines)
    print(
        f"{problem.stem} --gpus {gpus}: exit {code}, {facts.evaluations} evaluations in "
        f"{facts.loop_wall_s} s of loop, stop {facts.stop_reason}",
        flush=True,
    )
    return facts


def _stop(child: subprocess.Popen) -> int:
    """SIGINT (the run stops its search and writes its report), SIGKILL a minute later."""
    child.send_signal(signal.SIGINT)
    try:
        return child.wait(timeout=60)
    except subprocess.TimeoutExpired:
        child.kill()
        return child.wait()


def _json(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return value if isinstance(value, dict) else None


if __name__ == "__main__":
    raise SystemExit(main())
