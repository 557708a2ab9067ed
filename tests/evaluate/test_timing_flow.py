"""The timing stage's control flow on a CPU, with the GPU primitives replaced by fakes: graphs
that re-run the call, a `measure` that records fixed samples, fixed device peaks, and a fake
candidate process that answers the judge's requests. What is checked is the judge's own logic:
which implementations are timed, speedups, roofline, the recheck of the timed graph on fresh
inputs, the cross-check of claimed times against the judge's clock, and how results merge."""

from __future__ import annotations

import time
from types import SimpleNamespace

import pytest
import torch

from kbot.evaluate import timing_job
from kbot.evaluate.compare import as_outputs
from kbot.evaluate.jobs import Loaded
from kbot.evaluate.protocol import CandidateJob, CandidateOutcome, Job
from kbot.evaluate.remote import CandidateFailed, CandidateLost
from kbot.evaluate.roofline import DevicePeaks
from kbot.evaluate.verdict import CaseCorrectness, CaseResult, Reason, Stage
from kbot.problem.runtime import import_file, init_inputs

# The interpreter's sigmoid overflows in exp for large negative inputs; harmless here.
pytestmark = pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")


class FakeGraph:
    """Replays by calling again and copying into the captured outputs, like a CUDA graph."""

    def __init__(self, call, outputs):
        self.call, self.outputs = call, outputs

    def replay(self):
        with torch.no_grad():
            for static, fresh in zip(as_outputs(self.outputs), as_outputs(self.call())):
                static.copy_(fresh)


def fake_capture(call):
    with torch.no_grad():
        outputs = call()
    return FakeGraph(call, outputs), outputs


class FakeHost:
    """A candidate's process that computes with `model` and claims `claimed_us` per call.
    `replay_s` is what one replay really takes (the judge's clock sees it)."""

    def __init__(self, model, claimed_us=10.0, replay_s=0.0, stale=False, fail=None, host_us=24.0):
        self.model, self.claimed_us, self.replay_s = model, claimed_us, replay_s
        self.host_us = host_us
        self.stale, self.fail = stale, fail or {}
        self.copies_skipped = False  # a graph that computes only its first call's inputs
        self.refused: list[str] = []
        self.inputs = None
        self.closed = False

    def request(self, op, timeout_s, **fields):
        if op in self.fail:
            raise self.fail[op]
        if op == "call":
            self.inputs = fields["inputs"]
            return {"outputs": as_outputs(self.model(*self.inputs))}
        if op == "sample":
            n = fields["n"]
            return {
                "graph_us": [self.claimed_us + 0.01 * i for i in range(n)],
                "plain_us": [self.claimed_us + 5.0] * n,
                "host_us": [self.host_us] * n,
            }
        if op == "replay":
            time.sleep(self.replay_s * fields["times"])
            return {}
        if op == "recheck":
            lazy = self.copies_skipped and fields.get("copy", 0) > 0
            inputs = self.inputs if self.stale or lazy else fields["inputs"]
            with torch.no_grad():
                return {"outputs": as_outputs(self.model(*inputs))}
        return {}

    def close(self):
        self.closed = True


def fake_measure(impls, flush, budget_s):
    for impl in impls:
        if isinstance(impl, timing_job.RemoteImplementation):
            impl.take(flush, 100)
            continue
        impl.graph_us = [20.0 + 0.01 * i for i in range(100)]
        impl.plain_us = [25.0 + 0.01 * i for i in range(100)]
        impl.host_us = [30.0] * 100


@pytest.fixture
def fakes(monkeypatch):
    monkeypatch.setattr(timing_job, "capture", fake_capture)
    monkeypatch.setattr(timing_job, "measure", fake_measure)
    monkeypatch.setattr(timing_job, "l2_flush_buffer", lambda device: torch.empty(1 << 16))
    monkeypatch.setattr(
        timing_job,
        "device_peaks",
        lambda device: DevicePeaks("fake", 4e12, 4.4e12, 600e12, 300e12, 50e12),
    )
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)


def _run(problem, hosts, compile_baselines=False, sent=None):
    """Times one fake candidate process per entry of `hosts` (each a FakeHost factory taking
    the reference model); `sent` collects the job's events."""
    state = SimpleNamespace(device=torch.device("cpu"), problems={}, cache={}, rounded_to={})
    job = Job(
        kind="evaluate",
        problem_path=str(problem.path.resolve()),
        problem_sha256=problem.source_sha256,
        cases=problem.cases,
        candidates=tuple(CandidateJob(f"c{i}.py", "") for i in range(len(hosts))),
        compile_baselines=compile_baselines,
        base_seed=7,
    )
    module = import_file(problem.path)
    outcomes, loaded = [], []
    for make in hosts:
        torch.manual_seed(0)
        reference = module.Model(*init_inputs(module)).eval()
        loaded.append(Loaded(make(reference), reference))
        cases = tuple(
            CaseResult(
                dict(c), CaseCorrectness(dict(c), 5, ("normal",), 0.0, 0.0, 0, 0, True), None
            )
            for c in job.cases
        )
        outcomes.append(CandidateOutcome(True, Stage.CORRECTNESS, (), cases))
    baselines = timing_job.prepare_baselines(job, state, module, lambda message: None)
    send = (lambda m: None) if sent is None else sent.append
    return timing_job.time_outcomes(job, state, module, baselines, outcomes, loaded, send)


def test_the_timing_says_where_its_time_went(fakes, problem):
    # On the H100, a 1.6 GB-input op's first verdict spent 27 s in "timing" with nothing to say
    # which part: the last step names its phases, every case together.
    sent = []
    (outcome,) = _run(problem("add_rmsnorm"), [FakeHost], sent=sent)
    assert outcome.accepted
    (phases,) = [m["name"] for m in sent if m.get("event") == "step"]
    names = [
        part.rsplit(" ", 2)[0] for part in phases.removeprefix("timing's phases: ").split(", ")
    ]
    assert names == ["inputs", "references' graphs", "candidates' graphs", "measurement",
                     "bytes and FLOPs", "recheck"]  # fmt: skip


def test_timed_candidate_gets_stats_speedup_and_roofline(fakes, problem, candidate):
    (outcome,) = _run(problem("add_rmsnorm"), [FakeHost])
    assert outcome.accepted and outcome.stage == Stage.DONE
    for result in outcome.cases:
        t = result.timing
        assert t.candidate_graph.runs == 100 and t.eager_plain.runs == 100
        assert t.speedup_vs_eager == pytest.approx(
            t.eager_graph.median_us / t.candidate_graph.median_us
        )
        assert t.speedup_vs_compile is None and t.compile_graph is None
        assert 0 < t.roofline_fraction < 1
        assert result.correctness.passed
        # what an eager caller pays to issue one call, beside the graph time
        assert t.candidate_host.median_us == 24.0 and t.eager_host.median_us == 30.0
        assert t.compile_host is None


def test_a_sample_without_host_times_is_malformed(problem, fakes):
    class NoHostTimes(FakeHost):
        def request(self, op, timeout_s, **fields):
            reply = super().request(op, timeout_s, **fields)
            if op == "sample":
                reply.pop("host_us")
            return reply

    (outcome,) = _run(problem("add_rmsnorm"), [NoHostTimes])
    assert not outcome.accepted and "malformed times" in outcome.reasons[0].message


def test_timed_graph_that_stops_computing_is_rejected(problem, fakes):
    stale = lambda model: FakeHost(model, stale=True)  # the graph ignores refilled inputs
    (outcome,) = _run(problem("quick_gelu"), [stale])
    assert not outcome.accepted and outcome.stage == Stage.TIMING
    assert outcome.reasons[0].rule == "mismatch"
    assert "timed CUDA graph" in outcome.reasons[0].message


def test_a_timed_graph_that_computes_only_its_first_copy_is_rejected(problem, fakes, monkeypatch):
    def lazy(model):
        host = FakeHost(model)
        host.copies_skipped = True
        return host

    # the judge draws which of the graph's calls it rechecks: here the last one
    monkeypatch.setattr(timing_job.secrets, "randbelow", lambda n: n - 1)
    (outcome,) = _run(problem("quick_gelu"), [lazy])
    assert not outcome.accepted and outcome.reasons[0].rule == "mismatch"
    assert "timed CUDA graph" in outcome.reasons[0].message


def test_a_candidate_wrong_on_the_timed_inputs_is_rejected(problem, fakes):
    """Red-team round twelve: a kernel that recognised the timed inputs (drawn under the seed
    Model's weights were drawn under) did half the work on them; nothing compared the outputs
    of the call that placed them. That call is judged now, and those inputs come from the OS."""

    class HalfOnTimedInputs(FakeHost):
        def request(self, op, timeout_s, **fields):
            reply = super().request(op, timeout_s, **fields)
            if op == "call":
                reply = {"outputs": tuple(v * 0.5 for v in reply["outputs"])}
            return reply

    (outcome,) = _run(problem("quick_gelu"), [HalfOnTimedInputs])
    assert not outcome.accepted and outcome.stage == Stage.TIMING
    assert outcome.reasons[0].rule == "mismatch"
    assert "the call that placed the timed inputs is wrong" in outcome.reasons[0].message


def test_without_the_devices_peaks_nothing_is_timed(problem, fakes, monkeypatch):
    """Red-team round twelve: a candidate holding the card's memory made the peaks'
    measurement fail, and a timing without peaks had no ceiling. The peaks are measured with
    the baselines, before any candidate code of the job; without them no time is claimed."""

    def failing(device):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory")

    monkeypatch.setattr(timing_job, "device_peaks", failing)
    (outcome,) = _run(problem("quick_gelu"), [FakeHost])
    assert outcome.accepted and all(case.timing is None for case in outcome.cases)
    notes = [note.message for note in outcome.notes]
    assert "measuring the device's peaks failed: OutOfMemoryError" in notes
    assert "not timed: the device's peaks are unknown" in notes


def test_above_the_roofline_is_an_evaluator_error(problem, fakes, monkeypatch):
    monkeypatch.setattr(
        timing_job, "device_peaks", lambda device: DevicePeaks("slow", 1e3, 1e3, 1e3, 1e3, 1e3)
    )
    (outcome,) = _run(problem("quick_gelu"), [FakeHost])
    assert not outcome.accepted and outcome.reasons[0].rule == "evaluator-error"


@pytest.mark.parametrize(
    "copy_fraction, read_fraction, accepted",
    [(1.06, 0.97, True), (1.06, 1.06, True), (1.30, 1.15, False)],
)
def test_the_ceiling_is_the_faster_of_copy_and_read(
    problem, fakes, monkeypatch, copy_fraction, read_fraction, accepted
):
    """A reduction reads faster than a copy moves bytes (KernelBench L1/94 read 8.6 GB at 106%
    of the H100's copy rate): past the copy rate is not an evaluator error until the faster of
    the copy and read-only rates is passed by ROOFLINE_LIMIT."""
    moved = 10**6
    rate = moved / 10.5e-6  # the fake candidate's median call: 10.5 us
    monkeypatch.setattr(timing_job, "bytes_moved", lambda *a: moved)
    monkeypatch.setattr(
        timing_job,
        "device_peaks",
        lambda device: DevicePeaks(
            "reads", rate / copy_fraction, rate / read_fraction, 600e12, 300e12, 50e12
        ),
    )
    (outcome,) = _run(problem("quick_gelu"), [FakeHost])
    assert outcome.accepted is accepted, outcome.reasons
    if not accepted:
        assert outcome.reasons[0].rule == "evaluator-error"
        assert "of the ceiling (streaming" in outcome.reasons[0].message
    else:
        assert outcome.cases[0].timing.roofline_fraction > 1.0  # the report's copy roofline


def test_uncapturable_candidate_is_rejected(problem, fakes):
    lost = CandidateFailed(Reason("cuda-graph", "operation not permitted when capturing"), False)
    (outcome,) = _run(problem("gelu_fp32"), [lambda model: FakeHost(model, fail={"capture": lost})])
    assert not outcome.accepted and outcome.reasons[0].rule == "cuda-graph"


def test_speedup_inside_the_noise_is_one(problem, fakes, monkeypatch):
    def same_speed(impls, flush, budget_s):
        for impl in impls:
            impl.graph_us = [10.0 + 0.1 * (i % 10) for i in range(100)]
            impl.plain_us = list(impl.graph_us)

    monkeypatch.setattr(timing_job, "measure", same_speed)
    (outcome,) = _run(problem("gelu_fp32"), [FakeHost])
    assert outcome.cases[0].timing.speedup_vs_eager == 1.0


def test_a_claimed_time_the_judges_clock_contradicts_is_rejected(problem, fakes):
    # Claims 1 us per call (50 calls a replay) while a replay takes 2 ms on the judge's clock.
    liar = lambda model: FakeHost(model, claimed_us=1.0, replay_s=0.002)
    honest = lambda model: FakeHost(model, claimed_us=2000.0, replay_s=0.002)
    lying, truthful = _run(problem("gelu_fp32"), [liar, honest])
    assert not lying.accepted and lying.reasons[0].rule == "timing-integrity"
    assert "judge's clock" in lying.reasons[0].message
    assert truthful.accepted, [str(r) for r in truthful.reasons]


class _LoadedHost(FakeHost):
    """An honest candidate whose first clock batches ran on a host too busy to launch: the
    judge's clock saw three times what the GPU took (the H200's full suite, once)."""

    def __init__(self, model, slow_batches):
        super().__init__(model, claimed_us=10.0)
        self.slow_batches = slow_batches
        self.batches = 0

    def request(self, op, timeout_s, **fields):
        if op == "replay":
            # The judge sizes a batch to 20 ms of claimed replays; a busy host takes 3x that.
            self.batches += 1
            time.sleep(0.060 if self.batches <= self.slow_batches else 0.020)
            return {}
        return super().request(op, timeout_s, **fields)


def _judged_with_slow_batches(problem, slow_batches):
    hosts = []

    def loaded(model):
        hosts.append(_LoadedHost(model, slow_batches=slow_batches))
        return hosts[-1]

    (outcome,) = _run(problem("gelu_fp32"), [loaded])
    return outcome, hosts[0]


def test_a_busy_host_on_some_clock_batches_does_not_reject_an_honest_claim(problem, fakes):
    outcome, host = _judged_with_slow_batches(problem, 2)
    assert outcome.accepted, [str(r) for r in outcome.reasons]
    assert host.batches == 3


def test_a_claim_every_clock_batch_contradicts_is_rejected_after_all_of_them(problem, fakes):
    outcome, host = _judged_with_slow_batches(problem, 99)
    assert not outcome.accepted and outcome.reasons[0].rule == "timing-integrity"
    assert "every one of 3 batches" in outcome.reasons[0].message
    assert host.batches == 3


def test_a_process_lost_while_timed_costs_that_candidate_only(problem, fakes):
    died = CandidateLost(Reason("crash", "the candidate's process was killed by SIGSEGV"))
    dying = lambda model: FakeHost(model, fail={"sample": died})
    lost, healthy = _run(problem("gelu_fp32"), [dying, FakeHost])
    assert not lost.accepted and lost.reasons[0].rule == "crash"
    assert healthy.accepted
