"""What a problem's `get_inputs`, `get_init_inputs` and `CASES` will be for a finding.

From `.kbot.yml` when its target says (`init`, `inputs`, `cases`), else from the shapes the
profile saw, else from `--model-config` (kbot.scan.inferred_inputs); never guessed: a finding
with none of these gets a message saying what to add.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
from dataclasses import dataclass
from typing import Any

from kbot.errors import ConfigError
from kbot.scan.findings import ConfigArg, Finding, InputMeta, Param, ScanOptions

TOKEN_DIM = "T"  # the case variable for the leading (token) dimension of profiled inputs
_MAX_PROFILED_CASES = 6


class InputsUnknown(Exception):
    """Not enough is known to build inputs; the message says what to add to .kbot.yml."""


@dataclass(frozen=True)
class InputArg:
    name: str
    shape: tuple[int | str, ...] | None  # None: a scalar passed as is
    dtype: str | None  # "bfloat16", "int64", ...; None for scalars
    high: int | None = None  # integer tensors draw from [0, high)
    value: Any = None  # scalars
    # A scalar forward argument that takes a case variable's value (`seqlen` is the case's T),
    # so it is an input of each case rather than a constructor argument.
    case_variable: str | None = None
    positive: bool = False  # floats drawn from [0.5, 1.5), e.g. a quantization scale

    @property
    def per_case(self) -> bool:
        """Whether get_inputs() makes it: a tensor, or a scalar that follows the case."""
        return self.shape is not None or self.case_variable is not None


@dataclass(frozen=True)
class ConfigValue:
    """A configuration object among the constructor arguments: its repr is the expression the
    problem file's get_init_inputs() builds it with, `_Target.Config(dim=128, theta=10000.0)`."""

    build: str
    fields: tuple[tuple[str, Any], ...]

    def __repr__(self) -> str:
        return f"{self.build}({', '.join(f'{k}={v!r}' for k, v in self.fields)})"


@dataclass(frozen=True)
class InputPlan:
    args: tuple[InputArg, ...]  # forward arguments, in the reference's order
    init_args: tuple[Any, ...]  # positional constructor arguments
    init_names: tuple[str, ...]  # their parameter names, for the problem's INIT comment
    cases: tuple[dict[str, int], ...]
    source: str  # ".kbot.yml" or "profile"
    # Inferred from --model-config only: the plan to try when the reference refuses this one
    # (query/key as [T, heads, head_dim] instead of [T, heads × head_dim]).
    retry: InputPlan | None = None
    # The dtypes the callers hold the module's tensors in, where not the constructor's float32:
    # (name, dtype) of its own parameters and buffers as the profile saw them, and
    # `parameter_dtype` for every float parameter (--model-config's torch_dtype). The problem's
    # Model casts them, so the kernel is judged, and its guard pins, the dtype served.
    tensor_dtypes: tuple[tuple[str, str], ...] = ()
    parameter_dtype: str = ""


def case_variables(plan: InputPlan) -> list[str]:
    """The case variables (`T`) that size an input, in the order the inputs name them."""
    names = []
    for arg in plan.args:
        for dim in (*(arg.shape or ()), arg.case_variable):
            if isinstance(dim, str) and dim not in names:
                names.append(dim)
    return names


def cases_used(plan: InputPlan) -> InputPlan:
    """The plan with its cases less the variables no input is sized by: an op on tensors of
    fixed sizes has one case, not three identical ones that its get_inputs would refuse."""
    variables = set(case_variables(plan))
    cases: list[dict] = []
    for case in plan.cases or ({},):
        kept = {k: v for k, v in case.items() if k in variables}
        if kept not in cases:
            cases.append(kept)
    retry = cases_used(plan.retry) if plan.retry is not None else None
    return dataclasses.replace(plan, cases=tuple(cases), retry=retry)


def plan_inputs(finding: Finding, options: ScanOptions) -> InputPlan:
    hint = finding.hint
    if hint is not None and hint.inputs:
        return cases_used(_from_config(finding, options))
    if finding.profile is not None and finding.profile.inputs_seen:
        return cases_used(_from_profile(finding, options))
    if options.model_config is not None:
        from kbot.scan.inferred_inputs import from_model_config

        return cases_used(from_model_config(finding, options))
    raise InputsUnknown(
        f"cannot infer inputs for {finding.name} ({finding.file}::{finding.qualname}): "
        "add `inputs:` to its .kbot.yml target, or run the scan with --profile or "
        "--model-config"
    )


def _from_config(finding: Finding, options: ScanOptions) -> InputPlan:
    hint = finding.hint
    assert hint is not None
    init = dict(hint.init)
    params = {p.name: p for p in finding.params}
    unknown = [n for n in hint.inputs if n not in params and not _has_varargs(finding)]
    if unknown:
        what = f"{finding.qualname}.{finding.entry}" if finding.entry else finding.qualname
        raise _misnamed(finding, "inputs", unknown, f"arguments of {what}", list(params))
    dtype_default = hint.dtypes[0] if hint.dtypes else "bfloat16"
    args = []
    for name in [p.name for p in finding.params if p.name in hint.inputs or p.name in init] or list(
        hint.inputs
    ):
        if name not in hint.inputs:
            if not finding.entry:  # a function's scalar arguments come from `init:`
                args.append(InputArg(name, None, None, value=init[name]))
            continue
        spec = hint.inputs[name]
        shape = tuple(init.get(d, d) if isinstance(d, str) else d for d in spec["shape"])
        dtype = spec.get("dtype") or dtype_default
        if dtype.startswith(("int", "uint")) and spec.get("high") is None:
            raise InputsUnknown(
                f"{finding.name}: integer input `{name}` needs `high:` (values are drawn from "
                "[0, high)) in its .kbot.yml target"
            )
        args.append(InputArg(name, shape, dtype, spec.get("high")))
    _check_required(finding.params, {a.name for a in args}, finding, "inputs")
    cases = tuple(hint.cases) or tuple(options.cases)
    check_case_variables(args, cases, finding)
    init_args, init_names = init_arguments(finding, init)
    held = hint.params_dtype if finding.entry and hint.params_dtype != "float32" else ""
    return InputPlan(tuple(args), init_args, init_names, cases, ".kbot.yml", parameter_dtype=held)


def _has_varargs(finding: Finding) -> bool:
    return any(p.name.startswith("*") for p in finding.params)


def _check_required(
    params: tuple[Param, ...], given: set[str], finding: Finding, what: str
) -> None:
    missing = [p.name for p in params if p.default is None and p.name not in given]
    if missing:
        raise InputsUnknown(
            f"cannot infer inputs for {finding.name}: argument(s) {', '.join(missing)} of "
            f"{finding.qualname} have no default; add them to `{what}:` of its .kbot.yml target"
        )


def check_case_variables(
    args: list[InputArg], cases: tuple[dict[str, int], ...], finding: Finding
) -> None:
    variables = {d for a in args for d in (a.shape or ()) if isinstance(d, str)}
    variables |= {a.case_variable for a in args if a.case_variable}
    for case in cases:
        missing = variables - set(case)
        if missing:
            raise InputsUnknown(
                f"{finding.name}: shape names {sorted(missing)} are neither `init` values nor keys "
                f"of case {case}; add them to `init:` or `cases:` of its .kbot.yml target"
            )


def init_arguments(
    finding: Finding, init: dict[str, Any]
) -> tuple[tuple[Any, ...], tuple[str, ...]]:
    """Keyword values -> positional arguments in the constructor's order, stopping at the last
    one given; a gap must have a literal default."""
    names = [p.name for p in finding.init_params]
    unknown = [k for k in init if k not in names]
    if unknown and finding.entry:
        raise _misnamed(
            finding, "init keys", unknown, f"constructor arguments of {finding.qualname}", names
        )
    if not finding.entry:
        return (), ()
    given = [i for i, p in enumerate(finding.init_params) if p.name in init]
    last = max(given, default=-1)
    values: list[Any] = []
    configs = {c.param: c for c in finding.init_configs}
    for param in finding.init_params[: last + 1]:
        if param.name in configs and isinstance(init.get(param.name), dict):
            values.append(config_value(finding, configs[param.name], init[param.name]))
        elif param.name in init:
            values.append(init[param.name])
        elif param.default is not None:
            try:
                values.append(ast.literal_eval(param.default))
            except ValueError:
                raise InputsUnknown(
                    f"{finding.name}: constructor argument {param.name} (default {param.default}) "
                    "is not a literal; give it under `init:` of its .kbot.yml target"
                ) from None
        else:
            raise InputsUnknown(_missing_init(finding, param.name))
    for param in finding.init_params[last + 1 :]:
        if param.default is None and not param.name.startswith("*"):
            raise InputsUnknown(_missing_init(finding, param.name))
    return tuple(values), tuple(p.name for p in finding.init_params[: last + 1])


def config_value(finding: Finding, config: ConfigArg, given: dict[str, Any]) -> ConfigValue:
    """`given` (field -> value) as the object the constructor takes; for a dataclass, every
    field without a default must be given and no other name may be."""
    names = [f.name for f in config.fields]
    if config.class_name:
        unknown = [k for k in given if k not in names]
        if unknown:
            what = f"fields of {config.class_name} (the `{config.param}` of {finding.qualname})"
            raise _misnamed(finding, f"init.{config.param} keys", unknown, what, names)
        missing = [f.name for f in config.fields if f.default is None and f.name not in given]
        if missing:
            raise InputsUnknown(
                f"cannot build {finding.qualname} for {finding.name}: field(s) "
                f"{', '.join(f'`{m}`' for m in missing)} of its `{config.param}` are unknown; "
                f"add them under `init: {{{config.param}: {{...}}}}` of its .kbot.yml target"
            )
        given = {k: given[k] for k in names if k in given}
    return ConfigValue(config.build, tuple(given.items()))


def _misnamed(
    finding: Finding, key: str, unknown: list[str], what: str, names: list[str]
) -> Exception:
    """A .kbot.yml target naming what its op does not have: a typo to fix (ConfigError, the
    whole command stops), not a skip. Names kbot inferred itself stay a skip."""
    near = [difflib.get_close_matches(name, names, n=1) for name in unknown]
    hints = [f"`{name}` -> `{match[0]}`" for name, match in zip(unknown, near) if match]
    hint = f"; did you mean {', '.join(hints)}?" if hints else ""
    message = f"{key} {unknown} are not {what}{hint} (they are: {', '.join(names) or 'none'})"
    if finding.hint is None:
        return InputsUnknown(f"{finding.name}: {message}")
    return ConfigError(f"{finding.hint.where}: target {finding.name}: {message}")


def _missing_init(finding: Finding, name: str) -> str:
    return (
        f"cannot build {finding.qualname} for {finding.name}: constructor argument `{name}` is "
        "unknown; add it under `init:` of its .kbot.yml target"
    )


# The float dtypes a problem casts a module's tensors to (kbot.scan.render).
_CAST_DTYPES = ("float16", "bfloat16", "float32", "float64")


def _from_profile(finding: Finding, options: ScanOptions) -> InputPlan:
    stats = finding.profile
    assert stats is not None
    signatures = stats.inputs_seen
    first = signatures[0]
    token_sizes = _token_sizes(signatures)
    args = []
    for meta in first:
        if meta.shape is None:
            args.append(InputArg(meta.name, None, None, value=meta.value))
            continue
        shape: tuple[int | str, ...] = meta.shape
        if token_sizes and shape:
            shape = (TOKEN_DIM, *shape[1:])
        dtype = (meta.dtype or "float32").removeprefix("torch.")
        high = int(meta.value) + 1 if isinstance(meta.value, int) and "int" in dtype else None
        args.append(InputArg(meta.name, shape, dtype, high))
    if token_sizes and len(token_sizes) > 1:
        cases = tuple({TOKEN_DIM: t} for t in sorted(token_sizes)[:_MAX_PROFILED_CASES])
    elif token_sizes:
        # One size seen is a sample, not the workload: check decode and prefill sizes too.
        cases = tuple(options.cases)
    else:
        cases = ({},)
    init = _init_from_state(finding)
    init_args, init_names = init_arguments(finding, init) if finding.entry else ((), ())
    held = tuple(
        (name, dtype)
        for name, dtype in stats.param_dtypes.items()
        if dtype in _CAST_DTYPES and dtype != "float32" and name.isidentifier()
    )
    return InputPlan(
        tuple(args),
        init_args,
        init_names,
        cases,
        "profile",
        tensor_dtypes=held if finding.entry else (),
    )


def _token_sizes(signatures: tuple[tuple[InputMeta, ...], ...]) -> set[int]:
    """Leading sizes, when every tensor argument of every call shares its leading dimension
    (the token dimension of serving ops); empty otherwise."""
    sizes: set[int] = set()
    for signature in signatures:
        leading = {m.shape[0] for m in signature if m.shape}
        if len(leading) != 1:
            return set()
        sizes |= leading
    return sizes


def _init_from_state(finding: Finding) -> dict[str, Any]:
    """Constructor arguments from what the profile saw on the instance: an attribute of the
    same name, or the attribute `__init__` stored it in, or a dimension of the weight it sized."""
    stats = finding.profile
    assert stats is not None
    mapping = init_sources(finding.init_source) if finding.init_source else {}
    init: dict[str, Any] = {}
    for param in finding.init_params:
        name = param.name
        if name in stats.init_state:
            init[name] = stats.init_state[name]
            continue
        source = mapping.get(name)
        if source is None:
            continue
        attribute, dim = source
        if dim is None and attribute in stats.init_state:
            init[name] = stats.init_state[attribute]
        elif dim is not None and attribute in stats.param_shapes:
            shape = stats.param_shapes[attribute]
            if dim < len(shape):
                init[name] = shape[dim]
    return init


def init_sources(init_source: str) -> dict[str, tuple[str, int | None]]:
    """`self.variance_epsilon = eps` -> {eps: (variance_epsilon, None)};
    `self.weight = nn.Parameter(torch.ones(hidden_size))` -> {hidden_size: (weight, 0)}."""
    try:
        tree = ast.parse(init_source)
    except SyntaxError:
        return {}
    out: dict[str, tuple[str, int | None]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1):
            continue
        target = node.targets[0]
        if not (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)):
            continue
        if target.value.id != "self":
            continue
        if isinstance(node.value, ast.Name):
            out.setdefault(node.value.id, (target.attr, None))
            continue
        for call in ast.walk(node.value):
            if isinstance(call, ast.Call):
                for dim, arg in enumerate(call.args):
                    if isinstance(arg, ast.Name):
                        out.setdefault(arg.id, (target.attr, dim))
                if call.args and all(isinstance(a, ast.Name) for a in call.args):
                    break
    return out
