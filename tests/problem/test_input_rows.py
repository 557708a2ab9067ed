"""The rows real inputs have that the distributions write (kbot.problem.input_rows), each the
input a cheat of red-team round thirteen was wrong on while the judge never drew it."""

import torch

from kbot.problem import input_rows
from kbot.problem.runtime import apply_distribution


def _generator(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def test_a_signed_input_has_rows_moved_down_as_well_as_up():
    x = torch.randn(64, 32)
    before = x.clone()
    input_rows.outlier_rows(x, _generator(1))
    moved = (x - before).abs().amin(dim=1) > 1
    shifts = (x - before)[moved].mean(dim=1)
    assert int(moved.sum()) == 12
    assert int((shifts > 0).sum()) == 6 and int((shifts < 0).sum()) == 6  # logits - C (c03)


def test_zeroed_rows_keep_negative_zero_where_the_value_was_negative():
    x = torch.randn(64, 32)
    before = x.clone()
    input_rows.outlier_rows(x, _generator(2))
    zero_rows = (x == 0).all(dim=1)
    assert int(zero_rows.sum()) == 6
    negative_zero = torch.signbit(x[zero_rows])
    assert bool(negative_zero.any())  # h * mask: -0.0 (c11 tested a row's bits for zero)
    assert torch.equal(negative_zero, before[zero_rows] < 0)


def test_grid_rows_of_a_signed_input_take_every_kind():
    x = torch.randn(64, 48) * 3
    input_rows.grid_rows(x, _generator(3), _generator(4))
    rows = list(x)
    whole = [r for r in rows if torch.equal(r, r.round())]
    masked = [r for r in rows if 8 < int((r == 0).sum()) < 40]
    ordered = [r for r in rows if torch.equal(r, r.sort(descending=True).values)]
    assert len(whole) >= 8 and len(ordered) >= 8  # an eighth each
    assert len(masked) == 8  # masked rows: about half their values zero
    assert any(bool(torch.signbit(r[r == 0]).any()) for r in masked)  # -0.0 among the zeros


def test_narrow_rows_keep_full_mantissas_of_bf16_and_fp16():
    x = torch.randn(64, 48)
    input_rows.narrow_rows(x, _generator(8))
    rows = list(x)
    bf16 = [r for r in rows if torch.equal(r, r.bfloat16().float())]
    fp16 = [r for r in rows if torch.equal(r, r.half().float())]
    fp16 = [r for r in fp16 if not torch.equal(r, r.bfloat16().float())]
    assert len(bf16) == 8 and len(fp16) == 8
    # an fp16 row's values use the last of fp16's mantissa bits, as real fp16 data does
    low_bits = [(r.view(torch.int32) >> 13) & 1 for r in fp16]
    assert all(int(bits.sum()) * 4 >= r.numel() for bits, r in zip(low_bits, fp16))
    wide = torch.randn(8, 4, dtype=torch.bfloat16)
    before = wide.clone()
    input_rows.narrow_rows(wide, _generator(8))
    assert torch.equal(wide, before)  # a bf16 input is left as it is


def test_grid_rows_keep_a_positive_input_positive():
    x = torch.rand(64, 48) + 1e-3
    input_rows.grid_rows(x, _generator(5), _generator(6))
    assert bool((x > 0).all())  # no mask, no zero from a narrower dtype


def test_inputs_of_as_many_rows_repeat_the_same_rows():
    x, residual = torch.randn(32, 16), torch.randn(32, 16)
    apply_distribution([x, residual], "small", seed=7)
    equal_x = (x[1:] == x[:-1]).all(dim=1)
    equal_residual = (residual[1:] == residual[:-1]).all(dim=1)
    assert 1 <= int(equal_x.sum()) <= 3
    assert torch.equal(equal_x, equal_residual)  # so their outputs' rows repeat too


def test_a_one_row_input_is_left_to_the_other_kinds():
    assert not input_rows.repeated_run(1, seed=3)
    assert not input_rows.repeated_run(4, seed=3, certain=4)  # four certain kinds take them all


def test_a_run_of_equal_rows_never_takes_a_certain_kinds_row():
    # A run drawn over the only bf16 row of a 4-row fp32 input had accepted round eleven's c03
    # again in the CI run of 0283672: the run takes rows no certain kind needs.
    for seed in range(40):
        x = torch.randn(4, 16)
        apply_distribution([x], "small", seed=seed)
        rows = list(x)
        bf16 = [r for r in rows if torch.equal(r, r.bfloat16().float())]
        fp16 = [r for r in rows if torch.equal(r, r.half().float())]
        assert bf16 and [r for r in fp16 if not torch.equal(r, r.bfloat16().float())], seed
        x = torch.randn(4, 16)
        apply_distribution([x], "outliers", seed=seed)
        assert bool((x == 0).all(dim=1).any()), seed  # the zero row is still there
        x = torch.randn(6, 16)
        apply_distribution([x], "grid", seed=seed)
        assert any(torch.equal(r, r.round()) for r in x), seed


def test_every_distribution_but_normal_repeats_a_row_somewhere():
    found = {}
    for distribution in ("small", "large", "outliers", "grid"):
        hits = 0
        for seed in range(20):
            x = torch.randn(16, 8)
            apply_distribution([x], distribution, seed=seed)
            hits += bool((x[1:] == x[:-1]).all(dim=1).any())
        found[distribution] = hits
    assert all(hits == 20 for hits in found.values()), found
