"""Fixtures for the publisher's tests: hand-made run directories and a small target repository
(`fixtures/minisrv`, one op in each integration style), copied to a temporary folder per test."""

from __future__ import annotations

import json
import shutil
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
