"""max-autotune's own GEMM templates as candidates: a `@triton_heuristics.template` kernel
(its tiles fixed in its body) launched on the grid inductor passes to `run` (FixedGrid).
Captured on an H200 (torch 2.11, Triton 3.6) from problems of our own: an fp32 matmul with
K = 64 (KernelBench's small-K and tall-skinny GEMMs, where max-autotune's template beat cuBLAS
by 15-23% on an H100) and a batched matmul with its scale fused in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbot.evaluate import EvalOptions, evaluate
from kbot.evaluate.static import check_source, problem_dtype_hint
from kbot.problem import load_problem
from kbot.propose.inductor import extract
from kbot.propose.inductor.records import capture_from_json

HERE = Path(__file__).parent


def _capture(name: str):
    path = HERE / "fixtures" / f"{name}__static.txt"
    return capture_from_json(path.read_text(), json.loads(path.with_suffix(".json").read_text()))


def _problem(name: str):
    return load_problem(HERE / "problems" / f"{name}.py")


@pytest.mark.parametrize(
    "name,grid,tile",
    [
        ("mm_small_k", "grid = (1024, 1, 1)", "BLOCK_M: tl.constexpr = 64"),
        ("bmm_scale", "grid = (12, 8, 1)", "BLOCK_N: tl.constexpr = 128"),
    ],
)
def test_a_template_is_launched_on_the_grid_inductor_passed(name, grid, tile):
    problem = _problem(name)
    source = extract(_capture(name), problem)
    assert "(template)" in source and tile in source and grid in source
    assert "triton_heuristics" not in source and "_grid_0" not in source
    reasons = check_source(source, problem.options, problem_dtype_hint(problem.source))
    assert reasons == (), [str(r) for r in reasons]


def test_the_bmm_template_with_its_fused_scale_is_accepted_on_the_cpu(tmp_path):
    problem = _problem("bmm_scale")
    source = extract(_capture("bmm_scale"), problem)
    verdict = evaluate(problem, source, EvalOptions(device="cpu"))
    assert verdict.accepted, [str(r) for r in verdict.reasons]


def test_a_template_run_without_its_grid_is_refused():
    from kbot.propose.inductor.records import Unsupported

    capture = _capture("mm_small_k")
    broken = capture.code.replace("buf0, 1024, 1, 1, stream=stream0", "buf0, stream=stream0")
    assert broken != capture.code
    with pytest.raises(Unsupported, match="passes 3 args for 3 parameters and a grid"):
        extract(
            capture_from_json(broken, _meta("mm_small_k")),
            _problem("mm_small_k"),
        )


def _meta(name: str) -> dict:
    return json.loads((HERE / "fixtures" / f"{name}__static.json").read_text())
