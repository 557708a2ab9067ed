"""What the static rules forbid, as data: dotted names, module names reachable as attributes,
dunders and frame attributes, and `forbidden(qualname)`, which names the rule that rejects a
dotted name wherever it appears in the candidate (an import, an attribute chain, a call).

A forbidden module is forbidden wherever it shows in a chain, not only at its start: torch and
triton submodules import `os`, `sys`, `importlib`, `functools` ... and expose them as
attributes (`torch.serialization.sys`, `triton.runtime.build.importlib`).
"""

from __future__ import annotations

# Dotted prefixes -> (rule, why). The longest matching prefix of a name decides.
FORBIDDEN_NAMES: dict[str, tuple[str, str]] = {}


def _forbid(rule: str, why: str, *names: str) -> None:
    for name in names:
        FORBIDDEN_NAMES[name] = (rule, why)


THREADS = (
    "threading _thread multiprocessing concurrent asyncio subprocess sched "
    "torch.multiprocessing torch.jit.fork torch.jit.wait torch.futures torch.distributed"
)
STREAMS = (
    "torch.cuda.Stream torch.cuda.stream torch.cuda.streams torch.cuda.ExternalStream "
    "torch.cuda.StreamContext torch.cuda.Event torch.cuda.graph torch.cuda.graphs "
    "torch.cuda.CUDAGraph torch.cuda.make_graphed_callables torch.cuda.set_stream "
    "torch.cuda.current_stream torch.cuda.default_stream torch.cuda.synchronize torch.Stream "
    "torch.Event torch.accelerator torch.xpu torch.mps torch.cpu.Stream torch.cpu.stream "
    "torch.cpu.synchronize torch.cpu.current_stream"
)
COMPILE = (
    "torch.compile torch.compiler torch._dynamo torch._inductor torch.jit torch.export "
    "torch.fx torch.onnx"
)
IO = (
    "os sys pathlib io socket socketserver ssl select selectors mmap fcntl posix pty urllib "
    "http requests shutil tempfile pickle marshal shelve glob fnmatch json csv sqlite3 signal "
    "resource platform zipfile tarfile atexit faulthandler sysconfig site getpass pwd "
    "webbrowser ftplib smtplib torch.load torch.save torch.from_file torch.serialization "
    "torch.hub torch.utils torch.profiler torch.autograd.profiler torch.cuda.profiler "
    "torch.cuda.gds triton.testing open input __file__"
)
DYNAMIC = (
    "importlib imp pkgutil runpy zipimport builtins ctypes cffi code codeop __import__ exec "
    "eval compile __builtins__ torch.utils.cpp_extension torch.ops.load_library "
    "torch.ops.import_module torch.classes torch.package torch.cuda.jiterator "
    "torch.cuda.cudart operator.attrgetter operator.methodcaller operator.call"
)
INTROSPECTION = (
    "gc inspect traceback linecache weakref copyreg dis pdb bdb tracemalloc globals locals "
    "vars dir breakpoint torch.initial_seed torch.get_rng_state torch.default_generator "
    "torch.cuda.initial_seed torch.cuda.get_rng_state torch.cuda.get_rng_state_all "
    "torch.cuda.memory_snapshot torch.cuda.memory_stats torch.cuda.list_gpu_processes"
)
PATCHING = (
    "torch.library torch.overrides torch.utils._python_dispatch torch.backends "
    "torch.set_default_dtype torch.set_default_device torch.set_default_tensor_type "
    "torch.set_float32_matmul_precision torch.set_flush_denormal torch.set_num_threads "
    "torch.use_deterministic_algorithms torch.manual_seed torch.seed torch.random "
    "torch.set_rng_state torch.cuda.manual_seed torch.cuda.manual_seed_all "
    "torch.cuda.set_rng_state torch.cuda.set_device torch.cuda.memory torch.cuda.empty_cache "
    "torch.cuda.caching_allocator_alloc torch.cuda.caching_allocator_delete torch.cuda.tunable "
    "setattr delattr functools.update_wrapper functools.wraps"
)
HOOKS = (
    "torch.autograd.graph torch.nn.utils.parametrize torch.nn.utils.parametrizations "
    "torch.nn.utils.weight_norm torch.nn.utils.spectral_norm"
)

_forbid(
    "threads", "threads, processes and async work run outside the timed stream", *THREADS.split()
)
_forbid(
    "streams",
    "CUDA streams, events, graphs and synchronisation belong to the evaluator's timer",
    *STREAMS.split(),
)
_forbid(
    "torch-compile",
    "torch.compile and the JIT tracers generate the kernel instead of the candidate",
    *COMPILE.split(),
)
_forbid("io-access", "a candidate reads no files, environment, network or processes", *IO.split())
_forbid(
    "dynamic-import",
    "code must be visible to the static checks: no dynamic import, computed attribute "
    "access, exec, eval or native code",
    *DYNAMIC.split(),
)
_forbid(
    "introspection",
    "a candidate may not inspect frames, the garbage collector, the RNG state or other "
    "objects' internals",
    *INTROSPECTION.split(),
)
_forbid(
    "module-patching",
    "a candidate may not change torch's global state or register operator overrides",
    *PATCHING.split(),
)
_forbid(
    "hooks",
    "hooks run code at times the static checks cannot see; compute in forward's call graph",
    *HOOKS.split(),
)

# Module names forbidden as an attribute anywhere in a chain (`torch.os`, `f().sys`,
# `triton.runtime.jit.knobs.os`): every top-level forbidden module except those whose name is
# also an honest torch submodule (`torch.signal`) or too common a word to be one.
_NOT_ANYWHERE = frozenset(
    {"signal", "code", "resource", "json", "csv", "glob", "fnmatch", "io", "select", "platform"}
)
ANYWHERE_MODULES: dict[str, tuple[str, str]] = {
    name: hit
    for name, hit in FORBIDDEN_NAMES.items()
    if "." not in name
    and name not in _NOT_ANYWHERE
    and name.isidentifier()
    and not name.startswith("__")
    and name not in {"open", "input", "exec", "eval", "compile", "globals", "locals", "vars", "dir"}
    and name not in {"setattr", "delattr", "breakpoint"}
}
# Modules and objects of torch that reach operator overrides, reachable under other names.
ANYWHERE_MODULES.update(
    {
        name: ("module-patching", "operator overrides and dispatch modes intercept torch itself")
        for name in (
            "overrides",
            "TorchFunctionMode",
            "TorchDispatchMode",
            "BaseTorchFunctionMode",
            "handle_torch_function",
            "has_torch_function",
            "has_torch_function_unary",
            "has_torch_function_variadic",
        )
    }
)
ANYWHERE_MODULES["from_file"] = ("io-access", "`from_file` maps a file into a tensor")
# NumPy reads and writes files (`loadtxt`, `fromfile`, `save`) and Triton's interpreter hands it
# out (`triton.runtime.interpreter.np`), under whatever name reached it.
for _name in ("numpy", "np", "interpreter"):
    ANYWHERE_MODULES[_name] = ("io-access", f"`{_name}` reaches NumPy, which reads files")
# Code run from strings: typing evaluates string annotations in the module's globals (an `eval`
# by another name), and `str.format` fields walk attributes and items at run time
# (`"{0.forward.__globals__[torch]}".format(self)`), past every check of the code's names.
for _name in (
    "get_type_hints",
    "get_annotations",
    "ForwardRef",
    "_eval_type",
    "evaluate_forward_ref",
    "format",
    "format_map",
    "Formatter",
):
    ANYWHERE_MODULES[_name] = (
        "dynamic-import",
        f"`{_name}` runs code held in a string; write it as code (an f-string for text)",
    )
# A tensor's values read outside the dispatcher, where the compute guard cannot see them: as a
# Python list, a NumPy array, another framework's view, or its raw storage.
for _name in (
    "tolist",
    "__array__",
    "__array_interface__",
    "__cuda_array_interface__",
    "__dlpack__",
    "untyped_storage",
    "storage",
    "_storage",
    "_typed_storage",
):
    ANYWHERE_MODULES[_name] = (
        "torch-compute",
        f"`{_name}` reads a tensor's values outside a kernel; read them in a Triton kernel",
    )
# A chain that names `functools`/`operator`/`math` through a torch or triton submodule
# (`triton.runtime.build.functools.reduce`) is not the stdlib helper the candidate imported.
_STDLIB_THROUGH_TORCH = frozenset({"functools", "operator", "itertools"})

# Attribute names that reach into interpreter internals (globals, class hierarchies, code,
# frames), forbidden on any object.
FORBIDDEN_DUNDERS = frozenset(
    "__globals__ __builtins__ __dict__ __class__ __bases__ __base__ __mro__ __subclasses__ "
    "__code__ __closure__ __func__ __self__ __wrapped__ __defaults__ __kwdefaults__ "
    "__getattribute__ __getattr__ __setattr__ __delattr__ __get__ __set__ __delete__ "
    "__import__ __loader__ __spec__ __reduce__ __reduce_ex__ __setstate__ __objclass__ "
    "__traceback__ __torch_function__ __torch_dispatch__ __init_subclass__ __set_name__ "
    "__module__ __qualname__ mro".split()
)
FRAME_ATTRIBUTES = frozenset(
    "gi_frame gi_code cr_frame cr_code ag_frame ag_code tb_frame tb_next f_back f_globals "
    "f_locals f_builtins f_code co_code co_consts co_names".split()
)


def forbidden(qualname: str) -> tuple[str, str] | None:
    """The (rule, why) forbidding a dotted name: by its longest forbidden prefix, by a
    torch/triton chain restarting inside it (`triton.runtime.jit.torch.overrides`), by a
    forbidden module anywhere in it, or as a private torch/triton name."""
    parts = qualname.split(".")
    hit = _by_prefix(parts)
    if hit is not None:
        return hit
    for start in range(1, len(parts)):
        if parts[start] in ("torch", "triton"):
            hit = _by_prefix(parts[start:])
            if hit is not None:
                return hit
    rooted = parts[0] in ("torch", "triton")
    for part in parts[1:]:
        hit = attribute_hit(part)
        if hit is None and rooted and part in _STDLIB_THROUGH_TORCH:
            hit = (
                "dynamic-import",
                f"`{part}` reached through {parts[0]} is not the module the candidate "
                "imported; import it directly",
            )
        if hit is not None:
            return hit
    if rooted and any(p.startswith("_") and not p.startswith("__") for p in parts[1:]):
        return ("private-api", "private torch/triton internals can change global behaviour")
    if parts[0] == "torch" and len(parts) > 1 and parts[-1].startswith("set_"):
        return FORBIDDEN_NAMES["torch.set_default_dtype"]
    return None


def attribute_hit(name: str) -> tuple[str, str] | None:
    """The rule forbidding an attribute of that name on any object, if one does."""
    if name in ANYWHERE_MODULES:
        return ANYWHERE_MODULES[name]
    if name in FORBIDDEN_DUNDERS or name in FRAME_ATTRIBUTES:
        return ("introspection", f"`{name}` reaches into interpreter internals")
    if "hook" in name.lower():
        return ("hooks", "hooks run code at times the static checks cannot see; remove them")
    return None


def _by_prefix(parts: list[str]) -> tuple[str, str] | None:
    for end in range(len(parts), 0, -1):
        hit = FORBIDDEN_NAMES.get(".".join(parts[:end]))
        if hit is not None:
            return hit
    return None
