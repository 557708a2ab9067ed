"""The GPU's measurement lock (kbot.evaluate.gpu_lock): one process measures at a time, a
process may take it again inside itself, a process that dies releases it, and inductor's
autotuning in a process that hooked it waits for the judge's timing."""

import subprocess
import sys
import threading
import time
import types

import pytest

from kbot.evaluate import gpu_lock

HOLD = """
import sys, time
from pathlib import Path
from kbot.evaluate.gpu_lock import held
with held(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _hold_in_child(path, seconds):
    child = subprocess.Popen([sys.executable, "-c", HOLD, str(path), str(seconds)],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdout.readline().strip() == "held"
    return child


def test_another_process_waits_until_the_holder_lets_go(tmp_path):
    path = tmp_path / "gpu.lock"
    child = _hold_in_child(path, 1.0)
    started = time.monotonic()
    with gpu_lock.held(path):
        waited = time.monotonic() - started
    child.wait()
    assert waited >= 0.5


def test_a_holder_that_dies_releases_the_lock(tmp_path):
    path = tmp_path / "gpu.lock"
    child = _hold_in_child(path, 60.0)
    child.kill()
    child.wait()
    started = time.monotonic()
    with gpu_lock.held(path):
        pass
    assert time.monotonic() - started < 5.0


def test_the_lock_is_taken_once_per_process(tmp_path):
    """Inside a holder, the same process takes it again at once (inductor's benchmark calls its
    benchmark_gpu; an autotuner's thread), and lets go of it with the last of them."""
    path = tmp_path / "gpu.lock"
    inside = threading.Event()

    def in_thread():
        with gpu_lock.held(path):
            inside.set()

    with gpu_lock.held(path), gpu_lock.held(path):
        thread = threading.Thread(target=in_thread)
        thread.start()
        assert inside.wait(5.0)
        thread.join(5.0)
    assert not gpu_lock._held
    child = _hold_in_child(path, 0.0)  # another process gets it now
    child.wait()


def test_off_cuda_the_measurement_takes_no_lock(monkeypatch):
    def no_lock_file(device):
        raise AssertionError("a CPU measurement looked for a GPU's lock file")

    monkeypatch.setattr(gpu_lock, "lock_path", no_lock_file)
    with gpu_lock.gpu_measurement("cpu"):
        assert not gpu_lock._held


def test_inductor_benchmarks_hold_the_lock_once_hooked(tmp_path, monkeypatch):
    """The hook wraps the process's benchmarker: while the judge (another holder) measures,
    an autotuning benchmark waits; hooking twice wraps once."""
    benchmarking = pytest.importorskip("torch._inductor.runtime.benchmarking")
    calls = []

    class FakeBenchmarker:
        def benchmark(self, fn):
            calls.append(("benchmark", time.monotonic()))
            return self.benchmark_gpu(fn)

        def benchmark_gpu(self, fn):
            calls.append(("benchmark_gpu", time.monotonic()))
            return 1.0

    fake = FakeBenchmarker()
    monkeypatch.setattr(benchmarking, "benchmarker", fake)
    path = tmp_path / "gpu.lock"
    monkeypatch.setattr(gpu_lock, "lock_path", lambda device: path)
    monkeypatch.setattr(gpu_lock, "gpu_measurement", _cuda_measurement(path))
    assert gpu_lock.inductor_benchmarks_lockable()
    assert gpu_lock.lock_inductor_benchmarks("cuda") and gpu_lock.lock_inductor_benchmarks("cuda")
    assert getattr(fake.benchmark, "__wrapped__", None) is not None
    assert getattr(fake.benchmark.__wrapped__, "__wrapped__", None) is None  # wrapped once

    child = _hold_in_child(path, 1.0)
    started = time.monotonic()
    assert fake.benchmark(lambda: None) == 1.0  # nested benchmark_gpu takes it again: no deadlock
    child.wait()
    assert [name for name, _ in calls] == ["benchmark", "benchmark_gpu"]
    assert calls[0][1] - started >= 0.5


def test_without_a_benchmarker_of_the_known_shape_nothing_is_hooked(monkeypatch):
    benchmarking = pytest.importorskip("torch._inductor.runtime.benchmarking")
    monkeypatch.setattr(benchmarking, "benchmarker", types.SimpleNamespace(benchmark=None))
    assert not gpu_lock.inductor_benchmarks_lockable()
    assert not gpu_lock.lock_inductor_benchmarks("cuda")


def _cuda_measurement(path):
    def measurement(device):
        return gpu_lock.held(path)

    return measurement
