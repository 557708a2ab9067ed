"""Candidates' processes started ahead (kbot.evaluate.host_pool): each serves one candidate,
none is reused, the ones started ahead are ready before the judge times, and one that fails to
start costs nothing but itself. The control flow with fakes; one run with real processes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from kbot.evaluate import host_pool, jobs
from kbot.evaluate.confine import Sandbox
from kbot.evaluate.host_pool import HostPool
from kbot.evaluate.remote import HostError


class FakeProcess:
    log: list[str] = []

    def __init__(self, folder, device, sandbox, fail_start=False):
        self.folder = folder
        self.fail_start = fail_start
        self.ready = False
        self.closed = False

    def launch(self):
        FakeProcess.log.append(f"launch {self.folder.name}")

    def wait_ready(self):
        if self.fail_start:
            raise HostError("the candidate's process did not start: no")
        self.ready = True
        FakeProcess.log.append(f"ready {self.folder.name}")

    def close(self):
        self.closed = True


@pytest.fixture
def fakes(monkeypatch):
    FakeProcess.log = []
    made: list[FakeProcess] = []
    failing: set[int] = set()

    def factory(folder, device, sandbox):
        process = FakeProcess(folder, device, sandbox, fail_start=len(made) in failing)
        made.append(process)
        return process

    monkeypatch.setattr(host_pool, "CandidateProcess", factory)
    return made, failing


def test_every_candidate_gets_a_process_of_its_own(tmp_path, fakes):
    made, _ = fakes
    pool = HostPool(tmp_path, torch.device("cuda"), Sandbox(confined=False))
    first = pool.take()
    pool.ahead(5)
    assert len(made) == 1 + host_pool.AHEAD_ON_GPU  # bounded by the limit, not the request
    taken = [pool.take() for _ in range(host_pool.AHEAD_ON_GPU)]
    assert len({id(p) for p in [first, *taken]}) == 1 + host_pool.AHEAD_ON_GPU
    assert all(p.ready for p in taken)
    # Taken in the order they were started; an empty pool starts a new one.
    assert taken == made[1:]
    extra = pool.take()
    assert extra is made[-1] and len(made) == 2 + host_pool.AHEAD_ON_GPU


def test_a_cpu_starts_one_ahead(tmp_path, fakes):
    made, _ = fakes
    pool = HostPool(tmp_path, torch.device("cpu"), Sandbox(confined=False))
    pool.ahead(4)
    assert len(made) == host_pool.AHEAD_ON_CPU == 1


def test_settle_makes_every_started_process_ready_and_drops_the_failed(tmp_path, fakes):
    made, failing = fakes
    failing.add(1)
    pool = HostPool(tmp_path, torch.device("cuda"), Sandbox(confined=False))
    pool.ahead(3)
    assert not any(p.ready for p in made)
    pool.settle()
    assert [p.ready for p in made] == [True, False, True]
    assert made[1].closed
    # The failed one is gone: the next two taken are the ready ones.
    assert pool.take() is made[0] and pool.take() is made[2]


def test_a_process_that_cannot_start_is_closed_and_reported(tmp_path, fakes):
    made, failing = fakes
    failing.add(0)
    pool = HostPool(tmp_path, torch.device("cpu"), Sandbox(confined=False))
    with pytest.raises(HostError):
        pool.take()
    assert made[0].closed
    assert pool.take() is made[1]


def test_close_ends_the_processes_started_ahead(tmp_path, fakes):
    made, _ = fakes
    pool = HostPool(tmp_path, torch.device("cuda"), Sandbox(confined=False))
    pool.ahead(2)
    pool.close()
    assert all(p.closed for p in made)


def test_the_judge_settles_the_pool_before_it_times(monkeypatch):
    """run_job waits for every process started ahead before the timing stage begins."""
    events: list[str] = []

    class Pool:
        def settle(self):
            events.append("settle")

        def ahead(self, count):
            events.append(f"ahead {count}")

    class State:
        device = torch.device("cuda")
        hosts = Pool()
        warmed = {"sha"}

    import contextlib

    from kbot.evaluate import gpu_lock, protocol, timing_job
    from kbot.evaluate.verdict import Stage

    accepted = protocol.CandidateOutcome(True, Stage.CORRECTNESS, ())

    class Item:
        class host:
            refused: list[str] = []

            @staticmethod
            def close():
                events.append("close")

    def check(job, state, problem, name, source, to_come, step):
        events.append(f"check {name} ({to_come} to come)")
        return accepted, Item()

    def time_outcomes(job, state, problem, baselines, outcomes, loaded, send):
        events.append("time")
        return outcomes

    monkeypatch.setattr(jobs, "_problem", lambda job, state: object())
    monkeypatch.setattr(jobs, "_check_candidate", check)
    monkeypatch.setattr(timing_job, "prepare_baselines", lambda *a: object())
    monkeypatch.setattr(timing_job, "time_outcomes", time_outcomes)

    @contextlib.contextmanager
    def gpu_measurement(device):  # the real one names the GPU's lock file: CUDA only
        events.append(f"lock {device.type}")
        yield
        events.append("unlock")

    monkeypatch.setattr(gpu_lock, "gpu_measurement", gpu_measurement)

    class Candidate:
        def __init__(self, name):
            self.name, self.source = name, ""

    class Job:
        time = True
        problem_sha256 = "sha"
        candidates = [Candidate("a"), Candidate("b")]
        candidate_timeout_s = 1.0
        upcoming = 0

    result = jobs.run_job(Job(), State(), lambda message: None)
    assert len(result["outcomes"]) == 2
    assert events == [
        "ahead 3",  # after the baselines (their autotuning times kernels): 2 + the next job's
        "check a (1 to come)",
        "check b (0 to come)",
        "settle",
        "lock cuda",
        "time",
        "unlock",
        "close",
        "close",
    ]


def test_real_processes_started_ahead_are_fresh_and_ready(tmp_path):
    """Real candidates' processes on the CPU (plain, no namespaces: the launch order is what is
    checked): two taken in turn are two processes, the second started before the first was
    done with, and each answers."""
    pool = HostPool(tmp_path, torch.device("cpu"), Sandbox(confined=False))
    try:
        first = pool.take()
        pool.ahead(1)
        second_started = pool._waiting[0]
        assert second_started.launched
        first_pid = first._process.pid
        first.request("ping", 30.0)
        first.close()
        second = pool.take()
        assert second is second_started
        assert second._process.pid != first_pid
        second.request("ping", 30.0)
        second.close()
        assert not [p for p in tmp_path.iterdir() if p.name.startswith("candidate-")]
    finally:
        pool.close()
    assert os.path.isdir(tmp_path)


class _Recorder:
    """A pool and a problem that log when each is used."""

    def __init__(self, device: str):
        self.events: list[str] = []
        self.device = torch.device(device)
        self.warmed: set[str] = set()
        self.hosts = self

    def ahead(self, count):
        self.events.append(f"ahead {count}")

    def settle(self):
        self.events.append("settle")


def _job(candidates: int, upcoming: int, time: bool):
    from kbot.evaluate.protocol import CandidateJob, Job

    return Job(
        kind="evaluate",
        problem_sha256="sha",
        candidates=tuple(CandidateJob(f"c{i}.py", "") for i in range(candidates)),
        time=time,
        upcoming=upcoming,
    )


@pytest.mark.parametrize(
    ("device", "job", "first"),
    [
        ("cpu", _job(1, 0, time=False), "ahead 1"),
        ("cuda", _job(1, 3, time=False), "ahead 5"),  # a sweep point: 1 + 3 announced + 1
        ("cpu", _job(0, 0, time=False), "ahead 1"),  # Evaluator.prepare: the first candidate's
    ],
)
def test_an_untimed_job_starts_its_processes_before_it_builds_the_reference(
    monkeypatch, device, job, first
):
    """The processes a job's candidates take, and those of the points announced after it,
    start before the problem is imported and its reference run (each start-up about 6 s on an
    H200 host; a sweep point's check about 0.5 s), not one at each check."""
    from kbot.evaluate.protocol import CandidateOutcome
    from kbot.evaluate.verdict import Stage

    state = _Recorder(device)

    def problem(job, state):
        state.events.append("import the problem")
        return object()

    def warm(job, state, problem):
        state.events.append("run the reference")

    def check(job, state, problem, name, source, to_come, step):
        state.events.append(f"check {name}")
        state.hosts.ahead(to_come + jobs._after(job, state))
        return CandidateOutcome(False, Stage.CORRECTNESS, ()), None

    monkeypatch.setattr(jobs, "_problem", problem)
    monkeypatch.setattr(jobs, "_warm_reference", warm)
    monkeypatch.setattr(jobs, "_check_candidate", check)
    jobs.run_job(job, state, lambda message: None)
    assert state.events[:3] == [first, "import the problem", "run the reference"]
    if job.candidates:  # each check keeps the announced points' processes coming
        assert state.events[3:] == [
            "check c0.py",
            f"ahead {job.upcoming + (1 if device == 'cuda' else 0)}",
        ]


def test_a_sweep_announces_the_points_still_to_check(tmp_path):
    """run_sweep tells each check how many unchecked points follow it (cached points need no
    process), so the evaluator starts their processes together."""
    from kbot.evaluate.verdict import Stage, Verdict
    from kbot.search.sweep import SweepPoint, run_sweep

    source = (Path(__file__).parents[1] / "codegen" / "problems" / "act_quick_gelu.py").read_text()
    points = []
    for i in range(4):
        path = tmp_path / f"p{i}.py"
        text = source + f"\n# point {i}\n"
        path.write_text(text)
        points.append(SweepPoint(size=8, to=16 + i, source=text, path=path))
    seen: list[tuple[str, int]] = []

    def check(problem, candidate, name, upcoming):
        seen.append((problem.path.name, upcoming))
        return Verdict(True, Stage.CORRECTNESS, (), "cpu")

    def cached(problem):  # the second point was checked by an earlier, resumed run
        return Verdict(True, Stage.CORRECTNESS, (), "cpu") if problem.path.name == "p1.py" else None

    report = run_sweep(check, "", points, cached=cached)
    assert seen == [("p0.py", 2), ("p2.py", 1), ("p3.py", 0)]
    assert len(report["points"]) == 4


def test_a_process_ready_long_ago_is_taken_past_its_start_up_limit(tmp_path):
    """A process started ahead for a candidate that came later than the start-up limit (a long
    check in between) answered `ready` in time: its reply is read, not timed out unread."""
    import os
    import subprocess
    import time

    from kbot.evaluate import remote

    host = remote.CandidateProcess(tmp_path / "candidate-x", torch.device("cpu"), Sandbox(False))
    # The reply is in the pipe before the judge looks, written here rather than by a child whose
    # start-up a loaded machine may delay (CI once waited 30 s on one).
    read_end, write_end = os.pipe()
    os.write(write_end, b'{"event": "ready"}\n')
    os.close(write_end)
    host._process = subprocess.Popen(["sleep", "60"], start_new_session=True)
    host._process.stdout = os.fdopen(read_end, "rb")
    try:
        host._launched_at = time.monotonic() - remote.STARTUP_TIMEOUT_S - 1.0
        host.wait_ready()
        assert host._ready and host.launched
    finally:
        host.close()
