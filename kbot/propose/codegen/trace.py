"""Tracing a problem's `Model.forward` into an ATen graph with symbolic sizes.

The reference is the user's own code, so it runs here (not in the evaluator's worker), but on
the `meta` device: nothing is computed or allocated, and any case size can be traced for free.
Sizes are symbolic (`tracing_mode="symbolic"`) so the emitted launcher reads them from the
tensors at call time instead of baking in the traced case.
"""

from __future__ import annotations

import contextlib
import io
import math
import threading
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.fx
from torch import nn

from kbot.problem import ProblemSpec
from kbot.problem.runtime import case_inputs, import_file, init_inputs
from kbot.propose.codegen.attr_constants import (
    AttributeConstants,
    arg_name,
    attribute_constants,
    float_attributes,
    moved_values,
    same_structure,
    with_attributes,
)
from kbot.propose.codegen.complex_ops import ComplexUnsupported, decomplexify
from kbot.propose.codegen.few_sums import sum_of_few
from kbot.propose.codegen.inplace import rewrite_in_place
from kbot.propose.codegen.scalar_constants import ScalarConstants, scalar_constants
from kbot.quiet_stdout import quiet_stdout

aten = torch.ops.aten


class Unsupported(Exception):
    """The codegen has no schedule for this problem; the message says why (one line)."""


@dataclass(frozen=True)
class GraphInput:
    """A placeholder of the traced graph: a forward argument or a parameter/buffer of Model."""

    node_name: str  # the FX placeholder's name
    arg_name: str  # the launcher's argument name (forward arg, or `proj_weight` for proj.weight)
    source: str  # what ModelNew.forward passes: `x` or `self.proj.weight`
    is_tensor: bool
    value: Any = None  # the traced value of a non-tensor forward argument
    # An integer forward argument declared a number (KBOT scalar_inputs), traced as the size of
    # a stand-in tensor's one dim: the launcher reads that size from the argument itself.
    size_of: bool = False


@dataclass(frozen=True)
class TracedProblem:
    graph: torch.fx.Graph
    inputs: tuple[GraphInput, ...]
    outputs: tuple[torch.fx.Node, ...]
    returns_tuple: bool
    # plain float attributes of Model and its submodules by path (eps, act.negative_slope ...)
    float_attrs: dict[str, float]
    case: dict[str, Any]  # the case that was traced
    path: str  # the problem file, to find reference lines in stack traces
    # graph constants that follow a float attribute (kbot.propose.codegen.attr_constants),
    # e.g. -7.0 in `clamp(min=-self.limit)` -> `(-limit)`
    attr_constants: AttributeConstants = field(default_factory=AttributeConstants)


def _decompositions() -> dict:
    from torch._decomp import core_aten_decompositions, get_decompositions

    table = dict(core_aten_decompositions())
    # Reductions and norms are lowered to primitives the classifier knows (amax, sum, mean ...).
    table.update(
        get_decompositions(
            [
                aten._softmax,
                aten._log_softmax,
                aten.native_layer_norm,
                aten.gelu,
                aten.relu,
                aten.hardtanh,
                aten.leaky_relu,
                aten.elu,
                aten.addmm,
                aten.linalg_vector_norm,
                aten.native_group_norm,  # GroupNorm/InstanceNorm: mean/sum over several dims
                aten._native_batch_norm_legit,
                aten._native_batch_norm_legit_no_training,  # BatchNorm in eval: per-channel affine
                aten.reciprocal,
                aten.rsub,
            ]
        )
    )
    # torch's own var_mean decomposition goes through prims and bakes the row length in as a
    # float; ours keeps it symbolic and uses only mean/sum, which the classifier schedules.
    table[aten.var_mean.correction] = _var_mean
    table[aten.var.correction] = _var
    # max/min over a dim return (values, indices); the values are amax/amin, and unused
    # indices are dead code the classifier never sees.
    table[aten.max.dim] = lambda x, dim, keepdim=False: (
        aten.amax.default(x, [dim], keepdim),
        aten.argmax.default(x, dim, keepdim),
    )
    # torch.max(x) / torch.min(x): the max/min over every dim (a 0-dim result)
    table[aten.max.default] = lambda x: aten.amax.default(x, list(range(x.dim())), False)
    table[aten.min.default] = lambda x: aten.amin.default(x, list(range(x.dim())), False)
    table[aten.min.dim] = lambda x, dim, keepdim=False: (
        aten.amin.default(x, [dim], keepdim),
        aten.argmin.default(x, dim, keepdim),
    )
    table[aten.sum.dim_IntList] = sum_of_few
    # any over a dim (SDPA's check for a row masked to -inf everywhere): the max of the
    # elements' truth values as 0/1, an fp32 reduction the classifier schedules
    table[aten.any.dim] = lambda x, dim, keepdim=False: aten.gt.Scalar(
        aten.amax.default(
            aten._to_copy.default(aten.ne.Scalar(x, 0), dtype=torch.float32), [dim], keepdim
        ),
        0,
    )
    return table


def _var_mean(x, dim=None, *, correction=None, keepdim=False):  # type: ignore[no-untyped-def]
    dims = list(range(x.dim())) if dim is None else [d % x.dim() for d in dim]
    count = 1
    for d in dims:
        count = count * x.shape[d]
    correction = 1 if correction is None else correction
    mean = aten.mean.dim(x, dims, True)
    diff = aten.sub.Tensor(x, mean)
    squares = aten.sum.dim_IntList(aten.mul.Tensor(diff, diff), dims, keepdim)
    var = aten.div.Tensor(squares, count - correction)
    return var, (mean if keepdim else aten.squeeze.dims(mean, dims))


def _var(x, dim=None, *, correction=None, keepdim=False):  # type: ignore[no-untyped-def]
    return _var_mean(x, dim, correction=correction, keepdim=keepdim)[0]


def _build(module: Any, spec: ProblemSpec) -> tuple[dict[str, Any], Any, list[Any]]:
    """Model and one case's inputs: on `meta` for the largest case (free, and no size is 1 by
    accident: sizes 0/1 get specialised); if the file insists on real tensors (`.cuda()`,
    `.item()` in get_inputs), on the default device for the smallest case instead."""
    quiet = io.StringIO()
    try:
        with quiet_stdout(quiet), torch.device("meta"):
            case = dict(spec.cases[-1])
            # get_inputs may name its device (`device="cuda"`), which beats the default device:
            # bring such tensors to meta too, so Model and inputs trace together.
            args = [
                a.to("meta") if isinstance(a, torch.Tensor) else a
                for a in case_inputs(module, case)
            ]
            return case, module.Model(*init_inputs(module)), args
    except Exception as meta_exc:
        built = None
        try:
            with quiet_stdout(quiet):
                for case in spec.cases:  # the smallest case without a size-1 dim
                    built = (dict(case), module.Model(*init_inputs(module)))
                    args = case_inputs(module, case)
                    built += (args,)
                    if all(1 not in a.shape for a in args if isinstance(a, torch.Tensor)):
                        break
        except Exception:
            built = None
        if built is None or len(built) != 3:
            raise Unsupported(f"building Model and inputs failed (on meta: {meta_exc!r})") from None
        return built


def _state(model: nn.Module) -> dict[str, torch.Tensor]:
    """Parameters then buffers by name: what the trace passes as the graph's first inputs."""
    return {**dict(model.named_parameters()), **dict(model.named_buffers())}


def _on_meta(model: nn.Module) -> bool:
    tensors = [*model.parameters(), *model.buffers()]
    return any(t.is_meta for t in tensors) or not tensors


def built_on_cpu(module: Any) -> nn.Module | None:
    """Model built on the CPU and moved to meta, for a constructor that skips its work on meta
    (torchtune's rotaries: `if freqs.is_meta: return`); None when that fails too."""
    try:
        with quiet_stdout():
            model = module.Model(*init_inputs(module))
        return model.to("meta").eval() if isinstance(model, nn.Module) else None
    except Exception:  # the meta trace's failure is the one reported
        return None


@contextlib.contextmanager
def _autocast_on_meta() -> Any:
    """The trace runs on `meta`, so a forward that switches autocast off for its own tensors'
    device (`torch.autocast(device_type=x.device.type, enabled=False)`, common in rotary
    embeddings) names "meta", which autocast refuses. Switched off it changes nothing on a
    graph of one device, so it is traced as a no-op; switched on, the graph's dtypes would be the
    GPU's autocast policy, which a trace on `meta` cannot see."""
    original = torch.autocast

    class autocast(original):  # type: ignore[misc, valid-type]
        def __init__(self, device_type: str, *args: Any, **kwargs: Any) -> None:
            if device_type == "meta":
                enabled = kwargs.get("enabled", args[1] if len(args) > 1 else True)
                if enabled:
                    raise Unsupported("forward switches autocast on (dtypes set by its policy)")
                device_type = "cpu"
            super().__init__(device_type, *args, **kwargs)

    torch.autocast = torch.amp.autocast = autocast  # type: ignore[misc]
    try:
        yield
    finally:
        torch.autocast = torch.amp.autocast = original  # type: ignore[misc]


# make_fx and the settings around it (FX's "is tracing" flag, duck sizing, autocast on meta)
# are process-wide: two traces in threads at once (the inductor proposers' extractions, side
# by side) restored each other's flags, and FX's stayed set, so a later call of any
# torch.compile'd function raised "Detected that you are using FX to symbolically trace a
# dynamo-optimized function". One trace at a time.
_TRACING = threading.RLock()


def trace_problem(spec: ProblemSpec) -> TracedProblem:
    """Imports the problem, builds Model and one case's inputs on `meta`, and traces forward
    (one trace at a time in the process: `_TRACING`)."""
    with _TRACING:
        return _trace_problem(spec)


def _trace_problem(spec: ProblemSpec) -> TracedProblem:
    from torch.fx.experimental import _config as fx_config
    from torch.fx.experimental.proxy_tensor import make_fx

    quiet = io.StringIO()
    try:
        with quiet_stdout(quiet):
            module = import_file(spec.path, prefix="kbot_codegen_trace")
    except Exception as exc:
        raise Unsupported(f"importing the problem failed: {exc!r}") from None
    case, model, args = _build(module, spec)
    if not isinstance(model, nn.Module):
        raise Unsupported("Model is not an nn.Module")
    model.eval()
    state = _state(model)
    state_names = list(state)
    forward_names = list(spec.forward_params)[: len(args)]
    if len(forward_names) < len(args):
        forward_names += [f"arg{i}" for i in range(len(forward_names), len(args))]
    # A declared integer argument (a token count) is traced as the size of a stand-in, so the
    # sizes it sets stay symbolic; other numbers are traced as the values they have.
    counts = {
        i for i in spec.options.scalar_positions
        if i < len(args) and isinstance(args[i], int) and not isinstance(args[i], bool)
    }  # fmt: skip
    stand_ins = {i: torch.empty(args[i], device="meta") for i in counts}
    tensor_args = [
        stand_ins[i] if i in counts else a
        for i, a in enumerate(args)
        if i in counts or isinstance(a, torch.Tensor)
    ]

    def forward_of(instance: nn.Module, numbers: dict[int, float]) -> Any:
        def forward(*tensors: torch.Tensor) -> Any:
            params = dict(zip(state_names, tensors[: len(state_names)]))
            rest = iter(tensors[len(state_names) :])
            call_args = [
                next(rest).shape[0] if i in counts else next(rest) if isinstance(a, torch.Tensor)
                else numbers.get(i, a)
                for i, a in enumerate(args)
            ]  # fmt: skip
            return torch.func.functional_call(instance, params, tuple(call_args))

        return forward

    def trace(instance: nn.Module, numbers: dict[int, float] | None = None) -> torch.fx.GraphModule:
        old_duck = fx_config.use_duck_shape
        # Without duck sizing, T=4096 and hidden=4096 get distinct symbols, so a launcher never
        # reads the hidden size from the token dimension.
        fx_config.use_duck_shape = False
        try:
            with quiet_stdout(quiet), _autocast_on_meta(), ScalarConstants():
                gm = make_fx(
                    forward_of(instance, numbers or {}),
                    decomposition_table=_decompositions(),
                    tracing_mode="symbolic",
                    record_stack_traces=True,
                )(*state.values(), *tensor_args)
            # in both traces, so a number made from an attribute is seen to move with it
            if scalar_constants(gm):
                gm.recompile()
            return gm
        finally:
            fx_config.use_duck_shape = old_duck

    floats = float_attributes(model)
    # A float passed to forward (`scale`) is moved like an attribute: the constants that follow
    # it are read from the launcher's argument of that name, not built in as traced.
    taken = {arg_name(path) for path in floats}
    float_args = {
        name: index
        for index, (name, value) in enumerate(zip(forward_names, args))
        if type(value) is float and math.isfinite(value) and name not in taken
    }
    try:
        gm = trace(model)
    except Exception as exc:
        if "DataDependent" in type(exc).__name__:
            raise Unsupported(
                f"forward branches or sizes on tensor values ({_first_line(exc)})"
            ) from None
        failed = Unsupported(f"tracing forward failed ({type(exc).__name__}: {_first_line(exc)})")
        # A constructor that skips its work on meta (torchtune's rotaries: `if freqs.is_meta:
        # return`, then forward raises "cache is not built"): Model built on the CPU, its
        # state then moved to meta, traces as it runs.
        rebuilt = built_on_cpu(module) if _on_meta(model) else None
        if rebuilt is None:
            raise failed from None
        model = rebuilt
        state = _state(model)
        state_names = list(state)
        try:
            gm = trace(model)
        except Exception:
            raise failed from None
    # `x = x.float(); x.mul_(...)`: writes into the op's own temporaries are out-of-place ops.
    if rewrite_in_place(gm.graph):
        gm.recompile()
    # Complex values (a rotary `freqs_cis`) as (real, imaginary) pairs.
    try:
        complex_inputs = decomplexify(gm.graph)
    except ComplexUnsupported as exc:
        raise Unsupported(str(exc)) from None
    if complex_inputs:
        gm.recompile()

    def moved_graph(attrs: dict[str, float]) -> torch.fx.Graph | None:
        """The forward traced with `attrs` moved (attributes, and the float arguments named in
        float_args); None where that fails or changes the graph."""
        values = moved_values(attrs)
        numbers = {float_args[k]: v for k, v in values.items() if k in float_args}
        on_model = {k: v for k, v in values.items() if k not in float_args}
        try:
            graph = trace(with_attributes(model, on_model), numbers).graph
        except Exception:  # noqa: BLE001 - an attribute the forward cannot take moved
            return None
        rewrite_in_place(graph)
        try:
            decomplexify(graph)
        except ComplexUnsupported:
            return None
        return graph if same_structure(gm.graph, graph) else None

    # The same forward with every float attribute moved: which constants follow which. An
    # attribute that changes the graph when moved (a norm's p = 2.0) stays specialised, as the
    # traced instance has it.
    floats_in = {**floats, **{name: float(args[i]) for name, i in float_args.items()}}
    movable, moved = dict(floats_in), moved_graph(floats_in) if floats_in else None
    if floats_in and moved is None:
        movable = {k: v for k, v in floats_in.items() if moved_graph({k: v}) is not None}
        moved = moved_graph(movable) if movable else None
    try:
        constants = attribute_constants(gm.graph, moved, movable) if moved else AttributeConstants()
    except ValueError as exc:
        # A float argument the forward uses in a way codegen cannot write (a branch on it
        # that keeps the graph's shape) stays as traced; the publish guard pins it there.
        on_model = {k: v for k, v in movable.items() if k not in float_args}
        if len(on_model) == len(movable):
            raise Unsupported(str(exc)) from None
        moved = moved_graph(on_model) if on_model else None
        try:
            constants = (
                attribute_constants(gm.graph, moved, on_model) if moved else AttributeConstants()
            )
        except ValueError as again:
            raise Unsupported(str(again)) from None

    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    inputs: list[GraphInput] = []

    def passed(source: str, node: torch.fx.Node) -> str:  # a complex input as its pairs
        return f"torch.view_as_real({source})" if node.name in complex_inputs else source

    for name, node in zip(state_names, placeholders):
        inputs.append(
            GraphInput(node.name, name.replace(".", "_"), passed(f"self.{name}", node), True)
        )
    rest = iter(placeholders[len(state_names) :])
    forward_inputs = []
    for index, (name, value) in enumerate(zip(forward_names, args)):
        if index in counts:
            forward_inputs.append(GraphInput(next(rest).name, name, name, False, value, True))
        elif isinstance(value, torch.Tensor):
            node = next(rest)
            forward_inputs.append(GraphInput(node.name, name, passed(name, node), True))
        else:
            forward_inputs.append(GraphInput("", name, name, False, value))
    output_node = next(n for n in gm.graph.nodes if n.op == "output")
    result = output_node.args[0]
    returns_tuple = isinstance(result, (list, tuple))
    outputs = tuple(result) if returns_tuple else (result,)
    if not all(isinstance(o, torch.fx.Node) for o in outputs):
        raise Unsupported("forward returns something other than tensors")
    # Forward args first: the launcher's signature is (forward args, params/buffers, attrs).
    return TracedProblem(
        graph=gm.graph,
        inputs=tuple(forward_inputs + inputs),
        outputs=outputs,
        returns_tuple=returns_tuple,
        float_attrs=floats,
        case=case,
        path=str(spec.path.resolve()),
        attr_constants=constants,
    )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""
