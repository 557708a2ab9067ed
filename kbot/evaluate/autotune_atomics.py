"""The static rule `autotune-atomics`: an autotuned kernel's atomic adds go only to buffers its
`reset_to_zero` (or `restore_value`) names.

When `@triton.autotune` tunes (the first call at each new key: a new size in a user's
process), it runs every config several times on the caller's own buffers, then the chosen one
once more; an `atomic_add` (or `atomic_xor`) into a buffer nobody restores between those runs
leaves the sum of all of them in it, so that first call returns a wrong result, and the calls
after it, cache hits, are right. The judge's correctness trials run each config as a cache hit
(kbot.evaluate.autotune_turns) and the interpreter on a CPU has no timer to tune with, so no
trial sees the tuning call (red-team round fourteen's c14). Triton's own answer is the
autotuner's `reset_to_zero`, which zeroes the named arguments before each run while it tunes.

An atomic's buffer is the kernel argument its pointer is computed from, followed through the
kernel's own assignments and into the @triton.jit helpers it calls by name. Idempotent atomics
(max, min, and, or, exchange) and an autotuner of one config (it does not tune) are left alone.
"""

from __future__ import annotations

import ast

from kbot.evaluate.names import Aliases
from kbot.evaluate.verdict import Reason

RULE = "autotune-atomics"
# Repeating these on one buffer changes what it holds; max, min, and, or and xchg do not.
_ACCUMULATING = frozenset({"triton.language.atomic_add", "triton.language.atomic_xor"})
_HELPER_DEPTH = 4

FunctionDef = ast.FunctionDef | ast.AsyncFunctionDef


def check(tree: ast.AST, aliases: Aliases) -> list[Reason]:
    functions = {node.name: node for node in ast.walk(tree) if isinstance(node, FunctionDef)}
    reasons: list[Reason] = []
    for kernel in functions.values():
        tuner = _autotuner(kernel, aliases)
        if tuner is None or _configs(tuner, tree) == 1:
            continue
        restored = _named(tuner, "reset_to_zero") | _named(tuner, "restore_value")
        for line, buffers in _accumulated(kernel, functions, aliases, _HELPER_DEPTH):
            # An offset added to the pointer is a source too, so one restored source will do;
            # a pointer kbot cannot follow asks for any restored buffer.
            if buffers & restored or (not buffers and restored):
                continue
            names = " or ".join(f"`{b}`" for b in sorted(buffers)) or "its buffer"
            reasons.append(
                Reason(
                    RULE,
                    f"`{kernel.name}` is autotuned and adds atomically into {names}, which its "
                    "`reset_to_zero` does not name: the autotuner runs every config on the same "
                    "buffers when it tunes, so the first call at each new size returns their "
                    "sum; list the buffer in `reset_to_zero` (or `restore_value`)",
                    line,
                )
            )
    return reasons


def _autotuner(kernel: FunctionDef, aliases: Aliases) -> ast.Call | None:
    for decorator in kernel.decorator_list:
        if (
            isinstance(decorator, ast.Call)
            and aliases.qualname(decorator.func) == "triton.autotune"
        ):
            return decorator
    return None


def _configs(tuner: ast.Call, tree: ast.AST) -> int | None:
    """How many configs the autotuner is given, where the source says it plainly."""
    value = _keyword(tuner, "configs")
    if value is None and tuner.args:
        value = tuner.args[0]
    if isinstance(value, ast.Name):  # a module-level list
        for node in getattr(tree, "body", []):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and node.targets[0].id == value.id
            ):
                value = node.value
    return len(value.elts) if isinstance(value, ast.List | ast.Tuple) else None


def _keyword(call: ast.Call, name: str) -> ast.expr | None:
    return next((k.value for k in call.keywords if k.arg == name), None)


def _named(tuner: ast.Call, keyword: str) -> set[str]:
    value = _keyword(tuner, keyword)
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return {value.value}
    if isinstance(value, ast.List | ast.Tuple):
        return {
            e.value for e in value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        }
    return set()


def _accumulated(
    function: FunctionDef, functions: dict[str, FunctionDef], aliases: Aliases, depth: int
) -> list[tuple[int, set[str]]]:
    """(line, the function's arguments the pointer comes from) of each accumulating atomic in
    `function`, and in the helpers it calls by name (their arguments mapped to its own)."""
    params = [
        a.arg for a in function.args.posonlyargs + function.args.args + function.args.kwonlyargs
    ]
    assigned = _assignments(function)
    found: list[tuple[int, set[str]]] = []
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        if aliases.qualname(node.func) in _ACCUMULATING:
            pointer = node.args[0] if node.args else _keyword(node, "pointer")
            sources = _sources(pointer, assigned) if pointer is not None else set()
            found.append((node.lineno, sources & set(params)))
        elif isinstance(node.func, ast.Name) and node.func.id in functions and depth > 0:
            helper = functions[node.func.id]
            if helper is function:
                continue
            helper_params = [a.arg for a in helper.args.posonlyargs + helper.args.args]
            passed = dict(zip(helper_params, node.args))
            passed.update({k.arg: k.value for k in node.keywords if k.arg})
            for _, buffers in _accumulated(helper, functions, aliases, depth - 1):
                mine: set[str] = set()
                for buffer in buffers:
                    if buffer in passed:
                        mine |= _sources(passed[buffer], assigned)
                found.append((node.lineno, mine & set(params)))
    return found


def _assignments(function: FunctionDef) -> dict[str, list[ast.expr]]:
    """Each local name and the values assigned to it (`+=` included)."""
    assigned: dict[str, list[ast.expr]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in ast.walk(target):
                    if isinstance(name, ast.Name):
                        assigned.setdefault(name.id, []).append(node.value)
        elif isinstance(node, ast.AugAssign | ast.AnnAssign) and isinstance(node.target, ast.Name):
            if node.value is not None:
                assigned.setdefault(node.target.id, []).append(node.value)
    return assigned


def _sources(expr: ast.expr, assigned: dict[str, list[ast.expr]]) -> set[str]:
    """The names a pointer `expr` may be based on, through the function's assignments: the terms
    of sums and differences, subscripts, and both branches of `tl.where` and `a if c else b`;
    not what is multiplied or loaded (`out_ptr + row * n_cols + tl.load(idx_ptr)` is based on
    `out_ptr` and, where it is a name, on an offset added to it)."""
    seen: set[str] = set()
    todo = [expr]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Name):
            if node.id not in seen:
                seen.add(node.id)
                todo += assigned.get(node.id, ())
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add | ast.Sub):
            todo += [node.left, node.right]
        elif isinstance(node, ast.Subscript):
            todo.append(node.value)
        elif isinstance(node, ast.IfExp):
            todo += [node.body, node.orelse]
        elif isinstance(node, ast.Call) and _called(node) == "where" and len(node.args) == 3:
            todo += node.args[1:]
    return seen


def _called(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
