"""Triton's CPU interpreter made to run a launch's programs in a random order.

The interpreter runs program (0, 0, 0), then (0, 0, 1), ... one after another, so a kernel
whose programs race — one reads what another stores, with no atomic between them (a blocked
cumsum carrying each block's total to the next through memory; a program spilling into its
neighbour's row, which the neighbour then overwrites) — computes the right answer on a CPU and
a wrong one on a GPU, where programs run concurrently in no fixed order. `install()` makes the
interpreter hand out each launch's program ids in a fresh random permutation: every program
still runs once, so a race-free kernel computes the same thing, and a racing one is wrong on
the CPU as it can be on a GPU. The candidate's process calls it before any candidate code
(kbot.evaluate.candidate_host), on a CPU only.
"""

from __future__ import annotations

import random
import secrets

from kbot.evaluate.interpreter_compat import interpreter_parts

# Grids past this many programs keep the interpreter's order (a permutation costs memory, and
# the interpreter would not finish such a launch within a candidate's time anyway).
MAX_SHUFFLED = 1 << 20


def install() -> bool:
    """Shuffles the program order of Triton's interpreter in this process. False where the
    installed interpreter is not one this patch knows."""
    found = interpreter_parts("InterpreterBuilder")
    if found is None or not all(hasattr(found[1], n) for n in ("set_grid_dim", "set_grid_idx")):
        return False
    builder = found[1]
    if getattr(builder.set_grid_idx, "kbot_order", False):
        return True
    set_dim, set_idx = builder.set_grid_dim, builder.set_grid_idx

    def set_grid_dim(self, nx, ny, nz):
        set_dim(self, nx, ny, nz)
        count = int(nx) * int(ny) * int(nz)
        order = None
        if 1 < count <= MAX_SHUFFLED:
            order = list(range(count))
            random.Random(secrets.randbits(64)).shuffle(order)
        self.kbot_order = (order, (int(nx), int(ny), int(nz)))

    def set_grid_idx(self, x, y, z):
        order, dims = getattr(self, "kbot_order", (None, None))
        if order is None or dims != tuple(self.grid_dim):
            return set_idx(self, x, y, z)
        _, ny, nz = dims
        picked = order[(x * ny + y) * nz + z]
        return set_idx(self, picked // (ny * nz), (picked // nz) % ny, picked % nz)

    set_grid_idx.kbot_order = True
    builder.set_grid_dim = set_grid_dim
    builder.set_grid_idx = set_grid_idx
    return True
