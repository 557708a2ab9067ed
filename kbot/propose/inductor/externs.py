"""The calls a translated `call()` body may contain: the extern kernels of torch.compile's
output written as the extern ops a problem declares (`extern_kernels.mm`/`bmm`/`addmm` as
torch.mm/bmm/addmm/matmul or F.linear, `extern_kernels.convolution` as F.convNd or
F.conv_transposeNd), and the check that nothing else remains (kbot.propose.inductor.wrapper)."""

from __future__ import annotations

import ast

from kbot.propose.inductor.records import Unsupported

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


def dotted(node: ast.AST) -> str:
    try:
        return ast.unparse(node)
    except Exception:  # noqa: BLE001 - unparse of a synthetic node
        return ""


def check_calls(node: ast.AST) -> None:
    for sub in ast.walk(node):
        if not isinstance(sub, ast.Call):
            continue
        name = dotted(sub.func)
        if name in ALLOWED_CALLS:
            continue
        if isinstance(sub.func, ast.Attribute) and sub.func.attr in ALLOWED_METHODS:
            continue
        raise Unsupported(f"call() uses `{name}(...)`, which kbot cannot translate")


_EXTERN_TORCH = {
    "mm": {"mm": "torch.mm", "matmul": "torch.matmul"},
    "bmm": {"bmm": "torch.bmm", "matmul": "torch.matmul"},
    "addmm": {"addmm": "torch.addmm"},
}


def extern_call(
    call: ast.Call,
    rewriter: ast.NodeTransformer,
    extern_ops: tuple[str, ...],
    body: list[str],
    allocations: dict[str, int],
) -> str:
    op = dotted(call.func).split(".", 1)[1]
    call = rewriter.visit(call)
    choices = _EXTERN_TORCH.get(op)
    if choices is None:
        raise Unsupported(f"call() uses extern_kernels.{op}, which kbot cannot translate")
    for declared in extern_ops:
        if declared in choices:
            call.func = ast.parse(choices[declared], mode="eval").body
            check_calls(call)
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


def convolution_call(
    call: ast.Call, rewriter: ast.NodeTransformer, extern_ops: tuple[str, ...]
) -> str:
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
        check_calls(args[name])
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
