"""A wall budget bounds the whole run, the evaluation in flight included, and a run stopped by
SIGTERM still writes its envelope, report and store with what it measured."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from kbot.propose.base import source_hash
from kbot.search import Budget, OptimizeOptions, OptimizeStatus, StopReason, optimize
from kbot.search.inflight import STOP_GRACE_S
from kbot.search.store import Store

CHILD = Path(__file__).parent / "sigterm_child.py"


def test_the_time_budget_holds_with_a_slow_evaluation_in_flight(tmp_path, problem, fakes):
    class OneSlow(fakes.FakeEvaluator):
        """The second candidate takes 60 s (a multi-GB problem); the others 0.05 s."""

        def sleep_for(self, source):
            return 60.0 if len(self.evaluated) == 2 else 0.05

        def abort(self):  # as Evaluator.abort: what the busy worker was doing is kept
            self.aborted_during = ["check candidate_2.py: correctness trials for 2 s"]
            self.close()

    evaluator = OneSlow(timed=True)  # timed: the finalists would be re-measured
    budget_s = 3.0
    started = time.monotonic()
    result = optimize(
        problem,
        OptimizeOptions(device="cpu", budget=Budget(generations=3, time_s=budget_s)),
        tmp_path / "work",
        evaluator_factory=lambda *a: evaluator,
        proposer_factory=lambda names: [fakes.FakeProposer()],
    )
    wall_s = time.monotonic() - started
    # within 10% of the budget, plus the time to stop a worker (here: setting an event)
    assert wall_s <= 1.1 * budget_s + 0.5, wall_s
    assert wall_s >= budget_s * 0.9  # it did wait for the slow one up to the budget
    assert evaluator.closed.is_set()  # the evaluation in flight was abandoned
    assert evaluator.remeasured == []  # and the closed evaluator was not asked for more
    assert result.stop_reason is StopReason.TIME and result.candidates == 1
    assert result.has_winner and result.report_json_path.is_file()
    report = json.loads(result.report_json_path.read_text())
    assert report["stop_reason"] == "time" and report["counts"]["candidates"] == 1
    assert "finalists not re-measured: the time budget ran out" in report["notes"]
    assert (
        "evaluation stopped at the run's end during check candidate_2.py: correctness trials "
        "for 2 s" in report["notes"]
    )
    with Store(tmp_path / "work" / "kbot.sqlite") as store:
        stored = [r[0] for r in store._db.execute("SELECT candidate_sha256 FROM verdicts")]
        run = store.run(result.run_id)
    assert stored == [evaluator.evaluated[0]]  # the abandoned one is not cached
    assert source_hash(result.best_candidate_path.read_text()) == evaluator.evaluated[0]
    assert run.status == "finished" and run.spent_s <= 1.1 * budget_s + 0.5


def test_the_time_budget_holds_while_a_proposer_is_still_working(tmp_path, problem, fakes):
    """A proposer that takes longer than the budget (codegen tracing a multi-GB reference, say)
    is given up at the deadline: the run ends on time, says which proposer was cut short and
    still writes its report."""

    class SlowSeeder(fakes.FakeProposer):
        def propose(self, context):
            if self.calls == 0 and not context.parents:
                self.calls += 1
                time.sleep(30.0)
            return super().propose(context)

    evaluator = fakes.FakeEvaluator()
    budget_s = 2.0
    started = time.monotonic()
    result = optimize(
        problem,
        OptimizeOptions(device="cpu", budget=Budget(generations=3, time_s=budget_s)),
        tmp_path / "work",
        evaluator_factory=lambda *a: evaluator,
        proposer_factory=lambda names: [SlowSeeder(name="slowseed")],
    )
    wall_s = time.monotonic() - started
    assert wall_s <= 1.1 * budget_s + 0.5, wall_s
    assert result.stop_reason is StopReason.TIME and result.candidates == 0
    assert evaluator.evaluated == []
    report = json.loads(result.report_json_path.read_text())
    assert report["stop_reason"] == "time"
    assert "slowseed: still proposing when the time budget ran out" in report["notes"]


def _count(db: Path) -> int:
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(db, timeout=5) as con:
            return con.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
    except sqlite3.OperationalError:  # tables not created yet
        return 0


def test_sigterm_writes_the_envelope_report_and_store(tmp_path, problem):
    work = tmp_path / "work"
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(problem.path), str(work)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while _count(work / "kbot.sqlite") < 3:
        assert child.poll() is None, child.communicate()
        assert time.monotonic() < deadline, "the child never evaluated 3 candidates"
        time.sleep(0.02)
    signalled = time.monotonic()
    os.kill(child.pid, signal.SIGTERM)
    out, err = child.communicate(timeout=30)
    assert time.monotonic() - signalled < STOP_GRACE_S  # it did not run on to the end
    assert child.returncode == 1, err  # stopped: not a finished run
    envelope = json.loads(out)
    data = envelope["data"]
    assert envelope["command"] == "optimize" and data["status"] == OptimizeStatus.INTERRUPTED
    assert data["stop_reason"] == "interrupted" and f"--resume {data['run_id']}" in data["message"]
    report = json.loads(Path(data["report_json"]).read_text())
    assert report["status"] == "interrupted" and Path(data["report_md"]).is_file()
    assert data["best_candidate"] and Path(data["best_candidate"]).is_file()  # what it measured
    with sqlite3.connect(work / "kbot.sqlite") as con:
        status, spent_s = con.execute("SELECT status, spent_s FROM runs").fetchone()
        verdicts = con.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
    assert status == "interrupted" and spent_s > 0
    assert verdicts >= 3 and report["counts"]["candidates"] == verdicts == data["candidates"]
    assert json.loads(err.splitlines()[-1])["event"] == "finished"


def test_the_time_budget_starts_after_the_evaluator_is_prepared(tmp_path, problem, fakes):
    """Starting the workers and compiling the baselines (tens of seconds on a GPU with
    torch.compile per case) is not taken from the search's budget: a budget shorter than the
    preparation still evaluates candidates, and the report says what the preparation took."""

    class SlowStart(fakes.FakeEvaluator):
        def prepare(self, problem):
            time.sleep(2.0)
            return None

    evaluator = SlowStart()
    result = optimize(
        problem,
        OptimizeOptions(device="cpu", budget=Budget(generations=2, time_s=1.5)),
        tmp_path / "work",
        evaluator_factory=lambda *a: evaluator,
        proposer_factory=lambda names: [fakes.FakeProposer()],
    )
    assert result.candidates >= 1 and result.has_winner
    notes = json.loads(result.report_json_path.read_text())["notes"]
    assert any(n.startswith("evaluator started and baselines built in 2 s") for n in notes)
