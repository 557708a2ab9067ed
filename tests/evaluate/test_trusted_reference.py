"""The reference is trusted: what it changes in torch is not blamed on candidates, and all of
its state (non-persistent buffers included) is handed to the candidate."""


def test_compiled_reference_does_not_count_as_module_patching(evaluator, problem, candidate):
    verdict = evaluator.evaluate(problem("quick_gelu_compiled"), candidate("quick_gelu"))
    assert verdict.accepted, [str(r) for r in verdict.reasons]


def test_non_persistent_buffers_are_loaded_into_the_candidate(evaluator, problem, candidate):
    verdict = evaluator.evaluate(problem("rotary_cache_buffer"), candidate("gather_rows"))
    assert verdict.accepted, [str(r) for r in verdict.reasons]
