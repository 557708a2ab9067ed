"""bench/real_repos.py on the CPU, in miniature: a small repository of our own stands in for a
public one (a named RMSNorm that a model configuration sizes, and a rotary function that no
inferred table layout runs), pinned by the manifest; the report counts what the scan found,
gave inputs and ran, and lists why the rest stopped. A checkout at another commit is refused."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
LAYERS = """import torch
from torch import nn


class RMSNorm(nn.Module):
    def __init__(self, hidden_size: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden_size))
        self.eps = eps

    def forward(self, x):
        x32 = x.float()
        x32 = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + self.eps)
        return (x32 * self.weight).to(x.dtype)


def apply_rotary_emb(x, freqs_cis):
    return torch.view_as_real(torch.view_as_complex(x.float().unflatten(-1, (-1, 2))) * freqs_cis)
"""


def _run(tmp_path, commit):
    ext = tmp_path / "ext"
    (ext / "tinylm" / "tinylm").mkdir(parents=True)
    (ext / "tinylm" / "tinylm" / "__init__.py").write_text("")
    (ext / "tinylm" / "tinylm" / "layers.py").write_text(LAYERS)
    (ext / "tinylm" / ".kbot-commit").write_text("a" * 40 + "\n")
    manifest = tmp_path / "repos.yml"
    entry = dict(name="tinylm", repo="example/tinylm", commit=commit, model_config="llama-3-8b")
    manifest.write_text(yaml.safe_dump({"repos": [entry]}))
    out = tmp_path / "real_repos.md"
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "real_repos.py"), "--manifest", str(manifest),
         "--ext", str(ext), "--work", str(tmp_path / "work"), "--out", str(out)],
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return out.read_text()


def _bench(name: str):
    """A module of bench/ (they import each other by their plain names)."""
    import importlib

    sys.path.insert(0, str(ROOT / "bench"))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.remove(str(ROOT / "bench"))


def test_the_report_counts_each_stage_and_says_why_targets_stopped(tmp_path):
    report = _run(tmp_path, "a" * 40)
    # files, findings, targets, with inputs, first case runs
    assert "| example/tinylm | aaaaaaaaaaaa | 2 | 2 | 2 | 1 | 1 |" in report
    # Every rotary table layout was tried; the reason says what ran last and what to add.
    line = next(x for x in report.splitlines() if "tinylm `apply_rotary_emb`" in x)
    assert "scan skipped it: running its first cases on the inputs --model-config" in line
    assert "freqs_cis [T, 64" in line and "give its inputs under `inputs:`" in line


def test_a_checkout_at_another_commit_is_refused(tmp_path):
    report = _run(tmp_path, "b" * 40)
    assert "is at aaaaaaaaaaaa, not the pinned commit" in report


def test_a_draft_whose_original_does_not_import_here_counts_on_neither_side():
    module = _bench("real_repos")
    drafts = [
        {"op": "a", "parity": "passed", "modules": {"pkg.a": "imports"}},
        {
            "op": "b",
            "parity": "ImportError: cannot import name 'X'",
            "modules": {"pkg.b": module.UNCHECKABLE},
        },
        {"op": "c", "parity": "TypeError: bad", "modules": {"pkg.c": "imports"}},
    ]
    cells = module._run_cells({"accepted": 3, "finished": True, "drafts": drafts})
    unchecked = " (1 not checkable here: the original does not import)"
    assert cells == ["3", 3, f"1 of 2{unchecked}", f"2 of 2{unchecked}"]


def test_a_draft_the_time_limit_left_unchecked_says_so_and_counts_on_neither_side():
    module = _bench("real_repos")
    drafts = [
        {"op": "a", "parity": "passed", "modules": {"pkg.a": "imports"}},
        {"op": "b", "parity": module.LATE, "modules": {"pkg.b": module.LATE}},
        {"op": "c", "parity": module.LATE, "modules": {"pkg.c": module.UNCHECKABLE}},
    ]
    cells = module._run_cells({"accepted": 3, "finished": False, "drafts": drafts})
    assert cells == [
        "3 (stopped at the time limit)",
        3,
        "1 of 1 (1 not checkable here: the original does not import; "
        "1 not checked: the call's time limit came first)",
        "1 of 1 (1 not checkable here: the original does not import; "
        "1 not checked: the call's time limit came first)",
    ]


def test_a_module_check_after_the_time_limit_is_not_called_a_broken_original(tmp_path):
    # On the H100 (2026-12-06) the five lightllm drafts' checks came after the call's limit:
    # none ran, and each patched module was reported as one whose original does not import.
    import json
    import time

    module = _bench("real_repos_run")
    clone = tmp_path / "clone"
    (clone / "pkg").mkdir(parents=True)
    (clone / "pkg" / "__init__.py").write_text("")
    (clone / "pkg" / "norm.py").write_text("def norm(x):\n    return x\n")

    def git(*args: str) -> str:
        done = subprocess.run(["git", "-C", str(clone), *args], capture_output=True, text=True,
                              check=True)  # fmt: skip
        return done.stdout.strip()

    git("init", "-q")
    git("-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    base = git("rev-parse", "HEAD")
    (clone / "pkg" / "norm.py").write_text("def norm(x):\n    return x * 1\n")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "kbot")
    drafts = tmp_path / "drafts"
    drafts.mkdir()
    record = {"branch": "kbot/norm", "commit": git("rev-parse", "HEAD"), "base_sha": base,
              "files": [{"path": "pkg/norm.py", "created": False}]}  # fmt: skip
    (drafts / "pr.json").write_text(json.dumps(record))
    seen = module.BaseFacts(deadline=time.time())
    row = module.check_draft(clone, drafts, {}, tmp_path / "checks", seen)
    assert row["modules"] == {"pkg.norm": module.LATE}
    assert row["parity"] == "no parity test in the PR"
    assert seen.originals == {}  # a later call checks the original again


def test_a_parity_run_in_which_no_test_passed_is_not_a_pass():
    # A CPU dry run once counted parity tests as passed whose every test had skipped (the
    # kernel test needs CUDA or the interpreter, which the check had switched off).
    module = _bench("real_repos_run")
    assert module.parity_result(0, "....                [100%]\n4 passed in 2.1s") == "passed"
    skipped = module.parity_result(0, "ssss [100%]\n4 skipped in 0.5s")
    assert skipped == "no test ran here: 4 skipped in 0.5s"
    assert module.parity_result(5, "no tests ran in 0.1s").startswith("no test ran here")
    failed = "E   AssertionError: Tensor-likes are not close!\n1 failed, 3 passed in 3s"
    assert module.parity_result(1, failed) == "AssertionError: Tensor-likes are not close!"


def test_a_coloured_parity_run_still_counts_its_passes(tmp_path):
    # litgpt's pytest options force colour (`--color=yes`): its 21 passed tests once read as
    # "no test ran here: \x1b[32m21 passed".
    module = _bench("real_repos_run")
    coloured = "print('\\x1b[32m\\x1b[1m21 passed\\x1b[0m, \\x1b[33m7 skipped\\x1b[0m in 67.14s')"
    code, out = module._child([sys.executable, "-c", coloured], tmp_path, dict(os.environ))
    assert out == "21 passed, 7 skipped in 67.14s"
    assert module.parity_result(code, out) == "passed"


def test_kbot_run_leaves_time_to_check_its_drafts():
    import math
    import time

    module = _bench("real_repos_run")
    now = time.time()
    assert module.search_until(math.inf) == math.inf
    assert abs(module.search_until(now + 600) - (now + 600 - module.CHECK_RESERVE_S)) < 1
    assert abs(module.search_until(now + 90) - (now + 60)) < 1  # a third of a short call
    assert module.search_until(now - 5) == now - 5


def test_every_stage_ends_by_the_calls_time_limit(tmp_path, monkeypatch):
    # A device command is killed at its own limit and then returns nothing: kbot run gets
    # SIGINT its grace before the limit and SIGKILL at it; checks after the limit are not run.
    import time

    module = _bench("real_repos_run")
    monkeypatch.setattr(module, "STOP_GRACE_S", 1)
    sleeper = [sys.executable, "-c", "import time\nwhile True: time.sleep(0.1)"]
    began = time.time()
    code, _, _ = module.run_until(sleeper, tmp_path, {}, time.time() + 3)
    assert code is None and time.time() - began < 4
    code, why = module._child(sleeper, tmp_path, {}, 900, deadline=time.time() + 2)
    assert code == -1 and why.startswith("not run: the call's time limit")


PROBLEM = """import torch
from torch import nn

CASES = [dict(T=1)]


class Model(nn.Module):
    def forward(self, x):
        return {body}


def get_init_inputs():
    return []


def get_inputs(T):
    return [torch.ones(T, 4)]
"""


def test_the_first_cases_of_every_problem_run_in_one_child(tmp_path):
    # One child for all of them (a child each took 20 s apiece on the H200 host, most of it
    # starting Python and torch); one that raises does not hide the others' results.
    module = _bench("real_repos")
    good, bad = tmp_path / "good.py", tmp_path / "bad.py"
    good.write_text(PROBLEM.format(body="x * 2"))
    bad.write_text(PROBLEM.format(body="x @ x"))
    said = module._probe([good, bad], tmp_path, deadline=float("inf"))
    assert said[str(good)] == "ok"
    assert said[str(bad)].startswith("RuntimeError: mat1 and mat2 shapes cannot be multiplied")


def test_a_continued_gpu_stage_keeps_the_earlier_calls_scan(tmp_path, monkeypatch):
    # A repository whose GPU stage an earlier call left unfinished: the next call goes straight
    # to kbot run (which continues its own searches); the scan and first cases are not redone.
    module = _bench("real_repos")
    ext = tmp_path / "ext"
    (ext / "tinylm").mkdir(parents=True)
    (ext / "tinylm" / "layers.py").write_text(LAYERS)
    entry = dict(name="tinylm", repo="example/tinylm", commit="a" * 40)
    earlier = {**entry, "files": 1, "findings": 2, "targets": 2, "with_inputs": 1,
               "skipped": [], "runs": 1, "probe_failures": [],
               "run": {"finished": False, "accepted": 0, "drafts": []}}  # fmt: skip

    def no_scan(*args, **kwargs):
        raise AssertionError("the scan ran again")

    monkeypatch.setattr(module, "_kbot", no_scan)
    monkeypatch.setattr(module, "_probe", no_scan)
    monkeypatch.setattr(
        module, "run_stage", lambda *a, **k: {"finished": True, "accepted": 1, "drafts": []}
    )
    search = {"budget_s": 30.0, "proposers": ""}
    row = module.measure(entry, ext, tmp_path / "work", search, float("inf"), earlier)
    assert row["findings"] == 2 and row["runs"] == 1
    assert row["run"] == {"finished": True, "accepted": 1, "drafts": []}


def test_the_import_check_resolves_the_guarded_import_of_the_kernel(tmp_path):
    # Importing the patched module never runs the guard's lazy import of the kernel module;
    # the check resolves it from the same sys.path (nano-vllm's drafts imported
    # `triton_rms_norm`, which only `nanovllm/layers/` on sys.path would find).
    module = _bench("real_repos_run")
    (tmp_path / "pkg" / "layers").mkdir(parents=True)
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "layers" / "triton_norm.py").write_text("def norm(x):\n    return x\n")
    norm = tmp_path / "pkg" / "layers" / "norm.py"

    def check(line: str) -> subprocess.CompletedProcess:
        norm.write_text(f"def forward(x):\n    if x:\n        {line}\n        return norm(x)\n")
        cmd = [sys.executable, "-c", module.IMPORT_CHECK, "pkg.layers.norm", "triton_norm"]
        return subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120)

    bad = check("from triton_norm import norm")
    assert bad.returncode != 0 and "guarded import of triton_norm does not resolve" in bad.stderr
    good = check("from pkg.layers.triton_norm import norm")
    assert good.returncode == 0 and good.stdout.strip() == "ok", good.stderr


def test_a_drafts_benchmark_script_is_loaded_and_a_broken_one_named(tmp_path):
    # lightllm's apply_rotary_pos_emb_vision (H100, 2026-12-06): the benchmark's copy of the
    # original op annotated `-> Tuple[...]` without the typing import; nothing loaded the script.
    import json
    import time

    module = _bench("real_repos_run")
    rows = {}
    for name, body in (("good", "def main():\n    return 1\n"),
                       ("bad", "def f(x) -> Tuple[int, int]:\n    return x\n")):  # fmt: skip
        clone = tmp_path / name / "clone"
        (clone / "benchmarks").mkdir(parents=True)
        (clone / "README.md").write_text("x\n")

        def git(*args: str, clone=clone) -> str:
            done = subprocess.run(["git", "-C", str(clone), "-c", "user.name=t", "-c",
                                   "user.email=t@t", *args], capture_output=True, text=True,
                                  check=True)  # fmt: skip
            return done.stdout.strip()

        git("init", "-q")
        git("add", "-A")
        git("commit", "-qm", "base")
        base = git("rev-parse", "HEAD")
        (clone / "benchmarks" / "bench_op_triton.py").write_text(body)
        git("add", "-A")
        git("commit", "-qm", "kbot")
        drafts = tmp_path / name / "drafts"
        drafts.mkdir()
        record = {"branch": "kbot/op", "commit": git("rev-parse", "HEAD"), "base_sha": base,
                  "files": [{"path": "benchmarks/bench_op_triton.py", "created": True}]}  # fmt: skip
        (drafts / "pr.json").write_text(json.dumps(record))
        seen = module.BaseFacts(deadline=time.time() + 300)
        rows[name] = module.check_draft(clone, drafts, {}, tmp_path / name / "checks", seen)
    assert rows["good"]["bench"] == "loads"
    assert rows["bad"]["bench"].startswith("fails: NameError: name 'Tuple' is not defined")
    lines = _bench("real_repos")._run_details(
        {
            "name": "repo",
            "run": {
                "drafts": [
                    {"op": "op", "parity": "passed", "modules": {}, "bench": rows["bad"]["bench"]}
                ]
            },
        }  # fmt: skip
    )
    assert lines == [f"- repo `op`: the PR's benchmark script {rows['bad']['bench']}"]
