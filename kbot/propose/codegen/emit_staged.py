"""Reductions of reductions as a chain of kernels (stages.py plans them): each earlier stage is
emitted by its own schedule's first variant into buffers, the last stage by the variant being
offered, which loads the buffers as it loads an extern op's result. In an extern program
(classify.py) some stages are extern calls: the launcher runs the declared op on views of
what it holds (inputs, buffers, earlier results) and later kernels load its result.

A buffer has the dtype of the value it holds, so it rounds where the reference rounds. Each
stage's tunables get the stage's suffix (`NUM_WARPS_STAGE1`): the stages' rows differ in width,
so they are tuned apart.
"""

from __future__ import annotations

import re
from dataclasses import replace

from kbot.propose.codegen.candidate import output_allocation
from kbot.propose.codegen.emit_matmul import extern_call
from kbot.propose.codegen.emitted import Emitted, Tunable
from kbot.propose.codegen.schedule import Schedule, ScheduleKind
from kbot.propose.codegen.sizes import SizeNames
from kbot.propose.codegen.trace import TracedProblem


def emit_staged(
    traced: TracedProblem,
    schedule: Schedule,
    sizes: SizeNames,
    op: str,
    stage_emits: list,
    final_emit,  # type: ignore[no-untyped-def]
    extern_args: dict[str, str] | None = None,
    *,
    extern_ops: tuple[str, ...] = (),
    **options,  # type: ignore[no-untyped-def]
) -> Emitted:
    loaded = dict(extern_args or {})
    kernels, launcher, tunables = [], [], []
    calls = [s for s in schedule.stages if s.kind == ScheduleKind.EXTERN]
    count = len(schedule.stages) - len(calls) + 1  # kernels
    k = 0
    for stage, emit in zip(schedule.stages, stage_emits):
        if stage.kind == ScheduleKind.EXTERN:
            name = stage.out_names[0]
            call = extern_call(stage.matmul, extern_ops, traced, sizes, loaded=loaded)
            launcher.append(f"# {stage.matmul.target} runs as the declared extern op")
            launcher.append(f"{name} = {call}")
            loaded[stage.matmul.name] = name
            continue
        k += 1
        emitted = emit(traced, stage, sizes, f"{op}_stage{k}", dict(loaded))
        names = list(stage.out_names)
        launcher.append(f"# stage {k} of {count}: {', '.join(names)}")
        for name, (node, _) in zip(names, stage.outputs):
            launcher.append(output_allocation(traced, sizes, name, node))
            loaded[node.name] = name
        renames = {t.name: f"{t.name}_STAGE{k}" for t in emitted.tunables}
        launcher += [_rename(line, renames) for line in emitted.launcher]
        tunables += [
            Tunable(renames[t.name], t.value, f"stage {k}: {t.why}") for t in emitted.tunables
        ]
        kernels += emitted.kernels
    final = final_emit(traced, replace(schedule, stages=()), sizes, op, loaded, **options)
    launcher.append(f"# stage {count} of {count}: the outputs")
    params = dict(final.params, stages=count)
    if calls:
        params.update(schedule=f"extern_{final.params['schedule']}", extern=True)
        params["extern_calls"] = len(calls)
    return Emitted(
        kernels + final.kernels, launcher + final.launcher, tunables + final.tunables, params
    )


def _rename(line: str, renames: dict[str, str]) -> str:
    for old, new in renames.items():
        line = re.sub(rf"\b{old}\b(?!=)", new, line)  # not the keyword of `BLOCK_N=BLOCK_N`
    return line
