"""The comparison's order and tolerances, on hand-made tensors (no worker needed)."""

import torch

from kbot.evaluate.compare import compare_outputs, tolerance_for


def rule(out, ref, atol=None, rtol=None):
    failure = compare_outputs(tuple(out), tuple(ref), atol, rtol).failure
    return failure.rule if failure else None


def test_exact_structure():
    x = torch.randn(4, 8)
    assert rule([x], [x, x]) == "output-count"
    assert rule([x.reshape(8, 4)], [x]) == "output-shape"
    assert rule([x.double()], [x]) == "output-dtype"
    assert rule([torch.nn.Parameter(x)], [x]) == "output-type"


def test_tiny_outputs_need_the_relative_norm():
    ref = torch.softmax(torch.randn(2, 65536), dim=-1)
    assert rule([torch.zeros_like(ref)], [ref]) == "near-constant"
    noisy = ref * (1 + 1e-3 * torch.randn_like(ref))
    assert rule([noisy], [ref]) == "mismatch"  # every element within atol; the norm is not
    assert rule([ref * (1 + 1e-6 * torch.randn_like(ref))], [ref]) is None


def test_nan_where_reference_is_finite():
    ref = torch.randn(3, 3)
    out = ref.clone()
    out[1, 1] = float("nan")
    assert rule([out], [ref]) == "nan-inf"
    ref_inf = ref.clone()
    ref_inf[0, 0] = float("inf")
    assert rule([ref_inf.clone()], [ref_inf]) is None


def test_a_number_never_stands_in_for_the_references_inf_or_nan():
    """log(0) is -inf and sqrt(-1) NaN: -1.0, 1.0 or 0.0 in their place is a wrong kernel (the
    old comparison mapped both sides through nan_to_num(0, 1, -1) and took them as equal)."""
    ref = torch.randn(4, 4)
    for special, stand_in in [(float("-inf"), -1.0), (float("inf"), 1.0), (float("nan"), 0.0)]:
        with_special = ref.clone()
        with_special[2, 3] = special
        out = with_special.clone()
        out[2, 3] = stand_in
        assert rule([out], [with_special]) == "mismatch", special
        assert rule([with_special.clone()], [with_special]) is None
    both = ref.clone()
    both[0, 0], both[0, 1] = float("inf"), float("-inf")
    swapped = both.clone()
    swapped[0, 0], swapped[0, 1] = float("-inf"), float("inf")
    assert rule([swapped], [both]) == "mismatch"
    nan_payload = ref.clone()
    nan_payload[1, 1] = float("nan")
    other_nan = nan_payload.clone()
    other_nan[1, 1] = -float("nan")  # another NaN is still a NaN
    assert rule([other_nan], [nan_payload]) is None


def test_bf16_tolerance_allows_two_ulps_but_not_more():
    ref = (torch.rand(1000) + 1.0).to(torch.bfloat16)
    signs = torch.where(torch.arange(1000) % 2 == 0, 1.0, -1.0)  # both ways: no bias
    two_ulps = (ref.float() * (1 + signs * 2 * 2.0**-8)).to(torch.bfloat16)
    assert rule([two_ulps], [ref]) is None
    # every element two ulps high: within the tolerance, but every result biased one way
    all_high = (ref.float() * (1 + 2 * 2.0**-8)).to(torch.bfloat16)
    assert rule([all_high], [ref]) == "rounding-bias"
    assert rule([(ref.float() * 1.05).to(torch.bfloat16)], [ref]) == "mismatch"


def test_problem_override_and_integer_outputs():
    assert tolerance_for(torch.float32, 1e-2, None).atol == 1e-2
    assert tolerance_for(torch.float32, None, None).rtol == 1e-4
    idx = torch.arange(5)
    assert rule([idx], [idx]) is None
    assert rule([idx.flip(0)], [idx]) == "mismatch"


def test_chunked_comparison_gives_the_same_verdict_as_one_chunk(monkeypatch):
    """Large outputs are compared in chunks (bounded memory); chunking changes nothing."""
    import kbot.evaluate.compare as compare

    torch.manual_seed(0)
    ref = torch.randn(37, 53).to(torch.bfloat16)
    ref[3, 4] = float("inf")
    near = (ref.float() * (1 + 2e-3 * torch.randn(37, 53))).to(torch.bfloat16)
    near[3, 4] = float("inf")
    off = near.clone()
    off[20, 7] += 0.1
    off[30, 1] -= 0.1
    nan = near.clone()
    nan[5, 5] = float("nan")
    constant = torch.full_like(ref, 0.5)
    constant[3, 4] = float("inf")
    results = {}
    for chunk in (1 << 24, 7):
        monkeypatch.setattr(compare, "CHUNK_ELEMENTS", chunk)
        results[chunk] = [
            compare_outputs((out,), (ref,), None, None) for out in (near, off, nan, constant)
        ]
    for whole, chunked in zip(results[1 << 24], results[7]):
        assert (whole.failure is None) == (chunked.failure is None)
        if whole.failure is not None:
            assert whole.failure.rule == chunked.failure.rule
            assert whole.failure.message == chunked.failure.message
        if whole.max_abs_error == whole.max_abs_error:  # not NaN
            assert abs(whole.max_abs_error - chunked.max_abs_error) < 1e-12
            assert abs(whole.max_rel_norm_error - chunked.max_rel_norm_error) < 1e-9
    rules = [r.failure.rule if r.failure else None for r in results[7]]
    assert rules == [None, "mismatch", "nan-inf", "near-constant"]
    assert "2 of 1960 elements" in results[7][1].failure.message  # 37*53 - the inf one
