"""Extra leading dims as more rows: the launcher of an op traced on [T, hidden] also takes
[batch, seqlen, hidden].

A problem written from a model configuration sizes a norm's input [T, hidden], as serving
engines call it; gpt-fast, litgpt and torchtitan call the same norm on [batch, seqlen, hidden].
Where the traced graph treats its first dim as rows (a symbolic size that is dim 0 of every
forward tensor that has it and of every output, and appears nowhere else), the public launcher
reshapes every such input to the traced rank, calls the traced launcher, and gives the outputs
the caller's leading dims back. At the traced rank nothing is reshaped: the traced launcher is
called as it was. Whether flattening is right for the op (no reduction or mixing along that
dim) is the evaluator's to say, on inputs with more leading dims; until it has, the publish
guard keeps the traced rank.
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy
import torch

from kbot.propose.codegen.indexing import shape_of
from kbot.propose.codegen.sizes import size_expr
from kbot.propose.codegen.trace import TracedProblem


@dataclass(frozen=True)
class LeadingRows:
    """The forward tensor arguments that carry the row dim, with their traced ranks, and the
    traced ranks of the outputs."""

    inputs: tuple[tuple[str, int], ...]  # (launcher argument, traced rank)
    outputs: tuple[int, ...]


def leading_rows(traced: TracedProblem, outputs: list, mutates_inputs: bool) -> LeadingRows | None:
    """The plan, or None where the graph's first dim is not plainly rows (or the op writes into
    its inputs: a reshaped copy would take the writes)."""
    if mutates_inputs or not outputs:
        return None
    nodes = {n.name: n for n in traced.graph.nodes if n.op == "placeholder"}
    forward = [
        g for g in traced.inputs
        if g.is_tensor and not g.source.startswith(("self.", "torch.view_as_real("))
    ]  # fmt: skip
    if not forward or any(g.size_of for g in traced.inputs):
        return None
    first = shape_of(nodes[forward[0].node_name])
    if not first:
        return None
    rows = size_expr(first[0])
    if not isinstance(rows, sympy.Symbol):
        return None
    carried = []
    for graph_input in traced.inputs:
        if not graph_input.is_tensor:
            continue
        shape = shape_of(nodes[graph_input.node_name])
        dims = [size_expr(s) for s in shape]
        elsewhere = any(rows in d.free_symbols for d in dims[1:])
        if elsewhere:
            return None
        if dims and dims[0] == rows:
            if graph_input not in forward:
                return None  # a parameter sized by the rows: not a batch of rows
            carried.append((graph_input.arg_name, len(dims)))
        elif dims and rows in dims[0].free_symbols:
            return None
    if _mixes_rows(traced, rows):
        return None
    ranks = []
    for node in outputs:
        dims = [size_expr(s) for s in shape_of(node)]
        if not dims or dims[0] != rows or any(rows in d.free_symbols for d in dims[1:]):
            return None
        ranks.append(len(dims))
    return LeadingRows(tuple(carried), tuple(ranks))


# ops that run along a dim (its index in args[1]): along the rows they mix them
_ALONG_A_DIM = frozenset("cumsum cumprod logcumsumexp cummax cummin flip roll sort".split())


def _mixes_rows(traced: TracedProblem, rows: sympy.Symbol) -> bool:
    """Whether some value of the graph combines rows: the rows in another dim or folded into
    one (a view), a value without them computed from one with them (a reduction over the rows,
    a row picked), or a scan or flip along them."""
    for node in traced.graph.nodes:
        if node.op != "call_function" or not isinstance(node.meta.get("val"), torch.Tensor):
            continue  # sizes and other numbers the trace computes
        dims = [size_expr(s) for s in shape_of(node)]
        if any(rows in d.free_symbols for d in dims[1:]):
            return True
        if dims and rows in dims[0].free_symbols and dims[0] != rows:
            return True
        carries = [
            a for a in node.all_input_nodes
            if (shape := shape_of(a)) and size_expr(shape[0]) == rows
        ]  # fmt: skip
        if carries and not (dims and dims[0] == rows):
            return True
        name = getattr(node.target, "__name__", "").split(".")[0]
        if carries and name in _ALONG_A_DIM and _along_first(node, len(dims)):
            return True
    return False


def _along_first(node, rank: int) -> bool:
    dim = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim", node.kwargs.get("dims"))
    dims = dim if isinstance(dim, (list, tuple)) else [dim]
    return any(isinstance(d, int) and d % max(rank, 1) == 0 for d in dims)


def wrapper_lines(
    plan: LeadingRows, op: str, inner: str, params: list[str], returns_tuple: bool
) -> list[str]:
    """`def {op}(...)`: the public launcher over `inner`, the traced one."""
    first, first_rank = plan.inputs[0]
    call = f"{inner}({', '.join(params)})"
    lines = [
        f"def {op}({', '.join(params)}):",
        f'    """`{inner}` for {first} of rank {first_rank} or more: the extra leading dims are',
        "    more rows (flattened here, given back to the outputs); at the traced rank it is",
        f'    `{inner}` itself."""',
        f"    if {first}.dim() == {first_rank}:",
        f"        return {call}",
        f"    lead = {first}.shape[: {first}.dim() - {first_rank - 1}]",
    ]
    for name, rank in plan.inputs:
        kept = f"{name}.shape[{name}.dim() - {rank - 1} :]" if rank > 1 else "()"
        if name != first:
            lines += [
                f"    if {name}.shape[: {name}.dim() - {rank - 1}] != lead:",
                f"        raise ValueError(\"{name}'s leading dims differ from {first}'s\")",
            ]
        lines.append(f"    {name} = {name}.reshape(-1, *{kept})")
    results = [f"out{i}" for i in range(len(plan.outputs))]
    lines.append(
        f"    {', '.join(results)}{',' if len(results) == 1 and returns_tuple else ''} = {call}"
    )
    restored = [f"{r}.reshape(*lead, *{r}.shape[1:])" for r in results]
    tail = ", ".join(restored) + ("," if len(restored) == 1 and returns_tuple else "")
    lines.append(f"    return {tail}")
    return lines
