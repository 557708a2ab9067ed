"""The `.kbot.yml` schema: every key, its default, and the check that turns raw YAML or a
`KBOT_*` string into a typed value. `kbot.config` resolves a file against this table; the
table is the single place a new setting is added (and docs/config.md the place it is explained).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kbot.evaluate.credentials import looks_like_token, mask, public_url, secret_values


class SchemaError(ValueError):
    """A value that does not fit its key; the message says what would be valid."""


@dataclass(frozen=True)
class Field:
    default: Any
    check: Callable[[Any], Any]  # raw YAML value -> typed value, or SchemaError
    parse_env: Callable[[str], Any] | None  # KBOT_* string -> raw value; None: not settable by env
    valid: str  # what a valid value looks like, for error messages


def _shown(value: Any) -> str:
    """`value` as an error message may quote it: URLs without their credentials, every
    credential variable's value masked, and a token-shaped string not at all."""
    if isinstance(value, str) and looks_like_token(value.strip()):
        return "a value that looks like a token (not shown)"
    if isinstance(value, str) and "://" in value:
        value = public_url(value)
    return mask(repr(value), secret_values())


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def integer(minimum: int = 0) -> Field:
    def check(value: Any) -> int:
        if not _is_int(value) or value < minimum:
            raise SchemaError(f"must be an integer >= {minimum}, got {_shown(value)}")
        return value

    return Field(0, check, _env_int, f"an integer >= {minimum}")


def version() -> Field:
    def check(value: Any) -> int:
        if not _is_int(value) or value != 1:
            raise SchemaError(f"must be 1, the only version this kbot reads; got {_shown(value)}")
        return value

    return Field(1, check, _env_int, "1")


def number(minimum: float = 0.0) -> Field:
    def check(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
            raise SchemaError(f"must be a number >= {minimum}, got {_shown(value)}")
        return float(value)

    return Field(0.0, check, _env_float, f"a number >= {minimum}")


def boolean() -> Field:
    def check(value: Any) -> bool:
        if not isinstance(value, bool):
            raise SchemaError(f"must be true or false, got {_shown(value)}")
        return value

    return Field(False, check, _env_bool, "true or false")


def text(optional: bool = False, pattern: str | None = None, example: str = "") -> Field:
    def check(value: Any) -> str | None:
        if value is None and optional:
            return None
        if not isinstance(value, str) or not value:
            raise SchemaError(
                f"must be a non-empty string{' or null' if optional else ''}, got {_shown(value)}"
            )
        if pattern and not re.fullmatch(pattern, value):
            raise SchemaError(f"must look like {example}, got {_shown(value)}")
        return value

    return Field(None, check, _env_str, f"a string like {example}" if example else "a string")


def choice(*options: str) -> Field:
    def check(value: Any) -> str:
        if value not in options:
            raise SchemaError(f"must be one of {', '.join(options)}, got {_shown(value)}")
        return value

    return Field(options[0], check, _env_str, " | ".join(options))


def string_list(allowed: tuple[str, ...] | None = None) -> Field:
    def check(value: Any) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise SchemaError(f"must be a list of strings, got {_shown(value)}")
        if allowed is not None:
            unknown = [v for v in value if v not in allowed]
            if unknown:
                raise SchemaError(f"has unknown {unknown}; valid: {', '.join(allowed)}")
        return tuple(value)

    return Field(
        (),
        check,
        _env_list,
        "a list of strings" + (f" from {', '.join(allowed)}" if allowed else ""),
    )


def int_list() -> Field:
    def check(value: Any) -> tuple[int, ...]:
        if not isinstance(value, list) or not all(_is_int(v) and v >= 0 for v in value):
            raise SchemaError(f"must be a list of GPU indices like [0, 1], got {_shown(value)}")
        return tuple(value)

    return Field((), check, lambda s: [_env_int(v) for v in _env_list(s)], "a list like [0, 1]")


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h)?\s*$")


def parse_duration_s(value: Any) -> float:
    """600, "600", "90s", "10m", "1.5h" -> seconds."""
    if _is_int(value) or isinstance(value, float):
        if value <= 0:
            raise SchemaError(f"must be positive, got {_shown(value)}")
        return float(value)
    match = _DURATION.match(str(value)) if isinstance(value, str) else None
    if not match or float(match.group(1)) <= 0:
        raise SchemaError(f'must be a duration like 600, "90s", "10m" or "1h", got {_shown(value)}')
    return float(match.group(1)) * {"s": 1, "m": 60, "h": 3600, None: 1}[match.group(2)]


def duration() -> Field:
    return Field(0.0, parse_duration_s, _env_str, 'seconds, or "90s", "10m", "1h"')


def cases() -> Field:
    def check(value: Any) -> tuple[dict[str, int], ...]:
        example = "a list of dicts like [{T: 1}, {T: 16}, {T: 4096}]"
        if not isinstance(value, list) or not value:
            raise SchemaError(f"must be {example}, got {_shown(value)}")
        for case in value:
            if not isinstance(case, dict) or not case:
                raise SchemaError(f"must be {example}, got the item {_shown(case)}")
            for key, size in case.items():
                if (
                    not isinstance(key, str)
                    or not key.isidentifier()
                    or not _is_int(size)
                    or size < 0
                ):
                    raise SchemaError(
                        f"must be {example}; {key!r}: {_shown(size)} is not a name and a size"
                    )
        return tuple(dict(c) for c in value)

    return Field((), check, None, "a list of dicts like [{T: 1}, {T: 16}, {T: 4096}]")


_ENV_NAME = r"[A-Za-z_][A-Za-z0-9_]*"


def env_name_error(value: Any, example: str = "OPENAI_API_KEY") -> str | None:
    """Why `value` is not the NAME of an environment variable, without quoting it (people
    paste the key itself here); None when it is one."""
    if isinstance(value, str) and looks_like_token(value.strip()):
        return (
            "looks like a token, not a variable's NAME: put the token in an environment "
            f"variable and give that variable's name here, like {example} (value not shown)"
        )
    if not isinstance(value, str) or not re.fullmatch(_ENV_NAME, value):
        return f"must be the NAME of an environment variable, like {example} (value not shown)"
    return None


def env_name(default: str) -> Field:
    """A `*_env` key: the name of the variable holding a credential, never the credential."""

    def check(value: Any) -> str:
        error = env_name_error(value, default)
        if error:
            raise SchemaError(error)
        return value

    return Field(default, check, _env_str, f"a variable's NAME, like {default}")


_MODEL_KEYS = {"model": str, "base_url": str, "api_key_env": str, "weight": (int, float)}


def llm_models() -> Field:
    """`llm.models`: more models beside `llm.model`, each with its share of the calls."""
    example = "a list like [{model: gpt-4.1-mini, weight: 3}, {model: gpt-4.1, weight: 1}]"

    def check(value: Any) -> tuple[dict[str, Any], ...]:
        # Items are named by their number, never quoted: one may hold a key by mistake.
        if not isinstance(value, list):
            raise SchemaError(f"must be {example}")
        for number_, item in enumerate(value, 1):
            error = _model_item_error(item)
            if error:
                raise SchemaError(f"item {number_}: {error}; must be {example}")
        return tuple(dict(item) for item in value)

    return Field((), check, None, example)


def _model_item_error(item: Any) -> str | None:
    """What is wrong with one `llm.models` item, without quoting any of its values."""
    if not isinstance(item, dict) or not isinstance(item.get("model"), str):
        return "has no `model`"
    for key, item_value in item.items():
        kind = _MODEL_KEYS.get(key)
        if kind is None:
            return f"unknown key {str(key)[:40]!r}; valid: {', '.join(_MODEL_KEYS)}"
        if not isinstance(item_value, kind) or isinstance(item_value, bool):
            return f"{key!r} has the wrong type"
    if "base_url" in item and not re.fullmatch(r"https?://\S+", item["base_url"]):
        return "base_url must look like http://localhost:8000/v1"
    if "api_key_env" in item:
        error = env_name_error(item["api_key_env"])
        if error:
            return f"api_key_env {error}"
    if item.get("weight", 1) < 0:
        return "weight must be >= 0"
    return None


def price_table() -> Field:
    """`llm.prices`: USD per million tokens for each model name."""
    example = "a mapping like {gpt-4.1: {input: 2.0, output: 8.0}} (USD per million tokens)"

    def check(value: Any) -> dict[str, dict[str, float]]:
        if not isinstance(value, dict):
            raise SchemaError(f"must be {example}, got {_shown(value)}")
        table = {}
        for model, price in value.items():
            if not isinstance(price, dict) or set(price) - {"input", "output"}:
                raise SchemaError(f"must be {example}; {model}: {_shown(price)}")
            for key, number_ in price.items():
                if (
                    isinstance(number_, bool)
                    or not isinstance(number_, (int, float))
                    or number_ < 0
                ):
                    raise SchemaError(f"must be {example}; {model}.{key} must be a number >= 0")
            table[str(model)] = {k: float(v) for k, v in price.items()}
        return table

    return Field({}, check, None, example)


def with_default(field: Field, default: Any) -> Field:
    return Field(default, field.check, field.parse_env, field.valid)


# --- environment strings ------------------------------------------------------------------


def _env_str(raw: str) -> str:
    return raw


def _env_int(raw: str) -> int:
    try:
        return int(raw)
    except ValueError:
        raise SchemaError(f"must be an integer, got {_shown(raw)}") from None


def _env_float(raw: str) -> float:
    try:
        return float(raw)
    except ValueError:
        raise SchemaError(f"must be a number, got {_shown(raw)}") from None


def _env_bool(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise SchemaError(f"must be true or false, got {_shown(raw)}")


def _env_list(raw: str) -> list[str]:
    return [part.strip() for part in raw.split(",") if part.strip()]


# --- the schema ---------------------------------------------------------------------------

DTYPES = ("bfloat16", "float16", "float32")
DEVICES = ("auto", "cpu", "cuda")
ADAPTERS = ("auto", "forward_triton", "forward_cuda", "lmdeploy_builder", "guarded_dispatch")
PROPOSERS = ("codegen", "tune", "inductor", "llm")
DEFAULT_CASES = ({"T": 1}, {"T": 16}, {"T": 4096})

TOP_LEVEL: dict[str, Field] = {
    "version": with_default(version(), 1),
    "work_dir": with_default(text(), ".kbot"),
    "device": choice(*DEVICES),
    "gpus": int_list(),
}

SECTIONS: dict[str, dict[str, Field]] = {
    "scan": {
        "cases": with_default(cases(), DEFAULT_CASES),
        "compile_decorators": string_list(),
        "exclude": string_list(),
        "include_existing": boolean(),
        "include_stochastic": boolean(),
        # a Hugging Face config.json or a preset: inputs for targets without (kbot.scan.model_config)
        "model_config": text(optional=True),
    },
    "search": {
        "proposers": with_default(string_list(PROPOSERS), ("codegen", "tune", "inductor")),
        "generations": with_default(integer(1), 6),
        "time_budget_s": with_default(duration(), 600.0),
        "max_candidates": with_default(integer(1), 200),
        "islands": with_default(integer(1), 4),
        "patience": with_default(integer(1), 3),
        "seeds": with_default(integer(5), 5),  # the evaluator's floor: fewer trials prove little
        # the winner checked at other models' sizes (kbot.search.sweep); 0 turns it off
        "sweep_points": with_default(integer(0), 8),
    },
    "llm": {
        "base_url": text(
            optional=True, pattern=r"https?://\S+", example="http://localhost:30000/v1"
        ),
        "model": text(optional=True),
        "api_key_env": env_name("OPENAI_API_KEY"),
        "models": llm_models(),
        "prices": price_table(),
        "style": choice("evolve", "kernelbench"),
        "temperature": with_default(number(0.0), 0.7),
        "max_reply_tokens": with_default(integer(1), 8192),
        "timeout_s": with_default(duration(), 180.0),
        "retries": with_default(integer(0), 4),
        "samples": with_default(integer(1), 2),
        "concurrency": integer(0),  # 0: as many as the evaluator pool has GPUs (1 on a CPU)
        "max_tokens_per_run": with_default(integer(0), 200_000),
        "max_usd_per_run": with_default(number(0.0), 5.0),
    },
    "publish": {
        "repo": text(optional=True, pattern=r"[\w.-]+/[\w.-]+", example="owner/name"),
        "base_branch": with_default(text(), "main"),
        "branch_prefix": with_default(text(), "kbot/"),
        "labels": with_default(string_list(), ("kbot", "performance")),
        "draft": with_default(boolean(), True),
        "max_open_prs": with_default(integer(0), 5),
        "max_prs_per_run": with_default(integer(0), 3),
        "signoff": boolean(),
        "github_base_url": with_default(
            text(pattern=r"https?://\S+", example="https://api.github.com"),
            "https://api.github.com",
        ),
        "token_env": env_name("GITHUB_TOKEN"),
        "fork": text(optional=True, pattern=r"[\w.-]+/[\w.-]+", example="owner/name"),
    },
}

TARGET_KEYS = (
    "target",
    "name",
    "init",
    "inputs",
    "cases",
    "dtypes",
    "params_dtype",
    "tolerance",
    "adapter",
    "skip",
)
INPUT_KEYS = ("shape", "dtype", "high")
TOLERANCE_KEYS = ("atol", "rtol")
TARGET_PATTERN = re.compile(
    r"^(?P<file>[^:]+\.py)::(?P<qual>[A-Za-z_][\w.]*)$|^(?P<module>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?<!\.py):(?P<qual2>[A-Za-z_][\w.]*)$"
)
