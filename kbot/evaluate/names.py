"""Resolving names in a candidate's AST to dotted module paths, and the tables of what each
static rule forbids or allows. Pure data and small helpers; the rules live in `static.py` and
`forward_path.py`."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

# Modules a candidate may import (and their submodules, minus FORBIDDEN_NAMES below). The
# candidate convention is `torch`, `triton`, `triton.language`; the small stdlib helpers are
# for constants and type hints.
ALLOWED_IMPORTS = (
    "torch",
    "triton",
    "math",
    "typing",
    "functools",
    "itertools",
    "operator",
    "dataclasses",
    "enum",
    "__future__",
)

# Dotted prefixes -> (rule, why). Checked against every name a candidate imports or mentions,
# longest prefix first.
FORBIDDEN_NAMES: dict[str, tuple[str, str]] = {}


def _forbid(rule: str, why: str, *names: str) -> None:
    for name in names:
        FORBIDDEN_NAMES[name] = (rule, why)


_forbid(
    "threads",
    "threads, processes and async work run outside the timed stream",
    "threading",
    "_thread",
    "multiprocessing",
    "concurrent",
    "asyncio",
    "subprocess",
    "sched",
    "torch.multiprocessing",
    "torch.jit.fork",
    "torch.jit.wait",
    "torch.futures",
    "torch.distributed",
)
_forbid(
    "streams",
    "CUDA streams, events, graphs and synchronisation belong to the evaluator's timer",
    "torch.cuda.Stream",
    "torch.cuda.stream",
    "torch.cuda.streams",
    "torch.cuda.ExternalStream",
    "torch.cuda.StreamContext",
    "torch.cuda.Event",
    "torch.cuda.graph",
    "torch.cuda.graphs",
    "torch.cuda.CUDAGraph",
    "torch.cuda.make_graphed_callables",
    "torch.cuda.set_stream",
    "torch.cuda.current_stream",
    "torch.cuda.default_stream",
    "torch.cuda.synchronize",
    "torch.Stream",
    "torch.Event",
    "torch.accelerator",
    "torch.xpu",
    "torch.mps",
)
_forbid(
    "torch-compile",
    "torch.compile and the JIT tracers generate the kernel instead of the candidate",
    "torch.compile",
    "torch.compiler",
    "torch._dynamo",
    "torch._inductor",
    "torch.jit",
    "torch.export",
    "torch.fx",
)
_forbid(
    "io-access",
    "a candidate reads no files, environment, network or processes",
    "os",
    "sys",
    "pathlib",
    "io",
    "socket",
    "urllib",
    "http",
    "requests",
    "shutil",
    "tempfile",
    "pickle",
    "marshal",
    "shelve",
    "glob",
    "fnmatch",
    "json",
    "csv",
    "sqlite3",
    "signal",
    "resource",
    "torch.load",
    "torch.save",
    "torch.hub",
    "torch.utils.data",
    "torch.utils.benchmark",
    "torch.profiler",
    "torch.autograd.profiler",
    "triton.testing",
    "open",
    "input",
    "__file__",
)
_forbid(
    "dynamic-import",
    "code must be visible to the static checks: no dynamic import, exec, eval or native code",
    "importlib",
    "imp",
    "pkgutil",
    "runpy",
    "builtins",
    "ctypes",
    "cffi",
    "code",
    "codeop",
    "__import__",
    "exec",
    "eval",
    "compile",
    "__builtins__",
    "torch.utils.cpp_extension",
    "torch.ops.load_library",
    "torch.classes",
)
_forbid(
    "introspection",
    "a candidate may not inspect frames, the garbage collector or other objects' internals",
    "gc",
    "inspect",
    "traceback",
    "linecache",
    "weakref",
    "copyreg",
    "dis",
    "globals",
    "locals",
    "vars",
)
_forbid(
    "module-patching",
    "a candidate may not change torch's global state or register operator overrides",
    "torch.library",
    "torch.overrides",
    "torch.utils._python_dispatch",
    "torch.set_default_dtype",
    "torch.set_default_device",
    "torch.set_default_tensor_type",
    "torch.set_float32_matmul_precision",
    "torch.set_flush_denormal",
    "torch.set_num_threads",
    "torch.use_deterministic_algorithms",
    "torch.manual_seed",
    "torch.seed",
    "torch.random",
    "torch.set_rng_state",
    "torch.cuda.manual_seed",
    "torch.cuda.manual_seed_all",
    "torch.cuda.set_rng_state",
    "torch.cuda.set_device",
    "torch.cuda.memory",
    "torch.cuda.empty_cache",
    "torch.cuda.caching_allocator_alloc",
    "torch.cuda.caching_allocator_delete",
    "setattr",
    "delattr",
)

# Dunder attributes that reach into interpreter internals (globals, class hierarchies, code).
FORBIDDEN_DUNDERS = frozenset(
    {
        "__globals__",
        "__builtins__",
        "__dict__",
        "__class__",
        "__bases__",
        "__mro__",
        "__subclasses__",
        "__code__",
        "__closure__",
        "__func__",
        "__self__",
        "__getattribute__",
        "__setattr__",
        "__delattr__",
        "__import__",
        "__loader__",
        "__spec__",
        "__reduce__",
        "__reduce_ex__",
        "__torch_function__",
        "__torch_dispatch__",
    }
)

LOW_PRECISION_DTYPES = frozenset(
    {
        "float16",
        "half",
        "bfloat16",
        "float8e4nv",
        "float8e5",
        "float8e4b15",
        "float8e4b8",
        "float8e5b16",
        "float8_e4m3fn",
        "float8_e5m2",
        "float8_e4m3fnuz",
        "float8_e5m2fnuz",
    }
)
LOW_PRECISION_METHODS = frozenset({"half", "bfloat16"})


def forbidden(qualname: str) -> tuple[str, str] | None:
    """The (rule, why) forbidding a dotted name, by its longest forbidden prefix."""
    parts = qualname.split(".")
    for end in range(len(parts), 0, -1):
        hit = FORBIDDEN_NAMES.get(".".join(parts[:end]))
        if hit is not None:
            return hit
    if any(p.startswith("_") and not p.startswith("__") for p in parts[1:]) and parts[0] in (
        "torch",
        "triton",
    ):
        return ("private-api", "private torch/triton internals can change global behaviour")
    return None


@dataclass
class Aliases:
    """Local names bound to modules or imported objects: `F` -> `torch.nn.functional`."""

    names: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, tree: ast.AST) -> Aliases:
        aliases = cls()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname:
                        aliases.names[alias.asname] = alias.name
                    else:
                        root = alias.name.split(".")[0]
                        aliases.names[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    aliases.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        # `cuda = torch.cuda` makes `cuda` an alias too; two passes reach chains of two.
        for _ in range(2):
            for node in ast.walk(tree):
                if isinstance(node, ast.Assign) and len(node.targets) == 1:
                    target = node.targets[0]
                    if isinstance(target, ast.Name) and target.id not in aliases.names:
                        dotted = aliases.qualname(node.value)
                        if dotted is not None:
                            aliases.names[target.id] = dotted
        return aliases

    def qualname(self, node: ast.AST) -> str | None:
        """`F.silu` -> `torch.nn.functional.silu`; None when not rooted at an import alias."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Call) and _is_getattr_literal(node):
            inner = self.qualname(node.args[0])
            if inner is None:
                return None
            return ".".join([inner, node.args[1].value, *reversed(parts)])
        if not isinstance(node, ast.Name) or node.id not in self.names:
            return None
        return ".".join([self.names[node.id], *reversed(parts)])


def _is_getattr_literal(node: ast.Call) -> bool:
    return (
        isinstance(node.func, ast.Name)
        and node.func.id == "getattr"
        and len(node.args) >= 2
        and isinstance(node.args[1], ast.Constant)
        and isinstance(node.args[1].value, str)
    )


def is_getattr_literal(node: ast.Call) -> bool:
    return _is_getattr_literal(node)
