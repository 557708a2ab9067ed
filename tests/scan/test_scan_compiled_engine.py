"""A Qwen3-shaped engine whose hot ops are `@torch.compile` methods and forwards (issue 14):
each target is found once, its problem runs the reference eagerly, matches the original op
and can be traced by the codegen; a method other than forward is a target with its own
arguments."""

from __future__ import annotations

import json

import pytest
import torch

from kbot.scan import Kind, ScanOptions, Status, TargetHint, scan
from kbot.scan.extract import EmitStatus, emit_problems
from kbot.scan.table import target_id

LAYERS = "qwenlite/layers"
CONFIGURED = ("rmsnorm", "add_rmsnorm", "silu_and_mul", "rope")


def _options(tree, extra_hints=()):
    from kbot.config import load_config

    config = load_config(tree)
    hints = tuple(TargetHint.from_config(t) for t in config.targets) + tuple(extra_hints)
    return ScanOptions(exclude=tuple(config.scan.exclude), targets=hints), config.root


def _emit(tree, tmp_path, extra_hints=(), check_import=True):
    options, root = _options(tree, extra_hints)
    result = scan(tree, options, config_root=root)
    emitted = emit_problems(result, tmp_path / "problems", options, check_import=check_import)
    return result, {e.name: e for e in emitted}


def _originals(import_from, tree):
    """The fixture's ops as the engine builds them, weights randomised."""
    torch.manual_seed(0)
    norm = import_from(tree, "qwenlite.layers.layernorm").RMSNorm(64, 1e-6)
    rope = import_from(tree, "qwenlite.layers.rotary").RotaryEmbedding(16, 16, 256, 1e6)
    silu = import_from(tree, "qwenlite.layers.activation").SiluAndMul()
    with torch.no_grad():
        norm.weight.normal_()
    return {
        "rmsnorm": (norm, norm.rms_forward),
        "add_rmsnorm": (norm, norm.add_rms_forward),
        "norm_dispatch": (norm, norm.forward),
        "silu_and_mul": (silu, silu.forward),
        "rope": (rope, rope.forward),
    }


def _eager_original(call, inputs):
    # The original op without compiling it (no C++ toolchain needed, and eager is what the
    # problem must reproduce).
    with torch.compiler.set_stance("force_eager"), torch.no_grad():
        return call(*inputs)


def _as_tuple(value):
    return value if isinstance(value, tuple) else (value,)


def _check_against_originals(emitted, originals, run_problem, names):
    for name in names:
        spec, module, model, case_inputs = run_problem(emitted[name].path)
        original, call = originals[name]
        model.load_state_dict(original.state_dict())
        for inputs in case_inputs:
            before = [i.clone() for i in inputs]
            with torch.no_grad():
                got = _as_tuple(model(*inputs))
            want = _as_tuple(_eager_original(call, [i.clone() for i in before]))
            assert len(got) == len(want), name
            for g, w in zip(got, want):
                assert g.dtype == w.dtype and torch.equal(g, w), name
            # In-place ops on the reference's own upcast copies leave the inputs alone.
            assert all(torch.equal(a, b) for a, b in zip(inputs, before)), name


def test_each_target_is_found_once_with_its_config_cases(qwenlite_tree):
    options, root = _options(qwenlite_tree)
    result = scan(qwenlite_tree, options, config_root=root)
    ids = [target_id(f) for f in result.targets]
    assert len(ids) == len(set(ids)), ids
    by_name = {f.name: f for f in result.targets}
    assert set(CONFIGURED) <= set(by_name)
    assert target_id(by_name["add_rmsnorm"]) == f"{LAYERS}/layernorm.py::RMSNorm.add_rms_forward"
    for name in CONFIGURED:
        finding = by_name[name]
        # One target: the compile decorator found it, the config gave it cases and inputs.
        assert finding.kind == Kind.TORCH_COMPILE, name
        assert Kind.CONFIG_TARGET in finding.also_found_as, name
        assert [c["T"] for c in finding.hint.cases] == [1, 64, 512], name
    assert [p.name for p in by_name["rmsnorm"].params] == ["x"]
    assert [p.name for p in by_name["add_rmsnorm"].params] == ["x", "residual"]
    # The other spellings are found too, as findings of their own (no config, so no cases).
    compiled = {
        f.callable_qualname: f.fast_path for f in result.findings if f.file.endswith("spellings.py")
    }
    assert compiled == {
        "HeadNorm": "compiled with @torch.compile(dynamic=True)",
        "softcap": "compiled with @compile",
        "swap_halves": "compiled with @torch.compiler.compile",
        "rotate_interleaved": "compiled with @torch.compile(fullgraph=True)",
        "_gelu_tanh": "compiled with torch.compile(_gelu_tanh)",
    }


def test_upcast_temporaries_are_not_input_mutations(qwenlite_tree):
    options, root = _options(qwenlite_tree)
    by_name = {f.name: f for f in scan(qwenlite_tree, options, config_root=root).targets}
    for name in ("rmsnorm", "add_rmsnorm"):
        assert not by_name[name].flags, (name, by_name[name].flags)


def test_problems_run_eagerly_and_match_the_original(
    qwenlite_tree, tmp_path, run_problem, import_from
):
    dispatch = TargetHint(
        f"{LAYERS}/layernorm.py::RMSNorm.forward",
        name="norm_dispatch",
        init={"hidden_size": 64, "eps": 1e-6},
        inputs={
            "x": {"shape": ("T", 64), "dtype": "bfloat16"},
            "residual": {"shape": ("T", 64), "dtype": "bfloat16"},
        },
        cases=({"T": 3},),
    )
    _, emitted = _emit(qwenlite_tree, tmp_path, [dispatch])
    names = (*CONFIGURED, "norm_dispatch")
    for name in names:
        assert emitted[name].status == EmitStatus.EMITTED, emitted[name].message
        assert emitted[name].mode == "import"
        text = emitted[name].path.read_text()
        assert "runs eagerly" in text and "mutates_inputs" not in text
    originals = _originals(import_from, qwenlite_tree)
    _check_against_originals(emitted, originals, run_problem, names)
    meta = json.loads(emitted["add_rmsnorm"].target_json.read_text())
    assert (meta["qualname"], meta["entry"], meta["kind"]) == (
        "RMSNorm",
        "add_rms_forward",
        "torch_compile",
    )


def test_the_method_target_gets_its_own_arguments(qwenlite_tree, tmp_path):
    from kbot.problem import load_problem

    _, emitted = _emit(qwenlite_tree, tmp_path)
    assert load_problem(emitted["rmsnorm"].path).forward_params == ("x",)
    assert load_problem(emitted["add_rmsnorm"].path).forward_params == ("x", "residual")


def test_rebuilt_problems_drop_the_compile_decorators(
    qwenlite_tree, tmp_path, run_problem, import_from
):
    _, emitted = _emit(qwenlite_tree, tmp_path, check_import=False)
    for name in CONFIGURED:
        assert emitted[name].mode == "rebuilt", emitted[name].message
        assert "compile" not in emitted[name].path.read_text().split('"""', 2)[2], name
    # The buffer built in __init__ and the module's helper came along.
    rope = emitted["rope"].path.read_text()
    assert "def rotate_neox(" in rope and 'register_buffer("cos_sin_cache"' in rope.replace(
        "'", '"'
    )
    _check_against_originals(
        emitted, _originals(import_from, qwenlite_tree), run_problem, CONFIGURED
    )


SPELLINGS = [
    TargetHint(
        f"{LAYERS}/spellings.py::HeadNorm",
        name="head_norm",
        init={"head_dim": 16},
        inputs={"x": {"shape": ("T", 16), "dtype": "bfloat16"}},
        cases=({"T": 4},),
    ),
    TargetHint(
        f"{LAYERS}/spellings.py::softcap",
        name="softcap",
        init={"cap": 30.0},
        inputs={"logits": {"shape": ("T", 32), "dtype": "float32"}},
        cases=({"T": 4},),
    ),
    TargetHint(
        f"{LAYERS}/spellings.py::rotate_interleaved",
        name="rotate_interleaved",
        inputs={name: {"shape": ("T", 16), "dtype": "float32"} for name in ("x", "cos", "sin")},
        cases=({"T": 4},),
    ),
    TargetHint(
        f"{LAYERS}/spellings.py::_gelu_tanh",
        name="gelu_tanh",
        inputs={"x": {"shape": ("T", 32), "dtype": "float32"}},
        cases=({"T": 4},),
    ),
]


@pytest.mark.parametrize("check_import", [True, False], ids=["imported", "rebuilt"])
def test_every_compile_spelling_runs_eagerly(
    qwenlite_tree, tmp_path, run_problem, import_from, check_import
):
    _, emitted = _emit(qwenlite_tree, tmp_path, SPELLINGS, check_import)
    spellings = import_from(qwenlite_tree, "qwenlite.layers.spellings")
    torch.manual_seed(1)
    head_norm = spellings.HeadNorm(16)
    originals = {
        "head_norm": lambda x: head_norm(x),
        "softcap": lambda logits: spellings.softcap(logits, 30.0),
        "rotate_interleaved": spellings.rotate_interleaved,
        "gelu_tanh": spellings.gelu_tanh,
    }
    for hint in SPELLINGS:
        problem = emitted[hint.name]
        assert problem.status == EmitStatus.EMITTED, problem.message
        spec, module, model, case_inputs = run_problem(problem.path)
        if hint.name == "head_norm":
            model.load_state_dict(head_norm.state_dict())
        for inputs in case_inputs:
            with torch.no_grad():
                got = model(*[i.clone() for i in inputs])
            want = _eager_original(originals[hint.name], [i.clone() for i in inputs])
            assert torch.equal(got, want), hint.name


def test_codegen_traces_the_eager_references(qwenlite_tree, tmp_path):
    from kbot.problem import load_problem
    from kbot.propose.codegen.proposer import generate

    _, emitted = _emit(qwenlite_tree, tmp_path, SPELLINGS[:1])
    for name in (*CONFIGURED, "head_norm"):
        candidates = generate(load_problem(emitted[name].path))
        assert candidates, name
        assert all("ModelNew" in c.source for c in candidates), name


def test_a_method_named_in_config_is_one_target_not_two(tmp_path):
    (tmp_path / "op.py").write_text(
        "import torch\nfrom torch import nn\n\n\n"
        "class Scale(nn.Module):\n"
        "    @torch.compile\n"
        "    def scaled(self, x, factor: float = 2.0):\n"
        "        return x * factor\n\n"
        "    def forward(self, x):\n"
        "        return self.scaled(x)\n"
    )
    hint = TargetHint("op.py::Scale.scaled", inputs={"x": {"shape": ("T", 4)}})
    result = scan(tmp_path, ScanOptions(targets=(hint,)))
    found = [f for f in result.findings if f.qualname == "Scale"]
    assert len(found) == 1 and found[0].entry == "scaled"
    assert found[0].status == Status.TARGET and found[0].hint == hint
