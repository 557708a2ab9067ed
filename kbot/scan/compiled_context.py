"""Ops that run compiled without a `@torch.compile` of their own: a `forward` that dispatches
to compiled methods (nano-vllm's `RMSNorm.forward` calls `self.rms_forward`, a
`@torch.compile` method) and a helper a compiled function calls (`apply_rotary_emb`, called by
the compiled `RotaryEmbedding.forward`). The code as written runs torch.compile's kernels there,
so a kernel must beat torch.compile, not eager PyTorch (kbot.search.by_size.original_path_of):
on the H200 two nano-vllm drafts were judged against eager and served sizes where they were
up to 5% slower than the compiled path they replace."""

from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import PurePosixPath

from kbot.scan.facts import FileFacts, FunctionInfo
from kbot.scan.findings import Finding, Kind


def mark_compiled_context(findings: list[Finding], all_facts: list[FileFacts]) -> list[Finding]:
    """Each finding that is not compiled itself, with `compiled_by` set ("file:line (why)":
    "layernorm.py:40 (RMSNorm.forward calls the compiled RMSNorm.rms_forward)")
    where it calls a compiled function of its module or a compiled function calls it."""
    by_file = {facts.file.rel: facts for facts in all_facts}
    out = []
    for finding in findings:
        facts = by_file.get(finding.file)
        compiled = Kind.TORCH_COMPILE in (finding.kind, *finding.also_found_as)
        where = "" if compiled or finding.compiled_by or facts is None else (
            _calls_compiled(finding, facts) or _called_compiled(finding, all_facts)
        )  # fmt: skip
        out.append(replace(finding, compiled_by=where) if where else finding)
    return out


def _calls_compiled(finding: Finding, facts: FileFacts) -> str:
    """A compiled function or method of the finding's module that its callable calls."""
    own = function_named(facts, finding.callable_qualname) or function_named(
        facts, f"{finding.qualname}.{finding.entry or 'forward'}"
    )  # an op class: its forward
    if own is None:
        return ""
    compiled = {f.qualname: f for f in facts.functions if f.compile_decorator}
    for name in _called_names(own.node, own.class_qualname):
        if name in compiled:
            return _where(facts, own, f"{own.qualname} calls the compiled {name}")
    return ""


def _called_compiled(finding: Finding, all_facts: list[FileFacts]) -> str:
    """A compiled function, in the finding's module or one importing it, that calls it."""
    own_module = PurePosixPath(finding.file).with_suffix("").name
    name = finding.callable_qualname
    for facts in all_facts:
        local = facts.file.rel == finding.file
        # the local names this file calls the finding by: its own name, or an import of it
        aliases = {name} if local else {
            alias for alias, origin in facts.imports.items()
            if "." not in name and origin.rsplit(".", 2)[-2:] == [own_module, name]
        }  # fmt: skip
        if not aliases:
            continue
        for function in facts.functions:
            if not function.compile_decorator:
                continue
            called = _called_names(function.node, function.class_qualname)
            if aliases & called:
                return _where(facts, function, f"the compiled {function.qualname} calls it")
    return ""


def function_named(facts: FileFacts, qualname: str) -> FunctionInfo | None:
    """The function or method of the file with that qualname ("RMSNorm.forward")."""
    return next((f for f in facts.functions if f.qualname == qualname), None)


def _called_names(node: ast.AST, class_qualname: str | None) -> set[str]:
    """`fn(...)` as "fn", `self.m(...)` as "Class.m" (the method of the caller's class)."""
    names: set[str] = set()
    for call in ast.walk(node):
        if not isinstance(call, ast.Call):
            continue
        func = call.func
        if isinstance(func, ast.Name):
            names.add(func.id)
        elif (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
            and class_qualname
        ):
            names.add(f"{class_qualname}.{func.attr}")
    return names


def _where(facts: FileFacts, function: FunctionInfo, why: str) -> str:
    return f"{facts.file.rel}:{function.node.lineno} ({why})"
