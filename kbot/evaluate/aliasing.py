"""Which memory a call's outputs may share: with the inputs, with each other, with the module's
state. The reference decides (kbot.evaluate.correctness works out what its outputs share); the
candidate's process refuses any sharing the reference does not have. An output that overlaps
another output or a weight is not a result of its own: a caller's `h.zero_()` or `y.mul_(s)`
then changes the other output, or every later call (red-team round ten: `(y, y[-1])`, views of
a rotary cache returned as the output)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


@dataclass(frozen=True)
class Allowed:
    inputs: bool = False  # an output may share memory with an input
    outputs: bool = False  # outputs may overlap each other
    state: bool = False  # an output may overlap the module's parameters, buffers, attributes


NOTHING_SHARED = Allowed()


def reference_allows(
    references: tuple, inputs: list, model: torch.nn.Module, mutates_inputs: bool
) -> Allowed:
    """What the reference's own outputs share (everything where the op writes its inputs)."""
    if mutates_inputs:
        return Allowed(True, True, True)
    return Allowed(
        inputs=first_shared(references, inputs) is not None,
        outputs=overlapping_outputs(references) is not None,
        state=output_on_state(references, state_tensors(model, None)) is not None,
    )


def refusal(
    outputs: tuple, inputs: list, kept: list[tuple[str, torch.Tensor]], allowed: Allowed
) -> str | None:
    """Why the candidate's outputs share memory the reference's do not (`kept`: the tensors
    its module keeps), or None."""
    if not allowed.inputs:
        shared = first_shared(outputs, inputs)
        if shared is not None:
            return (
                f"output {shared[0]} shares memory with input {shared[1]}; the reference's "
                "outputs are new tensors"
            )
    if not allowed.outputs:
        pair = overlapping_outputs(outputs)
        if pair is not None:
            return (
                f"outputs {pair[0]} and {pair[1]} overlap in memory; the reference's outputs "
                "are tensors of their own"
            )
    if not allowed.state:
        held = output_on_state(outputs, kept)
        if held is not None:
            return (
                f"output {held[0]} overlaps `{held[1]}`, which the module keeps; the "
                "reference's outputs are new tensors (a caller writing into one would change "
                "later calls)"
            )
    return None


def first_shared(outputs: tuple, inputs: list) -> tuple[int, int] | None:
    """(output, input) of the first output whose storage is an input's."""
    storages = {
        v.untyped_storage().data_ptr(): i
        for i, v in enumerate(inputs)
        if isinstance(v, torch.Tensor) and v.numel() > 0
    }
    for index, value in enumerate(outputs):
        if isinstance(value, torch.Tensor) and value.numel() > 0:
            shared = storages.get(value.untyped_storage().data_ptr())
            if shared is not None:
                return index, shared
    return None


def _span(tensor: torch.Tensor) -> tuple[int, int] | None:
    """The bytes [first, past the last) the view's elements occupy; None when it has none."""
    if tensor.numel() == 0:
        return None
    reach = sum((n - 1) * abs(s) for n, s in zip(tensor.shape, tensor.stride()))
    start = tensor.data_ptr()
    return start, start + (reach + 1) * tensor.element_size()


def _overlap(a: tuple[int, int] | None, b: tuple[int, int] | None) -> bool:
    return a is not None and b is not None and a[0] < b[1] and b[0] < a[1]


def overlapping_outputs(outputs: tuple) -> tuple[int, int] | None:
    """The first two outputs whose elements' bytes overlap (a workspace split into outputs
    side by side does not)."""
    spans = [_span(o) if isinstance(o, torch.Tensor) else None for o in outputs]
    for i, first in enumerate(spans):
        for j in range(i + 1, len(spans)):
            if _overlap(first, spans[j]):
                return i, j
    return None


def state_tensors(model: torch.nn.Module | None, module: Any) -> list[tuple[str, torch.Tensor]]:
    """The tensors a module keeps: parameters, buffers and tensor attributes of each submodule,
    and, given the candidate's module, its global tensors; one level into lists, tuples and
    dicts."""
    found: list[tuple[str, torch.Tensor]] = []

    def add(name: str, value: Any) -> None:
        if isinstance(value, torch.Tensor):
            found.append((name, value))
        elif isinstance(value, (list, tuple)):
            found.extend(
                (f"{name}[{i}]", v) for i, v in enumerate(value) if isinstance(v, torch.Tensor)
            )
        elif isinstance(value, dict):
            found.extend(
                (f"{name}[{k!r}]", v) for k, v in value.items() if isinstance(v, torch.Tensor)
            )

    if model is not None:
        for path, sub in model.named_modules():
            prefix = f"{path}." if path else ""
            for name, value in [*sub._parameters.items(), *sub._buffers.items()]:
                add(prefix + name, value)
            for name, value in vars(sub).items():
                add(prefix + name, value)
    if module is not None:
        for name, value in vars(module).items():
            add(f"module-level {name}", value)
    return found


def output_on_state(
    outputs: tuple, state: list[tuple[str, torch.Tensor]]
) -> tuple[int, str] | None:
    """The first output overlapping a tensor the module keeps, and that tensor's name."""
    spans = [(name, _span(t)) for name, t in state]
    for index, output in enumerate(outputs):
        if isinstance(output, torch.Tensor):
            span = _span(output)
            for name, kept in spans:
                if _overlap(span, kept):
                    return index, name
    return None


def held_outside(
    model: torch.nn.Module, module: Any, loaded: frozenset[str] | None = None
) -> tuple[str, str] | None:
    """(parameter or buffer, where) for the first of ModelNew's parameters and buffers whose
    memory the candidate's module also holds (a global registry, a class attribute): every
    instance would share it, so a model of many layers loads all their weights into one.
    A non-persistent buffer whose name is not among `loaded` (Model's state_dict: what a
    checkpoint loads) may be shared: a rotary cos/sin table built from the constructor's
    arguments, handed to every layer of one size from a cache (vLLM's `get_rope`)."""
    from kbot.evaluate.state_check import kept_tensors, walk

    tables = set()
    if loaded is not None:
        for prefix, sub in model.named_modules(remove_duplicate=False):
            for name in sub._non_persistent_buffers_set:
                full = f"{prefix}.{name}" if prefix else name
                if full not in loaded:
                    tables.add(full)
    own = {}
    for name, tensor in [
        *model.named_parameters(remove_duplicate=False),
        *model.named_buffers(remove_duplicate=False),
    ]:
        if tensor.numel() > 0 and name not in tables:
            own.setdefault(tensor.untyped_storage().data_ptr(), name)
    for where, storage in kept_tensors(walk(None, module)):
        name = own.get(storage.untyped_storage().data_ptr()) if storage.numel() > 0 else None
        if name is not None:
            return name, where
    return None
