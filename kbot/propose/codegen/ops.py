"""ATen compute ops as fp32 Triton expressions, and the small `@triton.jit` helpers they need.

Only `tl` functions that exist in both Triton 3.6 (GPU) and 3.9 (CPU interpreter) are used;
tanh and bf16 rounding are helpers because the interpreter cannot run libdevice. The `gpu_math`
variants call libdevice's tanh behind a constexpr that is true only on the GPU.
"""

from __future__ import annotations

import math

import torch
import torch.fx

from kbot.propose.codegen.indexing import Lowering
from kbot.propose.codegen.trace import Unsupported

aten = torch.ops.aten

FLOAT_TYPES = (torch.float32, torch.bfloat16, torch.float16)
TL_DTYPES = {
    torch.float32: "tl.float32",
    torch.bfloat16: "tl.bfloat16",
    torch.float16: "tl.float16",
    torch.int64: "tl.int64",
    torch.int32: "tl.int32",
    torch.int16: "tl.int16",
    torch.int8: "tl.int8",
    torch.uint8: "tl.uint8",
    torch.bool: "tl.int1",
    # fp8 (e4m3, finite: what serving engines quantize to); carried as fp32 like the others
    torch.float8_e4m3fn: "tl.float8e4nv",
}
# Loaded as fp32, computed in fp32, rounded where the reference casts to them.
FP8_TYPES = (torch.float8_e4m3fn,)


def dtype_of(node: object) -> torch.dtype | None:
    if isinstance(node, torch.fx.Node):
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            return val.dtype
    return None


def literal(value: object) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        if math.isnan(value):
            return "float('nan')"
        return repr(value)
    raise Unsupported(f"constant {value!r} of type {type(value).__name__}")


_UNARY = {
    aten.exp.default: "tl.exp({a})",
    aten.exp2.default: "tl.exp2({a})",
    aten.log.default: "tl.log({a})",
    aten.log2.default: "tl.log2({a})",
    aten.sqrt.default: "tl.sqrt({a})",
    aten.rsqrt.default: "tl.rsqrt({a})",
    # BatchNorm's eval decomposition divides by sqrt(var + eps) through prims' reciprocal
    torch.ops.prims.reciprocal.default: "(1.0 / {a})",
    aten.sigmoid.default: "tl.sigmoid({a})",
    aten.abs.default: "tl.abs({a})",
    aten.neg.default: "(-{a})",
    aten.isnan.default: "({a} != {a})",  # NaN is the only value unequal to itself
    aten.isinf.default: "(tl.abs({a}) == float('inf'))",
    aten.sin.default: "tl.sin({a})",
    aten.cos.default: "tl.cos({a})",
    aten.erf.default: "tl.math.erf({a})",
    aten.floor.default: "tl.floor({a})",
    aten.ceil.default: "tl.ceil({a})",
    aten.logical_not.default: "({a} == 0)",
    aten.sign.default: "tl.where({a} > 0, 1.0, tl.where({a} < 0, -1.0, 0.0))",
    # Near 0, exp(a) - 1 and log(1 + a) lose the relative precision fp32 tolerances ask for;
    # there the Taylor series is exact to < 1e-9.
    aten.expm1.default: (
        "tl.where(tl.abs({a}) < 1e-2, {a} * (1.0 + {a} * (0.5 + {a} * (1.0 / 6.0 + {a} / 24.0))), "
        "tl.exp({a}) - 1.0)"
    ),
    aten.log1p.default: (
        "tl.where(tl.abs({a}) < 1e-2, {a} * (1.0 - {a} * (0.5 - {a} * (1.0 / 3.0 - {a} / 4.0))), "
        "tl.log(1.0 + {a}))"
    ),
}
_BINARY = {
    aten.mul.Tensor: "{a} * {b}",
    aten.div.Tensor: "{a} / {b}",
    aten.maximum.default: "tl.maximum({a}, {b})",
    aten.minimum.default: "tl.minimum({a}, {b})",
    aten.eq.Tensor: "{a} == {b}",
    aten.eq.Scalar: "{a} == {b}",
    aten.ne.Tensor: "{a} != {b}",
    aten.ne.Scalar: "{a} != {b}",
    aten.lt.Tensor: "{a} < {b}",
    aten.lt.Scalar: "{a} < {b}",
    aten.le.Tensor: "{a} <= {b}",
    aten.le.Scalar: "{a} <= {b}",
    aten.gt.Tensor: "{a} > {b}",
    aten.gt.Scalar: "{a} > {b}",
    aten.ge.Tensor: "{a} >= {b}",
    aten.ge.Scalar: "{a} >= {b}",
    aten.logical_and.default: "({a} != 0) & ({b} != 0)",
    aten.logical_or.default: "({a} != 0) | ({b} != 0)",
    aten.bitwise_and.Tensor: "{a} & {b}",
    aten.bitwise_or.Tensor: "{a} | {b}",
}


_OTHER = {
    aten.tanh.default,
    aten.round.default,
    aten.bitwise_not.default,
    aten.add.Tensor,
    aten.sub.Tensor,
    aten.add.Scalar,
    aten.sub.Scalar,
    aten.mul.Scalar,
    aten.div.Scalar,
    aten.where.self,
    aten.where.ScalarSelf,
    aten.where.ScalarOther,
    aten.clamp.default,
    aten.clamp.Tensor,
    aten.fmod.Scalar,
    aten.fmod.Tensor,
    aten.remainder.Scalar,
    aten.remainder.Tensor,
    aten.clamp_min.default,
    aten.clamp_max.default,
    aten.pow.Tensor_Scalar,
    aten.pow.Tensor_Tensor,
    aten.pow.Scalar,
    aten._to_copy.default,
    aten.full.default,
    aten.scalar_tensor.default,
}


def supported(target: object) -> bool:
    return target in _UNARY or target in _BINARY or target in _OTHER


def compute(body: Lowering, node: torch.fx.Node, args: list[str]) -> str:
    """The Triton expression of a compute node over its operands' expressions (fp32)."""
    target = node.target
    kwargs = node.kwargs
    if target in _UNARY:
        return _UNARY[target].format(a=args[0])
    if target == aten.tanh.default:
        body.helpers.add("_tanh")
        if body.gpu_math:
            body.helpers.add("_tanh_libdevice")
            return f"_tanh_libdevice({args[0]}, ON_GPU)"
        return f"_tanh({args[0]})"
    if target == aten.round.default:
        body.helpers.add("_round_half_even")
        return f"_round_half_even({args[0]})"
    if target == aten.bitwise_not.default:
        if dtype_of(node.args[0]) != torch.bool:
            raise Unsupported("bitwise_not of integers (kernels compute in fp32; `~mask` is fine)")
        return f"({args[0]} == 0)"
    if body.exact_division and target in (aten.div.Tensor, aten.div.Scalar):
        return f"tl.div_rn({args[0]}, {args[1]})"
    if body.gpu_math and target in (aten.div.Tensor, aten.div.Scalar):
        reciprocal = _reciprocal(node.args[1], args[1])
        if reciprocal is not None:
            return f"{args[0]} * {reciprocal}"
    if target in (aten.mul.Tensor, aten.mul.Scalar) and args[1] in ("1", "1.0"):
        return args[0]  # alpha/beta of a decomposed addmm
    if target in (aten.mul.Tensor, aten.mul.Scalar) and args[0] in ("1", "1.0"):
        return args[1]
    if target in _BINARY:
        return _BINARY[target].format(a=args[0], b=args[1])
    if target in (aten.add.Tensor, aten.sub.Tensor, aten.add.Scalar, aten.sub.Scalar):
        alpha = kwargs.get("alpha", 1)
        rhs = args[1] if alpha == 1 else f"{args[1]} * {literal(alpha)}"
        op = "+" if target in (aten.add.Tensor, aten.add.Scalar) else "-"
        return f"{args[0]} {op} {rhs}"
    if target in (aten.mul.Scalar, aten.div.Scalar):
        return f"{args[0]} {'*' if target == aten.mul.Scalar else '/'} {args[1]}"
    if target in (aten.where.self, aten.where.ScalarSelf, aten.where.ScalarOther):
        return f"tl.where({args[0]}, {args[1]}, {args[2]})"
    if target == aten.clamp.Tensor:  # per-row bounds: the tensors' expressions, in order
        bounds = iter(args[1:])
        expr = args[0]
        if len(node.args) > 1 and node.args[1] is not None:
            expr = f"tl.maximum({expr}, {next(bounds)})"
        if len(node.args) > 2 and node.args[2] is not None:
            expr = f"tl.minimum({expr}, {next(bounds)})"
        return expr
    if target in (aten.fmod.Scalar, aten.fmod.Tensor, aten.remainder.Scalar, aten.remainder.Tensor):
        return _modulo(node, args[0], args[1])
    if target in (aten.clamp.default, aten.clamp_min.default, aten.clamp_max.default):
        return _clamp(node, args[0], body)
    if target == aten.pow.Tensor_Scalar:
        return _pow(args[0], node.args[1])
    if target == aten.pow.Tensor_Tensor:
        body.helpers.add("_pow_tensor")
        return f"_pow_tensor({args[0]}, {args[1]})"
    if target == aten.pow.Scalar:
        return f"tl.exp({args[1]} * {literal(math.log(node.args[0]))})"
    if target == aten._to_copy.default:
        return _cast(node, args[0], body)
    if target in (aten.full.default, aten.scalar_tensor.default):
        value = node.args[1] if target == aten.full.default else node.args[0]
        return body.scalar(value)  # `torch.tensor(self.limit)`: read from the attribute
    raise Unsupported(f"op {_op_name(target)} has no Triton lowering")


FP32_NORMAL_MIN = 2.0**-126
FP32_MAX = 3.4028234663852886e38


def _reciprocal(divisor: object, expr: str) -> str | None:
    """`1 / divisor` for a scalar divisor, so `x / c` costs one multiply per element: a GPU's
    fp32 division is a reciprocal, a multiply and range checks on every element. The product
    is within 2 ulp of the quotient, as the GPU's division itself (div.full.f32) is."""
    if isinstance(divisor, torch.fx.Node):
        val = divisor.meta.get("val")
        if isinstance(val, torch.Tensor):
            return None  # a tensor divisor: one division per element either way
        return f"(1.0 / {expr})"  # a size computed at launch (std's n - 1)
    if isinstance(divisor, bool) or not isinstance(divisor, (int, float)):
        return None
    if expr.isidentifier():
        return f"(1.0 / {expr})"  # a Model attribute passed at launch: once per program
    if divisor == 0 or not math.isfinite(divisor) or not math.isfinite(1.0 / divisor):
        return None
    inverse = 1.0 / divisor
    if not FP32_NORMAL_MIN <= abs(inverse) <= FP32_MAX:
        return None  # the reciprocal is not a normal fp32 number: keep the division
    return literal(inverse)


def _op_name(target: object) -> str:
    return getattr(target, "__name__", str(target))


def _modulo(node: torch.fx.Node, a: str, b: str) -> str:
    """torch.fmod (the dividend's sign) and torch.remainder (the divisor's sign). Integers stay
    integers (Triton's `%` truncates, as C and fmod do); floats use the quotient's floor or
    truncation in fp32."""
    floored = node.target in (aten.remainder.Scalar, aten.remainder.Tensor)
    dtype = dtype_of(node)
    if dtype is not None and not dtype.is_floating_point:
        return f"((({a}) % ({b})) + ({b})) % ({b})" if floored else f"({a}) % ({b})"
    if floored:
        return f"({a}) - ({b}) * tl.floor(({a}) / ({b}))"
    quotient = f"({a}) / ({b})"
    return f"({a}) - ({b}) * tl.where({quotient} < 0, tl.ceil({quotient}), tl.floor({quotient}))"


def _clamp(node: torch.fx.Node, a: str, body: Lowering) -> str:
    if node.target == aten.clamp_min.default:
        lo, hi = node.args[1], None
    elif node.target == aten.clamp_max.default:
        lo, hi = None, node.args[1]
    else:
        lo = node.args[1] if len(node.args) > 1 else node.kwargs.get("min")
        hi = node.args[2] if len(node.args) > 2 else node.kwargs.get("max")
    expr = a
    if lo is not None:
        expr = f"tl.maximum({expr}, {body.scalar(lo)})"
    if hi is not None:
        expr = f"tl.minimum({expr}, {body.scalar(hi)})"
    return expr


def _pow(a: str, exponent: object) -> str:
    if exponent == 2:
        return f"{a} * {a}"
    if exponent == 3:
        return f"{a} * {a} * {a}"
    if exponent == 1:
        return a
    if exponent == 0.5:
        return f"tl.sqrt({a})"
    if exponent == -0.5:
        return f"tl.rsqrt({a})"
    if exponent == -1:
        return f"1.0 / {a}"
    if exponent == 4:
        return f"({a} * {a}) * ({a} * {a})"
    if exponent == 0:
        return "1.0"  # torch: x ** 0 is 1 for every x, NaN included
    # a**p = 2**(p * log2 a), in fp64: in fp32 the product loses the low bits a large result
    # needs (a rotary base raised to the head's exponents, then multiplied by a position).
    if isinstance(exponent, (int, float)) and float(exponent).is_integer():
        # |a|**p with a negative base's sign when p is odd (torch's x ** 5 of a negative x)
        p = literal(float(exponent))
        magnitude = f"tl.exp2({p} * tl.log2(tl.abs({a}).to(tl.float64))).to(tl.float32)"
        if int(exponent) % 2 == 0:
            return magnitude
        return f"tl.where({a} < 0, -{magnitude}, {magnitude})"
    if isinstance(exponent, (int, float)):
        # NaN for a < 0, as torch gives for a non-integer p.
        p = literal(float(exponent))
        return f"tl.exp2({p} * tl.log2(({a}).to(tl.float64))).to(tl.float32)"
    raise Unsupported(f"pow with exponent {exponent!r}")


def _cast(node: torch.fx.Node, a: str, body: Lowering) -> str:
    src = dtype_of(node.args[0])
    dst = node.kwargs.get("dtype", dtype_of(node))
    if dst is None or dst == src:
        return a
    if dst in FP8_TYPES:  # the reference rounds (and saturates) here: so does the kernel
        return f"({a}).to({TL_DTYPES[dst]}).to(tl.float32)"
    if dst in FLOAT_TYPES:
        if src in FLOAT_TYPES or src in FP8_TYPES or src is None:
            if dst != torch.float32:
                # the reference rounds here: round too
                return body.rounded(a, dst, before_sum=body.product_before_sum(node.args[0], node))
            return a  # computed bf16/fp16 values were rounded where made (lowering.py)
        return f"{a}.to(tl.float32)"
    if dst in TL_DTYPES:
        return f"{a}.to({TL_DTYPES[dst]})"
    raise Unsupported(f"cast to {dst}")


HELPERS = {
    "_tanh": '''@triton.jit
def _tanh(x):
    """tanh in fp32 without libdevice. 1 - 2 / (exp(2x) + 1) saturates cleanly at +-1 but
    loses relative precision near 0, where the odd Taylor series is exact to < 1e-10."""
    big = 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)
    x2 = x * x
    small = x * (1.0 - x2 * (1.0 / 3.0 - x2 * (2.0 / 15.0 - x2 * (17.0 / 315.0))))
    return tl.where(tl.abs(x) < 0.1, small, big)
''',
    "_pow_tensor": '''@triton.jit
def _pow_tensor(a, b):
    """a ** b elementwise, as torch gives it: |a| ** b by exp2/log2 in fp64 (in fp32 the
    product b * log2|a| loses the low bits a large result needs), a negative base's sign for
    an odd integer b and NaN for a non-integer one (-0.0 keeps its sign for an odd b:
    -0.0 ** -3 is -inf), 1 where b == 0 or a == 1."""
    magnitude = tl.exp2(b.to(tl.float64) * tl.log2(tl.abs(a).to(tl.float64))).to(tl.float32)
    integral = tl.floor(b) == b
    odd = integral & ((b - 2.0 * tl.floor(b * 0.5)) != 0.0)
    signed = tl.where(integral, tl.where(odd, -magnitude, magnitude), float("nan"))
    # where a >= 0, 1 / a < 0 only for -0.0
    kept = tl.where(odd, tl.where((1.0 / a) < 0, -magnitude, magnitude), magnitude)
    raised = tl.where(a < 0, signed, kept)
    return tl.where(b == 0.0, 1.0, tl.where(a == 1.0, 1.0, raised))
''',
    "_round_half_even": '''@triton.jit
def _round_half_even(x):
    """torch.round: to the nearest integer, halves to the even one. x - floor(x) is exact in
    fp32, so no sum rounds first (floor(x + 0.5) takes 0.49999997 to 1)."""
    down = tl.floor(x)
    frac = x - down
    odd = (down - 2.0 * tl.floor(down * 0.5)) != 0.0
    up = (frac > 0.5) | ((frac == 0.5) & odd)
    return tl.where(up, down + 1.0, down)
''',
    "_tanh_libdevice": '''@triton.jit
def _tanh_libdevice(x, ON_GPU: tl.constexpr):
    """tanh by libdevice's tanhf on the GPU, the function eager CUDA and torch.compile call
    (accurate to 2 ulp, flush-to-zero exp and reciprocal: fewer instructions than `_tanh`).
    Triton's CPU interpreter has no libdevice, so there it is the exp-based `_tanh`."""
    if ON_GPU:
        return libdevice.tanh(x)
    else:
        return _tanh(x)
''',
    "_round_to_bf16": '''@triton.jit
def _round_to_bf16(x, BITWISE: tl.constexpr):
    """fp32 -> nearest-even bf16 value, kept in fp32, as the reference's `.to(bfloat16)`.
    GPUs round in hardware; Triton's CPU interpreter truncates, so there it is done on the bits."""
    if BITWISE:
        bits = x.to(tl.uint32, bitcast=True)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
        return bits.to(tl.float32, bitcast=True)
    else:
        return x.to(tl.bfloat16).to(tl.float32)
''',
    "_round_product_to_bf16": '''@triton.jit
def _round_product_to_bf16(x, BITWISE: tl.constexpr):
    """`_round_to_bf16` for a product that an add or subtract consumes. On the GPU it is one
    `cvt.rn.bf16.f32` the compiler cannot see through: as a cast pair, LLVM narrows the math to
    bf16 and fuses the product into the add (fma), dropping the reference's rounding of the
    product (RoPE's `q1*cos - q2*sin` then differs where the terms cancel). Triton's CPU
    interpreter has no inline assembly, so there it is `_round_to_bf16`'s bit rounding."""
    if BITWISE:
        return _round_to_bf16(x, BITWISE)
    else:
        return tl.inline_asm_elementwise(
            "cvt.rn.bf16.f32 $0, $1;", "=h,r", [x], dtype=tl.bfloat16, is_pure=True, pack=1
        ).to(tl.float32)
''',
    "_round_product_to_fp16": '''@triton.jit
def _round_product_to_fp16(x, BITWISE: tl.constexpr):
    """fp32 -> nearest-even fp16 value, kept in fp32, for a product that an add or subtract
    consumes: on the GPU one `cvt.rn.f16.f32` the compiler cannot fuse away (see
    `_round_product_to_bf16`); the CPU interpreter rounds fp16 casts correctly."""
    if BITWISE:
        return x.to(tl.float16).to(tl.float32)
    else:
        return tl.inline_asm_elementwise(
            "cvt.rn.f16.f32 $0, $1;", "=h,r", [x], dtype=tl.float16, is_pure=True, pack=1
        ).to(tl.float32)
''',
}
