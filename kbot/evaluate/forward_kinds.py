"""The vocabulary of the forward check: the kinds a value can have (tensor, Python number,
container...), how kinds combine under arithmetic and iteration, and `ForwardFacts`, what the
checker knows about the candidate file and the violations found so far. Shared by the walker
(`forward_walk`) and the call rules (`forward_calls`)."""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass, field

from kbot.evaluate.allowed import EXTERN_CALLS
from kbot.evaluate.names import Aliases
from kbot.evaluate.verdict import Reason
from kbot.problem.spec import ProblemOptions


class Kind(enum.Enum):
    SCALAR = "scalar"  # a Python number, string, dtype, device or None
    SHAPE = "shape"  # x.shape / x.size() / x.stride(): indexing gives scalars
    TENSOR = "tensor"
    CONTAINER = "container"  # a list/tuple/dict of Python numbers (grids, block-size tables)
    TENSORS = "tensors"  # a list/tuple/dict that may hold tensors
    FUNCTION = "function"  # a local grid function or lambda
    META = "meta"  # the parameter of a grid lambda: META["BLOCK"] is a scalar
    UNKNOWN = "unknown"


@dataclass
class ForwardFacts:
    """What the checker knows about the candidate file."""

    aliases: Aliases
    options: ProblemOptions
    functions: dict[str, ast.FunctionDef]
    kernels: set[str]
    constants: dict[str, Kind]
    methods: dict[str, ast.FunctionDef]
    self_kinds: dict[str, Kind]
    self_modules: dict[str, str]  # attribute -> dotted nn class, e.g. "torch.nn.Linear"
    reasons: list[Reason] = field(default_factory=list)
    launches: int = 0
    # The call graph is followed once per (function, argument kinds); this stops recursion.
    visiting: set[tuple[str, tuple[Kind, ...]]] = field(default_factory=set)

    def reject(self, node: ast.AST, message: str) -> None:
        self.reasons.append(
            Reason("torch-compute-in-forward", message, getattr(node, "lineno", None))
        )

    def extern_allowed(self, dotted: str) -> bool:
        return any(dotted in EXTERN_CALLS.get(op, ()) for op in self.options.extern_ops)


# Kinds that may be (or hold) a tensor: what a container holding them becomes TENSORS for.
MAYBE_TENSOR = frozenset({Kind.TENSOR, Kind.TENSORS, Kind.UNKNOWN})


def element_of(kind: Kind) -> Kind:
    """The kind of an element of a value of `kind` (iteration, unpacking)."""
    if kind in (Kind.SHAPE, Kind.SCALAR, Kind.CONTAINER):
        return Kind.SCALAR
    if kind in (Kind.TENSOR, Kind.TENSORS):
        return Kind.TENSOR
    return Kind.UNKNOWN


def join_arith(left: Kind, right: Kind) -> Kind:
    """The kind of `left <op> right`."""
    if left == right == Kind.SCALAR:
        return Kind.SCALAR
    if Kind.TENSOR in (left, right):
        return Kind.TENSOR
    return Kind.UNKNOWN
