"""GPU measurement primitives: CUDA-graph replay with L2 flushed before every sample (kernel
time), plain launches over rotated input copies (what an eager caller pays), and interleaved
rounds over several implementations until every median is stable or the budget is spent."""

from __future__ import annotations

import math
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from kbot.evaluate.verdict import Stat
from kbot.evaluate.wire import storage_span

MIN_RUNS = 100
MAX_RUNS = 2000
BATCH = 10
# Stop once the 95% confidence half-width of each median (1.58 * IQR / sqrt(n), the notch of
# a box plot) is under this fraction of the median.
STABLE_FRACTION = 0.005
# With a budget this many times over, stop even below MIN_RUNS (an eager baseline of tens of
# milliseconds must not hold a search for minutes). At 5x, a 64k-column softmax at 8 rows
# (60 rotated copies per graph replay) stopped at 50 samples on the H200 (2026-11-30).
HARD_CAP_FACTOR = 20.0


class CaptureError(Exception):
    """A call that cannot be captured in a CUDA graph (host sync, stream use, allocation)."""


@dataclass
class Implementation:
    """One thing to time: a graph of the call on fixed inputs, and plain calls on copies."""

    name: str
    graph: torch.cuda.CUDAGraph
    plain_calls: list[Callable[[], Any]]
    keep_alive: Any = None  # the graph's static outputs, each call's (copy 0's first)
    # Calls captured back to back in one graph, each on its own copy of the inputs: small
    # working sets then stream from HBM (copies together exceed L2) and the graph's launch
    # overhead (~4 us on an H200, measured 2026-11-30) is spread over all of them.
    calls_per_replay: int = 1
    graph_us: list[float] = field(default_factory=list)
    plain_us: list[float] = field(default_factory=list)
    host_us: list[float] = field(default_factory=list)  # CPU time to issue one plain call

    def take(self, flush: torch.Tensor, n: int) -> None:
        sample_graph(self, flush, n)
        sample_plain(self, n)


def capture(call: Callable[[], Any]) -> tuple[torch.cuda.CUDAGraph, Any]:
    """Warms `call` up on a side stream (compiles, autotunes) and captures it in a graph."""
    try:
        torch.cuda.synchronize()
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(3):
                call()
        torch.cuda.current_stream().wait_stream(side)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph), torch.no_grad():
            outputs = call()
        graph.replay()
        torch.cuda.synchronize()
    except Exception as exc:
        text = str(exc).strip().splitlines()
        raise CaptureError(f"{type(exc).__name__}: {(text[0] if text else '')[:300]}") from None
    return graph, outputs


def l2_flush_buffer(device: torch.device) -> torch.Tensor:
    l2_bytes = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 0) or (64 << 20)
    return torch.empty(2 * l2_bytes, dtype=torch.uint8, device=device)


def _events(n: int) -> tuple[list, list]:
    return (
        [torch.cuda.Event(enable_timing=True) for _ in range(n)],
        [torch.cuda.Event(enable_timing=True) for _ in range(n)],
    )


def sample_graph(
    impl: Implementation, flush: torch.Tensor, n: int, before: Callable[[], None] | None = None
) -> None:
    """`n` replays of the graph, each timed alone with L2 flushed first; `before` (untimed, ahead
    of the flush) runs before each (a candidate's inputs are changed there: Jitter)."""
    # The flush also keeps the host ahead of the GPU, so the events bracket only the replay.
    starts, ends = _events(n)
    for i in range(n):
        if before is not None:
            before()
        flush.zero_()
        starts[i].record()
        impl.graph.replay()
        ends[i].record()
    torch.cuda.synchronize()
    per_call = 1000.0 / impl.calls_per_replay
    impl.graph_us += [per_call * s.elapsed_time(e) for s, e in zip(starts, ends)]


# Jitter: each floating-point input value scaled by 1 + u, u uniform in [-JITTER, JITTER]
JITTER = 2.0**-4
_JITTER_CHUNK = 1 << 24  # elements drawn at a time (a multi-GB input needs no twin)
_FEW = 16  # up to this many tensors, each is drawn for in turn; more share one table
_SLIDE = 4096  # elements by which the shared table's window moves between replays


def jitter_(tensors: list, generator: torch.Generator) -> None:
    """Every value of each floating-point tensor in `tensors` scaled, in place, by its own draw
    of 1 + u (u uniform in [-JITTER, JITTER]): its sign and rough size kept, its bits new."""
    for flat in _spans(tensors):
        for start in range(0, flat.numel(), _JITTER_CHUNK):
            piece = flat[start : start + _JITTER_CHUNK]
            factor = torch.rand(piece.shape, generator=generator, device=piece.device)
            piece.mul_(factor.mul_(2 * JITTER).add_(1 - JITTER).to(piece.dtype))


class Jitter:
    """What a candidate's timed graph replays on: its inputs' values changed before each replay
    (outside the timed window), so a graph that keeps its last answer and reuses it while its
    inputs (or a sample of them) are unchanged (red-team round twelve) does the op's work every
    replay, as a server's graph replays on new tokens. A few large tensors are drawn for in
    turn (jitter_); many small ones (a decode-size op's hundreds of copies: a draw per tensor
    took most of a replay's budget on an H100) are scaled by windows of one table of factors
    drawn once per dtype, the windows moved by a drawn offset each replay, in one
    `torch._foreach_mul_` per dtype."""

    def __init__(self, tensors: list, generator: torch.Generator) -> None:
        self.generator = generator
        self.spans = _spans(tensors)
        self.groups: list[tuple[list, list[int], torch.Tensor]] = []
        if len(self.spans) <= _FEW:
            return
        by_dtype: dict[tuple, list] = {}
        for flat in self.spans:
            by_dtype.setdefault((flat.dtype, flat.device), []).append(flat)
        for (dtype, device), flats in by_dtype.items():
            offsets, total = [], 0
            for flat in flats:
                offsets.append(total)
                total += flat.numel()
            table = torch.rand(total + _SLIDE, generator=generator, device=device)
            table = table.mul_(2 * JITTER).add_(1 - JITTER).to(dtype)
            self.groups.append((flats, offsets, table))

    def __call__(self) -> None:
        if not self.groups:
            jitter_(self.spans, self.generator)
            return
        for flats, offsets, table in self.groups:
            slide = secrets.randbelow(_SLIDE)
            windows = [table[slide + o : slide + o + f.numel()] for f, o in zip(flats, offsets)]
            torch._foreach_mul_(flats, windows)


def _spans(tensors: list) -> list[torch.Tensor]:
    """Each floating-point tensor (fp8 aside: torch cannot scale it) as the flat run of the
    storage its view reaches, so a transposed or expanded (stride 0) input is scaled through
    it, each element once."""
    spans = []
    for tensor in tensors:
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
            continue
        if tensor.element_size() == 1 or tensor.numel() == 0:
            continue
        reach, offset = storage_span(tensor)
        spans.append(tensor.as_strided((reach,), (1,), offset))
    return spans


def sample_plain(impl: Implementation, n: int) -> None:
    # No flush and no synchronisation between calls: when launching costs more than the
    # kernels, the GPU waits on the host and the events show it. The host time is the CPU's
    # own clock around each call alone: what an eager caller pays to issue it (the Python
    # launcher, argument binding, the launch), whatever the GPU is doing.
    starts, ends = _events(n)
    offset = len(impl.plain_us)
    host = []
    with torch.no_grad():
        for i in range(n):
            call = impl.plain_calls[(offset + i) % len(impl.plain_calls)]
            starts[i].record()
            began = time.perf_counter()
            call()
            host.append(1e6 * (time.perf_counter() - began))
            ends[i].record()
    torch.cuda.synchronize()
    impl.plain_us += [1000.0 * s.elapsed_time(e) for s, e in zip(starts, ends)]
    impl.host_us += host


def to_stat(samples_us: list[float]) -> Stat:
    ordered = sorted(samples_us)
    n = len(ordered)
    return Stat(
        median_us=_quantile(ordered, 0.5),
        iqr_us=_quantile(ordered, 0.75) - _quantile(ordered, 0.25),
        runs=n,
    )


def _quantile(ordered: list[float], q: float) -> float:
    if not ordered:
        return math.nan
    position = q * (len(ordered) - 1)
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _stable(samples_us: list[float]) -> bool:
    if len(samples_us) < MIN_RUNS:
        return False
    stat = to_stat(samples_us)
    return stat.median_half_width_us <= STABLE_FRACTION * stat.median_us


def measure(impls: list, flush: torch.Tensor, budget_s: float) -> None:
    """Interleaves batches of every implementation, rotating the order each round. An
    implementation is anything with `graph_us`, `plain_us` and `take(flush, n)`: one timed
    here, or a candidate timed in its own process at the judge's request."""
    started = time.perf_counter()
    round_index = 0
    while True:
        order = impls[round_index % len(impls) :] + impls[: round_index % len(impls)]
        for impl in order:
            impl.take(flush, BATCH)
        round_index += 1
        elapsed = time.perf_counter() - started
        enough = all(len(i.graph_us) >= MIN_RUNS and len(i.plain_us) >= MIN_RUNS for i in impls)
        # Speedups and the roofline rest on the graph medians; plain launches are reported
        # but are host-bound jitter at small sizes, so they do not hold the loop open.
        stable = all(_stable(i.graph_us) for i in impls)
        if enough and (stable or elapsed >= budget_s):
            return
        if elapsed >= HARD_CAP_FACTOR * budget_s or all(len(i.graph_us) >= MAX_RUNS for i in impls):
            return


def speedup(baseline: Stat | None, candidate: Stat) -> float | None:
    """baseline / candidate medians; 1.0 when the difference is inside the 95% confidence
    interval of the ratio of the two medians (their relative half-widths, 1.58·IQR/√n each,
    combined in quadrature). The spread of single samples is not the test: a consistent 3%
    gain over 1000 runs with a 5% sample spread is a gain."""
    if baseline is None or not candidate.median_us > 0 or not baseline.median_us > 0:
        return None
    ratio = baseline.median_us / candidate.median_us
    noise = math.hypot(
        baseline.median_half_width_us / baseline.median_us,
        candidate.median_half_width_us / candidate.median_us,
    )
    return 1.0 if abs(ratio - 1.0) <= noise else ratio


def free_cached(device: torch.device) -> None:
    """Gives the memory the caching allocator holds back to the device (graphs and outputs
    let go of), so that the other process on the GPU can use it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.empty_cache()
