"""The OS sandbox itself, without torch: what a process inside `confine.enter` can see and do.

Skipped where Linux namespaces cannot be set up (the evaluator then runs candidates plainly and
says so; `test_unsandboxed_refuses_beside_a_credential` covers that path everywhere)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from kbot.errors import UsageError
from kbot.evaluate import confine
from kbot.evaluate.evaluator import choose_sandbox

PACKAGE = Path(confine.__file__).resolve().parents[1]

_INSIDE = r"""
import errno, json, os, socket, sys
from kbot.evaluate.confine import Plan, enter
enter(Plan.from_json(sys.argv[1]))
facts = {}
facts["outside_visible"] = os.path.exists(sys.argv[2])
facts["home_listing"] = sorted(os.listdir(os.path.expanduser("~"))) if os.path.isdir(os.path.expanduser("~")) else None
try:
    open(os.path.join(sys.prefix, "kbot-sandbox-probe"), "w")
    facts["wrote_prefix"] = True
except OSError as exc:
    facts["wrote_prefix"] = errno.errorcode.get(exc.errno, str(exc.errno))
with open(os.path.join(sys.argv[3], "mine.txt"), "w") as handle:
    handle.write("ok")
facts["wrote_private"] = True
facts["pids"] = sorted(int(p) for p in os.listdir("/proc") if p.isdigit())
facts["passwd"] = os.path.exists("/etc/passwd")
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
facts["mount"] = libc.mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None)
facts["remount_rw"] = libc.mount(None, sys.prefix.encode(), None, 32 | 4096, None)
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    facts["network"] = True
except OSError:
    facts["network"] = False
print(json.dumps(facts))
"""


@pytest.fixture(scope="module")
def inside(tmp_path_factory):
    if not confine.probe().available:
        pytest.skip(f"no namespaces here: {confine.probe().why}")
    folder = tmp_path_factory.mktemp("confine")
    private, root = folder / "private", folder / "root"
    private.mkdir()
    root.mkdir()
    outside = folder / "outside.txt"
    outside.write_text("the judge's file")
    plan = confine.plan_for(private, root, PACKAGE)
    done = subprocess.run(
        confine.command(["-c", _INSIDE, plan.to_json(), str(outside), str(private)]),
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(PACKAGE.parent),
            "HOME": os.path.expanduser("~"),
        },
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), private


def test_only_the_plan_is_visible(inside):
    facts, _ = inside
    assert facts["outside_visible"] is False
    assert facts["passwd"] is False
    assert facts["home_listing"] in (None, []) or ".ssh" not in facts["home_listing"]


def test_the_environment_is_read_only_and_the_private_folder_writable(inside):
    facts, private = inside
    assert facts["wrote_prefix"] in ("EROFS", "EACCES", "EPERM", "ENOENT")
    assert facts["wrote_private"] and (private / "mine.txt").read_text() == "ok"


def test_no_other_process_no_network_no_capabilities(inside):
    facts, _ = inside
    assert len(facts["pids"]) <= 2  # itself (and its PID-1 parent where it forked)
    assert facts["network"] is False
    assert facts["mount"] != 0 and facts["remount_rw"] != 0


def test_candidate_environment_is_an_allowlist(tmp_path):
    env = confine.candidate_environment(
        {
            "PATH": "/bin",
            "GITHUB_TOKEN": "t",
            "CUDA_VISIBLE_DEVICES": "0",
            "TRITON_INTERPRET": "1",
            "TRITON_FOO": "1",
            "TRITON_API_KEY": "k",
            "TRITON_REDIS_PASS": "p",
            "TRITON_REDIS_HOST": "cache.internal",
            "CUDA_DB_PWD": "w",
            "HOME": "/root",
            "SOME_CONFIG": "x",
            "LD_PRELOAD": "/evil.so",
        },
        tmp_path,
        "/pkg",
    )
    assert env["PATH"] == "/bin" and env["CUDA_VISIBLE_DEVICES"] == "0"
    assert env["TRITON_INTERPRET"] == "1"
    assert "GITHUB_TOKEN" not in env and "TRITON_API_KEY" not in env
    # Triton's variables by name only: not a remote cache's settings, not a user's own
    assert not {"TRITON_FOO", "TRITON_REDIS_PASS", "TRITON_REDIS_HOST", "CUDA_DB_PWD"} & set(env)
    assert "SOME_CONFIG" not in env and "LD_PRELOAD" not in env
    assert env["HOME"] == str(tmp_path / "home")
    assert json.dumps(env)  # plain strings only


def test_credential_words_are_words_of_a_name():
    from kbot.evaluate.credentials import is_secret_name

    for name in ("REDIS_PASS", "DB_PWD", "GH_PAT", "PAT_FOR_CI", "API_BEARER", "MY_CREDS"):
        assert is_secret_name(name, {}), name
    for name in ("PATH", "PWD", "OLDPWD", "LD_LIBRARY_PATH", "PATCH_LEVEL"):
        assert not is_secret_name(name, {}), name


def test_unsandboxed_refuses_beside_a_credential(monkeypatch):
    monkeypatch.setenv("GITHUB_TOKEN", "kbot-canary-refusal")
    with pytest.raises(UsageError, match="GITHUB_TOKEN"):
        choose_sandbox("off", allow_unsandboxed=False)
    assert choose_sandbox("off", allow_unsandboxed=True).confined is False
