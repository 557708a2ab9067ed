"""Rewriting inductor's `call(args)` into the body of a launcher function that takes the
forward's arguments and the model's attributes: symbolic sizes read from the inputs' shapes,
inductor's allocation helpers replaced by torch's, each `kernel.run(...)` turned into a
`kernel[grid](...)` launch with the autotuner's config (kbot.propose.inductor.launches),
extern matmuls into torch calls."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from kbot.propose.inductor.kernels import KernelSource
from kbot.propose.inductor.launches import Renames, launch_lines
from kbot.propose.inductor.records import GraphInput, LaunchConfig, Unsupported

ALLOCATORS = ("empty_strided_cuda", "empty_strided_cpu", "empty_strided")
DROPPED_CALLS = ("assert_size_stride", "assert_alignment", "torch.cuda.set_device")
# Calls the rewritten body may still contain; anything else means the wrapper did more than
# kbot understands (an aten fallback, a memory pool, a graph partition ...).
ALLOWED_CALLS = (
    "torch.empty_strided",
    "torch.as_strided",
    "torch.mm",
    "torch.bmm",
    "torch.addmm",
    "torch.matmul",
    "torch.nn.functional.linear",
    "triton.cdiv",
    "max",
    "min",
    "int",
)
ALLOWED_METHODS = ("size", "stride", "t")


@dataclass(frozen=True)
class Launcher:
    params: tuple[str, ...]  # the launcher's parameters: forward args, then attributes
    call_args: tuple[str, ...]  # what ModelNew.forward passes for each
    body: tuple[str, ...]  # statements, unindented
    tunables: tuple[tuple[str, int, str], ...]  # (module constant, value, kernel it sizes)


_PART = re.compile(r"\._(?:parameters|buffers|modules)\['(\w+)'\]|\.(\w+)")


def _attribute_path(source: str) -> str | None:
    """`L['self']._modules['proj']._parameters['weight']` -> "proj.weight"."""
    if not source.startswith("L['self']"):
        return None
    rest = source[len("L['self']") :]
    parts, pos = [], 0
    for match in _PART.finditer(rest):
        if match.start() != pos:
            return None
        parts.append(match.group(1) or match.group(2))
        pos = match.end()
    return ".".join(parts) if parts and pos == len(rest) else None


_LOCAL = re.compile(r"^L\['(\w+)'\]$")
_SIZE = re.compile(r"^(L\[.*?\](?:\._\w+\['\w+'\]|\.\w+)*)\.(size|stride)\(\)\[(\d+)\]$")


def bind_inputs(
    inputs: tuple[GraphInput, ...], forward_params: tuple[str, ...]
) -> tuple[list[str], list[str], dict[str, str], dict[str, str]]:
    """(launcher params, forward's call args, graph-input source -> launcher expression for
    tensors and symbolic sizes, same for scalars passed to dynamo as 0-d tensors)."""
    params, call_args = list(forward_params), list(forward_params)
    exprs: dict[str, str] = {}
    scalars: dict[str, str] = {}

    def base(source: str) -> str:
        local = _LOCAL.match(source)
        if local:
            if local.group(1) not in forward_params:
                raise Unsupported(f"graph input {source} is not an argument of forward")
            return local.group(1)
        path = _attribute_path(source)
        if path is None:
            raise Unsupported(
                f"graph input {source} is neither a forward argument nor an attribute"
            )
        name = path.replace(".", "_")
        if name not in params:
            params.append(name)
            call_args.append(f"self.{path}")
        return name

    for graph_input in inputs:
        source = graph_input.source
        if graph_input.kind == "symint":
            size = _SIZE.match(source)
            if size:
                exprs[source] = f"{base(size.group(1))}.{size.group(2)}({size.group(3)})"
            elif _LOCAL.match(source):
                exprs[source] = base(source)  # an int argument dynamo made symbolic
            else:
                raise Unsupported(f"symbolic size {source} is not read from an input's shape")
        elif graph_input.kind == "scalar":
            scalars[source] = base(source)
        elif graph_input.kind == "tensor":
            exprs[source] = base(source)
        else:
            raise Unsupported(f"graph input {source} has unknown kind {graph_input.kind!r}")
    return params, call_args, exprs, scalars


def rewrite_call(
    call: ast.FunctionDef,
    kernels: dict[str, KernelSource],
    configs: dict[str, LaunchConfig],
    inputs: tuple[GraphInput, ...],
    forward_params: tuple[str, ...],
    extern_ops: tuple[str, ...],
    returns_tuple: bool,
    output_count: int | None,
    renames: Renames,
) -> Launcher:
    params, call_args, exprs, scalars = bind_inputs(inputs, forward_params)
    statements = _flatten(call.body)
    unpack = next((s for s in statements if _is_args_unpack(s)), None)
    if unpack is None:
        raise Unsupported("call() does not unpack its args")
    target = unpack.targets[0]
    arg_names = [e.id for e in target.elts] if isinstance(target, ast.Tuple) else [target.id]
    if len(arg_names) != len(inputs):
        raise Unsupported(
            f"call() takes {len(arg_names)} args but {len(inputs)} graph inputs were recorded"
        )
    values: dict[str, ast.expr] = {}
    scalar_args: dict[str, str] = {}
    tensor_device = None
    for name, graph_input in zip(arg_names, inputs):
        if graph_input.kind == "scalar":
            scalar_args[name] = scalars[graph_input.source]
        else:
            values[name] = ast.parse(exprs[graph_input.source], mode="eval").body
            if graph_input.kind == "tensor" and tensor_device is None:
                tensor_device = f"{exprs[graph_input.source]}.device"
    if tensor_device is None:
        raise Unsupported("no tensor among the graph inputs to take the device from")
    rewriter = _Expressions(values, scalar_args)
    body: list[str] = []
    tunables: list[tuple[str, int, str]] = []
    allocations: dict[str, int] = {}
    for statement in statements:
        if statement is unpack or _is_dropped(statement):
            continue
        if isinstance(statement, ast.Return):
            body.append(_return(statement, rewriter, returns_tuple, output_count))
            continue
        call_node = statement.value if isinstance(statement, ast.Expr) else None
        if isinstance(call_node, ast.Call) and _is_run(call_node):
            kernel = call_node.func.value.id
            lines, consts = launch_lines(call_node, kernel, kernels, configs, rewriter, renames)
            body += lines
            tunables += consts
            continue
        if isinstance(call_node, ast.Call) and _dotted(call_node.func).startswith(
            "extern_kernels."
        ):
            body.append(_extern(call_node, rewriter, extern_ops, body, allocations))
            continue
        if (
            isinstance(statement, ast.Assign)
            and isinstance(statement.value, ast.Call)
            and _dotted(statement.value.func) == "extern_kernels.convolution"
        ):
            target = ast.unparse(statement.targets[0])
            body.append(f"{target} = {_convolution(statement.value, rewriter, extern_ops)}")
            continue
        if isinstance(statement, ast.Assign) and _is_allocation(statement.value):
            allocations[ast.unparse(statement.targets[0])] = len(body)
            body.append(_allocation(statement, rewriter, tensor_device))
            continue
        if isinstance(statement, ast.Assign):
            statement = rewriter.visit(statement)
            _check_calls(statement)
            body.append(ast.unparse(statement))
            continue
        raise Unsupported(f"call() has a statement kbot cannot translate: {ast.unparse(statement)}")
    return Launcher(tuple(params), tuple(call_args), tuple(b for b in body if b), tuple(tunables))


def _flatten(statements: list[ast.stmt]) -> list[ast.stmt]:
    """Unwraps `with torch.cuda._DeviceGuard(0):`: a candidate runs on its inputs' device."""
    out: list[ast.stmt] = []
    for statement in statements:
        if isinstance(statement, ast.With):
            guard = ast.unparse(statement.items[0].context_expr)
            if "DeviceGuard" not in guard and "device(" not in guard:
                raise Unsupported(f"call() enters `{guard}`, which kbot cannot translate")
            out += _flatten(statement.body)
        else:
            out.append(statement)
    return out


def _is_args_unpack(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Assign)
        and isinstance(statement.value, ast.Name)
        and statement.value.id == "args"
    )


def _dotted(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse of a synthetic node
        return ""


def _is_dropped(statement: ast.stmt) -> bool:
    if isinstance(statement, (ast.Delete, ast.Pass)):
        return True
    if isinstance(statement, ast.Expr):
        value = statement.value
        if isinstance(value, ast.Constant):
            return True  # a docstring
        if isinstance(value, ast.Call):
            name = _dotted(value.func)
            return name in DROPPED_CALLS or name == "args.clear"
    if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call):
        return _dotted(statement.value.func) == "get_raw_stream"
    return False


def _is_run(call: ast.Call) -> bool:
    func = call.func
    return (
        isinstance(func, ast.Attribute) and func.attr == "run" and isinstance(func.value, ast.Name)
    )


def _is_allocation(value: ast.expr) -> bool:
    return isinstance(value, ast.Call) and _dotted(value.func) in ALLOCATORS


class _Expressions(ast.NodeTransformer):
    """Graph-input names -> launcher expressions; `reinterpret_tensor` -> `torch.as_strided`;
    `arg.item()` on a scalar input -> the attribute's value."""

    def __init__(self, values: dict[str, ast.expr], scalars: dict[str, str]) -> None:
        self.values = values
        self.scalars = scalars

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.scalars:
            raise Unsupported(f"scalar input {node.id} is used as a tensor in call()")
        if node.id in self.values and isinstance(node.ctx, ast.Load):
            return ast.copy_location(self.values[node.id], node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and func.attr == "item"
            and isinstance(func.value, ast.Name)
            and func.value.id in self.scalars
        ):
            return ast.copy_location(ast.Name(self.scalars[func.value.id], ast.Load()), node)
        self.generic_visit(node)
        if isinstance(node.func, ast.Name) and node.func.id == "reinterpret_tensor":
            node.func = ast.parse("torch.as_strided", mode="eval").body
        return node


def _check_calls(node: ast.AST) -> None:
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Call):
            continue
        name = _dotted(sub.func)
        if name in ALLOWED_CALLS:
            continue
        if isinstance(sub.func, ast.Attribute) and sub.func.attr in ALLOWED_METHODS:
            continue
        raise Unsupported(f"call() uses `{name}(...)`, which kbot cannot translate")


def _allocation(statement: ast.Assign, rewriter: _Expressions, device: str) -> str:
    call = rewriter.visit(statement.value)
    if len(call.args) != 3 or call.keywords:
        raise Unsupported(f"unexpected allocation {ast.unparse(statement)}")
    size, stride, dtype = (ast.unparse(a) for a in call.args)
    target = ast.unparse(statement.targets[0])
    return f"{target} = torch.empty_strided({size}, {stride}, dtype={dtype}, device={device})"


def _return(
    statement: ast.Return, rewriter: _Expressions, returns_tuple: bool, count: int | None
) -> str:
    value = rewriter.visit(statement.value) if statement.value is not None else None
    elements = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
    if elements is None:
        raise Unsupported("call() does not return a tuple of outputs")
    if count is not None and len(elements) != count:
        raise Unsupported(
            f"call() returns {len(elements)} tensors but forward returns {count} "
            "(outputs dynamo handles outside the graph)"
        )
    _check_calls(value)
    parts = [ast.unparse(e) for e in elements]
    if not returns_tuple and len(parts) == 1:
        return f"return {parts[0]}"
    return f"return {', '.join(parts)}{',' if len(parts) == 1 else ''}"


_EXTERN_TORCH = {
    "mm": {"mm": "torch.mm", "matmul": "torch.matmul"},
    "bmm": {"bmm": "torch.bmm", "matmul": "torch.matmul"},
    "addmm": {"addmm": "torch.addmm"},
}


def _extern(
    call: ast.Call,
    rewriter: _Expressions,
    extern_ops: tuple[str, ...],
    body: list[str],
    allocations: dict[str, int],
) -> str:
    op = _dotted(call.func).split(".", 1)[1]
    call = rewriter.visit(call)
    choices = _EXTERN_TORCH.get(op)
    if choices is None:
        raise Unsupported(f"call() uses extern_kernels.{op}, which kbot cannot translate")
    for declared in extern_ops:
        if declared in choices:
            call.func = ast.parse(choices[declared], mode="eval").body
            _check_calls(call)
            return ast.unparse(call)
    if op in ("mm", "addmm") and "linear" in extern_ops:
        # Only `linear` is declared: x @ w.T is F.linear(x, w), bias + x @ w.T (addmm, what an
        # nn.Linear with a bias compiles to) F.linear(x, w, bias); the result replaces the
        # buffer inductor preallocated (contiguous, as F.linear returns it).
        out = next((k.value for k in call.keywords if k.arg == "out"), None)
        operands = 2 if op == "mm" else 3
        scaled = [
            k.arg for k in call.keywords
            if k.arg in ("alpha", "beta") and not _is_one(k.value)
        ]  # fmt: skip
        if out is None or len(call.args) != operands or not isinstance(out, ast.Name) or scaled:
            raise Unsupported(f"extern_kernels.{op} without a plain out= buffer")
        where = allocations.get(out.id)
        if where is None or not _contiguous_allocation(body[where]):
            raise Unsupported(
                f"extern_kernels.{op} writes into {out.id}, not a fresh contiguous buffer"
            )
        body[where] = ""
        *bias, a, b = (ast.unparse(x) for x in call.args)
        return f"{out.id} = torch.nn.functional.linear({', '.join([a, f'{b}.t()', *bias])})"
    wanted = " or ".join(
        repr(c) for c in (*choices, *(("linear",) if op in ("mm", "addmm") else ()))
    )
    raise Unsupported(
        f"call() uses extern_kernels.{op}; the problem must declare {wanted} in extern_ops"
    )


def _is_one(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value == 1


# aten.convolution's parameters, in order: how inductor's extern_kernels.convolution is called
_CONVOLUTION_PARAMS = (
    "input", "weight", "bias", "stride", "padding", "dilation", "transposed", "output_padding",
    "groups",
)  # fmt: skip


def _convolution(call: ast.Call, rewriter: _Expressions, extern_ops: tuple[str, ...]) -> str:
    """`extern_kernels.convolution(...)` (aten.convolution) as the functional call of the
    extern op it is: F.convNd, or F.conv_transposeNd when `transposed`; N from the stride's
    length. The problem must declare that op."""
    call = rewriter.visit(call)
    args = dict(zip(_CONVOLUTION_PARAMS, call.args))
    args.update({k.arg: k.value for k in call.keywords if k.arg is not None})
    missing = [name for name in _CONVOLUTION_PARAMS if name not in args]
    unknown = sorted(set(args) - set(_CONVOLUTION_PARAMS))
    if missing or unknown or len(call.args) > len(_CONVOLUTION_PARAMS):
        raise Unsupported(
            f"extern_kernels.convolution with arguments kbot does not know "
            f"(missing {missing}, unknown {unknown})"
        )
    stride, transposed = args["stride"], args["transposed"]
    if not isinstance(stride, (ast.Tuple, ast.List)) or not 1 <= len(stride.elts) <= 3:
        raise Unsupported("extern_kernels.convolution with a stride that is not a 1-3 tuple")
    if not (isinstance(transposed, ast.Constant) and isinstance(transposed.value, bool)):
        raise Unsupported("extern_kernels.convolution with a `transposed` that is not a literal")
    op = f"conv_transpose{len(stride.elts)}d" if transposed.value else f"conv{len(stride.elts)}d"
    if op not in extern_ops:
        raise Unsupported(
            f"call() uses extern_kernels.convolution ({op}); the problem must declare {op!r} "
            "in extern_ops"
        )
    for name in ("input", "weight", "bias"):
        _check_calls(args[name])
    text = {name: ast.unparse(value) for name, value in args.items()}
    if (
        transposed.value
    ):  # F.conv_transposeNd(input, weight, bias, stride, padding, output_padding, groups, dilation)
        keywords = ("stride", "padding", "output_padding", "groups", "dilation")
    else:  # F.convNd(input, weight, bias, stride, padding, dilation, groups)
        keywords = ("stride", "padding", "dilation", "groups")
    rest = ", ".join(f"{name}={text[name]}" for name in keywords)
    return f"torch.nn.functional.{op}({text['input']}, {text['weight']}, {text['bias']}, {rest})"


def _contiguous_allocation(line: str) -> bool:
    call = ast.parse(line).body[0].value
    size, stride = call.args[0], call.args[1]
    if not isinstance(size, ast.Tuple) or not isinstance(stride, ast.Tuple):
        return False
    expected = "1"
    for dim, step in zip(reversed(size.elts), reversed(stride.elts)):
        if ast.unparse(step).replace(" ", "") != expected.replace(" ", ""):
            return False
        dim_text = ast.unparse(dim)
        expected = dim_text if expected == "1" else f"{dim_text}*{expected}"
    return True
