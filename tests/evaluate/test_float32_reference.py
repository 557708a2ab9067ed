"""A bf16 reference rounds after every op; a kernel computing in fp32 rounds once. Where the two
differ by more than the tolerance (RoPE's cancelling differences), the candidate is compared
with the same reference run in float32 and rounded once, and accepted if it matches that."""


def test_an_fp32_rope_is_accepted_against_the_float32_reference(evaluator, problem, candidate):
    verdict = evaluator.evaluate(problem("rope_cancel_bf16"), candidate("rope_cancel_bf16"))
    assert verdict.accepted, [str(r) for r in verdict.reasons]
    rescued = [c.correctness.float32_reference_trials for c in verdict.cases]
    assert any(rescued), rescued  # the bf16 reference alone would have rejected it


def test_a_wrong_rotation_matches_neither_reference(evaluator, problem, candidate):
    wrong = candidate("rope_cancel_bf16").replace("(q1 * cos - q2 * sin)", "(q1 * cos + q2 * sin)")
    verdict = evaluator.evaluate(problem("rope_cancel_bf16"), wrong)
    assert not verdict.accepted
    assert verdict.reasons[0].rule == "mismatch", [str(r) for r in verdict.reasons]
