"""kbot on public repositories nobody here wrote (issue 14, deliverable 6): per repository, the
scan's counts and every emitted problem's first case run once on this machine; with --run, also
`kbot run --dry-run` (on a GPU host) and what it drafted.

    python bench/real_repos.py --manifest bench/real_repos.yml --ext /path/to/checkouts \\
        --out bench/results/real_repos.md [--run] [--only nano-vllm,lmdeploy]

The checkouts live outside this tree (`--ext/NAME`, one per manifest entry, at the commit the
manifest pins); nothing of them is copied here. Each is copied once into a git repository under
`--work/NAME/repo` (kbot makes its PR branches from one), whose root gets the manifest's
`.kbot.yml` (or one naming its --model-config) with the benchmark's search budget, untracked.
With --run and --resume the work is split over several calls (`--time-limit`): every finished
search is reused, the stopped one continued.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import yaml
from real_repos_run import LATE, UNCHECKABLE, git_copy, run_stage, write_config

ROOT = Path(__file__).resolve().parents[1]
# Every problem's first case, in one child (one torch import: on the H200 host a child per
# problem took 20 s each, most of it starting Python and torch).
PROBE = """
import json, sys, torch
from kbot.problem import load_problem
from kbot.problem.runtime import case_inputs, import_file, init_inputs
for path in json.loads(sys.argv[1]):
    try:
        spec = load_problem(path)
        module = import_file(path, prefix="kbot_probe")
        model = module.Model(*init_inputs(module))
        with torch.no_grad():
            model(*case_inputs(module, spec.cases[0]))
        said = "ok"
    except BaseException as exc:
        said = f"{type(exc).__name__}: {exc}".splitlines()[0][:200] if str(exc) else type(exc).__name__
    print("KBOT-PROBE " + json.dumps([path, said]), flush=True)
"""


def _this_tree() -> dict[str, str]:
    """The environment of every child: kbot imported from this tree, not from whichever copy
    the interpreter has installed (the children run inside the checkout, not here)."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return {**os.environ, "PYTHONPATH": path}


def _kbot(args: list[str], cwd: Path, timeout_s: float) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "kbot", *args], env=_this_tree(),
        cwd=cwd, capture_output=True, text=True, timeout=timeout_s, check=False,
    )  # fmt: skip


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no output"


def _probe(problems: list[Path], repo: Path, deadline: float) -> dict[str, str]:
    """Per problem: 'ok', or what running its first case raised (the last line of the child's
    error output for those it did not reach)."""
    timeout_s = min(300.0 + 30.0 * len(problems), deadline - time.time())
    if timeout_s < 5:
        return {str(p): "not run: the call's time limit came first" for p in problems}
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, json.dumps([str(p) for p in problems])],
            env=_this_tree(), cwd=repo, capture_output=True, text=True, timeout=timeout_s,
            check=False,
        )  # fmt: skip
        stdout, why = done.stdout, _last_line(done.stderr)
    except subprocess.TimeoutExpired as exc:
        stdout = exc.stdout.decode() if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        why = f"timed out after {timeout_s:.0f} s"
    said = {}
    for line in stdout.splitlines():
        if line.startswith("KBOT-PROBE "):
            path, verdict = json.loads(line[len("KBOT-PROBE ") :])
            said[path] = verdict
    return {str(p): said.get(str(p), why) for p in problems}


def measure(
    entry: dict, ext: Path, work: Path, search: dict, run: float | None, earlier: dict | None = None
) -> dict:
    """The scan's counts and each problem's first case; with `run` (a deadline), the GPU stage
    too. Both work on a git copy of the checkout whose root holds the benchmark's .kbot.yml
    (`search`: the per-target budget and proposers). `earlier`: the row an earlier call wrote
    for this repository before its GPU stage ended; its scan and first cases are kept (the same
    checkout and kbot give the same ones) and only the GPU stage goes on."""
    repo = ext / entry["name"]
    row: dict = {"name": entry["name"], "repo": entry["repo"], "commit": entry["commit"]}
    commit_file = repo / ".kbot-commit"
    if commit_file.is_file() and commit_file.read_text().strip() != entry["commit"]:
        row["error"] = f"{repo} is at {commit_file.read_text().strip()[:12]}, not the pinned commit"
        return row
    copy = git_copy(repo, work / entry["name"] / "repo")
    write_config(entry, ROOT, copy / ".kbot.yml", **search)
    path = copy / entry.get("path", ".")
    problems = work / entry["name"] / "problems"
    began = time.time()
    limit = run if run is not None else math.inf

    def progress(what: str) -> None:  # which stage a call stopped at its limit was in
        print(
            f"  {entry['name']}: {what} ({time.time() - began:.0f} s)", file=sys.stderr, flush=True
        )

    if earlier is not None and run is not None and "files" in earlier and "error" not in earlier:
        row = {k: v for k, v in earlier.items() if k != "run"}
        progress("kbot run, continued (scan and first cases as the earlier call found them)")
        row["run"] = run_stage(copy, path, work / entry["name"], _this_tree(), deadline=run)
        progress("done")
        return row
    progress("scan")
    try:
        scan = _kbot(["scan", str(path), "--json", "--emit-problems", str(problems)], copy,
                     max(5.0, min(900.0, limit - time.time())))  # fmt: skip
    except subprocess.TimeoutExpired:
        row["error"] = "the scan did not finish before the call's time limit"
        return row
    try:
        envelope = json.loads(scan.stdout)
        data = envelope["data"]
        data["files_scanned"]
    except (json.JSONDecodeError, KeyError):
        row["error"] = f"scan exit {scan.returncode}: {_last_line(scan.stderr)}"
        return row
    emitted = [p for p in data.get("problems", []) if p["status"] == "emitted"]
    skipped = [p for p in data.get("problems", []) if p["status"] != "emitted"]
    row.update(
        files=data["files_scanned"],
        findings=len(data["findings"]),
        targets=len(data.get("problems", [])),
        with_inputs=len(emitted),
        skipped=[(p["name"], p["message"]) for p in skipped],
    )
    progress(f"first cases of {len(emitted)} problems")
    probed = _probe([Path(p["path"]) for p in emitted], copy, limit)
    probes = {p["name"]: probed[str(Path(p["path"]))] for p in emitted}
    row["runs"] = sum(1 for v in probes.values() if v == "ok")
    row["probe_failures"] = [(name, why) for name, why in probes.items() if why != "ok"]
    if run is not None:
        progress("kbot run")
        row["run"] = run_stage(copy, path, work / entry["name"], _this_tree(), deadline=run)
        progress("done")
    return row


def _skip_class(message: str) -> str:
    for marker, label in (
        ("running its first case", "the first case did not run here"),
        ("cannot infer inputs", "no inputs"),
        ("constructor argument", "constructor argument unknown"),
        ("cannot build", "cannot build the module"),
        ("import", "import failed"),
    ):
        if marker in message:
            return label
    return message.split(":")[0][:60]


def _run_cells(counts: dict) -> list:
    if not counts:
        return ["not reached"] * 4
    if "error" in counts:
        return [counts["error"][:80], "—", "—", "—"]
    drafts = counts.get("drafts", [])

    # A draft whose patched module's original does not import on this machine either (a
    # dependency at another version) cannot be checked here, and one the call's time limit
    # came before was not checked: each counts on neither side, with its reason.
    def unjudged(draft: dict) -> list[str]:
        states = [draft["parity"], *draft["modules"].values()]
        return [state for state in (UNCHECKABLE, LATE) if state in states]

    open_ = [d for d in drafts if not unjudged(d)]
    passed = sum(1 for d in open_ if d["parity"] == "passed")
    modules = [m for d in drafts for m in d["modules"].values()]
    imports = sum(1 for m in modules if m == "imports")
    judged = [m for m in modules if m not in (UNCHECKABLE, LATE)]
    late = "" if counts.get("finished") else " (stopped at the time limit)"
    return [f"{counts['accepted']}{late}", len(drafts),
            f"{passed} of {len(open_)}{_unchecked([s for d in drafts for s in unjudged(d)[:1]])}",
            f"{imports} of {len(judged)}{_unchecked([m for m in modules if m not in judged])}"]  # fmt: skip


def _unchecked(states: list[str]) -> str:
    """Why the drafts or modules outside a count were not judged, with how many of each."""
    reasons = {UNCHECKABLE: "not checkable here: the original does not import",
               LATE: "not checked: the call's time limit came first"}  # fmt: skip
    parts = [f"{states.count(s)} {reason}" for s, reason in reasons.items() if s in states]
    return f" ({'; '.join(parts)})" if parts else ""


def _run_details(row: dict) -> list[str]:
    counts = row.get("run") or {}
    lines = [f"- {row['name']}: {counts['died']}"] if counts.get("died") else []
    for t in counts.get("targets", []):
        if t["stage"] not in ("published", "extract"):  # extract: listed with the scan
            lines.append(f"- {row['name']} `{t['op']}`: stopped at {t['stage']}: {t['result']}; "
                         f"{t['detail'][:300]}")  # fmt: skip
    for d in counts.get("drafts", []):
        if d["parity"] != "passed":
            lines.append(f"- {row['name']} `{d['op']}`: parity test in the patched checkout: "
                         f"{d['parity']}")  # fmt: skip
        if d.get("stubs"):
            lines.append(f"- {row['name']} `{d['op']}`: checked with stubs for "
                         f"{', '.join(d['stubs'])} (not installed here; without them the "
                         "original module does not import)")  # fmt: skip
        for module, state in d["modules"].items():
            if state != "imports":
                lines.append(f"- {row['name']} `{d['op']}`: patched `{module}` {state}")
        if d.get("bench", "loads") != "loads":
            lines.append(f"- {row['name']} `{d['op']}`: the PR's benchmark script {d['bench']}")
    return lines


def render(rows: list[dict], command: str, run: bool) -> str:
    import torch

    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU only"
    run_head = " kernels accepted | PRs drafted | parity passes in the patched checkout | patched modules that import |"
    lines = [
        "# kbot on real repositories",
        "",
        f"{now}; {device}; torch {torch.__version__}; Python {platform.python_version()}.",
        f"Command: `{command}`",
        "",
        "| repo | commit | files scanned | findings | targets | targets with inputs | "
        "problems whose first case runs here |" + (run_head if run else ""),
        "|---|---|---|---|---|---|---|" + ("---|---|---|---|" if run else ""),
    ]
    classes: Counter = Counter()
    details = []
    for row in rows:
        if "error" in row:
            lines.append(f"| {row['repo']} | {row['commit'][:12]} | {row['error']} |")
            continue
        cells = [row["repo"], row["commit"][:12], row["files"], row["findings"],
                 row["targets"], row["with_inputs"], row["runs"]]  # fmt: skip
        if run:
            cells += _run_cells(row.get("run") or {})
        lines.append("| " + " | ".join(str(c) for c in cells) + " |")
        for name, message in row["skipped"]:
            classes[_skip_class(message)] += 1
            details.append(f"- {row['name']} `{name}`: scan skipped it: {message}")
        for name, why in row["probe_failures"]:
            classes["emitted problem does not run"] += 1
            details.append(f"- {row['name']} `{name}`: the emitted problem raised: {why}")
    lines += ["", "## Why targets stopped", ""]
    lines += [f"- {label}: {n}" for label, n in classes.most_common()] or ["- none"]
    lines += ["", "## Each one", "", *(details or ["- none"]), ""]
    if run:
        run_lines = [line for row in rows if "error" not in row for line in _run_details(row)]
        lines += ["## The GPU stage: what did not end in a checked PR", ""]
        lines += [*(run_lines or ["- none"]), ""]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", type=Path, default=ROOT / "bench" / "real_repos.yml")
    parser.add_argument("--ext", type=Path, required=True, help="folder holding the checkouts")
    parser.add_argument("--work", type=Path, default=Path("/tmp/kbot-real-repos"))
    parser.add_argument("--out", type=Path, help="markdown report (default: print it)")
    parser.add_argument("--json", type=Path, help="the rows as JSON too")
    parser.add_argument("--run", action="store_true", help="also kbot run --dry-run (GPU host)")
    parser.add_argument("--budget", type=float, default=30.0, help="search seconds per target")
    parser.add_argument(
        "--proposers", default="",
        help="comma-separated; default: kbot's own default (codegen, tune, inductor), as a "
        "maintainer's run has it",
    )  # fmt: skip
    parser.add_argument(
        "--time-limit", type=float, default=0.0,
        help="seconds for the whole call (0: none); a repository not reached is left for --resume",
    )  # fmt: skip
    parser.add_argument(
        "--per-repo", type=float, default=0.0,
        help="at most these seconds of the call for one repository (0: no share), so that one "
        "with many targets leaves time for the others; the rest is left for --resume",
    )  # fmt: skip
    parser.add_argument(
        "--resume", action="store_true",
        help="a repository measured to the end by an earlier call over --work is read back",
    )  # fmt: skip
    parser.add_argument("--only", help="comma-separated manifest names")
    args = parser.parse_args()
    entries = yaml.safe_load(args.manifest.read_text())["repos"]
    if args.only:
        wanted = set(args.only.split(","))
        entries = [e for e in entries if e["name"] in wanted]
    deadline = time.time() + args.time_limit if args.time_limit else float("inf")
    search = {"budget_s": args.budget, "proposers": args.proposers}
    rows = []
    for entry in entries:
        saved = args.work / entry["name"] / "row.json"
        earlier = None
        if args.resume and saved.is_file():
            earlier = json.loads(saved.read_text())
            if not args.run or (earlier.get("run") or {}).get("finished"):
                rows.append(earlier)
                continue
        if time.time() >= deadline - 60:
            rows.append({"name": entry["name"], "repo": entry["repo"], "commit": entry["commit"],
                         "error": "not reached before the time limit (run again with --resume)"})  # fmt: skip
            continue
        print(f"{entry['name']} ...", file=sys.stderr, flush=True)
        share = min(deadline, time.time() + args.per_repo) if args.per_repo else deadline
        row = measure(entry, args.ext, args.work, search, share if args.run else None, earlier)
        saved.parent.mkdir(parents=True, exist_ok=True)
        saved.write_text(json.dumps(row, indent=1), encoding="utf-8")
        rows.append(row)
    report = render(rows, "python " + " ".join(sys.argv), args.run)
    if args.out:
        args.out.write_text(report, encoding="utf-8")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
