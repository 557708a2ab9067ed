"""Inductor's grid types as launches: a 2-D tiled pointwise kernel whose y blocks exceed CUDA's
65535 (channels-last convolution epilogues at KernelBench sizes) is launched as inductor does,
its y blocks spread over grid y and z; every element is written once."""

from __future__ import annotations

import ast

import pytest
import torch
import triton
import triton.language as tl

from kbot.propose.inductor import launches
from kbot.propose.inductor.kernels import KernelSource
from kbot.propose.inductor.launches import Renames, launch_lines
from kbot.propose.inductor.records import LaunchConfig


@triton.jit
def _tiled_add_one(in_ptr0, out_ptr0, ynumel, xnumel, YBLOCK: tl.constexpr, XBLOCK: tl.constexpr):
    # As inductor writes a Grid2DWithYZOverflow kernel: its y block from grid y and z.
    yoffset = (tl.program_id(1) + tl.program_id(2) * tl.num_programs(1)) * YBLOCK
    yindex = yoffset + tl.arange(0, YBLOCK)[None, :]
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    mask = (yindex < ynumel) & (xindex < xnumel)
    value = tl.load(in_ptr0 + xindex + xnumel * yindex, mask)
    tl.store(out_ptr0 + xindex + xnumel * yindex, value + 1.0, mask)


def _lines(grid_type: str) -> list[str]:
    params = ("in_ptr0", "out_ptr0", "ynumel", "xnumel", "YBLOCK", "XBLOCK")
    function = ast.parse("def triton_poi_fused_add_0(): pass").body[0]
    source = KernelSource(
        "triton_poi_fused_add_0", "pointwise", params, ("YBLOCK", "XBLOCK"), function, frozenset()
    )
    config = LaunchConfig((("YBLOCK", 2), ("XBLOCK", 4)), 1, 1, grid_type)
    call = ast.parse("f(buf0, buf1, ynumel, xnumel)").body[0].value
    lines, _ = launch_lines(
        call, source.name, {source.name: source}, {source.name: config}, ast.NodeTransformer(),
        Renames({source.name: "_tiled_add_one"}, single=True),
    )  # fmt: skip
    return lines


@pytest.mark.parametrize("grid_type", ["Grid2D", "Grid2DWithYZOverflow"])
def test_every_element_is_written_once_whatever_the_y_limit(monkeypatch, grid_type):
    monkeypatch.setattr(launches, "MAX_Y_GRID", 3)  # 9 y blocks over at most 3 on grid y
    lines = _lines(grid_type)
    assert any(line.startswith("_tiled_add_one[grid](") for line in lines)
    ynumel, xnumel = 17, 6
    buf0 = torch.randn(ynumel, xnumel)
    buf1 = torch.zeros_like(buf0)
    namespace = {"triton": triton, "_tiled_add_one": _tiled_add_one, "buf0": buf0, "buf1": buf1,
                 "ynumel": ynumel, "xnumel": xnumel, "YBLOCK": 2, "XBLOCK": 4}  # fmt: skip
    exec("\n".join(lines), namespace)
    torch.testing.assert_close(buf1, buf0 + 1.0)
    if grid_type == "Grid2DWithYZOverflow":
        assert namespace["grid"] == (2, 3, 3)  # 9 y blocks: 3 on y, 3 on z
