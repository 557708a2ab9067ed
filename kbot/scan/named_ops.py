"""Ops found by name (kbot.scan.findings.Kind.NAMED_OP): repositories such as gpt-fast,
litgpt and torchtitan mark nothing and compile whole models, so a module or undecorated
module-level function named as a common serving op, whose own body is the math, is a target."""

from __future__ import annotations

import ast
import re

from kbot.scan.facts import FileFacts, FunctionNode, add_import, dotted_name, resolve_alias
from kbot.scan.findings import Kind
from kbot.scan.patterns import Candidate, ClassIndex, function_candidate, is_stub

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
    "ref", "reference", "naive",  # a kernel's test oracle (`rms_norm_ref`)
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
    index = ClassIndex(all_facts)
    for facts in all_facts:
        parts = facts.file.rel.split("/")
        folders = set(parts[:-1])
        # kernels/, triton_kernel/: a kernel library already (its torch twins are test oracles)
        if in_tests(facts.file.rel) or folders & _NOT_OP_FOLDERS:
            continue
        # ... and triton/, ops/triton/ (mamba_ssm): Triton kernels with their torch oracles
        if any("kernel" in f or f.startswith("triton") for f in folders):
            continue
        for info in facts.classes:
            if not _OP_CLASS_NAME.match(info.name):
                continue
            # Methods as the class has them: its own, else its nearest in-tree ancestor's (a
            # concrete rotary class that inherits forward from its abstract base).
            chain = index.ancestors(facts, info)
            methods: dict[str, tuple[FileFacts, FunctionNode]] = {}
            owner: dict[str, str] = {}
            for where, ancestor in chain:
                for name, method in ancestor.methods.items():
                    methods.setdefault(name, (where, method))
                    owner.setdefault(name, ancestor.name)
            where, forward = methods.get("forward", (facts, None))
            if forward is None or is_stub(forward):
                continue
            if not _OP_CLASS_NAME.match(owner["forward"]):
                continue  # a dispatcher base's forward (CustomOp, BaseFusedOp): their finders'

            if any(is_stub(method) for _, method in methods.values()):
                continue  # an abstract base: its subclasses fill in what forward needs
            reached = _reached(forward, where)
            if _reaches_a_kernel(forward, reached):
                continue  # its forward launches a kernel already: the fast path itself
            is_module = any("Module" in ancestor.bases for _, ancestor in chain)
            if is_module and not _calls_a_submodule(forward, set(methods)):
                candidate = Candidate(facts, info.qualname, Kind.NAMED_OP, "forward", forward, info)
                out.append(_served_by_a_library(candidate, reached, where))
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
                and not _takes_only_scalars(fn.node)
                and not _returns_a_closure(fn.node)
            ):
                reached = _reached(fn.node, facts)
                if _reaches_a_kernel(fn.node, reached):
                    continue
                candidate = function_candidate(facts, fn.qualname, fn.node, None, Kind.NAMED_OP)
                out.append(_served_by_a_library(candidate, reached, facts))
    return out


def _served_by_a_library(
    candidate: Candidate, reached: list[ast.AST], facts: FileFacts
) -> Candidate:
    """An op whose body calls a kernel library (mini-sglang's `silu_and_mul` is
    `flashinfer.silu_and_mul`) stays in the scan, skipped for its fast path, so the table says
    why it is not a target."""
    call = library_call(reached, facts)
    if call:
        candidate.has_fast_path = True
        candidate.fast_path = call
    return candidate


def compiled_library_wrappers(candidates: list[Candidate]) -> list[Candidate]:
    """Compiled functions that call a kernel library (lingua's `@torch.compile` wrappers of
    mamba_ssm's Triton scans), skipped for that fast path like a named op that does: the
    kernel is the library's, and torch.compile only wraps the call."""
    for candidate in candidates:
        if candidate.func is not None:
            reached = _reached(candidate.func, candidate.facts)
            call = library_call(reached, candidate.facts)
            if call:
                candidate.has_fast_path = True
                candidate.fast_path = f"{candidate.fast_path}; {call}".lstrip("; ")
    return candidates


def _returns_a_closure(node: FunctionNode) -> bool:
    """`def create_score_mod(...): def score_mod(...): ...; return score_mod`: a factory of a
    function (flex attention's score_mod), not an op on tensors."""
    nested = {n.name for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    return any(
        isinstance(n, ast.Return) and isinstance(n.value, ast.Name) and n.value.id in nested
        for n in ast.walk(node)
    )


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


def _launches_a_kernel(node: ast.AST) -> bool:
    """`_kernel[grid](...)`: a Triton launcher, the fast path itself."""
    return any(
        isinstance(call, ast.Call) and isinstance(call.func, ast.Subscript)
        for call in ast.walk(node)
    )


# Decorators that make a function a kernel or a registered op: a Triton or Helion kernel
# (`triton.jit`, `helion.kernel`), `torch.library.custom_op`, `torch.library.triton_op`.
_KERNEL_DECORATORS = ("custom_op", "triton_op", ".jit", ".kernel")


def _reached(node: FunctionNode, facts: FileFacts) -> list[ast.AST]:
    """The function and, through functions of its own file that it calls or passes on
    (`local_map(...)(_fwd)(x)`, lambdas included), every one it reaches."""
    # Functions of the file by name, wherever defined outside classes (also under `if`/`try`:
    # an optional dependency's two versions of a function).
    local: dict[str, list[ast.AST]] = {}
    classes = [n for n in ast.walk(facts.file.tree) if isinstance(n, ast.ClassDef)]
    methods = {id(m) for c in classes for m in c.body}
    for fn in ast.walk(facts.file.tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and id(fn) not in methods:
            local.setdefault(fn.name, []).append(fn)
    # `LayerNormFn.apply(x, ...)`: an autograd Function of the file runs its forward.
    for cls in classes:
        if any((dotted_name(b) or "").endswith("Function") for b in cls.bases):
            forward = [
                m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "forward"
            ]
            local.setdefault(cls.name, []).extend(forward)
    seen: dict[int, ast.AST] = {}
    todo: list[ast.AST] = [node]
    while todo:
        fn = todo.pop()
        if id(fn) in seen:
            continue
        seen[id(fn)] = fn
        for ref in (n for n in ast.walk(fn) if isinstance(n, ast.Name)):
            todo += local.get(ref.id, [])
    return list(seen.values())


def _reaches_a_kernel(node: FunctionNode, reached: list[ast.AST]) -> bool:
    """The function launches a Triton kernel, calls a registered op (`torch.ops.ns.op(...)`),
    or calls, through functions of its own file (lambdas included), one that does or one that
    is a kernel or a custom op (`@torch.library.custom_op`, `@helion.kernel`): torchtitan's
    `_fused_silu_and_mul` wraps its own kernel, and is not an op left to write. `reached`: the
    function and what it reaches (_reached)."""
    for fn in reached:
        if fn is not node and any(
            (dotted_name(d.func if isinstance(d, ast.Call) else d) or "").endswith(
                _KERNEL_DECORATORS
            )
            for d in getattr(fn, "decorator_list", ())
        ):
            return True
        if _launches_a_kernel(fn):
            return True
        for call in (c for c in ast.walk(fn) if isinstance(c, ast.Call)):
            name = dotted_name(call.func) or ""
            if name.startswith("torch.ops.") and not name.startswith("torch.ops.aten."):
                return True
    return False


# Packages whose functions are compiled kernels: an op that calls one is served already.
_KERNEL_PACKAGES = {
    "flashinfer", "sgl_kernel", "flash_attn", "flash_mla", "vllm_flash_attn", "xformers",
    "apex", "liger_kernel", "deep_gemm", "transformer_engine", "bitsandbytes", "causal_conv1d",
    "mamba_ssm", "fla", "aiter", "cupy", "quack", "tilelang", "torch_npu", "fused_layer_norm",
    "lightllm_kernel", "awq_inference_engine", "marlin", "triton",
}  # fmt: skip
# A module path part that says "compiled kernels": `kernels`, `sgl_kernel`, `vllm._C`,
# `vllm._custom_ops`, `rotary_emb_cuda`, `layer_norm_ext`.
_KERNEL_MODULE_PART = re.compile(r"kernel|^triton|^_C$|_C$|^_custom_ops$|_cuda$|_ext$")


def library_call(reached: list[ast.AST], facts: FileFacts) -> str:
    """Where one of the `reached` functions (an op and its file's functions it reaches: see
    _reached) calls a function of a kernel library, imported at the top of the file or inside
    the function (`from flashinfer import silu_and_mul`): "calls flashinfer.silu_and_mul at line
    12"; an op that is one library call is served by that library's kernel already. "" when
    none."""
    module_level = dict(facts.imports)
    for imp in facts.file.tree.body:  # `from .kernels import rms_norm`: relative ones too
        if isinstance(imp, ast.ImportFrom) and imp.level:
            add_import(module_level, imp, relative=True)
    for fn in reached:
        imports = dict(module_level)
        for imp in ast.walk(fn):
            add_import(imports, imp, relative=True)
        for call in (c for c in ast.walk(fn) if isinstance(c, ast.Call)):
            name = dotted_name(call.func)
            if not name or name.split(".")[0] not in imports:
                continue
            origin = resolve_alias(name, imports)
            parts = [p for p in origin.split(".") if p]
            if parts[0] == "torch":
                continue
            if parts[0] in _KERNEL_PACKAGES or any(
                _KERNEL_MODULE_PART.search(p) for p in parts[:-1]
            ):
                return f"calls {origin.lstrip('.')} at line {call.lineno}"
    return ""


def _calls_a_submodule(forward: FunctionNode, methods: set[str]) -> bool:
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
        if len(chain) == 1 and chain[0] not in methods:
            return True  # self.proj(x)
        if len(chain) > 1 and chain[-1] in ("forward", "__call__", "apply"):
            return True  # self.impl.forward(x)
    return False
