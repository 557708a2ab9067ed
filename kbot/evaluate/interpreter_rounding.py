"""Triton's CPU interpreter made to round casts into bf16 as a GPU does: to nearest, ties to even.

Triton 3.9's interpreter (numpy) keeps bf16 as uint16 bits and converts fp32 to bf16 by
dropping the low 16 bits: it truncates toward zero where a GPU's `cvt.rn.bf16.f32` rounds to
nearest even. That holds for `.to(tl.bfloat16)`, for a store of fp32 into a bf16 pointer, for
fp16 -> bf16 and even for `fp_downcast_rounding="rtne"`, while fp64 -> bf16 and int -> bf16 come
out as garbage (the value converted to uint16 as a number: NaN, 0, 1.6e-39). Each truncating
cast moves a value by up to one bf16 ulp (2^-7 of it) toward zero, so a kernel that rounds where
its reference rounds (the sum, the normalised value, the product with the weight) drifts by up
to three ulps, and its CPU verdict depended on the seed (issue 13: `-2.25 vs -2.297`). fp16
casts are numpy's own and round correctly; `fp_downcast_rounding="rtz"` truncates on purpose,
as on a GPU, and is left alone.

`install()` replaces the interpreter's conversion into bf16 with one that rounds correctly. The
candidate's process calls it before any candidate code is imported (kbot.evaluate.candidate_host);
the judge asks `candidate_casts_truncate()` whether that cannot work with the installed Triton,
and only then allows one truncation in the comparison (kbot.evaluate.compare).
"""

from __future__ import annotations

import functools
import sys

import numpy as np

# torch's (c10) quiet NaN for every NaN input, so a rounded NaN matches `x.to(torch.bfloat16)`.
_BF16_NAN = np.uint16(0x7FC0)

# fp32 inputs and the bf16 bits a round-to-nearest-even conversion gives: a value above half
# an ulp, two ties (to even: down at 1 + 2^-8, up at 1 + 3*2^-8), a negative one, and the
# largest fp32, which rounds to infinity.
_PROBE_BITS = np.array([0x3F80C000, 0x3F808000, 0x3F818000, 0xBF80C000, 0x7F7FFFFF], np.uint32)
_PROBE_EXPECTED = np.array([0x3F81, 0x3F80, 0x3F82, 0xBF81, 0x7F80], np.uint16)


def float32_to_bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """bf16 bits of fp32 values, rounded to nearest even (torch's and the GPU's rounding)."""
    values = np.ascontiguousarray(values, dtype=np.float32)
    bits = values.view(np.uint32)
    odd = (bits >> np.uint32(16)) & np.uint32(1)
    # Adding just under half an ulp (plus one when the kept part is odd) carries exactly the
    # values above the halfway point, and the ties whose kept part is odd. No finite value's
    # bits overflow 32 bits here; NaNs, whose sums could, are replaced below.
    rounded = ((bits + np.uint32(0x7FFF) + odd) >> np.uint32(16)).astype(np.uint16)
    return np.where(np.isnan(values), _BF16_NAN, rounded)


def float64_to_bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """bf16 bits of fp64 values, rounded to nearest even through fp32, as torch rounds them
    (`x.to(torch.bfloat16)` of a float64 tensor equals `x.float().to(torch.bfloat16)`, which
    can differ by one ulp from a single rounding just above a tie)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return float32_to_bfloat16_bits(np.asarray(values, dtype=np.float64).astype(np.float32))


def _rounding_cast(original, tensor_handle):
    """The interpreter's `cast_impl` with every conversion into bf16 rounded to nearest even;
    conversions from bf16 (exact through fp32) and all others go to the original."""
    from triton.language import bfloat16

    def cast_impl(self, src, dst_type):
        source = src.dtype.scalar
        if dst_type.scalar != bfloat16 or source == bfloat16:
            return original(self, src, dst_type)
        if source.is_fp32() or source.is_fp16():
            bits = float32_to_bfloat16_bits(np.asarray(src.data, dtype=np.float32))
        elif source.is_fp64() or source.is_int():
            bits = float64_to_bfloat16_bits(np.asarray(src.data).astype(np.float64))
        else:  # fp8 and the like: stored as raw bits, converted on their own path
            return original(self, src, dst_type)
        return tensor_handle(bits.reshape(np.shape(src.data)), dst_type.scalar)

    cast_impl.kbot_rounds_to_nearest_even = True
    return cast_impl


def _rounds_to_nearest_even(interpreter, cast_impl) -> bool:
    """Whether `cast_impl` turns the probe values into the expected bf16 bits."""
    import triton.language as tl

    try:
        handle = interpreter.TensorHandle(_PROBE_BITS.view(np.float32).copy(), tl.float32)
        result = cast_impl(interpreter.interpreter_builder, handle, tl.bfloat16)
        return bool(np.array_equal(np.asarray(result.data).view(np.uint16), _PROBE_EXPECTED))
    except Exception:  # an interpreter unlike Triton 3.9's: it does not round as expected
        return False


def _interpreter():
    """Triton's interpreter module, where it has the parts this patch replaces and uses."""
    try:
        from triton.runtime import interpreter
    except ImportError:
        return None
    builder = getattr(interpreter, "InterpreterBuilder", None)
    if builder is None or "cast_impl" not in vars(builder):
        return None
    if not hasattr(interpreter, "TensorHandle") or not hasattr(interpreter, "interpreter_builder"):
        return None
    return interpreter


def install() -> bool:
    """Makes Triton's interpreter round every cast into bf16 to nearest even, in this process.
    True when its casts now round so (also where they already did, or this was installed
    before); False where the installed Triton's interpreter is not one this patch knows: it is
    then left as it was, and a warning says so on stderr."""
    interpreter = _interpreter()
    if interpreter is None:
        _warn("Triton's interpreter has no cast_impl to patch")
        return False
    builder = interpreter.InterpreterBuilder
    original = vars(builder)["cast_impl"]
    if getattr(original, "kbot_rounds_to_nearest_even", False):
        return True
    if _rounds_to_nearest_even(interpreter, original):
        return True  # a Triton that rounds correctly by itself
    builder.cast_impl = _rounding_cast(original, interpreter.TensorHandle)
    if _rounds_to_nearest_even(interpreter, builder.cast_impl):
        return True
    builder.cast_impl = original
    _warn("the patched cast of Triton's interpreter failed its own check")
    return False


# fp32 values whose fp8 (e4m3fn) rounding a GPU's `cvt.rn.satfinite` and torch agree on and
# Triton 3.9's interpreter gets wrong: rounding that carries into the exponent (31.52 -> 32,
# where the interpreter drops the carry: 16), ties to even, a negative one, one past the
# largest finite value (saturates to 448) and a subnormal.
_FP8_PROBE = np.array([31.52, -126.83, 1.0625, 1.1875, 500.0, 0.0013], np.float32)


def _float_values(data: np.ndarray, source) -> np.ndarray:
    """The interpreter's float data as fp32 (fp64 as fp64); bf16 is held as its bits."""
    if source.is_bf16():
        bits = np.ascontiguousarray(data).view(np.uint16).astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32)
    return np.asarray(data, dtype=np.float64 if source.is_fp64() else np.float32)


def _fp8_cast(original, tensor_handle):
    """The interpreter's `create_fp_to_fp` with casts into fp8 e4m3 rounded to nearest even
    and saturated, as a GPU and torch do; a cast asked to truncate (rtz) and all others go to
    the original."""
    import torch
    from triton.language import float8e4nv

    def create_fp_to_fp(self, src, dst_type, rounding_mode):
        source = src.dtype.scalar
        floating = source.is_fp32() or source.is_fp16() or source.is_bf16() or source.is_fp64()
        truncating = getattr(rounding_mode, "name", "") == "RTZ"
        if dst_type.scalar != float8e4nv or not floating or truncating:
            return original(self, src, dst_type, rounding_mode)
        values = torch.from_numpy(_float_values(src.data, source).copy())
        bits = values.to(torch.float8_e4m3fn).view(torch.uint8).numpy()
        return tensor_handle(bits.reshape(np.shape(src.data)), dst_type.scalar)

    create_fp_to_fp.kbot_rounds_fp8 = True
    return create_fp_to_fp


def _rounds_fp8(interpreter, create_fp_to_fp) -> bool:
    """Whether `create_fp_to_fp` turns the fp8 probe values into torch's bits."""
    import torch
    import triton.language as tl

    try:
        handle = interpreter.TensorHandle(_FP8_PROBE.copy(), tl.float32)
        result = create_fp_to_fp(interpreter.interpreter_builder, handle, tl.float8e4nv, None)
        expected = torch.from_numpy(_FP8_PROBE.copy()).to(torch.float8_e4m3fn).view(torch.uint8)
        return bool(np.array_equal(np.asarray(result.data).view(np.uint8), expected.numpy()))
    except Exception:  # an interpreter unlike Triton 3.9's
        return False


def install_fp8() -> bool:
    """Makes Triton's interpreter round casts into fp8 e4m3 as a GPU does, in this process.
    True when they now do (also where they already did); False, with a warning, where the
    installed interpreter is not one this patch knows."""
    interpreter = _interpreter()
    builder = getattr(interpreter, "InterpreterBuilder", None)
    if builder is None or "create_fp_to_fp" not in vars(builder):
        print("kbot: Triton's interpreter has no create_fp_to_fp to patch", file=sys.stderr)
        return False
    original = vars(builder)["create_fp_to_fp"]
    if getattr(original, "kbot_rounds_fp8", False) or _rounds_fp8(interpreter, original):
        return True
    builder.create_fp_to_fp = _fp8_cast(original, interpreter.TensorHandle)
    if _rounds_fp8(interpreter, builder.create_fp_to_fp):
        return True
    builder.create_fp_to_fp = original
    print("kbot: casts into fp8 round wrongly under Triton's interpreter", file=sys.stderr)
    return False


def _warn(what: str) -> None:
    print(f"kbot: {what}; casts into bf16 truncate under the interpreter", file=sys.stderr)


@functools.cache
def candidate_casts_truncate() -> bool:
    """Whether a candidate's bf16 casts truncate under the interpreter although its process
    calls `install()`: the installed Triton's interpreter truncates and the patch cannot fix it.
    Asked by the judge, without patching its own interpreter."""
    interpreter = _interpreter()
    if interpreter is None:
        return True
    original = vars(interpreter.InterpreterBuilder)["cast_impl"]
    if _rounds_to_nearest_even(interpreter, original):
        return False
    patched = _rounding_cast(original, interpreter.TensorHandle)
    return not _rounds_to_nearest_even(interpreter, patched)
