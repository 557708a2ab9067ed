"""Ways serving code writes its rotary ops, found by running codegen over public repositories'
emitted problems (bench/real_repos.py): autocast switched off for the tensors' own device, a
frequency table doubled with `repeat`, rotate-half written by filling a fresh buffer slice by
slice, and a scaling factor's offset from one. Each is lowered, and the candidates are accepted
by the evaluator on problems of our own; the shapes of these patterns that codegen cannot write
are still refused with a reason."""

from __future__ import annotations

import pytest
import torch

from kbot.evaluate import EvalOptions, Evaluator
from kbot.problem import load_problem
from kbot.propose.codegen import generate
from kbot.propose.codegen.trace import Unsupported, trace_problem

HEAD = """
import torch
from torch import nn

"""

AUTOCAST_OFF_AND_REPEAT = (
    HEAD
    + """
class Model(nn.Module):
    def __init__(self, dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / base ** (torch.arange(0, dim, 2).float() / dim)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, x, position_ids):
        device_type = x.device.type
        with torch.autocast(device_type=device_type, enabled=False):
            freqs = position_ids.float()[:, :, None] * self.inv_freq[None, None, :]
            emb = freqs.repeat(1, 1, 2)
            return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


CASES = [dict(T=1), dict(T=5)]


def get_inputs(T):
    return [torch.randn(T, 64), torch.randint(0, 4096, (1, T))]


def get_init_inputs():
    return [32]
"""
)

AUTOCAST_ON = AUTOCAST_OFF_AND_REPEAT.replace("enabled=False", "enabled=True")

FILLED_BY_SLICES = (
    HEAD
    + """
class Model(nn.Module):
    def forward(self, x):
        half = x.shape[-1] // 2
        x1 = x[..., :half]
        x2 = x[..., half:]
        out = torch.empty_like(x)
        out[..., :half] = -x2
        out[..., half:] = x1
        return out


CASES = [dict(T=1), dict(T=3)]


def get_inputs(T):
    return [torch.randn(T, 4, 48, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
"""
)

# Half of the buffer is never written: its values are whatever memory held.
HALF_FILLED = FILLED_BY_SLICES.replace("        out[..., half:] = x1\n", "")
# The buffer is read before the second piece is written.
READ_BEFORE_FILLED = FILLED_BY_SLICES.replace(
    "        out[..., half:] = x1\n        return out",
    "        early = out * 2\n        out[..., half:] = x1\n        return out + early",
)

NTK_OFFSET = (
    HEAD
    + """
class Model(nn.Module):
    def __init__(self, scaling_factor=1.0):
        super().__init__()
        self.scaling_factor = scaling_factor

    def forward(self, t):
        return self.scaling_factor * t - (self.scaling_factor - 1)


CASES = [dict(T=1), dict(T=6)]


def get_inputs(T):
    return [torch.rand(T, 40) * 3]


def get_init_inputs():
    return [1.0]
"""
)


def _problem(tmp_path, name, text):
    path = tmp_path / f"{name}.py"
    path.write_text(text.lstrip())
    return load_problem(path)


def _all_accepted(spec, limit=2):
    candidates = generate(spec, limit=limit)
    assert candidates
    with Evaluator(EvalOptions(device="cpu")) as evaluator:
        for candidate in candidates:
            verdict = evaluator.evaluate(spec, candidate.source)
            assert verdict.accepted, (candidate.note, [str(r) for r in verdict.reasons])


def test_autocast_off_and_a_repeated_table_are_lowered_and_accepted(tmp_path):
    spec = _problem(tmp_path, "rotary_cache", AUTOCAST_OFF_AND_REPEAT)
    targets = {str(n.target) for n in trace_problem(spec).graph.nodes}
    assert "aten.repeat.default" in targets
    _all_accepted(spec)


def test_autocast_switched_on_is_refused_with_its_reason(tmp_path):
    with pytest.raises(Unsupported, match="autocast on"):
        generate(_problem(tmp_path, "autocast_on", AUTOCAST_ON))


def test_a_buffer_filled_slice_by_slice_is_the_concatenation_of_its_pieces(tmp_path):
    spec = _problem(tmp_path, "rotate_half", FILLED_BY_SLICES)
    targets = [str(n.target) for n in trace_problem(spec).graph.nodes if n.op == "call_function"]
    assert "aten.cat.default" in targets
    assert not [t for t in targets if "copy_" in t or "empty" in t]
    _all_accepted(spec)


@pytest.mark.parametrize("text", [HALF_FILLED, READ_BEFORE_FILLED], ids=["half", "read_early"])
def test_a_buffer_not_filled_before_it_is_read_stays_refused(tmp_path, text):
    spec = _problem(tmp_path, "partly_filled", text)
    targets = [str(n.target) for n in trace_problem(spec).graph.nodes if n.op == "call_function"]
    assert any("copy_" in t for t in targets)  # left as written: the classifier refuses it
    with pytest.raises(Unsupported):
        generate(spec)


def test_a_scaling_factors_offset_from_one_follows_the_attribute(tmp_path, load_candidate):
    spec = _problem(tmp_path, "ntk_offset", NTK_OFFSET)
    (candidate, *_) = generate(spec, limit=1)
    assert "scaling_factor - 1.0" in candidate.source
    module = load_candidate(candidate.source)
    t = torch.rand(3, 40) * 3
    for factor in (1.0, 2.5, 0.25):  # another instance of the class: the kernel follows it
        expected = factor * t - (factor - 1)
        got = module.ModelNew(factor)(t)
        torch.testing.assert_close(got, expected)
