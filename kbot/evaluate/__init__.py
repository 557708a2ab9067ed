"""The evaluator: sandboxed, cheat-resistant correctness checks and GPU timing of candidates.

    from kbot.evaluate import EvalOptions, Evaluator
    with Evaluator(EvalOptions(device="cpu")) as evaluator:
        verdict = evaluator.evaluate(problem, candidate_source)

Importing this package does not import torch: the parent only parses candidates (static
rules); the judge (`python -m kbot.evaluate.worker`) makes inputs, runs the reference and
compares; each candidate runs in a fresh sandboxed `python -m kbot.evaluate.candidate_host`
process of its own (docs/evaluator.md has the threat model).
"""

from kbot.evaluate.evaluator import Evaluator, evaluate
from kbot.evaluate.options import EvalOptions
from kbot.evaluate.verdict import NOT_TIMED, Reason, Stage, Stat, Verdict

__all__ = [
    "NOT_TIMED",
    "EvalOptions",
    "Evaluator",
    "Reason",
    "Stage",
    "Stat",
    "Verdict",
    "evaluate",
]
