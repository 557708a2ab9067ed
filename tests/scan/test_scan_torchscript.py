"""Functions marked for TorchScript's fuser (`@torch.jit.script`, as text-generation-inference,
nanotron and Megatron-style code mark their hot ops) are targets like `@torch.compile` ones:
found once with the spelling that marks them, their problems run the Python function eagerly
(imported or rebuilt), and codegen traces them."""

from __future__ import annotations

import torch

from kbot.problem import load_problem
from kbot.propose.codegen import generate
from kbot.scan import Kind, ScanOptions, TargetHint, scan
from kbot.scan.extract import EmitStatus, emit_problems

OPS = '''"""Fused ops of a small engine."""

import torch
from torch.jit import script as jit_script


@torch.jit.script
def bias_gelu(bias: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    x = bias + y
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


@jit_script
def t5_layer_norm(hidden_states: torch.Tensor, weight: torch.Tensor, epsilon: float):
    variance = hidden_states.to(torch.float32).pow(2).mean(-1, keepdim=True)
    hidden_states = hidden_states * torch.rsqrt(variance + epsilon)
    return weight * hidden_states.to(weight.dtype)


def plain(x):
    return x + 1
'''

HIDDEN = {"shape": ("T", 96), "dtype": "float32"}
CASES = ({"T": 1}, {"T": 5})


def _tree(tmp_path):
    package = tmp_path / "repo" / "fusedeng"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "fused.py").write_text(OPS)
    return tmp_path / "repo"


def _hints():
    return (
        TargetHint(
            "fusedeng/fused.py::bias_gelu",
            inputs={"bias": {"shape": (96,), "dtype": "float32"}, "y": HIDDEN},
        ),
        TargetHint(
            "fusedeng/fused.py::t5_layer_norm",
            inputs={"hidden_states": HIDDEN, "weight": {"shape": (96,), "dtype": "float32"}},
            init={"epsilon": 1e-6},
        ),
    )


def test_scripted_functions_are_found_once_with_their_spelling(tmp_path):
    result = scan(_tree(tmp_path), ScanOptions(cases=CASES))
    found = {f.qualname: f for f in result.findings}
    assert set(found) == {"bias_gelu", "t5_layer_norm"}
    assert found["bias_gelu"].kind == Kind.TORCH_COMPILE
    assert found["bias_gelu"].fast_path == "compiled with @torch.jit.script"
    assert found["t5_layer_norm"].fast_path == "compiled with @jit_script"


def test_problems_run_the_python_function_and_codegen_traces_them(tmp_path, run_problem):
    tree = _tree(tmp_path)
    options = ScanOptions(cases=CASES, targets=_hints())
    result = scan(tree, options)
    emitted = {e.name: e for e in emit_problems(result, tmp_path / "problems", options)}
    assert {name: e.status for name, e in emitted.items()} == {
        "bias_gelu": EmitStatus.EMITTED,
        "t5_layer_norm": EmitStatus.EMITTED,
    }, {name: e.reason for name, e in emitted.items()}
    for name, entry in emitted.items():
        spec, module, model, inputs = run_problem(entry.path)
        reference = getattr(module, "_reference", None)
        assert reference is not None and not isinstance(reference, torch.jit.ScriptFunction)
        with torch.no_grad():
            assert model(*inputs[0]).shape[0] == 1
        assert generate(load_problem(entry.path)), name


def test_a_rebuilt_problem_drops_the_script_decorator(tmp_path, run_problem):
    # The module needs a package this machine lacks, so the problem copies the function.
    tree = _tree(tmp_path)
    fused = tree / "fusedeng" / "fused.py"
    fused.write_text(
        fused.read_text().replace("import torch\n", "import torch\nimport not_installed_here\n", 1)
    )
    options = ScanOptions(cases=CASES, targets=_hints())
    emitted = emit_problems(scan(tree, options), tmp_path / "problems", options)
    entry = next(e for e in emitted if e.name == "t5_layer_norm")
    assert entry.status == EmitStatus.EMITTED, entry.reason
    text = entry.path.read_text()
    assert "rebuilt from source" in text and "\ndef t5_layer_norm(" in text
    assert "script" not in text  # neither the decorator nor its import came along
    spec, module, model, inputs = run_problem(entry.path)
    assert not isinstance(module.t5_layer_norm, torch.jit.ScriptFunction)
    assert generate(load_problem(entry.path))
