"""Triton's CPU interpreter made to compute on bf16 values, not on their bits.

Triton 3.9's interpreter (numpy) holds bf16 as uint16 bits and runs arithmetic, comparisons,
math functions, clamps, fmas and max/min reductions on those bits as if they were integers: a
bf16 product comes out off by 2.7e37, and a negative value compares above a positive one. A
GPU computes these in fp32 and rounds the result to bf16 once. Kernels written the way Liger's
are (`.cast(b.dtype) * b`, a bf16 row max) are correct on a GPU and were rejected on a CPU.

`install()` wraps those builder operations and reductions: bf16 operands are widened to fp32
(exact), the operation runs in fp32 and a bf16 result is rounded back to nearest even (the
rounding of kbot.evaluate.interpreter_rounding). Comparisons give their booleans, select
(`tl.where`) and bit operations are left on the bits. The candidate's process calls it before
any candidate code (kbot.evaluate.candidate_host), on a CPU only.
"""

from __future__ import annotations

import sys

import numpy as np

from kbot.evaluate.interpreter_rounding import float32_to_bfloat16_bits, float64_to_bfloat16_bits


def _bf16(handle) -> bool:
    import triton.language as tl

    return handle.dtype.scalar == tl.bfloat16 and handle.data.dtype == np.uint16


def _widen(bits: np.ndarray) -> np.ndarray:
    return (np.ascontiguousarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def _narrow(values) -> np.ndarray:
    """bf16 bits of fp32 or fp64 values, in their shape (a reduction's 0-d result stays 0-d)."""
    values = np.asarray(values)
    if values.dtype == np.float64:
        bits = float64_to_bfloat16_bits(values)
    else:
        bits = float32_to_bfloat16_bits(values.astype(np.float32))
    return bits.reshape(values.shape)


def _patched_builder(builder, handle_type):
    binary, unary, ternary, fma = (
        builder.binary_op,
        builder.unary_op,
        builder.ternary_op,
        builder.create_fma,
    )

    def binary_op(self, lhs, rhs, op):
        if not (_bf16(lhs) and _bf16(rhs)) or op in _BIT_OPS:
            return binary(self, lhs, rhs, op)
        with np.errstate(all="ignore"):
            out = op(_widen(lhs.data), _widen(rhs.data))
        out = out if out.dtype == np.bool_ else _narrow(out)
        return handle_type(out, lhs.dtype.scalar)

    def unary_op(self, arg, op):
        if not _bf16(arg):
            return unary(self, arg, op)
        with np.errstate(all="ignore"):
            return handle_type(_narrow(op(_widen(arg.data))), arg.dtype.scalar)

    def ternary_op(self, lhs, rhs, other, op):
        if op is np.where or not _bf16(other):  # a select moves bits; it computes nothing
            return ternary(self, lhs, rhs, other, op)
        parts = [_widen(h.data) if _bf16(h) else h.data for h in (lhs, rhs, other)]
        with np.errstate(all="ignore"):
            return handle_type(_narrow(op(*parts)), other.dtype.scalar)

    def create_fma(self, x, y, z):
        if not (_bf16(x) and _bf16(y) and _bf16(z)):
            return fma(self, x, y, z)
        wide = [_widen(h.data).astype(np.float64) for h in (x, y, z)]
        with np.errstate(all="ignore"):
            return handle_type(_narrow(wide[0] * wide[1] + wide[2]), z.dtype.scalar)

    binary_op.kbot_bf16 = True
    return binary_op, unary_op, ternary_op, create_fma


_BIT_OPS = (np.bitwise_and, np.bitwise_or, np.bitwise_xor, np.left_shift, np.right_shift)


def _patched_reductions(reduce_ops):
    import triton.language as tl

    min_max, total = reduce_ops.min_max, reduce_ops.sum

    def patched_min_max(self, input, val_reduce_op, idx_reduce_op=None):
        value = input[0] if isinstance(input, tuple) else input
        if not _bf16(value.handle):
            return min_max(self, input, val_reduce_op, idx_reduce_op)
        wide = _widen(value.handle.data)
        found = []
        if val_reduce_op:  # a max of bf16 values is one of them: the narrowing is exact
            result = val_reduce_op(wide, axis=self.axis, keepdims=self.keep_dims)
            found.append(self.to_tensor(_narrow(result), value.dtype))
        if idx_reduce_op:
            index = idx_reduce_op(wide, axis=self.axis, keepdims=self.keep_dims)
            found.append(self.to_tensor(index, tl.int32))
        return tuple(found) if len(found) > 1 else found[0]

    def patched_sum(self, input):
        if not _bf16(input.handle):
            return total(self, input)
        result = np.sum(_widen(input.handle.data), axis=self.axis, keepdims=self.keep_dims)
        return self.to_tensor(_narrow(result), input.dtype)

    return patched_min_max, patched_sum


def _computes_on_values(interpreter) -> bool:
    """Whether the interpreter's bf16 product and comparison are right: 1.5 * -2 = -3, and
    -3 < 1."""
    import triton.language as tl

    try:
        builder = interpreter.interpreter_builder
        a = interpreter.TensorHandle(np.array([0x3FC0, 0xC040], np.uint16), tl.bfloat16)
        b = interpreter.TensorHandle(np.array([0xC000, 0x3F80], np.uint16), tl.bfloat16)
        product = builder.create_fmul(a, b).data
        less = builder.create_fcmpOLT(b, a).data  # [-2 < 1.5, 1 < -3]
        return bool(np.array_equal(product, [0xC040, 0xC040])) and list(less) == [True, False]
    except Exception:  # an interpreter unlike Triton 3.9's
        return False


def install() -> bool:
    """Makes Triton's interpreter compute bf16 operations on values, in this process. True when
    it now does (also where it already did); False, with a warning, where the installed
    interpreter is not one this patch knows."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return False
    builder = getattr(interpreter, "InterpreterBuilder", None)
    reduce_ops = getattr(interpreter, "ReduceOps", None)
    parts = ("binary_op", "unary_op", "ternary_op", "create_fma")
    if builder is None or reduce_ops is None or not all(hasattr(builder, p) for p in parts):
        return False
    if getattr(builder.binary_op, "kbot_bf16", False) or _computes_on_values(interpreter):
        return True
    saved = {name: vars(builder).get(name) for name in parts}
    saved_reductions = (vars(reduce_ops).get("min_max"), vars(reduce_ops).get("sum"))
    patched = _patched_builder(builder, interpreter.TensorHandle)
    for name, function in zip(parts, patched):
        setattr(builder, name, function)
    reduce_ops.min_max, reduce_ops.sum = _patched_reductions(reduce_ops)
    if _computes_on_values(interpreter):
        return True
    for name, function in saved.items():
        setattr(builder, name, function)
    reduce_ops.min_max, reduce_ops.sum = saved_reductions
    print("kbot: bf16 arithmetic stays on raw bits under Triton's interpreter", file=sys.stderr)
    return False
