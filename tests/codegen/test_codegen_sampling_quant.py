"""Sampling, quantization and lookup patterns of serving code, written fresh (not taken from a
repository): a min-p filter whose argument is named like the problem file, an int8 per-token
quantization (`torch.round`, a float-to-int cast), a causal mask built in forward and inverted
with `~`, and an embedding lookup. Each is lowered, and the candidates are accepted by the
evaluator."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest
import torch

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem
from kbot.propose.codegen import generate
from kbot.propose.codegen.candidate import op_name
from kbot.propose.codegen.ops import HELPERS
from kbot.propose.codegen.trace import Unsupported

HEAD = """
import torch
import torch.nn as nn
import torch.nn.functional as F

"""

MIN_P = (
    HEAD
    + """
class Model(nn.Module):
    def forward(self, logits, min_p):
        probs = torch.softmax(logits, dim=-1)
        top = probs.amax(dim=-1, keepdim=True)
        return logits.masked_fill(probs < min_p.unsqueeze(1) * top, float("-inf"))


CASES = [dict(T=1), dict(T=3)]


def get_inputs(T):
    return [torch.randn(T, 700), torch.rand(T) * 0.2]


def get_init_inputs():
    return []
"""
)

INT8_PER_TOKEN = (
    HEAD
    + """
class Model(nn.Module):
    def forward(self, x):
        xf = x.float()
        scale = xf.abs().amax(dim=-1, keepdim=True).clamp(min=1e-10) / 127.0
        q = torch.round(xf / scale).clamp(-128, 127).to(torch.int8)
        return q, scale


CASES = [dict(T=1), dict(T=4)]


def get_inputs(T):
    return [torch.randn(T, 320, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
"""
)

CAUSAL_MASK = (
    HEAD
    + """
class Model(nn.Module):
    def __init__(self, scale):
        super().__init__()
        self.scale = scale

    def forward(self, scores):
        S = scores.shape[-1]
        mask = torch.ones(S, S, dtype=torch.bool, device=scores.device).tril()
        s = (scores.float() * self.scale).masked_fill(~mask, float("-inf"))
        return torch.softmax(s, dim=-1).to(scores.dtype)


CASES = [dict(S=8), dict(S=21)]


def get_inputs(S):
    return [torch.randn(2, S, S, dtype=torch.float16)]


def get_init_inputs():
    return [0.125]
"""
)

EMBEDDING = (
    HEAD
    + """
class Model(nn.Module):
    def __init__(self, vocab, hidden):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(vocab, hidden, dtype=torch.bfloat16))
        self.scale = hidden ** 0.5

    def forward(self, ids):
        return F.embedding(ids, self.weight) * self.scale


CASES = [dict(T=1), dict(T=6)]


def get_inputs(T):
    return [torch.randint(0, 500, (T,))]


def get_init_inputs():
    return [500, 192]
"""
)

INT_NOT = (
    HEAD
    + """
class Model(nn.Module):
    def forward(self, ids, x):
        return torch.where((~ids) > -5, x, 0.0)


def get_inputs():
    return [torch.randint(0, 9, (4, 16)), torch.randn(4, 16)]


def get_init_inputs():
    return []
"""
)


@pytest.fixture(scope="module")
def evaluator():
    with Evaluator(EvalOptions(device="cpu")) as ev:
        yield ev


def _problem(tmp_path: Path, name: str, text: str):
    path = tmp_path / f"{name}.py"
    path.write_text(text)
    return load_problem(path)


def _accepted(evaluator, spec, count: int = 2) -> list[str]:
    sources = []
    for candidate in generate(spec)[:count]:
        verdict = evaluator.evaluate(spec, candidate.source)
        assert verdict.accepted, (candidate.note, [str(r) for r in verdict.reasons])
        sources.append(candidate.source)
    return sources


def test_launcher_is_not_shadowed_by_an_argument_named_like_the_problem(tmp_path, evaluator):
    # min_p.py's forward takes `min_p`: a launcher named min_p would be the tensor inside
    # ModelNew.forward, and the candidate would never launch a kernel.
    spec = _problem(tmp_path, "min_p", MIN_P)
    assert op_name(spec) == "min_p_op"
    source = _accepted(evaluator, spec)[0]
    assert "return min_p_op(logits, min_p)" in source


@pytest.mark.parametrize("name", ["sum", "torch", "class", "op_rmsnorm"])
def test_op_name_avoids_builtins_module_names_and_keywords(tmp_path, name):
    spec = _problem(tmp_path, name, INT_NOT)
    expected = name if name == "op_rmsnorm" else f"{name}_op"
    assert op_name(spec) == expected


def test_int8_quantization_rounds_half_to_even_with_exact_division(tmp_path, evaluator):
    source = _accepted(evaluator, _problem(tmp_path, "int8_per_token", INT8_PER_TOKEN))[0]
    assert "_round_half_even(" in source
    # the quotient is rounded to an int8 grid: division as torch does it, not a GPU reciprocal
    assert "tl.div_rn(" in source


def test_causal_mask_inverted_with_bitwise_not(tmp_path, evaluator):
    _accepted(evaluator, _problem(tmp_path, "causal_softmax", CAUSAL_MASK))


def test_embedding_lookup_is_a_gather(tmp_path, evaluator):
    source = _accepted(evaluator, _problem(tmp_path, "scaled_embedding", EMBEDDING))[0]
    # the table is read at the loaded id: one row of the weight per token, nothing copied first
    assert re.search(r"weight_ptr \+ \w+_index \* weight_stride0", source)


def test_bitwise_not_of_integers_is_refused_with_a_reason(tmp_path):
    with pytest.raises(Unsupported, match="bitwise_not of integers"):
        generate(_problem(tmp_path, "int_not", INT_NOT))


def test_round_half_even_helper_matches_torch(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    module_path = tmp_path / "round_helper.py"
    module_path.write_text(
        "import triton\nimport triton.language as tl\n\n\n"
        + HELPERS["_round_half_even"]
        + """

@triton.jit
def _kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, _round_half_even(tl.load(x_ptr + offs, mask=mask)), mask=mask)
"""
    )
    spec = importlib.util.spec_from_file_location("round_helper", module_path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["round_helper"] = module
    try:
        spec.loader.exec_module(module)
        below_half = float(torch.tensor(0.5).nextafter(torch.tensor(0.0)))
        values = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, below_half, -below_half, 2.0**23 + 1]
        values += [2.0**24 + 2, 1e30, -1e30, 0.0, -0.0, 3.7, -3.7, float("inf"), float("-inf")]
        x = torch.tensor(values + [float("nan")], dtype=torch.float32)
        out = torch.empty_like(x)
        module._kernel[(1,)](x, out, x.numel(), BLOCK=32)
    finally:
        sys.modules.pop("round_helper", None)
    expected = torch.round(x)
    assert torch.equal(out[:-1], expected[:-1]), (out, expected)
    assert torch.isnan(out[-1])


ARG_REDUCTION = (
    HEAD
    + """
class Model(nn.Module):
    def forward(self, x):
        return torch.{kind}(x, dim=-1)


CASES = [dict(T=1), dict(T=7)]


def get_inputs(T):
    return [torch.randn(T, 5000)]


def get_init_inputs():
    return []
"""
)


def _edge_rows(kind: str) -> torch.Tensor:
    """Rows whose answer depends on the rules torch keeps: the first of equal bests (in one
    chunk, across chunks, at a chunk's first column), a NaN before or after the best value, two
    NaNs, and rows of nothing but an infinity."""
    x = torch.randn(7, 5000).abs() * (1 if kind == "argmin" else -1)
    best = -1.0 if kind == "argmin" else 1.0
    x[0, [4099, 17, 2048]] = 3 * best  # equal bests: 17 is the first
    x[1, [4096, 4999]] = 3 * best  # across chunks, at a chunk's first column
    x[2, 3000] = 3 * best
    x[2, 4000] = float("nan")  # a NaN after the best value: the NaN
    x[3, [2500, 90]] = float("nan")  # two NaNs: the first
    x[3, 10] = 3 * best
    x[4] = float("-inf") if kind == "argmax" else float("inf")  # only the neutral value: 0
    x[5] = float("inf") if kind == "argmax" else float("-inf")  # all equal bests: 0
    x[6, 4999] = 3 * best  # the last column
    return x


@pytest.mark.parametrize("kind", ["argmax", "argmin"])
def test_arg_reductions_keep_torchs_ties_and_nans(kind, tmp_path, load_candidate, device):
    spec = _problem(tmp_path, f"wide_{kind}", ARG_REDUCTION.replace("{kind}", kind))
    candidates = generate(spec)
    looped = [c for c in candidates if "looped" in c.note]
    assert looped and len(looped) < len(candidates), [c.note for c in candidates]
    x = _edge_rows(kind).to(device)
    expected = getattr(torch, kind)(x, dim=-1)
    assert expected.tolist()[:6] == [17, 4096, 4000, 90, 0, 0]
    for candidate in candidates:  # one pass and looped
        got = load_candidate(candidate.source).ModelNew().to(device)(x)
        assert got.dtype == torch.int64
        assert torch.equal(got, expected), (candidate.note, got.tolist(), expected.tolist())
