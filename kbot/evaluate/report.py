"""A verdict as text for a terminal: the outcome, the reasons, one line per case."""

from __future__ import annotations

from kbot.evaluate.verdict import NOT_MEASURED, NOT_TIMED, CaseResult, Stat, Verdict, measured


def _us(stat: Stat | None) -> str:
    if stat is None:
        return "-"
    return f"{stat.median_us:.2f}us ±{100 * stat.spread:.1f}% (n={stat.runs})"


def _roofline(fraction: float, peak: str) -> str:
    if not measured(fraction):
        return f"roofline {NOT_MEASURED}"
    return f"{100 * fraction:.0f}% of roofline" + (f" ({peak})" if peak else "")


def _times(speedup: float) -> str:
    return f"x{speedup:.2f}" if measured(speedup) else NOT_MEASURED


def _case_line(result: CaseResult, untimed: str = NOT_TIMED) -> str:
    name = ", ".join(f"{k}={v}" for k, v in result.case.items()) or "default"
    parts = [f"  case {name}:"]
    c = result.correctness
    if c is not None:
        parts.append(
            f"{c.trials} trials ({'/'.join(c.distributions)}), max rel-norm error "
            f"{c.max_rel_norm_error:.2e} (rtol {c.rtol:g}), max abs error {c.max_abs_error:.2e}"
        )
    t = result.timing
    if t is None:
        parts.append(f"| {untimed}")
    else:
        compile_part = (
            f", compile {_us(t.compile_graph)} -> {_times(t.speedup_vs_compile)}"
            if t.speedup_vs_compile is not None
            else ""
        )
        parts.append(
            f"\n    graph: kbot {_us(t.candidate_graph)}, eager {_us(t.eager_graph)} -> "
            f"{_times(t.speedup_vs_eager)}{compile_part}"
            f"\n    plain launches: kbot {_us(t.candidate_plain)}, eager {_us(t.eager_plain)}"
            f"\n    {t.bytes_moved / 1e6:.2f} MB moved, {t.flops / 1e9:.3f} GFLOP, "
            f"{_roofline(t.roofline_fraction, t.roofline_peak)}"
        )
    return " ".join(parts)


def render_verdict(verdict: Verdict, problem_name: str, candidate_name: str) -> str:
    head = "ACCEPTED" if verdict.accepted else f"REJECTED at {verdict.stage.value}"
    lines = [
        f"{head}: {candidate_name} for {problem_name} on {verdict.device} ({verdict.wall_s:.1f}s)"
    ]
    lines += [f"  {reason}" for reason in verdict.reasons]
    # on a GPU a case without timing could not be captured (the reasons say why), not "no GPU"
    untimed = "not timed (see the notes above)" if verdict.timed else NOT_TIMED
    lines += [_case_line(case, untimed) for case in verdict.cases]
    geomean = verdict.speedup_geomean("compile")
    if geomean is not None:
        over = "timed cases" if verdict.untimed_cases else "cases"
        lines.append(f"  speedup vs torch.compile (geomean over {over}): x{geomean:.2f}")
    if verdict.worker_output.strip() and not verdict.accepted:
        tail = verdict.worker_output.strip().splitlines()[-10:]
        lines.append("  candidate output (last lines):")
        lines += [f"    {line}" for line in tail]
    return "\n".join(lines)
