"""A verdict as the lines a proposer (a model) reads about a parent: per case, the error
against its tolerance and, on a GPU, the kernel's time against torch.compile and eager with
the share of the roofline and the peak that bounds it."""

from __future__ import annotations

from kbot.evaluate.verdict import NOT_TIMED, Verdict, measured


def verdict_details(verdict: Verdict) -> tuple[str, ...]:
    lines = []
    for case in verdict.cases:
        label = ", ".join(f"{k}={v}" for k, v in case.case.items()) or "default case"
        parts = []
        c = case.correctness
        if c is not None:
            parts.append(
                f"{'passed' if c.passed else 'FAILED'} {c.trials} trials, max abs error "
                f"{c.max_abs_error:.3g} (atol {c.atol:g}), rel-norm error "
                f"{c.max_rel_norm_error:.3g} (rtol {c.rtol:g})"
            )
        t = case.timing
        if t is None:
            parts.append(NOT_TIMED if not verdict.timed else "not timed")
        else:
            timing = f"{t.candidate_graph.median_us:.2f} µs (CUDA graph)"
            if t.compile_graph is not None:
                timing += f" vs torch.compile {t.compile_graph.median_us:.2f} µs"
            timing += f", eager {t.eager_graph.median_us:.2f} µs"
            if measured(t.roofline_fraction):
                timing += f", {100 * t.roofline_fraction:.0f}% of roofline"
            if t.roofline_peak:
                timing += f" (peak {t.roofline_peak})"
            parts.append(timing)
        lines.append(f"{label}: " + "; ".join(parts))
    return tuple(lines)
