"""Loads and stores outside the kernel's tensors refused under Triton's CPU interpreter
(kbot.evaluate.interpreter_bounds): an unmasked tail is named, masked accesses and accesses
anywhere inside the given storages (a view's neighbours included) pass."""

from __future__ import annotations

import pytest

PROBE = r"""
import json, sys
import torch, triton, triton.language as tl
from kbot.evaluate import interpreter_bounds

@triton.jit
def _copy(x_ptr, y_ptr, n, MASKED: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    if MASKED:
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)
    else:
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n))  # unmasked tail

if sys.argv[-1] == "install":
    interpreter_bounds.install()
result = {}
for masked in (True, False):
    x = torch.randn(250)
    y = torch.empty(250)
    try:
        _copy[(2,)](x, y, 250, MASKED=masked, BLOCK=128)
        result[str(masked)] = "ran"
    except Exception as exc:
        result[str(masked)] = str(exc)[:300]
wide = torch.randn(4, 64)
out = torch.empty(4, 64)
try:  # a view of the middle rows: the kernel stays inside the storage it was given
    _copy[(1,)](wide[1:3].reshape(-1), out[1:3].reshape(-1), 128, MASKED=True, BLOCK=128)
    result["view"] = "ran"
except Exception as exc:
    result["view"] = str(exc)[:300]
@triton.jit
def _rowsum(x_ptr, out_ptr, n, ATOMIC: tl.constexpr, BLOCK: tl.constexpr):
    # each program adds its block of the row into one total
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    part = tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0)
    if ATOMIC == 1:
        tl.atomic_add(out_ptr, part)
    elif ATOMIC == 2:  # an atomic as the read of a lost update
        tl.store(out_ptr, tl.atomic_add(out_ptr, 0.0) + part)
    else:
        tl.store(out_ptr, tl.load(out_ptr) + part)  # a lost update on a GPU

for atomic in (1, 0):
    total = torch.zeros(1)
    try:
        _rowsum[(4,)](torch.ones(512), total, 512, ATOMIC=atomic, BLOCK=128)
        result["atomic" if atomic else "plain"] = "ran"
    except Exception as exc:
        result["atomic" if atomic else "plain"] = str(exc)[:300]
@triton.jit
def _shift(x_ptr, y_ptr, HOW: tl.constexpr, BLOCK: tl.constexpr):
    # a block stored, then loaded back within the same program
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs))
    if HOW == 1:
        tl.debug_barrier()
    back = offs if HOW == 2 else (offs + 1) % BLOCK  # its own element, or its neighbour's
    tl.store(x_ptr + offs, tl.load(y_ptr + back))

for how, name in ((0, "neighbour"), (1, "barrier"), (2, "own")):
    try:
        _shift[(1,)](torch.randn(64), torch.empty(64), HOW=how, BLOCK=64)
        result[name] = "ran"
    except Exception as exc:
        result[name] = str(exc)[:300]
try:
    _rowsum[(4,)](torch.ones(512), torch.zeros(1), 512, ATOMIC=2, BLOCK=128)
    result["atomic read"] = "ran"
except Exception as exc:
    result["atomic read"] = str(exc)[:300]
print(json.dumps(result))
"""


def test_an_unmasked_tail_is_refused_and_masked_accesses_pass(interpreter_probe):
    result = interpreter_probe(PROBE, "install")
    assert result["True"] == "ran" and result["view"] == "ran", result
    assert "outside every tensor" in result["False"], result


def test_programs_loading_what_others_store_are_a_race(interpreter_probe):
    result = interpreter_probe(PROBE, "install")
    assert result["atomic"] == "ran", result
    assert "another stores" in result["plain"], result
    assert "another works atomically" in result["atomic read"], result


def test_an_element_loading_what_another_stored_needs_a_barrier(interpreter_probe):
    result = interpreter_probe(PROBE, "install")
    assert "debug_barrier" in result["neighbour"], result
    assert result["barrier"] == "ran" and result["own"] == "ran", result


def test_a_launch_too_big_to_follow_is_sampled_not_dropped(monkeypatch):
    from types import SimpleNamespace

    import numpy as np

    from kbot.evaluate import interpreter_bounds as bounds

    monkeypatch.setattr(bounds, "MAX_TRACKED", 100)
    bounds._reset()
    try:
        for program in range(8):
            builder = SimpleNamespace(grid_idx=(program, 0, 0), grid_dim=(8, 1, 1))
            addresses = np.arange(4096, 4096 + 16 * 64, 16, dtype=np.uint64)  # 64 words each
            bounds._track(builder, "load", addresses)
        held = sum(a.size for _, a in bounds._ACCESSES["load"])
        assert 0 < held <= 100 and bounds._SAMPLE["modulus"] > 1
        kept = (4096 // 16 + bounds._SAMPLE["salt"]) * 16  # an address of the sampled class
        store = SimpleNamespace(grid_idx=(9, 0, 0), grid_dim=(10, 1, 1))
        bounds._track(store, "store", np.array([kept], dtype=np.uint64))
        assert bounds._ACCESSES["store"], "the sampled class is still followed"
        assert _races(bounds)
    finally:
        bounds._reset()


def test_a_program_whose_sampled_store_kept_nothing_loads_on(monkeypatch):
    """A sampled launch (the pairs kernel of litgpt's apply_rope at T=4096, 16M addresses):
    a program stores its first piece, none of it in the sampled class, then loads for the
    second. The check of the load against the program's own stores once searched an empty
    array and raised IndexError ("index -1 is out of bounds"), rejecting a correct kernel."""
    from types import SimpleNamespace

    import numpy as np

    from kbot.evaluate import interpreter_bounds as bounds

    bounds._reset()
    try:
        bounds._SAMPLE.update(modulus=4, salt=0)
        builder = SimpleNamespace(grid_idx=(0, 0, 0), grid_dim=(1, 1, 1))
        outside = np.array([16, 32, 48], dtype=np.uint64)  # words 1-3: not in class 0 mod 4
        bounds._within_program(builder, "store", outside, np.arange(3))
        inside = np.array([64, 128], dtype=np.uint64)  # words 4 and 8: in the class
        bounds._within_program(builder, "load", inside, np.arange(2))
        with pytest.raises(bounds.Race):  # what the sample keeps is still checked
            bounds._within_program(
                builder, "store", np.array([64], dtype=np.uint64), np.arange(1, 2)
            )
    finally:
        bounds._reset()


def test_loads_of_the_same_addresses_are_held_once_and_never_sampled(monkeypatch):
    """Round eleven's control (4096 addresses loaded 1100 times by one program, then a lost
    update on one word) was missed in about half the launches once the sample narrowed to a
    quarter of the words: repeated addresses are now held once each, so nothing narrows."""
    from types import SimpleNamespace

    import numpy as np

    from kbot.evaluate import interpreter_bounds as bounds

    monkeypatch.setattr(bounds, "MAX_TRACKED", 1000)
    bounds._reset()
    try:
        dummy = SimpleNamespace(grid_idx=(0, 0, 0), grid_dim=(4, 1, 1))
        pad = np.arange(1 << 20, (1 << 20) + 4 * 256, 4, dtype=np.uint64)  # 256 addresses
        for _ in range(50):  # 12800 loads of 256 addresses
            bounds._track(dummy, "load", pad)
        assert bounds._SAMPLE["modulus"] == 1 and bounds._SAMPLE["held"] <= 1000
        word = np.array([64], dtype=np.uint64)
        for program in (1, 2):  # two programs each load and store one word: a lost update
            builder = SimpleNamespace(grid_idx=(program, 0, 0), grid_dim=(4, 1, 1))
            bounds._track(builder, "load", word)
            bounds._track(builder, "store", word)
        assert _races(bounds)
    finally:
        bounds._reset()


def test_compacted_accesses_keep_who_touched_each_address(monkeypatch):
    """After compaction an address one program loads and stores is no race; one that several
    programs load, another stores, is."""
    from types import SimpleNamespace

    import numpy as np

    from kbot.evaluate import interpreter_bounds as bounds

    def run(loaders, writer):
        bounds._reset()
        for program in loaders:
            builder = SimpleNamespace(grid_idx=(program, 0, 0), grid_dim=(8, 1, 1))
            bounds._track(builder, "load", np.array([128, 256], dtype=np.uint64))
        bounds._compact()
        builder = SimpleNamespace(grid_idx=(writer, 0, 0), grid_dim=(8, 1, 1))
        bounds._track(builder, "store", np.array([128], dtype=np.uint64))
        bounds._compact()
        try:
            return _races(bounds)
        finally:
            bounds._reset()

    assert not run(loaders=(3, 3), writer=3)  # its own address
    assert run(loaders=(3, 5), writer=3)  # another program loads what 3 stores
    assert run(loaders=(5,), writer=3)


def _races(bounds) -> bool:
    """Whether the launch's race check, run now, refuses what was tracked."""
    try:
        bounds._race_check()
    except bounds.Race:
        return True
    return False
