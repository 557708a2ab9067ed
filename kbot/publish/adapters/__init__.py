"""Integration adapters: how a kernel is wired into the target op, chosen from the scan's kind
and the op's shape, overridable per target with `adapter:` in `.kbot.yml`."""

from __future__ import annotations

import ast

from kbot.publish.adapters.base import Adapter, AdapterInput, EntryPoint, FileChange, Integration
from kbot.publish.adapters.guarded import GUARDED_DISPATCH
from kbot.publish.adapters.lmdeploy_builder import LMDeployBuilderAdapter
from kbot.publish.adapters.method_backend import FORWARD_CUDA, FORWARD_TRITON
from kbot.publish.adapters.source import AdapterError

ADAPTERS: dict[str, Adapter] = {
    "forward_cuda": FORWARD_CUDA,
    "forward_triton": FORWARD_TRITON,
    "lmdeploy_builder": LMDeployBuilderAdapter(),
    "guarded_dispatch": GUARDED_DISPATCH,
}

_BY_KIND = {
    "custom_op": "forward_cuda",
    "fused_op": "forward_triton",
    "default_backend": "lmdeploy_builder",
}

__all__ = [
    "ADAPTERS",
    "Adapter",
    "AdapterError",
    "AdapterInput",
    "EntryPoint",
    "FileChange",
    "Integration",
    "choose_adapter",
]


def choose_adapter(requested: str, kind: str, target_source: str, qualname: str) -> str:
    """The adapter to use: the configured one, else by scan kind, else by the op's shape
    (an op class with `forward_native` gets a backend method, anything else a guarded dispatch)."""
    if requested != "auto":
        if requested not in ADAPTERS:
            raise AdapterError(
                f"unknown adapter {requested!r}; choose one of auto, {', '.join(ADAPTERS)}"
            )
        return requested
    if kind in _BY_KIND:
        return _BY_KIND[kind]
    parts = qualname.split(".")
    if len(parts) == 1 or parts[1] == "forward_native":
        try:
            tree = ast.parse(target_source)
        except SyntaxError:
            return "guarded_dispatch"
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == parts[0]:
                methods = {n.name for n in node.body if isinstance(n, ast.FunctionDef)}
                bases = " ".join(ast.unparse(b) for b in node.bases)
                if "forward_native" in methods:
                    fused = "forward_triton" in methods or "Fused" in bases
                    return "forward_triton" if fused else "forward_cuda"
    return "guarded_dispatch"
