"""Honest kernels of six families, each checked in fp32 and bf16, must be accepted."""

import pytest

from kbot.evaluate import NOT_TIMED, Stage

HONEST = [
    ("quick_gelu", "quick_gelu"),  # elementwise
    ("silu_and_mul", "silu_and_mul"),  # gated activation
    ("add_rmsnorm", "add_rmsnorm"),  # norm with two outputs
    ("softmax_wide", "softmax_wide"),  # 64k columns, looped reduction
    ("rope", "rope"),  # positions gather
    ("matmul_bias_silu_fp32", "matmul_bias_silu"),  # extern matmul + fused epilogue
    ("matmul_bias_silu_bf16", "matmul_bias_silu"),
    ("gelu_fp32", "quick_gelu"),  # KernelBench layout: no CASES
    ("rmsnorm_weight", "rmsnorm_autotune"),  # multi-config @triton.autotune, on the CPU too
    ("silu_and_mul", "silu_and_mul_autograd"),  # launcher in a torch.autograd.Function
    ("mean_dim1", "mean_tensor_descriptor"),  # TensorDescriptor.from_tensor, desc.load
]


@pytest.mark.parametrize("problem_name,candidate_name", HONEST)
def test_honest_candidate_is_accepted(evaluator, problem, candidate, problem_name, candidate_name):
    spec = problem(problem_name)
    verdict = evaluator.evaluate(spec, candidate(candidate_name), f"{candidate_name}.py")
    assert verdict.accepted, [str(r) for r in verdict.reasons]
    assert verdict.stage == Stage.DONE
    assert len(verdict.cases) == len(spec.cases)
    for result in verdict.cases:
        assert result.correctness is not None and result.correctness.passed
        assert result.correctness.trials == 5
        assert len(result.correctness.distributions) >= 2
        assert result.timing is None
    data = verdict.to_json()
    assert all(case["timing"] == NOT_TIMED for case in data["cases"])
    assert data["speedup_geomean_vs_compile"] is None


def test_both_dtypes_are_checked(evaluator, problem, candidate):
    verdict = evaluator.evaluate(problem("silu_and_mul"), candidate("silu_and_mul"))
    dtypes = {c.case["dtype"] for c in verdict.cases}
    assert dtypes == {"float32", "bfloat16"}
    tolerances = {c.case["dtype"]: c.correctness.rtol for c in verdict.cases}
    assert tolerances["float32"] < tolerances["bfloat16"]


def test_worker_is_reused_across_candidates(evaluator, problem, candidate):
    before = evaluator.workers_spawned
    for _ in range(2):
        assert evaluator.evaluate(problem("gelu_fp32"), candidate("quick_gelu")).accepted
    assert evaluator.workers_spawned == max(before, 1)
