"""The reduction schedules' variants: one pass or looped rows, rows split across programs
(wide rows at decode, a reduction of every dim), and the tiled middle-dim schedule."""

from __future__ import annotations

from kbot.propose.codegen.classify import Schedule
from kbot.propose.codegen.emit_reduction import emit_reduction
from kbot.propose.codegen.emit_split import emit_split
from kbot.propose.codegen.emit_tiled import emit_tiled_reduction
from kbot.propose.codegen.variant import Variant, hint, pow2

# A row up to this many columns is held in registers in one pass; wider rows would spill,
# so they loop (16k fp32 across 16 warps is 32 registers a thread).
ONE_PASS_MAX_COLS = 16384
# A reduced extent up to this is loaded as one [nextpow2(n_red), BLOCK] slab (a MoE top-k);
# longer ones loop over it BLOCK_RED rows at a time.
TILED_ONE_PASS_MAX_RED = 64
TILED_LOOP_ROWS = 8
# fp32 values one thread holds of the slab: 64 keeps it in registers without spilling.
TILED_VALUES_PER_THREAD = 64


def with_tiled(base: list[Variant], schedule: Schedule) -> list[Variant]:
    """Adds the tiled middle-dim schedule (emit_tiled.py): first when the inner dims are wide
    enough for coalesced vectors, after the row variants otherwise."""
    n_red = hint(schedule.iter_shape[schedule.col_dim])
    n_inner = 1
    for size in schedule.iter_shape[schedule.col_dim + 1 :]:
        n_inner *= hint(size)
    one_pass = pow2(n_red) <= TILED_ONE_PASS_MAX_RED
    rows = pow2(n_red) if one_pass else TILED_LOOP_ROWS
    inner = pow2(n_inner)
    block = max(64, TILED_VALUES_PER_THREAD * 32 * 4 // rows)  # at 4 warps
    choices = [(block, 4), (2 * block, 8), (max(64, block // 4), 2)]
    choices = list(dict.fromkeys((min(b, inner), w) for b, w in choices))
    wide = n_inner >= 64
    if not wide:
        choices = choices[:1]
    tiled = []
    for b, warps in choices:
        red = None if one_pass else TILED_LOOP_ROWS
        label = f"tiled {'one pass' if one_pass else f'looped r{red}'} b{b} w{warps}"
        tiled.append(
            Variant(
                label,
                lambda t, s, z, op, ext=None, b=b, r=red, w=warps, **kw: emit_tiled_reduction(
                    t, s, z, op, block=b, block_red=r, num_warps=w, extern_args=ext, **kw
                ),
                family="tiled",
                block=b,
                warps=warps,
            )
        )
    if not wide:
        return base + tiled
    # The tiled variants lead (the search seeds from the first few), the best row variant third.
    return tiled[:2] + base[:1] + tiled[2:] + base[1:]


# Split rows this wide across several programs: at decode sizes (1-64 rows) one program per
# row would leave most of the H200's 132 SMs idle.
SPLIT_MIN_COLS = 16384
SPLIT_CHOICES = ((32, 2048, 4), (128, 1024, 4))


# A row that is the whole op: programs of at least ROWLESS_MIN_CHUNK elements each, between 8
# and ROWLESS_MAX_SPLITS of them (the finishing kernel holds every partial in registers).
ROWLESS_MIN_CHUNK = 32768
ROWLESS_MAX_SPLITS = 4096


def rowless_splits(n_cols: int) -> int:
    """Programs for one row of `n_cols` elements: a power of two."""
    wanted = max(8, min(ROWLESS_MAX_SPLITS, n_cols // ROWLESS_MIN_CHUNK))
    return 1 << (wanted.bit_length() - 1)


def reduction_variants(
    n_cols: int,
    can_split: bool,
    middle: bool,
    one_pass_max: int = ONE_PASS_MAX_COLS,
    rowless: bool = False,
) -> list[Variant]:
    """`rowless`: every dim is reduced (one row), so one row per program: a value loaded at
    no row index is `[1, BLOCK_N]`, which a `[ROWS, BLOCK_N]` mask does not fit."""
    width = pow2(n_cols)
    choices: list[tuple[int, int | None, int]] = []
    if middle and width <= 64:
        # Reducing a short middle dim (MoE top-k): the rows run along the contiguous last dim,
        # so many rows per program make each load a wide coalesced sweep.
        choices += [(256, None, 4), (1024, None, 8)]
    if width <= one_pass_max:
        warps = 4 if width <= 1024 else 8 if width <= 4096 else 16 if width <= 16384 else 32
        rows = max(1, min(16, 2048 // width))
        choices += [(1, None, warps), (rows, None, warps), (1, None, max(4, warps // 2))]
    for block, warps in ((4096, 8), (2048, 4), (8192, 16)):
        if block < width:
            choices.append((1, block, warps))
    if rowless:
        choices = [(1, block, warps) for _, block, warps in choices]
    out = []
    for rows, block, warps in dict.fromkeys(choices):
        label = f"{'one pass' if block is None else f'looped b{block}'} r{rows} w{warps}"
        out.append(
            Variant(
                label,
                lambda t, s, z, op, ext=None, r=rows, b=block, w=warps, **kw: emit_reduction(
                    t, s, z, op, rows=r, block_n=b, num_warps=w, extern_args=ext, **kw
                ),
                family="one pass" if block is None else "looped",
                block=block or 0,
                warps=warps,
                rows=rows,
            )
        )
    if can_split and n_cols >= SPLIT_MIN_COLS:
        split_choices = SPLIT_CHOICES
        if rowless:
            # One row is the whole op (a loss, a norm of everything): split it over enough
            # programs to fill the GPU at any size, first (KernelBench L1/94's mean over 2^30
            # elements took 397 ms in one looped program, 1% of copy bandwidth).
            split_choices = ((rowless_splits(n_cols), 1024, 4), *SPLIT_CHOICES)
        splits_first = []
        for splits, block, warps in split_choices:
            splits_first.insert(
                0,
                Variant(
                    f"split {splits} b{block} w{warps}",
                    lambda t, s, z, op, ext=None, p=splits, b=block, w=warps, **kw: emit_split(
                        t, s, z, op, splits=p, block_n=b, num_warps=w, extern_args=ext, **kw
                    ),
                    family="split",
                    block=block,
                    warps=warps,
                ),
            )
        if rowless:  # the size-scaled split first, then the fixed ones as before
            out = [splits_first[-1], *splits_first[:-1], *out]
        else:
            out[1:1] = splits_first
    return out
