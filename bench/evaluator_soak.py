"""Evaluator soak (issue 13): a shuffled stream of candidates over many problems through ONE
evaluator (one worker pool): honest kernels, the cheat families of docs/evaluator.md (the red
team included) and faults (kernels that hang, read out of bounds, hit an illegal address or a
device-side assert, exhaust GPU memory, crash their process). Each verdict is held against the
verdict the candidate must get (bench/soak/catalog.py says where each expectation comes from);
a fixed honest candidate (the probe) is timed first, after every fault and last, so the report
shows whether the evaluations after a fault were unaffected.

    python bench/evaluator_soak.py --out $OUT/soak.md --log $OUT/soak.jsonl     # H200, ~6 min
    python bench/evaluator_soak.py --device cpu --smoke --out /tmp/soak.md     # CPU, ~1-2 min

Every verdict is appended to --log as it lands and the report is rewritten after each one, so
a run killed from outside still leaves both; --resume continues a log (same seed, same
stream). --time-limit stops the run cleanly: the evaluation in flight is abandoned (the
evaluator closed, its processes killed) and the report says what was not reached.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import os
import platform
import secrets
import shlex
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.soak import catalog  # noqa: E402
from bench.soak.report import CaseTime, Record, render  # noqa: E402
from kbot.evaluate import EvalOptions, Evaluator  # noqa: E402
from kbot.evaluate.static import check_source, problem_dtype_hint  # noqa: E402
from kbot.problem import load_problem  # noqa: E402
from kbot.search.inflight import Abandoned, call_bounded  # noqa: E402

# Where the evaluator looks up its static rules (as tests/evaluate/test_redteam.py switches
# them off): only for --static-off entries, only for their own evaluation.
STATIC_MODULE = "kbot.evaluate.evaluator"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    parser.add_argument("--smoke", action="store_true", help="a handful of candidates (CPU)")
    parser.add_argument("--out", type=Path, help="the Markdown report (also printed)")
    parser.add_argument("--log", type=Path, help="JSON lines: one record per verdict")
    parser.add_argument("--resume", action="store_true", help="continue --log where it stopped")
    parser.add_argument("--seed", type=int, help="the stream's shuffle (default: drawn, logged)")
    parser.add_argument("--time-limit", type=float, help="seconds for the whole run")
    parser.add_argument("--timeout", type=float, help="EvalOptions.timeout_s per candidate")
    parser.add_argument("--timing-budget", type=float, default=0.2, help="s per case (GPU)")
    parser.add_argument("--only", default="", help="comma-separated parts of candidate ids")
    parser.add_argument(
        "--static-off",
        default="",
        help="red-team classes (judge,seed,...) run a second time with the static rules off",
    )
    args = parser.parse_args(argv)
    if args.resume and (args.log is None or not args.log.is_file()):
        parser.error("--resume needs an existing --log")
    cpu = args.device == "cpu"
    # A hang costs the whole timeout; honest candidates here need 1-3 s (GPU), 2-5 s (CPU).
    args.timeout = args.timeout or (30.0 if cpu else 15.0)
    args.time_limit = args.time_limit or (600.0 if cpu else 450.0)
    return args


def environment(device: str, versions: dict[str, str], sandbox: str) -> dict[str, str]:
    import torch
    import triton

    found = {
        "gpu": "none (CPU, Triton interpreter)",
        "driver": "",
        "cuda": "",
        "torch": versions.get("torch", torch.__version__),
        "triton": versions.get("triton", triton.__version__),
        "python": versions.get("python", platform.python_version()),
        "sandbox": sandbox,
    }
    if device == "cuda":
        found["cuda"] = versions.get("cuda", str(torch.version.cuda))
        try:
            query = ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]
            line = subprocess.run(query, capture_output=True, text=True, timeout=30).stdout
            name, _, driver = line.splitlines()[0].partition(",")
            found["gpu"], found["driver"] = name.strip(), driver.strip()
        except (OSError, subprocess.SubprocessError, IndexError):
            found["gpu"] = "unknown (nvidia-smi failed)"
    return found


def header(env: dict[str, str], args, seed: int, entries, options: EvalOptions) -> list[str]:
    kinds: dict[str, int] = {}
    for entry in entries:
        kinds[entry.kind] = kinds.get(entry.kind, 0) + 1
    gpu = (
        env["gpu"]
        if not env["driver"]
        else f"{env['gpu']} (driver {env['driver']}, CUDA {env['cuda']})"
    )
    return [
        "# kbot evaluator soak",
        "",
        f"- date: {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M UTC}",
        f"- GPU: {gpu}",
        f"- torch {env['torch']}, Triton {env['triton']}, Python {env['python']}; "
        f"{os.cpu_count()} CPU cores, {platform.machine()}",
        f"- command: `{Path(sys.executable).name} {shlex.join(sys.argv)}`",
        f"- stream: seed {seed}, {len(entries)} candidates over "
        f"{len({e.problem for e in entries})} problems ("
        + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        + "), one Evaluator",
        f"- options: device {options.device}, seeds {options.seeds}, timeout_s {options.timeout_s:g}, "
        f"timing_budget_s {options.timing_budget_s:g}, compile baselines off; candidates' "
        f"processes: {env['sandbox']}",
    ]


@contextmanager
def static_rules(off: bool):
    if not off:
        yield
        return
    import importlib

    module = importlib.import_module(STATIC_MODULE)
    saved = module.check_source
    module.check_source = lambda *args, **kwargs: ()
    try:
        yield
    finally:
        module.check_source = saved


def runs_code(entry: catalog.Entry) -> bool:
    """Whether the candidate gets past the static rules (a probe after it is worth its time)."""
    if entry.static_off:
        return True
    spec = load_problem(entry.problem)
    source = entry.candidate.read_text(encoding="utf-8")
    return not check_source(source, spec.options, problem_dtype_hint(spec.source))


def evaluate(evaluator: Evaluator, entry: catalog.Entry, deadline: float, stop) -> object:
    """One candidate through the shared evaluator; past `deadline` or on a stop the evaluator
    is closed (its judge and candidate processes killed) and Abandoned raised."""
    spec = load_problem(entry.problem)
    if entry.cases is not None:
        spec = replace(spec, cases=entry.cases)
    source = entry.candidate.read_text(encoding="utf-8")
    call = functools.partial(evaluator.evaluate, spec, source, entry.candidate.name)
    with static_rules(entry.static_off):
        return call_bounded(call, deadline, stop.is_set, evaluator.close)


def case_times(verdict) -> tuple[CaseTime, ...]:
    times = []
    for result in verdict.cases:
        t = result.timing
        if t is None:
            continue
        case = ", ".join(f"{k}={v}" for k, v in result.case.items()) or "(default)"
        times.append(
            CaseTime(
                case,
                t.candidate_graph.median_us,
                t.candidate_graph.iqr_us,
                t.candidate_graph.runs,
                t.candidate_plain.median_us,
                t.eager_graph.median_us,
            )
        )
    return tuple(times)


def record_of(
    index: int, entry, verdict, wall_s: float, starts: int, after: str, run: int, at_s: float
) -> Record:
    rejected = not verdict.accepted
    rules = tuple(dict.fromkeys(r.rule for r in verdict.reasons)) if rejected else ()
    message = verdict.reasons[0].message if rejected and verdict.reasons else ""
    return Record(
        index,
        entry.id,
        entry.kind,
        entry.family,
        entry.problem_name,
        entry.expect,
        entry.rules,
        bool(verdict.accepted),
        str(getattr(verdict.stage, "value", verdict.stage)),
        rules,
        message[:400],
        round(wall_s, 2),
        starts,
        after,
        case_times(verdict) if entry.kind == "probe" else (),
        run,
        round(at_s, 1),
    )


def not_run(index: int, entry, why: str, after: str, run: int) -> Record:
    return Record(
        index, entry.id, entry.kind, entry.family, entry.problem_name, entry.expect,
        entry.rules, None, "", (), why, 0.0, 0, after, (), run,
    )  # fmt: skip


def read_log(path: Path) -> tuple[dict, dict[int, Record], int]:
    first, done, runs = None, {}, 0
    for line in path.read_text(encoding="utf-8").splitlines():
        data = json.loads(line)
        if data.get("type") == "run":
            first = first or data
            runs += 1
        elif data.get("type") == "verdict" and data.get("accepted") is not None:
            done[data["index"]] = Record.from_json(data)
    if first is None:
        raise SystemExit(f"soak: {path} has no run record to resume from")
    return first, done, runs


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    deadline = started + args.time_limit
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    done: dict[int, Record] = {}
    earlier_runs = 0
    seed = args.seed if args.seed is not None else secrets.randbelow(2**31)
    if args.resume:
        first, done, earlier_runs = read_log(args.log)
        if first["device"] != args.device:
            raise SystemExit(f"soak: the log was written with --device {first['device']}")
        seed = first["seed"]
    only = tuple(o for o in args.only.split(",") if o)
    static_off = frozenset(c for c in args.static_off.split(",") if c)
    entries = catalog.stream(args.device, seed, args.smoke, only, static_off, runs_code)
    options = EvalOptions(
        device=args.device,
        timeout_s=args.timeout,
        compile_baselines=False,
        timing_budget_s=args.timing_budget,
    )
    run = earlier_runs  # 0 for a fresh log
    log = None
    if args.log is not None:
        args.log.parent.mkdir(parents=True, exist_ok=True)
        log = args.log.open("a" if args.resume else "w", encoding="utf-8")
        head = {"type": "run", "run": run, "device": args.device, "seed": seed, "argv": sys.argv}
        log.write(json.dumps(head) + "\n")
        log.flush()
    records: list[Record] = []
    evaluator = Evaluator(options)
    confined = evaluator.sandbox.confined
    sandbox = (
        "fresh, in namespaces" if confined else f"fresh, NOT sandboxed ({evaluator.sandbox.why})"
    )
    versions: dict[str, str] = {}
    env = environment(args.device, versions, sandbox)

    def write_report() -> str:
        text = render(
            header(env, args, seed, entries, options),
            records,
            run,
            time.monotonic() - started,
            len(entries),
        )
        if args.out is not None:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            scratch = args.out.with_name(args.out.name + ".part")
            scratch.write_text(text, encoding="utf-8")
            scratch.replace(args.out)
        return text

    stopped_why = ""
    try:
        for index, entry in enumerate(entries):
            after = entries[index - 1].id if entry.kind == "probe" and index else "start"
            if index in done and done[index].id == entry.id:
                records.append(done[index])
                continue
            record = None
            if stopped_why:
                record = not_run(index, entry, stopped_why, after, run)
            elif entry.static_off and not confined:
                why = "no sandbox here: not run without the static rules"
                record = not_run(index, entry, why, after, run)
            if record is None:
                spawned = evaluator.workers_spawned
                began = time.monotonic()
                try:
                    verdict = evaluate(evaluator, entry, deadline, stop)
                except Abandoned as abandoned:
                    stopped_why = "--time-limit reached" if abandoned.why == "time" else "stopped"
                    record = not_run(index, entry, f"{stopped_why} while it ran", after, run)
                else:
                    if not versions and verdict.versions:
                        versions.update(verdict.versions)
                        env = environment(args.device, versions, sandbox)
                    wall = time.monotonic() - began
                    starts = evaluator.workers_spawned - spawned
                    at_s = time.monotonic() - started
                    record = record_of(index, entry, verdict, wall, starts, after, run, at_s)
            records.append(record)
            if log is not None:
                log.write(json.dumps(record.to_json()) + "\n")
                log.flush()
            if record.accepted is not None:
                print(
                    f"[{index + 1}/{len(entries)}] {entry.id}: {record.got[:120]} -> "
                    f"{record.outcome} ({record.wall_s:.1f} s)",
                    file=sys.stderr,
                    flush=True,
                )
            write_report()
    finally:
        evaluator.close()
        if log is not None:
            log.close()
    print(write_report())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
