"""A `forward` that only dispatches to methods that are targets of their own is not one more
target: nano-vllm's `RMSNorm.forward` returns `self.rms_forward(x)` or
`self.add_rms_forward(x, residual)`, both `@torch.compile` methods found as targets, and the
H200 run drafted three PRs for that class, the forward's patching the lines the other two patch.
Each path is a problem and a PR of its own; the dispatcher stays in the scan, skipped, with the
paths named. A `.kbot.yml` target is never skipped this way."""

from __future__ import annotations

import ast
from dataclasses import replace

from kbot.scan.compiled_context import function_named
from kbot.scan.facts import FileFacts, FunctionNode
from kbot.scan.findings import Finding, Status


def skip_dispatchers(findings: list[Finding], all_facts: list[FileFacts]) -> list[Finding]:
    targets = {(f.file, f.callable_qualname) for f in findings if f.status == Status.TARGET}
    by_file = {facts.file.rel: facts for facts in all_facts}
    out = []
    for finding in findings:
        paths = _paths(finding, by_file.get(finding.file))
        covered = paths and all((finding.file, f"{finding.qualname}.{m}") in targets for m in paths)
        if finding.status == Status.TARGET and finding.hint is None and covered:
            named = ", ".join(f"{finding.qualname}.{m}" for m in paths)
            why = f"dispatches to targets of their own ({named}): each gets its own problem and PR"
            finding = replace(finding, status=Status.SKIPPED, skip_reason=why)
        out.append(finding)
    return out


def _paths(finding: Finding, facts: FileFacts | None) -> list[str]:
    """The methods of its class a class target's entry returns the call of, when every return
    is such a call (`return self.m(...)`); [] otherwise."""
    if facts is None or not finding.entry or finding.callable_qualname != finding.qualname:
        return []
    qualname = f"{finding.qualname}.{finding.entry}"
    function = function_named(facts, qualname)
    if function is None:
        return []
    methods: list[str] = []
    for node in _returns(function.node):
        call = node.value
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and isinstance(call.func.value, ast.Name)
            and call.func.value.id == "self"
        ):
            return []
        if call.func.attr not in methods:
            methods.append(call.func.attr)
    return methods


def _returns(node: FunctionNode) -> list[ast.Return]:
    """The function's own return statements (not those of functions defined inside it)."""
    found: list[ast.Return] = []
    todo: list[ast.AST] = list(node.body)
    while todo:
        child = todo.pop()
        if isinstance(child, ast.Return):
            found.append(child)
        elif not isinstance(
            child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)
        ):
            todo.extend(ast.iter_child_nodes(child))
    return sorted(found, key=lambda r: r.lineno)
