"""`kbot pr` and `kbot run` as commands: mode selection, dry-run drafts, the run summary."""

import argparse
import json
import shutil

import pytest

from kbot.commands import pr as pr_command
from kbot.commands import run as run_command
from kbot.config import load_config
from kbot.errors import ExitCode, UsageError
from kbot.output import to_jsonable
from kbot.publish.pipeline import Extracted, Optimized, run_pipeline
from kbot.publish.publisher import PublishSettings, should_push
from kbot.publish.summary import summary_table


def _args(module, argv):
    parser = argparse.ArgumentParser()
    parser.add_argument("--json", action="store_true")
    module.add_arguments(parser)
    return parser.parse_args(argv)


@pytest.mark.parametrize(
    "flags, environ, expected",
    [
        ((False, False), {}, False),  # a laptop: dry run
        ((False, False), {"CI": "true"}, False),  # CI without a token: dry run
        ((False, False), {"CI": "true", "GITHUB_TOKEN": "t"}, True),
        ((False, False), {"GITHUB_ACTIONS": "true", "GITHUB_TOKEN": "t"}, True),
        ((True, False), {"CI": "true", "GITHUB_TOKEN": "t"}, False),  # --dry-run wins
        ((False, True), {}, True),  # --push asks for it (and then needs a token)
    ],
)
def test_dry_run_is_the_default_outside_ci_with_a_token(flags, environ, expected):
    assert should_push(*flags, PublishSettings(), environ) is expected


def test_kbot_pr_dry_run_prints_what_would_be_sent(make_run, target_repo, monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    run_dir = make_run("custom_op")
    result = pr_command.run(_args(pr_command, [str(run_dir), "--repo", str(target_repo)]))
    assert result.exit_code == ExitCode.OK
    assert "dry_run" in result.text and "Title: [kbot] Triton kernel for RMSNorm" in result.text
    assert "<!-- kbot:" in result.text and "minisrv/layers/norm.py" in result.text
    data = to_jsonable(result.data)
    assert data["pushed"] is False and data["outcome"]["action"] == "dry_run"
    drafts = target_repo / ".kbot" / "publish" / "rmsnorm"
    assert (drafts / "pr_body.md").is_file() and (drafts / "changes.patch").is_file()


def test_kbot_pr_rejects_a_bad_fork_and_a_missing_run_dir(tmp_path, target_repo):
    with pytest.raises(UsageError, match="OWNER/REPO"):
        pr_command.run(_args(pr_command, [str(tmp_path), "--fork", "nofork"]))
    with pytest.raises(Exception, match="does not exist"):
        pr_command.run(_args(pr_command, [str(tmp_path / "missing"), "--repo", str(target_repo)]))


def test_kbot_pr_push_without_token_says_what_to_set(make_run, target_repo, monkeypatch):
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    with pytest.raises(Exception, match=r"\$GITHUB_TOKEN"):
        pr_command.run(
            _args(pr_command, [str(make_run("custom_op")), "--repo", str(target_repo), "--push"])
        )


def test_run_pipeline_rows_for_each_outcome(make_run, target_repo, tmp_path):
    config = load_config(target_repo)
    runs = {"rmsnorm": make_run("custom_op"), "silu_and_mul": make_run("function")}
    problems = tmp_path / "problems"
    problems.mkdir()
    for name, run in runs.items():
        shutil.copy(run / "problem.py", problems / f"{name}.py")
        shutil.copy(run / "target.json", problems / f"{name}.target.json")
    shutil.copy(runs["rmsnorm"] / "problem.py", problems / "rejected.py")
    shutil.copy(runs["rmsnorm"] / "target.json", problems / "rejected.target.json")

    def extract(path, config, work_dir):
        found = [
            Extracted(n, f"minisrv::{n}", problems / f"{n}.py", problems / f"{n}.target.json", "")
            for n in ("rmsnorm", "silu_and_mul", "rejected")
        ]
        return found + [Extracted("sampler", "minisrv/s.py::Sampler", None, None, "stochastic")]

    def optimize(problem, target, config, work_dir):
        if problem.stem == "rejected":
            return Optimized(tmp_path, False, "no candidate accepted out of 4")
        return Optimized(runs[problem.stem], True, "accepted, not timed (no GPU)")

    rows = run_pipeline(
        target_repo, config, tmp_path / "work", False, extract, optimize, log=open("/dev/null", "w")
    )
    by_op = {r.op: r for r in rows}
    assert by_op["rmsnorm"].action == "dry_run" and by_op["silu_and_mul"].action == "dry_run"
    assert by_op["rejected"].stage == "optimize" and by_op["rejected"].action == "skipped"
    assert by_op["sampler"].stage == "extract" and "stochastic" in by_op["sampler"].detail
    table = summary_table(rows)
    assert table.splitlines()[0].split() == ["target", "op", "result", "publish", "detail"]
    assert len(table.splitlines()) == 2 + len(rows)
    json.dumps(to_jsonable(rows))
    # Each op has its own branch in kbot's clone; the user's repository has none.
    clone = tmp_path / "work" / "publish" / "repo"
    import git

    heads = {h.name for h in git.Repo(clone).heads}
    assert {"kbot/rmsnorm", "kbot/silu_and_mul"} <= heads
    assert not [h for h in git.Repo(target_repo).heads if h.name.startswith("kbot/")]


def test_run_pipeline_stops_at_an_interrupted_search(make_run, target_repo, tmp_path):
    """Ctrl-C during one target's search stops `kbot run`; the targets after it are listed as
    not reached (a second `kbot run` continues, tests/search/test_earlier_run.py)."""
    config = load_config(target_repo)
    run = make_run("custom_op")
    names = ("first", "stopped", "later")

    def extract(path, config, work_dir):
        found = [
            Extracted(n, f"m::{n}", run / "problem.py", run / "target.json", "") for n in names
        ]
        return found + [Extracted("sampler", "m/s.py::Sampler", None, None, "stochastic")]

    searched = []

    def optimize(problem, target, config, work_dir):
        searched.append(len(searched))
        if len(searched) == 2:
            return Optimized(tmp_path, False, "interrupted", interrupted=True)
        return Optimized(run, True, "accepted, not timed (no GPU)")

    rows = run_pipeline(
        target_repo, config, tmp_path / "work", False, extract, optimize, log=open("/dev/null", "w")
    )
    assert searched == [0, 1]
    assert [(r.op, r.stage, r.result) for r in rows] == [
        ("rmsnorm", "published", "accepted, not timed (no GPU)"),
        ("stopped", "optimize", "interrupted"),
        ("later", "optimize", "not reached"),
        ("sampler", "extract", "not extracted"),
    ]
    # What each target came to is kept in the work directory as well as returned: a process
    # that dies before printing its envelope loses none of it.
    saved = json.loads((tmp_path / "work" / "run.json").read_text())
    assert [(r["op"], r["stage"]) for r in saved] == [(r.op, r.stage) for r in rows]


def test_kbot_run_rejects_a_file_path(tmp_path):
    (tmp_path / "x.py").write_text("")
    with pytest.raises(UsageError, match="not a folder"):
        run_command.run(_args(run_command, [str(tmp_path / "x.py")]))


def test_run_pipeline_skips_a_kernel_slower_everywhere_without_failing(tmp_path):
    from kbot.publish.plan import SlowerEverywhereError

    config = load_config(tmp_path)
    problem = tmp_path / "op.py"
    meta = tmp_path / "op.target.json"
    problem.write_text("")
    meta.write_text("{}")

    def extract(path, config, work_dir):
        return [Extracted("op", "m.py::op", problem, meta, "")]

    def optimize(problem, target, config, work_dir):
        return Optimized(tmp_path, True, "winner: 0.80x vs torch.compile")

    def publish(*args, **kwargs):
        raise SlowerEverywhereError("op: the kernel was not faster than torch.compile at any size")

    (row,) = run_pipeline(tmp_path, config, tmp_path / "work", False, extract, optimize, publish,
                          log=open("/dev/null", "w"))  # fmt: skip
    assert (row.stage, row.action) == ("publish", "skipped")
    assert "not faster than torch.compile at any size" in row.detail


def test_run_pipeline_skips_a_target_whose_file_differs_from_the_base(target_repo, tmp_path):
    """The PR's branch starts from the base branch: a kernel checked against uncommitted or
    unpushed code would be published as a patch of other code (a fresh-user audit drafted a
    PR whose own parity test failed)."""
    config = load_config(target_repo)
    source = next(p for p in sorted(target_repo.rglob("*.py")) if ".git" not in p.parts)
    meta = tmp_path / "op.target.json"
    meta.write_text(
        json.dumps({"root": str(target_repo), "file": str(source.relative_to(target_repo))})
    )
    problem = tmp_path / "op.py"
    problem.write_text("")
    optimized = []

    def extract(path, config, work_dir):
        return [Extracted("op", "m.py::op", problem, meta, "")]

    def optimize(problem, target, config, work_dir):
        optimized.append(problem)
        return Optimized(tmp_path, False, "no candidate accepted")

    def run():
        (row,) = run_pipeline(target_repo, config, tmp_path / "work", False, extract, optimize,
                              log=open("/dev/null", "w"))  # fmt: skip
        return row

    assert run().stage == "optimize" and len(optimized) == 1  # as committed and pushed: searched
    source.write_text(source.read_text() + "\n# edited, not committed\n")
    row = run()
    assert (row.stage, row.action) == ("extract", "skipped") and len(optimized) == 1
    assert f"{source.name} differs from origin/main" in row.detail
    import git

    repo = git.Repo(target_repo)
    repo.git.commit("-qam", "edit")  # committed, not pushed: origin/main is still the base
    assert "differs from origin/main" in run().detail
    repo.git.push("-q", "origin", "main")
    repo.git.fetch("-q", "origin")
    assert run().stage == "optimize" and len(optimized) == 2


def test_kbot_publish_says_a_missing_expect_file_is_missing(tmp_path, target_repo, capsys):
    from kbot.cli import main

    (tmp_path / "runs").mkdir()
    missing = tmp_path / "targets.json"
    argv = ["publish", str(tmp_path / "runs"), "--repo", str(target_repo), "--expect", str(missing)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"kbot: error: --expect {missing}: no such file; give the scan's matrix as a JSON file "
        "or inline JSON"
    ]


@pytest.fixture
def kbot_run_argv(target_repo, tmp_path, monkeypatch):
    """The argv of a `kbot run` of target_repo (a dry run), its work directory in tmp_path."""
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    return ["run", str(target_repo), "--work-dir", str(tmp_path / "work")]


def test_kbot_run_stopped_by_ctrl_c_exits_130_and_says_what_to_rerun(
    kbot_run_argv, tmp_path, monkeypatch, capsys
):
    import kbot.publish.pipeline as pipeline
    from kbot.cli import main
    from kbot.publish.summary import RunRow

    stopped = RunRow("m::op", "op", "optimize", "interrupted", "skipped", "interrupted; run again")
    monkeypatch.setattr(pipeline, "run_pipeline", lambda *a, **k: [stopped])
    assert main(kbot_run_argv) == 130
    captured = capsys.readouterr()
    assert "0 of 1 targets published" in captured.out  # the summary is still printed
    work = tmp_path / "work"
    assert captured.err.strip().splitlines()[-1] == (
        f"kbot: interrupted; run `kbot run {kbot_run_argv[1]} --work-dir {work}` again to continue"
    )


def test_kbot_run_interrupted_outside_a_search_exits_130(
    kbot_run_argv, tmp_path, monkeypatch, capsys
):
    import kbot.publish.pipeline as pipeline
    from kbot.cli import main

    def scanning(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "run_pipeline", scanning)
    assert main(kbot_run_argv) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("kbot: interrupted; run `kbot run ")
    assert f"targets done so far: {tmp_path / 'work' / 'run.json'}" in err[0]
