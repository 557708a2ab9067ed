"""Model's tensors loaded into ModelNew under the names ModelNew keeps them: a tensor moved
into (or out of) a submodule of the candidate's own is found when the pairing is unique."""

import torch

from kbot.evaluate.state_loading import renamed as _renamed


def test_a_weight_moved_into_a_submodule_is_paired():
    state = {"weight": torch.ones(8), "bias": torch.zeros(8)}
    ours = {"norm.weight": torch.empty(8), "bias": torch.empty(8)}
    assert list(_renamed(state, ours)) == ["norm.weight"]


def test_ambiguous_or_mismatched_pairs_stay_unloaded():
    state = {"weight": torch.ones(8)}
    two = {"a.weight": torch.empty(8), "b.weight": torch.empty(8)}
    assert _renamed(state, two) == {}
    other_shape = {"norm.weight": torch.empty(4)}
    assert _renamed(state, other_shape) == {}
    other_dtype = {"norm.weight": torch.empty(8, dtype=torch.bfloat16)}
    assert _renamed(state, other_dtype) == {}
    both_ways = {"q.weight": torch.ones(8), "k.weight": torch.ones(8)}
    assert _renamed(both_ways, {"weight": torch.empty(8)}) == {}
