"""Inputs from a model's configuration (issue 14, deliverable 2b): a repository with no
`.kbot.yml` targets gets cases for its ops from a Hugging Face config.json or a preset, every
value says where it came from, and a name kbot cannot size is a skip naming the key to add."""

from __future__ import annotations

import json

import pytest
import torch

from kbot.errors import UsageError
from kbot.problem.runtime import case_inputs, import_file, init_inputs
from kbot.scan import ScanOptions, scan
from kbot.scan.extract import EmitStatus, emit_problems
from kbot.scan.model_config import PRESETS, load_model_config

CASES = ({"T": 1}, {"T": 3})


def _emit(tree, tmp_path, config):
    options = ScanOptions(cases=CASES, model_config=config)
    result = scan(tree, options)
    return result, {e.name: e for e in emit_problems(result, tmp_path / "problems", options)}


def test_a_preset_gives_most_targets_cases_and_says_where_each_value_came_from(
    engine_tree, tmp_path
):
    result, emitted = _emit(engine_tree, tmp_path, load_model_config("qwen3-8b"))
    made = {n for n, e in emitted.items() if e.status == EmitStatus.EMITTED}
    assert len(made) * 2 >= len(result.targets)  # at least half of the found targets
    header = emitted["gemma_rms_norm"].path.read_text().split('"""')[1]
    assert "inputs from --model-config qwen3-8b:" in header
    assert (
        "hidden_size=4096 (hidden_size)" in header
        and "eps=1e-06 (rms_norm_eps for `eps`)" in header
    )
    assert "x [T, 4096] bfloat16 ([T, hidden_size])" in header
    # the weights as a bf16 checkpoint loads them (red-team round fourteen's c02)
    assert "float parameters in bfloat16 (its torch_dtype)" in header
    widths = {}
    for name in ("gemma_rms_norm", "silu_and_mul", "split_heads"):
        module = import_file(emitted[name].path)
        model = module.Model(*init_inputs(module))
        assert all(p.dtype == torch.bfloat16 for p in model.parameters() if p.is_floating_point())
        (x,) = [v for v in case_inputs(module, {"T": 3}) if v.is_floating_point()][:1]
        widths[name] = tuple(x.shape)
        model(*case_inputs(module, {"T": 3}))  # the op runs on what was inferred
    # a gated activation takes gate and up together; a norm and a head split the hidden size
    assert widths == {"gemma_rms_norm": (3, 4096), "silu_and_mul": (3, 2 * 12288),
                      "split_heads": (3, 4096)}  # fmt: skip


def test_a_name_the_tables_do_not_know_is_a_skip_that_names_the_key(engine_tree, tmp_path):
    _, emitted = _emit(engine_tree, tmp_path, load_model_config("llama-3-8b"))
    assert emitted["softcap"].status != EmitStatus.EMITTED
    assert emitted["softcap"].message == (
        "cannot infer inputs for softcap: --model-config llama-3-8b does not say what argument "
        "`cap` of softcap is; add it to `inputs:` of its .kbot.yml target"
    )


def test_a_hugging_face_config_file_with_a_nested_text_config(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({
        "architectures": ["SomeVLM"], "torch_dtype": "float16",
        "text_config": {"hidden_size": 2048, "intermediate_size": 8192,
                        "num_attention_heads": 16, "vocab_size": 32000, "rms_norm_eps": 1e-5},
    }))  # fmt: skip
    config = load_model_config(str(path))
    assert config.values["head_dim"] == 128 and config.values["num_key_value_heads"] == 16
    assert config.values["torch_dtype"] == "float16" and config.name == str(path)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        # GPT-2 (its config has no hidden_size: HF maps it to n_embd)
        ({"n_embd": 768, "n_head": 12, "n_positions": 1024, "n_inner": None,
          "layer_norm_epsilon": 1e-5, "vocab_size": 50257},
         {"hidden_size": 768, "num_attention_heads": 12, "head_dim": 64,
          "max_position_embeddings": 1024, "rms_norm_eps": 1e-5}),
        # T5
        ({"d_model": 512, "num_heads": 8, "d_ff": 2048, "layer_norm_epsilon": 1e-6},
         {"hidden_size": 512, "intermediate_size": 2048, "num_attention_heads": 8}),
        # Falcon: its own hidden_size, kv heads under another name
        ({"hidden_size": 4544, "num_attention_heads": 71, "num_kv_heads": 1,
          "layer_norm_epsilon": 1e-5},
         {"num_key_value_heads": 1, "head_dim": 64, "rms_norm_eps": 1e-5}),
        # a newer config: rope_theta inside rope_parameters
        ({"hidden_size": 2048, "num_attention_heads": 16,
          "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0}},
         {"rope_theta": 1000000.0}),
    ],
)  # fmt: skip
def test_hugging_face_configs_that_name_the_sizes_otherwise(tmp_path, given, expected):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(given))
    values = load_model_config(str(path)).values
    assert {k: values.get(k) for k in expected} == expected
    assert "intermediate_size" not in values or given.get("n_inner", 0) is not None


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("llama-9000", "neither a file nor a preset; presets: " + ", ".join(PRESETS)),
        (
            "{path}",
            "no integer hidden size (any of hidden_size, n_embd, n_embed, d_model); "
            "give a Hugging Face config.json",
        ),
    ],
)
def test_a_bad_model_config_says_what_to_give(tmp_path, spec, message):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"model_type": "x"}))
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_model_config(spec.format(path=path))


def test_scan_model_config_in_kbot_yml_is_read_relative_to_it(engine_tree, tmp_path, capsys):
    from kbot.cli import main

    (engine_tree / "model").mkdir()
    (engine_tree / "model" / "config.json").write_text(json.dumps(PRESETS["qwen3-8b"]))
    (engine_tree / ".kbot.yml").write_text(
        "version: 1\nscan:\n  cases: [{T: 2}]\n  model_config: model/config.json\n"
    )
    out = tmp_path / "problems"
    assert main(["scan", str(engine_tree), "--emit-problems", str(out), "--json"]) == 0
    capsys.readouterr()
    header = (out / "gemma_rms_norm.py").read_text().split('"""')[1]
    assert f"inputs from --model-config {engine_tree / 'model' / 'config.json'}:" in header
    assert "CASES = [dict(T=2)]" in (out / "gemma_rms_norm.py").read_text()


def test_the_table_and_the_json_say_each_problems_cases_and_their_source(
    engine_tree, tmp_path, capsys
):
    from kbot.cli import main

    out = tmp_path / "problems"
    argv = ["scan", str(engine_tree), "--emit-problems", str(out), "--model-config", "qwen3-8b"]
    assert main(argv) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if " gemma_rms_norm " in line)
    assert " T=1,16,4096 " in row
    assert main([*argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)["data"]
    problem = next(p for p in data["problems"] if p["name"] == "gemma_rms_norm")
    assert problem["cases"] == [{"T": 1}, {"T": 16}, {"T": 4096}]
    assert problem["inputs_from"].startswith("--model-config qwen3-8b: hidden_size=4096")
    finding = next(f for f in data["findings"] if f["name"] == "gemma_rms_norm")
    assert finding["cases_label"] == "-"  # nothing before the model config sized it


def test_publishing_re_extracts_with_the_same_model_config_byte_for_byte(engine_tree, tmp_path):
    """kbot publish checks each run directory's problem.py against its own extraction: with the
    model configuration the scan used it gets the same bytes; without it, no such problem."""
    import hashlib

    from kbot.config import load_config
    from kbot.publish.batch import checkout_problems

    _, emitted = _emit(engine_tree, tmp_path, load_model_config("qwen3-8b"))
    expected = hashlib.sha256(emitted["gemma_rms_norm"].path.read_bytes()).hexdigest()
    (engine_tree / ".kbot.yml").write_text("version: 1\nscan:\n  cases: [{T: 1}, {T: 3}]\n")
    given = load_config(engine_tree, cli={"scan.model_config": "qwen3-8b"})  # kbot publish's flag
    assert checkout_problems(engine_tree, given)["gemma_rms_norm"] == expected
    assert "gemma_rms_norm" not in checkout_problems(engine_tree, load_config(engine_tree))


_ROPES = '''import torch
from torch import nn


class _Cache(nn.Module):
    def __init__(self, head_size: int, max_position_embeddings: int) -> None:
        super().__init__()
        t = torch.arange(max_position_embeddings, dtype=torch.float)[:, None]
        freqs = t / (10000.0 ** (torch.arange(0, head_size, 2).float() / head_size))
        self.register_buffer("cos_sin", torch.cat((freqs.cos(), freqs.sin()), -1), persistent=False)


class SplitRope(_Cache):
    """Takes query and key as [T, heads, head_size], as nano-vllm's does."""

    @torch.compile
    def forward(self, positions, query, key):
        cos, sin = self.cos_sin[positions].unsqueeze(1).chunk(2, dim=-1)
        q1, q2 = query.float().chunk(2, dim=-1)
        k1, k2 = key.float().chunk(2, dim=-1)
        q = torch.cat((q1 * cos - q2 * sin, q2 * cos + q1 * sin), -1)
        k = torch.cat((k1 * cos - k2 * sin, k2 * cos + k1 * sin), -1)
        return q.to(query.dtype), k.to(key.dtype)


class FlatRope(_Cache):
    """Takes them flat, [T, heads * head_size], as vLLM's does."""

    def __init__(self, head_size: int, max_position_embeddings: int) -> None:
        super().__init__(head_size, max_position_embeddings)
        self.head_size = head_size

    @torch.compile
    def forward(self, positions, query, key):
        cos, sin = self.cos_sin[positions].unsqueeze(1).chunk(2, dim=-1)
        q = query.view(query.shape[0], -1, self.head_size).float()
        q1, q2 = q.chunk(2, dim=-1)
        q = torch.cat((q1 * cos - q2 * sin, q2 * cos + q1 * sin), -1)
        return q.reshape(query.shape).to(query.dtype), key


class FourDims(_Cache):
    """Wants [batch, T, heads, head_size]: neither layout kbot knows."""

    @torch.compile
    def forward(self, positions, query, key):
        assert query.dim() == 4, "query must be [batch, T, heads, head_size]"
        return query, key
'''


def test_attention_tensors_take_the_layout_the_reference_accepts(tmp_path):
    # query/key are [T, heads × head_dim] in one engine and [T, heads, head_dim] in another: the
    # scan runs each emitted reference on its first case and keeps the layout it takes.
    tree = tmp_path / "engine"
    (tree / "layers").mkdir(parents=True)
    (tree / "layers" / "__init__.py").write_text("")
    (tree / "layers" / "rope.py").write_text(_ROPES)
    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "max_position_embeddings": 128,
        "torch_dtype": "float32", "vocab_size": 100, "rms_norm_eps": 1e-6,
    }))  # fmt: skip
    _, emitted = _emit(tree, tmp_path, load_model_config(str(config)))
    split, flat, four = emitted["split_rope"], emitted["flat_rope"], emitted["four_dims"]
    assert split.status == EmitStatus.EMITTED and flat.status == EmitStatus.EMITTED
    assert "query [T, 4, 16] float32 ([T, num_attention_heads, head_dim])" in split.inputs_from
    assert "key [T, 2, 16] float32 ([T, num_key_value_heads, head_dim])" in split.inputs_from
    assert "query [T, 64] float32 ([T, num_attention_heads × head_dim])" in flat.inputs_from
    # SplitRope's constructor is its base's: the scan reads the inherited __init__.
    assert "head_size=16 (head_dim for `head_size`)" in split.inputs_from
    for problem in (split, flat):
        module = import_file(problem.path)
        module.Model(*init_inputs(module))(*case_inputs(module, {"T": 3}))
    assert four.status == EmitStatus.SKIPPED and four.path is None
    assert four.message.startswith("running its first cases on the inputs --model-config ")
    assert "raised AssertionError: query must be [batch, T, heads, head_size]" in four.message
    assert "give its inputs under `inputs:` of its .kbot.yml target" in four.message
    assert not (tmp_path / "problems" / "four_dims.py").exists()


def test_names_real_repositories_use_for_the_same_sizes(tmp_path):
    # Found by bench/real_repos.py: torchtitan's silu_and_mul(gate, up) and apply_rope(xq, xk),
    # litgpt's RMSNorm(size, dim=-1, eps), lmdeploy's RotaryEmbedding(dim, base).
    from kbot.scan.model_config import scalar_value, tensor_shape

    config = load_model_config("llama-3-8b")
    assert tensor_shape(config, "gate", "silu_and_mul")[0] == ("T", 14336)
    assert tensor_shape(config, "up", "silu_and_mul")[0] == ("T", 14336)
    assert tensor_shape(config, "xq", "apply_rope")[0] == ("T", 32 * 128)
    assert tensor_shape(config, "xk", "apply_rope", "split")[0] == ("T", 8, 128)
    assert scalar_value(config, "size").value == 4096
    # lmdeploy's _v4_swiglu_impl(intermediate, swiglu_limit): the fused gate/up by its name,
    # and a number the configuration has under the argument's own name (none in the preset)
    assert tensor_shape(config, "intermediate", "_v4_swiglu_impl")[0] == ("T", 2 * 14336)
    assert tensor_shape(config, "intermediate", "layer_norm") is None
    assert scalar_value(config, "swiglu_limit", "_v4_swiglu_impl") is None
    limited = _config_file(tmp_path, {**PRESETS["llama-3-8b"], "swiglu_limit": 10.0})
    known = scalar_value(limited, "swiglu_limit", "_v4_swiglu_impl")
    assert known.value == 10.0 and known.because == "the model config's `swiglu_limit`"
    assert scalar_value(config, "dim", "RotaryEmbedding forward").value == 128
    assert scalar_value(config, "dim", "RMSNorm forward").value == 4096
    tree = tmp_path / "lit"
    tree.mkdir()
    (tree / "norms.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass RMSNorm(nn.Module):\n"
        "    def __init__(self, size: int, dim: int = -1, eps: float = 1e-6) -> None:\n"
        "        super().__init__()\n"
        "        self.weight = nn.Parameter(torch.ones(size))\n"
        "        self.dim, self.eps = dim, eps\n\n"
        "    def forward(self, x):\n"
        "        norm = torch.mean(x * x, dim=self.dim, keepdim=True)\n"
        "        return x * torch.rsqrt(norm + self.eps) * self.weight\n"
    )
    _, emitted = _emit(tree, tmp_path, config)
    (norm,) = emitted.values()
    assert norm.status == EmitStatus.EMITTED, norm.message
    assert "size=4096 (hidden_size for `size`)" in norm.inputs_from
    assert "dim=" not in norm.inputs_from  # the axis keeps its default


_ROTARY_FUNCTIONS = '''import torch


def apply_rotary_emb(x, cos, sin):
    """Half tables: cos/sin [T, 1, head_dim / 2] against x [T, heads, head_dim]."""
    half = x.shape[-1] // 2
    a, b = x[..., :half].float(), x[..., half:].float()
    out = torch.empty_like(x, dtype=torch.float32)
    out[..., :half] = a * cos - b * sin
    out[..., half:] = a * sin + b * cos
    return out.to(x.dtype)


def apply_rope(x, cos, sin):
    """Full tables: cos/sin as wide as a head."""
    half = x.size(-1) // 2
    swapped = torch.cat((x[..., half:].neg(), x[..., :half]), dim=-1)
    return torch.addcmul(x * cos, swapped, sin).to(x.dtype)


def apply_rotary_pos_emb_vision(q, k, cos, sin):
    """Tables [T, head_dim] that it unsqueezes against the heads: a [T, 1, head_dim] table runs
    here too, at every T, by broadcasting into a [T, T, heads, head_dim] product."""
    cos, sin = cos.unsqueeze(-2).float(), sin.unsqueeze(-2).float()

    def turned(x):
        half = x.shape[-1] // 2
        return torch.cat((-x[..., half:], x[..., :half]), dim=-1)

    rotated = [(x.float() * cos + turned(x.float()) * sin).to(x.dtype) for x in (q, k)]
    return rotated[0], rotated[1]


def apply_rotary_emb_5d(x, cos, sin):
    """Wants a layout kbot does not know, and says so with a bare assert."""
    assert x.dim() == 5
    return x * cos + x * sin
'''


def test_rotary_tables_take_the_layout_the_reference_accepts(tmp_path):
    tree = tmp_path / "rot"
    tree.mkdir()
    (tree / "rope.py").write_text(_ROTARY_FUNCTIONS)
    _, emitted = _emit(tree, tmp_path, load_model_config("llama-3-8b"))
    half, full = emitted["apply_rotary_emb"], emitted["apply_rope"]
    assert half.status == EmitStatus.EMITTED and full.status == EmitStatus.EMITTED
    assert "x [T, 32, 128] bfloat16 ([T, num_attention_heads, head_dim])" in half.inputs_from
    assert "cos [T, 1, 64] float32 ([T, 1, head_dim / 2]" in half.inputs_from
    assert "cos [T, 1, 128] float32 ([T, 1, head_dim]" in full.inputs_from
    # The layout whose output grows as T squared runs too: the smoke run refuses it.
    vision = emitted["apply_rotary_pos_emb_vision"]
    assert vision.status == EmitStatus.EMITTED, vision.message
    assert "q [T, 32, 128] bfloat16" in vision.inputs_from
    assert "cos [T, 128] float32 ([T, head_dim]" in vision.inputs_from
    # A bare assert says nothing: the skip quotes the line that raised.
    five = emitted["apply_rotary_emb_5d"]
    assert five.status == EmitStatus.SKIPPED
    assert "raised AssertionError at rope.py:" in five.message
    assert ": assert x.dim() == 5;" in five.message


def test_positions_take_the_hugging_face_batch_of_one_when_the_reference_needs_it(tmp_path):
    # LMDeploy's default rotary (found by bench/real_repos.py) indexes position_ids[:, None, :].
    tree = tmp_path / "hf"
    tree.mkdir()
    (tree / "rope.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass RotaryEmbedding(nn.Module):\n"
        "    def __init__(self, dim: int, base: float = 10000.0) -> None:\n"
        "        super().__init__()\n"
        "        steps = torch.arange(dim // 2, dtype=torch.float32)\n"
        "        self.inv_freq = torch.exp(steps * (-2.0 / dim) * torch.log(torch.tensor(base)))\n\n"
        "    def forward(self, x, position_ids):\n"
        "        batch, tokens = position_ids.shape  # a batch of token rows\n"
        "        angles = torch.einsum('bt,f->btf', position_ids.float(), self.inv_freq)\n"
        "        angles = torch.cat((angles, angles), dim=-1)\n"
        "        return angles.cos().to(x.dtype), angles.sin().to(x.dtype)\n"
    )
    _, emitted = _emit(tree, tmp_path, load_model_config("llama-3-8b"))
    (rope,) = emitted.values()
    assert rope.status == EmitStatus.EMITTED, rope.message
    assert "position_ids [1, T] int64 ([1, T] positions below" in rope.inputs_from
    assert "dim=128 (head_dim for `dim`)" in rope.inputs_from  # a rotary op's dim


def _config_file(folder, values):
    """A config.json of `values` in `folder`, loaded."""
    path = folder / "limited_config.json"
    path.write_text(json.dumps(values))
    return load_model_config(str(path))


def test_scan_without_emitting_says_each_targets_cases_and_their_source(engine_tree, capsys):
    # A newcomer's first `kbot scan --model-config`: the cases and where each value came from
    # are in the table and the JSON before any problem is written; without a model config,
    # what to add (the .kbot.yml key) instead.
    from kbot.cli import main

    assert main(["scan", str(engine_tree), "--model-config", "qwen3-8b"]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if " gemma_rms_norm " in line)
    assert " T=1,16,4096 " in row
    assert "target; inputs from --model-config qwen3-8b: hidden_size=4096" in row
    assert main(["scan", str(engine_tree), "--model-config", "qwen3-8b", "--json"]) == 0
    inputs = json.loads(capsys.readouterr().out)["data"]["inputs"]
    assert inputs["gemma_rms_norm"]["cases"] == [{"T": 1}, {"T": 16}, {"T": 4096}]
    assert inputs["gemma_rms_norm"]["source"].startswith(
        "inputs from --model-config qwen3-8b: hidden_size=4096"
    )
    assert main(["scan", str(engine_tree), "--json"]) == 0
    missing = json.loads(capsys.readouterr().out)["data"]["inputs"]["gemma_rms_norm"]
    assert (
        set(missing) == {"missing"}
        and "add `inputs:` to its .kbot.yml target" in missing["missing"]
    )


TENSOR_INIT_NORM = """import torch
from torch import nn


class FastRMSNorm(nn.Module):
    def __init__(self, weight: torch.Tensor, eps: float):
        super().__init__()
        self.weight = nn.Parameter(weight)
        self.variance_epsilon = eps

    @classmethod
    def load(cls, prefix, weights, eps=1e-6):
        return cls(weights.get_tensor(f"{prefix}.weight"), eps)

    def forward(self, hidden_states):
        variance = hidden_states.float().pow(2).mean(-1, keepdim=True)
        normed = hidden_states.float() * torch.rsqrt(variance + self.variance_epsilon)
        return (normed * self.weight.float()).to(hidden_states.dtype)


class TextRMSNorm(nn.Module):
    def __init__(self, weight, eps):
        super().__init__()
        self.weight = weight  # the loader's Parameter: registered as it is assigned
        self.variance_epsilon = eps

    def forward(self, hidden_states):
        variance = hidden_states.float().pow(2).mean(-1, keepdim=True)
        normed = hidden_states.float() * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * normed.to(hidden_states.dtype)
"""


def test_a_norm_built_from_its_weight_tensor_gets_one_from_the_model_config(tmp_path):
    # text-generation-inference builds its norms from loaded weights (`FastRMSNorm(weight,
    # eps)`): the problem makes a [hidden_size] weight near 1, random, in the model's dtype.
    from kbot.evaluate import EvalOptions, evaluate
    from kbot.problem import load_problem
    from kbot.propose.codegen import generate

    root = tmp_path / "server"
    root.mkdir()
    (root / "layernorm.py").write_text(TENSOR_INIT_NORM)
    options = ScanOptions(cases=({"T": 1}, {"T": 3}), model_config=load_model_config("llama-3-8b"))
    found = {e.name: e for e in emit_problems(scan(root, options), tmp_path / "problems", options)}
    assert {e.status for e in found.values()} == {EmitStatus.EMITTED}, found
    assert generate(load_problem(found["text_rms_norm"].path))  # its weight traced as a Parameter
    emitted = found["fast_rms_norm"]
    source = emitted.path.read_text()
    assert (
        "return [torch.nn.Parameter(torch.randn((4096,), dtype=torch.bfloat16) * 0.1 + 1.0, "
        "requires_grad=False), 1e-05]  # weight, eps" in source
    )
    assert "weight (a norm's weight: [hidden_size] bfloat16)" in source
    problem = load_problem(emitted.path)
    candidate = generate(problem)[0].source
    # codegen's ModelNew names the tensor in a one-line comment (its repr spans lines)
    assert "get_init_inputs() = [<tensor [4096] bfloat16>, 1e-05] builds it" in candidate
    verdict = evaluate(problem, candidate, EvalOptions(device="cpu"))
    assert verdict.accepted, [str(r) for r in verdict.reasons]


_PAIR_ROTARY = '''import torch


def apply_rotary_pairs(xq: torch.Tensor, xk: torch.Tensor, seq_dim: int, freqs_cis: torch.Tensor):
    """Each (even, odd) pair times a 2 x 2 rotation, the table laid along `seq_dim`."""
    shape = [1] * (xq.dim() - 1) + [xq.shape[-1] // 2, 2, 2]
    shape[seq_dim] = xq.shape[seq_dim]
    rotation = freqs_cis.view(shape)
    q = xq.float().unflatten(-1, (-1, 1, 2))
    k = xk.float().unflatten(-1, (-1, 1, 2))
    return (q * rotation).sum(-1).flatten(3).to(xq.dtype), (k * rotation).sum(-1).flatten(3).to(
        xk.dtype
    )
'''


def _pair_rotary_tree(tmp_path, *calls):
    tree = tmp_path / "pairs"
    tree.mkdir()
    (tree / "rope.py").write_text(_PAIR_ROTARY)
    body = "".join(f"    q, k = {call}\n" for call in calls)
    (tree / "attention.py").write_text(
        "from rope import apply_rotary_pairs\n\n\ndef attend(q, k, table, axis):\n"
        f"{body}    return q, k\n"
    )
    return tree


def test_an_argument_no_config_sizes_is_what_every_call_in_the_repository_passes(tmp_path):
    """lingua calls `apply_rotary_emb(xq, xk, 1, freq_cis)`: `seq_dim` is no model size, and
    the repository's own calls say it; its tables are 2 x 2 rotations beside batch-first heads."""
    tree = _pair_rotary_tree(tmp_path, "apply_rotary_pairs(q, k, 1, table)",
                             "apply_rotary_pairs(q, k, seq_dim=1, freqs_cis=table)")  # fmt: skip
    _, emitted = _emit(tree, tmp_path, load_model_config("llama-3-8b"))
    pairs = emitted["apply_rotary_pairs"]
    assert pairs.status == EmitStatus.EMITTED, pairs.message
    assert "seq_dim=1 (2 calls in the repository pass 1: attention.py:5, attention.py:6)" in (
        pairs.inputs_from
    )
    assert "xq [1, T, 32, 128] bfloat16" in pairs.inputs_from
    assert "freqs_cis [T, 64, 2, 2] float32" in pairs.inputs_from
    module = import_file(pairs.path)
    model = module.Model(*init_inputs(module))
    q, k = model(*case_inputs(module, {"T": 3}))
    assert q.shape == (1, 3, 32, 128) and k.shape == (1, 3, 8, 128)


def test_calls_that_pass_different_values_leave_the_argument_to_the_config(tmp_path):
    tree = _pair_rotary_tree(tmp_path, "apply_rotary_pairs(q, k, 1, table)",
                             "apply_rotary_pairs(q, k, axis, table)")  # fmt: skip
    _, emitted = _emit(tree, tmp_path, load_model_config("llama-3-8b"))
    pairs = emitted["apply_rotary_pairs"]
    assert pairs.status == EmitStatus.SKIPPED
    assert "argument `seq_dim` of apply_rotary_pairs is (the repository's calls pass 1, axis)" in (
        pairs.message
    )
