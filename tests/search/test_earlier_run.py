"""`kbot run` over a work directory it used before: a finished search of the same problem,
target and options is reused, a killed one is continued, anything changed starts afresh."""

import os
import signal

import kbot.search as search
from kbot.config import load_config
from kbot.evaluate.verdict import NOT_TIMED
from kbot.problem import load_problem
from kbot.publish.pipeline import optimize_target
from kbot.search import Budget, OptimizeOptions
from kbot.search.earlier import earlier_run
from kbot.search.options import options_from_config

TARGET = {"file": "layers/scale.py", "line": 3, "qualname": "Scale.forward", "kind": "marker"}


def _options(generations=2):
    return OptimizeOptions(device="cpu", budget=Budget(generations=generations))


def _search(tmp_path, problem, evaluator, fakes, options=None, target=TARGET, **kw):
    return search.optimize(
        problem, options or _options(), tmp_path / "work", target,
        evaluator_factory=lambda *a: evaluator,
        proposer_factory=lambda names: [fakes.FakeProposer()], **kw,
    )  # fmt: skip


def test_a_finished_run_is_found_only_for_the_same_problem_target_and_options(
    tmp_path, problem, fakes
):
    work = tmp_path / "work"
    assert earlier_run(work, problem, _options(), TARGET) is None  # no store yet
    done = _search(tmp_path, problem, fakes.FakeEvaluator(), fakes)
    found = earlier_run(work, problem, _options(), TARGET)
    assert found is not None and found.finished and found.accepted
    assert found.run_id == done.run_id and found.run_dir == done.run_dir
    assert found.summary == f"accepted, {NOT_TIMED}"
    assert earlier_run(work, problem, _options(generations=3), TARGET) is None
    assert earlier_run(work, problem, _options(), {**TARGET, "line": 4}) is None
    problem.path.write_text(problem.source + "\n# edited\n")
    assert earlier_run(work, load_problem(problem.path), _options(), TARGET) is None


def test_a_run_that_accepted_nothing_is_reused_as_such(tmp_path, problem, fakes):
    class RejectAll(fakes.FakeProposer):
        def __init__(self):
            super().__init__(reject_every=1, variants=False)

    search.optimize(
        problem, _options(), tmp_path / "work", TARGET,
        evaluator_factory=lambda *a: fakes.FakeEvaluator(),
        proposer_factory=lambda names: [RejectAll()],
    )  # fmt: skip
    found = earlier_run(tmp_path / "work", problem, _options(), TARGET)
    assert found.finished and not found.accepted
    assert "no candidate accepted" in found.summary and str(found.run_dir) in found.summary


def test_kbot_run_reuses_a_finished_run_and_continues_an_interrupted_one(
    tmp_path, problem, fakes, monkeypatch
):
    class Interrupted(fakes.FakeEvaluator):
        def evaluate(self, problem, source, name="candidate.py"):
            if len(self.evaluated) == 2:
                os.kill(os.getpid(), signal.SIGINT)
            return super().evaluate(problem, source, name)

    evaluators = [Interrupted(), fakes.FakeEvaluator()]
    calls = []
    real_optimize = search.optimize

    def fake_optimize(problem, options, work_dir, target, resume_run_id=None):
        calls.append(resume_run_id)
        return real_optimize(
            problem, options, work_dir, target, resume_run_id=resume_run_id,
            evaluator_factory=lambda *a: evaluators[len(calls) - 1],
            proposer_factory=lambda names: [fakes.FakeProposer()],
        )  # fmt: skip

    monkeypatch.setattr(search, "optimize", fake_optimize)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / ".kbot.yml").write_text("version: 1\ndevice: cpu\nsearch:\n  generations: 2\n")
    config = load_config(repo)
    work = tmp_path / "work"

    first = optimize_target(problem.path, TARGET, config, work)
    assert calls == [None] and not first.reused and first.interrupted and not first.accepted
    stopped = earlier_run(work, problem, options_from_config(config, []), TARGET)
    assert stopped is not None and not stopped.finished  # interrupted: to be continued

    second = optimize_target(problem.path, TARGET, config, work)
    assert calls == [None, stopped.run_id] and not second.reused
    assert second.accepted and second.run_dir == first.run_dir

    third = optimize_target(problem.path, TARGET, config, work)
    assert calls == [None, stopped.run_id] and third.reused  # no third search
    assert third.run_dir == second.run_dir and third.accepted
    assert third.summary == second.summary
