"""Fixes for Triton's interpreter, applied by trusted code before a candidate runs on a CPU.

Triton's interpreter (TRITON_INTERPRET=1) holds a scalar kernel argument as a one-element
array. Up to Triton 3.6 its `tensor.__index__` is `int(handle.data)`, which NumPy 2 refuses
for an array of one dimension ("only 0-dimensional arrays can be converted to Python
scalars"): every `for start in range(0, n_cols, BLOCK)` over a runtime size fails there, and
an honest kernel would be rejected as a forward error on a CPU. Later Triton squeezes the
array first; this gives older ones the same `__index__`.

Triton 3.9's interpreter can hold an int1 mask in int32 data (`block_mask & (s < S)`, a
block's mask and'ed with a scalar condition), which its masked load and store then refuse
("mask has unsupported dtype"); a GPU takes it as the mask it is. Masks (int1 by Triton's own
checks before they reach the interpreter) are handed to loads, stores and atomics as booleans.

The interpreter runs `tl.range` as Python's `range`, so its loop variable is an int where a
compiled kernel has an int32 tensor: `for row in tl.range(pid, n, step): row.to(tl.int64)`
(a persistent kernel's 64-bit offsets) failed on a CPU only. `tl.range` hands out int32
scalar tensors here (int64 past int32's range); `tl.static_range` stays Python's.

`@triton.autotune` with several configs times each through the GPU driver's benchmarker, which
the interpreter has none of ("0 active drivers"): kbot.evaluate.autotune_turns, installed
always on on a CPU, takes one config per call instead.
"""

from __future__ import annotations


def interpreter_parts(*names: str) -> tuple | None:
    """Triton's interpreter module and its attributes `names`, or None where this Triton has
    no interpreter or lacks one of them (a patch of kbot's then leaves it alone)."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return None
    parts = [getattr(interpreter, name, None) for name in names]
    return None if any(part is None for part in parts) else (interpreter, *parts)


def _index(self) -> int:
    data = self.handle.data
    return int(data.reshape(-1)[0]) if getattr(data, "size", 1) == 1 else int(data)


def _boolean_masks(interpreter) -> None:
    """Masked loads, stores and atomics given an int1 mask held in wider integer data."""
    builder = getattr(interpreter, "InterpreterBuilder", None)
    if builder is None or getattr(builder.create_masked_load, "kbot_mask_fix", False):
        return
    import numpy as np
    import triton.language as tl

    def as_bool(mask):
        # Triton's semantics checked the mask is int1 before it reached the builder; only the
        # interpreter's data can be wider.
        data = getattr(mask, "data", None)
        if mask is None or data is None or data.dtype == np.bool_:
            return mask
        return interpreter.TensorHandle(data != 0, tl.int1)

    def with_bool_mask(method, position):
        """`method` with its mask argument (positional `position` after self, or `mask=`)
        made boolean."""

        def wrapped(self, *args, **kwargs):
            if "mask" in kwargs:
                kwargs["mask"] = as_bool(kwargs["mask"])
            elif len(args) > position:
                args = (*args[:position], as_bool(args[position]), *args[position + 1 :])
            return method(self, *args, **kwargs)

        wrapped.kbot_mask_fix = True
        return wrapped

    # the mask's place among each builder method's arguments (after self)
    for name, position in (
        ("create_masked_load", 1),
        ("create_masked_store", 2),
        ("create_atomic_rmw", 3),
    ):
        method = getattr(builder, name, None)
        if method is not None:
            setattr(builder, name, with_bool_mask(method, position))


def _tensor_ranges(interpreter) -> None:
    """`tl.range` yielding scalar tensors, as a compiled kernel's loop variable is."""
    original = getattr(interpreter, "_patch_lang_core", None)
    if original is None or getattr(original, "kbot_range_fix", False):
        return
    import numpy as np
    import triton.language as tl

    def scalar(value: int):
        kind, dtype = (np.int32, tl.int32) if -(2**31) <= value < 2**31 else (np.int64, tl.int64)
        return tl.tensor(interpreter.TensorHandle(np.array([value], dtype=kind), dtype), dtype)

    def patch_lang_core(lang, scope) -> None:
        original(lang, scope)
        plain = getattr(lang, "range", None)  # the interpreter's: Python's range
        if plain is None:
            return

        def tensor_range(*args, **kwargs):
            return (scalar(i) for i in plain(*args, **kwargs))

        scope.set_attr(lang, "range", tensor_range)

    patch_lang_core.kbot_range_fix = True
    interpreter._patch_lang_core = patch_lang_core


def apply() -> bool:
    """Installs the fixes where the interpreter needs them; True if the index fix was needed."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    _boolean_masks(interpreter)
    _tensor_ranges(interpreter)
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "kbot_index_fix", False):
        return False

    def patch_lang_tensor(tensor, scope) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", _index)

    patch_lang_tensor.kbot_index_fix = True
    interpreter._patch_lang_tensor = patch_lang_tensor
    return True
