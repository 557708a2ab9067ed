"""What the verdict cache may reuse: never the evaluator's own failure, never a verdict of
other evaluator code or other evaluation options; a resumed run with the same options does."""

import dataclasses

import pytest

from kbot.evaluate.options import EvalOptions
from kbot.evaluate.verdict import Reason, Stage, Verdict
from kbot.propose.base import source_hash
from kbot.search import Budget, OptimizeOptions, environment, optimize
from kbot.search.store import Store


def _evaluator_failing_on(fakes, marker: str, rule: str):
    class Failing(fakes.FakeEvaluator):
        def _verdict(self, problem, source, factor):
            if marker in source:
                message = "torch.compile of the reference timed out after 900 s"
                return Verdict(False, Stage.TIMING, (Reason(rule, message),), "cpu")
            return super()._verdict(problem, source, factor)

    return Failing()


@pytest.mark.parametrize("rule", ["evaluator-error", "worker"])
def test_an_evaluator_failure_is_not_cached_and_a_later_run_evaluates_again(
    tmp_path, problem, fakes, rule
):
    options = OptimizeOptions(device="cpu", budget=Budget(generations=1))
    failing = fakes.candidate("seed 1", block=256 << 1, speed=1.1)  # FakeProposer's seed 1
    evaluators = [_evaluator_failing_on(fakes, "seed 1", rule), fakes.FakeEvaluator()]
    for evaluator in evaluators:
        optimize(problem, options, tmp_path, evaluator_factory=lambda *a, e=evaluator: e,
                 proposer_factory=lambda names: [fakes.FakeProposer()])  # fmt: skip
    sha = source_hash(failing)
    assert sha in evaluators[0].evaluated
    assert evaluators[1].evaluated == [sha]  # the others came from the cache
    with Store(tmp_path / "kbot.sqlite") as store:
        rows = store._db.execute(
            "SELECT accepted FROM verdicts WHERE candidate_sha256 = ?", (sha,)
        ).fetchall()
        assert rows == [(1,)]  # only the second run's real verdict was stored


def test_a_stored_evaluator_failure_is_not_served(tmp_path, problem):
    failed = Verdict(False, Stage.TIMING, (Reason("evaluator-error", "baseline failed"),), "cpu")
    with Store(tmp_path / "kbot.sqlite") as store:
        store.create_run("r1", problem, "cpu", {}, None)
        store.put_verdict("r1", "c" * 64, problem.source_sha256, "cpu", failed)
        assert store.cached_verdict("c" * 64, problem.source_sha256, "cpu") is None
        assert store.evaluation_count("r1") == 1  # the evaluation itself is counted


def test_the_key_names_kbot_its_evaluator_code_and_the_options_that_change_a_verdict():
    base = EvalOptions(device="cuda", gpus=(0,))
    key = environment.environment_key("NVIDIA H200", base)
    assert key == environment.environment_key("NVIDIA H200", EvalOptions(device="cuda", gpus=(0,)))
    assert f"kbot=0.1.0+{environment.evaluator_code_digest()}" in key
    changed = {
        "seeds": 7,
        "time": False,
        "compile_baselines": False,
        "timeout_s": 30.0,
        "baseline_timeout_s": 60.0,
        "timing_budget_s": 2.0,
        "sandbox": "off",
    }
    assert set(changed) == set(environment.VERDICT_OPTIONS)
    for name, value in changed.items():
        other = environment.environment_key(
            "NVIDIA H200", dataclasses.replace(base, **{name: value})
        )
        assert other != key, name
    assert environment.environment_key("NVIDIA A100", base) != key
    # which GPU of the same kind ran it does not matter
    assert environment.environment_key("NVIDIA H200", dataclasses.replace(base, gpus=(1, 2))) == key


def test_other_evaluator_code_or_version_does_not_reuse_verdicts(
    tmp_path, problem, fakes, monkeypatch
):
    options = OptimizeOptions(device="cpu", budget=Budget(generations=1))

    def run():
        evaluator = fakes.FakeEvaluator()
        optimize(problem, options, tmp_path, evaluator_factory=lambda *a: evaluator,
                 proposer_factory=lambda names: [fakes.FakeProposer()])  # fmt: skip
        return evaluator.evaluated

    first = run()
    assert first and run() == []  # the same code and options reuse every verdict
    monkeypatch.setattr(environment, "evaluator_code_digest", lambda: "0123456789ab")
    assert run() == first  # other evaluator code evaluates again
    monkeypatch.setattr(environment, "__version__", "0.2.0")
    assert run() == first
    seeds = dataclasses.replace(options, seeds=6)
    evaluator = fakes.FakeEvaluator()
    optimize(problem, seeds, tmp_path, evaluator_factory=lambda *a: evaluator,
             proposer_factory=lambda names: [fakes.FakeProposer()])  # fmt: skip
    assert evaluator.evaluated == first
