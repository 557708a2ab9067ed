"""Ops found by name (kbot.scan.findings.Kind.NAMED_OP): repositories such as gpt-fast,
litgpt and torchtitan mark nothing and compile whole models, so a module or undecorated
module-level function named as a common serving op, whose own body is the math, is a target."""

from __future__ import annotations

import ast
import re

from kbot.scan.facts import ClassInfo, FileFacts, FunctionNode
from kbot.scan.findings import Kind
from kbot.scan.patterns import Candidate, function_candidate, is_stub

# Names that say "a common serving op" (kbot.scan.findings.Kind.NAMED_OP).
_OP_CLASS_NAME = re.compile(
    r"^\w*(?:RMSNorm|RmsNorm|LayerNorm|Rotary\w*|RoPE\w*|Rope\w*|(?:Silu|SiLU|Gelu|GELU)AndMul"
    r"|SwiGLU|GeGLU|QuickGELU|Softcap\w*)$"
)
_OP_FUNCTION_NAME = re.compile(
    r"^_?(?:apply_rotary\w*|apply_rope\w*|rotate_half|\w*rms_?norm\w*|\w*layer_norm\w*"
    r"|\w*(?:silu|gelu)_and_mul\w*|swiglu\w*|geglu\w*|\w*softcap\w*)$"
)
# Words of a name that make it plumbing around an op, not the op: kernels and their launchers'
# registrations, autograd halves, tests, builders of configs and caches.
_NOT_OP_WORDS = {
    "test", "tests", "meta", "fake", "checker", "check", "config", "build", "make", "setup",
    "annotate", "backward", "bwd", "kernel", "scaling", "cache", "init", "context", "register",
}  # fmt: skip
_TEST_FOLDERS = {"test", "tests", "unit_tests", "testing"}
_NOT_OP_FOLDERS = _TEST_FOLDERS | {"benchmarks", "benchmark", "examples", "docs"}


def in_tests(rel: str) -> bool:
    """A file of the repository's tests: under a test folder, or named `test_*.py`."""
    parts = rel.split("/")
    return bool(set(parts[:-1]) & _TEST_FOLDERS) or parts[-1].startswith("test_")


def named_op_candidates(all_facts: list[FileFacts]) -> list[Candidate]:
    """Modules and undecorated module-level functions named as common ops, whose own body is
    the math: a class's forward may call its own methods and torch, but no submodule
    (`self.proj(x)`, `self.impl.forward(x)` make it a layer or a dispatcher, not an op)."""
    out: list[Candidate] = []
    for facts in all_facts:
        parts = facts.file.rel.split("/")
        folders = set(parts[:-1])
        # kernels/, triton_kernel/: a kernel library already (its torch twins are test oracles)
        if in_tests(facts.file.rel) or folders & _NOT_OP_FOLDERS:
            continue
        if any("kernel" in f for f in folders):
            continue
        for info in facts.classes:
            forward = info.methods.get("forward")
            if not _OP_CLASS_NAME.match(info.name) or forward is None or is_stub(forward):
                continue
            if any(is_stub(method) for method in info.methods.values()):
                continue  # an abstract base: its subclasses fill in what forward needs
            if "Module" in info.bases and not _calls_a_submodule(forward, info):
                out.append(Candidate(facts, info.qualname, Kind.NAMED_OP, "forward", forward, info))
        for fn in facts.functions:
            name = fn.qualname.rsplit(".", 1)[-1]
            words = set(name.lower().strip("_").split("_"))
            if (
                fn.class_qualname is None
                and _OP_FUNCTION_NAME.match(name)
                and not words & _NOT_OP_WORDS
                and not fn.node.decorator_list
                and fn.node.args.args
                and not is_stub(fn.node)
                and not _launches_a_kernel(fn.node)
                and not _takes_only_scalars(fn.node)
            ):
                out.append(function_candidate(facts, fn.qualname, fn.node, None, Kind.NAMED_OP))
    return out


_SCALAR_ANNOTATIONS = {"int", "float", "bool", "str", "None", "Optional", "Union", "Literal"}


def _takes_only_scalars(node: FunctionNode) -> bool:
    """Every argument annotated as a number, flag or string (`def _vision_layer_norm(dim: int)
    -> LayerNorm.Config`): a builder of a config or a size, not an op on tensors."""
    args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
    if not args or any(a.annotation is None for a in args):
        return False
    for arg in args:
        names = {n.id for n in ast.walk(arg.annotation) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(arg.annotation) if isinstance(n, ast.Attribute)}
        strings = [n.value for n in ast.walk(arg.annotation) if isinstance(n, ast.Constant)]
        if not names and strings:  # a string annotation: its words
            names = set(re.findall(r"\w+", " ".join(str(v) for v in strings)))
        if not names or not names <= _SCALAR_ANNOTATIONS:
            return False
    return True


def _launches_a_kernel(node: FunctionNode) -> bool:
    """`_kernel[grid](...)`: a Triton launcher, the fast path itself."""
    return any(
        isinstance(call, ast.Call) and isinstance(call.func, ast.Subscript)
        for call in ast.walk(node)
    )


def _calls_a_submodule(forward: FunctionNode, info: ClassInfo) -> bool:
    for node in ast.walk(forward):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        chain = []
        value: ast.expr = node.func
        while isinstance(value, ast.Attribute):
            chain.append(value.attr)
            value = value.value
        if not (isinstance(value, ast.Name) and value.id == "self"):
            continue
        chain.reverse()  # self.a.b(...) -> ["a", "b"]
        if len(chain) == 1 and chain[0] not in info.methods:
            return True  # self.proj(x)
        if len(chain) > 1 and chain[-1] in ("forward", "__call__", "apply"):
            return True  # self.impl.forward(x)
    return False
