"""libdevice's math functions under Triton's CPU interpreter.

Triton 3.9's interpreter raises NotImplementedError for every `libdevice.*` call (an extern
elementwise function is CUDA bitcode it cannot run), so a kernel that calls
`libdevice.tanh` — GELU-tanh written as FlagGems, Liger or many a model writes it — was
rejected on a CPU and accepted on a GPU. `install()` gives the interpreter's builder those
functions, each computed by NumPy or torch in the argument's own precision (fp32 in, fp32
out, as the CUDA function computes), rounded to nearest: the functions with a fixed rounding
mode other than nearest (`fadd_rz`, `float2int_ru`, ...) and the integer bit tricks
(`clz`, `popc`, `byte_perm`, ...) stay unsupported, with a message naming them, rather than
computed in another rounding. The `fast_*` functions compute the accurate value: on a GPU they
lose a few bits, which the GPU run of the judge sees. The candidate's process calls it before
any candidate code (kbot.evaluate.candidate_host), on a CPU only.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from kbot.evaluate.interpreter_compat import interpreter_parts


def _torch(name: str) -> Callable[[np.ndarray], np.ndarray]:
    """A torch function (those NumPy lacks: erf, lgamma, ...) on NumPy values."""

    def run(x: np.ndarray) -> np.ndarray:
        import torch

        function = torch
        for part in name.split("."):
            function = getattr(function, part)
        x = np.asarray(x)
        x = x if x.flags.c_contiguous else x.copy()  # keeps a 0-d value 0-d
        return function(torch.from_numpy(x)).numpy()

    return run


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.copysign(np.floor(np.abs(x) + x.dtype.type(0.5)), x)


def _tgamma(x: np.ndarray) -> np.ndarray:
    import math

    def one(v: float) -> float:
        try:
            return math.gamma(v)
        except OverflowError:
            return math.inf
        except ValueError:  # a pole: +-0 gives +-inf, a negative integer or -inf NaN
            return math.copysign(math.inf, v) if v == 0 else math.nan

    return np.vectorize(one, otypes=[x.dtype])(x)


def _remainder(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """IEEE remainder: x - n*y with n the integer nearest x/y (ties to even), exact."""
    import math

    return np.vectorize(math.remainder, otypes=[x.dtype])(x, y)


def _as_int(function):
    return lambda *xs: function(*xs).astype(np.int32)


# name (libdevice's, without `__nv_` and the fp32 `f`) -> function of NumPy arrays
UNARY: dict[str, Callable] = {
    "abs": np.abs, "fabs": np.abs, "llabs": np.abs,
    "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin, "asinh": np.arcsinh,
    "atan": np.arctan, "atanh": np.arctanh, "cbrt": np.cbrt, "ceil": np.ceil, "cos": np.cos,
    "cosh": np.cosh, "exp": np.exp, "exp2": np.exp2, "expm1": np.expm1, "floor": np.floor,
    "log": np.log, "log10": np.log10, "log1p": np.log1p, "log2": np.log2, "sin": np.sin,
    "sinh": np.sinh, "sqrt": np.sqrt, "tan": np.tan, "tanh": np.tanh, "trunc": np.trunc,
    "rint": np.rint, "nearbyint": np.rint, "round": _round_half_away,
    "exp10": lambda x: np.power(x.dtype.type(10), x),
    "rsqrt": lambda x: x.dtype.type(1) / np.sqrt(x),
    "rcbrt": lambda x: x.dtype.type(1) / np.cbrt(x),
    "cospi": lambda x: np.cos(x.dtype.type(np.pi) * x),
    "sinpi": lambda x: np.sin(x.dtype.type(np.pi) * x),
    "saturate": lambda x: np.clip(x, 0, 1),
    "logb": lambda x: np.floor(np.log2(np.abs(x))),
    "erf": _torch("erf"), "erfc": _torch("erfc"), "erfinv": _torch("erfinv"),
    "erfcinv": lambda x: _torch("erfinv")(x.dtype.type(1) - x),
    "erfcx": _torch("special.erfcx"), "lgamma": _torch("lgamma"), "tgamma": _tgamma,
    "normcdf": _torch("special.ndtr"), "normcdfinv": _torch("special.ndtri"),
    "j0": _torch("special.bessel_j0"), "j1": _torch("special.bessel_j1"),
    "y0": _torch("special.bessel_y0"), "y1": _torch("special.bessel_y1"),
    "cyl_bessel_i0": _torch("special.i0"), "cyl_bessel_i1": _torch("special.i1"),
    "isnan": _as_int(np.isnan), "isinf": _as_int(np.isinf), "isfinite": _as_int(np.isfinite),
    "finite": _as_int(np.isfinite),
    "signbit": _as_int(np.signbit), "ilogb": _as_int(lambda x: np.floor(np.log2(np.abs(x)))),
    "rcp": lambda x: x.dtype.type(1) / x, "llrint": np.rint, "llround": _round_half_away,
}  # fmt: skip
BINARY: dict[str, Callable] = {
    "atan2": np.arctan2, "copysign": np.copysign, "fmod": np.fmod, "hypot": np.hypot,
    "nextafter": np.nextafter, "pow": np.power, "remainder": _remainder,
    "fmax": np.fmax, "fmin": np.fmin, "fdim": lambda x, y: np.maximum(x - y, 0),
    "powi": lambda x, n: np.power(x, n.astype(x.dtype)),
    "ldexp": lambda x, n: np.ldexp(x, n), "scalbn": lambda x, n: np.ldexp(x, n),
    "rhypot": lambda x, y: x.dtype.type(1) / np.hypot(x, y),
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "fdivide": np.divide,
}  # fmt: skip
TERNARY: dict[str, Callable] = {
    "norm3d": lambda a, b, c: np.sqrt(a * a + b * b + c * c),
    "rnorm3d": lambda a, b, c: a.dtype.type(1) / np.sqrt(a * a + b * b + c * c),
}
# fma rounds once: the interpreter's own create_fma does it right for fp32 and fp64.
FMA = ("fma",)
# `fadd_rn`, `dsqrt_rn`, `fmaf_rn`: the operation in round-to-nearest, the default.
_ROUNDED = re.compile(r"^[fd]?(add|sub|mul|div|rcp|sqrt|rsqrt|fma)f?_rn$")


def function_name(symbol: str) -> str:
    """libdevice's symbol without `__nv_`, its fp32 `f` and a `_rn`: `__nv_tanhf` -> tanh,
    `__nv_fadd_rn` -> add, `__nv_fast_expf` -> exp, `__nv_isnand` -> isnan."""
    name = symbol.removeprefix("__nv_").removeprefix("fast_")
    rounded = _ROUNDED.match(name)
    if rounded:
        return rounded.group(1)
    for table in (UNARY, BINARY, TERNARY, FMA):
        if name in table:
            return name
    for suffix in ("f", "d"):
        if name.endswith(suffix) and any(name[:-1] in t for t in (UNARY, BINARY, TERNARY, FMA)):
            return name[:-1]
    return name


def _extern_elementwise(builder, handle_type, get_np_dtype):
    def create_extern_elementwise(self, libName, libPath, symbol, argList, retType, isPure):
        name = function_name(symbol)
        arity = len(argList)
        if name in FMA and arity == 3:
            return self.create_fma(*argList)
        table = {1: UNARY, 2: BINARY, 3: TERNARY}.get(arity, {})
        if name not in table:
            raise NotImplementedError(
                f"libdevice's {symbol} has no CPU version in kbot's interpreter (fixed-rounding "
                "and integer bit functions run on a GPU only); use triton.language's own "
                "function, or run on a GPU"
            )
        scalar = retType.scalar if hasattr(retType, "scalar") else retType
        values = [np.asarray(a.data) for a in argList]
        with np.errstate(all="ignore"):
            out = np.asarray(table[name](*values))
        return handle_type(out.astype(get_np_dtype(scalar), copy=False), scalar)

    return create_extern_elementwise


def _route_modules(interpreter) -> bool:
    """Makes `libdevice.tanh(x)` reach the builder: in a compiled kernel the compiler swaps
    the generic `triton.language.extra.libdevice` (stubs) for CUDA's module and passes its
    semantic; the interpreter does neither, so both modules' functions are replaced here by
    ones that call CUDA's with the interpreter's semantic."""
    import inspect

    import triton.language as tl

    try:
        from triton.language.extra import libdevice as generic
        from triton.language.extra.cuda import libdevice as cuda
    except ImportError:
        return False
    semantic = getattr(interpreter, "interpreter_semantic", None)
    if semantic is None:
        return False
    for name, member in inspect.getmembers(cuda):
        if not tl.core.is_builtin(member):
            continue

        def routed(*args, member=member, **kwargs):
            kwargs.pop("_semantic", None)
            return member(*args, **kwargs, _semantic=semantic)

        routed.kbot_libdevice = True
        setattr(cuda, name, routed)
        if hasattr(generic, name):
            setattr(generic, name, routed)
    return True


def install() -> bool:
    """Gives Triton's interpreter libdevice's math functions, in this process (a CPU-only
    process: CUDA's libdevice module is rerouted for good). False where the installed
    interpreter is not one this patch knows."""
    found = interpreter_parts("InterpreterBuilder", "_get_np_dtype")
    if found is None or not hasattr(found[1], "create_fma"):
        return False
    interpreter, builder, get_np_dtype = found
    if getattr(builder.create_extern_elementwise, "kbot_libdevice", False):
        return True
    if not _route_modules(interpreter):
        return False
    patched = _extern_elementwise(builder, interpreter.TensorHandle, get_np_dtype)
    patched.kbot_libdevice = True
    builder.create_extern_elementwise = patched
    return True
