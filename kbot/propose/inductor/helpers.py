"""Inlining the `triton_helpers` functions inductor's kernels call (`triton_helpers.max2`,
`welford_reduce`, ...), read from the installed torch, so a candidate needs only triton.

Each helper `foo` becomes `_helper_foo`; helpers that call other helpers bring them along.
Helpers built on anything but `tl`, `triton`, `libdevice` and `math` (triton's) are declined.
"""

from __future__ import annotations

import ast
import inspect
import textwrap

from kbot.propose.inductor.records import Unsupported

HELPER_PREFIX = "_helper_"
# Names inductor's kernel modules and triton_helpers use for triton's math modules.
TRITON_MODULES = {"tl": "tl", "triton": "triton", "libdevice": "libdevice"}
TL_MATH_ALIASES = ("tl_math", "math")
# libdevice functions tl.math has under the same name. Triton's interpreter (kbot's CPU mode)
# has no libdevice, so these are written as tl.math; on a GPU tl.math may pick the hardware
# approximation (a few ulp in fp32), which the evaluator's tolerances judge like any kernel.
LIBDEVICE_IN_TL_MATH = frozenset(
    "abs ceil cos div_rn erf exp exp2 floor fma log log2 rsqrt sin sqrt sqrt_rn".split()
)


def _helpers_module():
    from torch._inductor.runtime import triton_helpers

    return triton_helpers


def helper_name(name: str) -> str:
    return f"{HELPER_PREFIX}{name}"


def local_names(fn: ast.FunctionDef) -> set[str]:
    """Parameters and names a function assigns: these are never module-level references."""
    args = fn.args
    names = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    names |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


class _Rename(ast.NodeTransformer):
    """`triton_helpers.foo` / bare `foo` (inside helpers) -> `_helper_foo`; `tl_math.x`,
    triton_helpers' `math.x` and `libdevice.x` (when tl.math has x) -> `tl.math.x`."""

    def __init__(self, helpers: set[str], bare: bool, local: set[str]) -> None:
        self.helpers = helpers
        self.bare = bare
        self.local = local
        self.used: set[str] = set()

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        value = node.value
        if isinstance(value, ast.Name) and value.id not in self.local:
            if value.id == "triton_helpers":
                self.used.add(node.attr)
                return ast.copy_location(ast.Name(helper_name(node.attr), node.ctx), node)
            if value.id in TL_MATH_ALIASES or (
                value.id == "libdevice" and node.attr in LIBDEVICE_IN_TL_MATH
            ):
                math = ast.Attribute(ast.Name("tl", ast.Load()), "math", ast.Load())
                return ast.copy_location(ast.Attribute(math, node.attr, node.ctx), node)
        return self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if self.bare and node.id in self.helpers and node.id not in self.local:
            self.used.add(node.id)
            return ast.copy_location(ast.Name(helper_name(node.id), node.ctx), node)
        return node


def rename_in_kernel(fn: ast.FunctionDef) -> tuple[ast.FunctionDef, set[str]]:
    """Rewrites a kernel's helper and math references; returns it and the helpers it uses."""
    renamer = _Rename(set(), bare=False, local=local_names(fn))
    return renamer.visit(fn), renamer.used


def inline_helpers(wanted: set[str]) -> list[str]:
    """Sources of the wanted helpers and every helper they call, callees first."""
    module = _helpers_module()
    # A JITFunction on a GPU, an InterpretedFunction under TRITON_INTERPRET: both wrap `.fn`.
    available = {n for n, v in vars(module).items() if inspect.isfunction(getattr(v, "fn", None))}
    ordered: list[str] = []
    sources: dict[str, str] = {}
    constants: dict[str, str] = {}

    def visit(name: str, chain: tuple[str, ...]) -> None:
        if name in sources or name in chain:
            return
        if name not in available:
            raise Unsupported(f"triton_helpers.{name} is not a @triton.jit helper kbot can inline")
        source, callees = _helper_source(module, name, available, constants)
        for callee in sorted(callees):
            visit(callee, (*chain, name))
        sources[name] = source
        ordered.append(name)

    for name in sorted(wanted):
        visit(name, ())
    head = ["".join(f"{k} = {v}\n" for k, v in sorted(constants.items()))] if constants else []
    return head + [sources[n] for n in ordered]


def _helper_source(
    module, name: str, available: set[str], constants: dict[str, str]
) -> tuple[str, set[str]]:
    """One helper's renamed source and the helpers it calls; module-level `tl.constexpr`
    numbers it reads (`_LOG_2_E`) are added to `constants` as source text."""
    fn_obj = getattr(module, name)
    text = textwrap.dedent(inspect.getsource(getattr(fn_obj, "fn", fn_obj)))
    tree = ast.parse(text)
    fn = tree.body[0]
    if not isinstance(fn, ast.FunctionDef):
        raise Unsupported(f"triton_helpers.{name} is not a plain function")
    decorators = [ast.unparse(d) for d in fn.decorator_list]
    if decorators != ["triton.jit"]:
        raise Unsupported(f"triton_helpers.{name} has decorators {decorators}, not @triton.jit")
    local = local_names(fn)
    module_names = set(vars(module))
    allowed = set(TRITON_MODULES) | set(TL_MATH_ALIASES) | available
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id in module_names and node.id not in local:
            value = getattr(module, node.id)
            if node.id in allowed:
                continue
            number = getattr(value, "value", None)
            if type(value).__name__ == "constexpr" and isinstance(number, (int, float)):
                constants[node.id] = f"tl.constexpr({number!r})"
            else:
                raise Unsupported(
                    f"triton_helpers.{name} uses `{node.id}`, which kbot cannot inline"
                )
    renamer = _Rename(available, bare=True, local=local)
    fn = renamer.visit(fn)
    fn.name = helper_name(name)
    ast.fix_missing_locations(fn)
    return ast.unparse(fn) + "\n", renamer.used - {name}
