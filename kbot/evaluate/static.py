"""Static checks on a candidate's source (AST, never regex, never executed). Each rule has a
stable name that appears in verdicts and in docs/evaluator.md.

`check_source(source, options)` returns the reasons a candidate is rejected; empty = passes.
"""

from __future__ import annotations

import ast
import re

from kbot.evaluate import (
    address_rules,
    autotune_atomics,
    forward_path,
    kernel_escapes,
    module_rules,
    name_rules,
)
from kbot.evaluate.forbidden import forbidden
from kbot.evaluate.names import (
    ALLOWED_IMPORTS,
    LOW_PRECISION_DTYPES,
    LOW_PRECISION_METHODS,
    Aliases,
    parent_map,
)
from kbot.evaluate.verdict import Reason
from kbot.problem.spec import ProblemOptions

# Every rule a static check can report, with what it protects against (docs/evaluator.md).
RULES: dict[str, str] = {
    "syntax": "the candidate must parse as Python",
    "model-new": "`class ModelNew(nn.Module)` with a `forward` method, overriding nothing else "
    "of nn.Module",
    "no-triton-kernel": "at least one @triton.jit kernel must be launched from forward",
    "default-dtype": "forward allocates with an explicit dtype= (or *_like): torch's default "
    "dtype is the caller's, which serving engines change",
    "try-except-fallback": "no try/except, __exit__ or unchecked `with`: a failing kernel must "
    "fail, not fall back",
    "threads": "no threads, processes or asyncio",
    "streams": "no CUDA streams, events, graphs or synchronisation",
    "module-patching": "no assignment to attributes of modules, no global torch state changes",
    "io-access": "no file, environment, network or subprocess access",
    "dynamic-import": "no dynamic import, exec/eval or native code",
    "introspection": "no frames, gc, globals() or interpreter internals",
    "private-api": "no private torch/triton internals (torch._C, ...)",
    "imports": "imports limited to torch, triton and a few pure stdlib helpers",
    "torch-compile": "no torch.compile, TorchScript, export or FX",
    "torch-compute-in-forward": "PyTorch in forward's call graph limited to allocation, views "
    "and declared extern ops",
    "precision-downgrade": "an fp32 problem is not computed in fp16/bf16/fp8 or TF32",
    "import-time-code": "module level holds only imports, definitions and constants",
    "rebinding": "kernels, classes, functions and methods keep the code the checks judged",
    "decorators": "no decorators beyond triton's on kernels and a few plain ones",
    "hooks": "no forward/backward/module/parameter hooks or launch hooks",
    "special-methods": "no special methods Python runs implicitly (__call__, __getattr__, "
    "__del__, descriptors, metaclasses)",
    "triton-api": "triton used through its kernel API only (jit, autotune, heuristics, Config, "
    "cdiv, next_power_of_2, triton.language)",
    "kernel-code": "kernel bodies use triton.language and other @triton.jit functions only",
    "address-use": "a tensor's address is read only in alignment tests and comparisons of two "
    "addresses; a kernel never casts a pointer to an integer",
    "autotune-atomics": "an autotuned kernel adds atomically only into buffers its reset_to_zero "
    "(or restore_value) names: tuning runs every config on the caller's buffers",
}

_LOW_PRECISION_PROBLEM = re.compile(r"\b(float16|half|bfloat16|bf16|fp16|float8\w*)\b")


def problem_dtype_hint(problem_source: str) -> str | None:
    """ "float32" when a problem never mentions a low-precision dtype (KernelBench's fp32
    problems), else None: the problem computes in several dtypes and may be matched in them."""
    return None if _LOW_PRECISION_PROBLEM.search(problem_source) else "float32"


def check_source(
    source: str, options: ProblemOptions, problem_dtype_hint: str | None = None
) -> tuple[Reason, ...]:
    """All static rules on one candidate source; an empty tuple means it passes."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return (Reason("syntax", f"syntax error: {exc.msg}", exc.lineno),)
    aliases = Aliases.of(tree)
    reasons: list[Reason] = []
    reasons += _check_imports(tree)
    reasons += name_rules.check(tree, aliases)
    reasons += _check_structure(tree, aliases)
    reasons += module_rules.check(tree, aliases)
    reasons += forward_path.check(tree, aliases, options)
    parents = parent_map(tree)  # the two rules judge a name by its use
    reasons += address_rules.check(tree, parents)
    reasons += kernel_escapes.check(tree, parents)
    reasons += autotune_atomics.check(tree, aliases)
    if problem_dtype_hint == "float32" and not options.allow_low_precision:
        reasons += _check_precision(tree, aliases)
    return _unique(reasons)


def _unique(reasons: list[Reason]) -> tuple[Reason, ...]:
    seen: set[tuple[str, int | None, str]] = set()
    out = []
    for reason in sorted(reasons, key=lambda r: (r.line or 0, r.rule)):
        key = (reason.rule, reason.line, reason.message)
        if key not in seen:
            seen.add(key)
            out.append(reason)
    return tuple(out)


def _check_imports(tree: ast.AST) -> list[Reason]:
    reasons = []
    for node in ast.walk(tree):
        modules: list[str] = []
        if isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                reasons.append(Reason("imports", "relative imports are not allowed", node.lineno))
                continue
            modules = [f"{node.module}.{a.name}" for a in node.names]
        for module in modules:
            hit = forbidden(module)
            if hit is not None:
                reasons.append(Reason(hit[0], f"imports `{module}`: {hit[1]}", node.lineno))
            elif module.split(".")[0] not in ALLOWED_IMPORTS:
                reasons.append(
                    Reason(
                        "imports",
                        f"imports `{module}`; allowed: {', '.join(ALLOWED_IMPORTS)}",
                        node.lineno,
                    )
                )
            elif module.split(".")[0] == "triton" and not name_rules.triton_import_ok(module):
                reasons.append(Reason("triton-api", name_rules.triton_message(module), node.lineno))
    return reasons


def _check_structure(tree: ast.AST, aliases: Aliases) -> list[Reason]:
    """try/except anywhere; assignments to attributes of modules; operator-override hooks."""
    reasons = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            if getattr(node, "handlers", None):
                reasons.append(
                    Reason(
                        "try-except-fallback",
                        "try/except may hide a failing kernel behind a fallback; remove it",
                        node.lineno,
                    )
                )
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        for target in targets:
            for sub in ast.walk(target):
                if isinstance(sub, (ast.Attribute, ast.Subscript)) and isinstance(
                    sub.ctx, (ast.Store, ast.Del)
                ):
                    root = _root(sub)
                    dotted = aliases.qualname(sub.value) if not isinstance(root, ast.Call) else None
                    if dotted is not None:
                        reasons.append(
                            Reason(
                                "module-patching",
                                f"assigns to `{ast.unparse(sub)}`, an attribute of module "
                                f"`{dotted.split('.')[0]}`",
                                node.lineno,
                            )
                        )
        if isinstance(node, ast.FunctionDef) and node.name in (
            "__torch_function__",
            "__torch_dispatch__",
        ):
            reasons.append(
                Reason(
                    "module-patching",
                    f"defines `{node.name}`, which intercepts torch operators",
                    node.lineno,
                )
            )
        if isinstance(node, ast.ClassDef):
            for base in node.bases:
                if aliases.qualname(base) in ("torch.Tensor", "torch.nn.Parameter"):
                    reasons.append(
                        Reason(
                            "module-patching",
                            "subclasses torch.Tensor: outputs must be plain tensors",
                            node.lineno,
                        )
                    )
    return reasons


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    return node


def _check_precision(tree: ast.AST, aliases: Aliases) -> list[Reason]:
    reasons = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            dotted = aliases.qualname(node)
            if dotted is not None and dotted.split(".")[-1] in LOW_PRECISION_DTYPES:
                if dotted.startswith(("torch.", "triton.")):
                    reasons.append(
                        Reason(
                            "precision-downgrade",
                            f"`{dotted}` in an fp32 problem; compute in fp32 or set "
                            "KBOT allow_low_precision=True in the problem",
                            node.lineno,
                        )
                    )
        if isinstance(node, ast.Call):
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr in LOW_PRECISION_METHODS
                and not node.args
            ):
                reasons.append(
                    Reason(
                        "precision-downgrade",
                        f"`.{node.func.attr}()` in an fp32 problem",
                        node.lineno,
                    )
                )
            if aliases.qualname(node.func) == "triton.language.dot" and not any(
                k.arg in ("input_precision", "allow_tf32") for k in node.keywords
            ):
                reasons.append(
                    Reason(
                        "precision-downgrade",
                        "`tl.dot` of fp32 operands runs in TF32 on a GPU unless told otherwise; "
                        "pass input_precision='ieee' in an fp32 problem",
                        node.lineno,
                    )
                )
            for keyword in node.keywords:
                value = keyword.value
                if (
                    keyword.arg == "input_precision"
                    and isinstance(value, ast.Constant)
                    and value.value in ("tf32", "tf32x3")
                ) or (
                    keyword.arg == "allow_tf32"
                    and isinstance(value, ast.Constant)
                    and value.value is True
                ):
                    reasons.append(
                        Reason(
                            "precision-downgrade",
                            "TF32 dot products in an fp32 problem; use input_precision='ieee'",
                            node.lineno,
                        )
                    )
        if isinstance(node, ast.Constant) and node.value in ("float16", "bfloat16", "fp16", "bf16"):
            reasons.append(
                Reason(
                    "precision-downgrade",
                    f"the dtype name {node.value!r} in an fp32 problem",
                    node.lineno,
                )
            )
    return reasons
