"""The serving-op suite's results as records (bench/optimize_suite.py): one JSON line per op run,
appended to a log that a later command continues (`--log PATH --resume`), and the markdown
every table of bench/results/optimize.md is rendered from, whether the op ran now or in an
earlier command, session or machine. Nothing here times anything: the numbers are the
evaluator's verdicts, copied."""

from __future__ import annotations

import json
import math
from pathlib import Path

# Issue 15's targets (the suite's): each op's row in "Against the targets" says how far it is.
TARGET_VS_COMPILE = 1.10  # geomean over the op's cases, CUDA-graph time
TARGET_DECODE_VS_COMPILE = 1.20  # geomean over the cases of T <= DECODE_MAX_T
TARGET_EVERY_CASE = 0.97  # no case below this x torch.compile
TARGET_VS_EAGER = 3.0
TARGET_BANDWIDTH = 0.90  # of measured copy bandwidth, memory-bound ops at the largest case
TARGET_FIRST_ACCEPTED_S = 60.0
DECODE_MAX_T = 64

CASE_FIELDS = (
    "eager_graph", "compile_graph", "kbot_graph", "eager_plain", "compile_plain", "kbot_plain",
)  # fmt: skip


def case_record(case: dict) -> dict:
    """One case of a run report's `cases` (report.json: the winner's verdict, re-measured): its
    µs, speedups, roofline, bytes and FLOPs; `timed` False where the case was not timed."""
    timing = case.get("timing")
    if not isinstance(timing, dict):
        return {"case": case.get("case", {}), "timed": False}
    compile_graph = _faster(timing.get("compile_graph"), timing.get("compile_max_autotune_graph"))
    stats = {
        "eager_graph": timing.get("eager_graph"),
        "compile_graph": compile_graph,
        "kbot_graph": timing.get("candidate_graph"),
        "eager_plain": timing.get("eager_plain"),
        "compile_plain": timing.get("compile_plain"),
        "kbot_plain": timing.get("candidate_plain"),
    }
    percent = _number(timing.get("roofline_percent"))
    return {
        "case": case.get("case", {}),
        "timed": True,
        **{k: _median(v) for k, v in stats.items()},
        "x_eager": _number(timing.get("speedup_vs_eager")),
        "x_compile": _number(timing.get("speedup_vs_compile")),
        "roofline": None if percent is None else round(percent / 100, 4),
        "bytes": int(timing.get("bytes_moved") or 0),
        "flops": int(timing.get("flops") or 0),
    }


def record_from_report(
    report: dict, settings: dict, date: str, tree: str, wall_s: float | None = None
) -> dict:
    """An op's record from its run's report.json, the one source of the suite's numbers (the
    suite's own runs, and a run made elsewhere added with --add-report)."""
    name = (report.get("problem") or {}).get("name", "?")
    winner = report.get("winner")
    accepted = isinstance(winner, dict)
    chain = [step for step in report.get("lineage") or [] if isinstance(step, dict)]
    lineage = " > ".join(str(step.get("proposer", "?")) for step in chain[::-1])
    if not lineage and accepted:
        lineage = str(winner.get("proposer", "?"))
    status = str(report.get("status", "?"))
    if accepted:
        outcome = f"{status}: {winner.get('fitness', '')}"
    else:
        outcome = f"no winner: {str(report.get('message', ''))[:160]}"
    return op_record(
        name,
        settings,
        str(report.get("device", "?")),
        date,
        tree,
        status=status if accepted else "no_winner",
        outcome=outcome,
        wall_s=wall_s if wall_s is not None else _number(report.get("elapsed_s")),
        first_accepted_s=_number(report.get("first_accepted_s")),
        lineage=lineage or "–",
        cases=[case_record(c) for c in report.get("cases") or []] if accepted else [],
    )


def settings_of(report: dict) -> dict:
    """The suite's settings as a report's options record them."""
    options = report.get("options") or {}
    budget = options.get("budget") or {}
    return {
        "proposers": ",".join(options.get("proposers") or []),
        "generations": budget.get("generations"),
        "max_candidates": budget.get("max_candidates"),
        "budget_s": budget.get("time_s"),
    }


def op_record(name: str, settings: dict, device: str, date: str, tree: str, **outcome) -> dict:
    """`outcome`: status, outcome (the one-line result), wall_s, first_accepted_s, lineage,
    cases (case_record's)."""
    return {
        "op": name, "settings": settings, "device": device, "date": date, "tree": tree, **outcome
    }  # fmt: skip


def read_log(path: Path) -> list[dict]:
    """The log's records, oldest first; a line that is not a JSON object (a write cut by a
    kill) is skipped, never fatal."""
    if not path.is_file():
        return []
    records = []
    for line in path.read_text().splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and isinstance(record.get("op"), str):
            records.append(record)
    return records


def append(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as log:
        log.write(json.dumps(record, sort_keys=True) + "\n")


def drop(path: Path, ops: set[str]) -> int:
    """Removes `ops`' records from the log (run again: `--rerun`); returns how many left."""
    records = read_log(path)
    kept = [r for r in records if r["op"] not in ops]
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in kept))
    return len(records) - len(kept)


def done(records: list[dict], name: str, settings: dict, device: str) -> dict | None:
    """The latest record of `name` measured with these settings on this device, if any: a
    resumed run skips the op and reports that record."""
    same = [
        r for r in records
        if r["op"] == name and r.get("settings") == settings and r.get("device") == device
    ]  # fmt: skip
    return same[-1] if same else None


def latest(records: list[dict], names: list[str]) -> list[dict]:
    """Per op of `names` (in that order), its latest record, any settings or device."""
    by_op = {r["op"]: r for r in records}
    return [by_op[n] for n in names if n in by_op]


# -- markdown


def case_rows(record: dict) -> list[str]:
    rows = []
    for c in record.get("cases") or []:
        label = case_label(c["case"])
        if not c.get("timed"):
            rows.append(f"| {record['op']} | {label} | not timed | | | | | | | | |")
            continue
        cells = " | ".join(_us(c.get(k)) for k in CASE_FIELDS)
        rows.append(
            f"| {record['op']} | {label} | {cells} | {_ratio(c.get('x_eager'))} | "
            f"{_ratio(c.get('x_compile'))} | {_pct(c.get('roofline'))} |"
        )
    return rows


CASE_HEADER = [
    "| op | T | eager graph | compile graph | kbot graph | eager plain | compile plain | kbot plain | x eager | x compile | % bw |",
    "|---|---|---|---|---|---|---|---|---|---|---|",
]


def summary_lines(
    records: list[dict],
    skipped: list[str],
    wall_s: float | None = None,
    skipped_as: str = "ops not reached within --time-limit",
) -> list[str]:
    timed = [c for r in records for c in r.get("cases") or [] if c.get("timed")]
    vs_compile = [c["x_compile"] for c in timed if _positive(c.get("x_compile"))]
    vs_eager = [c["x_eager"] for c in timed if _positive(c.get("x_eager"))]
    decode = [
        c["x_compile"] for c in timed
        if _positive(c.get("x_compile")) and _is_decode(c["case"])
    ]  # fmt: skip
    below = [
        f"{r['op']} {case_label(c['case'])} ({c['x_compile']:.2f})"
        for r in records
        for c in r.get("cases") or []
        if c.get("timed") and _positive(c.get("x_compile"))
        and c["x_compile"] < TARGET_EVERY_CASE
    ]  # fmt: skip
    devices = sorted({r.get("device", "?") for r in records})
    lineages = [r.get("lineage", "–") for r in records if r.get("cases")]
    return [
        "",
        "## Summary",
        "",
        f"- ops: {len(records)} ({', '.join(devices) or 'none'})",
        f"- geomean speedup over torch.compile (graph time, {len(vs_compile)} cases): "
        f"{geomean(vs_compile)}",
        f"- decode (T <= {DECODE_MAX_T}) geomean over torch.compile ({len(decode)} cases): "
        f"{geomean(decode)}",
        f"- cases below {TARGET_EVERY_CASE} x torch.compile: {len(below)} of {len(vs_compile)}"
        + (f": {', '.join(below)}" if below else ""),
        f"- geomean speedup over eager (graph time, {len(vs_eager)} cases): {geomean(vs_eager)}",
        f"- {skipped_as}: {', '.join(skipped) or 'none'}",
        f"- winners derived from an inductor extraction: {inductor_share(lineages)}",
        *([] if wall_s is None else [f"- this command's wall time: {wall_s:.0f} s"]),
        "",
        "| op | outcome | optimize wall s | first accepted s | winner's lineage | measured |",
        "|---|---|---|---|---|---|",
        *(
            f"| {r['op']} | {r.get('outcome', '')[:200]} | {_seconds(r.get('wall_s'))} | "
            f"{_seconds(r.get('first_accepted_s'))} | {r.get('lineage', '–')} | "
            f"{r.get('date', '?')}, {r.get('device', '?')} |"
            for r in records
        ),
    ]


def targets_lines(records: list[dict]) -> list[str]:
    return [
        "",
        "## Against the targets",
        "",
        f"Per op with a winner: geomean over its cases (target x compile >= {TARGET_VS_COMPILE}, "
        f"x eager >= {TARGET_VS_EAGER}), every case >= {TARGET_EVERY_CASE} x compile, % of copy "
        f"bandwidth at the largest case (target >= {TARGET_BANDWIDTH:.0%} for memory-bound ops: "
        f"no matmul flops), first accepted (target <= {TARGET_FIRST_ACCEPTED_S:.0f} s).",
        "",
        "| op | x compile | x eager | % bw at largest case | first accepted s | short of |",
        "|---|---|---|---|---|---|",
        *(targets_row(r) for r in records if r.get("cases")),
    ]


def targets_row(record: dict) -> str:
    """One op against the targets; `short of` names each missed target and by how much."""
    timed = [c for c in record.get("cases") or [] if c.get("timed")]
    vs_compile = [c["x_compile"] for c in timed if _positive(c.get("x_compile"))]
    vs_eager = [c["x_eager"] for c in timed if _positive(c.get("x_eager"))]
    largest = max(timed, key=lambda c: c.get("bytes") or 0, default=None)
    misses = []
    g_compile, g_eager = _geomean_value(vs_compile), _geomean_value(vs_eager)
    if g_compile is not None and g_compile < TARGET_VS_COMPILE:
        misses.append(f"x compile by {TARGET_VS_COMPILE / g_compile - 1:.0%}")
    slow = [v for v in vs_compile if v < TARGET_EVERY_CASE]
    if slow:
        misses.append(f"{len(slow)} case(s) below {TARGET_EVERY_CASE} (worst {min(slow):.2f})")
    if g_eager is not None and g_eager < TARGET_VS_EAGER:
        misses.append(f"x eager by {TARGET_VS_EAGER / g_eager - 1:.0%}")
    bandwidth = "–"
    if largest is not None and largest.get("roofline") is not None:
        memory_bound = not largest.get("flops")
        bandwidth = _pct(largest["roofline"]) + ("" if memory_bound else " (matmul roofline)")
        if memory_bound and largest["roofline"] < TARGET_BANDWIDTH:
            misses.append(
                f"bandwidth by {100 * (TARGET_BANDWIDTH - largest['roofline']):.0f} points"
            )
    first_s = record.get("first_accepted_s")
    if first_s is not None and first_s > TARGET_FIRST_ACCEPTED_S:
        misses.append(f"first accepted by {first_s - TARGET_FIRST_ACCEPTED_S:.0f} s")
    return (
        f"| {record['op']} | {geomean(vs_compile)} | {geomean(vs_eager)} | {bandwidth} | "
        f"{_seconds(first_s)} | {'; '.join(misses) or 'none'} |"
    )


def inductor_share(lineages: list[str]) -> str:
    """How many winners an inductor-extracted candidate started (issue 15: does the inductor
    proposer earn its place), of the ops that had a winner."""
    won = [lineage for lineage in lineages if lineage != "–"]
    derived = sum(
        1 for lineage in won if any(p.startswith("inductor") for p in lineage.split(" > "))
    )
    return f"{derived} of {len(won)} ops with a winner" if won else "no op had a winner"


def case_label(case: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in case.items()) or "default"


def geomean(values: list[float]) -> str:
    value = _geomean_value(values)
    return "– (nothing timed)" if value is None else f"{value:.2f}"


def _geomean_value(values: list[float]) -> float | None:
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _is_decode(case: dict) -> bool:
    tokens = case.get("T")
    return isinstance(tokens, int) and tokens <= DECODE_MAX_T


def _faster(*stats):
    present = [s for s in stats if isinstance(s, dict) and _number(s.get("median_us"))]
    return min(present, key=lambda s: s["median_us"]) if present else None


def _median(stat) -> float | None:
    value = _number(stat.get("median_us")) if isinstance(stat, dict) else None
    return None if value is None else round(value, 3)


def _number(value) -> float | None:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return float(value)


def _positive(value) -> bool:
    return isinstance(value, (int, float)) and value > 0


def _us(value) -> str:
    return "–" if value is None else f"{value:.2f}"


def _ratio(value) -> str:
    return "–" if value is None else f"{value:.2f}"


def _pct(fraction) -> str:
    return "–" if fraction is None else f"{100 * fraction:.0f}%"


def _seconds(value) -> str:
    return "–" if value is None else f"{value:.0f}"
