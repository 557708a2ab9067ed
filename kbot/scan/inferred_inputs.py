"""A target's inputs inferred from `--model-config` (kbot.scan.model_config's tables), for a
repository whose `.kbot.yml` and profile say nothing about them: every value keeps where it came
from, and where an argument has several common layouts the plan's `retry` chain holds them all,
to be tried in turn until the reference runs (kbot.scan.extract).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from kbot.scan.call_literals import call_literal
from kbot.scan.findings import ConfigArg, Finding, ScanOptions
from kbot.scan.inputs import (
    TOKEN_DIM,
    InputArg,
    InputPlan,
    InputsUnknown,
    check_case_variables,
    init_arguments,
)

if TYPE_CHECKING:
    from kbot.scan.model_config import Inferred, ModelConfig


def from_model_config(finding: Finding, options: ScanOptions) -> InputPlan:
    """Every argument by its name through kbot.scan.model_config's tables, each value with
    where it came from; a name the tables do not know is a skip naming the key to add. Where
    an attention tensor or a rotary cos/sin table has several common layouts, the plan's
    `retry` chain holds the others, in model_config.LAYOUTS order."""
    from kbot.scan.model_config import is_positions, is_rotary_op, is_rotary_table, layouts_for

    names = [p.name for p in finding.params]
    rotary_op = is_rotary_op(f"{finding.qualname} {finding.entry} {finding.name}")
    # x of a rotary op is per-head, whether it is given a table or indexes one of its own
    per_head_x = any(is_rotary_table(n) for n in names) or rotary_op
    layouts = layouts_for(names, rotary_op)
    batched = (False, True) if any(is_positions(n) for n in names) else (False,)
    plans: list[InputPlan] = []
    for positions_2d in batched:
        for layout in layouts:
            plan = _model_config_plan(finding, options, layout, per_head_x, positions_2d)
            if all(plan.args != seen.args for seen in plans):
                plans.append(plan)
    chained = None
    for plan in reversed(plans):
        chained = replace(plan, retry=chained)
    return chained


def _model_config_plan(
    finding: Finding,
    options: ScanOptions,
    layout: str,
    rotary_tables: bool,
    batched_positions: bool = False,
) -> InputPlan:
    from kbot.scan.model_config import (
        is_length,
        is_quant_scale,
        scalar_value,
        tensor_shape,
    )

    config = options.model_config
    said: list[str] = []
    init: dict[str, Any] = {}
    words = f"{finding.qualname} {finding.entry} {finding.name}"  # the op's own names
    for param in finding.init_params:
        if _axis_like(param.default):
            continue  # RMSNorm(size, dim=-1): `dim` is the axis it reduces over, not a width
        tensor = init_tensor(config, param.name, words)
        if tensor is not None and (param.annotation or "tensor").lower().endswith("tensor"):
            init[param.name] = tensor.value
            said.append(f"{param.name} ({tensor.because})")
            continue
        known = scalar_value(config, param.name.lstrip("*"), words)
        if known is not None:
            init[param.name] = known.value
            said.append(f"{param.name}={known.value!r} ({known.because})")
    for config_arg in finding.init_configs:
        init[config_arg.param] = _config_fields(finding, config_arg, config, words, said)
    args: list[InputArg] = []
    for param in finding.params:
        if param.name.startswith("*"):
            continue
        shape = tensor_shape(config, param.name, words, layout, rotary_tables, batched_positions)
        scalar = scalar_value(config, param.name, words)
        annotation = (param.annotation or "").lower()
        if is_length(param.name) and annotation in ("", "int"):
            args.append(InputArg(param.name, None, None, case_variable=TOKEN_DIM))
            said.append(f"{param.name}={TOKEN_DIM} (a token count: the case's {TOKEN_DIM})")
        elif shape is not None and ("tensor" in annotation or not annotation):
            dims, dtype, high, why = shape
            positive = is_quant_scale(param.name, words)
            args.append(InputArg(param.name, dims, dtype, high, positive=positive))
            sizes = ", ".join(str(d) for d in dims)
            said.append(f"{param.name} [{sizes}] {dtype} ({why})")
        elif scalar is not None and not finding.entry:
            args.append(InputArg(param.name, None, None, value=scalar.value))
            said.append(f"{param.name}={scalar.value!r} ({scalar.because})")
        elif scalar is not None:
            continue  # a method's scalar with a default keeps it
        elif (called := call_literal(finding, param.name)) is not None and not called.varies:
            args.append(InputArg(param.name, None, None, value=called.value))
            said.append(f"{param.name}={called.value!r} ({called.because()})")
        elif param.default is None:
            seen = f" (the repository's calls pass {', '.join(called.seen)})" if called else ""
            raise InputsUnknown(
                f"cannot infer inputs for {finding.name}: --model-config {config.name} does not "
                f"say what argument `{param.name}` of {finding.qualname} is{seen}; add it to "
                "`inputs:` of its .kbot.yml target"
            )
    if not args:
        raise InputsUnknown(
            f"cannot infer inputs for {finding.name}: no tensor argument of {finding.qualname} "
            f"is one --model-config {config.name} can size; add `inputs:` to its .kbot.yml target"
        )
    cases = tuple(options.cases)
    check_case_variables(args, cases, finding)
    init_args, init_names = init_arguments(finding, init)
    dtype = config.values["torch_dtype"] if finding.entry else ""
    if dtype and dtype != "float32":
        said.append(f"float parameters in {dtype} (its torch_dtype)")
    source = f"--model-config {config.name}: " + "; ".join(said)
    return InputPlan(
        tuple(args), init_args, init_names, cases, source,
        parameter_dtype=dtype if dtype != "float32" else "",
    )  # fmt: skip


def _config_fields(
    finding: Finding, config_arg: ConfigArg, config: ModelConfig, words: str, said: list[str]
) -> dict[str, Any]:
    """A configuration object's fields by name (a dataclass's fields sized like constructor
    arguments; every required one must be known), or every value of the model configuration
    for an attribute bag."""
    from kbot.scan.model_config import scalar_value

    if not config_arg.class_name:
        said.append(f"{config_arg.param}: a namespace of --model-config {config.name}'s values")
        return dict(config.raw)
    fields: dict[str, Any] = {}
    for field in config_arg.fields:
        known = scalar_value(config, field.name, words)
        if known is not None and not _axis_like(field.default):
            fields[field.name] = known.value
            said.append(f"{config_arg.param}.{field.name}={known.value!r} ({known.because})")
        elif field.default is None:
            raise InputsUnknown(
                f"cannot build {finding.qualname} for {finding.name}: --model-config "
                f"{config.name} does not say what field `{field.name}` of its `{config_arg.param}` "
                f"is; add it under `init: {{{config_arg.param}: {{{field.name}: ...}}}}` of its "
                ".kbot.yml target"
            )
    return fields


def _axis_like(default: str | None) -> bool:
    """A default of -3 ... 1 names an axis or a flag, never a model width."""
    try:
        value = ast.literal_eval(default) if default is not None else None
    except (ValueError, SyntaxError):
        return False
    return isinstance(value, int) and not isinstance(value, bool) and -3 <= value <= 1


@dataclass(frozen=True)
class InitTensor:
    """A tensor a constructor takes (text-generation-inference builds `FastRMSNorm(weight,
    eps)` from loaded weights), written into the problem's `get_init_inputs` as the expression
    that makes one: a Parameter, a norm's weight near 1 and a bias near 0, random so a kernel
    that ignores it fails the comparison."""

    shape: tuple[int, ...]
    dtype: str
    near: float  # 1.0 for a weight, 0.0 for a bias

    def __repr__(self) -> str:
        shape = ", ".join(str(d) for d in self.shape) + ("," if len(self.shape) == 1 else "")
        value = f"torch.randn(({shape}), dtype=torch.{self.dtype}) * 0.1"
        value += f" + {self.near!r}" if self.near else ""
        # a Parameter, as the repository's loader makes it: `self.weight = weight` registers it
        return f"torch.nn.Parameter({value}, requires_grad=False)"


_NORM_WORDS = re.compile(r"norm", re.IGNORECASE)


def init_tensor(config: ModelConfig, name: str, op_words: str) -> Inferred | None:
    """A norm's `weight` or `bias` constructor argument: a [hidden_size] tensor of the model's
    dtype; None for any other name or op."""
    from kbot.scan.model_config import Inferred

    if name not in ("weight", "bias") or not _NORM_WORDS.search(op_words):
        return None
    v = config.values
    tensor = InitTensor(
        (int(v["hidden_size"]),), str(v["torch_dtype"]), 1.0 if name == "weight" else 0.0
    )
    return Inferred(tensor, f"a norm's {name}: [hidden_size] {tensor.dtype}")
