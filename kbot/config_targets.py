"""The `targets:` entries of `.kbot.yml`: their records and how they are checked. Split from
`kbot.config`, which resolves everything else and calls `parse_targets` for this list."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import yaml

from kbot.config_schema import (
    ADAPTERS,
    DTYPES,
    INPUT_KEYS,
    TARGET_KEYS,
    TARGET_PATTERN,
    TOLERANCE_KEYS,
    SchemaError,
    cases,
)
from kbot.errors import ConfigError


@dataclass(frozen=True)
class InputSpec:
    """One forward argument: a shape of ints or names (case variables, init values)."""

    shape: tuple[int | str, ...]
    dtype: str | None = None  # None: the target's first dtype
    high: int | None = None  # integer inputs draw from [0, high)


@dataclass(frozen=True)
class Tolerance:
    atol: float
    rtol: float


@dataclass(frozen=True)
class TargetConfig:
    target: str  # "file.py::Qualname.method" or "pkg.module:Qualname.method"
    name: str
    init: dict[str, Any]
    inputs: dict[str, InputSpec]
    cases: tuple[dict[str, int], ...]
    dtypes: tuple[str, ...]
    tolerance: Tolerance | None
    adapter: str
    skip: bool
    line: int  # where the entry starts in .kbot.yml, for messages
    # the dtype the model holds the module's float parameters in (vLLM's params_dtype); "" keeps
    # the constructor's
    params_dtype: str = ""

    @property
    def file(self) -> str | None:
        return self.target.split("::")[0] if "::" in self.target else None

    @property
    def qualname(self) -> str:
        return self.target.split("::")[1] if "::" in self.target else self.target.split(":")[1]

    @property
    def module(self) -> str | None:
        return None if "::" in self.target else self.target.split(":")[0]


def node_value(node: yaml.Node) -> Any:
    """The plain Python value of a YAML node (we keep nodes to know line numbers)."""
    return yaml.SafeLoader("").construct_document(node)


def parse_targets(
    node: yaml.Node | None,
    default_cases: tuple[dict[str, int], ...],
    where_of: Callable[[yaml.Node], str],
) -> tuple[TargetConfig, ...]:
    """The `targets:` list of .kbot.yml; `where_of(node)` names a node's "file:line"."""
    if node is None or (isinstance(node, yaml.ScalarNode) and node.value in ("", "null", "~")):
        return ()
    if not isinstance(node, yaml.SequenceNode):
        raise ConfigError(
            f"{where_of(node)}: `targets` must be a list of entries like `- target: pkg/mod.py::RMSNorm.forward`"
        )
    return tuple(_target(item, default_cases, where_of) for item in node.value)


def _target(
    node: yaml.Node, default_cases: tuple[dict[str, int], ...], where_of: Callable[[yaml.Node], str]
) -> TargetConfig:
    where = where_of(node)
    if not isinstance(node, yaml.MappingNode):
        raise ConfigError(f"{where}: each target must be a mapping with at least `target:`")
    entries = {k.value: (k, v) for k, v in node.value}
    for key, (key_node, _) in entries.items():
        if key not in TARGET_KEYS:
            raise ConfigError(
                f"{where_of(key_node)}: unknown key `targets.{key}`; valid keys: {', '.join(TARGET_KEYS)}"
            )
    if "target" not in entries:
        raise ConfigError(
            f"{where}: target entry needs `target: file.py::Class.method` or `pkg.mod:function`"
        )

    def value(key: str, default: Any = None) -> Any:
        return node_value(entries[key][1]) if key in entries else default

    def fail(key: str, message: str) -> ConfigError:
        return ConfigError(f"{where_of(entries[key][0])}: `targets.{key}` {message}")

    target = value("target")
    if not isinstance(target, str) or not TARGET_PATTERN.match(target):
        raise fail(
            "target",
            f"must look like `pkg/layers.py::RMSNorm.forward` or `pkg.layers:rms_norm`, got {target!r}",
        )
    qualname = target.split("::")[-1] if "::" in target else target.split(":")[-1]
    name = value("name", _default_name(qualname))
    if not isinstance(name, str) or not name.isidentifier():
        raise fail("name", f"must be a Python identifier like `rmsnorm`, got {name!r}")
    init = value("init", {})
    if not isinstance(init, dict) or not all(isinstance(k, str) for k in init):
        raise fail(
            "init",
            f"must be a mapping of constructor arguments like {{hidden_size: 4096}}, got {init!r}",
        )
    try:
        target_cases = cases().check(value("cases")) if "cases" in entries else default_cases
    except SchemaError as exc:
        raise fail("cases", str(exc)) from None
    dtypes = value("dtypes", ["bfloat16"])
    if not isinstance(dtypes, list) or not dtypes or any(d not in DTYPES for d in dtypes):
        raise fail("dtypes", f"must be a list from {', '.join(DTYPES)}, got {dtypes!r}")
    params_dtype = value("params_dtype", "")
    if params_dtype != "" and params_dtype not in DTYPES:
        raise fail("params_dtype", f"must be one of {', '.join(DTYPES)}, got {params_dtype!r}")
    adapter = value("adapter", "auto")
    if adapter not in ADAPTERS:
        raise fail("adapter", f"must be one of {', '.join(ADAPTERS)}, got {adapter!r}")
    skip = value("skip", False)
    if not isinstance(skip, bool):
        raise fail("skip", f"must be true or false, got {skip!r}")
    return TargetConfig(
        target=target,
        name=name,
        init=dict(init),
        inputs=_inputs(entries.get("inputs"), fail),
        cases=target_cases,
        dtypes=tuple(dtypes),
        tolerance=_tolerance(value("tolerance"), fail) if "tolerance" in entries else None,
        adapter=adapter,
        skip=skip,
        line=node.start_mark.line + 1,
        params_dtype=params_dtype,
    )


def _inputs(entry: tuple[yaml.Node, yaml.Node] | None, fail: Any) -> dict[str, InputSpec]:
    if entry is None:
        return {}
    raw = node_value(entry[1])
    example = "a mapping like {x: {shape: [T, 4096], dtype: bfloat16}}"
    if not isinstance(raw, dict):
        raise fail("inputs", f"must be {example}, got {raw!r}")
    specs: dict[str, InputSpec] = {}
    for arg, spec in raw.items():
        if not isinstance(arg, str) or not arg.isidentifier() or not isinstance(spec, dict):
            raise fail("inputs", f"must be {example}; {arg!r} is not `name: {{shape: [...]}}`")
        unknown = [k for k in spec if k not in INPUT_KEYS]
        if unknown:
            raise fail(
                "inputs", f"`{arg}` has unknown keys {unknown}; valid: {', '.join(INPUT_KEYS)}"
            )
        shape = spec.get("shape")
        if not isinstance(shape, list) or not all(
            (isinstance(d, int) and not isinstance(d, bool) and d >= 0)
            or (isinstance(d, str) and d.isidentifier())
            for d in shape
        ):
            raise fail(
                "inputs",
                f"`{arg}.shape` must be a list of sizes or names like [T, 4096], got {shape!r}",
            )
        dtype = spec.get("dtype")
        if dtype is not None and dtype not in (*DTYPES, "int32", "int64", "bool"):
            raise fail(
                "inputs",
                f"`{arg}.dtype` must be one of {', '.join((*DTYPES, 'int32', 'int64', 'bool'))}, got {dtype!r}",
            )
        high = spec.get("high")
        if high is not None and (not isinstance(high, int) or isinstance(high, bool) or high < 1):
            raise fail("inputs", f"`{arg}.high` must be a positive integer, got {high!r}")
        specs[arg] = InputSpec(shape=tuple(shape), dtype=dtype, high=high)
    return specs


def _tolerance(raw: Any, fail: Any) -> Tolerance:
    if not isinstance(raw, dict) or set(raw) - set(TOLERANCE_KEYS) or not raw:
        raise fail("tolerance", f"must be a mapping like {{atol: 0.01, rtol: 0.01}}, got {raw!r}")
    values = {}
    for key in TOLERANCE_KEYS:
        val = raw.get(key, 0.0)
        if isinstance(val, bool) or not isinstance(val, (int, float)) or val < 0:
            raise fail("tolerance", f"`{key}` must be a number >= 0, got {val!r}")
        values[key] = float(val)
    return Tolerance(**values)


def _default_name(qualname: str) -> str:
    """`RMSNorm.forward` -> `rmsnorm`; `layers.softcap` -> `softcap`."""
    parts = [
        p for p in qualname.split(".") if p not in ("forward", "forward_native", "forward_cuda")
    ]
    base = parts[-1] if parts else qualname.split(".")[0]
    return "".join(ch if ch.isalnum() else "_" for ch in base).lower()
