"""Emitted kernels read sizes at launch: a candidate traced on one set of shapes is correct on
shapes it never saw (other token counts, hidden sizes and vocabulary widths)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kbot.problem import load_problem
from kbot.problem.runtime import import_file
from kbot.propose.codegen import generate

PROBLEMS = Path(__file__).parent / "problems"


@pytest.mark.parametrize(
    ("problem", "inputs"),
    [
        ("gated_silu_chunk", lambda: [torch.randn(11, 2 * 100, dtype=torch.bfloat16)]),
        ("gated_gelu_interleaved", lambda: [torch.randn(2, 5, 2 * 24)]),
        ("log_softmax_vocab", lambda: [torch.randn(3, 33001, dtype=torch.bfloat16) * 3]),
        (
            "rope_neox_positions",
            lambda: [torch.randint(0, 64, (11,)), torch.randn(11, 2 * 32, dtype=torch.bfloat16)],
        ),
        ("reduce_middle_dim", lambda: [torch.randn(3, 6, 50)]),
    ],
)
def test_every_variant_is_correct_on_unseen_shapes(problem, inputs, load_candidate, device):
    path = PROBLEMS / f"{problem}.py"
    reference = import_file(path)
    torch.manual_seed(0)
    args = [a.to(device) for a in inputs()]
    model = reference.Model(*reference.get_init_inputs()).to(device)
    with torch.no_grad():
        expected = model(*args)
    candidates = generate(load_problem(path))
    assert candidates
    for candidate in candidates:
        module = load_candidate(candidate.source)
        new = module.ModelNew(*reference.get_init_inputs())
        new.load_state_dict(model.state_dict())
        new = new.to(device)
        with torch.no_grad():
            got = new(*args)
        assert got.shape == expected.shape and got.dtype == expected.dtype
        tol = 2e-2 if expected.dtype == torch.bfloat16 else 1e-4
        torch.testing.assert_close(got.float(), expected.float(), atol=tol, rtol=tol)
