"""The capture runs in a child process: a failing or hanging torch.compile costs the proposer
(a clear skipped reason), never the search."""

import os
from pathlib import Path

import pytest

from kbot.propose.inductor.proposer import CaptureFailed, capture_in_child

PROBLEM = Path(__file__).parents[2] / "bench" / "problems" / "rmsnorm.py"


def _failing_problem(folder: Path) -> Path:
    """rmsnorm whose Model fails as it is built, before anything reaches a device: the child
    fails the same way on a CPU-only machine and on a GPU host."""
    problem = folder / "rmsnorm_without_weights.py"
    problem.write_text(
        PROBLEM.read_text().replace(
            "        super().__init__()\n",
            "        super().__init__()\n        raise RuntimeError('no weights at /nowhere')\n",
        )
    )
    return problem


def test_a_failing_capture_reports_the_childs_last_line(tmp_path):
    # The child's last line is the reason.
    problem = _failing_problem(tmp_path)
    relative = Path(os.path.relpath(problem))  # the child runs in a folder of its own
    with pytest.raises(
        CaptureFailed, match=r"^torch.compile failed \(RuntimeError: no weights at /nowhere\)$"
    ):
        capture_in_child(relative, timeout_s=120)


def test_a_capture_past_its_time_limit_is_killed():
    with pytest.raises(CaptureFailed, match="did not finish within 0 s"):
        capture_in_child(PROBLEM, timeout_s=0.01)


def test_a_capture_the_run_no_longer_needs_is_killed():
    """Beside the evaluations (a background ask), the run's end sets `cancelled`: the child is
    killed at once instead of compiling on past the run."""
    import threading
    import time

    cancelled = threading.Event()
    threading.Timer(0.3, cancelled.set).start()
    started = time.monotonic()
    with pytest.raises(CaptureFailed, match="no longer needed"):
        capture_in_child(PROBLEM, timeout_s=120, cancelled=cancelled)
    assert time.monotonic() - started < 10


def test_inductor_is_two_proposers_one_per_compile_mode():
    # "vs torch.compile" is against the faster of its default and max-autotune modes; the
    # proposers list's `inductor` captures both (H200: max-autotune 4-28% faster on KernelBench
    # convolutions where only the default mode's kernels were captured).
    from kbot.propose.base import ProposeContext
    from kbot.propose.inductor import InductorProposer
    from kbot.propose.registry import make_proposers

    proposers = make_proposers(["codegen", "inductor", "inductor"])
    assert [p.name for p in proposers] == ["codegen", "inductor", "inductor-max-autotune"]
    modes = [p.compile_mode for p in proposers if isinstance(p, InductorProposer)]
    assert modes == ["default", "max-autotune"]
    outcome = proposers[2].propose(ProposeContext(problem=None, parents=(), device="cpu", seed=0))
    assert outcome.skipped_reason.startswith("inductor-max-autotune: needs a CUDA GPU")


def test_the_capture_child_takes_the_compile_mode(tmp_path, monkeypatch):
    # The mode reaches the child (which fails here, as the Model is built, after parsing it);
    # an unknown mode is refused by the child's own arguments.
    import subprocess
    import sys

    import kbot.propose.inductor.proposer as module

    commands = []
    real_popen = subprocess.Popen

    def recording_popen(command, *args, **kwargs):
        commands.append(command)
        return real_popen(command, *args, **kwargs)

    monkeypatch.setattr(module.subprocess, "Popen", recording_popen)
    problem = _failing_problem(tmp_path)
    with pytest.raises(CaptureFailed, match=r"RuntimeError: no weights at /nowhere"):
        capture_in_child(problem, timeout_s=120, compile_mode="max-autotune")
    assert commands and commands[0][-2:] == ["--mode", "max-autotune"]
    monkeypatch.undo()
    done = subprocess.run(
        [sys.executable, "-m", "kbot.propose.inductor.capture", str(problem), str(tmp_path / "o"),
         "--mode", "reduce-overhead"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "invalid choice: 'reduce-overhead'" in done.stderr


def test_the_max_autotune_capture_starts_when_the_default_ones_ends(monkeypatch):
    # Asked side by side (a thread each), max-autotune's benchmarks would slow the default
    # mode's compile, which the first evaluations wait for: it waits for that capture to end.
    import threading
    import time
    import types

    import kbot.propose.inductor.proposer as module
    from kbot.propose.base import ProposeContext
    from kbot.propose.registry import make_proposers

    spans: dict[str, list[float]] = {}

    def fake_capture(path, timeout_s, cancelled=None, compile_mode="default"):
        spans[compile_mode] = [time.monotonic()]
        time.sleep(0.5 if compile_mode == "default" else 0.05)
        spans[compile_mode].append(time.monotonic())
        raise CaptureFailed("torch.compile failed (stand-in)")

    monkeypatch.setattr(module, "capture_in_child", fake_capture)
    default, max_autotune = make_proposers(["inductor"])
    problem = types.SimpleNamespace(path=PROBLEM)
    context = ProposeContext(problem=problem, parents=(), device="cuda", seed=0)
    outcomes = {}
    threads = [
        threading.Thread(target=lambda p=p: outcomes.__setitem__(p.name, p.propose(context)))
        for p in (max_autotune, default)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert spans["max-autotune"][0] >= spans["default"][1]
    assert outcomes["inductor-max-autotune"].skipped_reason == (
        "inductor-max-autotune: torch.compile failed (stand-in)"
    )
