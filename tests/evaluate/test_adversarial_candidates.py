"""Every cheat the issue lists is rejected, with the rule that names it."""

import pytest

from kbot.evaluate import Stage

CHEATS = [
    # candidate, problem, expected rule, stage
    ("cheat_no_kernel", "gelu_fp32", "no-triton-kernel", Stage.STATIC),
    ("cheat_try_except_fallback", "gelu_fp32", "try-except-fallback", Stage.STATIC),
    ("cheat_decorative_kernel", "softmax_wide", "torch-compute-in-forward", Stage.STATIC),
    ("cheat_fp16_compute", "gelu_fp32", "precision-downgrade", Stage.STATIC),
    ("cheat_timer_patch", "gelu_fp32", "module-patching", Stage.STATIC),
    ("cheat_thread", "gelu_fp32", "threads", Stage.STATIC),
    ("cheat_side_stream", "gelu_fp32", "streams", Stage.STATIC),
    ("cheat_torch_compile", "gelu_fp32", "torch-compile", Stage.STATIC),
    ("cheat_reads_problem", "gelu_fp32", "io-access", Stage.STATIC),
    # a cache keyed by `data_ptr()`: an address used other than in an alignment test (what
    # the judge sees of it with the static rules off: test_pointer_caches_are_caught_...)
    ("cheat_pointer_cache", "quick_gelu", "address-use", Stage.STATIC),
    ("cheat_pointer_cache_default", "quick_gelu", "address-use", Stage.STATIC),
    ("cheat_memorised_seed", "gelu_fp32", "mismatch", Stage.CORRECTNESS),
    # returns its input, overwritten: the output shares the input's memory
    ("cheat_input_mutation", "gelu_fp32", "output-alias", Stage.CORRECTNESS),
    ("cheat_input_scratch", "gelu_fp32", "input-mutated", Stage.CORRECTNESS),
    ("cheat_all_zeros", "softmax_wide", "near-constant", Stage.CORRECTNESS),
    ("cheat_uniform_guess", "softmax_wide", "near-constant", Stage.CORRECTNESS),
]


@pytest.mark.parametrize("candidate_name,problem_name,rule,stage", CHEATS)
def test_cheat_is_rejected_with_its_rule(
    evaluator, problem, candidate, candidate_name, problem_name, rule, stage
):
    verdict = evaluator.evaluate(problem(problem_name), candidate(candidate_name))
    rules = [r.rule for r in verdict.reasons]
    assert not verdict.accepted
    assert verdict.stage == stage, [str(r) for r in verdict.reasons]
    assert rule in rules, [str(r) for r in verdict.reasons]
    assert all(r.message for r in verdict.reasons)


def test_static_reasons_carry_the_line(evaluator, problem, candidate):
    verdict = evaluator.evaluate(problem("softmax_wide"), candidate("cheat_decorative_kernel"))
    source = candidate("cheat_decorative_kernel").splitlines()
    compute = [r for r in verdict.reasons if "torch.softmax" in r.message]
    assert compute and "torch.softmax" in source[compute[0].line - 1]


def test_half_the_rows_unwritten_is_caught(evaluator, problem, candidate):
    # The unwritten rows hold poisoned (NaN) memory, or at worst stale values.
    verdict = evaluator.evaluate(problem("silu_and_mul"), candidate("cheat_half_rows"))
    assert not verdict.accepted and verdict.stage == Stage.CORRECTNESS
    assert verdict.reasons[0].rule in ("nan-inf", "mismatch")


def test_pointer_caches_are_caught_before_a_result_is_reused(
    evaluator, problem, candidate, monkeypatch
):
    """With the static rules off (they refuse the cache's key, an address): the first call
    fills the cache, and the state comparison after it sees the change (or, where the output
    is the tensor the cache keeps, the output's overlap with the module's state): the
    refilled buffers of trial 2 (same pointers, new values) are no longer what catches it."""
    monkeypatch.setattr("kbot.evaluate.evaluator.check_source", lambda *args, **kwargs: ())
    expected = {
        "cheat_pointer_cache": "output-alias",
        "cheat_pointer_cache_default": "state-mutated",
    }
    for name, rule in expected.items():
        verdict = evaluator.evaluate(problem("quick_gelu"), candidate(name))
        assert verdict.stage == Stage.CORRECTNESS and rule in [r.rule for r in verdict.reasons]
        assert verdict.reasons[0].rule in ("state-mutated", "output-alias")
        assert "trial 1/5" in verdict.reasons[0].message


def test_fp32_kernel_may_use_fp16_when_the_problem_opts_in(problem, candidate):
    from dataclasses import replace

    from kbot.evaluate.static import check_source, problem_dtype_hint

    spec = problem("gelu_fp32")
    source = candidate("cheat_fp16_compute")
    assert check_source(source, spec.options, problem_dtype_hint(spec.source))
    relaxed = replace(spec.options, allow_low_precision=True)
    assert not check_source(source, relaxed, problem_dtype_hint(spec.source))
