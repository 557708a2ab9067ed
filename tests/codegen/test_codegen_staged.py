"""Reductions of reductions (stages.py, emit_staged.py): a reduction that a reduction of another
shape reads is written to a buffer by a kernel of its own, and the next kernel loads it. The
problems under tests/codegen/problems/staged_*.py are checked against the evaluator with every
variant by test_codegen_candidates.py; here, how the stages are laid out."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kbot.problem import load_problem
from kbot.propose.codegen import generate
from kbot.propose.codegen.trace import Unsupported

PROBLEMS = Path(__file__).parent / "problems"


def _first(name: str):
    return generate(load_problem(PROBLEMS / f"{name}.py"), limit=1)[0]


def _kernels(source: str) -> list[str]:
    tree = ast.parse(source)
    return [
        n.name
        for n in tree.body
        if isinstance(n, ast.FunctionDef) and n.name.startswith("_") and n.name.endswith("_kernel")
    ]


def test_the_mean_is_written_to_a_buffer_that_the_softmax_kernel_loads():
    candidate = _first("staged_mean_then_softmax")
    source = candidate.source
    assert candidate.params["stages"] == 2
    assert _kernels(source) == [
        "_staged_mean_then_softmax_stage1_kernel",
        "_staged_mean_then_softmax_kernel",
    ]
    launcher = source.split("def _staged_mean_then_softmax_rows(")[1]  # the traced launcher
    allocation = launcher.index("mean_buf = torch.empty((x_size0, x_size1)")
    first_launch = launcher.index("_staged_mean_then_softmax_stage1_kernel[grid](")
    second_launch = launcher.index("_staged_mean_then_softmax_kernel[grid](")
    assert allocation < first_launch < second_launch
    assert "mean_buf," in launcher[second_launch:]  # the last stage reads the buffer


def test_mean_and_variance_share_one_stage():
    candidate = _first("staged_norm_then_mean")
    assert candidate.params["stages"] == 2
    source = candidate.source
    assert "mean_buf = torch.empty(" in source and "mean_1_buf = torch.empty(" in source
    assert len(_kernels(source)) == 2


def test_each_stage_has_its_own_tunables_and_a_looped_stage_keeps_its_block_keyword():
    source = _first("staged_wide_max_then_softmax").source
    assert "BLOCK_N_STAGE1 = 4096" in source and "NUM_WARPS_STAGE1 = " in source
    assert "BLOCK_N=BLOCK_N_STAGE1," in source  # the kernel's constexpr keeps its name
    assert "ROWS_PER_PROGRAM = " in source  # the last stage's, unsuffixed


def test_every_variant_of_the_last_stage_keeps_the_first_stages(compare):
    path = PROBLEMS / "staged_norm_then_mean.py"
    candidates = generate(load_problem(path))
    assert len(candidates) >= 2
    for candidate in candidates:
        assert candidate.params["stages"] == 2
        assert compare(path, candidate.source) == 4, candidate.note


def _write(tmp_path: Path, forward: str, shape: str) -> Path:
    path = tmp_path / "problem.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        f"    def forward(self, x):\n        return {forward}\n\n\n"
        f"def get_inputs():\n    return [torch.randn({shape})]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    return path


def test_reductions_side_by_side_feed_a_pointwise_kernel(tmp_path, compare):
    path = _write(tmp_path, "x.sum(dim=0) + x.amax(dim=1)", "8, 8")
    candidates = generate(load_problem(path))
    assert candidates[0].params["schedule"] == "pointwise"
    for candidate in candidates:
        assert candidate.params["stages"] == 3  # the sum, the max, then their sum
        assert compare(path, candidate.source) == 2, candidate.note


def test_a_reduction_of_every_dim_runs_one_row_per_program(tmp_path, compare):
    # A [1, BLOCK_N] row under a [ROWS, BLOCK_N] mask failed in the interpreter for ROWS > 1.
    path = _write(tmp_path, "torch.softmax(x * 0.25, dim=0)", "6")
    for candidate in generate(load_problem(path)):
        assert candidate.params["rows_per_program"] == 1
        assert compare(path, candidate.source) == 2, candidate.note


def test_a_reduction_the_schedule_cannot_take_keeps_its_reason(tmp_path):
    path = _write(tmp_path, "torch.argmax(x) + x.sum()", "4, 8")
    with pytest.raises(Unsupported, match="argmax/argmin without dim"):
        generate(load_problem(path), limit=1)
