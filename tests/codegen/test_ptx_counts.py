"""bench/ptx_counts.py on the CPU: codegen's pointwise kernels compile for sm_90 with 128-bit
loads and stores once strides are specialised as at launch, and the table it writes says so;
rope's pairs variant loads each input once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[2]


def test_pointwise_kernels_use_vector_loads_and_rope_pairs_halve_the_cost(tmp_path):
    out = tmp_path / "ptx.md"
    env = {**os.environ, "TRITON_INTERPRET": "0", "TRITON_DEFAULT_FP_FUSION": "1"}
    subprocess.run(
        [sys.executable, "bench/ptx_counts.py", "--ops", "silu_and_mul,rope_neox", "--out", out],
        cwd=ROOT, env=env, check=True, capture_output=True, timeout=600,
    )  # fmt: skip
    rows = {
        (cells[0], cells[1].split()[0]): cells
        for line in out.read_text().splitlines()
        if line.startswith("| ") and not line.startswith(("| op", "|---"))
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }
    assert set(rows) == {("silu_and_mul", "pointwise"), ("rope_neox", "pointwise"),
                         ("rope_neox", "pairs")}  # fmt: skip
    silu, rope = rows["silu_and_mul", "pointwise"], rows["rope_neox", "pointwise"]
    assert silu[6:] == ["4 x v4.b32", "2 x v4.b32"]  # both halves of x in, out: 16 bf16 a thread
    assert rope[7] == "2 x v4.b32" and "v4.b32" in rope[6]
    assert float(rope[5]) > 2 * float(silu[5])  # the cat of halves computes both expressions
    # The pairs schedule: q1, q2, cos, sin loaded once each (q: 1 x v4 each, fp32 cos/sin: 2 x v4
    # each) and both halves stored, at less than half the pointwise kernel's instructions.
    pairs = rows["rope_neox", "pairs"]
    assert pairs[3] == "16" and pairs[6].endswith("6 x v4.b32") and pairs[7] == "2 x v4.b32"
    assert float(pairs[5]) < float(rope[5]) / 2
