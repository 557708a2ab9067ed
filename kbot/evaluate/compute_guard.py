"""Who computed the answer: a dispatch mode around the candidate's forward, in its own process.

The static rules (static.py, forward_path.py) read forward's call graph and refuse torch math
in it, but Python can reach a function in more ways than any reading follows (a module stored
in a tuple, a default argument, `map`, a grid function, a heuristic). This guard watches what
actually runs instead: every aten op forward executes outside a Triton launch must be one the
honest launcher needs (`ALLOCATION`, views, shape queries, copies of buffers it made itself,
the extern ops the problem declares). Any other op is torch computing the answer: the op is
refused where it runs, and the call is refused even if the candidate swallowed that error.

A copy of the inputs' values (a transposing `.contiguous()`) can be the whole op, and a cast
rounds or truncates: both are refused, copies of the inputs only where no extern op is
declared (a GEMM's operands may be made contiguous), and an output holding such a copy always.
Reads of tensor values that never reach the dispatcher (`tolist`, `__array__`, `torch.tensor`
of tensors) and thread starts are refused while the guard watches.

Triton launches run with the guard lifted (Triton's CPU interpreter runs torch ops of its own,
and autotuning clones and restores arguments), but a launch's grid function still runs under
it, and a launch's arguments must be tensors, numbers, strings or dtypes, with no tensor in a
`tl.constexpr` (the interpreter would hand the body the torch tensor, and an object's
`data_ptr` would run with the guard lifted). Those launch-side hooks live in launch_hooks.py,
installed once when the candidate's process starts, before any candidate code.
"""

from __future__ import annotations

import contextlib
import functools
from typing import TYPE_CHECKING, Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode

if TYPE_CHECKING:
    from kbot.evaluate.tail_canaries import Canaries

# New tensors whose values do not depend on any input: empty buffers and constants.
ALLOCATION = frozenset(
    "empty empty_like empty_strided new_empty new_empty_strided zeros zeros_like new_zeros "
    "ones ones_like new_ones full full_like new_full scalar_tensor arange fill_ zero_ "
    "lift_fresh lift_fresh_copy".split()
)
# Allocations that make a new buffer, which tail_canaries may place before a watched pattern.
PADDED = ALLOCATION - {"fill_", "zero_", "lift_fresh", "lift_fresh_copy"}
# Data movement: the result holds the source's values laid out anew (or cast). Allowed from
# buffers forward made itself; from the inputs only where an extern op is declared (a GEMM's
# or a convolution's operands made contiguous, as torch's own matmul does): a transposing or
# casting copy of an input can be the whole op (a transpose problem, a dtype conversion).
COPIES = frozenset("clone copy_ _to_copy contiguous".split())
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


# torch's fused attention kernels, as the reference's dispatch meets them (F.scaled_dot_product_
# attention on a GPU or a CPU): two matmuls each (Q K^T, then P V), which a candidate may run as
# extern bmm calls where `bmm` or `matmul` is declared (the softmax between them is its kernel's).
ATTENTION = frozenset(
    "_scaled_dot_product_flash_attention _scaled_dot_product_flash_attention_for_cpu "
    "_scaled_dot_product_efficient_attention _scaled_dot_product_cudnn_attention "
    "_scaled_dot_product_fused_attention_overrideable".split()
)


def _attention_flops(args: tuple) -> int:
    """Multiply-adds of Q K^T and P V for (..., S, D) query, key and value."""
    try:
        q, k, v = args[:3]
        batch = q.numel() // (q.shape[-2] * q.shape[-1]) if q.numel() else 0
        return batch * q.shape[-2] * k.shape[-2] * (q.shape[-1] + v.shape[-1])
    except (AttributeError, IndexError, TypeError, ValueError):
        return 0


# Extern aten ops that add a tensor to the product (their first argument). Adding more than a
# bias row (a residual, a whole epilogue) is allowed as often as the reference does it.
FUSED_ADDS = frozenset("addmm baddbmm addmv addbmm addr".split())


def _matmul_flops(name: str, args: tuple) -> int:
    """Multiply-adds of an aten matmul (0 for other extern ops: convolutions)."""
    try:
        if name in ("mm", "addmm"):
            a, b = args[1:3] if name == "addmm" else args[:2]
            return a.shape[0] * a.shape[1] * b.shape[1]
        if name in ("bmm", "baddbmm"):
            a, b = args[1:3] if name == "baddbmm" else args[:2]
            return a.shape[0] * a.shape[1] * a.shape[2] * b.shape[2]
        if name in ("mv", "dot"):
            return args[0].numel()
        if name == "addmv":
            return args[1].numel()
    except (AttributeError, IndexError, TypeError):
        pass
    return 0


def _scales(kwargs: dict) -> bool:
    """An extern matmul that scales its product or its added term (`alpha`, `beta` not 1)."""
    return any(kwargs.get(k, 1) != 1 for k in ("alpha", "beta"))


def _adds_a_tensor(name: str, args: tuple) -> bool:
    added = args[0] if args else None
    return name in FUSED_ADDS and isinstance(added, torch.Tensor) and added.dim() >= 2


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


def _resizes(args: tuple) -> bool:
    source, dtype = args[0], args[1]
    return isinstance(dtype, torch.dtype) and source.dtype.itemsize != dtype.itemsize


def _casts(name: str, sources, destination, kwargs) -> bool:
    """Whether a copy changes the dtype: a conversion is arithmetic (rounding, truncation),
    and for a cast problem it is the whole op."""
    if not sources:
        return False
    if name == "copy_":
        return bool(destination) and destination[0].dtype != sources[0].dtype
    dtype = kwargs.get("dtype")
    return name == "_to_copy" and dtype is not None and dtype != sources[0].dtype


class ComputeGuard(TorchDispatchMode):
    """Records (and refuses) the aten ops that compute; remembers the storages of copies of
    the inputs. One per forward call."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        # Else torch wraps __torch_dispatch__ in Dynamo's disable, whose first call imports
        # Dynamo, sympy and the rest (over a second of every candidate process's start).
        return False

    def __init__(
        self,
        extern: frozenset[str] = frozenset(),
        extern_calls: int | None = None,
        fused_adds: int | None = None,
        scaled_calls: int | None = None,
        extern_flops: int | None = None,
        canaries: Canaries | None = None,
    ) -> None:
        super().__init__()
        self.extern = extern
        # new buffers placed before a watched pattern (tail_canaries.py: writes past their end)
        self.canaries = canaries
        # At most as many extern calls as the reference makes (ExternCount): a second matmul
        # over a matrix a kernel built can compute what the kernel does not (a cumsum).
        self.extern_calls = extern_calls
        self.extern_made = 0
        self.fused_adds = fused_adds
        self.fused_made = 0
        self.scaled_calls = scaled_calls
        self.scaled_made = 0
        # At most the reference's matmul work in all (multiply-adds): a GEMM over operands a
        # kernel widened (`[x | r] @ [[w], [I]]`) computes an epilogue in torch
        self.extern_flops = extern_flops
        self.flops_made = 0
        self.violations: list[str] = []
        # (rule, why) of launches refused for what their kernels do (kernel_escapes)
        self.refusals: list[tuple[str, str]] = []
        self.fresh: set[int] = set()  # storages made by allocations and extern ops
        self.copied: set[int] = set()  # storages holding torch copies of input values
        self.launched: set[int] = set()  # storages a Triton launch was given

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = func.overloadpacket.__name__
        if func.namespace != "aten":
            # every list here names aten ops: an op registered elsewhere (torch.library) may
            # call itself `empty` or `mm` and compute anything
            return self._refuse(f"{func.namespace}::{name}")
        if func.is_view or name in QUERIES or name == "_unsafe_view":
            if name == "view" and func._overloadname == "dtype" and _resizes(args):
                # bytes read as a narrower type: a strided view of them truncates (a cast)
                return self._refuse("view as a dtype of another size")
            return func(*args, **kwargs)
        if name in ALLOCATION:
            if name == "fill_" and isinstance(args[1] if len(args) > 1 else None, torch.Tensor):
                return self._refuse(name)  # filling with a tensor's value reads it
            result = func(*args, **kwargs)
            if self.canaries is not None and name in PADDED and isinstance(result, torch.Tensor):
                result = self.canaries.allocated(result, values="empty" not in name)
            self.fresh.update(s for s in map(_storage, _tensors(result)) if s is not None)
            return result
        if name in self.extern:
            self.extern_made += 1
            if self.extern_calls is not None and self.extern_made > self.extern_calls:
                return self._refuse(
                    f"{name}, extern call {self.extern_made} where the reference makes "
                    f"{self.extern_calls}"
                )
            if _adds_a_tensor(name, args):
                self.fused_made += 1
                if self.fused_adds is not None and self.fused_made > self.fused_adds:
                    # `addmm(r, x, w)` adds a whole tensor (a residual, an epilogue): as often as
                    # the reference does; a bias row (torch.compile's addmm) is a plain call
                    return self._refuse(
                        f"{name}, a matmul with an add where the reference makes {self.fused_adds}"
                    )
            self.flops_made += _matmul_flops(name, args)
            if self.extern_flops is not None and self.flops_made > self.extern_flops:
                return self._refuse(
                    f"{name}, extern matmuls of {self.flops_made} multiply-adds where the "
                    f"reference's make {self.extern_flops}"
                )
            if _scales(kwargs):
                self.scaled_made += 1
                if self.scaled_calls is not None and self.scaled_made > self.scaled_calls:
                    # `addmm(b, x, w, beta=0.5, alpha=0.5)` scales the result: the epilogue's
                    # multiply done in torch
                    return self._refuse(
                        f"{name} with alpha/beta, where the reference makes {self.scaled_calls}"
                    )
            result = func(*args, **kwargs)
            self.fresh.update(s for s in map(_storage, _tensors(result)) if s is not None)
            return result
        if name in COPIES:
            sources = _tensors(args[1:] if name == "copy_" else args)
            from_inputs = any(_storage(t) not in self.fresh for t in sources)
            if from_inputs and not self.extern:
                return self._refuse(f"{name} of the inputs' values")
            destination = _tensors(args[0]) if name == "copy_" else []
            if not self.extern and self._relayout(sources + destination):
                # a kernel's buffer laid out anew by torch: the transpose or broadcast it does
                # can be the whole op
                return self._refuse(f"{name} that re-lays out a kernel's buffer")
            if _casts(name, sources, destination, kwargs):
                return self._refuse(f"{name} to another dtype")
            if any(t.is_neg() or t.is_conj() for t in sources):
                # a view with torch's negation or conjugation bit: the copy computes it
                return self._refuse(f"{name} that resolves a negated or conjugated view")
            result = func(*args, **kwargs)
            written = _tensors(args[0] if name == "copy_" else result)
            target = self.copied if from_inputs else self.fresh
            for storage in map(_storage, written):
                if storage is not None:
                    target.add(storage)
                    if target is self.copied:
                        self.fresh.discard(storage)  # a buffer holding input values is not fresh
            return result
        return self._refuse(name)

    def _relayout(self, tensors: list[torch.Tensor]) -> bool:
        touched = any(_storage(t) in self.launched for t in tensors)
        return touched and (
            any(not t.is_contiguous() for t in tensors) or len({t.shape for t in tensors}) > 1
        )

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


class ExternCount(TorchDispatchMode):
    """Counts the declared extern ops the reference's forward runs (in the judge's process)."""

    @classmethod
    def _should_skip_dynamo(cls) -> bool:
        return False

    def __init__(self, extern: frozenset[str]) -> None:
        super().__init__()
        self.extern = extern
        self.calls = 0
        self.fused_adds = 0
        self.scaled = 0
        self.flops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__
        if func.namespace == "aten" and name in self.extern:
            self.calls += 1
            self.flops += _matmul_flops(name, args)
            self.fused_adds += _adds_a_tensor(name, args)
            self.scaled += _scales(kwargs or {})
        elif func.namespace == "aten" and name in ATTENTION and "bmm" in self.extern:
            self.calls += 2
            self.flops += _attention_flops(args)
        return func(*args, **(kwargs or {}))


# The guard of the forward call in progress: launches lift it, grid functions run under it.
_ACTIVE: list[ComputeGuard] = []
_LIFTED: list[bool] = []  # one entry per lifted region in progress (a launch, a timer)


def _watching() -> ComputeGuard | None:
    """The guard in effect: a forward call in progress, outside any lifted region."""
    return _ACTIVE[-1] if _ACTIVE and not _LIFTED else None


def refuse_launch(rule: str, why: str) -> None:
    """Records on the forward call's guard a launch refused for what its kernel does
    (kbot.evaluate.kernel_escapes), whichever exception reaches the candidate's code."""
    if _ACTIVE:
        _ACTIVE[-1].refusals.append((rule, why))


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
        lifted = list(_LIFTED)
        _LIFTED.clear()
        try:
            with _ACTIVE[-1]:
                return fn(*args, **kwargs)
        finally:
            _LIFTED.extend(lifted)

    return wrapped
