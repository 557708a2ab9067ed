"""Pointwise outputs of different shapes: one kernel per output shape, one launcher.

RoPE with grouped-query attention returns `(query_rot, key_rot)` of `[T, 16 * 128]` and
`[T, 4 * 128]`: no single tile grid covers both. `classify` splits the outputs into groups of
one shape (`Schedule.groups`); here each group is emitted by the ordinary pointwise emitter as
its own kernel `_<op>_<outputs>_kernel`, and the launcher runs them one after the other. A
group's kernel lowers only the values its outputs depend on, so a shared input (the gathered
cos/sin) is read by each kernel that needs it.
"""

from __future__ import annotations

from dataclasses import replace

from kbot.propose.codegen.classify import Schedule
from kbot.propose.codegen.emitted import Emitted, Tunable
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.trace import TracedProblem


def group_label(group: Schedule) -> str:
    """`out0` or `out1_out2`: the names of a group's outputs, used in its kernel's name."""
    return "_".join(group.out_names)


def emit_groups(
    traced: TracedProblem, schedule: Schedule, sizes: SizeNames, op: str, emit
) -> Emitted:
    """Runs `emit` (one pointwise variant) once per group and joins the results: all kernels,
    their launches in group order, the tunables once (every group uses the same values)."""
    kernels, launcher = [], []
    tunables: dict[str, Tunable] = {}
    params: dict = {}
    for group in schedule.groups:
        emitted = emit(traced, group, sizes, f"{op}_{group_label(group)}")
        kernels += emitted.kernels
        shape = ", ".join(sizes.python(s) for s in group.iter_shape)
        launcher.append(f"# {', '.join(group.out_names)}: [{shape}]")
        launcher += emitted.launcher
        for tunable in emitted.tunables:
            tunables.setdefault(tunable.name, tunable)
        params = params or dict(emitted.params)
    params["kernels"] = len(kernels)
    return Emitted(kernels, launcher, list(tunables.values()), params)


def grouped_variants(schedule: Schedule, variants: list) -> list:
    """Each pointwise variant applied to every group (the tile fits the widest group)."""
    return [
        replace(
            v,
            label=f"{v.label}, {len(schedule.groups)} kernels (one per output shape)",
            emit=lambda t, s, z, op, v=v: emit_groups(t, s, z, op, v.emit),
        )
        for v in variants
    ]
