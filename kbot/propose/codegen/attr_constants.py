"""Which constants of a traced graph follow the model's float attributes, and how.

Tracing runs Python, so `clamp(min=-self.limit)` reaches the graph as the number -7.0: a kernel
that kept the literal would be right for this instance and silently wrong for one built with
another limit (a published kernel serves every instance of the class). The forward is traced a
second time with every float attribute moved to another value; a constant that moved with an
attribute is written as that attribute (`limit`), its negation (`(-limit)`), its reciprocal
(`(1.0 / limit)`) or its offset from one (`(factor - 1.0)`), and passed to the kernel at
launch. A constant that moved some other way (`math.sqrt(self.scale)`), or a number that is
an attribute's value in one place and a plain literal in the same operation, is refused:
codegen cannot say what the kernel should compute for another instance. An attribute that
changes the graph when it is moved alone (a norm's `p = 2.0`, `if self.limit < 4`) is not moved: it stays specialised at the traced value, as before; a branch
that only values other than the two traced would take is not seen.
A float passed to forward (`scale`) is moved the same way by trace.py and read from the
launcher's argument of that name.
"""

from __future__ import annotations

import copy
import math
import struct
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
    # a scaling factor's offset from 1 (dynamic-NTK rotary: `factor * t - (factor - 1)`)
    ("({a} - 1.0)", lambda a: a - 1.0),
    ("(1.0 - {a})", lambda a: 1.0 - a),
    ("({a} + 1.0)", lambda a: a + 1.0),
)


def float_attributes(model: nn.Module) -> dict[str, float]:
    """The plain, finite float attributes of Model and its submodules (eps, softcap, limit, an
    `nn.LeakyReLU`'s negative_slope ...), by dotted path (`act.negative_slope`)."""
    found: dict[str, float] = {}
    args: set[str] = set()
    for prefix, module in model.named_modules():
        for name, value in vars(module).items():
            if name.startswith("_") or not isinstance(value, float) or not math.isfinite(value):
                continue
            path = f"{prefix}.{name}" if prefix else name
            if arg_name(path) in args:  # `a.b_c` and `a_b.c`: one kernel argument name
                continue
            args.add(arg_name(path))
            found[path] = float(value)
    return found


def arg_name(path: str) -> str:
    """The kernel's argument for an attribute path: `act.negative_slope` -> act_negative_slope."""
    return path.replace(".", "_")


def moved_values(floats: dict[str, float]) -> dict[str, float]:
    """Each attribute moved to a value no form of another attribute lands on by accident."""
    return {k: v * 1.37 + 0.11 * (i + 1) for i, (k, v) in enumerate(floats.items())}


def with_attributes(model: nn.Module, values: dict[str, float]) -> nn.Module:
    """A shallow copy of `model` (same parameters and buffers) with other float attributes; each
    submodule on an attribute's path is copied too, the others shared."""
    moved = _shallow(model)
    for path, value in values.items():
        *parents, name = path.split(".")
        module = moved
        for part in parents:
            child = _shallow(module._modules[part])
            module._modules[part] = child
            module = child
        module.__dict__[name] = value
    return moved


def _shallow(module: nn.Module) -> nn.Module:
    copied = copy.copy(module)  # a new __dict__; its _modules dict is still the original's
    copied._modules = dict(module._modules)
    return copied


@dataclass(frozen=True)
class Follows:
    attr: str  # the kernel argument that carries the attribute (arg_name of its path)
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
    if not same_structure(graph, moved):
        names = ", ".join(sorted(floats))
        raise ValueError(
            f"forward takes another path when a float attribute changes ({names}): "
            "a kernel would only be right for this instance's values"
        )
    nodes, moved_nodes = list(graph.nodes), list(moved.nodes)
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
                    "(use the attribute itself, its negation, its reciprocal or its offset from 1)"
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


def same_structure(graph: torch.fx.Graph, other: torch.fx.Graph) -> bool:
    """The same operations in the same order (constants may differ)."""
    nodes, others = list(graph.nodes), list(other.nodes)
    return len(nodes) == len(others) and all(
        a.op == b.op and a.target == b.target for a, b in zip(nodes, others)
    )


def _form(
    value: float, other: float, floats: dict[str, float], after: dict[str, float]
) -> Follows | None:
    for name, before in floats.items():
        for template, fn in _FORMS:
            try:
                if _close(fn(before), value) and _close(fn(after[name]), other):
                    return Follows(arg_name(name), template.format(a=arg_name(name)))
            except ZeroDivisionError:
                continue
    return None


def _close(a: float, b: float) -> bool:
    """Equal, or `b` is `a` rounded to float32: a decomposition that computes in float32 casts
    its scalars (`F.rms_norm`'s eps reaches the graph as 9.99999974738e-06 for 1e-5), and the
    kernel, which reads the attribute as a float32 argument, rounds it the same way."""
    if math.isclose(a, b, rel_tol=1e-12, abs_tol=0.0):
        return True
    return math.isfinite(a) and abs(a) < 3.4e38 and struct.unpack("f", struct.pack("f", a))[0] == b


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
