"""A target module outside any package (no __init__.py: nano-vllm's layers) imports by its bare
name, and its problem file may carry that same name (`rotary_embedding.py` for the op
`rotary_embedding` of `layers/rotary_embedding.py`). Imported in one process after a problem
of another module of that folder, the problem imported itself instead of the target module (a
circular ImportError, and codegen had no schedule for either rotary op of nano-vllm)."""

from __future__ import annotations

import sys
import textwrap

import torch

from kbot.config import load_config
from kbot.problem import load_problem
from kbot.problem.runtime import import_file, init_inputs, seeded_inputs
from kbot.propose.codegen.proposer import generate
from kbot.scan import ScanOptions, TargetHint, scan
from kbot.scan.extract import emit_problems

GATE = """\
import torch


def gate(x, scale):
    return x * scale + 1.0
"""
MODULE = """\
import torch
from torch import nn


def shift_scale(x, scale):
    return x * scale + 1.0


class ShiftScale(nn.Module):
    def __init__(self, hidden_size):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(hidden_size))

    def forward(self, x):
        return shift_scale(x, self.scale)
"""
CONFIG = """\
version: 1
targets:
  - target: layers/gate.py::gate
    name: gate_fn
    inputs:
      x: {shape: [T, 32], dtype: float32}
      scale: {shape: [32], dtype: float32}
    cases: [{T: 4}]
  - target: layers/shift_scale.py::ShiftScale.forward
    name: shift_scale
    init: {hidden_size: 32}
    inputs:
      x: {shape: [T, 32], dtype: float32}
    cases: [{T: 4}]
"""


def test_a_problem_named_like_its_module_imports_the_module_after_a_sibling(tmp_path):
    repo = tmp_path / "repo"
    (repo / "layers").mkdir(parents=True)
    (repo / "layers" / "shift_scale.py").write_text(MODULE)
    (repo / "layers" / "gate.py").write_text(GATE)
    (repo / ".kbot.yml").write_text(textwrap.dedent(CONFIG))
    config = load_config(repo)
    options = ScanOptions(targets=tuple(TargetHint.from_config(t) for t in config.targets))
    result = scan(repo, options, config_root=config.root)
    emitted = {e.name: e for e in emit_problems(result, tmp_path / "problems", options)}
    assert emitted["shift_scale"].path.name == "shift_scale.py"  # the module's own name
    for name in ("gate_fn", "shift_scale"):  # another module of the folder first
        module = import_file(emitted[name].path)
        model = module.Model(*init_inputs(module))
        x = seeded_inputs(module, {"T": 4}, seed=0)
        scale = x[1] if len(x) > 1 else 1.0  # the function's scale is an input, the module's ones
        assert torch.equal(model(*x), x[0] * scale + 1.0), name
        assert generate(load_problem(emitted[name].path)), name


def test_importing_a_problem_leaves_the_import_path_as_it_was(tmp_path):
    problem = tmp_path / "problems" / "p.py"
    problem.parent.mkdir()
    problem.write_text("import sys\nsys.path.insert(0, '/nonexistent-root')\nVALUE = 1\n")
    before = list(sys.path)
    try:
        assert import_file(problem).VALUE == 1
        assert str(problem.parent) not in sys.path  # the problem's own entry went first
    finally:
        sys.path[:] = before
