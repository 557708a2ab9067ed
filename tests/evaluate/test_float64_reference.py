"""An fp32 prefix sum whose terms cancel: the reference's own summation order and a kernel's
differ by more than the fixed fp32 tolerance where the prefix crosses zero, so the evaluator
retries against the reference run in float64 (atol per the output's RMS) and accepts a kernel
that matches it. A kernel 0.1% off still fails both checks."""

import re
from pathlib import Path

from kbot.problem import load_problem
from kbot.propose.codegen import generate

PROBLEM = Path(__file__).parents[1] / "codegen" / "problems" / "scan_cumsum_signed_wide.py"


def _kernel() -> str:
    return generate(load_problem(PROBLEM))[0].source


def test_an_fp32_prefix_sum_is_accepted_against_the_float64_reference(evaluator):
    # The judge draws its inputs from the OS, so a draw on which the fp32 reference alone
    # passes every trial is possible (seen once in a full run): each evaluation must accept,
    # and one of three must have needed the float64 reference.
    rescued: list[list[int]] = []
    for _ in range(3):
        verdict = evaluator.evaluate(load_problem(PROBLEM), _kernel())
        assert verdict.accepted, [str(r) for r in verdict.reasons]
        rescued.append([c.correctness.float32_reference_trials for c in verdict.cases])
        if any(rescued[-1]):
            break
    assert any(any(r) for r in rescued), rescued


def test_a_prefix_sum_a_tenth_of_a_percent_off_matches_neither_reference(evaluator):
    source = _kernel()
    scans = re.findall(r"tl\.cumsum\(.*, axis=1\)", source)  # the kernel's one prefix sum
    assert len(scans) == 1, scans
    lossy = source.replace(scans[0], f"{scans[0]} * 1.001")
    verdict = evaluator.evaluate(load_problem(PROBLEM), lossy)
    assert not verdict.accepted
    assert verdict.reasons[0].rule == "mismatch", [str(r) for r in verdict.reasons]
