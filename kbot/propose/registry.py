"""The proposers by name: a plain dict built here, in one place.

Factories import their proposer only when called, so listing names never imports torch.
`llm` joins when its issue lands.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kbot.errors import UsageError
from kbot.propose.base import Proposer


def _codegen() -> Proposer:
    from kbot.propose.codegen import CodegenProposer

    return CodegenProposer()


def _tune() -> Proposer:
    from kbot.propose.tune import TuneProposer

    return TuneProposer()


def _inductor() -> Proposer:
    from kbot.propose.inductor import InductorProposer

    return InductorProposer()


PROPOSERS: dict[str, Callable[[], Proposer]] = {
    "codegen": _codegen,
    "tune": _tune,
    "inductor": _inductor,
}


def make_proposer(name: str) -> Proposer:
    factory = PROPOSERS.get(name)
    if factory is None:
        raise UsageError(
            f"unknown proposer {name!r}; valid proposers: {', '.join(sorted(PROPOSERS))}"
        )
    return factory()


def make_proposers(names: Sequence[str]) -> list[Proposer]:
    """Proposers in the order given; duplicates are dropped, unknown names fail listing valid ones."""
    unknown = [n for n in names if n not in PROPOSERS]
    if unknown:
        raise UsageError(
            f"unknown proposer(s) {', '.join(map(repr, unknown))}; "
            f"valid proposers: {', '.join(sorted(PROPOSERS))}"
        )
    return [make_proposer(n) for n in dict.fromkeys(names)]
