"""The capture runs in a child process: a failing or hanging torch.compile costs the proposer
(a clear skipped reason), never the search."""

from pathlib import Path

import pytest

from kbot.propose.inductor.proposer import CaptureFailed, capture_in_child

PROBLEM = Path(__file__).parents[2] / "bench" / "problems" / "rmsnorm.py"


def test_a_failing_capture_reports_the_childs_last_line():
    # On this CPU-only machine the child's torch.compile for CUDA fails; its error is the reason.
    with pytest.raises(CaptureFailed, match=r"torch.compile failed \(.+\)") as failed:
        capture_in_child(
            PROBLEM.relative_to(Path.cwd()) if PROBLEM.is_relative_to(Path.cwd()) else PROBLEM,
            timeout_s=120,
        )
    assert "does not exist" not in str(failed.value)  # the child found the problem file


def test_a_capture_past_its_time_limit_is_killed():
    with pytest.raises(CaptureFailed, match="did not finish within 0 s"):
        capture_in_child(PROBLEM, timeout_s=0.01)
