"""The launch side of the compute guard (kbot.evaluate.compute_guard): Triton's launch entry
points wrapped so a launch runs with the guard lifted while its grid function, the functions a
timer times and the hooks the candidate gives the autotuner run under it; a launch's arguments
held to plain types; and the reads of tensor values that never reach the dispatcher (`tolist`,
`torch.tensor` of tensors, `x.new_tensor`) and thread starts refused while the guard watches.
`install_launch_hooks` wraps all of them once, when the candidate's process starts, before any
candidate code.
"""

from __future__ import annotations

import functools
from typing import Any

import torch
from torch.utils._python_dispatch import _disable_current_modes

from kbot.evaluate import kernel_escapes
from kbot.evaluate.compute_guard import (
    _LIFTED,
    ComputeGuard,
    _storage,
    _tensors,
    _under_guard,
    _watching,
    guarding,
)
from kbot.evaluate.launch_grids import checked_grid, plain_grid


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
        if "constexpr" in str(text) and _holds_tensor(bound.arguments.get(name)):
            return f"a tensor passed as tl.constexpr `{name}`"
    return None


# The kernel objects of the candidate's module as loaded, with the function each wraps
# (`record_kernels`): a launch of one whose function was swapped since is refused.
_KERNEL_FUNCTIONS: dict[int, tuple[object, object]] = {}


def record_kernels(module: object) -> None:
    """Notes the Python function behind each kernel object of the candidate's module (through
    autotuners and heuristics), before any call."""
    for value in list(dict.values(vars(module))):
        for _ in range(8):  # Autotuner -> Heuristics -> JITFunction
            inner = _triton_fields(value).get("fn")
            if inner is None:
                break
            if not _triton_fields(inner):
                _KERNEL_FUNCTIONS[id(value)] = (value, inner)
                break
            value = inner


def _triton_fields(value: object) -> dict:
    """A Triton object's own attributes, read without running any code of the candidate's
    (only objects of Triton's classes are read)."""
    module = type.__dict__["__module__"].__get__(type(value))
    if not (isinstance(module, str) and module.split(".")[0] == "triton"):
        return {}
    try:
        return dict(object.__getattribute__(value, "__dict__"))
    except AttributeError:
        return {}


def _launch_extras(function: Any) -> str | None:
    """What a launch would run besides the kernel, with the guard lifted: Triton's pre-run
    hooks, a launch-metadata or repr callback, the global launch enter/exit hooks, or a
    function swapped into a kernel object since it was loaded. None when there is none."""
    if getattr(function, "pre_run_hooks", None):
        return "the kernel carries pre-run hooks (code Triton runs inside the launch)"
    for name in ("launch_metadata", "_repr"):
        if getattr(function, name, None) is not None:
            return f"the kernel carries a `{name.lstrip('_')}` callback (code run at launch)"
    try:
        from triton import knobs

        runtime = knobs.runtime
        if _hook_set(runtime.launch_enter_hook) or _hook_set(runtime.launch_exit_hook):
            return "Triton's launch enter/exit hooks are set (code run at every launch)"
    except (ImportError, AttributeError):  # a Triton without knobs
        pass
    recorded = _KERNEL_FUNCTIONS.get(id(function))
    if recorded is not None and recorded[0] is function and function.fn is not recorded[1]:
        return "the kernel object's function was replaced after the candidate was loaded"
    return None


def _hook_set(hook: object) -> bool:
    """A launch hook as Triton keeps it: None, or a chain of calls (Triton 3.5+), empty when
    nothing was added."""
    if hook is None:
        return False
    calls = getattr(hook, "calls", None)
    return bool(calls) if isinstance(calls, list) else True


def _holds_tensor(value: object) -> bool:
    if isinstance(value, torch.Tensor):
        return True
    if isinstance(value, (tuple, list)):
        return any(_holds_tensor(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_tensor(v) for v in value.values())
    return False


def _lifting(run):
    @functools.wraps(run)
    def launch(self, *args, grid, warmup, **kwargs):
        guard = _watching()
        if guard is None:
            return run(self, *args, grid=grid, warmup=warmup, **kwargs)
        wrong = (
            _launch_extras(self)
            or _constexpr_tensor(self, args, kwargs)
            or _foreign_argument(self, args, kwargs)
        )
        if wrong is not None:
            guard.violations.append(wrong)
            raise RuntimeError(f"kbot: {wrong}")
        if callable(grid):
            grid = checked_grid(_under_guard(grid))
        elif not plain_grid(grid):
            wrong = f"the launch grid is a {type(grid).__name__}, not a tuple of ints"
            guard.violations.append(wrong)
            raise RuntimeError(f"kbot: {wrong}")
        for value in _tensors([args, kwargs]):
            guard.launched.add(_storage(value))
        _LIFTED.append(True)
        try:
            with _disable_current_modes():
                kernel = run(self, *args, grid=grid, warmup=warmup, **kwargs)
        finally:
            _LIFTED.pop()
        found = kernel_escapes.compiled_refusal(kernel)  # a GPU kernel's TTIR
        if found is not None:
            guard.refusals.append(found)
            raise kernel_escapes.Refused(*found)
        return kernel

    return launch


# What a launch may pass: tensors, numbers, strings, dtypes, tuples of them, a `tl.constexpr`
# of a number, and Triton's own TensorDescriptor over a tensor. Any other object is Python code
# the launch would run with the guard lifted (Triton asks an argument for `data_ptr()`; the
# interpreter hands a list or a constexpr's value to the kernel body as it is), so classes are
# matched exactly, never by name or through a subclass.
_SCALARS = (bool, int, float, str, type(None))


def _plain(value: object) -> bool:
    import triton.language as tl

    kind = type(value)
    if kind is tuple:
        return all(_plain(v) for v in tuple.__iter__(value))
    if kind in (torch.Tensor, torch.nn.Parameter) or kind in _SCALARS or kind is torch.dtype:
        return True
    if _plain_dtype(value):
        return True  # tl.float32, a pointer type
    if kind is tl.constexpr:
        inner = value.value
        return type(inner) in _SCALARS or type(inner) is torch.dtype or _plain_dtype(inner)
    return _descriptor(value)


def _plain_dtype(value: object) -> bool:
    import triton.language as tl

    kind = type(value)
    return kind.__module__.split(".")[0] == "triton" and issubclass(kind, tl.dtype)


def _descriptor(value: object) -> bool:
    """Triton's host-side TensorDescriptor over a plain tensor, with integer sizes (lists,
    tuples, or the torch.Size `TensorDescriptor.from_tensor` keeps)."""
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        return False
    if type(value) is not TensorDescriptor:
        return False
    fields = dict(vars(value))
    sizes = [fields.pop(k, None) for k in ("shape", "strides", "block_shape")]
    base = fields.pop("base", None)
    # the rest (padding, round_f32_to_tf32) are settings Triton compares and tests inside the
    # lifted launch: plain values only, never an object whose __eq__ or __bool__ runs code
    return (
        type(base) in (torch.Tensor, torch.nn.Parameter)
        and all(
            type(size) in (list, tuple, torch.Size) and all(type(n) is int for n in size)
            for size in sizes
        )
        and all(type(setting) in _SCALARS for setting in fields.values())
    )


def _foreign_argument(function: Any, args: tuple, kwargs: dict) -> str | None:
    for index, value in enumerate(args):
        if not _plain(value):
            return f"launch argument {index} is a {type(value).__name__}"
    for name, value in kwargs.items():
        if not _plain(value):
            return f"launch argument `{name}` is a {type(value).__name__}"
    return None


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

    # The autotuner's timer summarises its samples with torch (a median, a quantile); what it
    # times and the hooks it calls are the candidate's code, run with the guard back on.
    bench = getattr(autotuner.Autotuner, "_bench", None)
    if bench is not None:
        autotuner.Autotuner._bench = _lifted_bench(bench)
    import triton.testing

    for name in ("do_bench", "do_bench_cudagraph"):
        timer = getattr(triton.testing, name, None)
        if timer is not None:
            setattr(triton.testing, name, _lifted_timer(timer))
    _install_value_read_hooks()
    # The first op under a dispatch mode imports what the mode machinery needs (Dynamo's
    # disable wrapper): here, before the sandbox's import policy is taken, not in forward.
    with torch.no_grad(), guarding(ComputeGuard()):
        torch.empty(1).view(-1)
    _INSTALLED.append(True)


def _lifted(function):
    @functools.wraps(function)
    def lifted(*args, **kwargs):
        if _watching() is None:
            return function(*args, **kwargs)
        _LIFTED.append(True)
        try:
            with _disable_current_modes():
                return function(*args, **kwargs)
        finally:
            _LIFTED.pop()

    return lifted


def _lifted_timer(timer):
    """`triton.testing.do_bench(fn, ...)`: the timer's own torch lifted, `fn` guarded."""
    lifted = _lifted(timer)

    @functools.wraps(timer)
    def timed(fn, *args, **kwargs):
        if _watching() is None:  # called by trusted code, or from a lifted region (autotuning)
            return timer(fn, *args, **kwargs)
        return lifted(_under_guard(fn) if callable(fn) else fn, *args, **kwargs)

    return timed


def _lifted_bench(bench):
    """The autotuner's `_bench`: lifted, but a config's `pre_hook` and hooks the candidate gave
    `triton.autotune` run with the guard back on (Triton's own hooks, which save and restore
    the arguments, stay lifted)."""
    lifted = _lifted(bench)

    @functools.wraps(bench)
    def timed(self, *args, config, **meta):
        if _watching() is None:
            return bench(self, *args, config=config, **meta)
        hooks = [(config, "pre_hook")]
        hooks += [
            (self, name)
            for name in ("pre_hook", "post_hook")
            if getattr(self, f"user_defined_{name}", False)
        ]
        saved = [(owner, name, getattr(owner, name, None)) for owner, name in hooks]
        for owner, name, hook in saved:
            if callable(hook):
                setattr(owner, name, _under_guard(hook))
        try:
            return lifted(self, *args, config=config, **meta)
        finally:
            for owner, name, hook in saved:
                setattr(owner, name, hook)

    return timed


def _refusing(what: str, original):
    """`original`, refused while the guard watches: a read of tensor values the dispatcher
    never sees (`tolist`, a NumPy array), or a thread the thread-local guard would not follow."""

    @functools.wraps(original)
    def refused(*args, **kwargs):
        guard = _watching()
        if guard is not None:
            guard.violations.append(what)
            raise RuntimeError(f"kbot: forward used {what} outside a Triton kernel")
        return original(*args, **kwargs)

    return refused


def _reads_tensors(original, what: str):
    """`torch.tensor`/`torch.as_tensor`, refused while the guard watches when their data holds
    tensors (their values are read in C++, past the dispatcher)."""

    @functools.wraps(original)
    def checked(data, *args, **kwargs):
        guard = _watching()
        if guard is not None and _holds_tensor(data):
            guard.violations.append(f"{what} of tensor values")
            raise RuntimeError(f"kbot: forward built a tensor from tensor values ({what})")
        return original(data, *args, **kwargs)

    return checked


def _method_reads_tensors(original, what: str):
    """A tensor method whose data argument is read past the dispatcher (`x.new_tensor`)."""

    @functools.wraps(original)
    def checked(self, *args, **kwargs):
        guard = _watching()
        if guard is not None and (_holds_tensor(args) or _holds_tensor(kwargs.get("data"))):
            guard.violations.append(f"{what} of tensor values")
            raise RuntimeError(f"kbot: forward built a tensor from tensor values ({what})")
        return original(self, *args, **kwargs)

    return checked


def _install_value_read_hooks() -> None:
    import _thread
    import threading

    for name in ("tolist", "__array__", "numpy", "__dlpack__"):
        original = getattr(torch.Tensor, name, None)
        if original is not None:
            setattr(torch.Tensor, name, _refusing(f"Tensor.{name}", original))
    torch.tensor = _reads_tensors(torch.tensor, "torch.tensor")
    torch.as_tensor = _reads_tensors(torch.as_tensor, "torch.as_tensor")
    torch.asarray = _reads_tensors(torch.asarray, "torch.asarray")
    for name in ("new_tensor", "new"):  # `x.new_tensor(data)`: data read as torch.tensor reads it
        original = getattr(torch.Tensor, name, None)
        if original is not None:
            setattr(torch.Tensor, name, _method_reads_tensors(original, f"Tensor.{name}"))
    threading.Thread.start = _refusing("a thread", threading.Thread.start)
    _thread.start_new_thread = _refusing("a thread", _thread.start_new_thread)
