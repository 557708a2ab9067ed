"""The first case of emitted problems, run once in a child process (the project's code runs
there, as in kbot.scan.extract.check_imports): inputs that kbot inferred rather than read
(`--model-config`) must be ones the reference takes before a problem is handed on."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_TIMEOUT_S = 300.0
_SCRIPT = """
import json, sys, traceback
import torch
from kbot.problem import load_problem
from kbot.problem.runtime import case_inputs, import_file, init_inputs
out = {}
for number, path in enumerate(json.loads(sys.argv[1])):
    try:
        spec = load_problem(path)
        module = import_file(path, prefix=f"kbot_smoke_{number}")
        model = module.Model(*init_inputs(module))
        with torch.no_grad():
            model(*case_inputs(module, spec.cases[0]))
        out[path] = None
    except BaseException as exc:
        out[path] = f"{type(exc).__name__}: {exc}".splitlines()[0][:300]
print("KBOT-SMOKE" + json.dumps(out))
"""


def run_first_cases(paths: list[Path]) -> dict[str, str | None]:
    """path -> None when the problem's Model ran its first case, else what it raised. A child
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
            return json.loads(line[len("KBOT-SMOKE") :])
    return {}
