"""What the candidate's process does with the device's memory around a judged call: the poison
laid over freed allocator blocks before it, and whose an out-of-memory is when the card is
shared with the judge's other processes (kbot.evaluate.host_session)."""

from __future__ import annotations

import torch
from torch.cuda import mem_get_info, memory_allocated, memory_reserved

from kbot.evaluate.processes import short
from kbot.evaluate.tail_canaries import garbage

MIN_BYTES = 64 << 20  # the larger poison block's least size on a GPU
# torch.cuda's memory queries are bound here, when the candidate's process starts and before
# any candidate code runs: a candidate that rebinds `torch.cuda.mem_get_info` to report a
# crowded card does not make its own out-of-memory the judge's.


def poison(sizes: list[int], device: torch.device, rng: torch.Generator) -> None:
    """Fills freed allocator blocks with random bytes, drawn anew each call, so an output the
    candidate allocates but does not write holds garbage rather than an earlier result, and
    nothing a kernel could tell the trials by (a fixed 0xFF was such a sign).

    Best effort: a block that does not fit is left out, since the judge's own allocation failing
    is not the candidate's error. KernelBench's 36_RMSNorm_ (7 GiB in, 7 GiB out) had every
    candidate rejected as `forward-error` by a 14 GiB poison block on an 80 GB H100 whose memory
    the judge's other processes shared (2026-12-05)."""
    blocks = []
    try:
        for n in sizes:  # the outputs' own sizes first: the blocks their allocations reuse
            blocks.append(garbage(torch.empty(max(n, 1), dtype=torch.uint8, device=device), rng))
        if device.type == "cuda":
            free, total = mem_get_info(device)
            cached = memory_reserved(device) - memory_allocated(device)
            extra = poison_bytes(max(MIN_BYTES, 2 * sum(sizes)), free, total, cached)
            if extra:
                blocks.append(garbage(torch.empty(extra, dtype=torch.uint8, device=device), rng))
    except torch.OutOfMemoryError:
        pass  # what was poisoned stays poisoned; the call runs on
    del blocks


def crowded_out(exc: BaseException, device: torch.device) -> str | None:
    """Why an out-of-memory is the judge's failure, where it is: other processes (the judge's
    worker, torch.compile's capture, another evaluation) held more than a quarter of the card.
    Such a verdict is never cached, so the candidate is judged again on a quieter card."""
    if device.type != "cuda" or not isinstance(exc, torch.OutOfMemoryError):
        return None
    free, total = mem_get_info(device)
    here = memory_reserved(device)
    if not crowded(free, total, here):
        return None
    others = total - free - here
    return (
        f"the card ran out of memory while other processes held {others / 2**30:.1f} GiB of its "
        f"{total / 2**30:.0f} GiB and the candidate's {here / 2**30:.1f} GiB: {short(exc)}"
    )


def crowded(free: int, total: int, here: int) -> bool:
    """Processes other than this one hold more than a quarter of the card."""
    return total - free - here > total // 4


def poison_bytes(wanted: int, free: int, total: int, cached: int) -> int:
    """The larger poison block's size: `wanted`, taken from this process's cached free blocks
    and from the device's free memory beyond a quarter of the card, which stays free for the
    call itself and for the judge's other processes (the worker, torch.compile's capture); a
    block that once left this process's cache is not given back to them."""
    spare = cached + max(0, free - total // 4)
    return max(0, min(wanted, spare))
