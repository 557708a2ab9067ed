"""apply_distribution edits inputs in place, also a non-contiguous one (a transposed view),
whose rows cannot be edited through a reshape of the view itself."""

import pytest
import torch

from kbot.problem import input_rows
from kbot.problem.runtime import DISTRIBUTIONS, apply_distribution


def test_outliers_on_a_transposed_view_edit_the_view_in_place():
    base = torch.randn(16, 8)
    view = base.t()
    before = view.clone()
    as_rows = before.clone()  # the same values, contiguous
    (out,) = apply_distribution([view], "outliers", seed=3)
    apply_distribution([as_rows], "outliers", seed=3)
    assert out is view and not view.is_contiguous()
    assert torch.equal(view, as_rows)  # the view's own rows were edited, as a copy's are
    assert not torch.equal(view, before)
    assert view.abs().max() >= 32  # outliers are 32x their row's peak (at least 1)


def test_off_centre_rows_move_by_256_times_their_rms_and_zero_rows_are_zero():
    x = torch.rand(64, 32) + 0.5  # a positive domain: every move is up
    before = x.clone()
    input_rows.outlier_rows(x, torch.Generator().manual_seed(5))
    moved = (x - before).abs().amin(dim=1) > 1  # every value of the row moved
    offset = (x - before)[moved]
    rms = before[moved].square().mean(dim=1, keepdim=True).sqrt()
    assert int(moved.sum()) == 12  # a quarter of the 48 rows without outliers
    assert torch.allclose(offset, (256 * rms).expand_as(offset), rtol=1e-5)
    assert int((x == 0).all(dim=1).sum()) == 6  # an eighth of them
    constant = (x == x[:, :1]).all(dim=1) & (x != 0).all(dim=1)
    assert int(constant.sum()) == 6  # another eighth, each at a power of two: sums are exact
    assert bool((x[constant, 0].log2() == x[constant, 0].log2().round()).all())
    untouched = (x == before).all(dim=1)
    assert int(untouched.sum()) == 64 - 16 - 12 - 6 - 6


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
        input_rows.outlier_rows(x, torch.Generator().manual_seed(11))
        draws.append(x)
    assert torch.equal(draws[0], draws[1])  # duplicate columns of a row get one value
    rows = draws[0]
    outlier_rows = ((rows.abs() == 32) | (rows.abs() == 1024)).any(dim=1).sum().item()
    assert outlier_rows == 10_000  # a quarter of the rows, each with at least one outlier
    # every other one of them with a massive activation, 1024x
    assert (rows.abs() == 1024).any(dim=1).sum().item() == 5_000
    assert (rows == 257).all(dim=1).sum().item() == 7_500  # a quarter of the rest off centre
    assert (rows == 0).all(dim=1).sum().item() == 3_750  # an eighth of the rest zero
    assert set(rows.abs().unique().tolist()) == {0.0, 1.0, 32.0, 257.0, 1024.0}
    # the constant eighth of the rest: rows of ones stay ones (their own value)


def test_massive_outliers_stay_finite_in_float16():
    x = torch.full((4, 8), 200.0, dtype=torch.float16)  # 1024x 200 is past fp16's 65504
    apply_distribution([x], "outliers", seed=2)
    assert torch.isfinite(x).all()
    limit = torch.tensor(torch.finfo(torch.float16).max / 16, dtype=torch.float16)
    assert (x.abs() == limit).any()  # the massive activation, clamped


def test_grid_rounds_an_eighth_of_the_rows_to_whole_numbers_keeping_signs():
    x = torch.randn(64, 48)
    positive = torch.rand(16, 8)
    apply_distribution([x, positive], "grid", seed=3)
    whole = (x == x.round()).all(dim=1)
    assert int(whole.sum()) >= 8  # an eighth, and any row the coarse steps made whole
    assert not bool((x[whole] == 0).any())  # a nonzero value stays nonzero
    assert bool((positive > 0).all())  # a positive domain stays positive
    again = torch.randn(64, 48)
    torch.manual_seed(0)
    first, second = again.clone(), again.clone()
    apply_distribution([first], "grid", seed=5)
    apply_distribution([second], "grid", seed=5)
    assert torch.equal(first, second)


def _grid_values(x: torch.Tensor) -> bool:
    """Every value a multiple of 2^-10 (the grid's fine step; the coarse one is 2^-3)."""
    return bool(torch.equal(x.float() * 1024, torch.round(x.float() * 1024)))


def test_grid_inputs_lie_on_the_grid_and_repeat_under_one_seed():
    draws = []
    for _ in range(2):
        torch.manual_seed(0)
        x = torch.randn(64, 48)
        apply_distribution([x], "grid", seed=7)
        draws.append(x)
    assert torch.equal(draws[0], draws[1])
    assert _grid_values(draws[0])


@pytest.mark.gpu
def test_grid_inputs_on_a_gpu_are_drawn_there_on_the_grid_and_repeat_under_one_seed():
    """The grid's per-element draws come from a generator on the input's device (drawn on the
    CPU and copied over, 2^30 elements cost the judge seconds a trial)."""
    draws = []
    for _ in range(2):
        torch.manual_seed(0)
        x = torch.randn(64, 4096, device="cuda", dtype=torch.bfloat16)
        apply_distribution([x], "grid", seed=7)
        draws.append(x)
    assert draws[0].is_cuda and torch.equal(draws[0], draws[1])
    assert _grid_values(draws[0])
    coarse = (draws[0].float() * 8 == torch.round(draws[0].float() * 8)).float().mean()
    assert 0.3 < float(coarse) < 0.9  # about half the values on the coarse step
