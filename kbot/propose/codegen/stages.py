"""Reductions of reductions: which values to write to a buffer so each kernel reduces one shape.

`x.mean(dim=2)` then a softmax over channels, `sum(dim=1)` then `max`, GroupNorm then a mean
over every dim: the second reduction reads the first one's result, a tensor of another shape,
so no one tile walks both. Such a forward runs as stages: a reduction that a later reduction of
another shape (or over other dims) depends on is *materialized*, computed by a kernel of its own
into a buffer, and later kernels load it like an input (`KernelBody.extern_args`). Reductions
of one shape and dims that depend only on earlier buffers share a stage (GroupNorm's mean and
variance). This module only plans: which nodes each stage computes; classify.py builds each
stage's schedule and emit_staged.py chains the kernels.

Extern ops are stages too, run by the launcher: the value an extern op reads (`operand_roots`)
is an input, an earlier extern op's result, or a buffer that a kernel writes just before the
call (a sigmoid between two Linears, the softmax of attention's second matmul).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable

import torch
import torch.fx

aten = torch.ops.aten

# The views emit_matmul.view_source replays on an extern op's operand in the launcher.
REPLAYED_VIEWS = frozenset(
    {
        aten.permute.default,
        aten.view.default,
        aten._unsafe_view.default,
        aten.reshape.default,
        aten.expand.default,
        aten.unsqueeze.default,
        aten.alias.default,
        aten.clone.default,
    }
)


def materialized(
    nodes: list[torch.fx.Node],
    reductions: list[torch.fx.Node],
    key: Callable,
    every: set[torch.fx.Node] = frozenset(),  # type: ignore[assignment]
) -> list[list[torch.fx.Node]]:
    """The reductions to write to buffers, grouped into stages in launch order: a reduction is
    materialized when a reduction with another `key` (input shape and reduced dims) depends on
    it, or when it is in `every` (the outputs fit no reduction's tile). A stage holds
    reductions of one key whose other materialized inputs are all in earlier stages (those of
    its own key that it reads are computed earlier in the same kernel)."""
    keys: dict[torch.fx.Node, Hashable] = {r: key(r) for r in reductions}
    chosen = [
        r for r in reductions if r in every or any(keys[d] != keys[r] for d in _downstream(r, keys))
    ]
    stages: list[list[torch.fx.Node]] = []
    remaining = list(chosen)
    while remaining:
        first = next(r for r in remaining if not (ancestors(r) & set(remaining)))
        stage = [first]
        grown = True
        while grown:  # a softmax's max and sum: one stage, two levels of one kernel
            grown = False
            for r in remaining:
                if r not in stage and keys[r] == keys[first]:
                    if (ancestors(r) & set(remaining)) <= set(stage):
                        stage.append(r)
                        grown = True
        stages.append([r for r in remaining if r in stage])
        remaining = [r for r in remaining if r not in stage]
    return stages


def needed(
    outputs: tuple[torch.fx.Node, ...], stop: set[torch.fx.Node], nodes: list[torch.fx.Node]
) -> list[torch.fx.Node]:
    """The compute nodes (of `nodes`, in graph order) that `outputs` depend on, not looking
    past `stop` (buffers an earlier stage writes, an extern op's result)."""
    seen: set[torch.fx.Node] = set()
    todo = list(outputs)
    while todo:
        node = todo.pop()
        if node in seen:
            continue
        seen.add(node)
        if node not in stop or node in outputs:
            todo += [n for n in node.all_input_nodes if n not in seen and n not in stop]
    return [n for n in nodes if n in seen and (n not in stop or n in outputs)]


def ancestors(node: torch.fx.Node) -> set[torch.fx.Node]:
    """Every node `node` depends on, directly or not."""
    seen: set[torch.fx.Node] = set()
    todo = list(node.all_input_nodes)
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo += n.all_input_nodes
    return seen


def _downstream(node: torch.fx.Node, keys: dict) -> list:
    """The reductions (keys of `keys`) that depend on `node`."""
    return [r for r in keys if r is not node and node in ancestors(r)]


def operand_roots(extern: torch.fx.Node) -> list[torch.fx.Node]:
    """The values an extern op (mm, bmm, convolution) reads under the views the launcher
    replays: its operands and a convolution's bias, each followed up its chain of views."""
    operands = extern.args[:3] if extern.target == aten.convolution.default else extern.args[:2]
    roots = []
    for operand in operands:
        while isinstance(operand, torch.fx.Node) and operand.target in REPLAYED_VIEWS:
            operand = operand.args[0]
        if isinstance(operand, torch.fx.Node) and operand not in roots:
            roots.append(operand)
    return roots
