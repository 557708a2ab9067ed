"""Variants of the reduction and matmul schedules."""

from __future__ import annotations

from kbot.propose.codegen.classify import ScheduleKind
from kbot.propose.codegen.emit_reduction import emit_reduction
from kbot.propose.codegen.trace import Unsupported

# A row up to this many fp32 columns is held in registers in one pass; wider rows spill, so
# they loop (16k fp32 = 64 KiB per row across 16 warps: 32 registers a thread).
ONE_PASS_MAX_COLS = 16384


def more_variants(traced, schedule, spec, n_cols):  # type: ignore[no-untyped-def]
    from kbot.propose.codegen.variants import _pow2

    if schedule.kind == ScheduleKind.ROW_REDUCTION:
        out = []
        width = _pow2(n_cols)
        if width <= ONE_PASS_MAX_COLS:
            warps = 4 if width <= 1024 else 8 if width <= 4096 else 16
            rows = max(1, min(16, 2048 // width))
            for r, w in {(1, warps), (rows, warps), (1, max(4, warps // 2))}:
                out.append(_reduction(f"one pass r{r} w{w}", r, None, w))
        for block, w in ((4096, 8), (2048, 4), (8192, 16)):
            if block < width:
                out.append(_reduction(f"looped b{block} w{w}", 1, block, w))
        if not out:
            out.append(_reduction("looped b4096 w8", 1, min(width, 4096), 8))
        return out
    raise Unsupported(f"the {schedule.kind.value} schedule is not emitted yet")


def _reduction(label, rows, block, warps):  # type: ignore[no-untyped-def]
    from kbot.propose.codegen.variants import Variant

    return Variant(
        label,
        lambda t, s, z, op: emit_reduction(t, s, z, op, rows=rows, block_n=block, num_warps=warps),
    )
