"""A run killed with SIGKILL mid-run resumes without losing or repeating evaluations."""

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

CHILD = Path(__file__).parent / "sigkill_child.py"


def _count(db: Path, query: str) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as con:
            return con.execute(query).fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0


def _child(*args: object) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(CHILD), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_resume_after_sigkill_repeats_and_loses_nothing(tmp_path, problem):
    work, log = tmp_path / "work", tmp_path / "evaluated.log"
    db = work / "kbot.sqlite"
    child = _child(work, problem.path, log)
    deadline = time.monotonic() + 60
    while _count(db, "SELECT COUNT(*) FROM evaluations") < 5:
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the child never evaluated 5 candidates"
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    child.wait()
    with sqlite3.connect(db) as con:
        (run_id,) = con.execute("SELECT run_id FROM runs").fetchone()
        before = {r[0] for r in con.execute("SELECT candidate_sha256 FROM verdicts")}
    assert 5 <= len(before) < 19  # killed mid-run: 3 seeds + 16 variants in all

    resumed = _child(work, problem.path, log, run_id)
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    assert out.split()[0] == run_id

    evaluated = log.read_text().split()
    repeated = {sha for sha in evaluated if evaluated.count(sha) > 1}
    assert not repeated & before  # no committed verdict was evaluated again
    assert len(repeated) <= 1  # only the candidate in flight at the kill may be
    with sqlite3.connect(db) as con:
        after = {r[0] for r in con.execute("SELECT candidate_sha256 FROM verdicts")}
        per_run = con.execute("SELECT COUNT(DISTINCT sha256) FROM run_candidates").fetchone()[0]
        status = con.execute("SELECT status FROM runs").fetchone()[0]
    assert before <= after and status == "finished"

    # the resumed run ends exactly where an uninterrupted run with the same options ends
    fresh = _child(tmp_path / "fresh", problem.path, tmp_path / "fresh.log")
    out_fresh, err = fresh.communicate(timeout=120)
    assert fresh.returncode == 0, err
    with sqlite3.connect(tmp_path / "fresh" / "kbot.sqlite") as con:
        expected = {r[0] for r in con.execute("SELECT candidate_sha256 FROM verdicts")}
    assert after == expected and per_run == len(expected)
