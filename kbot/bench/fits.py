"""Whether a problem's tensors fit the machine, checked before anything is allocated.

The problem is built on the `meta` device (shapes only: no memory, no compute), and its
inputs, parameters and outputs are counted. The evaluator holds several copies at once (the
judge's inputs and reference outputs, the candidate process's own inputs and outputs, and the
baselines'), so a problem needs about `COPIES` times that; it is skipped with the figures when
the device's free memory (a GPU's, or the host's available RAM) is smaller.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path

import torch

from kbot.quiet_stdout import quiet_stdout

# Copies of the problem's tensors alive at once while a candidate is checked and timed:
# judge (inputs, reference outputs), candidate process (inputs, outputs, its parameters) and
# the baselines' outputs; rounded up for allocator slack.
COPIES = 4


@dataclass(frozen=True)
class Footprint:
    bytes_needed: int | None  # None: the problem could not be built on `meta`
    bytes_free: int | None  # None: unknown
    device: str

    @property
    def fits(self) -> bool:
        if self.bytes_needed is None or self.bytes_free is None:
            return True  # unknown: the evaluator will say what went wrong
        return self.bytes_needed <= self.bytes_free

    def reason(self) -> str:
        return (
            f"inputs too big for this machine: needs about {_gib(self.bytes_needed)} "
            f"({COPIES} copies of its inputs, parameters and outputs) on the {self.device}, "
            f"{_gib(self.bytes_free)} free"
        )


def _gib(value: int | None) -> str:
    return "?" if value is None else f"{value / 2**30:.1f} GiB"


def tensor_bytes(value: object) -> int:
    if isinstance(value, torch.Tensor):
        return value.numel() * value.element_size()
    if isinstance(value, (list, tuple)):
        return sum(tensor_bytes(v) for v in value)
    if isinstance(value, dict):
        return sum(tensor_bytes(v) for v in value.values())
    return 0


def problem_bytes(path: Path) -> int | None:
    """Bytes of the inputs, parameters, buffers and outputs of the problem's last case."""
    from kbot.problem import load_problem
    from kbot.problem.runtime import case_inputs, import_file, init_inputs

    spec = load_problem(path)
    quiet = io.StringIO()
    try:
        with quiet_stdout(quiet), torch.device("meta"):
            module = import_file(path, prefix="kbot_bench_fit")
            model = module.Model(*init_inputs(module))
            inputs = [
                a.to("meta") if isinstance(a, torch.Tensor) else a
                for a in case_inputs(module, dict(spec.cases[-1]))
            ]
            total = tensor_bytes(inputs) + sum(
                tensor_bytes(t) for t in (*model.parameters(), *model.buffers())
            )
            try:
                with torch.no_grad():
                    total += tensor_bytes(model(*inputs))
            except Exception:  # noqa: BLE001 - a forward meta cannot run: count the inputs
                pass
            return total
    except Exception:  # noqa: BLE001 - a file that needs real tensors to build: unknown
        return None


def free_bytes(device: str) -> int | None:
    if device == "cuda":
        try:
            free, _ = torch.cuda.mem_get_info()
            return int(free)
        except Exception:  # noqa: BLE001
            return None
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def footprint(path: Path, device: str) -> Footprint:
    needed = problem_bytes(path)
    return Footprint(
        bytes_needed=None if needed is None else COPIES * needed,
        bytes_free=free_bytes(device),
        device="GPU" if device == "cuda" else "host (RAM)",
    )
