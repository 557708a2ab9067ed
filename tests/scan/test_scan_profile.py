import json
import sys

import pytest

from kbot.cli import main
from kbot.scan import Kind, ScanOptions, scan
from kbot.scan.extract import EmitStatus, emit_problems
from kbot.scan.profile import ProfileError, child_argv
from kbot.scan.rank import amdahl_speedup


@pytest.fixture(scope="module")
def toy_scanned(tmp_path_factory):
    """One profiled scan of the toy model shared by tests (a profile costs seconds)."""
    import shutil
    from pathlib import Path

    root = tmp_path_factory.mktemp("toy") / "toy"
    shutil.copytree(
        Path(__file__).parent / "fixtures" / "toy",
        root,
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    return root, _toy_scan(root)


def _toy_scan(toy_tree, **options):
    command = f"{sys.executable} {toy_tree / 'toymodel' / 'bench.py'}"
    return scan(toy_tree, ScanOptions(profile_command=command, **options))


def test_profile_ranks_ops_by_the_costs_we_set(toy_scanned):
    _, result = toy_scanned
    assert result.profile_time_kind == "cpu"
    by_name = {f.qualname: f for f in result.findings}
    heavy, mid, light = by_name["HeavyNorm"], by_name["mid_cost"], by_name["LightAct"]
    assert heavy.profile.time_share > mid.profile.time_share > light.profile.time_share
    assert result.findings[0].qualname == "HeavyNorm"
    assert heavy.profile.calls == 5 and mid.profile.calls == 5
    assert heavy.profile.e2e_speedup_if_3x == pytest.approx(
        amdahl_speedup(heavy.profile.time_share)
    )
    assert sum(f.profile.time_share for f in result.findings if f.profile) <= 1.0 + 1e-9
    # Shapes, dtypes, strides and constructor state are captured.
    shapes = {sig[0].shape for sig in heavy.profile.inputs_seen}
    assert shapes == {(256, 1024), (64, 1024)}
    assert heavy.profile.inputs_seen[0][0].dtype == "float32"
    assert heavy.profile.inputs_seen[0][0].stride == (1024, 1)
    assert heavy.profile.init_state["eps"] == 1e-6 and heavy.profile.param_shapes["weight"] == (
        1024,
    )
    # Block matched no pattern but was measured: a profiled finding for its own work.
    assert by_name["Block"].kind == Kind.PROFILED


def test_problems_from_the_profile(toy_scanned, tmp_path, import_from, run_problem):
    import torch

    toy_tree, result = toy_scanned
    emitted = {e.name: e for e in emit_problems(result, tmp_path / "p")}
    heavy = emitted["heavy_norm"]
    assert heavy.status == EmitStatus.EMITTED, heavy.message
    spec, module, model, case_inputs = run_problem(heavy.path)
    assert [c["T"] for c in spec.cases] == [64, 256]  # the token sizes seen
    assert module.get_init_inputs() == [1024, 1e-6]  # hidden_size from weight.shape[0], eps
    original = import_from(toy_tree, "toymodel.layers").HeavyNorm(1024, 1e-6)
    for inputs in case_inputs:
        assert inputs[0].shape[1] == 1024
        assert torch.allclose(model(*inputs), original(*inputs))
    assert emitted["mid_cost"].status == EmitStatus.EMITTED


def test_profile_module_function(toy_tree, monkeypatch):
    monkeypatch.chdir(toy_tree)
    result = scan(toy_tree, ScanOptions(profile_function="toymodel.bench:run"))
    assert result.findings[0].qualname == "HeavyNorm"


def test_compiled_functions_are_wrapped(tmp_path):
    package = tmp_path / "cmod"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "ops.py").write_text(
        "import torch\n\n\n@torch.compile(backend='eager')\ndef double(x):\n    return x * 2\n"
    )
    (tmp_path / "run.py").write_text(
        "import torch\nfrom cmod.ops import double\n\nfor _ in range(3):\n    double(torch.ones(4))\n"
    )
    result = scan(tmp_path, ScanOptions(profile_command=f"python {tmp_path / 'run.py'}"))
    (finding,) = [f for f in result.findings if f.qualname == "double"]
    assert finding.kind == Kind.TORCH_COMPILE and finding.profile.calls == 3
    assert finding.profile.inputs_seen[0][0].shape == (4,)


def test_failing_program_is_reported(toy_tree):
    with pytest.raises(ProfileError, match="model weights not found"):
        scan(toy_tree, ScanOptions(profile_command=f"python {toy_tree / 'toymodel' / 'fails.py'}"))


def test_profile_command_must_be_python():
    with pytest.raises(ProfileError, match="must run Python"):
        child_argv(ScanOptions(profile_command="./bench.sh"))
    with pytest.raises(ProfileError, match="pkg.module:function"):
        child_argv(ScanOptions(profile_function="nocolon"))
    assert child_argv(ScanOptions(profile_command="python -m pkg.bench --n 2")) == [
        "--",
        "-m",
        "pkg.bench",
        "--n",
        "2",
    ]


def test_scan_command_with_profile_json(toy_tree, capsys):
    code = main(
        [
            "scan",
            str(toy_tree),
            "--profile",
            f"python {toy_tree / 'toymodel' / 'bench.py'}",
            "--top",
            "1",
            "--json",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)["data"]
    assert data["profile_time_kind"] == "cpu"
    assert [e["qualname"] for e in data["matrix"]["include"]] == ["HeavyNorm"]
    assert data["findings"][0]["profile"]["time_share"] > 0.3
    assert (
        main(
            [
                "scan",
                str(toy_tree),
                "--profile",
                "python " + str(toy_tree / "toymodel" / "fails.py"),
            ]
        )
        == 2
    )


@pytest.mark.gpu
def test_profile_attributes_device_time_on_a_gpu(toy_tree):
    script = toy_tree / "gpu_bench.py"
    script.write_text(
        "import torch\n\nfrom toymodel.layers import Block\n\n"
        "block = Block(4096).cuda().to(torch.bfloat16)\n"
        "with torch.no_grad():\n"
        "    for tokens in (16, 4096, 16, 4096):\n"
        "        block(torch.randn(tokens, 4096, device='cuda', dtype=torch.bfloat16))\n"
        "torch.cuda.synchronize()\n"
    )
    result = scan(toy_tree, ScanOptions(profile_command=f"python {script}"))
    assert result.profile_time_kind == "device"
    by_name = {f.qualname: f for f in result.findings}
    heavy, mid, light = by_name["HeavyNorm"], by_name["mid_cost"], by_name["LightAct"]
    assert result.findings[0].qualname == "HeavyNorm"
    assert heavy.profile.time_share > mid.profile.time_share > light.profile.time_share
    assert heavy.profile.inputs_seen[0][0].dtype == "bfloat16"
