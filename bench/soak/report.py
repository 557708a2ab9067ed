"""The soak's records (one per candidate, one JSON line each in the log) and the Markdown
report built from them: the verdicts against what each candidate must get, what each fault
cost, the judge's restarts, and the probe's medians after every fault."""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass, field
from typing import Any

EVALUATOR_FAILURE_RULES = frozenset({"evaluator-error", "worker"})  # kbot.evaluate.verdict's


@dataclass(frozen=True)
class CaseTime:
    case: str
    graph_median_us: float
    graph_iqr_us: float
    graph_runs: int
    plain_median_us: float
    eager_graph_median_us: float

    @property
    def spread(self) -> float:
        """IQR / median: what kbot.evaluate.Stat calls the noise floor."""
        return self.graph_iqr_us / self.graph_median_us if self.graph_median_us > 0 else math.inf


@dataclass(frozen=True)
class Record:
    index: int
    id: str
    kind: str
    family: str
    problem: str
    expect: str
    expected_rules: tuple[str, ...]
    accepted: bool | None  # None: not evaluated (the time limit, a stop)
    stage: str
    rules: tuple[str, ...]
    message: str
    wall_s: float
    judge_starts: int  # judge processes started during this evaluation (the first one included)
    after: str = ""  # for a probe: the candidate right before it
    times: tuple[CaseTime, ...] = field(default_factory=tuple)
    run: int = 0  # which invocation evaluated it (a resumed log holds several)
    at_s: float = 0.0  # seconds from that invocation's start to this verdict

    @property
    def outcome(self) -> str:
        if self.accepted is None:
            return "not run"
        if self.expect == "either":
            return "ok (either)"
        if self.expect == "accepted":
            return "ok" if self.accepted else "FALSE REJECT"
        if self.accepted:
            return "FALSE ACCEPT"
        if set(self.rules) & EVALUATOR_FAILURE_RULES:
            return "evaluator-error"
        if self.expected_rules and not set(self.rules) & set(self.expected_rules):
            return "other rule"
        return "ok"

    @property
    def got(self) -> str:
        if self.accepted is None:
            return f"not run ({self.message})"
        if self.accepted:
            return "accepted"
        return f"rejected ({', '.join(self.rules) or 'no rule'}; {self.stage})"

    def to_json(self) -> dict[str, Any]:
        return {"type": "verdict", **asdict(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Record:
        data = {k: v for k, v in data.items() if k != "type"}
        data["expected_rules"] = tuple(data["expected_rules"])
        data["rules"] = tuple(data["rules"])
        data["times"] = tuple(CaseTime(**t) for t in data.get("times", ()))
        return cls(**data)


def _counts(records: list[Record]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        counts[record.outcome] = counts.get(record.outcome, 0) + 1
    return counts


def summary(records: list[Record], run: int, run_s: float, planned: int) -> str:
    """`run`: this invocation's number; `run_s`: its wall so far. Earlier invocations of a
    resumed log count up to their last verdict."""
    ran = [r for r in records if r.accepted is not None]
    counts = _counts(records)
    # A pool of one judge: the first start of each invocation is no restart.
    runs = {r.run for r in ran}
    restarts = max(0, sum(r.judge_starts for r in ran) - len(runs))
    earlier: dict[int, float] = {}
    for r in ran:
        if r.run != run:
            earlier[r.run] = max(earlier.get(r.run, 0.0), r.at_s)
    total_s = run_s + sum(earlier.values())
    resumed = f" ({len(earlier)} earlier runs resumed)" if earlier else ""
    problems = len({r.problem for r in ran})
    failures = sum(1 for r in ran if set(r.rules) & EVALUATOR_FAILURE_RULES)
    not_slower, compared, both_ways = probe_agreement(records)
    probes = (
        f"the probe no slower than its first beyond the noise floor in {not_slower} of "
        f"{compared} later measurements (within it both ways in {both_ways})"
        if compared
        else "the probe not timed"
    )
    return (
        f"**{len(ran)} candidates evaluated** of {planned} in the stream, over {problems} "
        f"problems: {counts.get('FALSE ACCEPT', 0)} false accepts, "
        f"{counts.get('FALSE REJECT', 0)} false rejects, {counts.get('other rule', 0)} "
        f"rejected by another rule than expected, {failures} verdicts naming the evaluator's "
        f"own failure; judge restarts: {restarts}; {probes}; total wall {total_s:.0f} s{resumed}."
    )


def _cell(text: str, limit: int = 140) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def verdict_table(records: list[Record]) -> list[str]:
    lines = [
        "| # | candidate | kind | family | expected | got | outcome | wall s | judge starts |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in records:
        expected = (
            r.expect if not r.expected_rules else f"{r.expect} ({', '.join(r.expected_rules)})"
        )
        mark = r.outcome if r.outcome.startswith("ok") else f"**{r.outcome}**"
        lines.append(
            f"| {r.index} | {r.id} | {r.kind} | {_cell(r.family, 40)} | {expected} | "
            f"{_cell(r.got)} | {mark} | {r.wall_s:.1f} | {r.judge_starts} |"
        )
    return lines


def _honest_wall_s(records: list[Record]) -> float:
    walls = [r.wall_s for r in records if r.kind == "honest" and r.accepted]
    return statistics.median(walls) if walls else math.nan


def fault_table(records: list[Record]) -> list[str]:
    honest_s = _honest_wall_s(records)
    said = "–" if math.isnan(honest_s) else f"{honest_s:.1f} s"
    lines = [
        f"Median wall of an accepted honest candidate: {said} (each runs in a fresh "
        "sandboxed process; process start, Triton compilation and timing included).",
        "",
        "| fault | family | got | what it said | wall s | vs an honest one | judge starts |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        if r.kind != "fault" or r.accepted is None:
            continue
        extra = "–" if math.isnan(honest_s) else f"{r.wall_s - honest_s:+.1f} s"
        lines.append(
            f"| {r.id} | {r.family} | {_cell(r.got, 60)} | {_cell(r.message, 120)} | "
            f"{r.wall_s:.1f} | {extra} | {r.judge_starts} |"
        )
    return lines


def _probe_rows(records: list[Record]):
    """(probe record, its case time, the first probe's time of that case in the same
    invocation) in stream order: a resumed log's later invocations may run on another machine,
    whose times are not comparable with the first one's."""
    first: dict[tuple[int, str], CaseTime] = {}
    for r in records:
        if r.kind != "probe" or r.accepted is None:
            continue
        for t in r.times:
            yield r, t, first.setdefault((r.run, t.case), t)


def _within(t: CaseTime, base: CaseTime) -> tuple[float, float, bool]:
    """Δ of the median against the first, the noise floor, and whether the probe is no slower
    than its first beyond that floor: what a fault could leave behind (a kernel still spinning,
    a GPU in a bad state, memory held) slows the next evaluations; a faster median is drift
    between two separate measurements, which the evaluator never compares (it times a
    candidate interleaved with its baselines)."""
    delta = t.graph_median_us / base.graph_median_us - 1
    floor = max(t.spread, base.spread)
    return delta, floor, delta <= floor + 1e-9


def probe_agreement(records: list[Record]) -> tuple[int, int, int]:
    """Of the probe's later medians: how many are no slower than its first beyond the noise
    floor, how many were compared, and how many of them lie within the floor both ways."""
    rows = [_within(t, base) for _, t, base in _probe_rows(records) if t is not base]
    both_ways = sum(1 for delta, floor, _ in rows if abs(delta) <= floor + 1e-9)
    return sum(ok for _, _, ok in rows), len(rows), both_ways


def probe_table(records: list[Record]) -> list[str]:
    probes = [r for r in records if r.kind == "probe" and r.accepted is not None]
    if not any(r.times for r in probes):
        verdicts = ", ".join(f"#{r.index} {r.outcome}" for r in probes)
        return [f"Not timed (no GPU): the probe's verdicts only: {verdicts or 'none'}."]
    lines = [
        "| probe | after | case | graph median µs (IQR/median, runs) | Δ vs first | noise floor | "
        "unaffected | plain µs | eager graph µs |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    rows = list(_probe_rows(records))
    for r in probes:
        if not r.times:
            lines.append(
                f"| #{r.index} | {_cell(r.after, 60)} | – | {_cell(r.got, 80)} | | | | | |"
            )
            continue
        for _, t, base in (row for row in rows if row[0] is r):
            delta, floor, ok = _within(t, base)
            if t is base:
                within = "first" if r.run == 0 else f"first of run {r.run} (resumed)"
            elif not ok:
                within = "**slower**"
            else:
                within = "yes" if abs(delta) <= floor + 1e-9 else "yes (faster)"
            lines.append(
                f"| #{r.index} | {_cell(r.after, 60)} | {t.case} | {t.graph_median_us:.2f} "
                f"({100 * t.spread:.1f}%, {t.graph_runs}) | {100 * delta:+.1f}% | "
                f"±{100 * floor:.1f}% | {within} | {t.plain_median_us:.2f} | "
                f"{t.eager_graph_median_us:.2f} |"
            )
    return lines


def render(header: list[str], records: list[Record], run: int, run_s: float, planned: int) -> str:
    return "\n".join(
        [
            *header,
            "",
            summary(records, run, run_s, planned),
            "",
            "## Verdicts against the expected verdict",
            "",
            "Expected `rejected (a, b)`: rejected by one of those rules (any named rule where none "
            "is listed); `either`: a red-team cheat that cannot change a verdict (docstring "
            "`EXPECT: harmless`). Judge starts: the judge processes (`python -m "
            "kbot.evaluate.worker`) started during that evaluation, from "
            "`Evaluator.workers_spawned`; a restart after a lost judge shows on the evaluation "
            "after the loss. Every candidate runs in a fresh process of its own by design, so "
            "candidate processes are not counted as restarts.",
            "",
            *verdict_table(records),
            "",
            "## What each fault cost",
            "",
            *fault_table(records),
            "",
            "## The probe between faults (the same honest candidate)",
            "",
            "Noise floor: the larger IQR/median of the two measurements compared "
            "(`Stat.spread`, the evaluator's noise floor). unaffected: Δ ≤ floor, the probe no "
            "slower than its first (what a fault could leave behind slows later evaluations); "
            "'yes (faster)' marks a median faster than the floor allows, drift between two "
            "separate measurements that the evaluator never compares (it times a candidate "
            "interleaved with its baselines). A resumed run (another device session, maybe "
            "another machine) compares its probes with its own first one.",
            "",
            *probe_table(records),
            "",
        ]
    )
