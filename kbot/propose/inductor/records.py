"""What a torch.compile capture holds, and its JSON form (the files bench/inductor_capture.py
writes and the CPU tests read): the output code, each kernel's chosen launch config, and what
each argument of inductor's `call(args)` is in terms of the model and its forward inputs."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

GRAPH_SEPARATOR = "\n\n# ---- next graph ----\n\n"


class Unsupported(Exception):
    """The capture holds something the extraction cannot turn into a standalone candidate."""


@dataclass(frozen=True)
class LaunchConfig:
    """The config inductor's autotuner settled on for one kernel (its first launcher)."""

    kwargs: tuple[tuple[str, Any], ...]  # constexpr block sizes, e.g. (("XBLOCK", 1), ...)
    num_warps: int
    num_stages: int
    grid_type: str  # inductor_meta["grid_type"]: Grid1D, Grid2D, ...


@dataclass(frozen=True)
class GraphInput:
    """One argument of inductor's `call(args)`, as dynamo's placeholder source names it:
    `L['x']`, `L['x'].size()[0]`, `L['self']._parameters['weight']`, `L['self'].eps`."""

    source: str
    kind: str  # tensor | symint | scalar (a Python number dynamo passes as a 0-d tensor)


@dataclass(frozen=True)
class Capture:
    problem: str  # the problem file's name
    code: str  # inductor's output code; graphs joined by GRAPH_SEPARATOR
    kernels: dict[str, LaunchConfig]  # by the kernel's name in the output code
    graph_inputs: tuple[GraphInput, ...]  # empty in captures made before they were recorded
    output_count: int | None  # tensors forward returns; None when not recorded
    returns_tuple: bool
    dynamic: bool
    case: dict[str, Any]
    torch_version: str
    triton_version: str
    gpu: str

    @property
    def graphs(self) -> list[str]:
        return self.code.split(GRAPH_SEPARATOR)

    @property
    def mode(self) -> str:
        return "dynamic" if self.dynamic else "static"


def capture_from_json(code: str, meta: dict[str, Any]) -> Capture:
    """A Capture from the output code and the JSON written next to it."""
    kernels = {}
    for name, entry in meta.get("kernels", {}).items():
        configs = entry.get("launch_configs") or []
        if not configs:
            continue
        first = configs[0]
        kernels[name] = LaunchConfig(
            kwargs=tuple(sorted(first.get("kwargs", {}).items())),
            num_warps=int(first.get("num_warps", 4)),
            num_stages=int(first.get("num_stages", 1)),
            grid_type=str(entry.get("inductor_meta", {}).get("grid_type", "")),
        )
    inputs = tuple(GraphInput(i["source"], i["kind"]) for i in meta.get("graph_inputs", []))
    return Capture(
        problem=str(meta.get("problem", "")),
        code=code,
        kernels=kernels,
        graph_inputs=inputs,
        output_count=meta.get("output_count"),
        returns_tuple=bool(meta.get("returns_tuple", False)),
        dynamic=bool(meta.get("dynamic", True)),
        case=dict(meta.get("case", {})),
        torch_version=str(meta.get("torch", "unknown")),
        triton_version=str(meta.get("triton", "unknown")),
        gpu=str(meta.get("gpu", "unknown")),
    )


def load_capture(code_path: Path) -> Capture:
    """`<op>__<mode>.py` and the `<op>__<mode>.json` beside it."""
    meta = json.loads(code_path.with_suffix(".json").read_text())
    return capture_from_json(code_path.read_text(), meta)
