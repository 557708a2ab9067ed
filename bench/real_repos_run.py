"""The GPU stage of bench/real_repos.py: `kbot run --dry-run` over a git copy of each checkout,
then each drafted PR checked in the patched checkout (its parity test, and each patched module
imported where the original imports here too).

Resumable: the copy, the config and kbot's work directory live under `--work/NAME`; a second
call reuses every search that finished (kbot.search.earlier) and continues the one that was
stopped, so a run split over several device commands costs each search once.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

# Imports the module (argv[1]); then every import inside its functions of a module the PR
# creates (argv[2]: their names, comma-separated) must resolve from the same sys.path. The
# guard imports the kernel lazily, so importing the module alone never ran that line, and
# nano-vllm's drafts once imported `triton_rms_norm` where only `nanovllm.layers.triton_rms_norm`
# exists.
IMPORT_CHECK = """import ast, importlib, importlib.util, sys
module = importlib.import_module(sys.argv[1])
created = set(filter(None, (sys.argv[2] if len(sys.argv) > 2 else "").split(",")))
tree = ast.parse(open(module.__file__, encoding="utf-8").read())
lazy = {
    node.module
    for function in ast.walk(tree) if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
    for node in ast.walk(function)
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
    and node.module.rsplit(".", 1)[-1] in created
}
missing = sorted(name for name in lazy if importlib.util.find_spec(name) is None)
if missing:
    sys.exit("ModuleNotFoundError: the guarded import of " + ", ".join(missing) + " does not resolve")
print("ok")
"""

BENCH_LOAD = """import os, runpy, sys
path = os.path.abspath(sys.argv[1])
sys.path.insert(0, os.path.dirname(path))
runpy.run_path(path, run_name="kbot_bench_loaded")
print("ok")
"""


def git_copy(checkout: Path, dest: Path) -> Path:
    """A git repository holding the checkout's files on a `main` branch (the benchmark's
    checkouts are archives; kbot makes its branches from a repository). Made once."""
    if (dest / ".git").is_dir():
        return dest
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(checkout, dest, ignore=shutil.ignore_patterns(".git", "__pycache__"))
    quiet = {"capture_output": True, "check": True}
    identity = ["-c", "user.name=kbot-bench", "-c", "user.email=kbot-bench@localhost"]
    subprocess.run(["git", "init", "-q", "-b", "main", str(dest)], **quiet)
    subprocess.run(["git", "-C", str(dest), "add", "-A"], **quiet)
    subprocess.run(["git", "-C", str(dest), *identity, "commit", "-q", "-m", "checkout"], **quiet)
    return dest


def write_config(entry: dict, root: Path, dest: Path, budget_s: float, proposers: str) -> Path:
    """The manifest's .kbot.yml (when it gives one) with the benchmark's search budget on top,
    written as `.kbot.yml` at the copy's root (its targets name files from there), untracked:
    kbot's clone of the copy, where the PR is made, does not carry it."""
    config = yaml.safe_load((root / entry["config"]).read_text()) if entry.get("config") else {}
    config = config or {}
    config.setdefault("version", 1)
    if entry.get("model_config"):
        config.setdefault("scan", {})["model_config"] = entry["model_config"]
    search = config.setdefault("search", {})
    search["time_budget_s"] = budget_s
    if proposers:
        search["proposers"] = proposers.split(",")
    dest.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return dest


# After SIGINT, kbot records the stopped search and prints its envelope; this long, then SIGKILL.
STOP_GRACE_S = 40


def run_until(cmd: list[str], cwd: Path, env: dict, deadline: float) -> tuple[int | None, str, str]:
    """The command's (exit code, stdout, stderr), over by `deadline`: STOP_GRACE_S before it,
    it gets SIGINT (kbot stops its search cleanly and records it), at it SIGKILL. Exit code
    None: it was stopped."""
    child = subprocess.Popen(
        cmd, cwd=cwd, env=env, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        start_new_session=True,
    )  # fmt: skip
    try:
        out, err = child.communicate(timeout=max(1.0, deadline - STOP_GRACE_S - time.time()))
        return child.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGINT)
        try:
            out, err = child.communicate(timeout=max(1.0, deadline - time.time()))
        except subprocess.TimeoutExpired:
            os.killpg(child.pid, signal.SIGKILL)
            out, err = child.communicate()
        return None, out, err


def _module_name(path: str) -> str | None:
    if not path.endswith(".py"):
        return None
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


# What a patched module's check says where it could not judge the module: its original does not
# import on this machine either, or the call's time limit came before the check ran.
UNCHECKABLE = "the original does not import here either"
LATE = "not run: the call's time limit came first (run again with --resume)"


def _child(
    cmd: list[str],
    cwd: Path,
    env: dict,
    timeout_s: float = 900,
    deadline: float = math.inf,
    interpret: bool = False,
) -> tuple[int, str]:
    """(exit code, output) of a check, stopped at `timeout_s` or at the call's deadline; a
    check the deadline leaves no time for is not run: (-1, LATE). `interpret`: Triton's CPU
    interpreter on (TRITON_INTERPRET=1), else off."""
    timeout_s = min(timeout_s, deadline - time.time())
    if timeout_s < 5:
        return -1, LATE
    env = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(cwd), env.get("PYTHONPATH")]))}
    env.pop("TRITON_INTERPRET", None)
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    try:
        done = subprocess.run(
            cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s, check=False
        )
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout_s:.0f} s"
    return done.returncode, plain(done.stdout + done.stderr).strip()


# Terminal escapes: a repository's pytest options may force colour (litgpt's `--color=yes`), and
# "\x1b[32m21 passed" then read as no test passed.
ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def plain(text: str) -> str:
    """`text` without terminal escapes."""
    return ESCAPES.sub("", text)


def _tail(text: str) -> str:
    """The error a failed child printed (pytest's first `E   ...` line), else its last line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line[1:].strip() for line in lines if line.startswith("E ")]
    if errors:
        return errors[0][:200]
    return lines[-1][:200] if lines else "no output"


STUBS = Path(__file__).parent / "stubs"  # its sitecustomize.py stands in for missing packages
MISSING = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")


def stubs_needed(
    base: Path,
    modules: list[str],
    env: dict,
    known: tuple[str, ...] = (),
    deadline: float = math.inf,
) -> list[str]:
    """Third-party packages without which the original modules do not import here, found one
    at a time from the `known` ones (a package the repository guards with try/except
    ImportError is never named, so its fallback path stays what it is on a machine without
    it)."""
    stubs: list[str] = list(known)
    for name in modules:
        for _ in range(12):
            code, out = _child(
                [sys.executable, "-c", IMPORT_CHECK, name], base, _stubbed(env, stubs), 300,
                deadline,
            )  # fmt: skip
            missing = MISSING.search(out) if code != 0 else None
            if missing is None:
                break
            package = missing.group(1)
            if (base / package.split(".")[0]).exists() or package in stubs:
                break  # the repository's own module, or a stub that did not help
            stubs.append(package)
    return stubs


def _stubbed(env: dict, stubs: list[str]) -> dict:
    if not stubs:
        return env
    path = os.pathsep.join(filter(None, [str(STUBS), env.get("PYTHONPATH")]))
    return {**env, "PYTHONPATH": path, "KBOT_BENCH_STUBS": ",".join(stubs)}


@dataclass
class BaseFacts:
    """What the drafts of one run found at their shared base commit."""

    stubs: list[str] = field(default_factory=list)  # packages stubbed for the originals
    probed: set[str] = field(default_factory=set)  # modules the stub search has imported
    originals: dict[str, int] = field(default_factory=dict)  # module -> its import's exit code
    deadline: float = math.inf  # the call's time limit: checks after it are not run


def check_draft(clone: Path, drafts: Path, env: dict, scratch: Path, seen: BaseFacts) -> dict:
    """One drafted PR in the patched checkout: its parity test and its patched modules.
    `seen` carries what earlier drafts of the run found at the same base commit (the stubs,
    whether each original module imports): on lightllm each import took seconds, and the
    checks of two drafts outlasted the repository's share of the call."""
    record = json.loads((drafts / "pr.json").read_text())
    files = record["files"]
    tree = scratch / record["branch"].replace("/", "-")
    base = scratch / "base"
    for path, ref in ((tree, record["commit"]), (base, record["base_sha"])):
        if path.exists():
            subprocess.run(["git", "-C", str(clone), "worktree", "remove", "--force", str(path)],
                           capture_output=True, check=False)  # fmt: skip
        subprocess.run(["git", "-C", str(clone), "worktree", "add", "-q", "--detach", str(path), ref],
                       capture_output=True, check=True)  # fmt: skip
    tests = [f["path"] for f in files if Path(f["path"]).name.startswith("test_")]
    patched_modules = [
        name
        for item in files
        if not item["created"]
        and not Path(item["path"]).name.startswith(("test_", "bench_"))
        and (name := _module_name(item["path"])) is not None
    ]
    unseen = [name for name in patched_modules if name not in seen.probed]
    stubs = seen.stubs = stubs_needed(base, unseen, env, tuple(seen.stubs), seen.deadline)
    seen.probed.update(unseen)
    env = _stubbed(env, stubs)
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest",
              "--rootdir", "."]  # fmt: skip
    # Without a GPU the parity test's kernel test runs in Triton's interpreter, as its own
    # docstring says; a run in which no test passed (all skipped) is not a pass.
    code, out = (
        _child([*pytest, *tests], tree, env, deadline=seen.deadline, interpret=not _has_cuda())
        if tests
        else (1, "no parity test in the PR")
    )
    row = {"branch": record["branch"], "parity": parity_result(code, out), "stubs": stubs}
    modules = {}
    created = ",".join(Path(f["path"]).stem for f in files if f["created"])
    for name in patched_modules:
        patched, why = _child(
            [sys.executable, "-c", IMPORT_CHECK, name, created], tree, env, 300, seen.deadline
        )
        if patched != 0 and why != LATE and name not in seen.originals:
            original, late = _child(
                [sys.executable, "-c", IMPORT_CHECK, name], base, env, 300, seen.deadline
            )
            if late == LATE:  # not known yet: a later call checks it again
                why = LATE
            else:
                seen.originals[name] = original
        original = seen.originals.get(name, 0)
        if patched == 0:
            modules[name] = "imports"
        elif why == LATE:
            modules[name] = LATE
        elif original != 0:
            modules[name] = UNCHECKABLE
        else:
            modules[name] = f"fails: {_tail(why)}"
    row["modules"] = modules
    # The benchmark script's definitions, loaded as `python FILE` would without running it (a
    # copied original's annotations once named an import the file lacked; nothing else ran it).
    benches = [f["path"] for f in files if Path(f["path"]).name.startswith("bench_")]
    if benches:
        code, why = _child([sys.executable, "-c", BENCH_LOAD, benches[0]], tree, env, 120,
                           seen.deadline)  # fmt: skip
        row["bench"] = "loads" if code == 0 else LATE if why == LATE else f"fails: {_tail(why)}"
    for path in (tree, base):
        subprocess.run(["git", "-C", str(clone), "worktree", "remove", "--force", str(path)],
                       capture_output=True, check=False)  # fmt: skip
    return row


# Of a call's time left, what `kbot run` leaves for checking the drafts it made: on the H100
# (2026-12-06) lightllm's run took a call's 470 s whole and its five drafts went unchecked.
# A stopped `kbot run` continues where it stopped on the next call; checks are redone there.
CHECK_RESERVE_S = 120


def search_until(deadline: float) -> float:
    """When `kbot run` is stopped: CHECK_RESERVE_S before the call's deadline, or a third of
    the time left before it where less than three times that is left."""
    left = deadline - time.time()
    return deadline - min(CHECK_RESERVE_S, max(0.0, left) / 3)


def parity_result(code: int, out: str) -> str:
    """ "passed" where pytest passed at least one test; else why not, from its output (a CPU
    dry run once counted parity tests whose every test had skipped as passed)."""
    if code == 0 and re.search(r"\b[1-9]\d* passed", out):
        return "passed"
    if code == 0 or code == 5:  # 5: nothing collected
        return f"no test ran here: {_tail(out)}"
    return _tail(out)


def _has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def run_stage(copy: Path, path: Path, work: Path, env: dict, deadline: float) -> dict:
    """`kbot run --dry-run` on `path` inside the git copy (its .kbot.yml already written), then
    every drafted PR checked."""
    kbot_work = work / "kbot"
    cmd = [sys.executable, "-m", "kbot", "run", str(path), "--dry-run", "--json",
           "--work-dir", str(kbot_work)]  # fmt: skip
    began = time.time()
    code, out, err = run_until(cmd, copy, env, search_until(deadline))
    (work / "run.log").write_text(err, encoding="utf-8")
    result: dict = {"wall_s": round(time.time() - began, 1), "finished": code is not None}
    try:
        targets = json.loads(out)["data"]["targets"]
    except (json.JSONDecodeError, KeyError, TypeError):
        # No envelope (the process died): what it recorded target by target (run.json).
        progress = kbot_work / "run.json"
        if not progress.is_file():
            result["error"] = f"kbot run exit {code}: {_tail(err)}"
            return result
        targets = json.loads(progress.read_text(encoding="utf-8"))
        result["died"] = (
            f"kbot run exit {code} without its envelope ({_tail(err)}): rows from run.json"
        )
    result["targets"] = [
        {k: t.get(k, "") for k in ("target", "op", "stage", "result", "action", "detail")}
        for t in targets
    ]
    drafted = [t for t in targets if t.get("stage") == "published"]
    publish_failed = [t for t in targets if t.get("stage") == "publish"]  # accepted, not drafted
    result["accepted"] = len(drafted) + len(publish_failed)
    scratch = work / "checks"
    scratch.mkdir(parents=True, exist_ok=True)
    clone = kbot_work / "publish" / "repo"
    result["drafts"] = []
    seen = BaseFacts(deadline=deadline)
    for t in drafted:
        drafts = kbot_work / "publish" / t["op"]
        if not (drafts / "pr.json").is_file():
            result["drafts"].append({"op": t["op"], "parity": "no pr.json", "modules": {}})
            continue
        result["drafts"].append({"op": t["op"], **check_draft(clone, drafts, env, scratch, seen)})
    return result
