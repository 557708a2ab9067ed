"""A fix for older Triton interpreters, applied by trusted code before a candidate runs on a CPU.

Triton's interpreter (TRITON_INTERPRET=1) holds a scalar kernel argument as a one-element
array. Up to Triton 3.6 its `tensor.__index__` is `int(handle.data)`, which NumPy 2 refuses
for an array of one dimension ("only 0-dimensional arrays can be converted to Python
scalars"): every `for start in range(0, n_cols, BLOCK)` over a runtime size fails there, and
an honest kernel would be rejected as a forward error on a CPU. Later Triton squeezes the
array first; this gives older ones the same `__index__`. It changes nothing else.
"""

from __future__ import annotations


def _index(self) -> int:
    data = self.handle.data
    return int(data.reshape(-1)[0]) if getattr(data, "size", 1) == 1 else int(data)


def apply() -> bool:
    """Installs the fix where the interpreter needs it; True if it did."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "kbot_index_fix", False):
        return False

    def patch_lang_tensor(tensor, scope) -> None:
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", _index)

    patch_lang_tensor.kbot_index_fix = True
    interpreter._patch_lang_tensor = patch_lang_tensor
    return True
