"""Two scanned repositories whose ops live in packages of the same name (`engine`), their
problems imported in one process (a search, a codegen trace, the tests): the first `engine`
stayed in sys.modules, so the second repository's problems imported their op from the first
checkout (`No module named 'engine.layers'`, or silently the other repository's op)."""

from __future__ import annotations

import sys

import torch

from kbot.problem.runtime import import_file, init_inputs
from kbot.scan import ScanOptions, TargetHint, scan
from kbot.scan.extract import EmitStatus, emit_problems

X = {"x": {"shape": ("T", 8), "dtype": "float32"}}


def _repo(root, files: dict[str, str]):
    for name, text in {"engine/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _factor(root, out, target: str) -> float:
    """What the emitted problem's Model multiplies its input by."""
    options = ScanOptions(targets=(TargetHint(target, name="op", inputs=X),), cases=({"T": 2},))
    (emitted,) = emit_problems(scan(root, options), out, options)
    assert emitted.status == EmitStatus.EMITTED, emitted.message
    module = import_file(emitted.path)
    model = module.Model(*init_inputs(module))
    x = torch.ones(2, 8)
    (factor,) = set(model(x).flatten().tolist())
    return factor


def test_a_second_repository_with_the_same_package_imports_its_own_ops(tmp_path):
    first = _repo(tmp_path / "first", {"engine/ops.py": "def scale(x):\n    return x * 2.0\n"})
    second = _repo(
        tmp_path / "second",
        {
            "engine/ops.py": "def scale(x):\n    return x * 3.0\n",
            "engine/layers/__init__.py": "",
            "engine/layers/gate.py": "def gate(x):\n    return x * 5.0\n",
        },
    )
    path, modules = list(sys.path), set(sys.modules)
    try:
        assert _factor(first, tmp_path / "p1", "engine/ops.py::scale") == 2.0
        # the same module name in the other checkout, then a subpackage only it has
        assert _factor(second, tmp_path / "p2", "engine/ops.py::scale") == 3.0
        assert _factor(second, tmp_path / "p3", "engine/layers/gate.py::gate") == 5.0
    finally:
        sys.path[:] = path
        for name in set(sys.modules) - modules:
            del sys.modules[name]
