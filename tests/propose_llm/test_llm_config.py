"""The llm settings: command line > KBOT_LLM_* > .kbot.yml, weighted models, prices, and the
key variable's name (never the key) checked so the evaluator keeps it from candidates."""

import json

import pytest

from kbot.cli import main
from kbot.config import load_config
from kbot.errors import ConfigError, UsageError
from kbot.evaluate.credentials import scrub_environment
from kbot.search.options import options_from_config
from kbot.search.runner import options_from_json, options_to_json

YML = """version: 1
llm:
  base_url: http://localhost:30000/v1
  model: kernelllm
  api_key_env: LOCAL_LLM_KEY
  models:
    - {model: gpt-4.1, base_url: https://api.openai.com/v1, api_key_env: OPENAI_API_KEY, weight: 1}
  prices:
    gpt-4.1: {input: 2.0, output: 8.0}
  style: evolve
  samples: 3
"""


def _config(tmp_path, text=YML, cli=None, environ=None):
    (tmp_path / ".kbot.yml").write_text(text)
    return load_config(tmp_path, cli=cli, environ=environ or {})


def test_models_prices_and_the_default_proposers_from_the_file(tmp_path):
    notes = []
    options = options_from_config(_config(tmp_path), notes)
    local, openai = options.llm.models
    assert (local.model, local.base_url, local.api_key_env) == (
        "kernelllm", "http://localhost:30000/v1", "LOCAL_LLM_KEY",
    )  # fmt: skip
    assert openai.model == "gpt-4.1" and openai.weight == 1.0
    assert options.llm.price_of("gpt-4.1").usd(1_000_000, 1_000_000) == 10.0
    assert options.llm.samples == 3 and options.proposers[-1] == "llm" and notes


def test_the_command_line_beats_the_environment_beats_the_file(tmp_path):
    cli = {"llm.model": "from-cli", "llm.base_url": None}
    environ = {"KBOT_LLM_MODEL": "from-env", "KBOT_LLM_BASE_URL": "http://env:8000/v1"}
    config = _config(tmp_path, cli=cli, environ=environ)
    assert config.llm.model == "from-cli" and config.source_of("llm.model") == "command line"
    assert config.llm.base_url == "http://env:8000/v1"
    assert config.source_of("llm.base_url") == "KBOT_LLM_BASE_URL"


def test_settings_survive_the_run_store(tmp_path):
    options = options_from_config(_config(tmp_path), [])
    stored = json.loads(json.dumps(options_to_json(options)))
    assert options_from_json(stored) == options
    del stored["llm"]  # a run recorded before the llm proposer existed
    assert not options_from_json(stored).llm.configured


@pytest.mark.parametrize(
    "text, message",
    [
        ("version: 1\nllm:\n  models: [{weight: 2}]\n", "has no `model`"),
        ("version: 1\nllm:\n  models: [{model: m, temp: 1}]\n", "unknown key 'temp'"),
        ("version: 1\nllm:\n  prices: {m: {input: -1}}\n", "must be a number >= 0"),
        ("version: 1\nllm:\n  style: chatty\n", "must be one of evolve, kernelbench"),
    ],
)
def test_bad_llm_values_name_the_key_and_the_line(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message) as error:
        _config(tmp_path, text)
    assert ".kbot.yml:" in str(error.value)


def test_a_key_variable_kbot_would_not_hide_is_refused(tmp_path):
    config = _config(tmp_path, "version: 1\nllm:\n  model: m\n  api_key_env: LLM_PASSWORD\n")
    options_from_config(config, [])  # PASSW: a credential name, kept from candidates
    config = _config(tmp_path, "version: 1\nllm:\n  model: m\n  api_key_env: MY_LLM\n")
    with pytest.raises(ConfigError, match="KBOT_SECRET_ENV"):
        options_from_config(config, [])


def test_a_name_listed_in_kbot_secret_env_is_accepted_and_scrubbed(tmp_path, monkeypatch):
    monkeypatch.setenv("KBOT_SECRET_ENV", "MY_LLM")
    config = _config(tmp_path, "version: 1\nllm:\n  model: m\n  api_key_env: MY_LLM\n")
    assert options_from_config(config, []).llm.models[0].api_key_env == "MY_LLM"
    environ = {"MY_LLM": "k", "KBOT_SECRET_ENV": "MY_LLM", "PATH": "/bin"}
    assert scrub_environment(environ) == {"PATH": "/bin"}


def test_the_key_variable_never_reaches_a_candidate():
    environ = {"KBOT_TEST_LLM_API_KEY": "sk-x", "OPENAI_API_KEY": "sk-y", "PATH": "/bin"}
    assert scrub_environment(environ) == {"PATH": "/bin"}


def test_proposers_llm_without_a_model_says_what_to_set(tmp_path, capsys):
    problem = tmp_path / "p.py"
    problem.write_text(
        "class Model: pass\ndef get_inputs(): return []\ndef get_init_inputs(): return []\n"
    )
    assert main(["optimize", str(problem), "--proposers", "llm", "--work-dir", str(tmp_path)]) == 2
    assert "--llm-model NAME" in capsys.readouterr().err


def test_an_unknown_style_from_the_environment_fails(tmp_path):
    with pytest.raises(ConfigError, match="KBOT_LLM_STYLE"):
        load_config(tmp_path, environ={"KBOT_LLM_STYLE": "chatty"})


def test_usage_error_is_what_the_registry_raises_for_unknown_names():
    from kbot.propose.registry import make_proposers

    with pytest.raises(UsageError, match="llm"):
        make_proposers(["magic"])
