"""A capture of torch.compile's output -> one standalone candidate file (text and AST work, and
codegen's trace of the problem on `meta`; runs on any machine). Layout follows
docs/architecture.md: header, imports, tunables, inlined triton_helpers, kernels
`_<op>_kernel`, launcher `<op>(...)` (where the op's first dim is rows, `_<op>_rows(...)` and
`<op>` flattening extra leading dims into it, as codegen's launchers do), `class ModelNew`."""

from __future__ import annotations

import ast

from kbot.problem import ProblemSpec
from kbot.propose.inductor.helpers import inline_helpers
from kbot.propose.inductor.kernels import parse_output_code
from kbot.propose.inductor.launches import Renames
from kbot.propose.inductor.records import Capture, Unsupported
from kbot.propose.inductor.wrapper import rewrite_call


def _op_name(spec: ProblemSpec) -> str:
    from kbot.propose.codegen.candidate import op_name

    return op_name(spec)


def _model_new(spec: ProblemSpec, op: str, call_args: list[str]) -> str:
    from kbot.propose.codegen.model_new import model_new_source
    from kbot.propose.codegen.trace import Unsupported as CodegenUnsupported

    try:
        return model_new_source(spec, op, call_args)
    except CodegenUnsupported as exc:
        raise Unsupported(f"cannot rebuild Model's constructor: {exc}") from None


# codegen's leading-rows plan per problem file (path, sha256): the proposers extract up to
# five captures of one problem, and the plan depends on the problem only.
_ROWS_PLANS: dict[tuple[str, str], object] = {}


def _leading_rows(spec: ProblemSpec, params: list[str], outputs: int):
    """codegen's plan for extra leading dims as more rows (kbot.propose.codegen.leading_rows):
    inductor's kernels index the rank they were compiled at (a [2, 8, hidden] input read as
    2 rows of [16, hidden]'s), so the launcher flattens [batch, seqlen, hidden] to [T, hidden]
    where the op treats its first dim as rows. None where codegen's trace finds no such plan,
    or names arguments the launcher does not take; else the plan (a LeadingRows)."""
    key = (str(spec.path), spec.source_sha256)
    if key not in _ROWS_PLANS:
        _ROWS_PLANS[key] = _traced_rows_plan(spec)
    plan = _ROWS_PLANS[key]
    if plan is None or len(plan.outputs) != outputs:
        return None
    if not all(name in params for name, _ in plan.inputs):
        return None
    return plan


def _traced_rows_plan(spec: ProblemSpec):
    from kbot.propose.codegen.leading_rows import leading_rows
    from kbot.propose.codegen.trace import trace_problem

    try:
        traced = trace_problem(spec)
    except Exception:  # noqa: BLE001 - codegen's trace failing must not cost the extraction
        return None
    return leading_rows(traced, list(traced.outputs), spec.options.mutates_inputs)


def _launch_order(call: ast.FunctionDef, kernels: set[str]) -> list[str]:
    order: list[str] = []
    for node in ast.walk(call):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "run"
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id in kernels
            and node.func.value.id not in order
        ):
            order.append(node.func.value.id)
    return order


def extract(capture: Capture, spec: ProblemSpec) -> str:
    """The candidate source; raises Unsupported saying what could not be extracted."""
    graphs = capture.graphs
    if len(graphs) != 1:
        raise Unsupported(f"torch.compile split the model into {len(graphs)} graphs (graph breaks)")
    if not capture.graph_inputs:
        raise Unsupported("the capture does not say what call()'s arguments are")
    output = parse_output_code(graphs[0])
    launched = _launch_order(output.call, set(output.kernels))
    if not launched:
        raise Unsupported("the compiled graph launches no Triton kernel")
    op = _op_name(spec)
    if len(launched) == 1:
        names = {launched[0]: f"_{op}_kernel"}
    else:
        names = {k: f"_{op}_{i}_kernel" for i, k in enumerate(launched)}
    launcher = rewrite_call(
        output.call,
        output.kernels,
        capture.kernels,
        capture.graph_inputs,
        spec.forward_params,
        tuple(spec.options.extern_ops),
        capture.returns_tuple,
        capture.output_count,
        Renames(names, single=len(launched) == 1),
    )
    helpers: set[str] = set()
    kernel_texts = []
    for inductor_name in launched:
        kernel = output.kernels[inductor_name]
        helpers |= kernel.helpers
        function = kernel.function
        function.name = names[inductor_name]
        ast.fix_missing_locations(function)
        kernel_texts.append(
            f"# inductor's {inductor_name} ({kernel.heuristic})\n{ast.unparse(function)}\n"
        )
    helper_texts = inline_helpers(helpers)
    uses_libdevice = any("libdevice." in t for t in kernel_texts + helper_texts)
    parts = [_header(capture, spec, uses_libdevice)]
    if launcher.tunables:
        lines = ["# Launch constants inductor's autotuner chose (the search mutates them)."]
        lines += [f"{name} = {value}  # {kernel}" for name, value, kernel in launcher.tunables]
        parts.append("\n".join(lines) + "\n")
    parts += helper_texts + kernel_texts
    body = "\n".join(f"    {line}" for line in launcher.body)
    rows = _leading_rows(spec, list(launcher.params), capture.output_count)
    inner = f"_{op}_rows" if rows is not None else op
    parts.append(
        f"def {inner}({', '.join(launcher.params)}):\n"
        f'    """Launches torch.compile\'s kernel(s) for `{spec.name}`; returns new outputs."""\n'
        f"{body}\n"
    )
    if rows is not None:
        from kbot.propose.codegen.leading_rows import wrapper_lines

        wrapper = wrapper_lines(rows, op, inner, list(launcher.params), capture.returns_tuple)
        parts.append("\n".join(wrapper) + "\n")
    parts.append(_model_new(spec, op, list(launcher.call_args)))
    source = "\n\n".join(p.rstrip("\n") + "\n" for p in parts)
    try:
        ast.parse(source)
    except SyntaxError as exc:  # a bug here, not in the capture; never hand out broken Python
        raise Unsupported(f"the extracted candidate does not parse ({exc.msg})") from None
    return source


def _header(capture: Capture, spec: ProblemSpec, uses_libdevice: bool) -> str:
    case = ", ".join(f"{k}={v!r}" for k, v in capture.case.items()) or "its only case"
    lines = [
        f'"""Triton kernel(s) for `{spec.name}`, made by kbot\'s inductor proposer from',
        f"torch.compile's output for {spec.path.name}.",
        f"Compile mode: {_mode(capture)}.",
        "",
        f"torch {capture.torch_version}, Triton {capture.triton_version}, on {capture.gpu};",
        f"launch configs are those inductor's autotuner chose at {case}.",
        "Not yet evaluated: run `kbot eval` on it.",
        '"""',
        "",
        "import torch",
        "import torch.nn as nn",
        "import triton",
        "import triton.language as tl",
    ]
    if uses_libdevice:
        lines.append("from triton.language.extra import libdevice")
    return "\n".join(lines) + "\n"


def _mode(capture: Capture) -> str:
    if capture.dynamic:
        return "dynamic shapes (the input dims that vary across CASES marked dynamic)"
    return "static shapes (every size baked in)"
