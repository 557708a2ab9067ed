"""The serving-op suite in bench/problems: codegen has candidates for every op, and the first
one is correct at decode sizes (T=1, 3) on the CPU interpreter. Prefill sizes run on the GPU."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kbot.problem import load_problem
from kbot.propose.codegen import generate

BENCH = Path(__file__).parents[2] / "bench" / "problems"
SUITE = sorted(BENCH.glob("*.py"))


def test_suite_has_the_serving_ops_and_the_held_out_families():
    assert {p.stem for p in SUITE} >= {
        "rmsnorm",
        "add_rmsnorm",
        "gemma_rmsnorm",
        "silu_and_mul",
        "gelu_tanh_and_mul",
        "quick_gelu",
        "softcap",
        "log_softmax_128k",
        "rope_neox",
        "layernorm_residual",
        "moe_sum",
        "linear_silu",
        # issue 15's families beyond the ops the suite was tuned on: interleaved RoPE, a
        # 64k-column softmax, a log_softmax at an odd vocabulary width, a clamped SwiGLU on
        # interleaved columns
        "rope_interleaved",
        "softmax_64k",
        "log_softmax_50k",
        "swiglu_clamped",
    }
    for path in SUITE:
        cases = load_problem(path).cases
        assert [c["T"] for c in cases] == [1, 16, 64, 4096, 16384], path.name


@pytest.mark.parametrize("problem", SUITE, ids=lambda p: p.stem)
def test_first_candidate_is_correct_at_decode_sizes(problem, tmp_path, compare):
    small = tmp_path / problem.name
    source = problem.read_text()
    small.write_text(re.sub(r"(?m)^CASES = .*$", "CASES = [dict(T=1), dict(T=3)]", source))
    candidates = generate(load_problem(small))
    assert len(candidates) >= 3
    assert compare(small, candidates[0].source) > 0
