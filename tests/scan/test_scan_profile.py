import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from kbot.cli import main
from kbot.scan import Kind, ScanOptions, scan
from kbot.scan.extract import EmitStatus, emit_problems
from kbot.scan.profile import ProfileError, _parse, child_argv
from kbot.scan.profile_child import _exclusive_times
from kbot.scan.rank import amdahl_speedup

RECORDED_PROFILE = Path(__file__).parent / "fixtures" / "toy_profile.json"


@pytest.fixture(scope="module")
def toy_scanned(tmp_path_factory):
    """One profiled scan of the toy model shared by tests (a profile costs seconds)."""
    import shutil

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


def test_profile_records_calls_inputs_and_state(toy_scanned):
    """A live profile of the toy model. Its times are CPU timings that load can reorder, so only
    their bounds are checked here; the ranking is checked on a recorded profile below."""
    _, result = toy_scanned
    assert result.profile_time_kind == "cpu"
    by_name = {f.qualname: f for f in result.findings}
    heavy, mid, light = by_name["HeavyNorm"], by_name["mid_cost"], by_name["LightAct"]
    assert heavy.profile.calls == mid.profile.calls == light.profile.calls == 5
    assert all(f.profile.self_time_us > 0 for f in (heavy, mid, light))
    assert sum(f.profile.time_share for f in result.findings if f.profile) <= 1.0 + 1e-9
    # Shapes, dtypes, strides and constructor state are captured.
    shapes = {sig[0].shape for sig in heavy.profile.inputs_seen}
    assert shapes == {(256, 1024), (64, 1024)}
    assert heavy.profile.inputs_seen[0][0].dtype == "float32"
    assert heavy.profile.inputs_seen[0][0].stride == (1024, 1)
    assert heavy.profile.init_state["eps"] == 1e-6 and heavy.profile.param_shapes["weight"] == (
        1024,
    )


def test_profile_ranks_ops_by_their_recorded_time(toy_tree, monkeypatch):
    """The scan of the toy model with the profiler child's output recorded from one run
    (fixtures/toy_profile.json) in place of a live, load-dependent one."""
    recorded = _parse(json.loads(RECORDED_PROFILE.read_text()))
    wrapped = []

    def run_recorded(root, options, functions):
        wrapped.append(functions)
        return recorded

    monkeypatch.setattr("kbot.scan.profile.run_profile", run_recorded)
    result = _toy_scan(toy_tree)
    assert wrapped == [{"toymodel/layers.py": ["mid_cost"]}]  # the marked function is timed
    by_name = {f.qualname: f for f in result.findings}
    heavy, mid, light = by_name["HeavyNorm"], by_name["mid_cost"], by_name["LightAct"]
    assert heavy.profile.time_share > mid.profile.time_share > light.profile.time_share
    assert result.findings[0].qualname == "HeavyNorm"
    assert heavy.profile.time_share == pytest.approx(2629591 / 3341864)
    assert heavy.profile.e2e_speedup_if_3x == pytest.approx(
        amdahl_speedup(heavy.profile.time_share)
    )
    # Block matched no pattern but was measured: a profiled finding for its own work.
    assert by_name["Block"].kind == Kind.PROFILED


def test_nested_ranges_are_subtracted_from_their_parents_time():
    """The child's exclusive times, on profiler events with times we set: Block's range holds
    HeavyNorm's directly and mid_cost's under an aten op; work outside any range is in the total
    only."""
    mid = _event("kbot::layers.py::mid_cost", 25.0)
    norm = _event("kbot::layers.py::HeavyNorm", 60.0, [_event("aten::mul", 50.0)])
    block = _event("kbot::layers.py::Block", 100.0, [norm, _event("aten::add", 30.0, [mid])])
    outside = _event("aten::randn", 5.0)
    events = [block, norm, *norm.cpu_children, *block.cpu_children[1:], mid, outside]
    times, total = _exclusive_times(events, use_device=False)
    assert times == {
        "kbot::layers.py::Block": 15.0,
        "kbot::layers.py::HeavyNorm": 60.0,
        "kbot::layers.py::mid_cost": 25.0,
    }
    assert total == 105.0


def _event(name: str, total_us: float, children=()) -> SimpleNamespace:
    """A torch.profiler event as `_exclusive_times` reads it, parent links set."""
    event = SimpleNamespace(
        name=name,
        cpu_time_total=total_us,
        cpu_children=list(children),
        cpu_parent=None,
        device_type="DeviceType.CPU",
    )
    for child in children:
        child.cpu_parent = event
    return event


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
    assert result.profile_time_kind == "cpu"
    by_name = {f.qualname: f for f in result.findings}
    assert by_name["HeavyNorm"].profile.calls == 5 and by_name["mid_cost"].profile.calls == 5


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
    # --top 1: the one best-ranked target (which op that is, CPU timings decide)
    assert [e["qualname"] for e in data["matrix"]["include"]] == [data["findings"][0]["qualname"]]
    assert data["findings"][0]["profile"]["time_share"] > 0
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


def test_profile_cmd_records_the_shapes_the_command_called_with_as_cases(
    toy_tree, capsys, tmp_path
):
    # --profile-cmd (the name issue 14 gives it) is --profile: the user's own command, e.g. the
    # repository's tests, run with hooks on the targets.
    args = ["scan", str(toy_tree), "--profile-cmd", f"python {toy_tree / 'toymodel' / 'bench.py'}"]
    code = main([*args, "--emit-problems", str(tmp_path / "problems"), "--json"])
    assert code == 0
    problems = {p["name"]: p for p in json.loads(capsys.readouterr().out)["data"]["problems"]}
    heavy = problems["heavy_norm"]
    assert heavy["status"] == "emitted" and heavy["inputs_from"] == "profile"
    # bench.py calls the block with 8 * 8 and 32 * 8 rows.
    assert heavy["cases"] == [{"T": 64}, {"T": 256}]
    assert "profile" in (tmp_path / "problems" / "heavy_norm.py").read_text()


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


def test_a_failing_profile_command_shows_the_end_of_its_stderr(tmp_path, capsys):
    """The last 20 lines the program wrote to stderr, its own traceback's end among them
    (without the profiler's frames), so the user sees why their command failed."""
    (tmp_path / "crashes.py").write_text(
        "import sys\n\nfor i in range(30):\n    print(f'line {i}', file=sys.stderr)\n"
        "raise RuntimeError('the model file is missing')\n"
    )
    code = main(["scan", str(tmp_path), "--profile-cmd", f"python {tmp_path / 'crashes.py'}"])
    err = capsys.readouterr().err.rstrip().splitlines()
    assert code == 2
    assert err[0] == (
        "kbot: error: the profiled program raised RuntimeError; the last 20 lines of its stderr:"
    )
    assert err[-4:] == [
        "  Traceback (most recent call last):",
        f'    File "{tmp_path / "crashes.py"}", line 5, in <module>',
        "      raise RuntimeError('the model file is missing')",
        "  RuntimeError: the model file is missing",
    ]
    assert err[1:17] == [f"  line {i}" for i in range(14, 30)] and len(err) == 21


def test_the_profilers_own_log_lines_are_not_shown_as_the_programs():
    from kbot.scan.profile import _stderr_tail

    stderr = (
        "STAGE:2024-05-01 12:00:00 1234:1234 ActivityProfilerController.cpp:314] Completed\n"
        "weights not found\n"
        "USDT:2026-12-07 05:22:32 28332:28332 SyncActivityProfilerHandler.cpp:59] profiler_stop\n"
    )
    assert _stderr_tail(stderr) == "; its stderr:\n  weights not found"
    assert _stderr_tail("") == "; it wrote nothing to stderr"


def test_a_module_its_callers_hold_in_bf16_is_judged_with_bf16_weights(toy_tree, capsys, tmp_path):
    """Red-team round fourteen's c02: a kernel with another path for a 16-bit weight passed a
    judge whose problem kept the constructor's fp32 weights, while the callers cast the model
    to bf16. The profile records the dtypes the callers hold the module's tensors in, and the
    problem's Model casts them so, saying so in its header."""
    import torch

    bench = toy_tree / "toymodel" / "bench_bf16.py"
    bench.write_text(
        "import torch\n\nfrom toymodel.layers import Block\n\n"
        "block = Block(1024).to(torch.bfloat16)\n"
        "with torch.no_grad():\n"
        "    for tokens in (8, 32):\n"
        "        block(torch.randn(tokens, 1024, dtype=torch.bfloat16))\n"
    )
    args = ["scan", str(toy_tree), "--profile-cmd", f"python {bench}"]
    assert main([*args, "--emit-problems", str(tmp_path / "problems"), "--json"]) == 0
    capsys.readouterr()
    path = tmp_path / "problems" / "heavy_norm.py"
    text = path.read_text()
    assert "the dtypes the profiled callers held them in: weight bfloat16." in text
    from kbot.problem.runtime import case_inputs, import_file, init_inputs

    module = import_file(path)
    model = module.Model(*init_inputs(module))
    assert model.weight.dtype == torch.bfloat16
    (x,) = case_inputs(module, {"T": 8})
    assert x.dtype == torch.bfloat16 and model(x).dtype == torch.bfloat16
