"""Scans read through a flip or a cat (scans.py): the reverse cumsum runs tl.cumsum backwards
over the row instead of reversing the row twice, the exclusive cumsum reads the scan at c - 1
over a tile as wide as its output, a sliced scan goes through a buffer, and a scan read at
another row or from a later column in one tile is refused rather than emitted wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbot.problem import load_problem
from kbot.propose.codegen import generate
from kbot.propose.codegen.trace import Unsupported

PROBLEMS = Path(__file__).parent / "problems"


def _kernel(name: str) -> str:
    return generate(load_problem(PROBLEMS / f"{name}.py"), limit=1)[0].source


def test_reverse_cumsum_scans_backwards_and_reads_x_in_place():
    source = _kernel("scan_cumsum_reverse")
    assert "tl.cumsum(" in source and "reverse=True" in source
    assert "- 1 - " not in source  # flip(flip(i)) is i again: x is read at `cols`
    assert "cols * x_stride1" in source


def test_exclusive_cumsum_tile_is_the_output_width_and_reads_the_column_before():
    source = _kernel("scan_cumsum_exclusive")
    assert "reverse=True" not in source
    assert "(cols - 1) * x_stride1" in source and "(cols >= 1)" in source
    assert "n_cols = x_size1" in source  # 257 columns, not the scan's 256


def test_every_scan_variant_matches_eager(compare):
    path = PROBLEMS / "scan_cumprod_reverse_exclusive_dim0.py"
    candidates = generate(load_problem(path))
    assert candidates
    for candidate in candidates:
        assert compare(path, candidate.source) == 4, candidate.note


def _write(tmp_path: Path, forward: str) -> Path:
    path = tmp_path / "problem.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        f"    def forward(self, x):\n        return {forward}\n\n\n"
        "def get_inputs():\n    return [torch.rand(6, 40)]\n\n\n"
        "def get_init_inputs():\n    return []\n"
    )
    return path


@pytest.mark.parametrize(
    ("forward", "reason"),
    [
        ("torch.cumsum(x, dim=1).flip(0)", "a scan read at other rows"),
        ("torch.cat([torch.cumsum(x, 1)[:, 1:], x[:, :1]], 1)", "read at column `1 + cols`"),
        ("torch.cat([x[:, :1], torch.cumsum(x, 1)[:, 1:]], 1)", "read at column `1 + (cols - 1)`"),
        ("torch.cat([torch.cumsum(x, dim=1), x], dim=1).flip(1)", "a scan read at column"),
    ],
)
def test_a_scan_read_elsewhere_is_refused(tmp_path, forward, reason):
    with pytest.raises(Unsupported) as info:
        generate(load_problem(_write(tmp_path, forward)), limit=1)
    assert reason in str(info.value)


@pytest.mark.parametrize("forward", ["torch.cumsum(x, dim=1)[:, 1:]", "torch.cumsum(x, 1)[:, ::2]"])
def test_a_sliced_scan_goes_through_a_buffer(tmp_path, compare, forward):
    # Its tile would start past scan index 0: the scan is written whole by a kernel of its own,
    # and a pointwise kernel reads the slice (emit_staged.py).
    path = _write(tmp_path, forward)
    candidate = generate(load_problem(path), limit=1)[0]
    assert candidate.params["stages"] == 2 and candidate.params["schedule"] == "pointwise"
    assert compare(path, candidate.source) == 2


def test_a_flipped_scan_input_scans_forwards(tmp_path, compare):
    path = _write(tmp_path, "torch.cumsum(x.flip(1), dim=1)")
    source = generate(load_problem(path), limit=1)[0].source
    assert "reverse=True" not in source and "- 1 - cols" in source
    assert compare(path, source) == 2
