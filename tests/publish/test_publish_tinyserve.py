"""The publisher on the example repository: the patched tinyserve still imports, its own
tests pass, and the rendered parity test passes inside it under Triton's interpreter."""

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

from kbot.publish.lifecycle import Action
from kbot.publish.publisher import PublishSettings, publish_run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tinyserve"


def _make_demo_repo(dest: Path) -> Path:
    spec = importlib.util.spec_from_file_location("tinyserve_demo", EXAMPLE / "make_demo_repo.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_demo_repo(dest)


def test_rmsnorm_patch_on_tinyserve_keeps_its_tests_green(make_run, tmp_path):
    repo = _make_demo_repo(tmp_path / "tinyserve")
    run_dir = make_run("custom_op", file="tinyserve/layers/norm.py", line=12)
    outcome = publish_run(
        run_dir, repo, tmp_path / "work", PublishSettings(), push=False, environ={}
    )
    assert outcome.action == Action.DRY_RUN and outcome.adapter == "forward_cuda"
    clone = outcome.clone_dir
    patched = (clone / "tinyserve/layers/norm.py").read_text()
    # tinyserve's forward_cuda takes a residual the kernel does not: the guard keeps it out.
    guard = patched[patched.index("def forward_cuda") :].split("from tinyserve")[0]
    assert "x.dtype in (torch.bfloat16,)" in guard and "and residual is None" in guard
    assert re.search(r"x\.shape\[1:\] == \(\d+,\)", guard)  # the hidden size it was checked at
    assert outcome.files[2] == "tests/test_rmsnorm_triton_parity.py"
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x", "tests"],
        cwd=clone,
        capture_output=True,
        text=True,
        env={**os.environ, "TRITON_INTERPRET": "1"},
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "failed" not in result.stdout


EXISTING_CHECK = """
import importlib.util, sys, torch
spec = importlib.util.spec_from_file_location("bench", sys.argv[1])
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)
assert bench.PROVIDERS == ["eager", "torch.compile", "existing", "kbot"], bench.PROVIDERS
existing = bench._load_existing()
model = bench.Model(*bench.get_init_inputs())
op = bench._existing_op(model, "cpu")
inputs = bench.get_inputs(**bench.BENCH_CASES[0])
torch.testing.assert_close(existing(op, *inputs), model(*inputs))
print("existing ok")
"""


def test_the_benchmark_times_the_ops_existing_forward_cuda_as_it_was(make_run, tmp_path):
    """tinyserve's RMSNorm already has a forward_cuda: the benchmark gets an "existing" column
    that runs the base branch's copy of it in the module's own namespace."""
    repo = _make_demo_repo(tmp_path / "tinyserve")
    run_dir = make_run("custom_op", file="tinyserve/layers/norm.py", line=12)
    outcome = publish_run(
        run_dir, repo, tmp_path / "work", PublishSettings(), push=False, environ={}
    )
    bench = outcome.clone_dir / outcome.files[-1]
    text = bench.read_text()
    assert (
        "def _existing_forward_cuda(" in text and "return self.forward_native(x, residual)" in text
    )
    result = subprocess.run(
        [sys.executable, "-c", EXISTING_CHECK, str(bench)],
        cwd=outcome.clone_dir,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(outcome.clone_dir)},
        timeout=300,
    )
    assert result.returncode == 0 and "existing ok" in result.stdout, result.stderr[-3000:]
