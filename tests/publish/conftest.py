"""Fixtures for the publisher's tests: hand-made run directories and a small target repository
(`fixtures/minisrv`, one op in each integration style), copied to a temporary folder per test."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path

import git
import pytest

FIXTURES = Path(__file__).parent / "fixtures"

# The fixture repository has its own tests; they run inside the patched copy, not here.
collect_ignore_glob = ["fixtures/*"]

TARGETS = {
    "custom_op": (
        "rmsnorm_layer",
        {
            "file": "minisrv/layers/norm.py",
            "qualname": "RMSNorm",
            "kind": "custom_op",
            "entry": "forward_native",
            "line": 11,
        },
    ),
    "fused_op": (
        "rmsnorm_layer",
        {
            "file": "minisrv/layers/fused_norm.py",
            "qualname": "FusedRMSNorm",
            "kind": "fused_op",
            "entry": "forward_native",
            "line": 11,
        },
    ),
    "torch_compile": (
        "rmsnorm_layer",
        {
            "file": "minisrv/layers/compiled.py",
            "qualname": "CompiledRMSNorm.forward",
            "kind": "torch_compile",
            "entry": "",
            "line": 14,
        },
    ),
    "default_backend": (
        "rmsnorm_impl",
        {
            "file": "minisrv/backends/default/norm.py",
            "qualname": "DefaultRMSNormImpl",
            "kind": "default_backend",
            "entry": "forward",
            "line": 6,
        },
    ),
    "scripted": (
        "silu_and_mul",
        {
            "file": "minisrv/scripted.py",
            "qualname": "silu_and_mul",
            "kind": "torch_compile",
            "entry": "",
            "line": 8,
        },
    ),
    "function": (
        "silu_and_mul",
        {
            "file": "minisrv/ops.py",
            "qualname": "silu_and_mul",
            "kind": "marker",
            "entry": "",
            "line": 7,
        },
    ),
}


@pytest.fixture
def make_run(tmp_path):
    """make_run(style, **target_overrides) -> a run directory copy whose target.json says `style`."""

    def make(style: str, **overrides) -> Path:
        name, target = TARGETS[style]
        run = tmp_path / "work" / "runs" / f"{style}"
        shutil.rmtree(run, ignore_errors=True)
        shutil.copytree(FIXTURES / "runs" / name, run)
        (run / "target.json").write_text(json.dumps({**target, **overrides}), encoding="utf-8")
        return run

    return make


@pytest.fixture
def target_repo(tmp_path):
    """A git checkout of minisrv whose `origin` is a local bare repository."""
    bare = tmp_path / "remote" / "octo" / "minisrv.git"
    checkout = tmp_path / "checkout"
    shutil.copytree(FIXTURES / "minisrv", checkout)
    repo = git.Repo.init(checkout, initial_branch="main")
    with repo.config_writer() as config:
        config.set_value("user", "name", "Ada Maintainer")
        config.set_value("user", "email", "ada@example.com")
    repo.git.add("-A")
    repo.git.commit("-q", "-m", "minisrv")
    git.Repo.init(bare, bare=True, initial_branch="main")
    repo.create_remote("origin", str(bare))
    repo.git.push("-q", "origin", "main")
    repo.git.fetch("-q", "origin")
    return checkout


def _load_fake_github():
    spec = importlib.util.spec_from_file_location(
        "kbot_tests_fake_github", Path(__file__).parent / "fake_github.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


FAKE_TOKEN = "ghp_FAKEtoken1234567890SECRETvalue"


@pytest.fixture
def github(target_repo, tmp_path):
    """A local GitHub API for octo/minisrv whose branches are the bare `origin` of target_repo
    (and a fork, forker/minisrv, as a second bare repository)."""
    module = _load_fake_github()
    fork = tmp_path / "remote" / "forker" / "minisrv.git"
    git.Repo.init(fork, bare=True, initial_branch="main")
    fake = module.FakeGitHub(
        owner="octo",
        name="minisrv",
        bare_repos={
            "octo/minisrv": tmp_path / "remote" / "octo" / "minisrv.git",
            "forker/minisrv": fork,
        },
        token=FAKE_TOKEN,
    )
    server, thread = module.serve(fake)
    yield fake
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


@pytest.fixture
def forge_factory(github):
    """Builds the real GitHubForge against the local server, with test-sized waits."""
    from kbot.publish.github import GitHubForge

    def make(full_name, token, settings):
        return GitHubForge(
            full_name,
            token,
            settings.token_env,
            github.url,
            retries=3,
            backoff_s=0.01,
            secondary_rate_wait_s=0.05,
            seconds_between_writes=None,
            timeout_s=10,
        )

    return make


@pytest.fixture
def emit_one(tmp_path):
    """`emit_one(repo)`: the one problem kbot's scan emits for `repo` (cases T=1 and T=3,
    sized by the llama-3-8b preset), checked emitted."""
    from kbot.scan import ScanOptions, scan
    from kbot.scan.extract import EmitStatus, emit_problems
    from kbot.scan.model_config import load_model_config

    def emit(repo: Path):
        config = load_model_config("llama-3-8b")
        options = ScanOptions(cases=({"T": 1}, {"T": 3}), model_config=config)
        (emitted,) = emit_problems(scan(repo, options), tmp_path / "problems", options)
        assert emitted.status == EmitStatus.EMITTED, emitted.message
        return emitted

    return emit


@pytest.fixture
def draft_emitted(tmp_path):
    """`draft_emitted(emitted)`: a scanned problem (kbot.scan.extract's EmittedProblem) through
    codegen's first candidate, the real evaluator on the CPU and `kbot pr` (dry run): the
    publication's outcome, its clone holding the patched repository."""
    import argparse

    from kbot.commands import pr as pr_command
    from kbot.errors import ExitCode
    from kbot.evaluate import EvalOptions, evaluate
    from kbot.problem import load_problem
    from kbot.propose.codegen import generate

    def draft(emitted, name: str = "op"):
        run_dir = tmp_path / "work" / "runs" / name
        run_dir.mkdir(parents=True)
        (run_dir / "problem.py").write_text(emitted.path.read_text())
        (run_dir / "target.json").write_text(emitted.target_json.read_text())
        problem = load_problem(run_dir / "problem.py")
        candidate = generate(problem)[0].source
        verdict = evaluate(problem, candidate, EvalOptions(device="cpu"))
        assert verdict.accepted, [str(r) for r in verdict.reasons]
        (run_dir / "best_candidate.py").write_text(candidate)
        (run_dir / "kernel.py").write_text(candidate.split("class ModelNew")[0])
        (run_dir / "report.json").write_text(json.dumps({"verdict": verdict.to_json()}))
        parser = argparse.ArgumentParser()
        parser.add_argument("--json", action="store_true")
        pr_command.add_arguments(parser)
        result = pr_command.run(parser.parse_args([str(run_dir)]))
        assert result.exit_code == ExitCode.OK, result
        return result.data["outcome"]

    return draft
