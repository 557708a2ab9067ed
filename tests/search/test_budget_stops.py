import functools

import pytest

from kbot.search import Budget, OptimizeOptions, StopReason, loop, optimize
from kbot.search.budget import BudgetTracker
from kbot.search.store import Store


def _run(tmp_path, problem, fakes, budget, evaluator=None, proposer=None, **options):
    evaluator = evaluator or fakes.FakeEvaluator()
    proposer = proposer or fakes.FakeProposer()
    result = optimize(
        problem,
        OptimizeOptions(device="cpu", budget=budget, **options),
        tmp_path,
        evaluator_factory=lambda *a: evaluator,
        proposer_factory=lambda names: [proposer],
    )
    return result, evaluator


def test_stops_after_the_generation_budget(tmp_path, problem, fakes):
    result, _ = _run(tmp_path, problem, fakes, Budget(generations=2, time_s=None))
    assert result.stop_reason is StopReason.GENERATIONS
    with Store(tmp_path / "kbot.sqlite") as store:
        assert [g.generation for g in store.generations(result.run_id)] == [0, 1]


def test_stops_after_the_candidate_budget(tmp_path, problem, fakes):
    result, evaluator = _run(tmp_path, problem, fakes, Budget(generations=5, max_candidates=5))
    assert result.stop_reason is StopReason.CANDIDATES
    assert result.candidates == 5 and len(evaluator.evaluated) == 5
    assert result.best_candidate_path is not None  # the best so far still wins


def test_stops_when_the_time_budget_is_spent(tmp_path, problem, fakes, monkeypatch):
    # Each evaluation takes 0.1 s of a clock only the evaluator moves, so the count is exact:
    # with one median evaluation (0.1 s) kept back, the fifth ends at 0.5 s and a sixth would
    # end past the 0.55 s budget. The run stops inside generation 1 (3 seeds, 2 variants).
    clock = fakes.FakeClock()
    monkeypatch.setattr(loop, "BudgetTracker", functools.partial(BudgetTracker, clock=clock))
    slow = fakes.FakeEvaluator(sleep_s=0.1, clock=clock)
    result, _ = _run(
        tmp_path,
        problem,
        fakes,
        Budget(generations=50, time_s=0.55, max_candidates=None),
        evaluator=slow,
    )
    assert result.stop_reason is StopReason.TIME
    assert len(slow.evaluated) == 5


def test_stops_without_improvement_for_patience_generations(tmp_path, problem, fakes):
    # on a CPU the variants (a comment added) are exactly as simple as their parents: no gain
    result, _ = _run(tmp_path, problem, fakes, Budget(generations=6), patience=2)
    assert result.stop_reason is StopReason.PATIENCE
    report = (result.run_dir / "report.json").read_text()
    assert '"generation": 2' in report and '"generation": 3' not in report


def test_stops_at_the_roofline(tmp_path, problem, fakes):
    timed = fakes.FakeEvaluator(timed=True)
    proposer = fakes.FakeProposer(speed_base=2.0)
    result, _ = _run(
        tmp_path, problem, fakes, Budget(generations=5), evaluator=timed, proposer=proposer
    )
    assert result.stop_reason is StopReason.ROOFLINE
    assert len(timed.evaluated) == 3  # the seeds only


def test_stops_when_proposers_run_dry(tmp_path, problem, fakes):
    proposer = fakes.FakeProposer(variants=False)
    result, _ = _run(tmp_path, problem, fakes, Budget(generations=5), proposer=proposer)
    assert result.stop_reason is StopReason.EXHAUSTED


def test_tracker_counts_time_spent_before_a_resume():
    now = [100.0]
    tracker = BudgetTracker(Budget(time_s=60.0), spent_before_s=50.0, clock=lambda: now[0])
    assert tracker.exhausted() is None
    now[0] += 11.0
    assert tracker.exhausted() is StopReason.TIME
    assert tracker.eta_s(0) == pytest.approx(0.0)


def test_a_pool_of_gpus_evaluates_in_batches_within_the_candidate_budget(tmp_path, problem, fakes):
    result, evaluator = _run(
        tmp_path, problem, fakes, Budget(generations=3, max_candidates=7), gpus=(0, 1)
    )
    assert result.stop_reason is StopReason.CANDIDATES and len(evaluator.evaluated) == 7
    assert evaluator.batches and set(evaluator.batches) <= {2}


def test_the_time_budget_keeps_back_the_next_evaluation_and_the_remeasurement():
    now = [0.0]
    tracker = BudgetTracker(Budget(time_s=600.0), clock=lambda: now[0])
    for wall in (30.0, 10.0, 10.0):  # the first evaluation also compiled the baselines
        now[0] += wall
        tracker.observe(wall, finalists=3)
    # (1 + 3 finalists + the per-size module) x median 10 s
    assert tracker.reserve_s == pytest.approx(50.0)
    now[0] = 545.0
    assert tracker.exhausted() is None
    now[0] = 551.0
    assert tracker.exhausted() is StopReason.TIME  # 551 + 50 >= 600
    slow = BudgetTracker(Budget(time_s=100.0), clock=lambda: 0.0)
    slow.observe(80.0, finalists=3)
    assert slow.reserve_s == pytest.approx(35.0)  # never more than RESERVE_SHARE of the budget
    untimed = BudgetTracker(Budget(time_s=100.0), clock=lambda: 0.0)
    untimed.observe(8.0, finalists=0)  # on a CPU nothing is re-measured
    assert untimed.reserve_s == pytest.approx(8.0)
