"""One frozen configuration tree, resolved in one place.

Precedence: command line > `KBOT_*` environment > `.kbot.yml` > defaults. The resolved
`Config` remembers where every value came from (`Config.source_of("search.generations")`),
which `kbot config --show` prints. Keys, defaults and checks live in `kbot.config_schema`.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from kbot.config_schema import (
    ADAPTERS,
    DTYPES,
    INPUT_KEYS,
    SECTIONS,
    TARGET_KEYS,
    TARGET_PATTERN,
    TOLERANCE_KEYS,
    TOP_LEVEL,
    SchemaError,
    cases,
)
from kbot.errors import ConfigError

CONFIG_NAME = ".kbot.yml"
DEFAULT = "default"
CLI = "command line"
ENV_PREFIX = "KBOT_"


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

    @property
    def file(self) -> str | None:
        return self.target.split("::")[0] if "::" in self.target else None

    @property
    def qualname(self) -> str:
        return self.target.split("::")[1] if "::" in self.target else self.target.split(":")[1]

    @property
    def module(self) -> str | None:
        return None if "::" in self.target else self.target.split(":")[0]


@dataclass(frozen=True)
class ScanConfig:
    cases: tuple[dict[str, int], ...]
    compile_decorators: tuple[str, ...]
    exclude: tuple[str, ...]
    include_existing: bool
    include_stochastic: bool


@dataclass(frozen=True)
class SearchConfig:
    proposers: tuple[str, ...]
    generations: int
    time_budget_s: float
    max_candidates: int
    islands: int
    patience: int
    seeds: int


@dataclass(frozen=True)
class LLMConfig:
    base_url: str | None
    model: str | None
    api_key_env: str
    max_tokens_per_run: int
    max_usd_per_run: float


@dataclass(frozen=True)
class PublishConfig:
    repo: str | None
    base_branch: str
    branch_prefix: str
    labels: tuple[str, ...]
    draft: bool
    max_open_prs: int
    max_prs_per_run: int
    signoff: bool
    github_base_url: str
    token_env: str
    fork: str | None


@dataclass(frozen=True)
class Config:
    version: int
    work_dir: Path  # absolute: relative values are taken from `root`
    device: str
    gpus: tuple[int, ...]
    targets: tuple[TargetConfig, ...]
    scan: ScanConfig
    search: SearchConfig
    llm: LLMConfig
    publish: PublishConfig
    root: Path  # the folder holding .kbot.yml, else the target path
    config_file: Path | None
    sources: Mapping[str, str] = field(default_factory=dict)

    def source_of(self, key: str) -> str:
        """Where a dotted key's value came from: "default", "command line", "KBOT_X", or "file:line"."""
        return self.sources[key]

    def values(self) -> dict[str, Any]:
        """Every setting as dotted key -> value (targets summarised), in schema order."""
        flat: dict[str, Any] = {key: getattr(self, key) for key in TOP_LEVEL}
        for section, fields in SECTIONS.items():
            for key in fields:
                flat[f"{section}.{key}"] = getattr(getattr(self, section), key)
        flat["targets"] = tuple(t.target for t in self.targets)
        return flat


def find_config_file(start: Path) -> Path | None:
    """Walks up from `start` (a file or folder) to the filesystem root looking for .kbot.yml."""
    here = start.resolve()
    if here.is_file():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def load_config(
    path: Path | str = ".",
    cli: Mapping[str, Any] | None = None,
    config_file: Path | str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Config:
    """Resolves the configuration for a target path. Raises ConfigError naming file, line and key."""
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"path {path} does not exist")
    if config_file is not None:
        config_file = Path(config_file)
        if not config_file.is_file():
            raise ConfigError(f"config file {config_file} does not exist (given with --config)")
    else:
        config_file = find_config_file(path)
    root = (
        config_file.parent if config_file else (path if path.is_dir() else path.parent)
    ).resolve()
    document = _read_yaml(config_file) if config_file else None
    resolver = _Resolver(config_file, document)
    resolver.apply_environment(os.environ if environ is None else environ)
    resolver.apply_cli(cli or {})
    return resolver.build(root)


def _read_yaml(config_file: Path) -> yaml.MappingNode | None:
    try:
        text = config_file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{config_file} is not UTF-8 text; save it as UTF-8") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f":{mark.line + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{config_file}{where}: not valid YAML: {problem}") from None
    if node is None:
        return None
    if not isinstance(node, yaml.MappingNode):
        raise ConfigError(
            f"{config_file}:{node.start_mark.line + 1}: the file must be a mapping like `version: 1`"
        )
    return node


def _value(node: yaml.Node) -> Any:
    """The plain Python value of a YAML node (we keep nodes to know line numbers)."""
    return yaml.SafeLoader("").construct_document(node)


class _Resolver:
    """Collects raw values layer by layer, then checks and freezes them."""

    def __init__(self, config_file: Path | None, document: yaml.MappingNode | None) -> None:
        self.file = config_file
        self.raw: dict[str, Any] = {}
        self.sources: dict[str, str] = {}
        self.target_nodes: yaml.Node | None = None
        if document is not None:
            self._read_document(document)

    def where(self, node: yaml.Node) -> str:
        return f"{self.file}:{node.start_mark.line + 1}"

    def _read_document(self, document: yaml.MappingNode) -> None:
        keys = {k.value for k, _ in document.value if isinstance(k, yaml.ScalarNode)}
        if "version" not in keys:
            raise ConfigError(f"{self.file}:1: missing `version: 1` at the top of the file")
        valid = (*TOP_LEVEL, *SECTIONS, "targets")
        for key_node, value_node in document.value:
            key = key_node.value
            if key == "targets":
                self.target_nodes = value_node
            elif key in SECTIONS:
                self._read_section(key, value_node)
            elif key in TOP_LEVEL:
                self._set(key, _value(value_node), self.where(key_node))
            else:
                raise ConfigError(
                    f"{self.where(key_node)}: unknown key `{key}`; valid keys: {', '.join(valid)}"
                )

    def _read_section(self, section: str, node: yaml.Node) -> None:
        if isinstance(node, yaml.ScalarNode) and node.value in ("", "null", "~"):
            return
        if not isinstance(node, yaml.MappingNode):
            raise ConfigError(f"{self.where(node)}: `{section}` must be a mapping of settings")
        fields = SECTIONS[section]
        for key_node, value_node in node.value:
            key = key_node.value
            if key not in fields:
                raise ConfigError(
                    f"{self.where(key_node)}: unknown key `{section}.{key}`; valid keys: {', '.join(fields)}"
                )
            self._set(f"{section}.{key}", _value(value_node), self.where(key_node))

    def _set(self, dotted: str, value: Any, source: str) -> None:
        field_ = _field(dotted)
        try:
            self.raw[dotted] = field_.check(value)
        except SchemaError as exc:
            raise ConfigError(f"{source}: `{dotted}` {exc}") from None
        self.sources[dotted] = source

    def apply_environment(self, environ: Mapping[str, str]) -> None:
        names = _env_names()
        for name, raw in sorted(environ.items()):
            if not name.startswith(ENV_PREFIX):
                continue
            dotted = names.get(name)
            if dotted is None:
                # Only names shaped like settings are errors; other KBOT_* variables (test switches) pass.
                head = name[len(ENV_PREFIX) :].lower()
                near = difflib.get_close_matches(name, names, n=1, cutoff=0.8)
                if near or any(head.startswith(f"{section}_") for section in SECTIONS):
                    hint = f"did you mean {near[0]}? " if near else ""
                    raise ConfigError(
                        f"environment variable {name} is not a kbot setting; {hint}valid: {', '.join(sorted(names))}"
                    )
                continue
            parse = _field(dotted).parse_env
            if parse is None:
                raise ConfigError(
                    f"environment variable {name}: `{dotted}` can only be set in .kbot.yml"
                )
            try:
                self._set(dotted, parse(raw), name)
            except SchemaError as exc:
                raise ConfigError(f"environment variable {name}: `{dotted}` {exc}") from None

    def apply_cli(self, cli: Mapping[str, Any]) -> None:
        for dotted, value in cli.items():
            if value is None:
                continue
            if isinstance(value, tuple):
                value = list(value)
            self._set(dotted, value, CLI)

    def build(self, root: Path) -> Config:
        def get(dotted: str) -> Any:
            if dotted not in self.raw:
                self.sources[dotted] = DEFAULT
                return _field(dotted).default
            return self.raw[dotted]

        sections = {
            section: {key: get(f"{section}.{key}") for key in fields}
            for section, fields in SECTIONS.items()
        }
        scan_cases = sections["scan"]["cases"]
        targets = self._targets(scan_cases)
        self.sources["targets"] = (
            f"{self.file}:{self.target_nodes.start_mark.line + 1}" if targets else DEFAULT
        )
        work_dir = Path(get("work_dir")).expanduser()
        return Config(
            version=get("version"),
            work_dir=work_dir if work_dir.is_absolute() else root / work_dir,
            device=get("device"),
            gpus=get("gpus"),
            targets=targets,
            scan=ScanConfig(**sections["scan"]),
            search=SearchConfig(**sections["search"]),
            llm=LLMConfig(**sections["llm"]),
            publish=PublishConfig(**sections["publish"]),
            root=root,
            config_file=self.file.resolve() if self.file else None,
            sources=dict(self.sources),
        )

    def _targets(self, default_cases: tuple[dict[str, int], ...]) -> tuple[TargetConfig, ...]:
        node = self.target_nodes
        if node is None or (isinstance(node, yaml.ScalarNode) and node.value in ("", "null", "~")):
            return ()
        if not isinstance(node, yaml.SequenceNode):
            raise ConfigError(
                f"{self.where(node)}: `targets` must be a list of entries like `- target: pkg/mod.py::RMSNorm.forward`"
            )
        return tuple(self._target(item, default_cases) for item in node.value)

    def _target(self, node: yaml.Node, default_cases: tuple[dict[str, int], ...]) -> TargetConfig:
        where = self.where(node)
        if not isinstance(node, yaml.MappingNode):
            raise ConfigError(f"{where}: each target must be a mapping with at least `target:`")
        entries = {k.value: (k, v) for k, v in node.value}
        for key, (key_node, _) in entries.items():
            if key not in TARGET_KEYS:
                raise ConfigError(
                    f"{self.where(key_node)}: unknown key `targets.{key}`; valid keys: {', '.join(TARGET_KEYS)}"
                )
        if "target" not in entries:
            raise ConfigError(
                f"{where}: target entry needs `target: file.py::Class.method` or `pkg.mod:function`"
            )

        def value(key: str, default: Any = None) -> Any:
            return _value(entries[key][1]) if key in entries else default

        def fail(key: str, message: str) -> ConfigError:
            return ConfigError(f"{self.where(entries[key][0])}: `targets.{key}` {message}")

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
            inputs=self._inputs(entries.get("inputs"), fail),
            cases=target_cases,
            dtypes=tuple(dtypes),
            tolerance=self._tolerance(value("tolerance"), fail) if "tolerance" in entries else None,
            adapter=adapter,
            skip=skip,
            line=node.start_mark.line + 1,
        )

    def _inputs(self, entry: tuple[yaml.Node, yaml.Node] | None, fail: Any) -> dict[str, InputSpec]:
        if entry is None:
            return {}
        raw = _value(entry[1])
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
            if high is not None and (
                not isinstance(high, int) or isinstance(high, bool) or high < 1
            ):
                raise fail("inputs", f"`{arg}.high` must be a positive integer, got {high!r}")
            specs[arg] = InputSpec(shape=tuple(shape), dtype=dtype, high=high)
        return specs

    def _tolerance(self, raw: Any, fail: Any) -> Tolerance:
        if not isinstance(raw, dict) or set(raw) - set(TOLERANCE_KEYS) or not raw:
            raise fail(
                "tolerance", f"must be a mapping like {{atol: 0.01, rtol: 0.01}}, got {raw!r}"
            )
        values = {}
        for key in TOLERANCE_KEYS:
            val = raw.get(key, 0.0)
            if isinstance(val, bool) or not isinstance(val, (int, float)) or val < 0:
                raise fail("tolerance", f"`{key}` must be a number >= 0, got {val!r}")
            values[key] = float(val)
        return Tolerance(**values)


def _field(dotted: str):
    if "." in dotted:
        section, key = dotted.split(".", 1)
        fields = SECTIONS.get(section, {})
        if key in fields:
            return fields[key]
    elif dotted in TOP_LEVEL:
        return TOP_LEVEL[dotted]
    raise ConfigError(f"`{dotted}` is not a kbot setting")


def _env_names() -> dict[str, str]:
    names = {f"{ENV_PREFIX}{key.upper()}": key for key, f in TOP_LEVEL.items() if key != "version"}
    for section, fields in SECTIONS.items():
        for key in fields:
            names[f"{ENV_PREFIX}{section.upper()}_{key.upper()}"] = f"{section}.{key}"
    return names


def _default_name(qualname: str) -> str:
    """`RMSNorm.forward` -> `rmsnorm`; `layers.softcap` -> `softcap`."""
    parts = [
        p for p in qualname.split(".") if p not in ("forward", "forward_native", "forward_cuda")
    ]
    base = parts[-1] if parts else qualname.split(".")[0]
    return "".join(ch if ch.isalnum() else "_" for ch in base).lower()
