"""The kernel call a candidate makes: `ModelNew.forward`'s single `return <op>(...)` line.

Per the candidate convention (docs/architecture.md) everything above `ModelNew` is the kernel
module and the `return <op>(...)` line is the call the integration adapter writes into the
target op, with the forward parameters renamed to the target's and `self.<attr>` kept.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from kbot.errors import KbotError


class CallSiteError(KbotError):
    """A candidate whose kernel call does not follow the candidate convention."""


@dataclass(frozen=True)
class KernelCall:
    launcher: str  # the kernel module's launcher, e.g. "rmsnorm"
    forward_params: tuple[str, ...]  # ModelNew.forward's parameters (without self)
    args: tuple[str, ...]  # source text of each argument, e.g. ("x", "self.weight", "self.eps")
    keywords: tuple[tuple[str, str], ...]  # (name, source text) of keyword arguments
    attributes: tuple[str, ...]  # the `self.<attr>` names the call reads

    def render(self, rename: dict[str, str] | None = None, launcher: str | None = None) -> str:
        """The call as source, with forward parameters renamed (candidate name -> target name)."""
        rename = rename or {}
        parts = [_rename(a, rename) for a in self.args]
        parts += [f"{k}={_rename(v, rename)}" for k, v in self.keywords]
        return f"{launcher or self.launcher}({', '.join(parts)})"


def _rename(expression: str, rename: dict[str, str]) -> str:
    if not rename:
        return expression

    class _Names(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if node.id in rename:
                return ast.copy_location(ast.Name(rename[node.id], node.ctx), node)
            return node

    return ast.unparse(_Names().visit(ast.parse(expression, mode="eval")).body)


def parse_kernel_call(source: str, path: Path) -> KernelCall:
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise CallSiteError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    model_new = next(
        (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "ModelNew"), None
    )
    if model_new is None:
        raise CallSiteError(f"{path}: no `class ModelNew`; not a kbot candidate")
    forward = next(
        (n for n in model_new.body if isinstance(n, ast.FunctionDef) and n.name == "forward"),
        None,
    )
    if forward is None:
        raise CallSiteError(f"{path}:{model_new.lineno}: ModelNew has no forward()")
    body = [s for s in forward.body if not _is_docstring(s)]
    call = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
    if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Name):
        raise CallSiteError(
            f"{path}:{forward.lineno}: ModelNew.forward must be a single `return <op>(...)` call "
            "of the kernel module's launcher (the candidate convention in docs/architecture.md)"
        )
    launchers = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    if call.func.id not in launchers:
        raise CallSiteError(
            f"{path}:{call.lineno}: ModelNew.forward calls {call.func.id}(), "
            "which is not a function defined in the file"
        )
    params = tuple(a.arg for a in forward.args.posonlyargs + forward.args.args if a.arg != "self")
    if forward.args.vararg or forward.args.kwarg or forward.args.kwonlyargs:
        raise CallSiteError(
            f"{path}:{forward.lineno}: ModelNew.forward must take plain positional parameters"
        )
    attributes: list[str] = []
    for node in ast.walk(call):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if node.value.id == "self" and node.attr not in attributes:
                attributes.append(node.attr)
    return KernelCall(
        launcher=call.func.id,
        forward_params=params,
        args=tuple(ast.unparse(a) for a in call.args),
        keywords=tuple((k.arg, ast.unparse(k.value)) for k in call.keywords if k.arg),
        attributes=tuple(attributes),
    )


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )
