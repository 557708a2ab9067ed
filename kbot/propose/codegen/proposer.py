"""The `codegen` proposer: trace, classify, emit several readable variants of one schedule."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import zip_longest

from kbot.problem import ProblemSpec
from kbot.propose.base import Proposal, ProposeContext, ProposeOutcome
from kbot.propose.codegen.candidate import op_name, render_candidate
from kbot.propose.codegen.classify import Schedule, ScheduleKind, classify
from kbot.propose.codegen.emitted import Emitted
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.trace import TracedProblem, Unsupported, trace_problem
from kbot.propose.codegen.variants import decode_launch_first, variants_for


@dataclass(frozen=True)
class Candidate:
    source: str
    params: dict
    note: str


def generate(spec: ProblemSpec, limit: int = 8, decode_first: bool = True) -> list[Candidate]:
    """All variants codegen offers for a problem; raises Unsupported with the reason if none.
    `decode_first`: the decode composite leads where the problem has cases of several sizes
    (variants.decode_launch_first); off, the variants keep their own order."""
    traced = trace_problem(spec)
    schedules = classify(traced, spec.options.extern_ops)
    op = op_name(spec)
    order = decode_launch_first if decode_first else (lambda variants, cases: variants)
    # Interleave the schedules' variants so a small limit still sees every schedule.
    per_schedule = [
        [(s, v) for v in order(variants_for(traced, s, spec), spec.cases)] for s in schedules
    ]
    ordered = [pair for group in zip_longest(*per_schedule) for pair in group if pair]
    candidates: list[Candidate] = []
    for schedule, variant in ordered:
        if len(candidates) == limit:
            break
        sizes = SizeNames(traced)
        try:
            emitted = variant.emit(traced, schedule, sizes, op)
        except Unsupported:
            if variant.optional:
                continue  # a decode launch that does not fit this launcher: the others stand
            raise
        source = render_candidate(spec, traced, schedule, sizes, emitted, op)
        note = f"codegen {schedule.kind.value}: {variant.label}"
        candidates.append(Candidate(source, dict(emitted.params), note))
    if not candidates:
        raise Unsupported("no variant of the schedule fits this problem")
    return candidates


class CodegenProposer:
    """Built-in, offline proposer: readable Triton for the op families it recognises."""

    name = "codegen"

    def propose(self, context: ProposeContext) -> ProposeOutcome:
        try:
            # On a CPU nothing is timed and Triton's interpreter pays per program: the decode
            # composite's many small programs (4x the plain launch's at T=64) made the bundled
            # example's first candidate outlast its 90 s budget on a busy 2-core machine.
            candidates = generate(
                context.problem,
                limit=context.max_proposals,
                decode_first=context.device != "cpu",
            )
        except Unsupported as exc:
            return ProposeOutcome(proposals=(), skipped_reason=f"no codegen schedule: {exc}")
        except Exception as exc:  # noqa: BLE001 - a graph codegen mishandles must not end the run
            return ProposeOutcome(
                proposals=(),
                skipped_reason=(
                    f"no codegen schedule: codegen failed on this graph "
                    f"({type(exc).__name__}: {str(exc).strip()[:200]}); please report it"
                ),
            )
        proposals = tuple(
            Proposal(source=c.source, proposer=self.name, params=c.params, note=c.note)
            for c in candidates
        )
        return ProposeOutcome(proposals=proposals)


__all__ = [
    "CodegenProposer",
    "generate",
    "Candidate",
    "Emitted",
    "Schedule",
    "ScheduleKind",
    "TracedProblem",
]
