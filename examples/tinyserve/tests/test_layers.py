"""Each layer against a float64 formula written independently of the layer's code."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from tinyserve.layers.activation import GeluAndMul, SiluAndMul, quick_gelu
from tinyserve.layers.logits import fused_add_scale, logit_softcap
from tinyserve.layers.norm import RMSNorm
from tinyserve.layers.rotary import RotaryEmbedding
from tinyserve.layers.sampler import Sampler

# bf16 keeps 8 mantissa bits: one rounding of the output is 2^-8 relative.
TOLERANCES = {torch.float32: (1e-5, 1e-5), torch.bfloat16: (2e-2, 1.6e-2)}
DTYPES = [torch.float32, torch.bfloat16]


def _close(actual: torch.Tensor, expected: torch.Tensor) -> None:
    atol, rtol = TOLERANCES[actual.dtype]
    torch.testing.assert_close(actual.double(), expected.double(), atol=atol, rtol=rtol)


@pytest.fixture(autouse=True)
def _seed() -> None:
    torch.manual_seed(0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("num_tokens", [1, 7, 33])
def test_rmsnorm_matches_formula(dtype: torch.dtype, num_tokens: int) -> None:
    norm = RMSNorm(hidden_size=96, eps=1e-6)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(96))
    x = (torch.randn(num_tokens, 96) * 3).to(dtype)
    x64 = x.double()
    expected = x64 / torch.sqrt(x64.pow(2).mean(-1, keepdim=True) + 1e-6) * norm.weight.double()
    out = norm(x)
    assert out.dtype == dtype and out.shape == x.shape
    _close(out, expected)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rmsnorm_with_residual_returns_the_sum_as_the_new_residual(dtype: torch.dtype) -> None:
    norm = RMSNorm(hidden_size=64, eps=1e-5)
    x, residual = torch.randn(5, 64).to(dtype), torch.randn(5, 64).to(dtype)
    out, new_residual = norm(x, residual)
    total = x.double() + residual.double()
    _close(new_residual, total)
    expected = total / torch.sqrt(total.pow(2).mean(-1, keepdim=True) + 1e-5)
    _close(out, expected)
    assert out.dtype == new_residual.dtype == dtype


def test_rmsnorm_cuda_path_is_the_reference_until_a_kernel_exists() -> None:
    norm = RMSNorm(hidden_size=32)
    x, residual = torch.randn(3, 32), torch.randn(3, 32)
    torch.testing.assert_close(norm.forward_cuda(x, residual), norm.forward_native(x, residual))


@pytest.mark.parametrize("dtype", DTYPES)
def test_silu_and_mul_matches_formula(dtype: torch.dtype) -> None:
    x = torch.randn(4, 2 * 80).to(dtype)
    gate, up = x.double()[:, :80], x.double()[:, 80:]
    out = SiluAndMul()(x)
    assert out.shape == (4, 80)
    _close(out, gate / (1 + torch.exp(-gate)) * up)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1, 2 * 64), (3, 5, 2 * 100)])
def test_silu_and_mul_triton_fast_path_matches_reference(dtype, shape) -> None:
    pytest.importorskip("triton")
    from tinyserve.layers.triton_kernels import silu_and_mul

    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(*shape, device=device).to(dtype)
    layer = SiluAndMul()
    out = silu_and_mul(x)
    assert out.shape == (*shape[:-1], shape[-1] // 2) and out.dtype == dtype
    _close(out.cpu(), layer.forward_native(x.double()).cpu())


@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_tanh_and_mul_matches_formula(dtype: torch.dtype) -> None:
    x = (torch.randn(6, 2 * 48) * 2).to(dtype)
    gate, up = x.double()[:, :48], x.double()[:, 48:]
    inner = math.sqrt(2 / math.pi) * (gate + 0.044715 * gate.pow(3))
    _close(GeluAndMul(approximate="tanh")(x), 0.5 * gate * (1 + torch.tanh(inner)) * up)


def test_gelu_exact_and_mul_uses_erf() -> None:
    x = torch.randn(2, 2 * 16, dtype=torch.float64)
    gate, up = x[:, :16], x[:, 16:]
    expected = 0.5 * gate * (1 + torch.erf(gate / math.sqrt(2))) * up
    torch.testing.assert_close(GeluAndMul(approximate="none")(x), expected)


def test_gelu_and_mul_rejects_unknown_approximation() -> None:
    with pytest.raises(ValueError, match="approximate"):
        GeluAndMul(approximate="fast")


def test_quick_gelu_matches_formula() -> None:
    x = torch.randn(10, 24, dtype=torch.float64)
    torch.testing.assert_close(quick_gelu(x), x / (1 + torch.exp(-1.702 * x)))


def _rope_reference(x: torch.Tensor, positions: torch.Tensor, head_size: int, rotary_dim: int):
    """NeoX RoPE as complex multiplication: feature pair (i, i + r/2) is one complex number."""
    base = 10000.0
    tokens = x.shape[0]
    heads = x.double().view(tokens, -1, head_size)
    half = rotary_dim // 2
    pairs = torch.complex(heads[..., :half], heads[..., half:rotary_dim])
    inv_freq = base ** (-torch.arange(half, dtype=torch.float64) * 2 / rotary_dim)
    angles = positions.double()[:, None, None] * inv_freq
    rotated = pairs * torch.polar(torch.ones_like(angles), angles)
    out = torch.cat((rotated.real, rotated.imag, heads[..., rotary_dim:]), dim=-1)
    return out.reshape(tokens, -1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rotary_dim", [64, 32])
def test_rotary_matches_complex_reference(dtype: torch.dtype, rotary_dim: int) -> None:
    rope = RotaryEmbedding(head_size=64, rotary_dim=rotary_dim, max_position=512)
    positions = torch.tensor([0, 3, 511, 100, 7])
    query, key = torch.randn(5, 4 * 64).to(dtype), torch.randn(5, 2 * 64).to(dtype)
    q_out, k_out = rope(positions, query, key)
    _close(q_out, _rope_reference(query, positions, 64, rotary_dim))
    _close(k_out, _rope_reference(key, positions, 64, rotary_dim))
    assert q_out.shape == query.shape and k_out.shape == key.shape
    # Position 0 is the identity rotation.
    torch.testing.assert_close(q_out[0], query[0])


def test_rotary_scores_depend_only_on_relative_position() -> None:
    rope = RotaryEmbedding(head_size=32, rotary_dim=32, max_position=64)
    q, k = torch.randn(1, 32, dtype=torch.float64), torch.randn(1, 32, dtype=torch.float64)

    def score(q_pos: int, k_pos: int) -> torch.Tensor:
        q_rot, _ = rope(torch.tensor([q_pos]), q, q)
        _, k_rot = rope(torch.tensor([k_pos]), k, k)
        return (q_rot * k_rot).sum()

    # The cache holds float32 cos/sin, so scores agree to float32 rounding, not float64.
    torch.testing.assert_close(score(10, 4), score(30, 24), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(score(5, 5), (q * k).sum(), atol=1e-5, rtol=1e-5)


def test_rotary_rejects_odd_rotary_dim() -> None:
    with pytest.raises(ValueError, match="rotary_dim"):
        RotaryEmbedding(head_size=64, rotary_dim=33)


@pytest.mark.parametrize("dtype", DTYPES)
def test_logit_softcap_is_bounded_and_near_identity_for_small_logits(dtype) -> None:
    logits = (torch.randn(3, 1000) * 100).to(dtype)
    out = logit_softcap(logits, cap=30.0)
    assert out.dtype == dtype
    assert out.abs().max().item() <= 30.0
    _close(out, torch.tanh(logits.double() / 30.0) * 30.0)
    small = torch.tensor([0.01, -0.02, 0.0], dtype=torch.float64)
    torch.testing.assert_close(logit_softcap(small), small, atol=1e-6, rtol=1e-6)


def test_fused_add_scale_matches_formula() -> None:
    x, bias = torch.randn(4, 8), torch.randn(8)
    torch.testing.assert_close(fused_add_scale(x, bias, scale=0.5), (x + bias) * 0.5)


def test_sampler_draws_tokens_with_softmax_probabilities() -> None:
    logits = torch.log(torch.tensor([0.1, 0.2, 0.3, 0.4])).repeat(20000, 1)
    tokens = Sampler()(logits, torch.ones(20000))
    assert tokens.dtype == torch.int64
    frequencies = torch.bincount(tokens, minlength=4).double() / 20000
    # 4 standard deviations of a binomial frequency at n = 20000 is at most 0.015.
    torch.testing.assert_close(
        frequencies, torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64), atol=0.015, rtol=0
    )


def test_sampler_temperature_zero_is_greedy_and_rows_are_independent() -> None:
    logits = torch.randn(6, 50)
    temperatures = torch.tensor([0.0, 1.0, 0.0, 0.7, 0.0, 2.0])
    tokens = Sampler()(logits, temperatures)
    greedy_rows = temperatures == 0
    assert torch.equal(tokens[greedy_rows], logits.argmax(-1)[greedy_rows])
    assert ((tokens >= 0) & (tokens < 50)).all()


def test_sampler_is_stochastic() -> None:
    logits = torch.zeros(64, 1000)
    sampler = Sampler()
    assert not torch.equal(sampler(logits, torch.ones(64)), sampler(logits, torch.ones(64)))


def test_layers_dispatch_cpu_tensors_to_the_native_path() -> None:
    x = torch.randn(2, 16)
    torch.testing.assert_close(SiluAndMul()(x), F.silu(x[:, :8]) * x[:, 8:])


def test_bench_workload_runs_every_layer_at_small_sizes() -> None:
    from tinyserve.bench import ModelShape, run

    shape = ModelShape(
        hidden_size=64,
        num_heads=2,
        num_kv_heads=1,
        head_size=32,
        intermediate_size=48,
        vocab_size=100,
        max_position=64,
    )
    tokens = run(token_counts=(1, 3), steps=1, shape=shape, device="cpu")
    assert sorted(tokens) == [1, 3]
    for num_tokens, sampled in tokens.items():
        assert sampled.shape == (num_tokens,) and sampled.dtype == torch.int64
        assert ((sampled >= 0) & (sampled < 100)).all()
