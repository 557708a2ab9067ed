"""Fixes for Triton's interpreter, applied by trusted code before a candidate runs on a CPU.

Triton's interpreter (TRITON_INTERPRET=1) holds a scalar kernel argument as a one-element
array. Up to Triton 3.6 its `tensor.__index__` is `int(handle.data)`, which NumPy 2 refuses
for an array of one dimension ("only 0-dimensional arrays can be converted to Python
scalars"): every `for start in range(0, n_cols, BLOCK)` over a runtime size fails there, and
an honest kernel would be rejected as a forward error on a CPU. Later Triton squeezes the
array first; this gives older ones the same `__index__`.

`@triton.autotune` with several configs times each through the GPU driver's benchmarker, which
the interpreter has none of ("0 active drivers"): every honest autotuned candidate would be a
forward error on a CPU. There the autotuner takes its first config without timing any (the
interpreter's times say nothing about a GPU's); on a GPU it tunes as written.
"""

from __future__ import annotations


def _index(self) -> int:
    data = self.handle.data
    return int(data.reshape(-1)[0]) if getattr(data, "size", 1) == 1 else int(data)


def _first_config(self, *args, config, **meta) -> list[float]:
    """The autotuner's timing on a CPU: config i "takes" i, so the first one is chosen."""
    position = next((i for i, c in enumerate(self.configs) if c is config), 0)
    return [float(position)] * 3


def apply() -> bool:
    """Installs the fixes where the interpreter needs them; True if the index fix was needed."""
    try:
        from triton.runtime import autotuner, interpreter
    except ImportError:
        return False
    autotuner.Autotuner._bench = _first_config
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "kbot_index_fix", False):
        return False

    def patch_lang_tensor(tensor, scope) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", _index)

    patch_lang_tensor.kbot_index_fix = True
    interpreter._patch_lang_tensor = patch_lang_tensor
    return True
