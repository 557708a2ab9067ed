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
    FUNCTION = "function"  # a local function or lambda, or a module function as a value
    META = "meta"  # the parameter of a grid lambda: META["BLOCK"] may be any kernel argument
    CONTEXT = "context"  # a torch.autograd.Function's `ctx`: saves tensors, computes nothing
    KERNEL = "kernel"  # a module-level @triton.jit kernel (`k = _a if c else _b; k[grid](...)`)
    # a class of the candidate's own, or an instance of one: its methods are followed where the
    # walker knows the class (forward_classes), any other call on it is refused
    OBJECT = "object"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Callable:
    """A function value the walker can follow when it is called: a local def or lambda (with
    the names it closes over), or a module-level function (`module_key` set, no closure)."""

    node: ast.FunctionDef | ast.Lambda
    closure: dict[str, Kind] | None = None
    module_key: str | None = None
    is_method: bool = False  # `self.helper` passed as a value
    owner: int = 0  # id() of the walker whose scope defined it: calls there see its names now


# Calls nested deeper than this are not followed: the candidate is refused (`call-depth`), since
# what the unread calls do would otherwise pass unseen.
MAX_CALL_DEPTH = 20
TOO_DEEP = (
    f"forward's calls nest deeper than {MAX_CALL_DEPTH} functions; the checks read no further, "
    "so flatten them"
)


@dataclass(frozen=True)
class HelperClass:
    """A module-level class of the candidate's own that forward's call graph may build or call
    into (forward_classes): a plain class, a @dataclass or a typing.NamedTuple."""

    node: ast.ClassDef
    facts: ForwardFacts  # its methods are walked with these: `self.x` a tensor unless known
    fields: tuple[str, ...] = ()  # a generated __init__'s parameters, in order
    defaults: dict[str, Kind] = field(default_factory=dict)  # kinds of the fields' defaults
    tracked: frozenset[str] = frozenset()  # fields never assigned again: their kind is kept
    factories: tuple[ast.expr, ...] = ()  # `field(default_factory=f)`: run when it is built
    attributes: dict[str, Kind] = field(default_factory=dict)  # class-level number constants


@dataclass
class CandidateTypes:
    """What the checker knows of the candidate's module-level classes, and of the constants
    whose Python type decides what their attributes are."""

    names: frozenset[str] = frozenset()  # every module-level class: a name of one is an OBJECT
    helpers: dict[str, HelperClass] = field(default_factory=dict)  # followed when called
    enums: dict[str, frozenset[str]] = field(default_factory=dict)  # Enum of numbers: members
    constexprs: frozenset[str] = frozenset()  # `_M: tl.constexpr = tl.constexpr(0)`: `.value`
    strings: frozenset[str] = frozenset()  # `_NAME = "llama"`: its str methods give numbers/str
    # names a call on one of the file's objects may run code by (its classes' methods, fields
    # and attributes that may hold functions): such a call is followed or refused, never
    # taken for a tensor method of that name
    members: frozenset[str] = frozenset()


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
    properties: dict[str, ast.FunctionDef] = field(default_factory=dict)
    # module-level `class F(torch.autograd.Function)`: `F.apply(...)` runs its forward
    autograd: dict[str, dict[str, ast.FunctionDef]] = field(default_factory=dict)
    # module-level nn.Module classes of the candidate's own (ModelNew's `self.norm =
    # TritonRMSNorm(...)`): `self.norm(x)` runs their forward, walked with their facts
    local_modules: dict[str, ForwardFacts] = field(default_factory=dict)
    types: CandidateTypes = field(default_factory=CandidateTypes)
    self_default: Kind = Kind.UNKNOWN  # an attribute of `self` not assigned in __init__
    where: str | None = None  # code other than forward's call graph that runs during a call
    reasons: list[Reason] = field(default_factory=list)
    launches: int = 0
    # The call graph is followed once per (function, argument kinds); this stops recursion.
    visiting: set[tuple[str, tuple[Kind, ...]]] = field(default_factory=set)

    def reject(self, node: ast.AST, message: str, rule: str = "torch-compute-in-forward") -> None:
        if self.where:
            message += f" (in {self.where}, which runs during a call)"
        self.reasons.append(Reason(rule, message, getattr(node, "lineno", None)))

    def extern_allowed(self, dotted: str) -> bool:
        return any(dotted in EXTERN_CALLS.get(op, ()) for op in self.options.extern_ops)


# Kinds that may be (or hold) a tensor: what a container holding them becomes TENSORS for.
MAYBE_TENSOR = frozenset({Kind.TENSOR, Kind.TENSORS, Kind.OBJECT, Kind.UNKNOWN})


def element_of(kind: Kind) -> Kind:
    """The kind of an element of a value of `kind` (iteration, unpacking)."""
    if kind in (Kind.SHAPE, Kind.SCALAR, Kind.CONTAINER):
        return Kind.SCALAR
    if kind in (Kind.TENSOR, Kind.TENSORS):
        return Kind.TENSOR
    return Kind.UNKNOWN


def container_of(kinds) -> Kind:
    """The kind of a list/tuple/dict built from elements of these kinds."""
    return Kind.TENSORS if any(k in MAYBE_TENSOR for k in kinds) else Kind.CONTAINER


def holds_tensor(kinds) -> bool:
    """Whether any of these kinds is known to be, or to hold, a tensor."""
    return any(k in (Kind.TENSOR, Kind.TENSORS) for k in kinds)


def join_arith(left: Kind, right: Kind) -> Kind:
    """The kind of `left <op> right`."""
    if left == right == Kind.SCALAR:
        return Kind.SCALAR
    if Kind.TENSOR in (left, right):
        return Kind.TENSOR
    return Kind.UNKNOWN
