"""Where an evaluation's time goes (the judge's phases and steps, kbot.evaluate.sandbox): on
the H200 each candidate took 10-17 s and each shape-sweep point 4-16 s, and nothing said which
part. The verdict carries the job's timeline, the store keeps it, the run report shows the
winner's."""

from __future__ import annotations

import json
from pathlib import Path

from kbot.evaluate import EvalOptions, evaluate
from kbot.evaluate.between_cases import between_cases
from kbot.evaluate.sandbox import _durations
from kbot.evaluate.verdict import Verdict
from kbot.problem import load_problem
from kbot.propose.codegen import generate

PROBLEM = Path(__file__).parents[1] / "codegen" / "problems" / "act_quick_gelu.py"


def test_durations_run_from_each_mark_to_the_next():
    marks = [("start", 10.0), ("check c.py", 10.5), ("check c.py: correctness trials", 12.0)]
    assert _durations(marks, 15.25) == (
        ("start", 0.5),
        ("check c.py", 1.5),
        ("check c.py: correctness trials", 3.25),
    )


def test_a_verdict_says_where_its_evaluation_spent_its_time():
    problem = load_problem(PROBLEM)
    verdict = evaluate(problem, generate(problem)[0].source, EvalOptions(device="cpu"))
    assert verdict.accepted, [str(r) for r in verdict.reasons]
    labels = [label for label, _ in verdict.steps_s]
    assert labels[0] == "start"
    # a step per case: the first case's trials also pay the candidate's compiles
    trials = [label for label in labels if label.startswith("check candidate.py: correctness")]
    *cases, phases = trials
    expected = [f"check candidate.py: correctness trials, case {c}" for c in problem.cases]
    assert cases[: len(expected)] == expected
    # then a case drawn between the cases' sizes (kbot.evaluate.between_cases), where one lies
    assert all(c.endswith(", drawn between the cases") for c in cases[len(expected) :])
    assert len(cases) - len(expected) == len(between_cases(tuple(problem.cases)))
    # then where the trials' time went, phase by phase (a step of no duration of its own)
    assert phases.startswith("check candidate.py: correctness trials' phases: inputs ")
    for phase in ("reference", "candidate call", "judgement"):
        assert f", {phase} " in phases
    # and the candidate call's own steps as its process timed them, in their order
    own = labels[labels.index(phases) + 1]
    head = "check candidate.py: the candidate call's steps by its process's clock (its word, "
    assert own.startswith(head + "not checked): inputs in ")
    steps = [part.rsplit(" ", 2)[0] for part in own.split("): ", 1)[1].split(", ")]
    assert steps == ["inputs in", "placing", "poison", "forward", "checks", "outputs out"]
    assert all(seconds >= 0 for _, seconds in verdict.steps_s)
    total = sum(seconds for _, seconds in verdict.steps_s)
    assert 0 < total <= verdict.wall_s + 0.01  # the job's own time, within the call's
    again = Verdict.from_json(json.loads(json.dumps(verdict.to_json())))
    assert again.steps_s == verdict.steps_s


def test_the_steps_a_candidate_reports_are_numbers_for_the_report_only():
    # The candidate's process says how long its steps took; a cheat may say anything there,
    # so only the known steps' plain, sane numbers are added up, for the report to show.
    import torch

    from kbot.evaluate.jobs import Deadline, _remote_call

    said = {"inputs in": 1.5, "placing": -1, "poison": True, "forward": "2", "checks": 1e9,
            "outputs out": 0.25, "extra": 3.0, "forward ": 1.0}  # fmt: skip

    class Host:
        max_reply_bytes = 0

        def request(self, op, timeout_s, **fields):
            return {"outputs": [torch.ones(1)], "inputs_after": [], "steps": said}

    steps: dict[str, float] = {}
    call = _remote_call(Host(), 0, Deadline(60), steps)
    call([], [], "")
    call([], [], "")
    assert steps == {"inputs in": 3.0, "outputs out": 0.5}
    said.clear()
    call([], [], "")
    assert steps == {"inputs in": 3.0, "outputs out": 0.5}
