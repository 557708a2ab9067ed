import difflib
import subprocess
import sys
from pathlib import Path

import pytest

from kbot.publish.adapters import AdapterError, choose_adapter
from kbot.publish.artifacts import build_publication
from kbot.publish.rundir import load_run_dir

STYLES = ["custom_op", "fused_op", "torch_compile", "default_backend", "function"]
EXPECTED_ADAPTER = {
    "custom_op": "forward_cuda",
    "fused_op": "forward_triton",
    "torch_compile": "guarded_dispatch",
    "default_backend": "lmdeploy_builder",
    "function": "guarded_dispatch",
}


def _apply(repo: Path, publication) -> None:
    for change in publication.files:
        path = repo / change.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(change.content, encoding="utf-8")


def _added_lines(repo: Path, publication) -> dict[str, list[str]]:
    """Per edited file, the lines the diff adds; asserts it removes none."""
    added = {}
    for change in publication.files:
        if change.created:
            continue
        before = (repo / change.path).read_text().splitlines()
        diff = list(difflib.unified_diff(before, change.content.splitlines(), lineterm="", n=0))
        assert not [d for d in diff[2:] if d.startswith("-")], diff
        added[change.path] = [d[1:] for d in diff[2:] if d.startswith("+")]
    return added


@pytest.mark.parametrize("style", STYLES)
def test_each_style_gets_its_adapter_and_a_minimal_diff(style, make_run, target_repo):
    run = load_run_dir(make_run(style))
    publication = build_publication(run, target_repo, "", "0" * 40, ("kbot",))
    assert publication.adapter == EXPECTED_ADAPTER[style]
    added = _added_lines(target_repo, publication)
    lines = [line for file_lines in added.values() for line in file_lines]
    # Only the guarded dispatch and its scaffolding are added; nothing of the original is touched.
    assert any(
        "is_contiguous()" in line for line in lines + publication.files[1].content.splitlines()
    )
    assert len(lines) <= 17  # a guard past 88 columns is split one condition per line
    created = {c.path for c in publication.files if c.created}
    assert any(p.endswith(f"triton_{run.op}.py") for p in created)
    assert f"tests/test_{run.op}_triton_parity.py" in created
    assert f"benchmarks/bench_{run.op}_triton.py" in created


def test_forward_cuda_method_copies_the_reference_signature(make_run, target_repo):
    publication = build_publication(
        load_run_dir(make_run("custom_op")), target_repo, "", "0" * 40, ()
    )
    added = _added_lines(target_repo, publication)["minisrv/layers/norm.py"]
    assert added[1] == "    def forward_cuda(self, x: torch.Tensor) -> torch.Tensor:"
    assert added[2:12] == [
        "        if (",
        "            x.dtype in (torch.bfloat16,)",
        "            and x.is_contiguous()",
        "            and x.data_ptr() % 16 == 0",
        "            and x.shape[1:] == (256,)",
        "            and x.shape[0] <= 64",
        "            and self.weight.dtype == torch.float32",
        # the weight the kernel reads has no gradient from it: training keeps the original
        "            and not (torch.is_grad_enabled() and (x.requires_grad or self.weight.requires_grad))",
        "            and torch.get_default_dtype() == torch.float32",
        "        ):",
    ]
    assert added[-1] == "        return self.forward_native(x)"


def test_existing_forward_cuda_gets_the_dispatch_at_its_top(make_run, target_repo):
    norm = target_repo / "minisrv/layers/norm.py"
    norm.write_text(
        norm.read_text()
        + "\n    def forward_cuda(self, x, residual=None):\n"
        + "        return self.forward_native(x)\n"
    )
    publication = build_publication(
        load_run_dir(make_run("custom_op")), target_repo, "", "0" * 40, ()
    )
    added = _added_lines(target_repo, publication)["minisrv/layers/norm.py"]
    # The extra parameter the problem did not pass must be at its default for the kernel to run.
    assert "residual is None" in added[0] or "residual is None" in " ".join(added)
    assert added[-1].strip() == "return rmsnorm(x, self.weight, self.variance_epsilon)"


def test_lmdeploy_registry_already_having_the_op_is_refused(make_run, target_repo):
    registry = target_repo / "minisrv/backends/cuda/op_backend.py"
    registry.write_text(registry.read_text().replace("OpType.SiluAndMul", "OpType.RMSNorm"))
    with pytest.raises(AdapterError, match="already has a builder for OpType.RMSNorm"):
        build_publication(load_run_dir(make_run("default_backend")), target_repo, "", "0" * 40, ())


def test_plain_function_cannot_take_a_call_reading_self(make_run, target_repo):
    with pytest.raises(AdapterError, match="plain function"):
        build_publication(
            load_run_dir(make_run("torch_compile", qualname="silu_and_mul", file="minisrv/ops.py")),
            target_repo,
            "",
            "0" * 40,
            (),
        )


def test_configured_adapter_overrides_the_kind_and_unknown_names_are_listed():
    assert choose_adapter("guarded_dispatch", "custom_op", "", "RMSNorm") == "guarded_dispatch"
    with pytest.raises(AdapterError, match="forward_cuda"):
        choose_adapter("forward_cuda_typo", "custom_op", "", "RMSNorm")


def test_patched_repo_imports_and_its_tests_and_the_parity_test_pass(make_run, target_repo):
    """All five styles applied together; the repo's own tests plus the rendered parity tests
    run under Triton's interpreter inside the patched checkout."""
    for style in ["custom_op", "default_backend", "function"]:
        publication = build_publication(
            load_run_dir(make_run(style)), target_repo, "", "0" * 40, ()
        )
        _apply(target_repo, publication)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=target_repo,
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "TRITON_INTERPRET": "1"},
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:]
    assert " passed" in result.stdout and "failed" not in result.stdout


def _bench(publication) -> str:
    return next(f.content for f in publication.files if "/bench_" in f.path)


def test_bench_times_a_copy_of_a_patched_function(make_run, target_repo, monkeypatch):
    monkeypatch.syspath_prepend(str(target_repo))  # what the problem's _ROOT set-up does
    run_dir = make_run("function")
    problem = run_dir / "problem.py"
    # The scanner's import mode: the reference calls the target function itself.
    problem.write_text(
        problem.read_text()
        .replace(
            "import torch.nn.functional as F\n",
            "from minisrv.ops import silu_and_mul\n\n_reference = silu_and_mul\n",
        )
        .replace(
            "        d = x.shape[-1] // 2\n        return F.silu(x[..., :d]) * x[..., d:]",
            "        return _reference(x)",
        )
    )
    bench = _bench(build_publication(load_run_dir(run_dir), target_repo, "", "0" * 40, ()))
    assert "def _original_silu_and_mul(x: torch.Tensor) -> torch.Tensor:" in bench
    assert "_reference = _original_silu_and_mul" in bench
    assert 'PROVIDERS = ["eager", "torch.compile", "kbot"]' in bench
    compile(bench, "bench.py", "exec")


def test_bench_of_a_patched_method_reference_times_only_the_kernel(
    make_run, target_repo, monkeypatch
):
    monkeypatch.syspath_prepend(str(target_repo))  # what the problem's _ROOT set-up does
    run_dir = make_run("torch_compile")
    problem = run_dir / "problem.py"
    problem.write_text(
        problem.read_text().replace(
            "import torch.nn as nn\n",
            "import torch.nn as nn\n\nfrom minisrv.layers.compiled import CompiledRMSNorm\n\nBASE = CompiledRMSNorm\n",
        )
    )
    bench = _bench(build_publication(load_run_dir(run_dir), target_repo, "", "0" * 40, ()))
    assert 'PROVIDERS = ["kbot"]' in bench and "git checkout 000000000000" in bench


def test_a_class_named_alone_with_its_entry_method_gets_a_guarded_method(make_run, target_repo):
    # `.kbot.yml` targets like `layers/rotary.py::RotaryEmbedding.forward` reach the publisher as
    # qualname `RotaryEmbedding` with entry `forward`, kind `config_target`.
    alone = load_run_dir(
        make_run("torch_compile", qualname="CompiledRMSNorm", entry="forward", kind="config_target")
    )
    dotted = load_run_dir(make_run("torch_compile"))
    by_class = build_publication(alone, target_repo, "", "0" * 40, ("kbot",))
    by_method = build_publication(dotted, target_repo, "", "0" * 40, ("kbot",))
    assert by_class.adapter == "guarded_dispatch"
    assert _added_lines(target_repo, by_class) == _added_lines(target_repo, by_method)


def test_lmdeploy_impl_keeps_the_default_impl_signature_and_guards_the_optional_input(
    make_run, target_repo
):
    publication = build_publication(
        load_run_dir(make_run("default_backend")), target_repo, "", "0" * 40, ()
    )
    builder = next(f for f in publication.files if f.path.endswith("_builder.py"))
    # Callers that leave `residual` out still reach the impl, and take the original path.
    assert "    def forward(self, x, weight, residual=None):" in builder.content
    assert "and residual is None" in builder.content
    assert "return super().forward(x, weight, residual)" in builder.content


def test_a_torchscript_function_keeps_its_body_and_a_python_function_dispatches(
    make_run, target_repo
):
    """TorchScript cannot launch a Triton kernel: the scripted original keeps its decorator
    under a new name, and a plain function of the old name dispatches; in the patched checkout
    the module imports (TorchScript compiles it), the CPU takes the original, and the parity
    test passes."""
    publication = build_publication(
        load_run_dir(make_run("scripted")), target_repo, "", "0" * 40, ()
    )
    assert publication.adapter == "guarded_dispatch"
    patched = next(c.content for c in publication.files if c.path == "minisrv/scripted.py")
    before = (target_repo / "minisrv/scripted.py").read_text().splitlines()
    diff = list(difflib.unified_diff(before, patched.splitlines(), lineterm="", n=0))[2:]
    # the one line changed is the scripted function's name
    assert [d for d in diff if d.startswith("-")] == [
        "-def silu_and_mul(x: torch.Tensor) -> torch.Tensor:"
    ]
    added = [d[1:] for d in diff if d.startswith("+")]
    assert "def _silu_and_mul_scripted(x: torch.Tensor) -> torch.Tensor:" in added
    assert "def silu_and_mul(x: torch.Tensor) -> torch.Tensor:" in added
    assert "    return _silu_and_mul_scripted(x)" in added
    assert "@torch.jit.script\ndef _silu_and_mul_scripted(" in patched
    assert "original TorchScript function" in " ".join(publication.body.split())
    _apply(target_repo, publication)
    check = (
        "import torch\n"
        "from minisrv.scripted import silu_and_mul, _silu_and_mul_scripted\n"
        "assert isinstance(_silu_and_mul_scripted, torch.jit.ScriptFunction)\n"
        "assert not isinstance(silu_and_mul, torch.jit.ScriptFunction)\n"
        "x = torch.randn(3, 8)\n"
        "torch.testing.assert_close(silu_and_mul(x), _silu_and_mul_scripted(x))\n"
    )
    env = {**__import__("os").environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run(
        [sys.executable, "-c", check], cwd=target_repo, capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    parity = next(c.path for c in publication.files if c.path.endswith("_parity.py"))
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", parity],
        cwd=target_repo,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout[-3000:]


def test_a_torchscript_function_called_by_another_is_refused(make_run, target_repo):
    run = make_run("scripted", qualname="gelu_and_mul", line=14)
    with pytest.raises(AdapterError, match="called by the TorchScript function"):
        build_publication(load_run_dir(run), target_repo, "", "0" * 40, ())
