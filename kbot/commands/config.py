"""`kbot config --show [PATH]`: every setting, its value and where the value came from."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kbot.config import Config, load_config
from kbot.errors import ExitCode, UsageError
from kbot.output import CommandResult, to_jsonable

HELP = "show the resolved configuration and where each value came from"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", nargs="?", default=".", help="target path (default: the current directory)"
    )
    parser.add_argument("--show", action="store_true", help="print every value and its source")
    parser.add_argument(
        "--config", metavar="FILE", help="use this .kbot.yml instead of searching upwards"
    )


def run(args: argparse.Namespace) -> CommandResult:
    if not args.show:
        raise UsageError("`kbot config` has nothing to do; use `kbot config --show [PATH]`")
    config = load_config(Path(args.path), config_file=args.config)
    return CommandResult(ExitCode.OK, render_text(config), render_data(config))


def render_data(config: Config) -> dict[str, Any]:
    return {
        "config_file": config.config_file,
        "root": config.root,
        "settings": [
            {"key": key, "value": to_jsonable(value), "source": config.source_of(key)}
            for key, value in config.values().items()
        ],
        "targets": to_jsonable(config.targets),
    }


def render_text(config: Config) -> str:
    lines = [
        f"config file: {config.config_file or 'none found (defaults apply)'}",
        f"root: {config.root}",
        "",
    ]
    values = config.values()
    width = max(len(key) for key in values)
    for key, value in values.items():
        shown = _show(value)
        lines.append(f"{key:<{width}}  {shown:<40}  ({config.source_of(key)})")
    for target in config.targets:
        cases = ", ".join(
            "{" + ", ".join(f"{k}: {v}" for k, v in c.items()) + "}" for c in target.cases
        )
        lines.append(
            f"  - {target.name}: {target.target}  cases [{cases}]  dtypes {', '.join(target.dtypes)}"
        )
    return "\n".join(lines)


def _show(value: Any) -> str:
    if isinstance(value, tuple):
        if value and isinstance(value[0], dict):
            return (
                "["
                + ", ".join("{" + ", ".join(f"{k}: {v}" for k, v in c.items()) + "}" for c in value)
                + "]"
            )
        return "[" + ", ".join(str(v) for v in value) + "]"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
