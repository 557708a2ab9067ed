"""`class ModelNew`: the same constructor as `Model`, and a forward that is one launcher call.

The constructor is Model's own `__init__` copied from the problem (so parameters, buffers and
plain attributes get exactly the same names, and the evaluator can load Model's state dict),
provided it uses nothing beyond its arguments, `torch` and `nn`.
"""

from __future__ import annotations

import ast
import builtins
import textwrap

from kbot.problem import ProblemSpec
from kbot.propose.codegen.trace import Unsupported, built_on_cpu
from kbot.quiet_stdout import quiet_stdout

_ALLOWED = {"torch", "nn", "self", "super"} | set(dir(builtins))


def model_init_source(spec: ProblemSpec, state: tuple[str, ...] = ()) -> str:
    """Model.__init__ as source text indented for a class body, or Unsupported saying why not.

    Model's own `__init__` is copied when it stands alone; otherwise (Model subclasses the
    user's op, as `kbot scan` problems do, or its constructor uses the user's helpers) the
    constructor is rebuilt from the state of a Model built on `meta` from get_init_inputs()."""
    try:
        return _copied_init_source(spec)
    except Unsupported as copied:
        try:
            return instance_init_source(spec, state)
        except Unsupported as rebuilt:
            raise Unsupported(f"{copied}; {rebuilt}") from None


def _copied_init_source(spec: ProblemSpec) -> str:
    tree = ast.parse(spec.source)
    model = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Model"), None)
    if model is None:
        raise Unsupported("no class Model")
    bases = [ast.unparse(b) for b in model.bases]
    if bases not in (["nn.Module"], ["torch.nn.Module"]):
        raise Unsupported(f"Model derives from {', '.join(bases)}, not nn.Module")
    init = next(
        (n for n in model.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None
    )
    if init is None:
        return "    def __init__(self):\n        super().__init__()\n"
    init = _plain_super(init)
    args = init.args
    params = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    params |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    assigned = {
        n.id for n in ast.walk(init) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    free = sorted(
        {n.id for n in ast.walk(init) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
        - params
        - assigned
        - _ALLOWED
    )
    constants = _module_constants(tree)
    init = _inline_constants(init, {n: constants[n] for n in free if n in constants})
    free = [n for n in free if n not in constants]
    if free:
        raise Unsupported(
            f"Model.__init__ uses {', '.join(free)} (a candidate may import only torch and triton)"
        )
    init = _strip_docstring(init)
    return textwrap.indent(ast.unparse(init), "    ") + "\n"


_SCALARS = (bool, int, float, str, type(None))


def instance_init_source(spec: ProblemSpec, state: tuple[str, ...] = ()) -> str:
    """A constructor that recreates Model's parameters, buffers (same names, shapes, dtypes,
    persistence) and plain scalar attributes as built from get_init_inputs(). The evaluator
    copies Model's tensor values in, so only the layout is written here. `state`: the
    attributes the launcher is passed (`cache` of `self.cache`); a Model built on meta without
    one of them (its constructor skipped the work there) is built on the CPU instead."""

    import torch

    from kbot.problem.runtime import import_file, init_inputs

    try:
        with quiet_stdout():
            module = import_file(spec.path, prefix="kbot_codegen_init")
            init = init_inputs(module)
            with torch.device("meta"):
                model = module.Model(*init)
            if any(_missing(model, path) for path in state):
                rebuilt = built_on_cpu(module)
                if rebuilt is None:
                    raise Unsupported("building Model on the CPU failed too")
                model = rebuilt
    except Exception as exc:
        raise Unsupported(f"building Model on the meta device failed: {exc!r}") from None
    signature = (
        ", ".join(["self", *spec.init_params]) if spec.init_params else "self, *args, **kwargs"
    )
    lines = [
        f"    def __init__({signature}):",
        "        super().__init__()",
        f"        # Model's state as get_init_inputs() = {_one_line(init)} builds it; the "
        "evaluator loads",
        "        # Model's values into these tensors, so only names, shapes and dtypes matter here.",
    ]
    for prefix, sub in model.named_modules():
        owner = f"self.{prefix}" if prefix else "self"
        if prefix:
            lines.append(f"        {owner} = nn.Module()")
        for name, value in sub.__dict__.items():
            if name.startswith("_") or name == "training":
                continue
            if isinstance(value, _SCALARS) or (
                isinstance(value, tuple) and all(isinstance(v, _SCALARS) for v in value)
            ):
                lines.append(f"        {owner}.{name} = {value!r}")
        for name, param in sub.named_parameters(recurse=False):
            lines.append(
                f"        {owner}.{name} = nn.Parameter(torch.empty({tuple(param.shape)!r}, "
                f"dtype={param.dtype}), requires_grad={param.requires_grad})"
            )
        for name, buffer in sub.named_buffers(recurse=False):
            if buffer is None:
                continue
            persistent = name not in sub._non_persistent_buffers_set
            lines.append(
                f"        {owner}.register_buffer({name!r}, torch.empty({tuple(buffer.shape)!r}, "
                f"dtype={buffer.dtype}), persistent={persistent})"
            )
    return "\n".join(lines) + "\n"


def _plain_super(func: ast.FunctionDef) -> ast.FunctionDef:
    """KernelBench's `super(Model, self).__init__()` -> `super().__init__()` (no `Model` needed)."""

    class _Super(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            self.generic_visit(node)
            if isinstance(node.func, ast.Name) and node.func.id == "super" and node.args:
                if isinstance(node.args[0], ast.Name) and node.args[0].id == "Model":
                    node.args = []
            return node

    return _Super().visit(func)


def _module_constants(tree: ast.Module) -> dict[str, object]:
    """Module-level `NAME = <literal>` assignments of the problem file."""
    out: dict[str, object] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name):
                try:
                    out[target.id] = ast.literal_eval(node.value)
                except (ValueError, TypeError, SyntaxError):
                    continue
    return out


def _inline_constants(func: ast.FunctionDef, values: dict[str, object]) -> ast.FunctionDef:
    """Replaces module constants (e.g. a default `max_positions=MAX_POSITIONS`) by their value,
    so the candidate needs nothing from the problem file."""

    class _Inline(ast.NodeTransformer):
        def visit_Name(self, node: ast.Name) -> ast.AST:
            if isinstance(node.ctx, ast.Load) and node.id in values:
                return ast.copy_location(ast.Constant(values[node.id]), node)
            return node

    return _Inline().visit(func)


def _strip_docstring(func: ast.FunctionDef) -> ast.FunctionDef:
    body = func.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str) and len(body) > 1:
            func.body = body[1:]
    return func


def _missing(model: object, path: str) -> bool:
    for part in path.split("."):
        if not hasattr(model, part):
            return True
        model = getattr(model, part)
    return False


def model_new_source(spec: ProblemSpec, op: str, call_args: list[str]) -> str:
    forward_params = ", ".join(["self", *spec.forward_params])
    state = tuple(a[len("self.") :] for a in call_args if a.startswith("self."))
    lines = [
        "class ModelNew(nn.Module):",
        f'    """Model with forward computed by `{op}` (Triton); same constructor and state."""',
        "",
        model_init_source(spec, state).rstrip("\n"),
        "",
        f"    def forward({forward_params}):",
        f"        return {op}({', '.join(call_args)})",
    ]
    return "\n".join(lines) + "\n"


def _one_line(values: object) -> str:
    """`values` for a one-line comment: a tensor as its shape and dtype (its repr spans lines
    and would end the comment: text-generation-inference's norms take their weight tensor)."""
    import torch

    class Note:
        def __init__(self, tensor: torch.Tensor) -> None:
            self.text = f"<tensor {list(tensor.shape)} {str(tensor.dtype).removeprefix('torch.')}>"

        def __repr__(self) -> str:
            return self.text

    def noted(value: object) -> object:
        if isinstance(value, torch.Tensor):
            return Note(value)
        if isinstance(value, (list, tuple)):
            return type(value)(noted(v) for v in value)
        return value

    return " ".join(repr(noted(values)).split())
