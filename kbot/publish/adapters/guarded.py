"""A guarded dispatch at the top of a plain function or method (e.g. a `@torch.compile` one):
CUDA inputs the kernel was checked on take the kernel, everything else the original code."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Any

from kbot.publish.adapters import source
from kbot.publish.adapters.base import (
    AdapterInput,
    EntryPoint,
    FileChange,
    Integration,
    dispatch_block,
    guard_terms,
    indent_step,
    launcher_name,
    rename_map,
)
from kbot.publish.adapters.source import AdapterError
from kbot.scan.facts import dotted_name, module_imports, resolve_alias


@dataclass(frozen=True)
class GuardedDispatchAdapter:
    name: str = "guarded_dispatch"

    def integrate(self, spec: AdapterInput) -> Integration:
        text = spec.read(spec.target_path)
        tree = source.parse(text, spec.target_path)
        parts = spec.qualname.split(".")
        is_class = any(isinstance(n, ast.ClassDef) and n.name == parts[0] for n in tree.body)
        if len(parts) == 1 and not is_class:
            cls = None
            function = source.find_function(tree, parts[0], spec.target_path)
        else:
            # `Class.method`, or a class named alone with the scan's entry method (`forward`).
            cls = source.find_class(tree, parts[0], spec.target_path)
            method = parts[1] if len(parts) > 1 else (spec.entry or "forward")
            function = source.find_function(cls, method, spec.target_path)
        assert function is not None
        where = f"{spec.target_path}: {spec.qualname}"
        if cls is None and spec.call.attributes:
            raise AdapterError(
                f"{where} is a plain function but the kernel call reads "
                f"self.{spec.call.attributes[0]}; re-extract the problem from this function"
            )
        params = source.params(function)
        # A plain function's number the problem fixed (a constructor argument of its Model, as
        # `seq_dim=1`): not one of forward's, so the kernel serves that value only.
        fixed = dict(spec.scalars) if cls is None else {}
        pinned = tuple(p for p in params if p.name in fixed)
        target_params = tuple(p for p in params if p.name not in fixed)
        rename = rename_map(spec.call, target_params, where)
        terms = guard_terms(
            spec.call,
            target_params,
            spec.dtypes,
            True,
            where,
            spec.inputs,
            function,
            spec.scalars,
            cls,
            spec.sizes,
            spec.swept_scalars,
            spec.tensors,
        )
        terms += [_pinned_term(p.name, fixed[p.name]) for p in pinned]
        lines = text.splitlines(keepends=True)
        step = indent_step(text, spec.target_path)
        alias = launcher_name(spec.call, function)
        scripted = cls is None and _is_scripted(function, tree)
        if scripted:
            lines = _dispatch_around_script(tree, function, lines, terms, spec, alias, rename, step)
        else:
            index = source.body_start(function)
            indent = source.indent_of(lines[index])
            new = dispatch_block(terms, spec.kernel_import, spec.call, alias, rename, indent, step)
            # A blank line keeps the kernel branch visibly apart from the original body.
            lines = source.insert(lines, index, [*new, "\n"])
        patched = source.ensure_torch_import("".join(lines), spec.target_path)
        module = spec.module_of(spec.target_path)
        guard_md = " and ".join(f"`{t}`" for t in terms)
        if cls is None:
            entry = EntryPoint(
                import_line=f"from {module} import {function.name}",
                construct=None,
                call=_function_call(function.name, params, fixed, len(spec.call.forward_params)),
                loads_state=False,
            )
            what = f"`{function.name}`"
        else:
            entry = EntryPoint(
                import_line=f"from {module} import {cls.name}",
                construct=f"{cls.name}(*init_inputs)",
                call=f"op.{function.name}(*inputs)",
                loads_state=True,
            )
            what = f"`{cls.name}.{function.name}`"
        compiled = any("compile" in source_text for source_text in _decorators(function))
        note = (
            f"{what} now returns the Triton kernel's result when {guard_md}; every other input "
            "runs the original code below the new branch, unchanged."
        )
        if scripted:
            note = (
                f"{what} is now a plain Python function that returns the Triton kernel's result "
                f"when {guard_md}; every other input runs the original TorchScript function, "
                f"unchanged but renamed `{_scripted_name(function)}` (TorchScript cannot "
                "launch a Triton kernel)."
            )
        elif compiled:
            note += (
                " The function stays under `torch.compile`: Dynamo traces the Triton launch as a "
                "user-defined kernel, so the compiled graph calls it directly."
            )
        original = None
        if cls is None:
            copy_name = f"_original_{function.name}"
            start = function.lineno - 1  # the `def` line: decorators stay behind
            copy = "".join(text.splitlines(keepends=True)[start : function.end_lineno])
            original = (copy_name, copy.replace(f"def {function.name}(", f"def {copy_name}(", 1))
        return Integration(
            adapter=self.name,
            changes=(FileChange(spec.target_path, patched, created=False),),
            entry=entry,
            guard=" and ".join(terms),
            dispatch_note=note,
            original=original,
        )


def _decorators(function: ast.FunctionDef) -> list[str]:
    return [ast.unparse(d) for d in function.decorator_list]


def _is_scripted(function: ast.FunctionDef, tree: ast.Module) -> bool:
    """Whether `torch.jit.script` (through any import alias) decorates the function."""
    imports = module_imports(tree)
    return any(
        resolve_alias(dotted_name(d.func if isinstance(d, ast.Call) else d) or "", imports)
        == "torch.jit.script"
        for d in function.decorator_list
    )


def _scripted_name(function: ast.FunctionDef) -> str:
    return f"_{function.name}_scripted"


def _dispatch_around_script(
    tree: ast.Module,
    function: ast.FunctionDef,
    lines: list[str],
    terms: list[str],
    spec: AdapterInput,
    alias: str,
    rename: dict[str, str],
    step: str,
) -> list[str]:
    """A TorchScript function cannot launch a Triton kernel, so it keeps its body and
    decorator under a new name and a plain function of the old name dispatches: the guard to
    the kernel, everything else to the scripted original. Another TorchScript function calling
    it by name would then call Python, which TorchScript refuses at import: that is refused
    here instead."""
    where = f"{spec.target_path}: {function.name}"
    for other in ast.walk(tree):
        if (
            isinstance(other, ast.FunctionDef)
            and other is not function
            and _is_scripted(other, tree)
            and any(isinstance(n, ast.Name) and n.id == function.name for n in ast.walk(other))
        ):
            raise AdapterError(
                f"{where} is called by the TorchScript function `{other.name}` (line "
                f"{other.lineno}), which cannot call the Python dispatch kbot would put in its "
                "place; script neither, or patch the caller instead"
            )
    scripted = _scripted_name(function)
    if any(isinstance(n, ast.Name) and n.id == scripted for n in ast.walk(tree)):
        raise AdapterError(f"{where}: the module already defines `{scripted}`")
    def_line = function.lineno - 1
    lines = list(lines)
    lines[def_line] = lines[def_line].replace(f"def {function.name}(", f"def {scripted}(", 1)
    args = function.args
    passed = [a.arg for a in args.posonlyargs + args.args]
    passed += [f"{a.arg}={a.arg}" for a in args.kwonlyargs]
    returns = f" -> {ast.unparse(function.returns)}" if function.returns else ""
    wrapper = [
        "\n",
        "\n",
        f"def {function.name}({ast.unparse(args)}){returns}:\n",
        f'{step}"""`{scripted}`, and kbot\'s Triton kernel for the inputs it was checked on."""\n',
        *dispatch_block(terms, spec.kernel_import, spec.call, alias, rename, step, step),
        f"{step}return {scripted}({', '.join(passed)})\n",
    ]
    return source.insert(lines, source.node_end(function), wrapper)


GUARDED_DISPATCH = GuardedDispatchAdapter()


def _pinned_term(name: str, value: Any) -> str:
    """`seq_dim == 1`: the value the problem fixed, the only one the kernel was checked at."""
    if value is None or isinstance(value, bool):
        return f"{name} is {value!r}"
    return f"{name} == {value!r}"


def _function_call(name: str, params: tuple[Any, ...], fixed: dict[str, Any], count: int) -> str:
    """How the parity test and the benchmark call the original function with the problem's
    `count` inputs: `f(*inputs)`, or by name, with the numbers the problem fixed in their
    places (later parameters keep their defaults)."""
    if not any(p.name in fixed for p in params):
        return f"{name}(*inputs)"
    parts, given = [], 0
    for p in params:
        if p.name in fixed:
            parts.append(f"{p.name}={fixed[p.name]!r}")
        elif given < count:
            parts.append(f"{p.name}=inputs[{given}]")
            given += 1
    return f"{name}({', '.join(parts)})"
