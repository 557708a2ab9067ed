"""The timing stage's control flow on a CPU, with the GPU primitives replaced by fakes: graphs
that re-run the call, a `measure` that records fixed samples, fixed device peaks. What is
checked is kbot's own logic: which implementations are timed, speedups, roofline, the recheck
of the timed graph on fresh inputs, and how results merge into the verdict."""

from __future__ import annotations

import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from kbot.evaluate import jobs, timing_job
from kbot.evaluate.compare import as_outputs
from kbot.evaluate.protocol import CandidateJob, CandidateOutcome, Job
from kbot.evaluate.roofline import DevicePeaks
from kbot.evaluate.verdict import Stage

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


def fake_measure(impls, flush, budget_s):
    for impl in impls:
        base = 10.0 if impl.name.startswith("candidate") else 20.0
        impl.graph_us = [base + 0.01 * i for i in range(100)]
        impl.plain_us = [base + 5.0 + 0.01 * i for i in range(100)]


@pytest.fixture
def fakes(monkeypatch):
    monkeypatch.setattr(timing_job, "capture", fake_capture)
    monkeypatch.setattr(timing_job, "measure", fake_measure)
    monkeypatch.setattr(timing_job, "l2_flush_buffer", lambda device: torch.empty(1 << 16))
    monkeypatch.setattr(
        timing_job, "device_peaks", lambda device: DevicePeaks("fake", 4e12, 600e12)
    )
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a, **k: None)


def _run(problem, source, compile_baselines=False):
    state = SimpleNamespace(
        device=torch.device("cpu"),
        workdir=Path(tempfile.mkdtemp()),
        fingerprint={},
        problems={},
        cache={},
    )
    job = Job(
        kind="evaluate",
        problem_path=str(problem.path.resolve()),
        problem_sha256=problem.source_sha256,
        cases=problem.cases,
        candidates=(CandidateJob("c.py", source),),
        compile_baselines=compile_baselines,
        base_seed=7,
    )
    module = jobs._problem(job, state)
    item = jobs._load(job, state, module, "c.py", source)
    outcome = CandidateOutcome(True, Stage.CORRECTNESS, (), jobs._check(job, state, module, item))
    baselines = timing_job.prepare_baselines(job, state, module, lambda message: None)
    return timing_job.time_outcomes(
        job, state, module, baselines, [outcome], [item], lambda m: None
    )


def test_timed_candidate_gets_stats_speedup_and_roofline(fakes, problem, candidate):
    outcomes, restart = _run(problem("add_rmsnorm"), candidate("add_rmsnorm"))
    (outcome,) = outcomes
    assert outcome.accepted and outcome.stage == Stage.DONE and not restart
    for result in outcome.cases:
        t = result.timing
        assert t.candidate_graph.runs == 100 and t.eager_plain.runs == 100
        assert t.speedup_vs_eager == pytest.approx(
            t.eager_graph.median_us / t.candidate_graph.median_us
        )
        assert t.speedup_vs_compile is None and t.compile_graph is None
        assert 0 < t.roofline_fraction < 1
        assert result.correctness.passed


def test_timed_graph_that_stops_computing_is_rejected(problem, candidate, fakes, monkeypatch):
    def frozen_capture(call):
        graph, outputs = fake_capture(call)
        graph.replay = lambda: None  # the captured work no longer follows its inputs
        return graph, outputs

    monkeypatch.setattr(timing_job, "capture", frozen_capture)
    (outcome,), _ = _run(problem("quick_gelu"), candidate("quick_gelu"))
    assert not outcome.accepted and outcome.stage == Stage.TIMING
    assert outcome.reasons[0].rule == "mismatch"
    assert "timed CUDA graph" in outcome.reasons[0].message


def test_above_the_roofline_is_an_evaluator_error(problem, candidate, fakes, monkeypatch):
    monkeypatch.setattr(timing_job, "device_peaks", lambda device: DevicePeaks("slow", 1e3, 1e3))
    (outcome,), _ = _run(problem("quick_gelu"), candidate("quick_gelu"))
    assert not outcome.accepted and outcome.reasons[0].rule == "evaluator-error"


def test_uncapturable_candidate_is_rejected(problem, candidate, fakes, monkeypatch):
    calls = {"n": 0}

    def picky_capture(call):
        calls["n"] += 1
        if calls["n"] > 1:  # the reference (first) captures; the candidate does not
            raise timing_job.CaptureError("RuntimeError: operation not permitted when capturing")
        return fake_capture(call)

    monkeypatch.setattr(timing_job, "capture", picky_capture)
    (outcome,), _ = _run(problem("gelu_fp32"), candidate("quick_gelu"))
    assert outcome.reasons[0].rule == "cuda-graph"


def test_speedup_inside_the_noise_is_one(problem, candidate, fakes, monkeypatch):
    def same_speed(impls, flush, budget_s):
        for impl in impls:
            impl.graph_us = [10.0 + 0.1 * (i % 10) for i in range(100)]
            impl.plain_us = list(impl.graph_us)

    monkeypatch.setattr(timing_job, "measure", same_speed)
    (outcome,), _ = _run(problem("gelu_fp32"), candidate("quick_gelu"))
    assert outcome.cases[0].timing.speedup_vs_eager == 1.0
