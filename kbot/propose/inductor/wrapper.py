"""Rewriting inductor's `call(args)` into the body of a launcher function that takes the
forward's arguments and the model's attributes: symbolic sizes read from the inputs' shapes,
inductor's allocation helpers replaced by torch's, each `kernel.run(...)` turned into a
`kernel[grid](...)` launch with the autotuner's config (kbot.propose.inductor.launches),
extern matmuls into torch calls."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from kbot.propose.inductor.externs import check_calls, convolution_call, dotted, extern_call
from kbot.propose.inductor.kernels import KernelSource
from kbot.propose.inductor.launches import Renames, launch_lines
from kbot.propose.inductor.records import GraphInput, LaunchConfig, Unsupported

ALLOCATORS = ("empty_strided_cuda", "empty_strided_cpu", "empty_strided")
DROPPED_CALLS = ("assert_size_stride", "assert_alignment", "torch.cuda.set_device")


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
        if isinstance(call_node, ast.Call) and dotted(call_node.func).startswith("extern_kernels."):
            body.append(extern_call(call_node, rewriter, extern_ops, body, allocations))
            continue
        if (
            isinstance(statement, ast.Assign)
            and isinstance(statement.value, ast.Call)
            and dotted(statement.value.func) == "extern_kernels.convolution"
        ):
            target = ast.unparse(statement.targets[0])
            body.append(f"{target} = {convolution_call(statement.value, rewriter, extern_ops)}")
            continue
        if isinstance(statement, ast.Assign) and _is_allocation(statement.value):
            allocations[ast.unparse(statement.targets[0])] = len(body)
            body.append(_allocation(statement, rewriter, tensor_device))
            continue
        if isinstance(statement, ast.Assign):
            statement = rewriter.visit(statement)
            check_calls(statement)
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


def _is_dropped(statement: ast.stmt) -> bool:
    if isinstance(statement, (ast.Delete, ast.Pass)):
        return True
    if isinstance(statement, ast.Expr):
        value = statement.value
        if isinstance(value, ast.Constant):
            return True  # a docstring
        if isinstance(value, ast.Call):
            name = dotted(value.func)
            return name in DROPPED_CALLS or name == "args.clear"
    if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call):
        return dotted(statement.value.func) == "get_raw_stream"
    return False


def _is_run(call: ast.Call) -> bool:
    func = call.func
    return (
        isinstance(func, ast.Attribute) and func.attr == "run" and isinstance(func.value, ast.Name)
    )


def _is_allocation(value: ast.expr) -> bool:
    return isinstance(value, ast.Call) and dotted(value.func) in ALLOCATORS


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
    check_calls(value)
    parts = [ast.unparse(e) for e in elements]
    if not returns_tuple and len(parts) == 1:
        return f"return {parts[0]}"
    return f"return {', '.join(parts)}{',' if len(parts) == 1 else ''}"
