import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import torch
from torch import nn

from kbot.errors import UsageError
from kbot.scan import ScanOptions, TargetHint, scan
from kbot.scan.extract import EmitStatus, emit_problems
from kbot.scan.findings import Finding, Kind
from kbot.scan.rebuild import RebuildError, rebuild_reference

X64 = {"x": {"shape": ("T", "hidden_size"), "dtype": "float32"}}
CASES = ({"T": 1}, {"T": 5})


def _emit(tree, tmp_path, hints, **options):
    opts = ScanOptions(targets=tuple(hints), cases=CASES, **options)
    result = scan(tree, opts)
    emitted = emit_problems(result, tmp_path / "problems", opts)
    return result, {e.name: e for e in emitted}


def _same(a, b):
    if isinstance(a, tuple):
        return all(_same(x, y) for x, y in zip(a, b, strict=True))
    return torch.allclose(a, b, atol=1e-6, rtol=1e-6)


def _clone(inputs):
    return [i.clone() for i in inputs]


def test_imported_problems_reproduce_the_ops(engine_tree, tmp_path, run_problem, import_from):
    hints = [
        TargetHint(
            "engine/layers/norm.py::GemmaRMSNorm",
            name="gemma",
            init={"hidden_size": 64},
            inputs=X64,
        ),
        TargetHint(
            "engine/layers/activation.py::GeluAndMul.forward",
            name="gelu_mul",
            init={"approximate": "tanh"},
            inputs={"x": {"shape": ("T", 96), "dtype": "float32"}},
        ),
        TargetHint(
            "engine/layers/fused.py::FusedAddRMSNorm",
            name="fused_add",
            init={"hidden_size": 64},
            inputs={**X64, "residual": {"shape": ("T", "hidden_size"), "dtype": "float32"}},
        ),
        TargetHint(
            "engine/backends/default/activation.py::DefaultSiluAndMulImpl",
            name="default_silu",
            inputs={"x": {"shape": ("T", 32), "dtype": "float32"}},
        ),
        TargetHint(
            "engine/compiled.py::gelu_tanh",
            name="gelu_fn",
            inputs={"x": {"shape": ("T", 48), "dtype": "float32"}},
        ),
        TargetHint(
            "engine/layers/sampler.py::split_heads",
            name="split",
            init={"num_heads": 4},
            inputs={"x": {"shape": ("T", 32), "dtype": "float32"}},
        ),
    ]
    result, emitted = _emit(engine_tree, tmp_path, hints)
    for name in ("gemma", "gelu_mul", "fused_add", "default_silu", "gelu_fn", "split"):
        assert emitted[name].status == EmitStatus.EMITTED, emitted[name].message
        assert emitted[name].mode == "import"
    originals = {
        "gemma": import_from(engine_tree, "engine.layers.norm").GemmaRMSNorm(64),
        "gelu_mul": import_from(engine_tree, "engine.layers.activation").GeluAndMul("tanh"),
        "fused_add": import_from(engine_tree, "engine.layers.fused").FusedAddRMSNorm(64),
        "default_silu": import_from(
            engine_tree, "engine.backends.default.activation"
        ).DefaultSiluAndMulImpl(),
    }
    compiled = import_from(engine_tree, "engine.compiled")
    sampler = import_from(engine_tree, "engine.layers.sampler")
    for name, path in ((n, emitted[n].path) for n in emitted if emitted[n].path):
        spec, module, model, case_inputs = run_problem(path)
        assert [c["T"] for c in spec.cases] == [1, 5]
        if name in originals and isinstance(originals[name], torch.nn.Module):
            assert set(model.state_dict()) == set(originals[name].state_dict())
            with torch.no_grad():
                for p in model.parameters():
                    p.normal_()  # a weight of ones would hide a misplaced weight
            originals[name].load_state_dict(model.state_dict())
        for inputs in case_inputs:
            got = model(*_clone(inputs))
            if name == "gelu_fn":
                want = compiled.gelu_tanh._torchdynamo_orig_callable(*_clone(inputs))
            elif name == "split":
                want = sampler.split_heads(*_clone(inputs), 4)
            elif name == "default_silu":
                want = originals[name].forward(*_clone(inputs))
            else:
                want = originals[name].forward_native(*_clone(inputs))
            assert _same(got, want), name
    meta = json.loads(emitted["fused_add"].target_json.read_text())
    assert meta["kind"] == "fused_op" and meta["in_place"] and meta["returns_view"]
    # The problem tells the evaluator to check what the op writes into its inputs.
    from kbot.problem import load_problem

    assert load_problem(emitted["fused_add"].path).options.mutates_inputs
    assert meta["file"] == "engine/layers/fused.py" and meta["qualname"] == "FusedAddRMSNorm"
    index = json.loads((tmp_path / "problems" / "index.json").read_text())
    assert {p["name"] for p in index["problems"]} >= set(emitted)


def _import_stubbed(import_from, tree, module: str):
    """A standalone fixture module, imported with its missing dependency stubbed."""
    sys.modules["kbot_fixture_missing_dependency"] = types.ModuleType(
        "kbot_fixture_missing_dependency"
    )
    try:
        return import_from(tree, module)
    finally:
        del sys.modules["kbot_fixture_missing_dependency"]


def test_rebuilt_problems_reproduce_the_ops(standalone_tree, tmp_path, run_problem, import_from):
    hints = [
        TargetHint(
            "ops.py::GeluTanhAndMul",
            name="gelu",
            init={"limit": 3.0},
            inputs={"x": {"shape": ("T", 40), "dtype": "float32"}},
        ),
        TargetHint(
            "ops.py::ScaledRMSNorm",
            name="rms",
            init={"hidden_size": 24},
            inputs={"x": {"shape": ("T", 24), "dtype": "float32"}},
        ),
        TargetHint(
            "ops.py::swish",
            name="swish",
            init={"beta": 1.5},
            inputs={"x": {"shape": ("T", 8), "dtype": "float32"}},
        ),
    ]
    hints.append(
        TargetHint(
            "ops.py::ActMul",
            name="act_mul",
            init={"approximate": "tanh"},
            inputs={"x": {"shape": ("T", 12), "dtype": "float32"}},
        )
    )
    result, emitted = _emit(standalone_tree, tmp_path, hints)
    for name in ("gelu", "rms", "swish", "act_mul"):
        assert emitted[name].status == EmitStatus.EMITTED, emitted[name].message
        assert (
            emitted[name].mode == "rebuilt"
            and "kbot_fixture_missing_dependency" in emitted[name].message
        )
    # The originals, with the missing dependency stubbed, to compare against.
    ops = _import_stubbed(import_from, standalone_tree, "ops")
    originals = {
        "gelu": ops.GeluTanhAndMul(3.0),
        "rms": ops.ScaledRMSNorm(24),
        "act_mul": ops.ActMul("tanh"),
    }
    for name in ("gelu", "rms", "swish", "act_mul"):
        spec, module, model, case_inputs = run_problem(emitted[name].path)
        if name in originals:
            originals[name].load_state_dict(model.state_dict())
        for inputs in case_inputs:
            want = originals[name](*inputs) if name in originals else ops.swish(*inputs, 1.5)
            assert _same(model(*inputs), want), name
    source = emitted["gelu"].path.read_text()
    assert "SQRT_2_OVER_PI = math.sqrt" in source and "def _tanh_gelu" in source


def test_a_rebuilt_op_keeps_the_base_class_of_its_module(
    standalone_tree, tmp_path, run_problem, import_from
):
    # The base's __init__ builds the table the op reads: dropping the base (as a base from
    # another module is dropped) left `self.table` unset, lmdeploy's NTK rotary's `self.base`.
    hint = TargetHint(
        "inherit.py::ScaledTable",
        name="scaled_table",
        init={"width": 16, "base": 10.0, "scale": 0.5},
        inputs={"x": {"shape": ("T", 16), "dtype": "float32"}},
    )
    _, emitted = _emit(standalone_tree, tmp_path, [hint])
    problem = emitted["scaled_table"]
    assert problem.status == EmitStatus.EMITTED and problem.mode == "rebuilt", problem.message
    assert "class _Table(nn.Module)" in problem.path.read_text()
    original = _import_stubbed(import_from, standalone_tree, "inherit").ScaledTable(16, 10.0, 0.5)
    _, _, model, case_inputs = run_problem(problem.path)
    for inputs in case_inputs:
        assert _same(model(*inputs), original(*inputs))


@pytest.mark.parametrize(
    "file, scanned",
    [("uses_relative.py", "."), ("uses_absolute.py", "."), ("uses_absolute.py", "pkg")],
)
def test_a_rebuilt_op_imports_its_own_package_from_the_checkout(
    standalone_tree, tmp_path, file, scanned
):
    # torchtitan's vision rotary (2026-12-07): its module did not import (a missing package),
    # the copy kept `from torchtitan.protocols.module import Module`, and the evaluator's child,
    # which runs outside the checkout, failed on it: "No module named 'torchtitan'". A relative
    # import of the package (`from .helpers import scale`) was refused before.
    relative = (standalone_tree / "pkg" / "uses_relative.py").read_text()
    absolute = relative.replace("from .helpers import", "from pkg.helpers import")
    (standalone_tree / "pkg" / "uses_absolute.py").write_text(absolute)
    # scanned at the repository's root, or in the package's own folder (torchtitan's layout:
    # the folder it imports from is above the scanned one)
    hint = TargetHint(
        f"{'pkg/' if scanned == '.' else ''}{file}::doubled_exp",
        name="dexp",
        inputs={"x": {"shape": ("T", 8), "dtype": "float32"}},
    )
    _, emitted = _emit(standalone_tree / scanned, tmp_path, [hint])
    problem = emitted["dexp"]
    assert problem.status == EmitStatus.EMITTED and problem.mode == "rebuilt", problem.message
    source = problem.path.read_text()
    assert "_forget_other_checkouts('pkg', _ROOT)" in source
    assert "from pkg.helpers import scale" in source
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    check = (
        "import sys, torch; from kbot.problem.runtime import import_file; "
        "m = import_file(sys.argv[1]); x = torch.ones(2, 8); "
        "assert torch.equal(m.Model()(x), (x * 2).exp()); print('ran')"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONPATH"] = str(Path(__file__).parents[2])  # kbot, not the checkout
    done = subprocess.run(
        [sys.executable, "-c", check, str(problem.path)],
        cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and "ran" in done.stdout, done.stderr[-600:]


def test_unknown_inputs_are_a_clear_skip_not_a_guess(engine_tree, tmp_path):
    result, emitted = _emit(engine_tree, tmp_path, [])
    gemma = emitted["gemma_rms_norm"]
    assert gemma.status == EmitStatus.SKIPPED and gemma.path is None
    assert "cannot infer inputs for gemma_rms_norm" in gemma.message
    assert "add `inputs:` to its .kbot.yml target" in gemma.message


def test_a_folder_with_files_kbot_did_not_write_is_refused_and_left_as_it_is(engine_tree, tmp_path):
    out = tmp_path / "problems"
    out.mkdir()
    (out / "notes.md").write_text("mine\n")  # never a name kbot writes: allowed beside
    _emit(engine_tree, tmp_path, [])  # kbot's own files: emitted again over them
    emitted_again = sorted(p.name for p in out.iterdir())
    assert "index.json" in emitted_again and "notes.md" in emitted_again
    _emit(engine_tree, tmp_path, [])
    for name, text in (("norm.py", "MINE = 1\n"), ("index.json", "[1, 2]\n")):
        (out / name).write_text(text)
        with pytest.raises(UsageError, match=f"{name} was not written by kbot"):
            _emit(engine_tree, tmp_path, [])
        assert (out / name).read_text() == text
        (out / name).unlink()


def test_missing_constructor_argument_is_reported(engine_tree, tmp_path):
    hint = TargetHint(
        "engine/layers/norm.py::GemmaRMSNorm",
        name="g",
        inputs={"x": {"shape": ("T", 64), "dtype": "float32"}},
    )
    _, emitted = _emit(engine_tree, tmp_path, [hint])
    assert "constructor argument `hidden_size` is unknown" in emitted["g"].message


def test_tinyserve_problems_reproduce_the_originals(tinyserve, tmp_path, run_problem, import_from):
    """Every emitted tinyserve problem against its original op, found through target.json."""
    from kbot.config import load_config

    config = load_config(tinyserve)
    options = ScanOptions(
        exclude=config.scan.exclude,
        targets=tuple(TargetHint.from_config(t) for t in config.targets),
        cases=({"T": 3},),
    )
    result = scan(tinyserve, options, config_root=config.root)
    emitted = emit_problems(result, tmp_path / "p", options)
    names = {e.name for e in emitted if e.status == EmitStatus.EMITTED}
    assert {"rmsnorm", "fused_add_rmsnorm", "gelu_tanh_and_mul", "rotary_neox"} <= names
    for item in emitted:
        if item.path is None:
            continue
        meta = json.loads(item.target_json.read_text())
        spec, module, model, case_inputs = run_problem(item.path)
        owner = import_from(tinyserve, meta["module"])
        for part in meta["qualname"].split("."):
            owner = getattr(owner, part)
        for inputs in case_inputs:
            inputs = [i.float() if i.is_floating_point() else i for i in inputs]
            model = model.float()
            got = model(*_clone(inputs))
            if meta["entry"]:
                original = owner(*module.get_init_inputs()).float()
                original.load_state_dict(model.state_dict())
                want = getattr(original, meta["entry"])(*_clone(inputs))
            else:
                reference = getattr(owner, "_torchdynamo_orig_callable", owner)
                want = reference(*_clone(inputs), *module.get_init_inputs())
            assert _same(got, want), item.name


def test_problems_carry_no_machines_path_and_import_from_any_checkout(engine_tree, tmp_path):
    """Two checkouts at different paths give byte-identical problem files, and a problem moved
    out of its checkout (an Action artifact) imports the op from the checkout it is run in."""
    import os
    import shutil
    import subprocess
    import sys

    other = tmp_path / "elsewhere" / "checkout"
    shutil.copytree(engine_tree, other)
    hint = TargetHint(
        "engine/layers/norm.py::GemmaRMSNorm", name="gemma", init={"hidden_size": 64}, inputs=X64
    )
    first, second = (
        _emit(root, tmp_path / out, [hint])[1]["gemma"]
        for root, out in ((engine_tree, "p1"), (other, "p2"))
    )
    assert first.path.read_bytes() == second.path.read_bytes()
    assert str(engine_tree) not in first.path.read_text()

    artifact = tmp_path / "download" / "problem.py"  # no target.json beside it
    artifact.parent.mkdir()
    shutil.copy(first.path, artifact)
    code = f"import runpy; m = runpy.run_path({str(artifact)!r}); print(m['_ROOT'])"
    env = {k: v for k, v in os.environ.items() if k != "KBOT_REPO"}

    def run(cwd, **extra):
        return subprocess.run(
            [sys.executable, "-c", code], cwd=cwd, env={**env, **extra},
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    assert run(other).stdout.strip() == str(other)  # the working directory's checkout
    assert run(tmp_path, KBOT_REPO=str(engine_tree)).stdout.strip() == str(engine_tree)
    lost = run(tmp_path)
    assert lost.returncode != 0
    assert "no checkout holding engine/layers/norm.py" in lost.stderr
    assert "set KBOT_REPO" in lost.stderr


def _rebuilt(source: str, qualname: str, package_roots: frozenset = frozenset()):
    """`qualname`'s forward rebuilt from a module's `source`, as a config target names it."""
    finding = Finding("m.py", 1, qualname, Kind.CONFIG_TARGET, "forward", "", ())
    return rebuild_reference(source, finding, set(package_roots))


def test_the_packages_own_imports_are_made_absolute_or_refused_without_a_module_name():
    source = "from ..util.helpers import scale\n\n\ndef op(x):\n    return scale(x)\n"
    finding = Finding("pkg/sub/m.py", 1, "op", Kind.CONFIG_TARGET, "", "", ())
    rebuilt = rebuild_reference(source, finding, {"pkg"}, module="pkg.sub.m")
    assert "from pkg.util.helpers import scale" in rebuilt.source
    assert rebuilt.packages == ("pkg",)
    with pytest.raises(RebuildError, match=r"uses `scale` from its own package \(\.\.util"):
        rebuild_reference(source, finding, {"pkg"})  # no module name: nowhere to import from
    with pytest.raises(RebuildError, match="reaches above its package"):
        rebuild_reference(source.replace("..", "...."), finding, {"pkg"}, module="pkg.sub.m")


def test_a_class_name_rebound_to_its_own_subclass_does_not_recurse():
    # `class Op(Op)` rebinds the name to a subclass of the previous Op (lmdeploy does this):
    # the bases are walked once each, and the copy is the last definition, as imported.

    source = (
        "import torch\nfrom torch import nn\n\n\nclass Op(nn.Module):\n"
        "    def forward(self, x):\n        return x\n\n\nclass Op(Op):\n"
        "    def forward(self, x):\n        return x * 2\n"
    )
    rebuilt = _rebuilt(source, "Op")
    namespace: dict = {}
    exec(compile("import torch\nfrom torch import nn\n" + rebuilt.source, "m", "exec"), namespace)
    assert torch.equal(namespace[rebuilt.callable_name]()(torch.ones(2)), torch.full((2,), 2.0))


def test_a_base_that_derives_from_the_packages_class_of_its_name_is_copied_without_it():
    # lmdeploy: `class Impl(Impl, nn.Module)` over an abstract Impl imported from the package,
    # whose __init__ sets the state its subclasses read (LlamaDynamicNTKScalingRotaryEmbedding
    # reads self.base). The copy cannot reach the package's Impl: that base alone is dropped,
    # and the module's own Impl, __init__ included, is kept.

    source = (
        "from torch import nn\nfrom pkg.base import Impl\n\n\nclass Impl(Impl, nn.Module):\n"
        "    def __init__(self, k):\n        super().__init__()\n        self.k = k\n\n\n"
        "class Scaled(Impl):\n    def forward(self, x):\n        return x * self.k\n"
    )
    rebuilt = _rebuilt(source, "Scaled", package_roots={"pkg"})
    assert "from pkg" not in rebuilt.source
    namespace: dict = {}
    exec(compile("import torch\nfrom torch import nn\n" + rebuilt.source, "m", "exec"), namespace)
    assert torch.equal(namespace[rebuilt.callable_name](3)(torch.ones(2)), torch.full((2,), 3.0))
    assert isinstance(namespace[rebuilt.callable_name](3), nn.Module)


# A module of a package that does not import here (OLMo's model.py shape): a norm base whose
# __init__ sets the state its subclass reads, beside a factory over the package's own enum; an
# activation base holding only its config, with a subclass that has no __init__ of its own.
_BASES_WITH_FACTORIES = (
    "from torch import nn\nfrom pkg.config import Kind\n\n\n"
    "class NormBase(nn.Module):\n"
    "    def __init__(self, config, *, size=None):\n        super().__init__()\n"
    "        self.eps = config.norm_eps\n        self.size = size or config.width\n\n"
    "    @classmethod\n    def build(cls, config):\n"
    "        return Norm(config) if config.kind == Kind.plain else None\n\n\n"
    "class Norm(NormBase):\n    def forward(self, x):\n"
    "        return x * (x.pow(2).mean(-1, keepdim=True) + self.eps).rsqrt()\n\n\n"
    "class ActBase(nn.Module):\n"
    "    def __init__(self, config):\n        super().__init__()\n        self.config = config\n\n"
    "    @classmethod\n    def build(cls, config):\n"
    "        return Gated(config) if config.act == Kind.gated else None\n\n\n"
    "class Gated(ActBase):\n    def forward(self, x):\n"
    "        x, gate = x.chunk(2, dim=-1)\n        return nn.functional.silu(gate) * x\n"
)


def test_a_base_is_copied_without_the_methods_that_read_the_package():
    from types import SimpleNamespace

    for qualname in ("Norm", "Gated"):
        rebuilt = _rebuilt(_BASES_WITH_FACTORIES, qualname, package_roots={"pkg"})
        assert "from pkg" not in rebuilt.source and "def build" not in rebuilt.source
        namespace: dict = {}
        exec(compile("import torch\n" + rebuilt.source, "m", "exec"), namespace)
        config = SimpleNamespace(norm_eps=1e-6, width=8)
        out = namespace[rebuilt.callable_name](config)(torch.ones(2, 8))
        assert out.shape == ((2, 8) if qualname == "Norm" else (2, 4))


def test_a_base_that_cannot_be_copied_at_all_is_dropped_or_named():
    # A decorated base class is not copied: a subclass without __init__ still takes the base's
    # arguments; one that reads the base's state is refused, naming the base and why.
    source = _BASES_WITH_FACTORIES.replace("class ActBase", "@register\nclass ActBase").replace(
        "class NormBase", "@register\nclass NormBase"
    )
    gated = _rebuilt(source, "Gated", package_roots={"pkg"})
    namespace: dict = {}
    exec(compile("import torch\n" + gated.source, "m", "exec"), namespace)
    assert namespace[gated.callable_name](object())(torch.ones(2, 8)).shape == (2, 4)
    with pytest.raises(RebuildError, match=r"Norm reads self\.eps, which its base class NormBase "
                       r"sets, and that base could not be copied \(.*decorated"):  # fmt: skip
        _rebuilt(source, "Norm", package_roots={"pkg"})


def test_params_dtype_casts_the_modules_float_parameters(engine_tree, tmp_path, run_problem):
    """A target's `params_dtype` (the dtype the served model holds its weights in): the problem's
    Model holds its float parameters so, and says so in its header; the kernel is judged, and
    the PR's guard pins, that dtype (red-team round fourteen's c02)."""
    import torch

    hint = TargetHint(
        "engine/layers/norm.py::GemmaRMSNorm",
        name="g",
        init={"hidden_size": 64},
        inputs={"x": {"shape": ("T", 64), "dtype": "bfloat16"}},
        params_dtype="bfloat16",
    )
    _, emitted = _emit(engine_tree, tmp_path, [hint])
    assert emitted["g"].status == EmitStatus.EMITTED, emitted["g"].message
    text = emitted["g"].path.read_text()
    assert "Float parameters in bfloat16 (the target's `params_dtype`)." in text
    _, _, model, inputs = run_problem(emitted["g"].path)
    assert {p.dtype for p in model.parameters()} == {torch.bfloat16}
    model(*inputs[0])
