"""Reading a problem file's shape without executing it.

A problem file defines `class Model(nn.Module)`, `get_inputs()` and `get_init_inputs()`.
kbot's extensions, both optional module-level values (literals, or expressions over literals
such as `[dict(T=t) for t in (1, 64, 8192)]`, evaluated with a few builtins and the file's
other plain values — never its imports or functions):

    CASES = [dict(T=1), dict(T=16), dict(T=4096)]   # get_inputs(**case) per case
    KBOT = dict(extern_ops=["matmul"], atol=1e-2, rtol=1e-2, allow_low_precision=False,
                mutates_inputs=False)

Files without `CASES` have one case, `{}`, and `get_inputs()` is called with no arguments.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbot.errors import ProblemError

# Extern ops a problem may declare in KBOT["extern_ops"]: PyTorch calls a candidate may keep
# beside its Triton kernels (cuBLAS/cuDNN work that Triton is not expected to replace).
EXTERN_OPS = (
    "matmul",
    "mm",
    "bmm",
    "addmm",
    "linear",
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
)

_OPTION_TYPES: dict[str, type | tuple[type, ...]] = {
    "extern_ops": (list, tuple),
    "atol": (int, float),
    "rtol": (int, float),
    "allow_low_precision": bool,
    "stochastic": bool,
    "mutates_inputs": bool,
    "scalar_inputs": (list, tuple),
    "name": str,
}


@dataclass(frozen=True)
class ProblemOptions:
    """The `KBOT = dict(...)` block of a problem file; tolerances None mean the per-dtype defaults."""

    extern_ops: tuple[str, ...] = ()
    atol: float | None = None
    rtol: float | None = None
    allow_low_precision: bool = False
    stochastic: bool = False
    # The op writes its results into its inputs (an in-place rotary, `out=`): the candidate's
    # inputs after the call are compared with the reference's instead of required unchanged.
    mutates_inputs: bool = False
    name: str | None = None
    # Forward arguments that are Python numbers, not tensors (a rotary table's `seqlen`, an
    # `eps`): the judge lets a candidate do arithmetic on them and checks each case passes
    # numbers there. Names as written; `scalar_positions` are their places in Model.forward.
    scalar_inputs: tuple[str, ...] = ()
    scalar_positions: tuple[int, ...] = ()


@dataclass(frozen=True)
class ProblemSpec:
    """What is known of a problem file before running it."""

    path: Path
    source: str
    source_sha256: str
    cases: tuple[dict[str, Any], ...]
    options: ProblemOptions
    has_cases: bool = False
    model_line: int = 0
    init_params: tuple[str, ...] = field(default_factory=tuple)
    forward_params: tuple[str, ...] = field(default_factory=tuple)

    @property
    def name(self) -> str:
        return self.options.name or self.path.stem


def load_problem(path: str | Path) -> ProblemSpec:
    """Parses and checks a problem file; raises ProblemError with a fix-it message if unusable."""
    path = Path(path)
    if not path.is_file():
        raise ProblemError(f"problem file {path} does not exist")
    try:
        source = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ProblemError(f"{path} is not UTF-8 text; save it as UTF-8") from None
    return parse_problem(source, path)


def parse_problem(source: str, path: Path) -> ProblemSpec:
    try:
        tree = ast.parse(source, filename=str(path))
    except SyntaxError as exc:
        raise ProblemError(f"{path}:{exc.lineno}: syntax error: {exc.msg}") from None
    names = _top_level_names(tree)
    missing = [n for n in ("Model", "get_inputs", "get_init_inputs") if n not in names]
    if missing:
        raise ProblemError(
            f"{path}: not a KernelBench problem: missing {', '.join(missing)} "
            "(define class Model(nn.Module), get_inputs() and get_init_inputs())"
        )
    model = names["Model"]
    if not isinstance(model, ast.ClassDef):
        raise ProblemError(
            f"{path}:{model.lineno}: `Model` must be a class deriving from nn.Module"
        )
    cases_node = names.get("CASES")
    cases = _literal_cases(cases_node, path, names) if cases_node is not None else ({},)
    options = _literal_options(names.get("KBOT"), path, names)
    forward_params = _method_params(model, "forward")
    options = _scalar_positions(options, forward_params, path, names.get("KBOT"))
    return ProblemSpec(
        path=path,
        source=source,
        source_sha256=hashlib.sha256(source.encode()).hexdigest(),
        cases=cases,
        options=options,
        has_cases=cases_node is not None,
        model_line=model.lineno,
        init_params=_method_params(model, "__init__"),
        forward_params=forward_params,
    )


def _scalar_positions(
    options: ProblemOptions, forward_params: tuple[str, ...], path: Path, node: ast.AST | None
) -> ProblemOptions:
    """KBOT's scalar_inputs checked against Model.forward's parameters, with their places."""
    if not options.scalar_inputs:
        return options
    line = getattr(node, "lineno", 0)
    unknown = [n for n in options.scalar_inputs if n not in forward_params]
    if unknown:
        raise ProblemError(
            f"{path}:{line}: KBOT scalar_inputs {unknown} are not parameters of Model.forward "
            f"({', '.join(forward_params) or 'none'}); list forward's number arguments by name"
        )
    positions = tuple(sorted(forward_params.index(n) for n in set(options.scalar_inputs)))
    return dataclasses.replace(options, scalar_positions=positions)


def _top_level_names(tree: ast.Module) -> dict[str, ast.AST]:
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef, ast.AsyncFunctionDef)):
            names[node.name] = node
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value:
            names[node.target.id] = node.value
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                names.setdefault((alias.asname or alias.name).split(".")[0], node)
    return names


def _literal(node: ast.AST, path: Path, what: str, names: dict[str, ast.AST]) -> Any:
    """The value of CASES or KBOT: a literal as it is, else the expression evaluated with a
    few builtins (`range`, `zip`, `dict`, ...) and the file's other plain top-level values
    (`SIZES = (1, 64)`), nothing imported or defined in code, so reading a problem still runs
    none of it (`[dict(T=t) for t in (1, 64, 8192)]`)."""
    try:
        return ast.literal_eval(_dict_calls_to_literals(node))
    except (ValueError, TypeError, SyntaxError, RecursionError):
        pass
    return _evaluate(node, path, what, names, (what,))


# What an expression for CASES or KBOT may call: building and iterating plain values.
_EXPRESSION_BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name)
    for name in (
        "abs", "bool", "dict", "enumerate", "float", "int", "len", "list", "max", "min",
        "range", "reversed", "round", "sorted", "str", "sum", "tuple", "zip",
    )
}  # fmt: skip
_MAX_EXPRESSION_DEPTH = 8


def _evaluate(
    node: ast.AST, path: Path, what: str, names: dict[str, ast.AST], chain: tuple[str, ...]
) -> Any:
    where = f"{path}:{node.lineno}: {what}"
    local = {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)
    }
    local |= {
        a.arg
        for n in ast.walk(node)
        if isinstance(n, ast.Lambda)
        for a in ast.walk(n.args)
        if isinstance(a, ast.arg)
    }
    scope: dict[str, Any] = {}
    for sub in ast.walk(node):
        if isinstance(sub, ast.Attribute) and sub.attr.startswith("_"):
            raise ProblemError(f"{where} must be plain values; it reads `.{sub.attr}`")
        if not isinstance(sub, ast.Name) or sub.id in local or sub.id in scope:
            continue
        if sub.id in _EXPRESSION_BUILTINS:
            continue
        value_node = names.get(sub.id)
        if not isinstance(value_node, ast.expr) or sub.id in chain:
            raise ProblemError(
                f"{where} uses `{sub.id}`, which is not a plain value of this file: CASES and "
                "KBOT may use literals, comprehensions, "
                f"{', '.join(sorted(_EXPRESSION_BUILTINS))} and the file's other top-level "
                "values built the same way, e.g. CASES = [dict(T=t) for t in (1, 64, 8192)]"
            )
        if len(chain) > _MAX_EXPRESSION_DEPTH:
            raise ProblemError(f"{where}: names refer to names too deeply ({' -> '.join(chain)})")
        scope[sub.id] = _literal_or_evaluate(value_node, path, sub.id, names, (*chain, sub.id))
    try:
        code = compile(ast.Expression(_as_expression(node)), str(path), "eval")
        return eval(code, {"__builtins__": _EXPRESSION_BUILTINS, **scope})  # noqa: S307
    except Exception as exc:  # the user's expression failed: say where and how
        raise ProblemError(
            f"{where} could not be evaluated ({type(exc).__name__}: {exc}); write it as a "
            "list of dicts like [dict(T=1), dict(T=4096)]"
        ) from None


def _literal_or_evaluate(
    node: ast.expr, path: Path, name: str, names: dict[str, ast.AST], chain: tuple[str, ...]
) -> Any:
    try:
        return ast.literal_eval(_dict_calls_to_literals(node))
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return _evaluate(node, path, f"`{name}` (used by {chain[0]})", names, chain)


def _as_expression(node: ast.AST) -> ast.expr:
    return ast.fix_missing_locations(ast.parse(ast.unparse(node), mode="eval").body)


def _plain(value: Any) -> bool:
    """Numbers, strings, booleans, None, and lists/tuples/dicts of them: what a case can be
    sent to the evaluator's judge as (JSON) and shown in a report."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _plain(v) for k, v in value.items())
    return False


def _dict_calls_to_literals(node: ast.AST) -> ast.AST:
    """Lets `dict(T=1)` stand for `{"T": 1}` in CASES and KBOT."""

    class _Rewrite(ast.NodeTransformer):
        def visit_Call(self, call: ast.Call) -> ast.AST:
            self.generic_visit(call)
            if isinstance(call.func, ast.Name) and call.func.id == "dict" and not call.args:
                if all(k.arg is not None for k in call.keywords):
                    return ast.copy_location(
                        ast.Dict(
                            keys=[ast.Constant(k.arg) for k in call.keywords],
                            values=[k.value for k in call.keywords],
                        ),
                        call,
                    )
            return call

    return ast.fix_missing_locations(
        _Rewrite().visit(ast.parse(ast.unparse(node), mode="eval")).body
    )


def _literal_cases(
    node: ast.AST, path: Path, names: dict[str, ast.AST]
) -> tuple[dict[str, Any], ...]:
    value = _literal(node, path, "CASES", names)
    if (
        not isinstance(value, (list, tuple))
        or not value
        or not all(isinstance(c, dict) for c in value)
    ):
        raise ProblemError(
            f"{path}:{node.lineno}: CASES must be a non-empty list of dicts like [dict(T=1), dict(T=4096)]"
        )
    for index, case in enumerate(value):
        for key, item in case.items():
            if not isinstance(key, str) or not key.isidentifier():
                raise ProblemError(
                    f"{path}:{node.lineno}: CASES key {key!r} must be a Python identifier"
                )
            if not _plain(item):
                raise ProblemError(
                    f"{path}:{node.lineno}: CASES[{index}][{key!r}] is a {type(item).__name__}; "
                    "case values must be numbers, strings, booleans, None or lists of them"
                )
    return tuple(dict(c) for c in value)


def _literal_options(node: ast.AST | None, path: Path, names: dict[str, ast.AST]) -> ProblemOptions:
    if node is None:
        return ProblemOptions()
    value = _literal(node, path, "KBOT", names)
    if not isinstance(value, dict):
        raise ProblemError(
            f"{path}:{node.lineno}: KBOT must be a dict, e.g. KBOT = dict(extern_ops=['matmul'])"
        )
    for key, val in value.items():
        if key not in _OPTION_TYPES:
            raise ProblemError(
                f"{path}:{node.lineno}: unknown KBOT key {key!r}; valid keys: {', '.join(sorted(_OPTION_TYPES))}"
            )
        if not isinstance(val, _OPTION_TYPES[key]) or (
            isinstance(val, bool) and key in ("atol", "rtol")
        ):
            raise ProblemError(
                f"{path}:{node.lineno}: KBOT[{key!r}] has the wrong type {type(val).__name__}"
            )
    extern = tuple(value.get("extern_ops", ()))
    unknown = [op for op in extern if op not in EXTERN_OPS]
    if unknown:
        raise ProblemError(
            f"{path}:{node.lineno}: KBOT extern_ops {unknown} not allowed; choose from {', '.join(EXTERN_OPS)}"
        )
    return ProblemOptions(
        extern_ops=extern,
        atol=value.get("atol"),
        rtol=value.get("rtol"),
        allow_low_precision=value.get("allow_low_precision", False),
        stochastic=value.get("stochastic", False),
        mutates_inputs=value.get("mutates_inputs", False),
        name=value.get("name"),
        scalar_inputs=_names(value.get("scalar_inputs", ()), path, node.lineno),
    )


def _names(value: Any, path: Path, line: int) -> tuple[str, ...]:
    if not all(isinstance(v, str) for v in value):
        raise ProblemError(f"{path}:{line}: KBOT scalar_inputs must be a list of argument names")
    return tuple(value)


def _method_params(cls: ast.ClassDef, method: str) -> tuple[str, ...]:
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == method:
            args = node.args
            names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
            return tuple(n for n in names if n != "self")
    return ()
