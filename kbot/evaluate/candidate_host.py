"""The candidate's side: `python -m kbot.evaluate.candidate_host --folder DIR --device cpu|cuda`.

One process per candidate, started by the judge (kbot.evaluate.remote), inside the namespaces
of kbot.evaluate.confine when they are available. It holds no problem module, no reference and
no evaluator logic: it receives the candidate's source, its constructor arguments, the
reference's parameters and every input as data, runs `ModelNew`, and returns outputs, the
inputs as they are after the call, and (on a GPU) the times it measured. Everything it says is
a claim that the judge checks: outputs against the reference it computes itself, times against
its own clock and the roofline.

Start-up order matters: confinement first (before torch is imported), then the protocol's
private descriptors and the output capture, then torch and Triton, a warm-up kernel (so the
compiler's own helpers are built and loaded), and only then the audit hooks and the candidate.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any


def _warm_up(device) -> None:
    """Compiles and runs one kernel (and, on a GPU, captures it in a graph) before the hooks go
    in, so what Triton and torch load lazily on first use is loaded by trusted code."""
    import torch

    from kbot.evaluate.warmup_kernel import double

    x = torch.ones(64, device=device)
    double(x)
    if device.type == "cuda":
        graph = torch.cuda.CUDAGraph()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            double(x)
        torch.cuda.current_stream().wait_stream(side)
        with torch.cuda.graph(graph):
            double(x)
        graph.replay()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        end.record()
        torch.cuda.synchronize()
        start.elapsed_time(end)
    if float(x.sum()) != 64 * (8 if device.type == "cuda" else 2):
        raise RuntimeError("the warm-up kernel computed a wrong result")


def _leave_pid_one() -> None:
    """In a new PID namespace this process is PID 1, which the kernel shields from signals
    it has no handler for (an abort then dies of another signal). The work moves to a child;
    PID 1 only waits and passes its end on as 128 + signal, the shell's convention."""
    child = os.fork()
    if child == 0:
        return
    while True:
        pid, status = os.waitpid(-1, 0)
        if pid == child:
            break
    if os.WIFSIGNALED(status):
        os._exit(128 + os.WTERMSIG(status))
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kbot.evaluate.candidate_host")
    parser.add_argument("--folder", required=True)
    parser.add_argument("--device", required=True, choices=("cpu", "cuda"))
    parser.add_argument("--confine", default="", help="a confine.Plan as JSON")
    args = parser.parse_args(argv)
    folder = Path(args.folder)
    if args.confine:
        from kbot.evaluate.confine import Plan, enter

        plan = Plan.from_json(args.confine)
        enter(plan)
        _leave_pid_one()
    # Relative paths (Triton's compiler writes its launcher's source by one) land here.
    os.chdir(folder / "tmp")
    from kbot.evaluate.processes import redirect_output

    proto_in, proto_out = redirect_output(folder / "output.txt")

    def send(message: dict[str, Any]) -> None:
        proto_out.write((json.dumps(message) + "\n").encode())

    started = time.monotonic()
    phases: dict[str, float] = {}
    try:
        import torch

        phases["import_s"] = time.monotonic() - started
        device = torch.device("cuda:0" if args.device == "cuda" else "cpu")
        if device.type == "cuda" and not torch.cuda.is_available():
            send({"event": "fatal", "message": "no CUDA GPU is visible in the candidate's sandbox"})
            return 3
        if device.type == "cpu":
            from kbot.evaluate import (
                interpreter_bf16,
                interpreter_bounds,
                interpreter_compat,
                interpreter_libdevice,
                interpreter_order,
                interpreter_rounding,
                kernel_escapes,
            )

            interpreter_compat.apply()
            interpreter_rounding.install()
            interpreter_rounding.install_fp8()
            interpreter_bf16.install()
            interpreter_libdevice.install()
            interpreter_order.install()
            interpreter_bounds.install()
            kernel_escapes.install_interpreter()
        from kbot.evaluate import autotune_turns
        from kbot.evaluate.launch_hooks import install_launch_hooks

        # before the launch hooks wrap the autotuner's timer; a CPU has no timer: always in turn
        autotune_turns.install(always=device.type == "cpu")

        install_launch_hooks()  # before any candidate code: launches lift the compute guard
        mark = time.monotonic()
        _warm_up(device)
        phases["warm_up_s"] = time.monotonic() - mark
        from kbot.evaluate import audit
        from kbot.evaluate.host_session import Session

        readable = [
            str(folder),
            "/proc/self",
            "/proc/thread-self",
            f"/proc/{os.getpid()}",
            "/proc/cpuinfo",
            "/proc/meminfo",
            "/proc/driver",
            "/sys",
            "/dev",
        ]
        if not args.confine:  # the same view the namespaces would give, for the hooks alone
            from kbot.evaluate.confine import plan_for

            plan = plan_for(folder, folder, Path(__file__).resolve().parents[1])
        readable += [*plan.readonly, *plan.devices]
        policy = audit.Policy(
            readable=tuple(os.path.realpath(p) for p in readable),
            writable=(os.path.realpath(folder), "/dev/null"),
            programs=audit.programs_for_triton() if device.type == "cuda" else (),
            imports=frozenset(m.split(".")[0] for m in list(sys.modules)) | audit.CANDIDATE_IMPORTS,
        )
        # The candidate's RNG owes nothing to the judge's seeds.
        torch.manual_seed(secrets.randbits(62))
        session = Session(device, folder, policy)
    except BaseException as exc:  # the host itself failed: the judge reports it, not the candidate
        send({"event": "fatal", "message": f"{type(exc).__name__}: {str(exc)[:300]}"})
        return 3
    audit.install(policy)
    phases["total_s"] = time.monotonic() - started
    send(
        {
            "event": "ready",
            "pid": os.getpid(),
            "confined": bool(args.confine),
            "startup": {k: round(v, 3) for k, v in phases.items()},
        }
    )
    for line in proto_in:
        try:
            request = json.loads(line)
        except json.JSONDecodeError:
            return 2
        if request.get("op") == "exit":
            break
        reply = session.handle(request)
        reply["refused"] = list(policy.refused)
        send(reply)
        sys.stdout.flush()
        sys.stderr.flush()
        if reply.get("fatal"):
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
