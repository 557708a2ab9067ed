"""The pure parts of timing, checkable without a GPU: statistics, noise-floor speedups, the
roofline fraction, input rotation, and the protocol's round trip of timing records."""

import math

import torch

from kbot.evaluate.protocol import CandidateOutcome
from kbot.evaluate.roofline import (
    Arithmetic,
    DevicePeaks,
    bytes_moved,
    count_work,
    roofline_fraction,
)
from kbot.evaluate.timing import speedup, to_stat
from kbot.evaluate.timing_job import _all_copies, _output_bytes, _rotated_copies
from kbot.evaluate.verdict import CaseCorrectness, CaseResult, CaseTiming, Stage, Stat


def test_stat_is_median_iqr_and_count():
    stat = to_stat([4.0, 1.0, 3.0, 2.0, 5.0])
    assert (stat.median_us, stat.iqr_us, stat.runs) == (3.0, 2.0, 5)
    assert math.isclose(stat.spread, 2.0 / 3.0)


def test_speedup_inside_the_medians_confidence_interval_is_one():
    base = Stat(median_us=100.0, iqr_us=4.0, runs=200)
    # 1.58 * 4 / sqrt(200) = 0.45% and 0.23%: combined 0.5%, so a 0.4% difference is noise
    assert speedup(base, Stat(median_us=99.6, iqr_us=2.0, runs=200)) == 1.0
    assert math.isclose(speedup(base, Stat(median_us=99.0, iqr_us=2.0, runs=200)), 100 / 99)
    assert math.isclose(speedup(base, Stat(median_us=50.0, iqr_us=1.0, runs=200)), 2.0)
    assert speedup(None, Stat(1.0, 0.1, 100)) is None


def test_a_consistent_small_gain_over_many_runs_is_kept():
    # 3% faster, 5% sample spread: inside the spread, but 1000 runs pin each median to
    # 1.58 * 5 / sqrt(1000) = 0.25%, so the gain is real
    base = Stat(median_us=100.0, iqr_us=5.0, runs=1000)
    candidate = Stat(median_us=100.0 / 1.03, iqr_us=5.0 / 1.03, runs=1000)
    assert candidate.spread > 0.03
    assert math.isclose(speedup(base, candidate), 1.03)
    # the same gain over 10 runs is inside the interval (1.58 * 5 / sqrt(10) = 2.5% each,
    # 3.5% combined)
    few = Stat(median_us=100.0 / 1.03, iqr_us=5.0 / 1.03, runs=10)
    assert speedup(Stat(100.0, 5.0, 10), few) == 1.0
    # and a slowdown is reported as one, by the same test
    assert math.isclose(speedup(candidate, base), 1 / 1.03)


def test_roofline_fraction_uses_the_tighter_bound():
    peaks = DevicePeaks("gpu", 4e12, 4.4e12, 600e12, 300e12, 50e12)
    copy, bf16 = peaks.copy, peaks.compute(Arithmetic.BF16)
    assert math.isclose(roofline_fraction(4_000_000, 0, 1.0, copy, bf16), 1.0)
    assert math.isclose(roofline_fraction(0, 600_000_000, 1.0, copy, bf16), 1.0)
    assert roofline_fraction(1000, 10, 10.0, copy, bf16) < 0.01


def test_bytes_and_flops_of_a_reference():
    model = torch.nn.Linear(64, 32, bias=False)
    x = torch.randn(8, 64)
    out = model(x)
    assert bytes_moved([x], model, (out,)) == 4 * (8 * 64 + 32 * 64 + 8 * 32)
    assert count_work(model, [x]).flops == 2 * 8 * 64 * 32


def test_rotated_copies_exceed_the_flush_size_and_share_nothing():
    x = torch.randn(1024)  # 4 KiB
    copies = _rotated_copies([x, 3], l2_flush_bytes=10_000)
    assert len(copies) == 3 and copies[0][0] is x
    assert copies[1][0].data_ptr() != x.data_ptr() and copies[1][1] == 3
    assert len(_rotated_copies([torch.randn(1 << 20)], 1000)) == 1


def test_rotated_copies_count_what_a_call_writes():
    # small inputs, a large output (an outer product, a small-K matmul): every copy's outputs
    # stay alive in the timed graph, so the outputs count towards the flush size
    a, b = torch.randn(64, 2), torch.randn(2, 64)
    written = _output_bytes(lambda x, y: x @ y, [a, b], mutates_inputs=False)
    assert written == 64 * 64 * 4
    assert len(_rotated_copies([a, b], 40_000)) == 40
    assert len(_rotated_copies([a, b], 40_000, written)) == 3


def test_output_bytes_leave_inputs_the_op_writes_into_unchanged():
    x = torch.ones(8)
    assert _output_bytes(lambda t: t.mul_(2), [x], mutates_inputs=True) == 32
    assert torch.equal(x, torch.ones(8))
    assert _output_bytes(lambda t: t.nonexistent(), [x], mutates_inputs=False) == 0


def test_timing_records_survive_the_pipe():
    stat = Stat(median_us=12.5, iqr_us=0.5, runs=120)
    timing = CaseTiming(
        candidate_graph=stat,
        candidate_plain=stat,
        eager_graph=stat,
        eager_plain=stat,
        compile_graph=None,
        compile_plain=None,
        compile_max_autotune_graph=stat,
        bytes_moved=1000,
        flops=0,
        roofline_fraction=0.5,
        speedup_vs_eager=1.0,
        speedup_vs_compile=None,
    )
    correctness = CaseCorrectness(
        {"T": 1}, 5, ("normal", "small"), 0.0, float("nan"), 1e-4, 1e-4, True
    )
    outcome = CandidateOutcome(True, Stage.DONE, (), (CaseResult({"T": 1}, correctness, timing),))
    back = CandidateOutcome.from_json(outcome.to_json())
    assert back.cases[0].timing == timing
    assert math.isnan(back.cases[0].correctness.max_rel_norm_error)


def test_measure_interleaves_and_stops_when_medians_are_stable(monkeypatch):
    from kbot.evaluate import timing

    order = []

    def graph(impl, flush, n):
        order.append(impl.name)
        impl.graph_us += [10.0] * n

    def plain(impl, n):
        impl.plain_us += [12.0] * n

    monkeypatch.setattr(timing, "sample_graph", graph)
    monkeypatch.setattr(timing, "sample_plain", plain)
    impls = [timing.Implementation(name, None, []) for name in ("a", "b", "c")]
    timing.measure(impls, flush=None, budget_s=60.0)
    assert all(len(i.graph_us) == timing.MIN_RUNS for i in impls)
    assert order[:6] == ["a", "b", "c", "b", "c", "a"]  # the order rotates every round


def test_measure_keeps_going_while_noisy_until_the_budget(monkeypatch):
    import itertools

    from kbot.evaluate import timing

    noise = itertools.cycle([5.0, 15.0, 10.0, 30.0])

    def graph(impl, flush, n):
        impl.graph_us += [next(noise) for _ in range(n)]

    monkeypatch.setattr(timing, "sample_graph", graph)
    monkeypatch.setattr(timing, "sample_plain", lambda impl, n: impl.plain_us.extend([1.0] * n))
    impl = timing.Implementation("noisy", None, [])
    timing.measure([impl], flush=None, budget_s=0.05)
    assert len(impl.graph_us) > timing.MIN_RUNS


def test_a_baselines_graph_keeps_every_calls_outputs_as_a_candidates_does():
    # With only the first call's outputs kept, a CUDA graph's pool handed the other calls one
    # reused buffer (warm in L2), while a candidate's graph keeps each copy's outputs.
    copies = [[torch.full((4,), float(i))] for i in range(5)]
    outputs = _all_copies(lambda c: c[0] * 2, copies)()
    assert len(outputs) == 5
    assert len({o.data_ptr() for o in outputs}) == 5
    assert [o[0].item() for o in outputs] == [0.0, 2.0, 4.0, 6.0, 8.0]
