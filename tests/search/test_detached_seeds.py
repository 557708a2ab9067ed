"""Slow seeders that work beside the search (the inductor proposer compiling the problem on a
GPU: `late_seed` and `overlaps_evaluation`): asked in generation 0 in a thread of their own, their
candidates join whichever generation is running when they come, a generation with candidates of
its own never waits for them, a search that ends on its own waits for them inside its budget,
and an ask still running when the run ends is told to stop."""

import json
import threading

from kbot.search import Budget, OptimizeOptions, optimize
from kbot.search.store import Store


class _BesideSeeder:
    """Answers its one seed ask when `release` is set (or at once), as inductor's capture does
    when its child process finishes; records whether the run told it to stop."""

    name = "beside"
    late_seed = True
    overlaps_evaluation = True

    def __init__(self, fakes, release: threading.Event | None = None):
        self.fakes = fakes
        self.release = release
        self.seed_calls = 0
        self.told_to_stop = threading.Event()
        self.asked = threading.Event()

    def propose(self, context):
        from kbot.propose.base import Proposal, ProposeOutcome

        if context.parents:
            return ProposeOutcome((), skipped_reason="beside: proposes once, without parents")
        self.seed_calls += 1
        self.asked.set()
        while self.release is not None and not self.release.wait(0.02):
            if context.cancelled is not None and context.cancelled.is_set():
                self.told_to_stop.set()
                return ProposeOutcome((), skipped_reason="beside: stopped")
        source = self.fakes.candidate("beside seed", block=8192, speed=3.0)
        return ProposeOutcome((Proposal(source, self.name, (), {"schedule": "beside"}),))


class _ReleasingProposer:
    """A fake proposer that sets `release` when it is asked in generation `at`."""

    def __init__(self, fakes, release, at, inner=None):
        self.inner = inner or fakes.FakeProposer()
        self.name = self.inner.name
        self.release, self.at = release, at

    def propose(self, context):
        # ProposeContext.seed is options.seed * 1_000_003 + generation * 101 + island
        if (context.seed % 1_000_003) // 101 >= self.at:
            self.release.set()
        return self.inner.propose(context)


def _run(tmp_path, problem, fakes, proposers, generations=4, **budget):
    return optimize(
        problem,
        OptimizeOptions(device="cpu", budget=Budget(generations=generations, **budget)),
        tmp_path / "work",
        evaluator_factory=lambda *a: fakes.FakeEvaluator(),
        proposer_factory=lambda names: proposers,
    )


def _generations_of(tmp_path, run_id, proposer):
    with Store(tmp_path / "work" / "kbot.sqlite") as store:
        rows = store.run_candidates(run_id)
    return sorted(r.generation for r in rows if r.proposer == proposer)


def test_a_seed_that_comes_late_joins_the_running_generation(tmp_path, problem, fakes):
    """Asked in generation 0 beside codegen's seeds; generations 0 and 1 do not wait for it
    (the fake proposer releases it when asked for generation 2), and it is evaluated there."""
    release = threading.Event()
    beside = _BesideSeeder(fakes, release)
    fake = _ReleasingProposer(fakes, release, at=2)
    result = _run(tmp_path, problem, fakes, [fake, beside])
    assert beside.seed_calls == 1
    found = _generations_of(tmp_path, result.run_id, "beside")
    assert found and found[0] >= 2, found
    report = json.loads((result.run_dir / "report.json").read_text())
    assert report["generations"][0]["evaluated"] == 3  # the fake's seeds only


def test_a_search_that_ends_on_its_own_waits_for_the_seed(tmp_path, problem, fakes):
    """One generation of the fake's seeds and nothing after; the seed is released only once
    the search has nothing left: it is still evaluated, in a generation of its own."""
    release = threading.Event()
    beside = _BesideSeeder(fakes, release)
    fake = _ReleasingProposer(fakes, release, at=1, inner=fakes.FakeProposer(per_parent=0))
    result = _run(tmp_path, problem, fakes, [fake, beside], generations=2)
    assert _generations_of(tmp_path, result.run_id, "beside") == [1]
    report = json.loads((result.run_dir / "report.json").read_text())
    assert [g["evaluated"] for g in report["generations"]] == [3, 1]


def test_an_ask_still_running_at_the_end_is_told_to_stop(tmp_path, problem, fakes):
    """Never released: the time budget ends the search, and the seeder sees `cancelled`."""
    beside = _BesideSeeder(fakes, threading.Event())
    result = _run(tmp_path, problem, fakes, [fakes.FakeProposer(per_parent=0), beside],
                  time_s=1.5)  # fmt: skip
    assert beside.told_to_stop.wait(5.0)
    assert _generations_of(tmp_path, result.run_id, "beside") == []
    notes = json.loads((result.run_dir / "report.json").read_text())["notes"]
    assert notes == ["beside: still proposing when the time budget ran out"], notes


def test_without_overlap_a_slow_seeder_still_seeds_in_generation_one(tmp_path, problem, fakes):
    class InLine(_BesideSeeder):
        overlaps_evaluation = False

    in_line = InLine(fakes)
    result = _run(tmp_path, problem, fakes, [fakes.FakeProposer(), in_line], generations=3)
    assert _generations_of(tmp_path, result.run_id, "beside") == [1]


def test_background_asks_of_two_proposers_run_side_by_side():
    """A proposer that takes long holds up no other proposer's answers."""
    from kbot.propose.base import ProposeContext, ProposeOutcome
    from kbot.search.overlap import Ask, BackgroundAsks

    slow_release = threading.Event()

    class Slow:
        name = "slow"

        def propose(self, context):
            slow_release.wait(5.0)
            return ProposeOutcome(())

    class Quick:
        name = "quick"

        def propose(self, context):
            return ProposeOutcome((), skipped_reason="quick: nothing")

    def context_for(ask, tokens, usd):
        return ProposeContext(problem=None, parents=(), device="cpu", seed=0)

    asks = BackgroundAsks([Ask(Slow(), (), -1, 1), Ask(Quick(), (), -1, 1)], context_for).start()
    try:
        assert asks.wait_next(None, lambda: False) is None
        ready = asks.take_ready()
        assert [a.ask.proposer.name for a in ready] == ["quick"]
    finally:
        slow_release.set()


def test_a_detached_seed_is_evaluated_next_when_it_comes(tmp_path, problem, fakes):
    """It comes while the first of the fake's three seeds is evaluated: it is evaluated second,
    before the other two, so a short budget does not end the run with it still queued."""
    from kbot.propose.base import source_hash

    release = threading.Event()
    beside = _BesideSeeder(fakes, release)

    class Releasing(fakes.FakeEvaluator):
        def sleep_for(self, source):
            if len(self.evaluated) == 1:
                release.set()
                return 1.0  # the seeder answers meanwhile
            return 0.0

    evaluator = Releasing()
    optimize(
        problem,
        OptimizeOptions(device="cpu", budget=Budget(generations=1)),
        tmp_path / "work",
        evaluator_factory=lambda *a: evaluator,
        proposer_factory=lambda names: [fakes.FakeProposer(), beside],
    )
    seed = source_hash(fakes.candidate("beside seed", block=8192, speed=3.0))
    assert len(evaluator.evaluated) == 4 and evaluator.evaluated[1] == seed


def test_the_slow_seed_starts_before_the_evaluator_is_prepared(tmp_path, problem, fakes):
    """torch.compile's own kernels compile while the baselines are built: the seeder is asked
    before `prepare` returns (prepare waits for the ask), once, and the preparation's seconds
    do not come out of the time budget."""
    beside = _BesideSeeder(fakes)

    class Preparing(fakes.FakeEvaluator):
        def prepare(self, problem):
            assert beside.asked.wait(5.0), "the slow seeder was not asked during preparation"
            threading.Event().wait(1.2)  # the baselines' compile, longer than the budget
            return None

    result = optimize(
        problem,
        OptimizeOptions(device="cpu", budget=Budget(generations=2, time_s=1.0)),
        tmp_path / "work",
        evaluator_factory=lambda *a: Preparing(),
        proposer_factory=lambda names: [fakes.FakeProposer(), beside],
    )
    assert beside.seed_calls == 1
    assert _generations_of(tmp_path, result.run_id, "beside") == [0]
    report = json.loads((result.run_dir / "report.json").read_text())
    assert report["generations"][0]["evaluated"] == 4  # the fake's three seeds and the seed
