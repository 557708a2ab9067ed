"""What every integration adapter is given and returns, and the guard they all write.

An adapter edits the target's source so that supported inputs reach the kernel and everything
else takes the original path unchanged:

    if x.dtype in (torch.bfloat16,) and x.is_contiguous():
        from pkg.layers.triton_rmsnorm import rmsnorm

        return rmsnorm(x, self.weight, self.variance_epsilon)

The import sits inside the branch so that the patched module still imports on machines
without Triton (CPU-only installs, macOS).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from kbot.publish.adapters.source import AdapterError, Param, block, parse
from kbot.publish.callsite import KernelCall
from kbot.publish.guard import (
    InputFact,
    SizeGuard,
    autograd_term,
    default_dtype_term,
    input_terms,
    size_terms,
)
from kbot.publish.module_facts import attribute_terms, weight_dtype_terms
from kbot.publish.swept import SweptValue

# Beyond this a guard is split over lines the way black formats a long condition.
_MAX_LINE = 88


@dataclass(frozen=True)
class FileChange:
    path: str  # relative to the repository root, POSIX separators
    content: str
    created: bool


@dataclass(frozen=True)
class EntryPoint:
    """How the parity test reaches the patched op: import it, build it, call it."""

    import_line: str  # "from pkg.layers.norm import RMSNorm"
    construct: str | None  # "RMSNorm(*init_inputs)", None for a plain function
    call: str  # "op(*inputs)", "silu_and_mul(*inputs)", "op.forward(*inputs)"
    loads_state: bool  # copy the reference Model's parameters into the constructed op


@dataclass(frozen=True)
class Integration:
    adapter: str
    changes: tuple[FileChange, ...]  # edited or created files besides the kernel module
    entry: EntryPoint
    guard: str  # the condition under which the kernel runs, as written into the source
    dispatch_note: str  # markdown for the PR body: when the kernel runs, how to force the original
    # For a patched plain function: a copy of the original (decorators removed, renamed), so a
    # benchmark can still time the code the kernel replaces. None when the reference is intact.
    original: tuple[str, str] | None = None  # (function name, source)
    # The op's existing fast path as it was on the base branch (a CustomOp's own forward_cuda
    # that kbot's branch now precedes): (function name, source of a module-level copy taking
    # `self`), so the benchmark can time it as its own column. None when the op had none.
    existing: tuple[str, str] | None = None


@dataclass(frozen=True)
class AdapterInput:
    repo_root: Path  # the working tree of kbot's clone, never the user's
    target_path: str  # the target file, relative to repo_root
    qualname: str
    entry: str  # the reference method of an op class, "" when unknown or a function
    call: KernelCall
    kernel_import: str  # dotted module of the kernel module, e.g. "pkg.layers.triton_rmsnorm"
    kernel_path: str  # where the kernel module will be written, relative to repo_root
    dtypes: tuple[str, ...]  # torch dtype names the kernel was checked on, e.g. ("bfloat16",)
    import_root: str = ""  # the folder (relative, "" or ending in "/") that imports start from
    inputs: tuple[InputFact, ...] = ()  # each forward argument as the checked cases built it
    scalars: tuple[tuple[str, Any], ...] = ()  # Model's scalar attributes as checked (eps, ...)
    # the sizes the kernel runs at, when the original code was faster at others (report.json)
    sizes: SizeGuard | None = None
    # Model's scalar attributes the shape sweep changed (kbot.publish.swept)
    swept_scalars: dict[str, SweptValue] = field(default_factory=dict)
    # (name, dtype) of Model's own float parameters and buffers: those the kernel reads join
    # the autograd term and keep the dtype checked (kbot.publish.module_facts)
    tensors: tuple[tuple[str, str], ...] = ()

    def module_of(self, relative: str) -> str:
        """The dotted module name of a repo-relative .py file under `import_root`."""
        inside = (
            relative[len(self.import_root) :] if relative.startswith(self.import_root) else relative
        )
        return inside[: -len(".py")].replace("/", ".")

    def read(self, relative: str) -> str:
        path = self.repo_root / relative
        if not path.is_file():
            raise AdapterError(f"{relative} does not exist on the base branch; re-run `kbot scan`")
        return path.read_text(encoding="utf-8")


class Adapter(Protocol):
    name: str

    def integrate(self, spec: AdapterInput) -> Integration: ...


def rename_map(call: KernelCall, target: tuple[Param, ...], where: str) -> dict[str, str]:
    """Candidate forward parameter -> the target's parameter in the same position."""
    if len(target) < len(call.forward_params):
        raise AdapterError(
            f"{where} takes {len(target)} arguments but the optimized problem's forward takes "
            f"{len(call.forward_params)}; re-run `kbot scan` and `kbot optimize` on this checkout"
        )
    return {c: t.name for c, t in zip(call.forward_params, target)}


def guard_terms(
    call: KernelCall,
    target: tuple[Param, ...],
    dtypes: tuple[str, ...],
    cuda: bool,
    where: str,
    inputs: tuple[InputFact, ...] = (),
    function: ast.FunctionDef | None = None,
    scalars: tuple[tuple[str, Any], ...] = (),
    owner: ast.ClassDef | None = None,
    sizes: SizeGuard | None = None,
    swept_scalars: dict[str, SweptValue] | None = None,
    tensors: tuple[tuple[str, str], ...] = (),
) -> list[str]:
    """The conditions under which the kernel is known correct: the inputs as the evaluator
    checked them (kbot.publish.guard), and any extra target parameter at the default the
    problem was extracted with; and, with `sizes`, the sizes at which it was faster than the
    original code."""
    if not call.forward_params:
        raise AdapterError(f"{where}: the kernel takes no tensor argument to guard on")
    passed = target[: len(call.forward_params)]
    dtypes_of = dict(tensors)
    weights = tuple((a, dtypes_of[a]) for a in call.attributes if a in dtypes_of)
    if inputs and not any(f.tensor for f in inputs[: len(passed)]) and not weights:
        raise AdapterError(f"{where}: the kernel takes no tensor to guard on")
    weight = weights[0][0] if weights else None
    terms = input_terms(passed, inputs[: len(passed)], dtypes, cuda, weight)
    for extra in target[len(call.forward_params) :]:
        if extra.default is None:
            raise AdapterError(
                f"{where}: parameter `{extra.name}` has no default and the optimized problem "
                "does not pass it; add it to the target's `inputs` in .kbot.yml and re-run"
            )
        if extra.default in ("None", "True", "False"):
            terms.append(f"{extra.name} is {extra.default}")
        else:
            terms.append(f"{extra.name} == {extra.default}")
    terms += size_terms(passed, sizes, inputs[: len(passed)])
    terms += weight_dtype_terms(weights)
    terms += autograd_term(passed, inputs[: len(passed)], tuple(name for name, _ in weights))
    terms += default_dtype_term()
    return terms + attribute_terms(function, scalars, call.attributes, owner, swept_scalars)


def guard_lines(terms: list[str], indent: str, step: str) -> list[str]:
    one_line = f"{indent}if {' and '.join(terms)}:"
    if len(one_line) <= _MAX_LINE:
        return [one_line + "\n"]
    lines = [f"{indent}if (\n", f"{indent}{step}{terms[0]}\n"]
    lines += [f"{indent}{step}and {t}\n" for t in terms[1:]]
    return lines + [f"{indent}):\n"]


def dispatch_block(
    terms: list[str],
    kernel_import: str,
    call: KernelCall,
    alias: str,
    rename: dict[str, str],
    indent: str,
    step: str,
) -> list[str]:
    """`if <guard>: import the launcher; return <call>` indented for a function body."""
    name = call.launcher if alias == call.launcher else f"{call.launcher} as {alias}"
    body = f"from {kernel_import} import {name}\n\nreturn {call.render(rename, alias)}"
    return guard_lines(terms, indent, step) + block(body, indent + step)


def launcher_name(call: KernelCall, function: ast.FunctionDef) -> str:
    """The launcher's own name, unless the function already uses that name for something else
    (a local import would then shadow it for the whole function)."""
    used = {n.id for n in ast.walk(function) if isinstance(n, ast.Name)} | {function.name}
    return call.launcher if call.launcher not in used else f"{call.launcher}_triton"


def indent_step(source: str, path: str) -> str:
    """The file's indentation unit (four spaces unless the file says otherwise)."""
    tree = parse(source, path)
    lines = source.splitlines()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.body:
            outer = len(lines[node.lineno - 1]) - len(lines[node.lineno - 1].lstrip())
            inner_line = lines[node.body[0].lineno - 1]
            inner = len(inner_line) - len(inner_line.lstrip())
            if inner > outer:
                return inner_line[outer:inner]
    return "    "
