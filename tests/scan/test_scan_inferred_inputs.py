"""Inputs inferred from --model-config for the argument kinds real repositories use beyond
tensors sized by the hidden width (found by bench/real_repos.py): each is accepted only where
the reference runs on it, and says where its value came from."""

from __future__ import annotations

from kbot.problem import load_problem
from kbot.problem.runtime import case_inputs, import_file, init_inputs
from kbot.scan import ScanOptions, scan
from kbot.scan.extract import EmitStatus, emit_problems
from kbot.scan.model_config import load_model_config

CASES = ({"T": 1}, {"T": 3})


def _emit(tree, tmp_path, preset="llama-3-8b"):
    options = ScanOptions(cases=CASES, model_config=load_model_config(preset))
    result = scan(tree, options)
    return {e.name: e for e in emit_problems(result, tmp_path / "problems", options)}


def _run(problem, case):
    module = import_file(problem.path)
    return module.Model(*init_inputs(module))(*case_inputs(module, case))


def test_a_token_count_argument_follows_each_cases_T(tmp_path):
    # Vision rotaries build their angle table for `seqlen` positions: a number, not a tensor.
    tree = tmp_path / "vision"
    tree.mkdir()
    (tree / "rotary.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass PatchRotaryEmbedding(nn.Module):\n"
        "    def __init__(self, dim: int, theta: float = 10000.0) -> None:\n"
        "        super().__init__()\n"
        "        exponents = torch.arange(0, dim, 2, dtype=torch.float32) / dim\n"
        "        self.register_buffer('inv_freq', theta ** -exponents, persistent=False)\n\n"
        "    def forward(self, seqlen: int) -> torch.Tensor:\n"
        "        steps = torch.arange(seqlen, dtype=self.inv_freq.dtype)\n"
        "        return steps[:, None] * self.inv_freq[None, :]\n"
    )
    (rotary,) = _emit(tree, tmp_path).values()
    assert rotary.status == EmitStatus.EMITTED, rotary.message
    assert "seqlen=T (a token count: the case's T)" in rotary.inputs_from
    assert "dim=128 (head_dim for `dim`)" in rotary.inputs_from
    source = rotary.path.read_text()
    assert "def get_inputs(T=1):\n    seqlen = T\n    return [seqlen]" in source
    assert "def forward(self, seqlen):" in source
    assert tuple(_run(rotary, {"T": 3}).shape) == (3, 64)  # one row per position


_FREQUENCY_ROTARIES = '''import torch


def apply_rotary_complex(xq, freqs_cis):
    """Each (even, odd) pair as a complex number, times a complex table [T, head_dim / 2]."""
    pairs = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    turned = pairs * freqs_cis[None, :, None, :]
    return torch.view_as_real(turned).flatten(3).type_as(xq)


def apply_rotary_pairs(x, freqs_cis):
    """The same with the table as real (cos, sin) pairs [T, head_dim / 2, 2]."""
    pairs = x.float().reshape(*x.shape[:-1], -1, 2)
    table = freqs_cis[None, :, None]
    cos, sin = table[..., 0], table[..., 1]
    even = pairs[..., 0] * cos - pairs[..., 1] * sin
    odd = pairs[..., 1] * cos + pairs[..., 0] * sin
    return torch.stack((even, odd), -1).flatten(3).type_as(x)


def apply_rotary_angles(tensor, freqs):
    """Angles [T, head_dim / 2], halves rotated (the vision towers' form)."""
    cos = freqs.cos().repeat(1, 2)[None, :, None, :]
    sin = freqs.sin().repeat(1, 2)[None, :, None, :]
    first, second = tensor.float().chunk(2, dim=-1)
    return (tensor.float() * cos + torch.cat((-second, first), -1) * sin).to(tensor.dtype)
'''


def test_frequency_tables_take_the_form_the_reference_accepts(tmp_path):
    tree = tmp_path / "freqs"
    tree.mkdir()
    (tree / "frequency_rotary.py").write_text(_FREQUENCY_ROTARIES)
    emitted = _emit(tree, tmp_path)
    complex_, pairs, angles = (
        emitted[n] for n in ("apply_rotary_complex", "apply_rotary_pairs", "apply_rotary_angles")
    )
    for problem in (complex_, pairs, angles):
        assert problem.status == EmitStatus.EMITTED, problem.message
        assert tuple(_run(problem, {"T": 3}).shape) == (1, 3, 32, 128)
    assert "xq [1, T, 32, 128] bfloat16 ([1, T, num_attention_heads, head_dim])" in (
        complex_.inputs_from
    )
    assert "freqs_cis [T, 64] complex64 ([T, head_dim / 2]: a rotary frequency table of " in (
        complex_.inputs_from
    )
    # A complex table also runs apply_rotary_pairs at T=1 (indexing [..., 0] of 64 complex numbers
    # broadcasts against one token), meaning something else: the second case refuses it.
    assert "freqs_cis [T, 64, 2] float32 ([T, head_dim / 2, 2]: " in pairs.inputs_from
    assert "freqs [T, 64] float32 ([T, head_dim / 2]: a rotary frequency table of angles)" in (
        angles.inputs_from
    )


def test_a_quantization_scale_is_positive_and_a_projection_weight_square(tmp_path):
    tree = tmp_path / "quant"
    tree.mkdir()
    (tree / "static_quant.py").write_text(
        "import torch\n\n\n@torch.compile\ndef per_tensor_quant_fp8(x, scale):\n"
        "    limit = torch.finfo(torch.float8_e4m3fn).max\n"
        "    return (x.float() / scale).clamp(-limit, limit).to(torch.float8_e4m3fn)\n\n\n"
        "@torch.compile\ndef per_token_quant_int8(x, scale):\n"
        "    return (x.float() / scale).round().clamp(-128, 127).to(torch.int8)\n\n\n"
    )
    (tree / "backends" / "default").mkdir(parents=True)
    (tree / "backends" / "default" / "projection.py").write_text(
        "import torch\n\n\nclass PlainProjectionImpl:\n"
        "    def forward(self, x, weight, bias=None):\n"
        "        return torch.nn.functional.linear(x, weight, bias)\n"
    )
    emitted = _emit(tree, tmp_path)
    tensor, token, linear = (emitted[n] for n in ("per_tensor_quant_fp8", "per_token_quant_int8",
                                                  "plain_projection_impl"))  # fmt: skip
    for problem in (tensor, token, linear):
        assert problem.status == EmitStatus.EMITTED, problem.message
    assert "scale [1] float32 ([1]: a per-tensor quantization scale, positive)" in (
        tensor.inputs_from
    )
    assert "scale [T, 1] float32 ([T, 1]: a per-token quantization scale" in token.inputs_from
    module = import_file(token.path)
    _, scale = case_inputs(module, {"T": 3})
    assert scale.shape == (3, 1) and bool((scale > 0).all())  # never a sign flip or a 1/0
    assert "weight [4096, 4096] bfloat16 ([hidden_size, hidden_size]" in linear.inputs_from
    assert tuple(_run(linear, {"T": 3}).shape) == (3, 4096)


# A rotary module that indexes a cos/sin table of its own and takes only the tensor it rotates,
# [batch, seq, heads, head_dim], as training code lays it out; its constructor skips the table
# on the meta device (building it there would be wasted work), and forward refuses to run then.
_OWN_TABLE_ROTARY = """import torch
from torch import nn


class CachedRoPE(nn.Module):
    def __init__(self, head_dim: int, max_seq_len: int = 2048, base: float = 10000.0):
        super().__init__()
        self.ready = False
        inv = base ** -(torch.arange(0, head_dim, 2).float() / head_dim)
        self.register_buffer("inv", inv, persistent=False)  # kept, never read by forward
        if inv.is_meta:
            return
        angles = torch.outer(torch.arange(max_seq_len).float(), inv)
        self.register_buffer("table", torch.stack([angles.cos(), angles.sin()], -1), persistent=False)
        self.ready = True

    def forward(self, x: torch.Tensor, *, positions=None) -> torch.Tensor:
        if not self.ready:
            raise RuntimeError("the table was never built")
        table = self.table[: x.size(1)] if positions is None else self.table[positions]
        pairs = x.float().unflatten(-1, (-1, 2))
        table = table[None, :, None]
        cos, sin = table[..., 0], table[..., 1]
        first, second = pairs[..., 0], pairs[..., 1]
        turned = torch.stack([first * cos - second * sin, second * cos + first * sin], -1)
        return turned.flatten(-2).type_as(x)
"""


def test_a_rotary_op_with_a_table_of_its_own_rotates_a_per_head_tensor(tmp_path):
    from kbot.propose.codegen.proposer import generate

    tree = tmp_path / "own_table"
    tree.mkdir()
    (tree / "rope.py").write_text(_OWN_TABLE_ROTARY)
    (rotary,) = _emit(tree, tmp_path).values()
    assert rotary.status == EmitStatus.EMITTED, rotary.message
    assert "x [1, T, 32, 128] bfloat16 ([1, T, num_attention_heads, head_dim])" in (
        rotary.inputs_from
    )
    assert tuple(_run(rotary, {"T": 3}).shape) == (1, 3, 32, 128)
    # codegen traces on meta, where the constructor built no table: Model is then built on
    # the CPU and its state moved to meta, for the trace and for ModelNew's constructor; no
    # size is read off the buffer forward never reads (the launcher is not passed it)
    from kbot.evaluate import EvalOptions, Evaluator

    problem = load_problem(rotary.path)
    first = generate(problem)[0].source
    assert "inv.shape" not in first and "self.register_buffer('table'" in first
    options = EvalOptions(device="cpu", seeds=5, sandbox="off", allow_unsandboxed=True)
    with Evaluator(options) as evaluator:
        verdict = evaluator.evaluate(problem, first)
    assert verdict.accepted, verdict.reasons


def test_a_config_field_the_model_config_lacks_is_a_skip_naming_the_init_key(tmp_path):
    tree = tmp_path / "fields"
    tree.mkdir()
    (tree / "norm.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass ScaledRMSNorm(nn.Module):\n"
        "    def __init__(self, config):\n        super().__init__()\n"
        "        self.eps = config.norm_epsilon\n"
        "        self.weight = nn.Parameter(torch.ones(config.hidden_size))\n\n"
        "    def forward(self, x):\n"
        "        return x * (x.pow(2).mean(-1, keepdim=True) + self.eps).rsqrt() * self.weight\n"
    )
    (norm,) = _emit(tree, tmp_path).values()
    assert norm.status == EmitStatus.SKIPPED
    assert norm.message.endswith(
        "--model-config has no `norm_epsilon`; give the config's fields under "
        "`init: {config: {norm_epsilon: ...}}` of its .kbot.yml target"
    ), norm.message


def test_half_width_tables_beside_a_batch_first_tensor(tmp_path):
    # Training code's rotary: x [batch, seq, heads, head_dim] against cos/sin of half the head
    # width, [1, seq, 1, head_dim / 2]; [T, 1, head_dim / 2] broadcasts as such a table.
    tree = tmp_path / "half"
    tree.mkdir()
    (tree / "rotate.py").write_text(
        "import torch\n\n\ndef apply_rotary_halves(x, cos, sin):\n    assert x.dim() == 4\n"
        "    half = x.size(-1) // 2\n    a, b = x[..., :half], x[..., half:]\n"
        "    return torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)\n"
    )
    (rotary,) = _emit(tree, tmp_path).values()
    assert rotary.status == EmitStatus.EMITTED, rotary.message
    assert "x [1, T, 32, 128] bfloat16 ([1, T, num_attention_heads, head_dim])" in (
        rotary.inputs_from
    )
    assert "cos [T, 1, 64] float32 ([T, 1, head_dim / 2]: a rotary cos/sin table)" in (
        rotary.inputs_from
    )
    assert tuple(_run(rotary, {"T": 3}).shape) == (1, 3, 32, 128)


def test_a_rotary_op_that_reshapes_a_flat_tensor_itself_still_runs(tmp_path):
    # x [T, heads × head_dim], split into heads inside: the per-head layouts refuse it, and the
    # flat one every op without a table got before comes last
    tree = tmp_path / "flat"
    tree.mkdir()
    (tree / "rope.py").write_text(
        "import torch\nfrom torch import nn\n\n\nclass FlatRotary(nn.Module):\n"
        "    def __init__(self, head_dim: int):\n        super().__init__()\n"
        "        self.head_dim = head_dim\n\n"
        "    def forward(self, x):\n        assert x.dim() == 2\n"
        "        heads = x.unflatten(-1, (-1, self.head_dim))\n"
        "        a, b = heads.chunk(2, dim=-1)\n"
        "        return torch.cat([-b, a], dim=-1).flatten(-2)\n"
    )
    (rotary,) = _emit(tree, tmp_path).values()
    assert rotary.status == EmitStatus.EMITTED, rotary.message
    assert "x [T, 4096] bfloat16" in rotary.inputs_from
