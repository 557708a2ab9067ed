"""kbot on public repositories nobody here wrote (issue 14, deliverable 6): per repository, the
scan's counts and every emitted problem's first case run once on this machine; with --run, also
`kbot run --dry-run` (on a GPU host) and what it drafted.

    python bench/real_repos.py --manifest bench/real_repos.yml --ext /path/to/checkouts \\
        --out bench/results/real_repos.md [--run] [--only nano-vllm,lmdeploy]

The checkouts live outside this tree (`--ext/NAME`, one per manifest entry, at the commit the
manifest pins); nothing of them is copied here. A repository's `.kbot.yml` from the manifest is
passed with --config, never written into the checkout.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
from collections import Counter
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
PROBE = """
import sys, torch
from kbot.problem import load_problem
from kbot.problem.runtime import case_inputs, import_file, init_inputs
spec = load_problem(sys.argv[1])
module = import_file(sys.argv[1])
model = module.Model(*init_inputs(module))
with torch.no_grad():
    model(*case_inputs(module, spec.cases[0]))
print("ok")
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


def _probe(problem: Path, repo: Path) -> str:
    """'ok', or the last line of what running the problem's first case raised."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", PROBE, str(problem)], env=_this_tree(),
            cwd=repo, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return "timed out after 300 s"
    return "ok" if done.returncode == 0 else _last_line(done.stderr)


def _scan_args(entry: dict, path: Path, problems: Path) -> list[str]:
    args = ["scan", str(path), "--json", "--emit-problems", str(problems)]
    if entry.get("model_config"):
        args += ["--model-config", entry["model_config"]]
    if entry.get("config"):
        args += ["--config", str(ROOT / entry["config"])]
    return args


def measure(entry: dict, ext: Path, work: Path, run: bool) -> dict:
    repo = ext / entry["name"]
    row: dict = {"name": entry["name"], "repo": entry["repo"], "commit": entry["commit"]}
    commit_file = repo / ".kbot-commit"
    if commit_file.is_file() and commit_file.read_text().strip() != entry["commit"]:
        row["error"] = f"{repo} is at {commit_file.read_text().strip()[:12]}, not the pinned commit"
        return row
    path = repo / entry.get("path", ".")
    problems = work / entry["name"] / "problems"
    scan = _kbot(_scan_args(entry, path, problems), repo, 900)
    try:
        data = json.loads(scan.stdout)["data"]
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
    probes = {p["name"]: _probe(Path(p["path"]), repo) for p in emitted}
    row["runs"] = sum(1 for v in probes.values() if v == "ok")
    row["probe_failures"] = [(name, why) for name, why in probes.items() if why != "ok"]
    if run:
        args = ["run", str(path), "--dry-run", "--json", "--work-dir", str(work / entry["name"])]
        args += _scan_args(entry, path, problems)[3:5] if entry.get("model_config") else []
        if entry.get("config"):
            args += ["--config", str(ROOT / entry["config"])]
        done = _kbot(args, repo, 3600)
        row["run"] = _run_counts(done)
    return row


def _run_counts(done: subprocess.CompletedProcess) -> dict:
    try:
        data = json.loads(done.stdout)["data"]
    except (json.JSONDecodeError, KeyError):
        return {"error": f"run exit {done.returncode}: {_last_line(done.stderr)}"}
    targets = data.get("targets", [])
    return {
        "accepted": sum(1 for t in targets if t.get("accepted")),
        "drafted": sum(1 for t in targets if t.get("pr") or t.get("published")),
        "failures": [(t.get("name"), t.get("stage"), t.get("reason")) for t in targets
                     if not (t.get("pr") or t.get("published"))],
    }  # fmt: skip


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


def render(rows: list[dict], command: str, run: bool) -> str:
    import torch

    now = dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    device = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU only"
    lines = [
        "# kbot on real repositories",
        "",
        f"{now}; {device}; torch {torch.__version__}; Python {platform.python_version()}.",
        f"Command: `{command}`",
        "",
        "| repo | commit | files scanned | findings | targets | targets with inputs | "
        "problems whose first case runs here |" + (" accepted | PRs drafted |" if run else ""),
        "|---|---|---|---|---|---|---|" + ("---|---|" if run else ""),
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
            counts = row.get("run", {})
            cells += [counts.get("accepted", "—"), counts.get("drafted", "—")]
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
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", type=Path, default=ROOT / "bench" / "real_repos.yml")
    parser.add_argument("--ext", type=Path, required=True, help="folder holding the checkouts")
    parser.add_argument("--work", type=Path, default=Path("/tmp/kbot-real-repos"))
    parser.add_argument("--out", type=Path, help="markdown report (default: print it)")
    parser.add_argument("--run", action="store_true", help="also kbot run --dry-run (GPU host)")
    parser.add_argument("--only", help="comma-separated manifest names")
    args = parser.parse_args()
    entries = yaml.safe_load(args.manifest.read_text())["repos"]
    if args.only:
        wanted = set(args.only.split(","))
        entries = [e for e in entries if e["name"] in wanted]
    rows = []
    for entry in entries:
        print(f"{entry['name']} ...", file=sys.stderr, flush=True)
        rows.append(measure(entry, args.ext, args.work, args.run))
    report = render(rows, "python " + " ".join(sys.argv), args.run)
    if args.out:
        args.out.write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
