"""apply_distribution edits inputs in place, also a non-contiguous one (a transposed view),
whose rows cannot be edited through a reshape of the view itself."""

import torch

from kbot.problem.runtime import DISTRIBUTIONS, apply_distribution


def test_outliers_on_a_transposed_view_edit_the_view_in_place():
    base = torch.randn(16, 8)
    view = base.t()
    before = view.clone()
    (out,) = apply_distribution([view], "outliers", seed=3)
    assert out is view and not view.is_contiguous()
    changed = (view != before).sum().item()
    assert 0 < changed <= 4 * 2  # at most 4 outliers in each of max(1, rows // 4) = 2 rows
    assert view.abs().max() >= 32  # outliers are 32x their row's peak (at least 1)


def test_every_distribution_keeps_shape_dtype_and_storage():
    for distribution in DISTRIBUTIONS:
        x = torch.randn(4, 6, dtype=torch.bfloat16).t()
        pointer = x.data_ptr()
        apply_distribution([x], distribution, seed=1)
        assert x.shape == (6, 4) and x.dtype == torch.bfloat16 and x.data_ptr() == pointer


def test_outliers_on_many_rows_hit_a_quarter_of_them_and_repeat_under_one_seed():
    # 40 000 rows: a row at a time took minutes on KernelBench's inputs of millions of rows.
    draws = []
    for _ in range(2):
        x = torch.ones(40_000, 3)
        apply_distribution([x], "outliers", seed=11)
        draws.append(x)
    assert torch.equal(draws[0], draws[1])  # duplicate columns of a row get one value
    edited_rows = (draws[0] != 1).any(dim=1).sum().item()
    assert edited_rows == 10_000  # a quarter of the rows, each with at least one outlier
    assert set(draws[0].abs().unique().tolist()) == {1.0, 32.0}
