"""`kbot pr` on what the real upstream stages produce: the scanner's problem for tinyserve's
RMSNorm (import mode), the real evaluator's verdict on kbot's fixture kernel and its shape
sweep. The patched tinyserve's own tests and the rendered parity test, which checks the swept
sizes too, then pass under Triton's interpreter."""

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import torch

from kbot.commands import pr as pr_command
from kbot.config import load_config
from kbot.errors import ExitCode
from kbot.evaluate import EvalOptions, Evaluator, evaluate
from kbot.problem import load_problem
from kbot.publish.pipeline import extract_targets
from kbot.search.sweep import run_sweep, sweep_points

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tinyserve"
FIXTURE_RUN = Path(__file__).parent / "fixtures" / "runs" / "rmsnorm_layer"


def _make_demo_repo(dest: Path) -> Path:
    spec = importlib.util.spec_from_file_location(
        "tinyserve_demo_real", EXAMPLE / "make_demo_repo.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_demo_repo(dest)


def test_pr_from_scanner_problem_and_evaluator_verdict(tmp_path, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    repo = _make_demo_repo(tmp_path / "tinyserve")
    config = load_config(repo)
    (extracted,) = [
        e for e in extract_targets(repo, config, tmp_path / "scan") if e.name == "rmsnorm"
    ]
    run_dir = tmp_path / "work" / "runs" / "rmsnorm-real"
    run_dir.mkdir(parents=True)
    shutil.copy(extracted.problem, run_dir / "problem.py")
    shutil.copy(extracted.target_json, run_dir / "target.json")
    for name in ("best_candidate.py", "kernel.py"):
        shutil.copy(FIXTURE_RUN / name, run_dir / name)
    verdict = evaluate(
        load_problem(run_dir / "problem.py"),
        (run_dir / "best_candidate.py").read_text(),
        EvalOptions(device="cpu"),
    )
    assert verdict.accepted, [str(r) for r in verdict.reasons]
    problem = load_problem(run_dir / "problem.py")
    points, _ = sweep_points(problem, run_dir / "sweep")
    with Evaluator(EvalOptions(device="cpu")) as evaluator:
        sweep = run_sweep(evaluator.evaluate_sweep, (run_dir / "best_candidate.py").read_text(),
                          points)  # fmt: skip
    # the hidden size's points, then the rows point: T = 16 split into [2, 8, hidden]
    assert [(p["to"], p["status"]) for p in sweep["points"]] == [
        (896, "passed"), (2560, "passed"), (8192, "passed"), (3000, "passed"), (8, "passed")
    ]  # fmt: skip
    assert sweep["points"][-1]["kind"] == "rows"
    report = {"verdict": verdict.to_json(), "sweep": sweep}
    (run_dir / "report.json").write_text(json.dumps(report))

    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    pr_command.add_arguments(parser)
    result = pr_command.run(parser.parse_args([str(run_dir)]))  # --repo from target.json's root
    assert result.exit_code == ExitCode.OK
    outcome = result.data["outcome"]
    assert outcome.adapter == "forward_cuda" and outcome.files[1] == "tinyserve/layers/norm.py"
    parity = (outcome.clone_dir / outcome.files[2]).read_text()
    assert str(tmp_path) not in parity and "sys.path" not in parity  # nothing machine-specific
    assert "PARITY_CASES += [" in parity and '{"T": 1, "dim_2048": 8192}' in parity
    norm = (outcome.clone_dir / outcome.files[1]).read_text()
    assert "x.shape[-1] <= 8192" in norm and "(2048,)" not in norm  # generic, not one size
    assert "x.dim() in (2, 3)" in norm  # [T, hidden] or [batch, seqlen, hidden]: both checked
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=outcome.clone_dir,
        capture_output=True,
        text=True,
        env={**os.environ, "TRITON_INTERPRET": "1"},
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:]
    assert " passed" in done.stdout
    swept = subprocess.run(  # the kernel at the swept sizes: 4 sizes x 3 seeds, bfloat16
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "dim_2048",
         outcome.files[2]],
        cwd=outcome.clone_dir, capture_output=True, text=True,
        env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=900,
    )  # fmt: skip
    # 4 sizes x 3 seeds; where CUDA is, the patched op's dispatch is checked at each size too.
    expected = 12 + (4 if torch.cuda.is_available() else 0)
    assert f"{expected} passed" in swept.stdout, swept.stdout[-3000:]
