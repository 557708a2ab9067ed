"""GPU benchmark of `kbot optimize` over the serving-op suite in bench/problems (issue 4, item 9).

Run on a GPU machine from the repo root:

    python bench/optimize_suite.py --out bench/results/optimize.md [--ops rmsnorm,softcap]

For each op it runs the real search (codegen + tune, the real evaluator: CUDA-graph and
plain-launch timing interleaved with eager and torch.compile) with a small per-op budget, then
writes one table row per case from the winner's re-measured verdict: eager / torch.compile /
kbot medians in µs for both timing modes, speedups, and % of the device's measured copy
bandwidth (the evaluator's roofline). The summary gives geomean speedups over all cases and the
time to the first accepted candidate per op. Every number comes from the evaluator's verdicts;
nothing is estimated. Results are appended op by op, so a run stopped by --time-limit keeps
what it measured and says which ops it did not reach.

The suite does not fit one device command (16 ops at minutes each): with `--log PATH` each op's
record (bench/suite_records.py, built from its run's report.json) is appended as it ends, and
`--resume` skips the ops the log already holds with the same settings on the same GPU, so
commands, sessions and machines continue one log (`bash bench/device_run.sh optimize`);
`--report-only` renders the markdown from the log without a GPU, `--rerun OPS` measures ops again
(each new record replaces the op's old ones, kept until then), `--add-report report.json ...` adds
runs made elsewhere.
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBLEMS = ROOT / "bench" / "problems"
sys.path.insert(0, str(ROOT / "bench"))

import suite_records as records  # noqa: E402  (bench/, beside this script)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--ops", default="", help="comma-separated problem names (default: all)")
    parser.add_argument("--generations", type=int, default=3)
    parser.add_argument("--max-candidates", type=int, default=10)
    parser.add_argument("--time-budget", type=float, default=60.0, help="seconds per op")
    parser.add_argument(
        "--time-limit", type=float, default=520.0, help="stop starting new ops after this"
    )
    parser.add_argument("--work-dir", type=Path, default=None)
    parser.add_argument("--proposers", default="codegen,tune,inductor", help="comma-separated")
    parser.add_argument(
        "--log", type=Path, default=None,
        help="JSON lines, one per op run, appended as each op ends (a later command continues it)",
    )  # fmt: skip
    parser.add_argument(
        "--resume", action="store_true",
        help="skip the ops the log holds with these settings on this GPU; report their records",
    )  # fmt: skip
    parser.add_argument(
        "--rerun", default="",
        help="ops measured again though the log holds them (with --resume); each one's new "
        "record replaces its old ones, which stay while it is not reached",
    )  # fmt: skip
    parser.add_argument(
        "--add-report", type=Path, nargs="*", default=[],
        help="report.json files of runs made elsewhere: their records join the log (no GPU)",
    )  # fmt: skip
    parser.add_argument(
        "--report-only", action="store_true",
        help="no GPU: write the markdown from the log's latest record of each op",
    )  # fmt: skip
    args = parser.parse_args()
    names = [n for n in args.ops.split(",") if n] or sorted(p.stem for p in PROBLEMS.glob("*.py"))
    unknown = [n for n in names if not (PROBLEMS / f"{n}.py").is_file()]
    if unknown:
        print(f"optimize_suite: no problem {', '.join(unknown)} in {PROBLEMS}", file=sys.stderr)
        return 2
    if (args.resume or args.report_only or args.rerun or args.add_report) and args.log is None:
        print(
            "optimize_suite: --resume, --rerun, --add-report and --report-only need --log PATH",
            file=sys.stderr,
        )
        return 2
    if args.add_report:
        return add_reports(args.add_report, args.log)
    rerun = {n for n in args.rerun.split(",") if n}
    if args.report_only:
        chosen = records.latest(records.read_log(args.log), names)
        lines = ["# kbot optimize: serving-op suite", "", f"From `{args.log}` (no GPU run)", ""]
        missing = [n for n in names if n not in _ops(chosen)]
        _write_report(args.out, lines, chosen, missing, skipped_as="ops not in the log")
        return 0

    import torch

    from kbot.problem import load_problem

    if not torch.cuda.is_available():
        print("optimize_suite: needs a CUDA GPU", file=sys.stderr)
        return 2
    device = torch.cuda.get_device_name()
    settings = {
        "proposers": args.proposers,
        "generations": args.generations,
        "max_candidates": args.max_candidates,
        "budget_s": args.time_budget,
    }
    work_dir = args.work_dir or Path(tempfile.mkdtemp(prefix="kbot-suite-"))
    command = "python " + " ".join(shlex.quote(a) for a in sys.argv)
    lines = header(command, torch) + [
        f"Per op: proposers {args.proposers}, {args.generations} generations, at most "
        f"{args.max_candidates} candidates, {args.time_budget:.0f} s wall budget; finalists re-measured.",
        "µs = median of the evaluator (graph: CUDA-graph replay over rotated input copies with L2",
        "flushed; plain: plain launches). `x` columns: the verdict's speedups (1.00 when inside the",
        "measured spread) against eager and against the faster torch.compile mode (default or",
        "max-autotune-no-cudagraphs). `% bw`: bytes moved / kbot graph time / measured copy bandwidth.",
        "",
    ]
    started = time.perf_counter()
    logged = records.read_log(args.log) if args.log is not None else []
    results: list[dict] = []
    skipped: list[str] = []
    for name in names:
        resumed = args.resume and name not in rerun
        earlier = records.done(logged, name, settings, device) if resumed else None
        if earlier is not None:
            print(f"{name}: resumed from {args.log} ({earlier.get('date')})", flush=True)
            results.append(earlier)
            continue
        if time.perf_counter() - started > args.time_limit:
            skipped.append(name)
            continue
        problem = load_problem(PROBLEMS / f"{name}.py")
        record = run_op(name, problem, args, settings, device, work_dir)
        if args.log is not None and name in rerun:
            dropped = records.drop(args.log, {name})
            print(f"--rerun: {name}'s {dropped} earlier records left {args.log}", flush=True)
        if args.log is not None:
            records.append(args.log, record)
        print("\n".join(records.case_rows(record)), flush=True)
        results.append(record)
    _write_report(args.out, lines, results, skipped, started)
    return 0


def run_op(name: str, problem, args, settings: dict, device: str, work_dir: Path) -> dict:
    """One op's `kbot optimize`, as a record built from its run report; a failure is a record
    too."""
    from kbot.search import Budget, OptimizeOptions, optimize

    options = OptimizeOptions(
        proposers=tuple(p for p in args.proposers.split(",") if p),
        device="cuda",
        budget=Budget(
            generations=args.generations,
            time_s=args.time_budget,
            max_candidates=args.max_candidates,
        ),
        islands=2,
        patience=2,
    )
    op_started = time.perf_counter()
    try:
        result = optimize(problem, options, work_dir)
    except Exception as exc:  # one op's failure is a row, not the end of the suite
        failure = f"error: {type(exc).__name__}: {str(exc)[:160]}"
        return records.op_record(name, settings, device, _now(), _tree(), status="error",
                                 outcome=failure, lineage="–", cases=[])  # fmt: skip
    wall_s = round(time.perf_counter() - op_started, 1)
    report_path = result.report_json_path
    if report_path is None or not Path(report_path).is_file():
        return records.op_record(name, settings, device, _now(), _tree(), status="error",
                                 outcome=f"no report: {result.message[:160]}", wall_s=wall_s,
                                 lineage="–", cases=[])  # fmt: skip
    record = records.record_from_report(
        json.loads(Path(report_path).read_text()), settings, _now(), _tree(), wall_s
    )
    if not record["cases"]:
        print(f"{name}: no winner: {result.message}", flush=True)
        for note in report_notes(report_path):
            print(f"  note: {note}", flush=True)
        print(f"{name}: rejections from {result.report_md_path}:", flush=True)
        print(rejections(result.report_md_path), flush=True)
    return record


def add_reports(paths: list[Path], log: Path) -> int:
    """Records of runs made elsewhere (their report.json), appended to the log."""
    for path in paths:
        report = json.loads(path.read_text())
        stamp = re.search(r"-(\d{8})-(\d{4})\d{2}-", str(report.get("run_id", "")))
        date = "?"
        if stamp:
            day, hm = stamp.groups()
            date = f"{day[:4]}-{day[4:6]}-{day[6:]} {hm[:2]}:{hm[2:]} UTC"
        record = records.record_from_report(report, records.settings_of(report), date, "")
        records.append(log, record)
        print(f"{record['op']}: added from {path} ({date}, {record['device']})")
    return 0


def _write_report(
    out: Path,
    lines: list[str],
    results: list[dict],
    skipped: list[str],
    started: float | None = None,
    skipped_as: str = "ops not reached within --time-limit",
) -> None:
    rows = [row for r in results for row in records.case_rows(r)]
    wall = None if started is None else time.perf_counter() - started
    tail = records.summary_lines(results, skipped, wall, skipped_as)
    text = lines + records.CASE_HEADER + rows + tail + records.targets_lines(results)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(text) + "\n")
    print("\n".join(tail + records.targets_lines(results)), flush=True)


def _ops(results: list[dict]) -> set[str]:
    return {r["op"] for r in results}


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _tree() -> str:
    """The commit the tree was at, and how many paths differ (the device's copy may carry an
    older .git than its files)."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                              capture_output=True, text=True, timeout=30).stdout.strip()  # fmt: skip
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True,
                               text=True, timeout=30).stdout.splitlines()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return ""
    return f"{head} (+{len(dirty)} paths)" if head else ""


def header(command: str, torch) -> list[str]:
    import triton

    try:
        driver = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        driver = "unknown"
    return [
        "# kbot optimize: serving-op suite",
        "",
        f"- date: {_now()}",
        f"- GPU: {torch.cuda.get_device_name()} (driver {driver}, CUDA {torch.version.cuda})",
        f"- torch {torch.__version__}, Triton {triton.__version__}, Python {platform.python_version()}",
        f"- command: `{command}`",
        "",
    ]


def report_notes(report_json: Path | None) -> list[str]:
    """The run report's notes (where its time went, why a proposer gave nothing), whole: the
    summary row cuts the message at 160 characters."""
    if report_json is None or not Path(report_json).is_file():
        return []
    return [str(n) for n in json.loads(Path(report_json).read_text()).get("notes", [])]


def first_accepted_s(report_json: Path | None) -> float | None:
    """Seconds from the run's start to its first accepted candidate, if the report records it."""
    if report_json is None or not report_json.is_file():
        return None
    report = json.loads(report_json.read_text())
    value = report.get("first_accepted_s")
    return float(value) if isinstance(value, (int, float)) else None


def winner_lineage(report_json: Path | None) -> str:
    """The proposers that made the winner, oldest first (e.g. "inductor > tune")."""
    if report_json is None or not report_json.is_file():
        return "–"
    report = json.loads(report_json.read_text())
    chain = report.get("lineage") or []
    names = [str(step.get("proposer", "?")) for step in chain if isinstance(step, dict)][::-1]
    if not names and isinstance(report.get("winner"), dict):
        names = [str(report["winner"].get("proposer", "?"))]
    return " > ".join(names) or "–"


def rejections(report_md: Path | None) -> str:
    """The report's rejection table, so a GPU log says why an op has no winner."""
    if report_md is None or not report_md.is_file():
        return "(no report)"
    text = report_md.read_text()
    start = text.find("## Most common rejections")
    return text[start:].split("\n## ", 2)[0][:3000] if start >= 0 else "(no rejections recorded)"


if __name__ == "__main__":
    raise SystemExit(main())
