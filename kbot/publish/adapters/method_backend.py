"""Backend methods on an op class: `forward_cuda` (CustomOp style) and `forward_triton`
(BaseFusedOp style), both keeping `forward_native` as the reference and the fallback.

If the class already has the method, the guarded dispatch goes at the top of its body (an
existing kernel then still serves what kbot's kernel was not checked on); otherwise a new
method with the reference's signature is added right after the reference.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

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

_NOTES = {
    "forward_cuda": (
        "`{cls}.forward_cuda` now calls the Triton kernel when {guard_md}; any other input takes "
        "`forward_native`, the unchanged PyTorch reference. CustomOp's `forward` picks "
        "`forward_cuda` for CUDA tensors, so CPU callers are unaffected."
    ),
    "forward_triton": (
        "`{cls}` gains a `forward_triton` backend that calls the Triton kernel when {guard_md} "
        "and otherwise returns `forward_native`. It is used wherever the op's dispatch prefers "
        "the Triton backend (its backend priority, or forcing the backend in the op's "
        "configuration); forcing the native backend restores the previous behaviour."
    ),
}


@dataclass(frozen=True)
class MethodBackendAdapter:
    name: str  # "forward_cuda" | "forward_triton"
    method: str
    checks_cuda: bool  # forward_cuda is only dispatched for CUDA tensors; forward_triton may not be

    def integrate(self, spec: AdapterInput) -> Integration:
        text = spec.read(spec.target_path)
        tree = source.parse(text, spec.target_path)
        class_name = spec.qualname.split(".")[0]
        cls = source.find_class(tree, class_name, spec.target_path)
        reference_name = (
            spec.entry if spec.entry and spec.entry != self.method else "forward_native"
        )
        reference = source.find_function(cls, reference_name, spec.target_path)
        assert reference is not None
        where = f"{spec.target_path}: {class_name}.{reference_name}"
        target_params = source.params(reference)
        rename = rename_map(spec.call, target_params, where)
        terms = guard_terms(
            spec.call,
            target_params,
            spec.dtypes,
            self.checks_cuda,
            where,
            spec.inputs,
            reference,
            spec.scalars,
            cls,
            spec.sizes,
            spec.swept_scalars,
            spec.tensors,
        )
        step = indent_step(text, spec.target_path)
        lines = text.splitlines(keepends=True)
        existing = source.find_function(cls, self.method, spec.target_path, required=False)
        existing_copy = None
        if existing is not None:
            if self.method == "forward_triton":
                raise AdapterError(
                    f"{spec.target_path}: {class_name} already has forward_triton; set "
                    "`adapter: guarded_dispatch` for this target in .kbot.yml to add kbot's "
                    "kernel in front of it"
                )
            # The existing method's own parameters decide the renames and the guard.
            target_params = source.params(existing)
            where = f"{spec.target_path}: {class_name}.{self.method}"
            rename = rename_map(spec.call, target_params, where)
            terms = guard_terms(
                spec.call,
                target_params,
                spec.dtypes,
                self.checks_cuda,
                where,
                spec.inputs,
                reference,
                spec.scalars,
                cls,
                spec.sizes,
                spec.swept_scalars,
                spec.tensors,
            )
            existing_copy = _module_level_copy(lines, existing, f"_existing_{self.method}")
            index = source.body_start(existing)
            indent = source.indent_of(lines[index])
            alias = launcher_name(spec.call, existing)
            new = dispatch_block(terms, spec.kernel_import, spec.call, alias, rename, indent, step)
            lines = source.insert(lines, index, new)
        else:
            lines = source.insert(
                lines,
                source.node_end(reference),
                self._new_method(lines, reference, spec, terms, rename, step),
            )
        patched = source.ensure_torch_import("".join(lines), spec.target_path)
        guard_md = " and ".join(f"`{t}`" for t in terms)
        return Integration(
            adapter=self.name,
            changes=(FileChange(spec.target_path, patched, created=False),),
            entry=EntryPoint(
                import_line=f"from {spec.module_of(spec.target_path)} import {class_name}",
                construct=f"{class_name}(*init_inputs)",
                call="op(*inputs)",
                loads_state=True,
            ),
            guard=" and ".join(terms),
            dispatch_note=_NOTES[self.method].format(cls=class_name, guard_md=guard_md),
            existing=existing_copy,
        )

    def _new_method(
        self,
        lines: list[str],
        reference: ast.FunctionDef,
        spec: AdapterInput,
        terms: list[str],
        rename: dict[str, str],
        step: str,
    ) -> list[str]:
        # The signature is copied as written (annotations, line breaks), renamed.
        header = lines[reference.lineno - 1 : reference.body[0].lineno - 1]
        header = [
            h for h in header if not h.strip().startswith('"""') and not h.strip().startswith("#")
        ]
        header[0] = header[0].replace(f"def {reference.name}(", f"def {self.method}(", 1)
        indent = source.indent_of(header[0])
        args = ", ".join(p.name for p in source.params(reference))
        alias = launcher_name(spec.call, reference)
        body = dispatch_block(
            terms, spec.kernel_import, spec.call, alias, rename, indent + step, step
        )
        fallback = f"{indent}{step}return self.{reference.name}({args})\n"
        return ["\n", *header, *body, fallback]


def _module_level_copy(lines: list[str], method: ast.FunctionDef, name: str) -> tuple[str, str]:
    """The method's source as written (decorators left out), dedented to module level and
    renamed; it still takes `self` first."""
    start = method.lineno - 1
    body = textwrap.dedent("".join(lines[start : method.end_lineno]))
    return name, body.replace(f"def {method.name}(", f"def {name}(", 1)


FORWARD_CUDA = MethodBackendAdapter("forward_cuda", "forward_cuda", checks_cuda=False)
FORWARD_TRITON = MethodBackendAdapter("forward_triton", "forward_triton", checks_cuda=True)
