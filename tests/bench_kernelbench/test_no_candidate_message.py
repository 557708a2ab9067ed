"""A run that evaluated no candidate names every proposer in its message (issue 17: on the
H200 `kbot optimize 36_RMSNorm_.py` said only "tune: tune needs a parent candidate to mutate";
codegen's and inductor's reasons were missing)."""

from __future__ import annotations

import contextlib

from kbot.problem import load_problem
from kbot.propose.base import ProposeOutcome
from kbot.search import Budget, OptimizeOptions, optimize

from .conftest import write_root


class _Skips:
    def __init__(self, name, reason, late_seed=False):
        self.name, self.reason, self.late_seed = name, reason, late_seed

    def propose(self, context):
        return ProposeOutcome(proposals=(), skipped_reason=self.reason)


def test_the_message_names_codegen_tune_and_the_late_seeder(tmp_path):
    root = write_root(tmp_path, only={(2, 5)})
    spec = load_problem(next(root.rglob("5_Sort_Add.py")))
    proposers = [
        _Skips("codegen", "no codegen schedule: op sort.default has no Triton lowering"),
        _Skips("tune", "tune needs a parent candidate to mutate"),
        _Skips("inductor", "never reached", late_seed=True),
    ]
    result = optimize(
        spec,
        OptimizeOptions(device="cpu", budget=Budget(generations=3)),
        tmp_path / "work",
        evaluator_factory=lambda *a: contextlib.nullcontext(object()),
        proposer_factory=lambda names: proposers,
    )
    message = result.message
    assert message.startswith("no candidate was proposed: ")
    assert "codegen: no codegen schedule: op sort.default has no Triton lowering" in message
    assert "tune: tune needs a parent candidate to mutate" in message
    assert "inductor: not asked before the run stopped (it seeds in generation 1)" in message


def test_candidates_stopped_in_the_judge_are_not_called_unproposed():
    # gpt-fast on the CPU at 30 s: codegen proposed, the correctness trials outlasted the
    # budget. The fix is a longer budget, so the message must not say nothing was proposed.
    from kbot.search.runner import _status

    notes = [
        "evaluation stopped at the run's end during check candidate_1.py: correctness trials "
        "for 29 s",
        "codegen: its candidates were not evaluated before the run stopped",
    ]
    _, message = _status(None, 0, "wall-time budget of 30 s spent", notes)
    assert message.startswith("no candidate was evaluated in time: evaluation stopped")
    assert message.endswith("(wall-time budget of 30 s spent)")
