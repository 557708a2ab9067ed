"""The pure half of bench/multi_gpu.py (issue 19): what a run's own records say, the 2-GPU /
1-GPU ratios, whether two winners agree within the noise floor, and the pinning, same-kernel
and fault checks (bench/multi_gpu_markdown.py renders them). Nothing here starts a process or
needs a GPU, so tests/bench runs it on a CPU.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from dataclasses import dataclass, field
from typing import Any

TARGET_RATIO = 1.8  # evaluations per minute with two GPUs over one (the target)
MEDIAN_MATCH_PCT = 2.0  # the same kernel's median on GPU 0 and GPU 1 (the target)
PLACEMENT_MARK = "kbot-placement"


# --- 1. kbot optimize with --gpus 0,1 and --gpus 0 ----------------------------------------


@dataclass(frozen=True)
class CaseMedian:
    label: str
    median_us: float | None  # the winner's CUDA-graph median; None when not timed
    spread: float | None  # IQR / median of those samples (kbot's noise floor for comparisons)


@dataclass(frozen=True)
class RunFacts:
    """One `kbot optimize` run, from its envelope, report.json and progress lines."""

    problem: str
    gpus: str  # as passed to --gpus
    exit_code: int
    status: str
    stop_reason: str
    evaluations: int  # the search loop's fresh evaluator calls (report counts.fresh_evaluations)
    # seconds on the loop's clock (started after the evaluator's preparation) at its last verdict
    loop_wall_s: float | None
    # the run's start to its first generation: the sweep's sizes, workers, reference, baselines
    prepare_s: float | None
    seed: int | None  # the search's seed (OptimizeOptions.seed) as report.json records it
    winner_sha256: str | None = None
    winner_speedup: float | None = None
    winner_baseline: str | None = None
    cases: tuple[CaseMedian, ...] = ()
    error: str = ""

    @property
    def evaluations_per_min(self) -> float | None:
        return per_minute(self.evaluations, self.loop_wall_s)

    @property
    def noise(self) -> float | None:
        """The winner's noise floor as kbot's fitness takes it: the largest spread of its cases."""
        spreads = [c.spread for c in self.cases if c.spread is not None and math.isfinite(c.spread)]
        return max(spreads) if spreads else None


def per_minute(count: int, wall_s: float | None) -> float | None:
    if wall_s is None or wall_s <= 0:
        return None
    return 60.0 * count / wall_s


def progress_facts(lines: list[str]) -> tuple[float | None, float | None]:
    """(loop wall s, preparation s) from `kbot optimize --json`'s progress lines: the last
    verdict's `elapsed_s` (the loop's clock), and the first generation's time less the start's."""
    loop_wall_s = started = first_generation = None
    for line in lines:
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue  # a warning printed between the events
        if not isinstance(event, dict):
            continue
        kind = event.get("event")
        if kind == "verdict" and isinstance(event.get("elapsed_s"), (int, float)):
            loop_wall_s = max(loop_wall_s or 0.0, float(event["elapsed_s"]))
        elif kind == "started" and started is None:
            started = event.get("t")
        elif kind == "generation" and first_generation is None:
            first_generation = event.get("t")
    prepare_s = None
    if isinstance(started, (int, float)) and isinstance(first_generation, (int, float)):
        prepare_s = float(first_generation) - float(started)
    return loop_wall_s, prepare_s


def run_facts(
    problem: str,
    gpus: str,
    exit_code: int,
    envelope: dict[str, Any] | None,
    report: dict[str, Any] | None,
    progress_lines: list[str],
) -> RunFacts:
    loop_wall_s, prepare_s = progress_facts(progress_lines)
    data = (envelope or {}).get("data") or {}
    if report is None:
        why = (envelope or {}).get("error") or data.get("message") or "no report.json"
        return RunFacts(
            problem,
            gpus,
            exit_code,
            str(data.get("status", "error")),
            str(data.get("stop_reason", "")),
            int(data.get("fresh_evaluations") or 0),
            loop_wall_s,
            prepare_s,
            None,
            error=str(why)[:300],
        )
    winner = report.get("winner") or {}
    cases = tuple(_case_median(row) for row in report.get("cases") or ())
    return RunFacts(
        problem=problem,
        gpus=gpus,
        exit_code=exit_code,
        status=str(report.get("status", "")),
        stop_reason=str(report.get("stop_reason", "")),
        evaluations=int((report.get("counts") or {}).get("fresh_evaluations") or 0),
        loop_wall_s=loop_wall_s,
        prepare_s=prepare_s,
        seed=(report.get("options") or {}).get("seed"),
        winner_sha256=winner.get("sha256"),
        winner_speedup=winner.get("speedup"),
        winner_baseline=winner.get("baseline"),
        cases=cases,
    )


def _case_median(row: dict[str, Any]) -> CaseMedian:
    timing = row.get("timing")
    graph = timing.get("candidate_graph") if isinstance(timing, dict) else None
    if not isinstance(graph, dict) or not graph.get("median_us"):
        return CaseMedian(str(row.get("label", "?")), None, None)
    median, iqr = float(graph["median_us"]), float(graph.get("iqr_us") or 0.0)
    return CaseMedian(str(row.get("label", "?")), median, iqr / median)


@dataclass(frozen=True)
class Agreement:
    agree: bool | None  # None: nothing to compare
    why: str


def winners_agree(two: RunFacts, one: RunFacts) -> Agreement:
    """The same winner, or winners neither of which beats the other above the noise floor by
    kbot's own rule (kbot.search.fitness.Fitness.beats: speedups over each run's baseline,
    the floor the larger of the two winners' spreads)."""
    if two.winner_sha256 is None or one.winner_sha256 is None:
        if two.winner_sha256 is None and one.winner_sha256 is None:
            return Agreement(None, "neither run has a winner")
        return Agreement(False, "only one of the runs has a winner")
    if two.winner_sha256 == one.winner_sha256:
        return Agreement(True, "the same candidate")
    if two.winner_speedup is None or one.winner_speedup is None:
        return Agreement(None, "different candidates, not timed: nothing to compare")
    if two.winner_baseline != one.winner_baseline:
        return Agreement(
            None,
            f"speedups over different baselines ({two.winner_baseline}, {one.winner_baseline})",
        )
    floor = max(two.noise or 0.0, one.noise or 0.0)
    gap = abs(two.winner_speedup / one.winner_speedup - 1.0)
    agree = gap <= floor
    return Agreement(
        agree,
        f"different candidates: {two.winner_speedup:.3f}x vs {one.winner_speedup:.3f}x, "
        f"{100 * gap:.1f}% apart, noise floor {100 * floor:.1f}%",
    )


@dataclass(frozen=True)
class OpComparison:
    problem: str
    two: RunFacts | None
    one: RunFacts | None

    @property
    def ratio(self) -> float | None:
        """Evaluations per minute with two GPUs over one."""
        if self.two is None or self.one is None:
            return None
        a, b = self.two.evaluations_per_min, self.one.evaluations_per_min
        return a / b if a is not None and b else None

    @property
    def agreement(self) -> Agreement:
        if self.two is None or self.one is None:
            return Agreement(None, "one of the runs was not made")
        return winners_agree(self.two, self.one)


# --- 2. pinning, checked from inside each worker -------------------------------------------


@dataclass(frozen=True)
class Placement:
    """One worker of the pool: what its judge reported (WorkerInfo.placement) and what a
    candidate's process printed (the probe's line), beside the GPU the pool was given."""

    gpu: int
    judge: dict[str, str]
    candidate: dict[str, str] | None  # None: no probe ran on this worker


def parse_placement(output: str) -> dict[str, str] | None:
    """The probe's `kbot-placement key=value ...` line from a verdict's worker_output."""
    for line in output.splitlines():
        if line.startswith(PLACEMENT_MARK):
            return dict(re.findall(r"(\w+)=(\S+)", line))
    return None


def same_uuid(a: str | None, b: str | None) -> bool:
    """UUIDs as torch prints them ("5f2b...") and as nvidia-smi does ("GPU-5f2b...")."""
    if not a or not b:
        return False
    return a.lower().removeprefix("gpu-") == b.lower().removeprefix("gpu-")


def pinning_problems(placements: list[Placement], expected_uuid: dict[int, str]) -> list[str]:
    """Everything that says a worker is not alone on its own GPU; [] when pinned."""
    found = []
    for p in placements:
        judge, tag = p.judge, f"worker --gpus {p.gpu}"
        if judge.get("visible_devices") != str(p.gpu):
            found.append(
                f"{tag}: its judge sees CUDA_VISIBLE_DEVICES={judge.get('visible_devices')}"
            )
        if "error" in judge:
            found.append(f"{tag}: its judge could not say where it runs: {judge['error']}")
        elif judge.get("current_device") != "0" or judge.get("device_count") != "1":
            found.append(
                f"{tag}: its judge's current device {judge.get('current_device')} of "
                f"{judge.get('device_count')} visible, not 0 of 1"
            )
        if p.gpu in expected_uuid and not same_uuid(judge.get("uuid"), expected_uuid[p.gpu]):
            found.append(
                f"{tag}: its judge runs on {judge.get('uuid')}, GPU {p.gpu} is "
                f"{expected_uuid[p.gpu]}"
            )
        if p.candidate is None:
            found.append(f"{tag}: no candidate's process reported its device")
        elif "error" in p.candidate:
            found.append(f"{tag}: the probe printed nothing: {p.candidate['error']}")
        elif p.candidate.get("device") != "cuda:0" or p.candidate.get("count") != "1":
            found.append(
                f"{tag}: a candidate's process ran on {p.candidate.get('device')} of "
                f"{p.candidate.get('count')} visible"
            )
        elif not same_uuid(p.candidate.get("uuid"), judge.get("uuid")):
            found.append(
                f"{tag}: a candidate's process ran on {p.candidate.get('uuid')}, its "
                f"judge on {judge.get('uuid')}"
            )
    uuids = [p.judge.get("uuid") for p in placements]
    if len({(u or "").lower() for u in uuids}) != len(uuids):
        found.append(f"workers share a GPU: {', '.join(str(u) for u in uuids)}")
    return found


# --- 3. the same kernel on GPU 0 and GPU 1 -------------------------------------------------


@dataclass(frozen=True)
class PairCase:
    label: str
    medians_us: dict[int, list[float]]  # GPU -> the kernel's CUDA-graph median in each round
    spreads: dict[int, list[float]] = field(default_factory=dict)  # GPU -> IQR/median per round
    half_width_pct: float | None = None  # the larger 95% half-width of one median, in % of it

    def median_us(self, gpu: int) -> float | None:
        return _middle(self.medians_us.get(gpu))

    def spread(self, gpu: int) -> float | None:
        return _middle(self.spreads.get(gpu))

    def difference_pct(self, first: int = 0, second: int = 1) -> float | None:
        a, b = self.median_us(first), self.median_us(second)
        return None if not a or b is None else 100.0 * (b / a - 1.0)


def _middle(values: list[float] | None) -> float | None:
    return statistics.median(values) if values else None


def largest_difference_pct(cases: list[PairCase]) -> float | None:
    values = [abs(d) for d in (c.difference_pct() for c in cases) if d is not None]
    return max(values) if values else None


# --- 4. faults on one GPU ------------------------------------------------------------------

FAULT_ROLES = ("good", "crash", "hang", "judge-kill")


@dataclass(frozen=True)
class FaultRow:
    index: int
    role: str  # FAULT_ROLES
    gpu: int | None  # the worker's GPU (None on a CPU pool: its position there)
    worker: int  # the pool's worker, by position
    accepted: bool
    rule: str  # the first reason's rule; "" when accepted
    message: str
    started_s: float  # from the batch's start
    ended_s: float
    timed: bool
    median_us: float | None = None  # the largest case's CUDA-graph median
    spread: float | None = None
    clean_median_us: float | None = None  # the same kernel, same GPU, in part 3
    clean_spread: float | None = None
    judge_killed: bool = False  # its judge was killed while it was checked (judge-kill)

    @property
    def lost(self) -> bool:
        return not self.accepted

    @property
    def drift_pct(self) -> float | None:
        if self.median_us is None or not self.clean_median_us:
            return None
        return 100.0 * (self.median_us / self.clean_median_us - 1.0)

    @property
    def undisturbed(self) -> bool | None:
        """Within the larger spread of the two measurements (evaluator_soak.py's rule)."""
        if self.drift_pct is None or self.spread is None or self.clean_spread is None:
            return None
        return abs(self.drift_pct) <= 100.0 * max(self.spread, self.clean_spread)


@dataclass(frozen=True)
class FaultSummary:
    ok: bool
    findings: list[str] = field(default_factory=list)


def fault_summary(rows: list[FaultRow], timed: bool, respawned: int | None) -> FaultSummary:
    """Only the faulty candidates are lost; every good one is accepted (and timed on a GPU),
    on both workers; a good one beside a fault on the other worker counts as shown."""
    findings = []
    lost_faults = [r for r in rows if r.role != "good" and r.lost]
    findings.append(
        f"{len(lost_faults)} of {sum(r.role != 'good' for r in rows)} faulty candidates lost"
    )
    ok = len(lost_faults) == sum(r.role != "good" for r in rows)
    for row in rows:
        if row.role != "good" and not row.lost:
            findings.append(f"#{row.index} ({row.role}) was accepted: the fault did not happen")
        if row.role == "good" and row.lost:
            ok = False
            findings.append(
                f"#{row.index} (good, worker {row.worker}) was lost: {row.rule}: "
                f"{row.message[:160]}"
            )
        if row.role == "good" and timed and not row.lost and not row.timed:
            ok = False
            findings.append(f"#{row.index} (good, worker {row.worker}) was not timed")
    workers = {r.worker for r in rows}
    if len(workers) < 2:
        ok = False
        findings.append("every candidate ran on one worker: nothing shows the other undisturbed")
    beside = beside_faults(rows)
    findings.append(
        f"{len(beside)} good verdict(s) came from the other worker while a fault ran there"
    )
    if not beside:
        ok = False
    disturbed = [r for r in beside if r.undisturbed is False]
    if disturbed:
        findings.append(
            "slower than in part 3 beyond the noise floor: "
            + ", ".join(f"#{r.index} ({r.drift_pct:+.1f}%)" for r in disturbed)
        )
    for kill in (r for r in rows if r.role == "judge-kill"):
        if not kill.judge_killed:
            findings.append(f"#{kill.index}: its judge was not killed (the job ended first)")
            continue
        after = [
            r
            for r in rows
            if r.worker == kill.worker and r.started_s >= kill.ended_s and r.role == "good"
        ]
        served = sum(1 for r in after if not r.lost)
        findings.append(
            f"#{kill.index}: worker {kill.worker}'s judge killed; that worker then accepted "
            f"{served} of {len(after)} good candidates"
        )
    if respawned is not None:
        findings.append(f"judges started again during the batch: {respawned}")
    return FaultSummary(ok, findings)


def beside_faults(rows: list[FaultRow]) -> list[FaultRow]:
    """The good verdicts one worker gave while a fault ran on the other."""
    return [
        good
        for good in rows
        if good.role == "good"
        and not good.lost
        and any(f.role != "good" and f.worker != good.worker and _overlap(f, good) for f in rows)
    ]


def _overlap(a: FaultRow, b: FaultRow) -> bool:
    return a.started_s < b.ended_s and b.started_s < a.ended_s
