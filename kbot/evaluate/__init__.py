"""The evaluator: sandboxed, cheat-resistant correctness checks and GPU timing of candidates.

    from kbot.evaluate import EvalOptions, Evaluator
    with Evaluator(EvalOptions(device="cpu")) as evaluator:
        verdict = evaluator.evaluate(problem, candidate_source)

Importing this package does not import torch: the parent only parses candidates (static
rules); all candidate code runs in `python -m kbot.evaluate.worker` children.
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
