"""Which constants of a traced graph follow the model's float attributes, and how.

Tracing runs Python, so `clamp(min=-self.limit)` reaches the graph as the number -7.0: a kernel
that kept the literal would be right for this instance and silently wrong for one built with
another limit (a published kernel serves every instance of the class). The forward is traced a
second time with every float attribute moved to another value; a constant that moved with an
attribute is written as that attribute (`limit`), its negation (`(-limit)`) or its reciprocal
(`(1.0 / limit)`), and passed to the kernel at launch. A constant that moved some other way
(`math.sqrt(self.scale)`), or a number that is an attribute's value in one place and a plain
literal in the same operation, is refused: codegen cannot say what the kernel should compute
for another instance. So is a forward whose graph changes with the moved values (`if self.limit < 4`); a
branch that only values other than the two traced would take is not seen.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch import nn

# How a constant may follow an attribute a: (expression template, function of a).
_FORMS = (
    ("{a}", lambda a: a),
    ("(-{a})", lambda a: -a),
    ("(1.0 / {a})", lambda a: 1.0 / a),
    ("(-1.0 / {a})", lambda a: -1.0 / a),
)


def float_attributes(model: nn.Module) -> dict[str, float]:
    """Model's plain, finite float attributes (eps, softcap, limit ...)."""
    return {
        k: float(v)
        for k, v in vars(model).items()
        if not k.startswith("_") and isinstance(v, float) and math.isfinite(v)
    }


def moved_values(floats: dict[str, float]) -> dict[str, float]:
    """Each attribute moved to a value no form of another attribute lands on by accident."""
    return {k: v * 1.37 + 0.11 * (i + 1) for i, (k, v) in enumerate(floats.items())}


def with_attributes(model: nn.Module, values: dict[str, float]) -> nn.Module:
    """A shallow copy of `model` (same parameters and buffers) with other float attributes."""
    moved = copy.copy(model)
    moved.__dict__ = dict(model.__dict__)
    for name, value in values.items():
        moved.__dict__[name] = value
    return moved


@dataclass(frozen=True)
class Follows:
    attr: str  # the Model attribute, passed to the kernel as a float
    expr: str  # how the kernel writes the constant: `limit`, `(-limit)`, `(1.0 / limit)`


@dataclass(frozen=True)
class AttributeConstants:
    """Which float constants follow an attribute: per node (a number can be an attribute's value
    in one node and a plain literal in another: GELU's 0.5 beside a `scaling_factor` of 0.5),
    and by value alone where that is unambiguous (for constants read outside a node's lowering)."""

    by_node: dict[str, dict[float, Follows]] = field(default_factory=dict)
    by_value: dict[float, Follows] = field(default_factory=dict)

    def lookup(self, node: str | None, value: float) -> Follows | None:
        if node is not None and node in self.by_node:
            return self.by_node[node].get(value)
        return self.by_value.get(value)


def attribute_constants(
    graph: torch.fx.Graph, moved: torch.fx.Graph, floats: dict[str, float]
) -> AttributeConstants:
    """The float constants of `graph` that follow an attribute. Raises ValueError (one line,
    why) where a constant follows attributes in a way codegen cannot write, or where one node
    holds a number both as a literal and as an attribute's value."""
    after = moved_values(floats)
    nodes, moved_nodes = list(graph.nodes), list(moved.nodes)
    if len(nodes) != len(moved_nodes) or any(
        a.op != b.op or a.target != b.target for a, b in zip(nodes, moved_nodes)
    ):
        names = ", ".join(sorted(floats))
        raise ValueError(
            f"forward takes another path when a float attribute changes ({names}): "
            "a kernel would only be right for this instance's values"
        )
    by_node: dict[str, dict[float, Follows]] = {}
    literal: set[float] = set()
    for node, twin in zip(nodes, moved_nodes):
        found: dict[float, Follows] = {}
        kept: set[float] = set()
        for value, other in _float_pairs((node.args, node.kwargs), (twin.args, twin.kwargs)):
            if value == other:
                kept.add(value)
                continue
            follows = _form(value, other, floats, after)
            if follows is None:
                raise ValueError(
                    f"{node.name}: the constant {value:g} is computed from the model's float "
                    "attributes in Python in a way codegen cannot write for other values "
                    "(use the attribute itself, its negation or its reciprocal)"
                )
            if found.setdefault(value, follows) != follows or value in kept:
                raise ValueError(
                    f"{node.name}: {value:g} is both {follows.attr}'s value and another "
                    "constant of the same operation: codegen cannot tell one from the other"
                )
        if found:
            by_node[node.name] = found
        literal |= kept
    by_value: dict[float, Follows] = {}
    ambiguous: set[float] = set(literal)
    for found in by_node.values():
        for value, follows in found.items():
            if by_value.setdefault(value, follows) != follows:
                ambiguous.add(value)
    return AttributeConstants(by_node, {v: f for v, f in by_value.items() if v not in ambiguous})


def _form(
    value: float, other: float, floats: dict[str, float], after: dict[str, float]
) -> Follows | None:
    for name, before in floats.items():
        for template, fn in _FORMS:
            try:
                if _close(fn(before), value) and _close(fn(after[name]), other):
                    return Follows(name, template.format(a=name))
            except ZeroDivisionError:
                continue
    return None


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0)


def _float_pairs(a: Any, b: Any):
    """The float leaves of two argument structures of one shape, side by side."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)) and len(a) == len(b):
        for x, y in zip(a, b):
            yield from _float_pairs(x, y)
    elif isinstance(a, dict) and isinstance(b, dict):
        for key in a:
            if key in b:
                yield from _float_pairs(a[key], b[key])
    elif type(a) is float and type(b) is float:
        yield a, b
