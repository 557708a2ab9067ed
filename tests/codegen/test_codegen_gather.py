"""`src.gather(dim, index)` lowered as an index rewrite (views.py): the output element reads
src with its `dim` index replaced by the loaded index, so a gather of a computed value (a
log_softmax, a softmax) evaluates that value at the gathered column only. Per-row
cross-entropy, a serving engine's token logprobs and a MoE router's chosen weights: every
variant matches eager on the CPU interpreter."""

from __future__ import annotations

from pathlib import Path

import pytest

from kbot.problem import load_problem
from kbot.propose.codegen import generate

PROBLEMS = Path(__file__).parent / "problems"


@pytest.mark.parametrize(
    "name", ["gather_cross_entropy_rows", "gather_token_logprobs", "gather_router_weights"]
)
def test_every_variant_of_a_gather_matches_eager(name, compare):
    path = PROBLEMS / f"{name}.py"
    candidates = generate(load_problem(path))
    assert candidates
    for candidate in candidates:
        assert "gather" in candidate.source  # the source line quoted beside its lowering
        assert compare(path, candidate.source) == 4, candidate.note


def test_a_per_row_cross_entropy_is_one_row_reduction():
    """The target's column is read once per row inside the log-sum-exp kernel: no buffer of
    the whole log_softmax, no second kernel."""
    (first, *_) = generate(load_problem(PROBLEMS / "gather_cross_entropy_rows.py"))
    assert first.params["schedule"] == "row_reduction" and "stages" not in first.note
    assert first.source.count("@triton.jit") == 1
