"""What the shape sweep needs to know of problem files, built in a child process: each case's
input shapes and Model's plain scalar attributes, on the meta device (no memory, no compute).

Importing a problem runs the target repository's code, so the optimize process does not host
it (as `kbot scan` checks imports in a child), and a problem that hangs on import costs the
sweep, bounded by FACTS_TIMEOUT_S, never the run:

    python -m kbot.search.sweep_facts OUT.json PROBLEM.py [PROBLEM.py ...]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from kbot.evaluate.credentials import scrub_environment
from kbot.quiet_stdout import quiet_stdout

FACTS_TIMEOUT_S = 120.0


def problem_facts(paths: list[Path], timeout_s: float = FACTS_TIMEOUT_S) -> dict[str, Any]:
    """str(path) -> {"shapes": [per case: [per input: dims or None]], "scalars": {...}} or
    {"error": "..."} for each problem file."""
    if not paths:
        return {}
    with tempfile.TemporaryDirectory(prefix="kbot-sweep-") as folder:
        out = Path(folder) / "facts.json"
        command = [sys.executable, "-m", "kbot.search.sweep_facts", str(out), *map(str, paths)]
        # kbot's own credentials are not the problem's business, as in the evaluator's judge
        env = scrub_environment(os.environ)
        package_root = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=timeout_s, env=env
            )
        except subprocess.TimeoutExpired:
            return {
                str(p): {"error": f"building its inputs took over {timeout_s:.0f} s"} for p in paths
            }
        if out.is_file():
            return json.loads(out.read_text(encoding="utf-8"))
        why = (done.stderr.strip().splitlines() or ["the child process crashed"])[-1][:300]
        return {str(p): {"error": why} for p in paths}


def _facts(path: Path) -> dict[str, Any]:
    import torch

    from kbot.problem import load_problem
    from kbot.problem.runtime import case_inputs, import_file, init_inputs

    spec = load_problem(path)
    module = import_file(path, prefix="kbot_sweep")
    with torch.device("meta"):
        built = [case_inputs(module, dict(case)) for case in spec.cases or ({},)]
        try:
            model = module.Model(*init_inputs(module))
        except Exception:  # the user's constructor; no scalars then
            model = None
    shapes = [
        [list(x.shape) if isinstance(x, torch.Tensor) else None for x in args] for args in built
    ]
    scalars = {
        name: value
        for name, value in (vars(model).items() if model is not None else ())
        if not name.startswith("_")
        and name != "training"
        and isinstance(value, (bool, int, float, str))
    }
    return {"shapes": shapes, "scalars": scalars}


def main(argv: list[str]) -> None:
    out, paths = Path(argv[0]), [Path(p) for p in argv[1:]]
    facts: dict[str, Any] = {}
    for path in paths:
        try:
            with quiet_stdout():
                facts[str(path)] = _facts(path)
        except BaseException as exc:  # the user's code: its failure is this problem's answer
            facts[str(path)] = {
                "error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}"
            }
    out.write_text(json.dumps(facts), encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1:])
