"""optimize() and `kbot optimize` end to end with a fake proposer and a fake evaluator."""

import ast
import dataclasses
import json
import os
import signal
from pathlib import Path

import pytest

from kbot.cli import main
from kbot.evaluate.verdict import NOT_TIMED
from kbot.search import Budget, OptimizeOptions, OptimizeStatus, StopReason, optimize


def _optimize(tmp_path, problem, evaluator, proposer, generations=2, **kw):
    return optimize(
        problem,
        OptimizeOptions(device="cpu", budget=Budget(generations=generations)),
        tmp_path / "work",
        evaluator_factory=lambda *a: evaluator,
        proposer_factory=lambda names: [proposer],
        **kw,
    )


def test_cpu_run_writes_the_run_directory_of_the_architecture(tmp_path, problem, fakes):
    target = {"file": "layers/scale.py", "line": 3, "qualname": "Scale.forward", "kind": "marker"}
    result = _optimize(
        tmp_path, problem, fakes.FakeEvaluator(), fakes.FakeProposer(), target=target
    )
    run_dir = tmp_path / "work" / "runs" / result.run_id
    assert result.run_dir == run_dir and result.status is OptimizeStatus.NOT_TIMED
    names = {p.name for p in run_dir.iterdir()}
    assert names == {
        "problem.py",
        "target.json",
        "best_candidate.py",
        "kernel.py",
        "report.json",
        "report.md",
        "trajectories.jsonl",  # parent -> child steps (kbot.search.trajectories)
    }
    assert (run_dir / "problem.py").read_text() == problem.source
    assert json.loads((run_dir / "target.json").read_text()) == target
    assert result.best_candidate_path == run_dir / "best_candidate.py"
    assert "class ModelNew" in result.best_candidate_path.read_text()

    kernel = (run_dir / "kernel.py").read_text()
    tree = ast.parse(kernel)
    assert "ModelNew" not in kernel and "import torch.nn" not in kernel
    roots = {a.name.split(".")[0] for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    assert roots == {"torch", "triton"}
    header = ast.get_docstring(tree)
    assert "CPU interpreter, not timed" in header and problem.source_sha256 in header
    assert "kbot 0.1.0" in header and "proposers fake" in header
    assert "5 seed(s) on 2 case(s), atol=0.01 rtol=0.01" in header

    report = json.loads((run_dir / "report.json").read_text())
    assert report["status"] == "not_timed" and report["timed"] is False
    assert [c["timing"] for c in report["cases"]] == [NOT_TIMED, NOT_TIMED]
    assert [g["generation"] for g in report["generations"]] == [0, 1]
    assert report["lineage"][0]["sha256"] == report["winner"]["sha256"]
    assert report["finalists"] == []  # nothing to re-measure without timings
    markdown = (run_dir / "report.md").read_text()
    assert NOT_TIMED in markdown and "## Best fitness per generation" in markdown


def test_the_report_says_when_trials_matched_the_float32_reference(tmp_path, problem, fakes):
    class Rescued(fakes.FakeProposer):
        def propose(self, context):
            outcome = super().propose(context)
            return dataclasses.replace(
                outcome,
                proposals=tuple(
                    dataclasses.replace(p, source=p.source + "\n# float32-reference\n")
                    for p in outcome.proposals
                ),
            )

    result = _optimize(tmp_path, problem, fakes.FakeEvaluator(), Rescued())
    markdown = result.report_md_path.read_text()
    assert "matched the same reference run one precision up" in markdown
    cases = json.loads(result.report_json_path.read_text())["cases"]
    assert all(c["correctness"]["float32_reference_trials"] == 2 for c in cases)


def test_gpu_run_remeasures_finalists_before_declaring_the_winner(tmp_path, problem, fakes):
    evaluator = fakes.FakeEvaluator(timed=True)
    result = _optimize(tmp_path, problem, evaluator, fakes.FakeProposer())
    assert len(evaluator.remeasured) == 1 and len(evaluator.remeasured[0]) == 3
    # the fake's re-measurement makes the second elite fastest: it must win
    winner_sha = json.loads(result.report_json_path.read_text())["winner"]["sha256"]
    assert winner_sha == evaluator.remeasured[0][1]
    assert result.status is OptimizeStatus.IMPROVED
    report = json.loads(result.report_json_path.read_text())
    case = report["cases"][0]["timing"]
    assert case["speedup_vs_compile"] > 1 and case["roofline_percent"] > 0
    assert "Timings (median µs" in result.kernel_path.read_text()
    assert "| kbot graph |" in result.report_md_path.read_text()


def test_nothing_accepted_is_reported_with_the_reasons(tmp_path, problem, fakes):
    proposer = fakes.FakeProposer(reject_every=1, variants=False)
    result = _optimize(tmp_path, problem, fakes.FakeEvaluator(), proposer)
    assert result.status is OptimizeStatus.NO_ACCEPTED and not result.has_winner
    assert not (result.run_dir / "best_candidate.py").exists()
    report = json.loads(result.report_json_path.read_text())
    assert report["rejections"][0]["candidates"] == 3
    assert "output differs from Model" in result.report_md_path.read_text()


def test_ctrl_c_stops_cleanly_drops_the_verdict_in_flight_and_resumes(tmp_path, problem, fakes):
    class Interrupted(fakes.FakeEvaluator):
        """The terminal's Ctrl-C reaches the worker too: its verdict is a spurious crash."""

        def evaluate(self, problem, source, name="candidate.py"):
            if len(self.evaluated) == 3:
                self.evaluated.append(fakes.source_hash(source))
                os.kill(os.getpid(), signal.SIGINT)
                return fakes.Verdict(
                    False, fakes.Stage.LOAD, (fakes.Reason("worker", "killed by SIGINT"),), "cpu"
                )
            return super().evaluate(problem, source, name)

    first = Interrupted()
    # Python's default handler, or SIG_IGN where pytest was started in the background
    handler_before = signal.getsignal(signal.SIGINT)
    stopped = _optimize(tmp_path, problem, first, fakes.FakeProposer())
    assert stopped.status is OptimizeStatus.INTERRUPTED
    assert stopped.stop_reason is StopReason.INTERRUPTED
    assert f"--resume {stopped.run_id}" in stopped.message
    assert signal.getsignal(signal.SIGINT) is handler_before  # handler restored
    in_flight = first.evaluated[3]
    second = fakes.FakeEvaluator()
    resumed = _optimize(
        tmp_path, problem, second, fakes.FakeProposer(), resume_run_id=stopped.run_id
    )
    assert (
        resumed.run_id == stopped.run_id
        and resumed.has_winner
        and resumed.accepted == resumed.candidates
    )
    assert set(first.evaluated) & set(second.evaluated) == {in_flight}  # only it runs again
    assert resumed.candidates == len(first.evaluated) - 1 + len(second.evaluated)


@pytest.fixture
def fake_cli(monkeypatch, fakes):
    import kbot.propose.registry as registry
    import kbot.search.runner as runner

    # the config schema knows the real names only, so the fake stands in for `tune`
    monkeypatch.setitem(registry.PROPOSERS, "tune", lambda: fakes.FakeProposer(name="tune"))
    monkeypatch.setattr(runner, "default_evaluator", lambda *a: fakes.FakeEvaluator())


def test_cli_json_envelope_names_the_winner_and_progress_goes_to_stderr(
    tmp_path, problem, fake_cli, capsys
):
    argv = ["optimize", str(problem.path), "--proposers", "tune", "--device", "cpu",
            "--generations", "2", "--work-dir", str(tmp_path / "w"), "--json"]  # fmt: skip
    assert main(argv) == 0
    captured = capsys.readouterr()
    envelope = json.loads(captured.out)
    data = envelope["data"]
    assert envelope["ok"] and data["status"] == "not_timed"
    assert data["best_candidate"].endswith(f"runs/{data['run_id']}/best_candidate.py")
    events = [json.loads(line) for line in captured.err.splitlines()]
    assert events[0]["event"] == "started" and events[-1]["event"] == "finished"
    assert {"generation", "verdict"} <= {e["event"] for e in events}
    # resuming a finished run evaluates nothing again
    assert (
        main(["optimize", "--resume", data["run_id"], "--work-dir", str(tmp_path / "w"), "--json"])
        == 0
    )
    again = json.loads(capsys.readouterr().out)["data"]
    assert again["fresh_evaluations"] == 0 and again["best_candidate"] == data["best_candidate"]


def test_cli_records_the_scan_finding_written_beside_the_problem(
    tmp_path, problem, fake_cli, capsys
):
    finding = {"name": "scale", "file": "pkg/ops.py", "line": 3, "qualname": "scale"}
    problem.path.with_suffix(".target.json").write_text(json.dumps(finding))
    argv = ["optimize", str(problem.path), "--proposers", "tune", "--device", "cpu",
            "--generations", "1", "--work-dir", str(tmp_path / "w"), "--json"]  # fmt: skip
    assert main(argv) == 0
    run_dir = Path(json.loads(capsys.readouterr().out)["data"]["run_dir"])
    assert json.loads((run_dir / "target.json").read_text()) == finding


@pytest.mark.parametrize("names", ["codegen,magic", "tune,magic"])
def test_cli_rejects_unknown_proposers_listing_valid_ones(tmp_path, problem, capsys, names):
    argv = ["optimize", str(problem.path), "--proposers", names, "--work-dir", str(tmp_path)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert names.split(",")[-1] in err and "tune" in err and len(err.strip().splitlines()) == 1


def test_a_problem_no_proposer_handles_ends_with_their_reasons(tmp_path, problem, fakes):
    class Unsupported:
        name = "codegen"

        def propose(self, context):
            return fakes.ProposeOutcome((), skipped_reason="no codegen schedule: scatter")

    result = _optimize(tmp_path, problem, fakes.FakeEvaluator(), Unsupported())
    assert (
        result.status is OptimizeStatus.NO_ACCEPTED and result.stop_reason is StopReason.EXHAUSTED
    )
    assert result.message == "no candidate was proposed: codegen: no codegen schedule: scatter"
    assert "no codegen schedule: scatter" in result.report_md_path.read_text()


class _LateSeeder:
    """A slow seeder such as inductor: counts the calls that asked it for seeds."""

    name = "late"
    late_seed = True

    def __init__(self, fakes):
        self.seed_calls = 0
        self.fakes = fakes

    def propose(self, context):
        from kbot.propose.base import Proposal, ProposeOutcome

        self.seed_calls += not context.parents
        if context.parents:
            return ProposeOutcome((), skipped_reason="late: proposes once, without parents")
        source = self.fakes.candidate("late seed", block=4096)
        return ProposeOutcome((Proposal(source, self.name, (), {"schedule": "late"}),))


@pytest.mark.parametrize("generations", [1, 3])
def test_slow_seeders_seed_after_the_first_generation(tmp_path, problem, fakes, generations):
    """`late_seed` proposers (inductor) are asked for seeds once, in generation 1, so the
    first verdicts come from codegen's seeds; a run of one generation seeds them at once."""
    late = _LateSeeder(fakes)
    result = optimize(
        problem,
        OptimizeOptions(device="cpu", budget=Budget(generations=generations)),
        tmp_path / "work",
        evaluator_factory=lambda *a: fakes.FakeEvaluator(),
        proposer_factory=lambda names: [fakes.FakeProposer(), late],
    )
    report = json.loads((result.run_dir / "report.json").read_text())
    seeded = {g["generation"]: g["evaluated"] for g in report["generations"]}
    from kbot.search.store import Store

    with Store(tmp_path / "work" / "kbot.sqlite") as store:
        rows = store.run_candidates(result.run_id)
    late_generation = {r.generation for r in rows if r.proposer == "late"}
    assert late_generation == ({0} if generations == 1 else {1})
    assert late.seed_calls == 1
    assert seeded[0] == 3 + (1 if generations == 1 else 0)


def test_a_problem_whose_get_inputs_raises_is_bad_input_before_any_search(
    tmp_path, problem, fake_cli, capsys
):
    broken = tmp_path / "broken.py"
    broken.write_text(
        problem.source.replace("return [torch.randn(N)]", "raise ValueError('no weights here')")
    )
    work = tmp_path / "w"
    argv = ["optimize", str(broken), "--proposers", "tune", "--device", "cpu",
            "--work-dir", str(work)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"kbot: error: problem {broken}: get_inputs(N=64)")
    assert "ValueError: no weights here (broken.py:" in err[0]
    assert not work.exists()  # no run was started


def test_a_problem_that_reads_values_passes_the_check_on_the_cpu(tmp_path):
    """`.item()` and numpy cannot run on the meta device: the CPU build decides, with the
    Model given CPU init inputs."""
    from kbot.problem import load_problem
    from kbot.search.problem_check import check_problem_builds

    reads_values = tmp_path / "reads_values.py"
    reads_values.write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n"
        "    def __init__(self, scale):\n        super().__init__()\n"
        "        self.scale = float(scale)\n\n"
        "    def forward(self, x):\n        return x * self.scale\n\n\n"
        "def get_inputs():\n    return [torch.from_numpy(torch.randn(8).numpy())]\n\n\n"
        "def get_init_inputs():\n    return [torch.tensor(2.0)]\n"
    )
    check_problem_builds(load_problem(reads_values))


def test_a_missing_target_file_is_said_to_be_missing(tmp_path, problem, capsys):
    argv = ["optimize", str(problem.path), "--target", str(tmp_path / "gone.target.json"),
            "--work-dir", str(tmp_path / "w")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "gone.target.json: no such file" in err[0] and "JSON" in err[0]
    assert "not a JSON" not in err[0]


def test_ctrl_c_exits_130_and_says_how_to_resume(tmp_path, problem, fakes, monkeypatch, capsys):
    import sqlite3

    import kbot.propose.registry as registry
    import kbot.search.runner as runner

    class CtrlC(fakes.FakeEvaluator):
        def evaluate(self, problem, source, name="candidate.py"):
            if len(self.evaluated) == 2:
                os.kill(os.getpid(), signal.SIGINT)
            return super().evaluate(problem, source, name)

    monkeypatch.setitem(registry.PROPOSERS, "tune", lambda: fakes.FakeProposer(name="tune"))
    monkeypatch.setattr(runner, "default_evaluator", lambda *a: CtrlC())
    work = tmp_path / "w"
    argv = ["optimize", str(problem.path), "--proposers", "tune", "--device", "cpu",
            "--generations", "4", "--work-dir", str(work)]  # fmt: skip
    assert main(argv) == 130
    captured = capsys.readouterr()
    (run_dir,) = (work / "runs").iterdir()
    notice = captured.err.strip().splitlines()[-1]
    assert notice == (
        "kbot: interrupted; what it measured is kept; resume with "
        f"`kbot optimize --resume {run_dir.name} --work-dir {work}`"
    )
    assert f"run: {run_dir.name}" in captured.out  # the result still reaches stdout
    assert (run_dir / "report.json").is_file()
    with sqlite3.connect(work / "kbot.sqlite") as con:
        assert con.execute("SELECT status FROM runs").fetchone() == ("interrupted",)


def test_a_second_ctrl_c_names_the_run_to_resume(tmp_path, problem, monkeypatch, capsys):
    import kbot.search
    from kbot.search.store import Store

    def stopped_mid_run(problem, options, work_dir, target, **kw):
        with Store(work_dir / "kbot.sqlite") as store:
            store.create_run("scale-mid", problem, "env", {}, None)
        raise KeyboardInterrupt

    monkeypatch.setattr(kbot.search, "optimize", stopped_mid_run)
    work = tmp_path / "w"
    argv = ["optimize", str(problem.path), "--device", "cpu", "--work-dir", str(work)]
    assert main(argv) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"kbot: interrupted; resume with `kbot optimize --resume scale-mid --work-dir {work}`"
    ]


def test_cuda_asked_for_on_a_machine_without_one_is_bad_input(
    tmp_path, problem, monkeypatch, capsys
):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    argv = ["optimize", str(problem.path), "--device", "cuda", "--work-dir", str(tmp_path / "w")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["kbot: error: --device cuda: no CUDA GPU is visible; use --device cpu or auto"]
    assert not (tmp_path / "w").exists()
