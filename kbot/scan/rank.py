"""Ordering findings: measured time first (share of the run, and the Amdahl gain of a 3x faster
op), then statically found targets, then what was skipped."""

from __future__ import annotations

from kbot.scan.findings import Finding, Kind, Status

SPEEDUP_ASSUMED = 3.0  # "if this op became 3x faster": the question the ranking answers

# Static findings have no time; rank the ones a person asked for first, then the op families
# whose integration point is clearest.
_STATIC_ORDER = (
    Kind.CONFIG_TARGET,
    Kind.MARKER,
    Kind.CUSTOM_OP,
    Kind.FUSED_OP,
    Kind.DEFAULT_BACKEND,
    Kind.TORCH_COMPILE,
    Kind.NAMED_OP,
    Kind.PROFILED,
)


def amdahl_speedup(time_share: float, op_speedup: float = SPEEDUP_ASSUMED) -> float:
    """Whole-run speedup when a fraction `time_share` of the run gets `op_speedup` times faster."""
    share = min(max(time_share, 0.0), 1.0)
    return 1.0 / ((1.0 - share) + share / op_speedup)


def _explicit_rank(finding: Finding) -> int:
    kinds = (finding.kind, *finding.also_found_as)
    return min(_STATIC_ORDER.index(k) for k in kinds)


def rank(findings: list[Finding] | tuple[Finding, ...]) -> list[Finding]:
    def key(finding: Finding) -> tuple:
        skipped = finding.status == Status.SKIPPED
        share = finding.profile.time_share if finding.profile else -1.0
        return (skipped, -share, _explicit_rank(finding), finding.file, finding.line)

    return sorted(findings, key=key)
