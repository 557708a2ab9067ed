"""Who computed the answer: a dispatch mode around the candidate's forward, in its own process.

The static rules (static.py, forward_path.py) read forward's call graph and refuse torch math
in it, but Python can reach a function in more ways than any reading follows (a module stored
in a tuple, a default argument, `map`, a grid function, a heuristic). This guard watches what
actually runs instead: every aten op forward executes outside a Triton launch must be one the
honest launcher needs (`ALLOCATION`, views, shape queries, dtype casts and copies, the extern
ops the problem declares). Any other op is torch computing the answer: the op is refused where
it runs, and the call is refused even if the candidate swallowed that error.

Copies and casts are data movement, allowed so a launcher can make an input contiguous or
upcast it; but an output that is such a copy of the inputs (`x.new_tensor(x.t())` for a
transpose problem) was made by torch, not by a kernel, and is refused.

Triton launches run with the guard lifted (Triton's CPU interpreter runs torch ops of its own,
and autotuning clones and restores arguments), but a launch's grid function still runs under
it, and the interpreter refuses a tensor passed as a `tl.constexpr` (its body would then run
torch on it). `install_launch_hooks` wraps the launch entry points once, when the candidate's
process starts, before any candidate code.
"""

from __future__ import annotations

import contextlib
import functools
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode, _disable_current_modes

# New tensors whose values do not depend on any input: empty buffers and constants.
ALLOCATION = frozenset(
    "empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros "
    "ones ones_like new_ones full full_like new_full scalar_tensor arange fill_ zero_ "
    "lift_fresh lift_fresh_copy".split()
)
# Data movement: the result holds the source's values, cast or laid out anew.
COPIES = frozenset("clone copy_ _to_copy contiguous _unsafe_view".split())
# Questions about a tensor that read no values.
QUERIES = frozenset(
    "sym_size sym_stride sym_numel sym_storage_offset is_contiguous is_same_size is_complex "
    "is_floating_point is_nonzero_meta record_stream".split()
)
# What each declared extern op (KBOT["extern_ops"]) runs as aten ops.
_MATMULS = ("mm", "bmm", "addmm", "baddbmm", "addmv", "mv", "dot", "matmul", "linear")
_CONVOLUTIONS = ("convolution", "_convolution", "conv1d", "conv2d", "conv3d")
_CONV_TRANSPOSES = _CONVOLUTIONS + ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d")
EXTERN_ATEN: dict[str, tuple[str, ...]] = {
    "matmul": _MATMULS,
    "mm": _MATMULS,
    "bmm": _MATMULS,
    "addmm": _MATMULS,
    "linear": _MATMULS,
    "conv1d": _CONVOLUTIONS,
    "conv2d": _CONVOLUTIONS,
    "conv3d": _CONVOLUTIONS,
    "conv_transpose1d": _CONV_TRANSPOSES,
    "conv_transpose2d": _CONV_TRANSPOSES,
    "conv_transpose3d": _CONV_TRANSPOSES,
}


def extern_aten(extern_ops: tuple[str, ...] | list[str]) -> frozenset[str]:
    return frozenset(name for op in extern_ops for name in EXTERN_ATEN.get(op, ()))


def _storage(value: object) -> int | None:
    if not isinstance(value, torch.Tensor) or value.device.type == "meta":
        return None
    try:
        return value.untyped_storage().data_ptr()
    except Exception:  # noqa: BLE001 - a tensor without storage (sparse, nested) is nobody's
        return None


def _tensors(values: Any) -> list[torch.Tensor]:
    found: list[torch.Tensor] = []
    stack = [values]
    while stack:
        value = stack.pop()
        if isinstance(value, torch.Tensor):
            found.append(value)
        elif isinstance(value, (list, tuple)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
    return found


class ComputeGuard(TorchDispatchMode):
    """Records (and refuses) the aten ops that compute; remembers the storages of copies of
    the inputs. One per forward call."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Else torch wraps __torch_dispatch__ in Dynamo's disable, whose first call imports
        # Dynamo, sympy and the rest (over a second of every candidate process's start).
        return False

    def __init__(self, extern: frozenset[str] = frozenset()) -> None:
        super().__init__()
        self.extern = extern
        self.violations: list[str] = []
        self.fresh: set[int] = set()  # storages made by allocations and extern ops
        self.copied: set[int] = set()  # storages holding torch copies of input values

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if func.is_view or name in QUERIES:
            return func(*args, **kwargs)
        if name in ALLOCATION:
            if name == "fill_" and isinstance(args[1] if len(args) > 1 else None, torch.Tensor):
                return self._refuse(name)  # filling with a tensor's value reads it
            result = func(*args, **kwargs)
            self.fresh.update(s for s in map(_storage, _tensors(result)) if s is not None)
            return result
        if name in self.extern:
            result = func(*args, **kwargs)
            self.fresh.update(s for s in map(_storage, _tensors(result)) if s is not None)
            return result
        if name in COPIES:
            sources = _tensors(args[1:] if name == "copy_" else args)
            from_inputs = any(_storage(t) not in self.fresh for t in sources)
            result = func(*args, **kwargs)
            written = _tensors(args[0] if name == "copy_" else result)
            target = self.copied if from_inputs else self.fresh
            target.update(s for s in map(_storage, written) if s is not None)
            return result
        return self._refuse(name)

    def _refuse(self, name: str):
        self.violations.append(name)
        raise RuntimeError(
            f"kbot: forward computed `aten.{name}` with torch outside a Triton kernel"
        )

    def copied_outputs(self, outputs: tuple) -> list[int]:
        """Indices of the outputs that share storage with a torch copy of the inputs."""
        return [
            index
            for index, value in enumerate(outputs)
            if isinstance(value, torch.Tensor)
            and value.numel() > 0
            and _storage(value) in self.copied
        ]


# The guard of the forward call in progress: launches lift it, grid functions run under it.
_ACTIVE: list[ComputeGuard] = []


@contextlib.contextmanager
def guarding(guard: ComputeGuard):
    _ACTIVE.append(guard)
    try:
        with guard:
            yield guard
    finally:
        _ACTIVE.pop()


def _under_guard(fn):
    """A grid function run with the guard back on (the launch lifted it)."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if not _ACTIVE:
            return fn(*args, **kwargs)
        with _ACTIVE[-1]:
            return fn(*args, **kwargs)

    return wrapped


def _constexpr_tensor(function: Any, args: tuple, kwargs: dict) -> str | None:
    """The name of a `tl.constexpr` parameter given a tensor (the interpreter would hand the
    kernel body the torch tensor itself), or None."""
    import inspect

    target = getattr(function, "fn", None)
    if target is None:
        return None
    parameters = inspect.signature(target).parameters
    # Launch options (num_warps, num_stages) travel with the kernel's own arguments.
    own = {k: v for k, v in kwargs.items() if k in parameters}
    try:
        bound = inspect.signature(target).bind_partial(*args, **own)
    except TypeError:
        return None
    for name, parameter in parameters.items():
        annotation = parameter.annotation
        text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", "")
        if "constexpr" in str(text) and isinstance(bound.arguments.get(name), torch.Tensor):
            return name
    return None


def _lifting(run):
    @functools.wraps(run)
    def launch(self, *args, grid, warmup, **kwargs):
        if not _ACTIVE:
            return run(self, *args, grid=grid, warmup=warmup, **kwargs)
        guard = _ACTIVE[-1]
        tensor_constexpr = _constexpr_tensor(self, args, kwargs)
        if tensor_constexpr is not None:
            guard.violations.append(f"a tensor passed as tl.constexpr `{tensor_constexpr}`")
            raise RuntimeError(f"kbot: tensor passed as tl.constexpr `{tensor_constexpr}`")
        grid = _under_guard(grid) if callable(grid) else grid
        with _disable_current_modes():
            return run(self, *args, grid=grid, warmup=warmup, **kwargs)

    return launch


_INSTALLED: list[bool] = []


def install_launch_hooks() -> None:
    """Wrap Triton's launch entry points (the compiled one and the interpreter's) once."""
    if _INSTALLED:
        return
    from triton.runtime import jit

    jit.JITFunction.run = _lifting(jit.JITFunction.run)
    try:
        from triton.runtime import interpreter
    except ImportError:  # a Triton without the interpreter
        interpreter = None
    if interpreter is not None:
        interpreter.InterpretedFunction.run = _lifting(interpreter.InterpretedFunction.run)
    from triton.runtime import autotuner

    # The autotuner's timer summarises its samples with torch (a median, a quantile).
    bench = getattr(autotuner.Autotuner, "_bench", None)
    if bench is not None:
        autotuner.Autotuner._bench = _lifted(bench)
    import triton.testing

    for name in ("do_bench", "do_bench_cudagraph"):
        timer = getattr(triton.testing, name, None)
        if timer is not None:
            setattr(triton.testing, name, _lifted(timer))
    # The first op under a dispatch mode imports what the mode machinery needs (Dynamo's
    # disable wrapper): here, before the sandbox's import policy is taken, not in forward.
    with torch.no_grad(), guarding(ComputeGuard()):
        torch.empty(1).view(-1)
    _INSTALLED.append(True)


def _lifted(function):
    @functools.wraps(function)
    def lifted(*args, **kwargs):
        if not _ACTIVE:
            return function(*args, **kwargs)
        with _disable_current_modes():
            return function(*args, **kwargs)

    return lifted
