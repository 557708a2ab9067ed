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

from kbot.config_schema import SECTIONS, TOP_LEVEL, SchemaError
from kbot.config_targets import InputSpec, TargetConfig, Tolerance, node_value, parse_targets
from kbot.errors import ConfigError
from kbot.evaluate.credentials import public_url

__all__ = ["Config", "InputSpec", "TargetConfig", "Tolerance", "find_config_file", "load_config"]

CONFIG_NAME = ".kbot.yml"
DEFAULT = "default"
CLI = "command line"
ENV_PREFIX = "KBOT_"


@dataclass(frozen=True)
class ScanConfig:
    cases: tuple[dict[str, int], ...]
    compile_decorators: tuple[str, ...]
    exclude: tuple[str, ...]
    include_existing: bool
    include_stochastic: bool
    model_config: str | None = None  # a config.json path or a preset name


@dataclass(frozen=True)
class SearchConfig:
    proposers: tuple[str, ...]
    generations: int
    time_budget_s: float
    max_candidates: int
    islands: int
    patience: int
    seeds: int
    sweep_points: int = 8


@dataclass(frozen=True)
class LLMConfig:
    base_url: str | None
    model: str | None
    api_key_env: str
    models: tuple[dict[str, Any], ...]
    prices: dict[str, dict[str, float]]
    style: str
    temperature: float
    max_reply_tokens: int
    timeout_s: float
    retries: int
    samples: int
    concurrency: int
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
        """Every setting as dotted key -> value (targets summarised), in schema order; base URLs
        with their userinfo and query values masked, as they may be shown."""
        flat: dict[str, Any] = {key: getattr(self, key) for key in TOP_LEVEL}
        for section, fields in SECTIONS.items():
            for key in fields:
                flat[f"{section}.{key}"] = getattr(getattr(self, section), key)
        flat["targets"] = tuple(t.target for t in self.targets)
        flat["llm.base_url"] = public_url(flat["llm.base_url"])
        flat["llm.models"] = tuple(
            {**item, "base_url": public_url(item["base_url"])} if "base_url" in item else item
            for item in flat["llm.models"]
        )
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
    _refuse_duplicate_keys(config_file, node)
    return node


def _refuse_duplicate_keys(config_file: Path, node: yaml.Node) -> None:
    """YAML keeps the last of two equal keys without a word: a setting written twice would
    silently lose its first value."""
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _refuse_duplicate_keys(config_file, item)
    if not isinstance(node, yaml.MappingNode):
        return
    first: dict[str, int] = {}
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode):
            line = key_node.start_mark.line + 1
            if key_node.value in first:
                raise ConfigError(
                    f"{config_file}:{line}: `{key_node.value}` is given twice (first on line "
                    f"{first[key_node.value]}); keep one"
                )
            first[key_node.value] = line
        _refuse_duplicate_keys(config_file, value_node)


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
                self._set(key, node_value(value_node), self.where(key_node))
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
            self._set(f"{section}.{key}", node_value(value_node), self.where(key_node))

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
        targets = parse_targets(self.target_nodes, scan_cases, self.where)
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
