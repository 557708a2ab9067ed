"""A kernel compiled for the problem's own sizes, with a generic kernel for every other size.

torch.compile's own kernels (the inductor proposers) are compiled for the model's sizes: only
the dims that vary across the problem's cases stay dynamic (kbot.propose.inductor.capture). When
one wins, the shape sweep fails it at every other hidden size and the PR's guard pins the model's
size (H200, nano-vllm, 2026-12-04: `SiluAndMul` pinned `x.shape[1] in (24576,)`,
`add_rms_forward` `(4096,)`). Such a winner is composed here with the best accepted generic
candidate: the specialised kernel where every input has the sizes it was compiled for, the
generic one everywhere else. The evaluator checks the module like any candidate (at the
problem's own sizes it runs the specialised kernel), and the sweep then checks the generic path
at other models' sizes, so the guard pins no size that the generic kernel serves.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kbot.evaluate.verdict import Verdict, measured
from kbot.problem import ProblemSpec
from kbot.search.archive import Entry
from kbot.search.by_size import COMPOSE_PROPOSER, single_plan
from kbot.search.compose import CompositionError, Variant, compose_fallback_source
from kbot.search.final import (
    BySize,
    Fallback,
    Ranked,
    composed_entry,
    final_winner,
    judge_in_grace,
    refused,
    specialised,
)
from kbot.search.fitness import fitness_of
from kbot.search.per_case import case_label

if TYPE_CHECKING:
    from kbot.search.evaluating import CandidateEvaluator
    from kbot.search.loop import LoopResult, SearchLoop
    from kbot.search.store import Store

FALLBACK_RULE = (
    "v1 is torch.compile's kernels, compiled for the problem's own sizes; every other size "
    "goes to v2, a generic kernel."
)


class FallbackError(Exception):
    """The sizes the specialised kernel was compiled for cannot be told; the message says why."""


@dataclass(frozen=True)
class CompiledSizes:
    """What a kernel compiled for the problem's sizes assumes of its inputs: per forward
    argument position, its rank and the sizes of the dims that do not vary across the cases (or
    its value, for a scalar the same in every case); per tensor attribute of Model, its shape."""

    tensors: dict[int, tuple[int, dict[int, int]]]
    scalars: dict[int, Any]
    attributes: dict[str, tuple[int, ...]]

    def condition(self, params: list[str], attributes: dict[str, str]) -> str:
        """A Python expression over the launcher's parameters that holds at those sizes."""
        terms = []
        for position, (rank, fixed) in sorted(self.tensors.items()):
            name = params[position]
            if len(fixed) == rank:
                terms.append(f"{name}.shape == {tuple(fixed[d] for d in range(rank))!r}")
                continue
            terms.append(f"{name}.dim() == {rank}")
            terms += [f"{name}.shape[{d}] == {size}" for d, size in sorted(fixed.items())]
        terms += [f"{params[p]} == {value!r}" for p, value in sorted(self.scalars.items())]
        for launcher_name, attribute in attributes.items():
            shape = self.attributes.get(attribute)
            if shape is not None:
                terms.append(f"{launcher_name}.shape == {shape!r}")
        if not terms:
            raise FallbackError("no input has a size the specialised kernel was compiled for")
        return " and ".join(terms)


def compiled_sizes(problem: ProblemSpec) -> CompiledSizes:
    """The problem's cases and Model built on the meta device (no memory, no compute)."""
    import torch

    from kbot.problem.runtime import case_inputs, import_file, init_inputs

    try:
        module = import_file(problem.path, prefix="kbot_fallback_problem")
        with torch.device("meta"):
            built = [case_inputs(module, dict(case)) for case in problem.cases or ({},)]
            model = module.Model(*init_inputs(module))
    except Exception as exc:  # the user's get_inputs or Model
        raise FallbackError(f"the problem could not be built on the meta device: {exc}") from None
    tensors: dict[int, tuple[int, dict[int, int]]] = {}
    scalars: dict[int, Any] = {}
    for position in range(min(len(args) for args in built)):
        values = [args[position] for args in built]
        if all(isinstance(v, torch.Tensor) for v in values):
            ranks = {v.dim() for v in values}
            if len(ranks) != 1:
                continue
            rank = ranks.pop()
            tensors[position] = (
                rank,
                {
                    d: values[0].shape[d]
                    for d in range(rank)
                    if len({v.shape[d] for v in values}) == 1
                },
            )
        elif all(isinstance(v, (bool, int, float)) for v in values) and len(set(values)) == 1:
            scalars[position] = values[0]
    attributes = {
        name: tuple(value.shape)
        for name, value in [*model.named_parameters(), *model.named_buffers()]
        if "." not in name
    }
    return CompiledSizes(tensors, scalars, attributes)


def is_specialised(entry: Entry, entries: dict[str, Entry]) -> bool:
    """torch.compile's kernels, or a per-size module with one among its variants."""
    if specialised(entry):
        return True
    return entry.proposer == COMPOSE_PROPOSER and any(
        specialised(entries[sha]) for sha in entry.parents if sha in entries
    )


def slower_than(verdict: Verdict, original_path: str) -> str:
    """The cases (`T=1 (0.92x)`) where `verdict`'s kernel was measured slower than the path it
    replaces, beyond the noise (the speedups are 1.0 inside it); "" where none was."""
    slower = []
    for case in verdict.cases:
        timing = case.timing
        if timing is None:
            continue
        compiled = original_path == "torch.compile" and measured(timing.speedup_vs_compile)
        speedup = timing.speedup_vs_compile if compiled else timing.speedup_vs_eager
        if measured(speedup) and speedup < 1.0:  # type: ignore[operator]
            slower.append(f"{case_label(case.case)} ({speedup:.2f}x)")
    return ", ".join(slower)


def best_generic(result: LoopResult, finalists: list[tuple[Entry, Verdict]]) -> Ranked | None:
    """The best accepted candidate that serves any size (re-measured finalists first)."""
    remeasured = {e.sha256: v for e, v in finalists}
    ranked = sorted(
        (
            (fitness_of(verdict, entry.source), entry, verdict)
            for entry in result.entries.values()
            for verdict in [remeasured.get(entry.sha256, entry.verdict)]
            if verdict.accepted and not is_specialised(entry, result.entries)
        ),
        key=lambda item: item[0].sort_key(),
        reverse=True,
    )
    return ranked[0] if ranked else None


def fallback_candidate(
    store: Store,
    run_id: str,
    problem: ProblemSpec,
    env_key: str,
    loop: SearchLoop,
    result: LoopResult,
    finalists: list[tuple[Entry, Verdict]],
    count: int,
    sized: BySize | None,
    fresh_evaluator: Callable[[], AbstractContextManager[CandidateEvaluator]],
    original_path: str = "eager",
) -> BySize | None:
    """`sized` with its final kernel composed with a generic fallback, when the final kernel is
    specialised to the problem's sizes, a generic candidate was accepted, and the evaluator
    accepts the module (on a GPU timed beside the specialised winner, which must not beat it
    above the noise floor). The generic kernel serves sizes nobody timed, so it must not have
    been slower than `original_path` (the code as written: eager, or torch.compile for a
    compiled reference; kbot.search.by_size.ORIGINAL_PATHS) at any size that was. It decides
    what the guard admits, so like the shape sweep it may run past the time budget by the
    sweep's grace (kbot.search.final.grace_deadline). Raises Abandoned."""
    winner = final_winner(result, finalists, count, sized)
    if winner is None or not is_specialised(winner[1], result.entries):
        return sized
    generic = best_generic(result, finalists)
    if generic is None:
        result.notes.append(
            "no generic candidate was accepted to serve the sizes torch.compile's kernels were "
            "not compiled for: the guard pins the problem's sizes"
        )
        return sized
    slower = slower_than(generic[2], original_path)
    if slower:
        result.notes.append(
            f"generic fallback not used: the best generic candidate was slower than "
            f"{original_path} at {slower}; other models' sizes keep the original path"
        )
        return sized
    try:
        sizes = compiled_sizes(problem)
        source = compose_fallback_source(
            problem.name,
            Variant("v1", winner[1].sha256, winner[1].proposer, winner[1].source),
            Variant("v2", generic[1].sha256, generic[1].proposer, generic[1].source),
            sizes.condition,
            FALLBACK_RULE,
        )
    except (FallbackError, CompositionError) as exc:
        result.notes.append(f"no generic fallback for the specialised kernel: {exc}")
        return sized
    verdict, single = judge_in_grace(store, run_id, problem, env_key, loop, source, winner,
                                     fresh_evaluator, "composed_fallback.py")  # fmt: skip
    fitness = fitness_of(verdict, source)
    why = refused(verdict, fitness, single, "the specialised kernel alone")
    if why:
        result.notes.append(f"generic fallback not used: {why}")
        return sized
    params = {
        "schedule": "fallback",
        "variants": {"v1": winner[1].sha256[:12], "v2": generic[1].sha256[:12]},
    }
    entry = composed_entry(result, source, (winner[1].sha256, generic[1].sha256), params,
                           verdict)  # fmt: skip
    plan = sized.plan if sized is not None else single_plan(problem, (winner[1], winner[2]), "")
    return replace(
        sized or BySize(plan, None),
        composed=(fitness, entry, verdict),
        fallback=Fallback(winner[1], generic[1]),
    )


def fallback_sentence(fallback: dict[str, Any]) -> str:
    """What a specialised kernel's generic fallback (kbot.search.fallback) serves."""
    specialised, generic = fallback.get("specialised") or {}, fallback.get("generic") or {}
    return (
        f"The kernel measured here, `{str(specialised.get('sha256', ''))[:12]}` "
        f"({specialised.get('proposer', '')}: torch.compile's own kernels), was compiled for "
        "these sizes only; at any other size (another model's hidden size) the module runs a "
        f"generic kernel, `{str(generic.get('sha256', ''))[:12]}` ({generic.get('proposer', '')}),"
        " which the evaluator checked at other models' sizes (below) but did not time."
    )
