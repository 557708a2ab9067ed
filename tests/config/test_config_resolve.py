"""Config precedence, provenance and every bad-config case naming file, line and key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbot.cli import main
from kbot.config import load_config
from kbot.errors import ConfigError

GOOD = """\
version: 1
device: cpu
search:
  generations: 3
  time_budget_s: 10m
publish:
  labels: [perf]
targets:
  - target: pkg/norm.py::RMSNorm.forward
    init: {hidden_size: 64, eps: 1.0e-6}
    inputs:
      x: {shape: [T, hidden_size], dtype: bfloat16}
    cases: [{T: 1}, {T: 8}]
    tolerance: {atol: 0.02, rtol: 0.02}
  - target: pkg.act:silu_and_mul
"""


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / ".kbot.yml").write_text(text)
    return tmp_path


def test_defaults_apply_without_a_file(tmp_path):
    config = load_config(tmp_path, environ={})
    assert config.config_file is None
    assert config.search.generations == 6
    assert config.source_of("search.generations") == "default"
    assert config.work_dir == tmp_path.resolve() / ".kbot"


def test_file_values_remember_their_line(tmp_path):
    config = load_config(write(tmp_path, GOOD), environ={})
    assert config.search.generations == 3
    assert config.search.time_budget_s == 600.0
    assert config.source_of("search.generations").endswith(".kbot.yml:4")
    assert config.publish.labels == ("perf",)
    rms, silu = config.targets
    assert rms.name == "rmsnorm" and rms.file == "pkg/norm.py" and rms.qualname == "RMSNorm.forward"
    assert rms.inputs["x"].shape == ("T", "hidden_size")
    assert rms.cases == ({"T": 1}, {"T": 8})
    assert rms.tolerance is not None and rms.tolerance.atol == 0.02
    assert silu.module == "pkg.act" and silu.name == "silu_and_mul"
    assert silu.cases == config.scan.cases  # the scan's decode/prefill defaults


def test_precedence_cli_over_env_over_file(tmp_path):
    write(tmp_path, GOOD)
    env = {
        "KBOT_SEARCH_GENERATIONS": "5",
        "KBOT_DEVICE": "cuda",
        "KBOT_SEARCH_PROPOSERS": "codegen,tune",
    }
    config = load_config(tmp_path, cli={"search.generations": 9}, environ=env)
    assert (
        config.search.generations == 9 and config.source_of("search.generations") == "command line"
    )
    assert config.device == "cuda" and config.source_of("device") == "KBOT_DEVICE"
    assert config.search.proposers == ("codegen", "tune")


def test_config_file_is_found_walking_up(tmp_path):
    write(tmp_path, GOOD)
    deep = tmp_path / "a" / "b"
    deep.mkdir(parents=True)
    assert load_config(deep, environ={}).config_file == (tmp_path / ".kbot.yml").resolve()


def test_unrelated_kbot_variables_are_ignored(tmp_path):
    assert load_config(tmp_path, environ={"KBOT_UPDATE_GOLDEN": "1"}).device == "auto"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "version: 1\nsearch:\n  generatons: 3\n",
            ":3: unknown key `search.generatons`; valid keys: proposers",
        ),
        ("version: 1\nsearh:\n  generations: 3\n", ":2: unknown key `searh`"),
        ("search:\n  generations: 3\n", ":1: missing `version: 1`"),
        (
            "version: 1\nsearch:\n  generations: many\n",
            ":3: `search.generations` must be an integer >= 1",
        ),
        ("version: 1\ndevice: tpu\n", ":2: `device` must be one of auto, cpu, cuda"),
        (
            "version: 1\nsearch:\n  time_budget_s: soon\n",
            ':3: `search.time_budget_s` must be a duration like 600, "90s"',
        ),
        (
            "version: 1\nsearch:\n  proposers: [codegen, magic]\n",
            "has unknown ['magic']; valid: codegen, tune",
        ),
        ("version: 1\npublish:\n  draft: maybe\n", "`publish.draft` must be true or false"),
        ("version: 1\npublish:\n  repo: not a repo\n", "`publish.repo` must look like owner/name"),
        (
            "version: 1\nllm:\n  base_url: localhost\n",
            "`llm.base_url` must look like http://localhost:30000/v1",
        ),
        (
            "version: 1\nscan:\n  cases: [1, 2]\n",
            "`scan.cases` must be a list of dicts like [{T: 1}",
        ),
        ("version: 1\nsearch: [1, 2]\n", ":2: `search` must be a mapping"),
        ("version: 1\nsearch:\n  generations: [3\n", "not valid YAML"),
        ("- just\n- a list\n", ":1: the file must be a mapping"),
        ("version: 1\ntargets:\n  - init: {}\n", ":3: target entry needs `target:"),
        ("version: 1\ntargets:\n  - target: norm.py:RMSNorm\n", "`targets.target` must look like"),
        (
            "version: 1\ntargets:\n  - target: a.py::F\n    shapes: [1]\n",
            ":4: unknown key `targets.shapes`",
        ),
        (
            "version: 1\ntargets:\n  - target: a.py::F\n    cases: [{T: x}]\n",
            ":4: `targets.cases` must be a list of dicts",
        ),
        (
            "version: 1\ntargets:\n  - target: a.py::F\n    dtypes: [fp8]\n",
            "`targets.dtypes` must be a list from bfloat16",
        ),
        (
            "version: 1\ntargets:\n  - target: a.py::F\n    params_dtype: bf16\n",
            ":4: `targets.params_dtype` must be one of bfloat16, float16, float32, got 'bf16'",
        ),
        (
            "version: 1\ntargets:\n  - target: a.py::F\n    inputs: {x: {shape: T}}\n",
            "`x.shape` must be a list of sizes",
        ),
        (
            "version: 1\ntargets:\n  - target: a.py::F\n    adapter: magic\n",
            "`targets.adapter` must be one of auto",
        ),
        (
            "version: 1\ntargets:\n  - target: a.py::F\n    tolerance: {atol: -1}\n",
            "`atol` must be a number >= 0",
        ),
        ("version: 1\ntargets: {a: 1}\n", "`targets` must be a list"),
        ("version: 2\n", ":1: `version` must be 1, the only version this kbot reads; got 2"),
        (
            "version: 1\nsearch:\n  generations: 3\n  generations: 5\n",
            ":4: `generations` is given twice (first on line 3); keep one",
        ),
        ("version: 1\ndevice: cpu\ndevice: cuda\n", ":3: `device` is given twice"),
        (
            "version: 1\ntargets:\n  - target: a.py::F\n    name: f\n    name: g\n",
            ":5: `name` is given twice (first on line 4)",
        ),
    ],
)
def test_bad_config_names_file_line_and_key(tmp_path, text, expected):
    write(tmp_path, text)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, environ={})
    message = str(info.value)
    assert ".kbot.yml" in message and "\n" not in message
    assert expected in message


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"KBOT_SEARCH_GENERATONS": "3"}, "KBOT_SEARCH_GENERATONS is not a kbot setting"),
        (
            {"KBOT_SEARCH_GENERATIONS": "three"},
            "KBOT_SEARCH_GENERATIONS: `search.generations` must be an integer",
        ),
        ({"KBOT_PUBLISH_DRAFT": "perhaps"}, "must be true or false"),
        ({"KBOT_SCAN_CASES": "1"}, "can only be set in .kbot.yml"),
        ({"KBOT_DEVIC": "cpu"}, "did you mean KBOT_DEVICE?"),
    ],
)
def test_bad_environment_values(tmp_path, env, expected):
    with pytest.raises(ConfigError, match=expected.replace("(", r"\(").replace("[", r"\[")):
        load_config(tmp_path, environ=env)


def test_not_utf8_config_file(tmp_path):
    (tmp_path / ".kbot.yml").write_bytes(b"version: 1\n# \xff\xfe\n")
    with pytest.raises(ConfigError, match="not UTF-8"):
        load_config(tmp_path, environ={})


def test_cli_show_prints_every_value_and_source(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("KBOT_DEVICE", raising=False)
    write(tmp_path, GOOD)
    assert main(["config", "--show", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "search.generations" in out and ".kbot.yml:4)" in out and "(default)" in out
    assert "rmsnorm: pkg/norm.py::RMSNorm.forward" in out


def test_cli_show_json_envelope(tmp_path, capsys):
    write(tmp_path, GOOD)
    assert main(["config", "--show", str(tmp_path), "--json"]) == 0
    envelope = json.loads(capsys.readouterr().out)
    assert envelope["schema"] == 1 and envelope["command"] == "config" and envelope["ok"] is True
    settings = {s["key"]: s for s in envelope["data"]["settings"]}
    assert settings["search.generations"]["value"] == 3
    assert envelope["data"]["targets"][0]["inputs"]["x"]["shape"] == ["T", "hidden_size"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["config", "--show", "/no/such/path"], "path /no/such/path does not exist"),
        (
            ["config", "--show", "--config", "/no/such.yml"],
            "config file /no/such.yml does not exist",
        ),
        (["config", "--shw"], "unrecognized arguments: --shw"),
        (["config"], "nothing to do"),
    ],
)
def test_cli_bad_input_is_one_line_exit_2(capsys, argv, expected):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and expected in err[0]


def test_cli_malformed_file_is_one_line_exit_2(tmp_path, capsys):
    write(tmp_path, "version: 1\nsearch:\n  generatons: 3\n")
    assert main(["config", "--show", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0]


# --- credentials never echoed -------------------------------------------------------------

OPENAI_CANARY = "sk-proj-CANARYopenai0123456789abcdefXYZ"
GITHUB_CANARY = "ghp_CANARYgithub0123456789abcdefXYZ012"


@pytest.mark.parametrize(
    "section, key, value",
    [
        ("llm", "api_key_env", OPENAI_CANARY),
        ("publish", "token_env", GITHUB_CANARY),
        ("publish", "token_env", "github_pat_CANARY0123456789"),
        ("llm", "api_key_env", "aB3dE5gH7jK9mN1pQ3sT5vW7yZ9bC1dE"),  # long, high-entropy
    ],
)
def test_a_token_given_for_an_env_name_is_rejected_without_being_quoted(
    tmp_path, section, key, value
):
    write(tmp_path, f"version: 1\n{section}:\n  {key}: {value}\n")
    with pytest.raises(ConfigError, match="looks like a token") as info:
        load_config(tmp_path, environ={})
    assert value not in str(info.value) and value[:8] not in str(info.value)
    assert f"`{section}.{key}`" in str(info.value) and "\n" not in str(info.value)


def test_a_model_item_holding_a_key_is_not_quoted(tmp_path):
    write(tmp_path, f"version: 1\nllm:\n  models:\n    - {{model: m, api_key: {OPENAI_CANARY}}}\n")
    with pytest.raises(ConfigError, match="item 1: unknown key 'api_key'") as info:
        load_config(tmp_path, environ={})
    assert OPENAI_CANARY not in str(info.value)
    write(
        tmp_path, f"version: 1\nllm:\n  models:\n    - {{model: m, api_key_env: {OPENAI_CANARY}}}\n"
    )
    with pytest.raises(ConfigError, match="looks like a token") as info:
        load_config(tmp_path, environ={})
    assert OPENAI_CANARY not in str(info.value)


def test_a_wrong_type_error_masks_credential_values(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "plainsecretvalue")
    write(tmp_path, "version: 1\nsearch:\n  generations: plainsecretvalue\n")
    with pytest.raises(ConfigError, match="must be an integer") as info:
        load_config(tmp_path, environ={})
    assert "plainsecretvalue" not in str(info.value) and "***" in str(info.value)


def test_show_masks_credentials_in_base_urls(tmp_path, capsys):
    url = "https://user:PASSWORDcanary@127.0.0.1:9/v1?api-key=QUERYcanary"
    write(
        tmp_path,
        f"version: 1\nllm:\n  base_url: {url}\n  models:\n    - {{model: m, base_url: '{url}'}}\n",
    )
    assert main(["config", "--show", str(tmp_path)]) == 0
    assert main(["config", "--show", str(tmp_path), "--json"]) == 0
    out = capsys.readouterr().out
    assert "PASSWORDcanary" not in out and "QUERYcanary" not in out
    assert "https://***@127.0.0.1:9/v1?api-key=***" in out
