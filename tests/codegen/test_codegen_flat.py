"""Narrow rows and the flat kernel (codegen/emit_flat.py). The first row variant packs narrow
rows thousands of elements to a program (one 10-column row a program took 60.9 ms against
eager's 2.7 on the H100 for KernelBench level-1 problem 59, a conv3d returned as is); where
every tensor has the output's shape, the flat kernel comes first, indexing elements directly
while the inputs are contiguous and launching the row kernel otherwise. On the CPU: the tiles,
which schedules the flat kernel fits, and each launch against eager at odd sizes, on
non-contiguous inputs and with more leading dims than traced. That the evaluator accepts every
variant of conv3d_identity_narrow_extern is test_codegen_candidates.py's job."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kbot.problem import load_problem
from kbot.problem.runtime import import_file, init_inputs
from kbot.propose.codegen import generate
from kbot.propose.codegen.classify import classify
from kbot.propose.codegen.emit_flat import flat_fits
from kbot.propose.codegen.trace import trace_problem
from kbot.propose.codegen.variants import _pointwise_variants

CONV = Path(__file__).parent / "problems" / "conv3d_identity_narrow_extern.py"


def _write(tmp_path: Path, forward: str, inputs: str, params: str = "x") -> Path:
    path = tmp_path / "problem.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        f"    def forward(self, {params}):\n        return {forward}\n\n\n"
        f"def get_inputs():\n    return [{inputs}]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    return path


class _NotLaunched:
    """Stands in for a kernel the launcher must not pick."""

    def __getitem__(self, grid: object) -> None:
        raise AssertionError("the launcher picked the wrong kernel")


@pytest.mark.parametrize("n_cols", [1, 3, 10, 100, 256])
def test_the_first_row_variant_packs_narrow_rows(n_cols):
    first = _pointwise_variants(n_cols)[0]
    assert first.rows & (first.rows - 1) == 0  # a power of two
    assert 1024 <= first.rows * first.block <= 4096, first.label


@pytest.mark.parametrize("n_cols", [257, 1000, 5000])
def test_wider_rows_keep_one_row_a_program_first(n_cols):
    assert _pointwise_variants(n_cols)[0].rows == 1


FITS = {
    "elementwise": ("torch.relu(x) * 2 + 1", "torch.randn(2, 3, 5, 7)", "x", True),
    "same-shape inputs": ("torch.where(x > y, x, y * 3)", "torch.randn(3, 5), torch.randn(3, 5)", "x, y", True),
    "0-dim input": ("x * s - 1", "torch.randn(4, 5), torch.tensor(2.0)", "x, s", True),
    "broadcast operand": ("x * y", "torch.randn(2, 3, 5, 7), torch.randn(7)", "x, y", False),
    "view": ("x.transpose(-1, -2) * 2", "torch.randn(3, 5, 5)", "x", False),
    "arange": ("x + torch.arange(7, device=x.device)", "torch.randn(3, 7)", "x", False),
    "one dim": ("x * 2", "torch.randn(7)", "x", False),
    "cat": ("torch.cat([x, x * 2], dim=-1)", "torch.randn(3, 4)", "x", False),
}  # fmt: skip


@pytest.mark.parametrize("name", sorted(FITS))
def test_the_flat_kernel_fits_elementwise_ops_of_one_shape_only(name, tmp_path):
    forward, inputs, params, fits = FITS[name]
    spec = load_problem(_write(tmp_path, forward, inputs, params))
    (schedule,) = classify(trace_problem(spec))
    assert flat_fits(schedule) == fits
    first = generate(spec)[0]
    assert first.note.split(": ", 1)[1].startswith("flat") == fits, first.note


@pytest.mark.parametrize("name", sorted(n for n in FITS if FITS[n][3]))
def test_the_flat_candidates_match_eager(name, tmp_path, compare):
    forward, inputs, params, _ = FITS[name]
    path = _write(tmp_path, forward, inputs, params)
    flat, composite = generate(load_problem(path))[:2]
    assert "_flat_kernel[grid](" in flat.source and "_flat_kernel[grid](" in composite.source
    assert compare(path, flat.source) == 2 and compare(path, composite.source) == 2


def test_narrow_rows_launch_flat_then_one_row_a_program_at_decode_sizes(tmp_path):
    path = _write(tmp_path, "x * 2 + 1", "torch.randn(2, 3, 5, 7)")
    flat, composite, rows, *_ = generate(load_problem(path))
    assert flat.note == "codegen pointwise: flat b4096 w8 (strided: pointwise r512 b8 w8)"
    assert flat.params["strided"]["rows_per_program"] == 512
    assert composite.params["decode"]["rows_per_program"] == 1
    assert rows.note == "codegen pointwise: pointwise r512 b8 w8"


@pytest.mark.parametrize("contiguous", [True, False])
def test_the_launcher_takes_the_row_kernel_for_a_non_contiguous_input(
    contiguous, tmp_path, load_candidate, device
):
    path = _write(tmp_path, "torch.relu(x) * 2 + 1", "torch.randn(2, 3, 5, 7)")
    module = load_candidate(generate(load_problem(path))[0].source)
    skipped = "_problem_kernel" if contiguous else "_problem_flat_kernel"
    setattr(module, skipped, _NotLaunched())
    torch.manual_seed(0)
    x = torch.randn(3, 2, 7, 9, device=device)  # odd sizes
    if not contiguous:
        x = torch.randn(3, 2, 9, 7, device=device).transpose(-1, -2)
    torch.testing.assert_close(module.ModelNew()(x), torch.relu(x) * 2 + 1)


def test_more_leading_dims_than_traced_are_flattened_then_read_flat(tmp_path, load_candidate):
    path = _write(tmp_path, "torch.relu(x) * 2 + 1", "torch.randn(2, 3, 5, 7)")
    source = generate(load_problem(path))[0].source
    assert "def _problem_rows(" in source
    module = load_candidate(source)
    module._problem_kernel = _NotLaunched()
    x = torch.randn(2, 3, 2, 5, 7)
    torch.testing.assert_close(module.ModelNew()(x), torch.relu(x) * 2 + 1)


def test_a_broadcast_operand_keeps_the_row_kernel_with_narrow_rows_packed(tmp_path, compare):
    path = _write(tmp_path, "x * y + 1", "torch.randn(2, 3, 5, 7), torch.randn(7)", "x, y")
    first, composite = generate(load_problem(path))[:2]
    assert first.note == "codegen pointwise: pointwise r512 b8 w8"
    assert composite.note.split(": ", 1)[1].startswith("pointwise r1 b8 w4 up to 64 rows")
    assert compare(path, first.source) == 2 and compare(path, composite.source) == 2


def test_a_conv3d_returned_as_is_goes_channels_last_first_and_is_copied_flat_second():
    """The convolution is the whole op: the NCHW variant's kernel is a copy after cuDNN (never
    faster than the reference), the channels-last one can be."""
    notes = [c.note.split(": ", 1)[1] for c in generate(load_problem(CONV))]
    assert notes[0].startswith("extern channels-last")
    assert notes[1] == "extern + flat b4096 w8 (strided: pointwise r1024 b4 w8)"


@pytest.mark.parametrize(
    "layout, skipped",
    [
        (torch.contiguous_format, "_conv3d_identity_narrow_extern_kernel"),
        (torch.channels_last_3d, "_conv3d_identity_narrow_extern_flat_kernel"),
    ],
)
def test_the_conv3d_copy_matches_eager_for_either_layout_of_the_result(
    layout, skipped, load_candidate, device
):
    """A channels-last input makes the convolution's result channels-last: the row kernel."""
    module = import_file(CONV)
    flat = next(c for c in generate(load_problem(CONV)) if "flat b4096" in c.note)
    candidate = load_candidate(flat.source)
    setattr(candidate, skipped, _NotLaunched())
    torch.manual_seed(0)
    model = module.Model(*init_inputs(module)).to(device)
    ours = candidate.ModelNew(*init_inputs(module)).to(device)
    ours.load_state_dict(model.state_dict())
    x = torch.rand(2, 3, 9, 6, 5, device=device).contiguous(memory_format=layout)
    with torch.no_grad():
        torch.testing.assert_close(ours(x), model(x), atol=1e-5, rtol=1e-5)
