"""bench/multi_gpu.py's markdown (issue 19): the header, one section per part that ran, a line
per part that did not, and the short summary table the script prints last. Pure: tests/bench
renders it on a CPU."""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from multi_gpu_report import (
    MEDIAN_MATCH_PCT,
    TARGET_RATIO,
    FaultRow,
    FaultSummary,
    OpComparison,
    PairCase,
    Placement,
    beside_faults,
    largest_difference_pct,
)


@dataclass(frozen=True)
class Header:
    date: str
    gpus: tuple[str, ...]  # one line per GPU: index, name, PCI address, UUID
    driver: str
    versions: str  # torch, Triton, Python, CUDA
    commit: str
    environment: str  # the multicast switches as set
    command: str


@dataclass(frozen=True)
class Results:
    header: Header
    budget_s: float
    proposers: str
    comparisons: tuple[OpComparison, ...] = ()
    placements: tuple[Placement, ...] = ()
    pinning: tuple[str, ...] | None = None  # what is wrong with the pinning; None: not checked
    pair_problem: str = ""
    pair_cases: tuple[PairCase, ...] = ()
    faults: tuple[FaultRow, ...] = ()
    fault: FaultSummary | None = None
    skipped: tuple[str, ...] = ()  # one line per part not measured, saying why


def _num(value: float | None, digits: int = 1, suffix: str = "") -> str:
    return "–" if value is None or not math.isfinite(value) else f"{value:.{digits}f}{suffix}"


def _yes(value: bool | None) -> str:
    return "–" if value is None else ("yes" if value else "no")


def render(results: Results) -> str:
    h = results.header
    lines = [
        "# kbot's evaluator pool on two GPUs (issue 19)",
        "",
        f"- date: {h.date}",
        *(f"- GPU {g}" for g in h.gpus),
        f"- driver {h.driver}; {h.versions}",
        f"- kbot: {h.commit}",
        f"- environment: {h.environment}",
        f"- command: `{h.command}`",
        "",
        *(f"- not measured: {s}" for s in results.skipped),
    ]
    if results.comparisons:
        lines += ["", *_optimize_section(results)]
    if results.pinning is not None:
        lines += ["", *_pinning_section(results)]
    if results.pair_cases:
        lines += ["", *_pair_section(results)]
    if results.faults:
        lines += ["", *_fault_section(results)]
    lines += ["", "## Summary", "", *summary_table(results)]
    return "\n".join(lines) + "\n"


def _optimize_section(results: Results) -> list[str]:
    lines = [
        "## 1. `kbot optimize` with `--gpus 0,1` and with `--gpus 0`",
        "",
        f"Same budget ({results.budget_s:.0f} s), proposers {results.proposers}, the search's "
        "seed as report.json records it; each run in its own work directory. Evaluations: the "
        "search loop's fresh evaluator calls (report.json `counts.fresh_evaluations`); loop s: the "
        "last verdict's `elapsed_s` on the loop's clock, which starts after the evaluator's "
        "preparation (prepare s: the run's start to its first generation). µs: the winner's "
        "re-measured CUDA-graph median per case.",
        "",
        "| op | --gpus | seed | evaluations | loop s | per min | 2/1 GPUs | prepare s | stop | "
        "winner | speedup | µs per case |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in results.comparisons:
        for run in (c.two, c.one):
            if run is None:
                continue
            ratio = _num(c.ratio, 2, "x") if run is c.two else ""
            winner = (run.winner_sha256 or "–")[:10]
            speedup = _num(run.winner_speedup, 2, f"x {run.winner_baseline or ''}".rstrip())
            medians = " / ".join(_num(m.median_us, 2) for m in run.cases) or "–"
            stop = run.stop_reason + (f" ({run.error})" if run.error else "")
            lines.append(
                f"| {c.problem} | {run.gpus} | {run.seed if run.seed is not None else '–'} | "
                f"{run.evaluations} | {_num(run.loop_wall_s)} | {_num(run.evaluations_per_min)} | "
                f"{ratio} | {_num(run.prepare_s)} | {stop} | {winner} | {speedup} | {medians} |"
            )
    lines += ["", "Winners:", ""]
    for c in results.comparisons:
        agreement = c.agreement
        lines.append(f"- {c.problem}: agree {_yes(agreement.agree)} ({agreement.why})")
    return lines


def _pinning_section(results: Results) -> list[str]:
    lines = [
        "## 2. Each worker on its own GPU, as the worker sees it",
        "",
        "judge: what the worker reported when it started (`WorkerInfo.placement`); candidate: "
        "what a candidate's process of that worker printed (bench/multi_gpu_candidates/probe.py, "
        "read from the verdict's `worker_output`).",
        "",
        "| --gpus | judge CUDA_VISIBLE_DEVICES | judge device | judge UUID | judge PCI | "
        "candidate device | candidate UUID | candidate PCI (domain,bus,device) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in results.placements:
        j, c = p.judge, p.candidate or {}
        lines.append(
            f"| {p.gpu} | {j.get('visible_devices', '–')} | {j.get('current_device', '–')} of "
            f"{j.get('device_count', '–')} | {j.get('uuid', '–')} | {j.get('pci_bus_id', '–')} | "
            f"{c.get('device', '–')} of {c.get('count', '–')} | {c.get('uuid', '–')} | "
            f"{c.get('pci', '–')} |"
        )
    lines += ["", *(f"- {p}" for p in results.pinning or ())]
    if not results.pinning:
        lines.append("- every worker and its candidates' processes ran alone on their own GPU")
    return lines


def _pair_section(results: Results) -> list[str]:
    lines = [
        "## 3. The same kernel on GPU 0 and on GPU 1",
        "",
        f"{results.pair_problem}: one accepted kernel evaluated on both workers at once, round "
        "after round; µs: the median over rounds of the verdicts' CUDA-graph medians. ±: the "
        "larger 95% half-width of one median (1.58 IQR/√n), in % of it.",
        "",
        "| case | GPU 0 µs | GPU 1 µs | rounds | GPU 1 vs GPU 0 | ± |",
        "|---|---|---|---|---|---|",
    ]
    for case in results.pair_cases:
        rounds = min(len(case.medians_us.get(0) or []), len(case.medians_us.get(1) or []))
        lines.append(
            f"| {case.label} | {_num(case.median_us(0), 2)} | {_num(case.median_us(1), 2)} | "
            f"{rounds} | {_num(case.difference_pct(), 2, '%')} | {_num(case.half_width_pct, 2, '%')} |"
        )
    return lines


def _fault_section(results: Results) -> list[str]:
    lines = [
        "## 4. A crash, a hang and a lost judge in the two-worker pool",
        "",
        "One batch over the two-worker pool: good copies of part 3's kernel beside a candidate "
        "whose kernel reads far out of bounds (crash), one that never returns (hang: the "
        "evaluator's timeout), and a good one whose judge process is killed (SIGKILL) while it "
        "checks it (judge-kill). s: from the batch's start. vs part 3: the largest case's median "
        "against the same kernel on the same GPU in part 3.",
        "",
        "| # | role | worker | GPU | verdict | rule | s | µs | vs part 3 | undisturbed |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results.faults:
        verdict = "accepted" if r.accepted else "rejected"
        lines.append(
            f"| {r.index} | {r.role} | {r.worker} | {'–' if r.gpu is None else r.gpu} | "
            f"{verdict} | {r.rule or '–'} | {r.started_s:.1f}–{r.ended_s:.1f} | "
            f"{_num(r.median_us, 2)} | {_num(r.drift_pct, 1, '%')} | {_yes(r.undisturbed)} |"
        )
    lines.append("")
    lines += [f"- {f}" for f in (results.fault.findings if results.fault else [])]
    for r in results.faults:
        if r.role != "good" and r.lost:
            lines.append(f"- #{r.index} {r.role}: {r.rule}: {r.message[:200]}")
    return lines


def summary_table(results: Results) -> list[str]:
    """The short table the script prints last."""
    rows = ["| check | target | measured | met? |", "|---|---|---|---|"]
    for c in results.comparisons:
        rows.append(
            f"| {c.problem}: evaluations/min, 2 GPUs over 1 | >= {TARGET_RATIO}x | "
            f"{_num(c.ratio, 2, 'x')} | {_yes(None if c.ratio is None else c.ratio >= TARGET_RATIO)} |"
        )
        agreement = c.agreement
        rows.append(
            f"| {c.problem}: winners | same, or within noise | {agreement.why} | "
            f"{_yes(agreement.agree)} |"
        )
    if results.pinning is not None:
        rows.append(
            f"| pinning | each worker alone on its GPU | {len(results.placements)} workers, "
            f"{len(results.pinning)} problems | {_yes(not results.pinning)} |"
        )
    if results.pair_cases:
        worst = largest_difference_pct(list(results.pair_cases))
        rows.append(
            f"| same kernel, GPU 1 vs GPU 0 | <= {MEDIAN_MATCH_PCT:.0f}% | largest "
            f"{_num(worst, 2, '%')} over {len(results.pair_cases)} case(s) | "
            f"{_yes(None if worst is None else worst <= MEDIAN_MATCH_PCT)} |"
        )
    if results.fault is not None:
        good = [r for r in results.faults if r.role == "good"]
        kept = sum(1 for r in good if not r.lost)
        lost = sum(1 for r in results.faults if r.role != "good" and r.lost)
        rows.append(
            f"| faults cost only their candidate | only faulty lost | {lost} of "
            f"{len(results.faults) - len(good)} faulty lost, {kept} of {len(good)} good "
            f"accepted | {_yes(results.fault.ok)} |"
        )
        compared = [r for r in beside_faults(list(results.faults)) if r.undisturbed is not None]
        if compared:
            steady = sum(1 for r in compared if r.undisturbed)
            rows.append(
                f"| the other worker's timings beside a fault | within noise of part 3 | "
                f"{steady} of {len(compared)} | {_yes(steady == len(compared))} |"
            )
    for line in results.skipped:
        rows.append(f"| {line.split(':', 1)[0]} | | not measured | – |")
    return rows


def results_json(results: Results) -> dict:
    """--json: the records as they are, with what the markdown derives from them."""
    data = asdict(results)
    data["comparisons"] = [_comparison_json(c) for c in results.comparisons]
    data["pair_cases"] = [
        {
            **asdict(c),
            "median_us": {g: c.median_us(g) for g in (0, 1)},
            "difference_pct": c.difference_pct(),
        }
        for c in results.pair_cases
    ]
    data["faults"] = [
        {**asdict(r), "drift_pct": r.drift_pct, "undisturbed": r.undisturbed}
        for r in results.faults
    ]
    data["targets"] = {"ratio": TARGET_RATIO, "median_match_pct": MEDIAN_MATCH_PCT}
    return data


def _comparison_json(c: OpComparison) -> dict:
    runs = {}
    for key, run in (("two_gpus", c.two), ("one_gpu", c.one)):
        runs[key] = (
            None
            if run is None
            else {**asdict(run), "evaluations_per_min": run.evaluations_per_min, "noise": run.noise}
        )
    return {"problem": c.problem, **runs, "ratio": c.ratio, "agreement": asdict(c.agreement)}
