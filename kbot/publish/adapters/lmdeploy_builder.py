"""An LMDeploy-style backend: a Triton impl + builder next to the CUDA backend's registry, and
the registry branch that returns it.

Layout it expects (LMDeploy's `pytorch/backends/`):

    backends/default/<file>.py     class Default<Op>Impl (the target) and Default<Op>Builder
    backends/default/op_backend.py `if layer_type == OpType.<Op>: ... return Default<Op>Builder`
    backends/cuda/op_backend.py    `get_layer_impl_builder(cls, layer_type)`: an if/elif chain

The new impl subclasses the default one and falls back to it (`super().forward`) for inputs
the kernel was not checked on; the new builder subclasses the default builder.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import PurePosixPath

from kbot.publish.adapters import source
from kbot.publish.adapters.base import (
    AdapterInput,
    EntryPoint,
    FileChange,
    Integration,
    dispatch_block,
    guard_terms,
    rename_map,
)
from kbot.publish.adapters.source import AdapterError

REGISTRY_FUNCTION = "get_layer_impl_builder"


@dataclass(frozen=True)
class LMDeployBuilderAdapter:
    name: str = "lmdeploy_builder"

    def cuda_dir(self, target_path: str) -> str:
        default_dir = PurePosixPath(target_path).parent
        if default_dir.name != "default":
            raise AdapterError(
                f"{target_path} is not under a backends/default/ folder; choose another "
                "`adapter:` for this target in .kbot.yml (e.g. guarded_dispatch)"
            )
        return str(default_dir.parent / "cuda")

    def integrate(self, spec: AdapterInput) -> Integration:
        default_dir = PurePosixPath(spec.target_path).parent
        cuda_dir = PurePosixPath(self.cuda_dir(spec.target_path))
        text = spec.read(spec.target_path)
        tree = source.parse(text, spec.target_path)
        impl_name = spec.qualname.split(".")[0]
        impl = source.find_class(tree, impl_name, spec.target_path)
        method = source.find_function(impl, spec.entry or "forward", spec.target_path)
        assert method is not None
        builder_name = _builder_of(tree, impl_name, spec.target_path)
        op_type = _op_type(spec, str(default_dir / "op_backend.py"), builder_name)
        base = impl_name.removeprefix("Default")
        new_impl, new_builder = f"Triton{base}", f"Triton{base.removesuffix('Impl')}Builder"
        where = f"{spec.target_path}: {impl_name}.{method.name}"
        target_params = source.params(method)
        rename = rename_map(spec.call, target_params, where)
        terms = guard_terms(
            spec.call,
            target_params,
            spec.dtypes,
            True,
            where,
            spec.inputs,
            method,
            spec.scalars,
            impl,
            spec.sizes,
            spec.swept_scalars,
            spec.tensors,
        )
        step = "    "
        builder_file = str(cuda_dir / f"triton_{spec.call.launcher}_builder.py")
        module_text = _builder_module(
            spec, method, impl_name, builder_name, new_impl, new_builder, terms, rename, step
        )
        registry_path = str(cuda_dir / "op_backend.py")
        registry = _add_branch(
            spec.read(registry_path),
            registry_path,
            op_type,
            PurePosixPath(builder_file).stem,
            new_builder,
        )
        guard_md = " and ".join(f"`{t}`" for t in terms)
        return Integration(
            adapter=self.name,
            changes=(
                FileChange(builder_file, module_text, created=True),
                FileChange(registry_path, registry, created=False),
            ),
            entry=EntryPoint(
                import_line=f"from {spec.module_of(builder_file)} import {new_builder}",
                construct=f"{new_builder}.build(*init_inputs)",
                call=f"op.{method.name}(*inputs)",
                loads_state=False,
            ),
            guard=" and ".join(terms),
            dispatch_note=(
                f"The CUDA backend's `{REGISTRY_FUNCTION}` now returns `{new_builder}` for "
                f"`OpType.{op_type}`. Its `{new_impl}` runs the Triton kernel when {guard_md} "
                f"and otherwise calls `{impl_name}.{method.name}` (`super()`), so other inputs "
                "and every other backend are unchanged."
            ),
        )


def _builder_of(tree: ast.Module, impl_name: str, path: str) -> str:
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            build = source.find_function(node, "build", path, required=False)
            if build is not None and any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == impl_name
                for n in ast.walk(build)
            ):
                return node.name
    raise AdapterError(f"{path}: no builder class whose build() returns {impl_name}(...)")


def _op_type(spec: AdapterInput, registry_path: str, builder_name: str) -> str:
    text = spec.read(registry_path)
    tree = source.parse(text, registry_path)
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and any(
            isinstance(n, ast.Name) and n.id == builder_name
            for stmt in node.body
            for n in ast.walk(stmt)
        ):
            test = node.test
            if (
                isinstance(test, ast.Compare)
                and isinstance(test.comparators[0], ast.Attribute)
                and isinstance(test.comparators[0].value, ast.Name)
            ):
                return test.comparators[0].attr
    raise AdapterError(
        f"{registry_path}: no `if layer_type == OpType.<X>:` branch returns {builder_name}"
    )


def _builder_module(
    spec: AdapterInput,
    method: ast.FunctionDef,
    impl_name: str,
    builder_name: str,
    new_impl: str,
    new_builder: str,
    terms: list[str],
    rename: dict[str, str],
    step: str,
) -> str:
    default_module = spec.module_of(spec.target_path)
    # The default impl's signature with its defaults: callers may leave `residual` out.
    signature = ", ".join(
        [
            "self",
            *(
                p.name if p.default is None else f"{p.name}={p.default}"
                for p in source.params(method)
            ),
        ]
    )
    args = ", ".join(p.name for p in source.params(method))
    body = dispatch_block(
        terms, spec.kernel_import, spec.call, spec.call.launcher, rename, step * 2, step
    )
    return "".join(
        [
            f'"""Triton {spec.call.launcher} for the CUDA backend (generated by kbot): the\n',
            f"kernel for inputs it was checked on, {impl_name} for everything else.\n",
            '"""\n\n',
            "import torch\n\n",
            f"from {default_module} import {builder_name}, {impl_name}\n\n\n",
            f"class {new_impl}({impl_name}):\n",
            f"{step}def {method.name}({signature}):\n",
            *body,
            f"{step * 2}return super().{method.name}({args})\n\n\n",
            f"class {new_builder}({builder_name}):\n",
            f"{step}@staticmethod\n",
            f"{step}def build(*args, **kwargs):\n",
            f"{step * 2}return {new_impl}(*args, **kwargs)\n",
        ]
    )


def _add_branch(text: str, path: str, op_type: str, module_stem: str, builder: str) -> str:
    tree = source.parse(text, path)
    function = None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == REGISTRY_FUNCTION:
            function = node
    if function is None:
        raise AdapterError(f"{path}: no {REGISTRY_FUNCTION}(); is this LMDeploy's CUDA backend?")
    chain = next((s for s in function.body if isinstance(s, ast.If)), None)
    lines = text.splitlines(keepends=True)
    if chain is None:
        raise AdapterError(f"{path}: {REGISTRY_FUNCTION}() has no `if layer_type == ...` chain")
    node = chain
    while True:
        if f"OpType.{op_type}" in ast.unparse(node.test):
            raise AdapterError(
                f"{path}: the CUDA backend already has a builder for OpType.{op_type}; "
                "kbot does not replace an existing kernel"
            )
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            node = node.orelse[0]
            continue
        break
    if_indent = source.indent_of(lines[chain.lineno - 1])
    step = source.indent_of(lines[chain.body[0].lineno - 1])[len(if_indent) :]
    branch = [
        f"{if_indent}elif layer_type == OpType.{op_type}:\n",
        f"{if_indent}{step}from .{module_stem} import {builder}\n",
        "\n",
        f"{if_indent}{step}return {builder}\n",
    ]
    if node.orelse:
        # Before the `else:` line, which sits just above the first statement of the else body.
        else_line = node.orelse[0].lineno - 2
        while not lines[else_line].strip().startswith("else"):
            else_line -= 1
        return "".join(source.insert(lines, else_line, branch))
    return "".join(source.insert(lines, source.node_end(node), branch))
