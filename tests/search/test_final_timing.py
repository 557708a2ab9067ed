"""What the steps after the loop may take: the grace past the time budget grows with the run's
evaluations, and a finalists' re-measurement the budget's end would cut short is not started
(it would kill the evaluator the per-size module is judged on)."""

from types import SimpleNamespace

from kbot.search import Budget
from kbot.search.budget import BudgetTracker
from kbot.search.final import GRACE_EVALUATIONS, SWEEP_GRACE_MIN_S, grace_deadline
from kbot.search.runner import _remeasure_finalists


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _tracker(budget_s: float, walls: list[float], elapsed_s: float) -> BudgetTracker:
    clock = Clock()
    tracker = BudgetTracker(Budget(time_s=budget_s), clock=clock)
    for wall in walls:
        tracker.observe(wall, finalists=2)
    clock.now += elapsed_s
    return tracker


def test_the_median_evaluation_is_known_after_the_first():
    assert BudgetTracker(Budget(time_s=10.0)).median_wall_s is None
    assert _tracker(150.0, [22.0, 33.0, 25.0], 0.0).median_wall_s == 25.0


def test_the_grace_covers_one_and_a_half_evaluations_when_they_are_slow():
    slow = _tracker(150.0, [22.0, 25.0, 33.0], 160.0)  # past the budget's end
    assert grace_deadline(SimpleNamespace(tracker=slow)) == slow.clock() + GRACE_EVALUATIONS * 25
    quick = _tracker(150.0, [2.0, 3.0], 160.0)
    assert grace_deadline(SimpleNamespace(tracker=quick)) == quick.clock() + SWEEP_GRACE_MIN_S


class Evaluation:
    def __init__(self) -> None:
        self.asked: list[list[str]] = []
        self.evaluator = SimpleNamespace(remeasure=self._remeasure)

    def _remeasure(self, problem, sources):
        self.asked.append(sources)
        return [SimpleNamespace(timed=True) for _ in sources]

    def bounded(self, call):
        return call()


def _run(tracker: BudgetTracker):
    elite = SimpleNamespace(sha256="a" * 64, source="src", fitness=SimpleNamespace(timed=True))
    result = SimpleNamespace(archive=SimpleNamespace(elites=lambda n: [elite]), notes=[])
    loop = SimpleNamespace(tracker=tracker, evaluation=Evaluation())
    store = SimpleNamespace(put_verdict=lambda *a, **k: None)
    problem = SimpleNamespace(source_sha256="p" * 64)
    finalists = _remeasure_finalists(store, "run", problem, "env", loop, result, 2)
    return finalists, result.notes, loop.evaluation.asked


def test_finalists_are_not_re_measured_with_less_than_one_evaluation_left():
    finalists, notes, asked = _run(_tracker(150.0, [25.0, 25.0], 130.0))  # 20 s left
    assert finalists == [] and asked == []
    assert notes == [
        "finalists not re-measured: 20 s of the time budget left, under one evaluation (25 s); "
        "the first verdicts stand"
    ]


def test_finalists_are_re_measured_when_one_evaluation_fits():
    finalists, notes, asked = _run(_tracker(150.0, [25.0, 25.0], 100.0))  # 50 s left
    assert asked == [["src"]] and len(finalists) == 1 and notes == []
