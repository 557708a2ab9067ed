"""What an eager caller pays per call (issue 15, item 4): host time of the Python launcher
against the kernel's own time, for eager PyTorch, torch.compile and kbot codegen's kernel.

For each problem of bench/problems (or those named) and each decode case (T <= 64), in this
process, outside kbot's evaluator:

- graph µs: the call replayed in a CUDA graph (`triton.testing.do_bench_cudagraph`): the
  kernels alone, what the search ranks;
- host µs: CPU time to issue one call (`time.perf_counter` around the call, no synchronisation;
  the median of many), the floor of what an eager caller pays when the GPU keeps up;
- loop µs: wall time per call of N calls back to back, synchronised once at the end: what a
  decode loop that calls the op eagerly sees (the larger of host and GPU time, roughly);
- audit events per call of the kbot kernel (a counting `sys.addaudithook`, added last since
  it cannot be removed): each one runs a Python hook under kbot's sandbox, so a launcher that
  raises them costs more inside the evaluator than in the user's process.

kbot's kernel is codegen's first variant per problem (no search): the launcher is the same
for every variant of a schedule, and the launcher is what this measures.

With `--through-evaluator`, each kernel is also evaluated by kbot's own evaluator, sandboxed
and (`sandbox="off"`) not, and the plain-launch medians it reports for the kernel and for eager
(what PR tables show as "plain-launch µs": CUDA events around each call in the candidate's
child process) are put beside the host µs above, to tell the harness's share from the
launcher's.

    python bench/launch_overhead.py [--problems rmsnorm,rope_neox] [--calls 2000] [--out F.md]
        [--through-evaluator] [--time-limit S]
"""

from __future__ import annotations

import argparse
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


IMPLEMENTATIONS = ("eager", "torch.compile", "kbot")


@dataclass(frozen=True)
class Timing:
    graph: float  # µs per call under CUDA-graph replay
    host: float  # median CPU µs to issue one call
    loop: float  # wall µs per call of back-to-back calls

    def cell(self) -> str:
        return f"{self.graph:.1f} / {self.host:.1f} / {self.loop:.1f}"


@dataclass
class Row:
    """One decode case of one op: each implementation's timing, then (count_audit_events) the
    audit events one kbot call raises and its host time with a hook installed."""

    op: str
    case: dict[str, Any]
    call: Callable[[], Any]  # one call of kbot's kernel on the case's inputs
    timings: dict[str, Timing] = field(default_factory=dict)  # by IMPLEMENTATIONS name
    audit_per_call: float = 0.0
    audit_names: list[str] = field(default_factory=list)  # the three most frequent
    kbot_host_hooked: float = 0.0
    # --through-evaluator: plain-launch medians (µs) kbot's evaluator reported, by sandbox mode
    # ("sandboxed", "unsandboxed"), as (kbot kernel, eager)
    evaluator_plain: dict[str, tuple[float, float]] = field(default_factory=dict)


def host_us(call, n: int) -> float:
    """Median CPU µs to issue one call (no synchronisation in between)."""
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return 1e6 * statistics.median(samples)


def loop_us(call, n: int, torch) -> float:
    """Wall µs per call of `n` back-to-back calls, synchronised at the end."""
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        call()
    torch.cuda.synchronize()
    return 1e6 * (time.perf_counter() - start) / n


def kernel_source(spec) -> str:
    from kbot.propose.codegen.proposer import generate

    return generate(spec, limit=1)[0].source


def load_kernel(spec, folder: Path):
    from kbot.problem.runtime import import_file

    path = folder / f"{spec.name}_kbot.py"
    path.write_text(kernel_source(spec), encoding="utf-8")
    return import_file(path, prefix="kbot_launch")


def through_evaluator(problem: Path, rows: list[Row]) -> None:
    """Each mode's plain-launch medians for this problem's decode rows, from kbot's evaluator."""
    from kbot.evaluate import EvalOptions, Evaluator
    from kbot.problem.spec import load_problem

    spec = load_problem(problem)
    source = kernel_source(spec)
    for mode, sandbox in (("sandboxed", "auto"), ("unsandboxed", "off")):
        # The kernel is codegen's own; the unsandboxed mode runs it beside the machine's
        # environment on purpose (the evaluator refuses that by default where a credential-like
        # variable is set, as on the H200 of 2026-12-03).
        options = EvalOptions(device="cuda", sandbox=sandbox, allow_unsandboxed=sandbox == "off")
        with Evaluator(options) as evaluator:
            verdict = evaluator.evaluate(spec, source)
        for result in verdict.cases:
            timing = result.timing
            if timing is None or isinstance(timing, str):
                continue
            for row in rows:
                if row.op == spec.name and row.case == result.case:
                    row.evaluator_plain[mode] = (
                        timing.candidate_plain.median_us,
                        timing.eager_plain.median_us,
                    )


def measure(problem: Path, calls: int, folder: Path) -> list[Row]:
    import torch
    import triton.testing

    from kbot.problem.runtime import import_file, init_inputs, seeded_inputs
    from kbot.problem.spec import load_problem

    spec = load_problem(problem)
    module = import_file(problem)
    kernel = load_kernel(spec, folder)
    rows = []
    for case in spec.cases:
        if case.get("T", 1) > 64:
            continue
        torch.manual_seed(0)
        with torch.device("cuda"):
            model = module.Model(*init_inputs(module)).eval()
            ours = kernel.ModelNew(*init_inputs(module)).eval()
        ours.load_state_dict(model.state_dict(), strict=False)
        inputs = seeded_inputs(module, case, seed=1, device="cuda")
        compiled = torch.compile(model)
        impls = dict(zip(IMPLEMENTATIONS, (model, compiled, ours)))
        row = Row(spec.name, case, lambda ours=ours, inputs=inputs: ours(*inputs))
        with torch.no_grad():
            for name, fn in impls.items():
                call = lambda fn=fn, inputs=inputs: fn(*inputs)
                for _ in range(5):
                    call()
                torch.cuda.synchronize()
                row.timings[name] = Timing(
                    graph=1e3 * triton.testing.do_bench_cudagraph(call, rep=50),
                    host=host_us(call, calls),
                    loop=loop_us(call, calls, torch),
                )
        rows.append(row)
    return rows


def count_audit_events(rows: list[Row], torch) -> None:
    """Audit events raised by one call of each kbot kernel (the hook stays for good: run last)."""
    counter = {"on": False, "n": 0, "names": {}}

    def hook(event, args):
        if counter["on"]:
            counter["n"] += 1
            counter["names"][event] = counter["names"].get(event, 0) + 1

    sys.addaudithook(hook)
    with torch.no_grad():
        for row in rows:
            counter.update(on=True, n=0, names={})
            for _ in range(100):
                row.call()
            counter["on"] = False
            row.audit_per_call = counter["n"] / 100
            row.audit_names = sorted(counter["names"], key=counter["names"].get)[-3:]
            # The same calls with the hook in place: what kbot's sandbox adds on top of it
            # (its own hook also checks each event against the policy).
            row.kbot_host_hooked = host_us(row.call, 500)


EVALUATOR_MODES = ("sandboxed", "unsandboxed")


def table(rows: list[Row], through: bool = False) -> list[str]:
    header = (
        "| op | case | eager graph / host / loop µs | torch.compile graph / host / loop µs "
        "| kbot graph / host / loop µs | kbot host with an audit hook µs | audit events per kbot call |"
    )
    if through:
        header += " evaluator plain µs, kbot / eager, sandboxed | the same, unsandboxed |"
    lines = [header, "|---" * header.count(" | ") + "|---|"]
    for row in rows:
        cells = " | ".join(row.timings[name].cell() for name in IMPLEMENTATIONS)
        case = ", ".join(f"{k}={v}" for k, v in row.case.items())
        line = (
            f"| {row.op} | {case} | {cells} | {row.kbot_host_hooked:.1f} "
            f"| {row.audit_per_call:g} ({', '.join(row.audit_names) or 'none'}) |"
        )
        if through:
            for mode in EVALUATOR_MODES:
                kbot, eager = row.evaluator_plain.get(mode, (float("nan"), float("nan")))
                line += f" {kbot:.1f} / {eager:.1f} |"
        lines.append(line)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", default="", help="comma list of bench/problems names")
    parser.add_argument("--calls", type=int, default=2000, help="calls per host/loop sample")
    parser.add_argument("--out", type=Path, help="write the Markdown here too")
    parser.add_argument(
        "--time-limit", type=float, default=0, help="start no further problem after these seconds"
    )
    parser.add_argument(
        "--through-evaluator",
        action="store_true",
        help="also report kbot's evaluator's plain-launch medians, sandboxed and not",
    )
    args = parser.parse_args()
    import torch
    import triton

    if not torch.cuda.is_available():
        print("launch_overhead: needs a CUDA GPU (it times launches on one)", file=sys.stderr)
        return 2
    names = [n for n in args.problems.split(",") if n]
    problems = sorted((ROOT / "bench" / "problems").glob("*.py"))
    if names:
        problems = [p for p in problems if p.stem in names]
    rows: list[Row] = []
    began = time.monotonic()
    with tempfile.TemporaryDirectory() as folder:
        for problem in problems:
            if args.time_limit and time.monotonic() - began > args.time_limit:
                print(f"{problem.stem}: not measured (--time-limit reached)", file=sys.stderr)
                continue
            try:
                rows += measure(problem, args.calls, Path(folder))
            except Exception as exc:  # one op's failure is a line of the report, not the end
                print(f"{problem.stem}: {type(exc).__name__}: {exc}", file=sys.stderr)
        if args.through_evaluator:  # before the audit hook, which stays for good
            for problem in problems:
                try:
                    through_evaluator(problem, rows)
                except Exception as exc:  # noqa: BLE001 - the row says "nan"
                    print(
                        f"{problem.stem} (evaluator): {type(exc).__name__}: {exc}", file=sys.stderr
                    )
        count_audit_events(rows, torch)
    smi = subprocess.run(
        ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    lines = [
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; {smi}; torch {torch.__version__}; "
        f"Triton {triton.__version__}; Python {platform.python_version()}; "
        f"`python bench/launch_overhead.py {' '.join(sys.argv[1:])}`",
        "",
        *table(rows, args.through_evaluator),
    ]
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
