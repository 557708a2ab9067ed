"""The proposers by name: a plain dict built here, in one place.

Factories import their proposer only when called, so listing names never imports torch (nor
the `openai` SDK, which the llm proposer imports at its first request).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from kbot.errors import UsageError
from kbot.propose.base import Proposer

if TYPE_CHECKING:
    from kbot.propose.llm.settings import LLMSettings


def _codegen() -> Proposer:
    from kbot.propose.codegen import CodegenProposer

    return CodegenProposer()


def _tune() -> Proposer:
    from kbot.propose.tune import TuneProposer

    return TuneProposer()


def _inductor() -> Proposer:
    from kbot.propose.inductor import InductorProposer

    return InductorProposer()


def _llm(llm: LLMSettings | None = None) -> Proposer:
    from kbot.propose.llm import LLMProposer, LLMSettings

    return LLMProposer(llm or LLMSettings())


# Factories take no argument, except llm's, which takes the run's LLM settings.
PROPOSERS: dict[str, Callable[..., Proposer]] = {
    "codegen": _codegen,
    "tune": _tune,
    "inductor": _inductor,
    "llm": _llm,
}


def make_proposer(name: str, llm: LLMSettings | None = None) -> Proposer:
    factory = PROPOSERS.get(name)
    if factory is None:
        raise UsageError(
            f"unknown proposer {name!r}; valid proposers: {', '.join(sorted(PROPOSERS))}"
        )
    return factory(llm) if name == "llm" else factory()


def _inductor_max_autotune(first: Proposer) -> Proposer:
    from kbot.propose.inductor import InductorProposer

    assert isinstance(first, InductorProposer)
    return InductorProposer(compile_mode="max-autotune", after=first)


def make_proposers(names: Sequence[str], llm: LLMSettings | None = None) -> list[Proposer]:
    """Proposers in the order given; duplicates are dropped, unknown names fail listing valid ones.
    `inductor` is two: torch.compile's default mode's kernels and max-autotune's, the two modes
    "vs torch.compile" measures against."""
    unknown = [n for n in names if n not in PROPOSERS]
    if unknown:
        raise UsageError(
            f"unknown proposer(s) {', '.join(map(repr, unknown))}; "
            f"valid proposers: {', '.join(sorted(PROPOSERS))}"
        )
    out = []
    for name in dict.fromkeys(names):
        out.append(make_proposer(name, llm))
        if name == "inductor":
            out.append(_inductor_max_autotune(out[-1]))
    return out
