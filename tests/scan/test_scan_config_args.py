"""Ops built from one configuration object (issue 14, item 1: references as real repos write
them): a dataclass nested in the class or at the top of its file, annotated on the constructor,
is built from its fields sized by --model-config or given in .kbot.yml; a `config` read as an
attribute bag gets the model configuration's values. A field nobody can size is a skip naming
the .kbot.yml key."""

from __future__ import annotations

import json
import textwrap

import pytest
import torch

from kbot.config import load_config
from kbot.errors import ConfigError
from kbot.problem.runtime import case_inputs, import_file, init_inputs
from kbot.scan import ScanOptions, scan
from kbot.scan.extract import EmitStatus, emit_problems
from kbot.scan.findings import TargetHint
from kbot.scan.model_config import load_model_config

CASES = ({"T": 1}, {"T": 3})

OPS = """
from dataclasses import dataclass, field

import torch
from torch import nn


@dataclass
class NormSettings:
    hidden_size: int
    eps: float = 1e-6


class OffsetRMSNorm(nn.Module):
    @dataclass(kw_only=True)
    class Config:
        dim: int
        eps: float = 1e-6
        tags: list = field(default_factory=list)

    def __init__(self, config: Config):
        super().__init__()
        self.eps = config.eps
        self.weight = nn.Parameter(torch.zeros(config.dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return ((1.0 + self.weight.float()) * xf).to(x.dtype)


class PlainRMSNorm(nn.Module):
    def __init__(self, settings: "NormSettings"):
        super().__init__()
        self.eps = settings.eps
        self.weight = nn.Parameter(torch.ones(settings.hidden_size))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight


class LlamaRMSNorm(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.eps = config.rms_norm_eps
        self.act = config.hidden_act
        self.weight = nn.Parameter(torch.ones(config.hidden_size))

    def forward(self, hidden_states):
        xf = hidden_states.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(hidden_states.dtype)


class WindowedRMSNorm(nn.Module):
    @dataclass
    class Config:
        dim: int
        window: int

    def __init__(self, config: Config):
        super().__init__()
        self.window = config.window
        self.weight = nn.Parameter(torch.ones(config.dim))

    def forward(self, x):
        return x * self.weight
"""


# A module the problem cannot import (its package base is missing here, as torchtitan's
# `spmd_types` is on a machine without it): the op is rebuilt from source, its nested config
# dataclass with it, less the package base it cannot reach.
UNIMPORTABLE = """
from dataclasses import dataclass

import torch
from torch import nn

from .missing_protocols import Module


class ScaledRMSNorm(Module):
    @dataclass(kw_only=True, slots=True)
    class Config(Module.Config):
        dim: int
        eps: float = 1e-6

    def __init__(self, config: Config):
        super().__init__()
        self.eps = config.eps
        self.weight = nn.Parameter(torch.ones(config.dim))

    def forward(self, x):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).to(x.dtype) * self.weight
"""


def _repo(tmp_path, kbot_yml: str = ""):
    root = tmp_path / "repo"
    (root / "engine").mkdir(parents=True)
    (root / "engine" / "__init__.py").write_text("")
    (root / "engine" / "norms.py").write_text(OPS)
    (root / "engine" / "titan.py").write_text(UNIMPORTABLE)
    if kbot_yml:
        (root / ".kbot.yml").write_text(textwrap.dedent(kbot_yml))
    return root


def _emit(root, tmp_path, options):
    result = scan(root, options)
    return {e.name: e for e in emit_problems(result, tmp_path / "problems", options)}


def _emit_configured(root, tmp_path):
    """The problems emitted for the targets of the repository's own .kbot.yml."""
    config = load_config(root)
    hints = tuple(TargetHint.from_config(t, config.config_file) for t in config.targets)
    result = scan(root, ScanOptions(cases=CASES, targets=hints), config_root=config.root)
    options = ScanOptions(cases=CASES, targets=hints)
    return {e.name: e for e in emit_problems(result, tmp_path / "problems", options)}


def _config_json(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({
        "hidden_size": 256, "intermediate_size": 512, "num_attention_heads": 4,
        "rms_norm_eps": 1e-5, "hidden_act": "silu", "rope_scaling": None,
        "vision_config": {"hidden_size": 99}, "torch_dtype": "float32",
    }))  # fmt: skip
    return load_model_config(str(path))


def _run(emitted):
    module = import_file(emitted.path)
    model = module.Model(*init_inputs(module))
    out = model(*case_inputs(module, {"T": 3}))
    return module, model, out


def test_config_objects_are_built_from_the_model_config(tmp_path):
    options = ScanOptions(cases=CASES, model_config=_config_json(tmp_path))
    emitted = _emit(_repo(tmp_path), tmp_path, options)
    for name in ("offset_rms_norm", "plain_rms_norm", "llama_rms_norm"):
        assert emitted[name].status == EmitStatus.EMITTED, emitted[name].message
    # the nested dataclass: built with the fields the config sizes, the rest at their defaults
    text = emitted["offset_rms_norm"].path.read_text()
    assert "return [_Target.Config(dim=256, eps=1e-05)]" in text
    assert "config.dim=256 (hidden_size for `dim`)" in text
    _, model, out = _run(emitted["offset_rms_norm"])
    assert model.weight.shape == (256,) and model.eps == 1e-5 and out.shape == (3, 256)
    # a dataclass at the top of the file, named in a string annotation
    text = emitted["plain_rms_norm"].path.read_text()
    assert "_Target.__init__.__globals__['NormSettings'](hidden_size=256, eps=1e-05)" in text
    assert _run(emitted["plain_rms_norm"])[1].weight.shape == (256,)
    # an attribute bag: every plain value of config.json, nested configs left out; a null is
    # None, as a Hugging Face config object has it (`config.rope_scaling`)
    _, model, out = _run(emitted["llama_rms_norm"])
    assert (model.eps, model.act, model.weight.shape) == (1e-5, "silu", (256,))
    text = emitted["llama_rms_norm"].path.read_text()
    assert "types.SimpleNamespace(" in text and "vision_config" not in text
    assert "rope_scaling=None" in text
    assert "config: a namespace of --model-config" in text
    assert torch.is_tensor(out) and out.shape == (3, 256)
    # rebuilt from source: the nested Config is copied without its unreachable package base
    assert emitted["scaled_rms_norm"].status == EmitStatus.EMITTED, emitted[
        "scaled_rms_norm"
    ].message
    text = emitted["scaled_rms_norm"].path.read_text()
    assert "The op is rebuilt from source" in text and "class Config:" in text
    _, model, out = _run(emitted["scaled_rms_norm"])
    assert model.eps == 1e-5 and out.shape == (3, 256)


def test_a_field_nobody_sizes_is_a_skip_naming_the_kbot_yml_key(tmp_path):
    options = ScanOptions(cases=CASES, model_config=_config_json(tmp_path))
    emitted = _emit(_repo(tmp_path), tmp_path, options)
    assert emitted["windowed_rms_norm"].status != EmitStatus.EMITTED
    assert emitted["windowed_rms_norm"].message.endswith(
        "does not say what field `window` of its `config` is; add it under "
        "`init: {config: {window: ...}}` of its .kbot.yml target"
    )


def test_kbot_yml_gives_a_config_object_as_a_mapping(tmp_path):
    root = _repo(
        tmp_path,
        """
        version: 1
        targets:
          - target: engine/norms.py::WindowedRMSNorm.forward
            name: windowed_rms_norm
            init: {config: {dim: 64, window: 4}}
            inputs: {x: {shape: [T, 64], dtype: float32}}
            cases: [{T: 1}, {T: 3}]
        """,
    )
    emitted = _emit_configured(root, tmp_path)
    assert emitted["windowed_rms_norm"].status == EmitStatus.EMITTED, emitted[
        "windowed_rms_norm"
    ].message
    assert (
        "return [_Target.Config(dim=64, window=4)]" in emitted["windowed_rms_norm"].path.read_text()
    )
    _, model, out = _run(emitted["windowed_rms_norm"])
    assert model.window == 4 and out.shape == (3, 64)


def test_a_kbot_yml_name_the_op_does_not_have_is_an_error_with_its_line(tmp_path):
    """A typo in `init:` or `inputs:` stops the command (exit 2) naming the file, the line and
    the nearest name; it is not a skip reason among a scan's rows."""
    targets = {
        "init: {config: {dim: 64, widht: 2}}": "init.config keys ['widht'] are not fields of "
        "Config (the `config` of OffsetRMSNorm)",
        "init: {confg: {dim: 64}}": "init keys ['confg'] are not constructor arguments of "
        "OffsetRMSNorm; did you mean `confg` -> `config`?",
    }
    for init, expected in targets.items():
        root = _repo(
            tmp_path / str(len(init)),
            f"""
            version: 1
            targets:
              - target: engine/norms.py::OffsetRMSNorm.forward
                name: offset_rms_norm
                {init}
                inputs: {{x: {{shape: [T, 64], dtype: float32}}}}
            """,
        )
        with pytest.raises(ConfigError) as caught:
            _emit_configured(root, tmp_path / str(len(init)))
        message = str(caught.value)
        assert message.startswith(f"{root / '.kbot.yml'}:4: target offset_rms_norm: "), message
        assert expected in message
    root = _repo(
        tmp_path / "inputs",
        """
        version: 1
        targets:
          - target: engine/norms.py::OffsetRMSNorm.forward
            name: offset_rms_norm
            init: {config: {dim: 64}}
            inputs: {y: {shape: [T, 64], dtype: float32}}
        """,
    )
    with pytest.raises(ConfigError, match=r"inputs \['y'\] are not arguments of OffsetRMSNorm"):
        _emit_configured(root, tmp_path / "inputs")


def test_an_op_on_fixed_size_tensors_gets_one_case(tmp_path):
    """No input is sized by T: the problem has one case (three identical cases would call a
    get_inputs that takes no T)."""
    root = _repo(
        tmp_path,
        """
        version: 1
        targets:
          - target: engine/norms.py::PlainRMSNorm.forward
            name: fixed_rms_norm
            init: {settings: {hidden_size: 64}}
            inputs: {x: {shape: [8, 64], dtype: float32}}
        """,
    )
    emitted = _emit_configured(root, tmp_path)
    fixed = emitted["fixed_rms_norm"]
    assert fixed.status == EmitStatus.EMITTED, fixed.message
    module = import_file(fixed.path)
    assert module.CASES == [{}]
    model = module.Model(*init_inputs(module))
    assert model(*case_inputs(module, module.CASES[0])).shape == (8, 64)


def test_a_preset_namespace_has_what_hugging_face_configs_leave_at_none():
    # text-generation-inference's Llama-4 rotary reads config.rope_scaling, absent from the
    # presets: a Hugging Face config object has it, None
    config = load_model_config("llama-3-8b")
    assert config.raw["rope_scaling"] is None and config.raw["hidden_size"] == 4096


def test_a_namespace_answers_to_every_spelling_of_a_field():
    """A Hugging Face config answers to a field's other names (its `attribute_map`): OLMo's
    norms read `config.layer_norm_eps`, GPT-2's blocks `config.n_embd`. A spelling the config
    gives itself keeps its own value."""
    config = load_model_config("llama-3-8b")
    assert config.raw["layer_norm_eps"] == config.raw["rms_norm_eps"] == 1e-5
    assert config.raw["n_embd"] == config.raw["d_model"] == 4096
    assert config.raw["n_head"] == 32 and config.raw["num_kv_heads"] == 8
