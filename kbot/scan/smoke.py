"""The first cases of emitted problems, run once in a child process (the project's code runs
there, as in kbot.scan.extract.check_imports): inputs that kbot inferred rather than read
(`--model-config`) must be ones the reference takes before a problem is handed on. The first
case and the smallest other one run, so a layout that only broadcasts at one token is caught,
and so is one whose output grows faster than the case from one to the other (a [T, 1, 1, D]
table against [T, H, D] heads runs at every T, as a [T, T, H, D] product)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_TIMEOUT_S = 300.0
_SCRIPT = """
import json, os, sys, traceback
import torch
from kbot.problem import load_problem
from kbot.problem.runtime import case_inputs, import_file, init_inputs
def _volume(case):
    volume = 1
    for value in case.values():
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            volume *= value
    return volume
def _numel(value):
    if isinstance(value, torch.Tensor):
        return value.numel()
    if isinstance(value, (list, tuple)):
        return sum(_numel(v) for v in value)
    if isinstance(value, dict):
        return sum(_numel(v) for v in value.values())
    return 0
out = {}
for number, path in enumerate(json.loads(sys.argv[1])):
    case = None
    try:
        spec = load_problem(path)
        module = import_file(path, prefix=f"kbot_smoke_{number}")
        model = module.Model(*init_inputs(module))
        first, others = spec.cases[0], spec.cases[1:]
        # Then the smallest other case: a layout that runs at T=1 only by broadcasting
        # (a [1, ...] table against any head count) fails there.
        todo = [first] + sorted(others, key=lambda c: sum(c.values()))[:1]
        sizes = []
        with torch.no_grad():
            for case in todo:
                sizes.append((_volume(case), _numel(model(*case_inputs(module, case)))))
        if len(sizes) == 2 and 0 not in sizes[0] and 0 not in sizes[1]:
            grew_case, grew_out = sizes[1][0] / sizes[0][0], sizes[1][1] / sizes[0][1]
            if grew_out > grew_case * 1.01:
                raise ValueError(
                    f"its output grew {grew_out:.0f}x from its first case to one {grew_case:.0f}x "
                    "its size: the inputs broadcast against each other across tokens"
                )
        out[path] = None
    except BaseException as exc:
        said = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
        if not str(exc).strip():  # a bare `assert`: the line that raised says what it wanted
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            said = (f"{type(exc).__name__} at {os.path.basename(frame.filename)}:{frame.lineno}: "
                    f"{(frame.line or '').strip()}")[:300]
        if case is not None and case != spec.cases[0]:
            said += " (on case " + ", ".join(f"{k}={v}" for k, v in case.items()) + ")"
        # What no input could change: a package the module imports, a GPU the reference wants.
        needs = ""
        text = str(exc)
        if isinstance(exc, ModuleNotFoundError) and exc.name:
            needs = "package `" + exc.name.split(".")[0] + "`"
        elif ("not compiled with CUDA" in text or "NVIDIA driver" in text
              or "no CUDA GPUs" in text or "CUDA is not available" in text):
            needs = "a CUDA GPU"
        out[path] = {"said": said, "needs": needs}
print("KBOT-SMOKE" + json.dumps(out))
"""


@dataclass(frozen=True)
class Refusal:
    """What a problem's first cases raised; `needs` names what this machine lacks when no
    other input could help (`package `tyro``, `a CUDA GPU`), else it is empty."""

    said: str
    needs: str = ""


def run_first_cases(paths: list[Path]) -> dict[str, Refusal | None]:
    """path -> None when the problem's Model ran its first cases, else what it raised. A child
    that crashes or overruns says so for every path (the caller keeps those problems: kbot
    could not check them, which is not the reference refusing its inputs)."""
    if not paths:
        return {}
    todo = json.dumps([str(p) for p in paths])
    try:
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT, todo],
            capture_output=True, text=True, timeout=_TIMEOUT_S, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {}
    for line in done.stdout.splitlines():
        if line.startswith("KBOT-SMOKE"):
            ran = json.loads(line[len("KBOT-SMOKE") :])
            return {path: Refusal(**said) if said else None for path, said in ran.items()}
    return {}
