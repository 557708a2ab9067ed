"""The judge: `python -m kbot.evaluate.worker --capture FILE [--device ...] [--sandbox ...]`.

The trusted side of the evaluator. Reads one JSON `Job` per line from stdin and answers on
stdout (kbot.evaluate.protocol). It imports the problem, makes inputs, runs the reference and
the baselines, compares and times; every candidate runs in a process of its own that this one
starts (kbot.evaluate.remote), so no candidate code ever runs here. The parent kills this
process's whole group on a timeout and respawns it after a crash.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any


def _resolve_device(requested: str) -> str:
    import torch

    cuda = torch.cuda.is_available()
    if requested == "cuda" and not cuda:
        return "missing-cuda"
    device = "cuda" if requested in ("auto", "cuda") and cuda else "cpu"
    if device == "cpu":
        # Triton reads this once, at import: the CPU runs kernels in its interpreter.
        os.environ["TRITON_INTERPRET"] = "1"
    return device


def _versions(device: str) -> dict[str, str]:
    import platform

    import torch
    import triton

    versions = {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton.__version__,
    }
    if device == "cuda":
        versions["cuda"] = str(torch.version.cuda)
        getter = getattr(torch._C, "_cuda_getDriverVersion", None)
        if getter is not None:
            raw = int(getter())
            versions["driver_cuda"] = f"{raw // 1000}.{raw % 1000 // 10}"
    return versions


def _placement(device: str) -> dict[str, str]:
    """Where this judge runs, as it sees it: the GPUs the parent left visible to it
    (CUDA_VISIBLE_DEVICES), its current device, and that device's UUID and PCI address, so a
    pool's pinning can be checked from inside each worker (bench/multi_gpu.py). Its candidates'
    processes see the first of its visible GPUs (kbot.evaluate.remote)."""
    facts = {"visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES", "(unset)")}
    if device != "cuda":
        return facts
    import torch

    try:
        index = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(index)
        facts.update(
            current_device=str(index),
            device_count=str(torch.cuda.device_count()),
            uuid=str(props.uuid),
        )
        # torch names the PCI fields only in recent releases; nvidia-smi's form when it does
        pci = [getattr(props, f"pci_{part}_id", None) for part in ("domain", "bus", "device")]
        if all(isinstance(value, int) for value in pci):
            facts["pci_bus_id"] = f"{pci[0]:08X}:{pci[1]:02X}:{pci[2]:02X}.0"
    except Exception as exc:  # a fact, never a reason not to start
        facts["error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
    return facts


@dataclass
class WorkerState:
    device: Any  # torch.device
    workdir: Path
    sandbox: Any  # kbot.evaluate.remote.Sandbox: how candidates' processes are started
    problems: dict[str, ModuleType] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict)  # baselines and peaks, per problem/device
    warmed: set[str] = field(default_factory=set)  # problems whose reference ran before candidates
    # (problem sha256, case index) -> the reference's coarsest rounding (kbot.evaluate.rounding)
    rounded_to: dict = field(default_factory=dict)
    # problem sha256 -> whether its constant parameters are redrawn with some signs flipped
    # (kbot.evaluate.reference_state.signs_keep_finite)
    signs: dict = field(default_factory=dict)
    hosts: Any = None  # kbot.evaluate.host_pool.HostPool: candidates' processes, started ahead


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kbot.evaluate.worker")
    parser.add_argument("--capture", required=True)
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument(
        "--sandbox",
        default="confined",
        choices=("confined", "plain"),
        help="run each candidate's process in Linux namespaces, or plainly (the parent decides)",
    )
    args = parser.parse_args(argv)
    from kbot.evaluate.processes import redirect_output

    proto_in, proto_out = redirect_output(args.capture)

    def send(message: dict[str, Any]) -> None:
        from kbot.evaluate.protocol import encode

        proto_out.write(encode(message))

    device = _resolve_device(args.device)
    if device == "missing-cuda":
        send(
            {"event": "fatal", "message": "--device cuda was asked for but torch sees no CUDA GPU"}
        )
        return 3
    import torch

    from kbot.evaluate.confine import Sandbox
    from kbot.evaluate.host_pool import HostPool
    from kbot.evaluate.jobs import run_job
    from kbot.evaluate.protocol import PROTOCOL_VERSION, Job

    name = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    send(
        {
            "event": "ready",
            "protocol": PROTOCOL_VERSION,
            "device": device,
            "device_name": name,
            "versions": _versions(device),
            "placement": _placement(device),
        }
    )
    state = WorkerState(
        device=torch.device("cuda:0" if device == "cuda" else "cpu"),
        # Inside the parent's scratch folder (our cwd), which the parent removes when it closes.
        workdir=Path(tempfile.mkdtemp(prefix="jobs-", dir=Path.cwd())),
        sandbox=Sandbox(confined=args.sandbox == "confined"),
    )
    state.hosts = HostPool(state.workdir, state.device, state.sandbox)
    import json

    try:
        for line in proto_in:
            job = Job.from_json(json.loads(line))
            if job.kind == "shutdown":
                break
            result = run_job(job, state, send)
            send({"event": "result", "job": uuid.uuid4().hex, **result})
            sys.stdout.flush()
            sys.stderr.flush()
            if result.get("restart"):
                return 0
    finally:
        state.hosts.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
