"""Triton's CPU interpreter made to refuse loads and stores outside the kernel's tensors.

Under the interpreter a kernel's pointers are raw addresses into the host memory of the
tensors it was given, and a load or store goes wherever its pointer points: an unmasked tail
(24 floats past the output) corrupted the candidate's process or crashed it, with a different
rule each run, or passed where it landed in memory nobody read. On a GPU the same kernel
writes past its buffer into whatever the allocator put there. `install()` checks every
active (unmasked) address of a load, store or atomic against the storages of the tensors the
launch was given and raises, naming the kernel's mistake, when one falls outside all of them.
At the launch's end it also refuses a plain (not atomic) load of an address that another
program of the same launch stored plainly: the interpreter runs programs one at a time, so
programs accumulating into one place with a load and a store (a lost update on a GPU, where
they run at once) computed the right sum. Likewise a plain store to an address another program
of the launch touches atomically (an atomic used as the read of a lost update, round eight's
c03; or a plain initialisation racing the others' atomic adds). A launch touching more than
MAX_TRACKED accesses keeps each address once, with the program that touched it or "many"; one
touching more distinct addresses than half of that is followed on a random sample of them
(addresses in one residue class, the class narrowed as the launch grows), never dropped (round
eight's c04 switched the check off with dummy loads). The candidate's process calls it before any candidate code
(kbot.evaluate.candidate_host), on a CPU only.
"""

from __future__ import annotations

import bisect
import secrets

import numpy as np

from kbot.evaluate.interpreter_compat import interpreter_parts

_SPANS: list[tuple[int, int]] = []  # the launch in progress: (start, end) of each storage
# The launch in progress: each program's plain loads and stores and its atomics, as
# (program number, addresses) pieces, for the race check at its end.
_ACCESSES: dict[str, list] = {"load": [], "store": [], "atomic": []}
MAX_TRACKED = 1 << 22  # addresses a launch's race check holds at most (then it samples)
MANY = -1  # in place of a program number: several programs touched the address
# The sample followed: addresses whose 16-byte word is `salt` modulo `modulus`.
_SAMPLE = {"modulus": 1, "salt": 0, "held": 0}
# The program in progress: its loads and stores since its last barrier, as (addresses, lanes).
_OWN: dict[str, object] = {"program": None, "load": [], "store": []}


class Race(RuntimeError):
    """One program of a launch reads what another stores, with no atomic between them."""


class OutOfBounds(IndexError):
    """A kernel's load or store outside every tensor its launch was given."""


def _collect(value, spans: set[tuple[int, int]]) -> None:
    import torch

    if isinstance(value, torch.Tensor):
        storage = value.untyped_storage()
        if storage.nbytes():
            spans.add((storage.data_ptr(), storage.data_ptr() + storage.nbytes()))
    elif isinstance(value, (tuple, list)):
        for item in value:
            _collect(item, spans)
    elif hasattr(value, "base") and hasattr(value, "block_shape"):  # a TensorDescriptor
        _collect(value.base, spans)


def _check(builder, ptrs, mask, what: str) -> None:
    if not _SPANS or ptrs is None:
        return
    addresses = np.asarray(ptrs.data).astype(np.uint64, copy=False).reshape(-1)
    lanes = np.arange(addresses.size, dtype=np.int64)  # each element's place in the block
    if mask is not None:
        active = np.asarray(mask.data).reshape(-1)
        if active.size == addresses.size:
            addresses, lanes = addresses[active.astype(bool)], lanes[active.astype(bool)]
        elif active.size == 1 and not bool(active[0]):
            return
    if addresses.size == 0:
        return
    _track(builder, what, addresses)
    if what != "atomic":
        _within_program(builder, what, addresses, lanes)
    try:
        size = max(1, int(ptrs.get_element_ty().primitive_bitwidth) // 8)
    except (AttributeError, TypeError):
        size = 1
    starts = [s for s, _ in _SPANS]
    low, high = int(addresses.min()), int(addresses.max()) + size
    index = bisect.bisect_right(starts, low) - 1
    if index >= 0 and high <= _SPANS[index][1]:
        return  # all inside one storage (the common case)
    for address in np.unique(addresses).tolist():
        index = bisect.bisect_right(starts, address) - 1
        if index < 0 or address + size > _SPANS[index][1]:
            raise OutOfBounds(
                f"the kernel's {what} reaches address {address:#x}, outside every tensor its "
                "launch was given (an unmasked tail, or an offset past the end); mask it"
            )


def _track(builder, what: str, addresses: np.ndarray) -> None:
    addresses = _sampled(addresses)
    if addresses.size == 0:
        return
    x, y, z = getattr(builder, "grid_idx", None) or (0, 0, 0)
    _, ny, nz = getattr(builder, "grid_dim", None) or (1, 1, 1)
    program = np.full(addresses.size, (x * ny + y) * nz + z, dtype=np.int64)
    _ACCESSES[what].append((program, addresses.copy()))
    _SAMPLE["held"] += addresses.size
    if _SAMPLE["held"] > MAX_TRACKED:
        _compact()
        while _SAMPLE["held"] > MAX_TRACKED // 2:
            _narrow()


def _compact() -> None:
    """Each kind's accesses as one piece: every address once, with the program that touched it
    or MANY. Loads of the same addresses over and over (round eleven's control: 4096 addresses
    loaded 1100 times) then hold 4096 entries, and the sample narrows only for a launch that
    touches more distinct addresses than MAX_TRACKED / 2 (a narrowed sample follows one word in
    2, 4, ... and misses a race confined to a few words with that chance)."""
    held = 0
    for what, pieces in _ACCESSES.items():
        if not pieces:
            continue
        programs = np.concatenate([p for p, _ in pieces])
        addresses = np.concatenate([a for _, a in pieces])
        order = np.lexsort((programs, addresses))
        programs, addresses = programs[order], addresses[order]
        unique, starts = np.unique(addresses, return_index=True)
        one = np.minimum.reduceat(programs, starts) == np.maximum.reduceat(programs, starts)
        _ACCESSES[what] = [(np.where(one, programs[starts], MANY), unique)]
        held += unique.size
    _SAMPLE["held"] = held


def _sampled(addresses: np.ndarray) -> np.ndarray:
    return addresses[_in_sample(addresses)] if _SAMPLE["modulus"] > 1 else addresses


def _in_sample(addresses: np.ndarray) -> np.ndarray:
    return (addresses // 16) % _SAMPLE["modulus"] == _SAMPLE["salt"]


def _within_program(builder, what: str, addresses: np.ndarray, lanes: np.ndarray) -> None:
    """Inside one program, since its last `tl.debug_barrier()`: a load of what another element
    of the block stored, or a store over what another element loaded. On a GPU a program's
    elements are spread over threads that run apart, and Triton orders global memory between
    them only at a barrier (round eight's c05: a scan through memory without one)."""
    program = getattr(builder, "grid_idx", None)
    if _OWN["program"] != program:
        _OWN.update(program=program, load=[], store=[])
    if _SAMPLE["modulus"] > 1:
        kept = _in_sample(addresses)
        addresses, lanes = addresses[kept], lanes[kept]
    # Only what the sample kept: a program's earlier accesses may have kept none (a store of
    # 64 addresses, none in the class), and a search in nothing indexes an empty array.
    other = [(a, b) for a, b in _OWN["store" if what == "load" else "load"] if a.size]
    if other and addresses.size:
        seen = np.concatenate([a for a, _ in other])
        seen_lanes = np.concatenate([b for _, b in other])
        order = np.argsort(seen, kind="stable")
        seen, seen_lanes = seen[order], seen_lanes[order]
        unique, starts = np.unique(seen, return_index=True)
        low = np.minimum.reduceat(seen_lanes, starts)
        high = np.maximum.reduceat(seen_lanes, starts)
        at = np.clip(np.searchsorted(unique, addresses), 0, unique.size - 1)
        hit = unique[at] == addresses
        if np.any(hit & ((low[at] != lanes) | (high[at] != lanes))):
            raise Race(
                f"one element of the program's block {what}s where another element "
                f"{'stored' if what == 'load' else 'loaded'}, with no tl.debug_barrier() "
                "between: on a GPU the block's elements run on threads that do not wait for "
                "each other (put a barrier between the store and the load)"
            )
    _OWN[what].append((addresses.copy(), lanes.copy()))
    if sum(a.size for pieces in (_OWN["load"], _OWN["store"]) for a, _ in pieces) > MAX_TRACKED:
        _OWN.update(load=[], store=[])  # the launch's sample narrows as _track holds more


def _barrier() -> None:
    _OWN.update(load=[], store=[])


def _narrow() -> None:
    """Halves the sample: twice the modulus, a salt inside the old class, drawn at random so a
    kernel cannot place its race outside it."""
    modulus = _SAMPLE["modulus"]
    _SAMPLE["salt"] += modulus * secrets.randbelow(2)
    _SAMPLE["modulus"] = 2 * modulus
    held = 0
    for what, pieces in _ACCESSES.items():
        kept = [(p[inside], a[inside]) for p, a in pieces for inside in (_in_sample(a),)]
        _ACCESSES[what] = [(p, a) for p, a in kept if a.size]
        held += sum(a.size for _, a in _ACCESSES[what])
    _SAMPLE["held"] = held


def _reset() -> None:
    _ACCESSES.update(load=[], store=[], atomic=[])
    _SAMPLE.update(modulus=1, salt=0, held=0)
    _OWN.update(program=None, load=[], store=[])


def _race_check() -> None:
    """At a launch's end: a load of an address another program of the launch stored plainly,
    or a plain store to an address another program touches atomically. On a GPU programs run
    concurrently: which value that load sees, or which write lands last, is a race (a lost
    update where programs accumulate into one place with a load and a store)."""
    loads, stores, atomics = _ACCESSES["load"], _ACCESSES["store"], _ACCESSES["atomic"]
    _reset()
    if not stores:
        return
    if loads and _shared(stores, loads):
        raise Race(
            "one program of the launch loads what another stores, with no atomic "
            "between them: on a GPU the programs run at once and the load races the "
            "store (accumulate with tl.atomic_add, or give each program its own output)"
        )
    if atomics and _shared(stores, atomics):
        raise Race(
            "one program of the launch stores plainly where another works atomically: on a "
            "GPU the programs run at once and the plain store races the atomic (make every "
            "access to that place atomic, or initialise it before the launch)"
        )


def _shared(writes: list, others: list) -> bool:
    """Whether a program of `others` touches an address a different program of `writes`
    wrote. Pieces are (programs, addresses), a program number per address (MANY: several)."""
    stored = np.concatenate([a for _, a in writes])
    writer = np.concatenate([p for p, _ in writes])
    order = np.argsort(stored, kind="stable")
    stored, writer = stored[order], writer[order]
    unique, starts = np.unique(stored, return_index=True)
    low = np.minimum.reduceat(writer, starts)
    high = np.maximum.reduceat(writer, starts)
    for programs, addresses in others:
        at = np.clip(np.searchsorted(unique, addresses), 0, unique.size - 1)
        hit = unique[at] == addresses
        if not hit.any():
            continue
        lo, hi, reader = low[at[hit]], high[at[hit]], programs[hit]
        # several writers, or one that is not the reader, or several readers: two programs
        if np.any((lo != hi) | (lo != reader) | (lo == MANY)):
            return True
    return False


def install() -> bool:
    """Bounds-checks the interpreter's memory accesses in this process. False where the
    installed interpreter is not one this patch knows."""
    found = interpreter_parts("GridExecutor", "InterpreterBuilder")
    if found is None or not hasattr(found[1], "_init_args_hst"):
        return False
    _, executor, builder = found
    if getattr(executor._init_args_hst, "kbot_bounds", False):
        return True
    init_args = executor._init_args_hst

    def _init_args_hst(self, args_dev, kwargs):
        args_hst, kwargs_hst = init_args(self, args_dev, kwargs)
        spans: set[tuple[int, int]] = set()
        _collect(list(args_hst), spans)
        _collect(list(kwargs_hst.values()), spans)
        _SPANS[:] = sorted(_merge(spans))
        _reset()
        return args_hst, kwargs_hst

    _init_args_hst.kbot_bounds = True
    executor._init_args_hst = _init_args_hst
    restore = getattr(executor, "_restore_args_dev", None)
    if restore is not None:

        def _restore_args_dev(self, *args, **kwargs):
            try:
                _race_check()  # before the results go back: a racing launch returns nothing
            finally:
                _SPANS.clear()
            return restore(self, *args, **kwargs)

        executor._restore_args_dev = _restore_args_dev

    barrier = getattr(builder, "create_barrier", None)
    if barrier is not None:

        def create_barrier(self, *args, **kwargs):
            _barrier()
            return barrier(self, *args, **kwargs)

        builder.create_barrier = create_barrier
    # (method, position of the pointer, of the mask (None: unmasked), what it is), after self
    for name, ptr_at, mask_at, what in (
        ("create_load", 0, None, "load"),
        ("create_store", 0, None, "store"),
        ("create_masked_load", 0, 1, "load"),
        ("create_masked_store", 0, 2, "store"),
        ("create_atomic_rmw", 1, 3, "atomic"),
        ("create_atomic_cas", 0, None, "atomic"),
    ):
        method = getattr(builder, name, None)
        if method is not None:
            setattr(builder, name, _checked(method, ptr_at, mask_at, what))
    return True


def _checked(method, ptr_at: int, mask_at: int | None, what: str):
    def checked(self, *args, **kwargs):
        ptrs = args[ptr_at] if len(args) > ptr_at else kwargs.get("ptrs", kwargs.get("ptr"))
        mask = None
        if mask_at is not None:
            mask = args[mask_at] if len(args) > mask_at else kwargs.get("mask")
        _check(self, ptrs, mask, what)
        return method(self, *args, **kwargs)

    return checked


def _merge(spans: set[tuple[int, int]]) -> list[tuple[int, int]]:
    """Overlapping or touching storages as one span each."""
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(s, e) for s, e in merged]
