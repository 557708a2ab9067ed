"""Reading inductor's output code: the `call(args)` function and each Triton kernel defined as
`name = async_compile.triton('name', '''<source>''', device_str='cuda')`, turned into a plain
`@triton.jit` function (inductor's `@triton_heuristics.*` autotuning decorator dropped)."""

from __future__ import annotations

import ast
from dataclasses import dataclass

from kbot.propose.inductor.helpers import rename_in_kernel
from kbot.propose.inductor.records import Unsupported

# Inductor's heuristics decorators whose kernels launch on a plain grid of x (and y) blocks,
# and `template`: max-autotune's GEMM and convolution templates, their tiles fixed in the body
# and their grid passed to the launch (FixedGrid).
PLAIN_HEURISTICS = ("pointwise", "reduction", "persistent_reduction")
EXTRACTED_HEURISTICS = (*PLAIN_HEURISTICS, "template")


@dataclass(frozen=True)
class KernelSource:
    """One inductor kernel as a standalone `@triton.jit` function."""

    name: str  # inductor's name, as the output code's `call()` refers to it
    heuristic: str  # pointwise | reduction | persistent_reduction | template
    params: tuple[str, ...]  # every parameter, constexprs included, in order
    constexpr_params: tuple[str, ...]
    function: ast.FunctionDef  # renamed helpers, no heuristics decorator
    helpers: frozenset[str]  # triton_helpers functions it calls


@dataclass(frozen=True)
class OutputCode:
    call: ast.FunctionDef
    kernels: dict[str, KernelSource]


def parse_output_code(code: str) -> OutputCode:
    """The `call` function and kernels of one graph's output code."""
    try:
        tree = ast.parse(code)
    except SyntaxError as exc:
        raise Unsupported(f"the output code does not parse ({exc.msg})") from None
    kernels: dict[str, KernelSource] = {}
    call: ast.FunctionDef | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "call" and call is None:
            call = node
    for node in tree.body:
        if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
            continue
        func = node.value.func
        if not (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "async_compile"
        ):
            continue
        target = node.targets[0]
        name = target.id if isinstance(target, ast.Name) else ast.unparse(target)
        if func.attr != "triton":
            raise Unsupported(f"kernel {name} is compiled by async_compile.{func.attr}, not Triton")
        source = next((a.value for a in node.value.args[1:] if isinstance(a, ast.Constant)), None)
        if not isinstance(source, str):
            raise Unsupported(f"kernel {name} has no Triton source in the output code")
        kernels[name] = kernel_source(name, source)
    if call is None:
        raise Unsupported("the output code has no call() function")
    return OutputCode(call, kernels)


def kernel_source(name: str, source: str) -> KernelSource:
    tree = ast.parse(source)
    functions = [n for n in tree.body if isinstance(n, ast.FunctionDef)]
    if len(functions) != 1:
        raise Unsupported(f"kernel {name} defines {len(functions)} functions, expected one")
    fn = functions[0]
    heuristic = None
    decorators = []
    for decorator in fn.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        dotted = ast.unparse(target)
        if dotted.startswith("triton_heuristics."):
            heuristic = dotted.split(".", 1)[1]
        elif dotted == "triton.jit":
            decorators.append(decorator)
        else:
            raise Unsupported(f"kernel {name} has the decorator @{dotted}")
    if heuristic not in EXTRACTED_HEURISTICS:
        raise Unsupported(
            f"kernel {name} is a {heuristic or 'undecorated'} kernel "
            f"(kbot extracts {', '.join(EXTRACTED_HEURISTICS)} kernels)"
        )
    if not decorators:
        raise Unsupported(f"kernel {name} is not @triton.jit")
    fn.decorator_list = decorators
    fn, helpers = rename_in_kernel(fn)
    params = tuple(a.arg for a in fn.args.args)
    constexprs = tuple(
        a.arg
        for a in fn.args.args
        if a.annotation is not None and ast.unparse(a.annotation).endswith("constexpr")
    )
    return KernelSource(name, heuristic, params, constexprs, fn, frozenset(helpers))
