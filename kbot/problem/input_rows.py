"""Rows real inputs have and centred random draws never do, written into a drawn input by the
evaluator's distributions (kbot.problem.runtime.apply_distribution). A kernel with a path of
its own for such rows is judged there too: each kind below was once a cheat the judge accepted
(red-team rounds nine to thirteen, bench/results/evaluator.md).

Every rewrite works on a contiguous tensor seen as rows of its last dim, a chunk of rows at a
time (a 6 GB input is not gathered at once). Rows are picked from the distribution's
generator; repeated rows from a generator of the seed alone, so that inputs with the same
number of rows (x and its residual) repeat the same rows. A positive domain stays positive:
the rewrites that add zeros or negative values apply only to an input that holds a negative
value already.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_OUTLIER_FACTOR = 32.0
# Half the outlier rows get one "massive activation" (LLMs' residual streams carry a few
# channels in the thousands): 2**10x the row's peak. A kernel with a path of its own above some
# magnitude (red-team round twelve zeroed |x| >= 1024) is judged there too.
_MASSIVE_FACTOR = 2.0**10
_OFFSET_FACTOR = 256.0  # an off-centre row's common offset, in units of its RMS
_CHUNK = 1 << 24  # elements edited at a time
_REPEAT_SALT = 0x5EED  # repeated rows' generator: the seed's, apart from the row picks'
_MAX_REPEATS = 4  # the longest run of equal rows (n > 1 sampling, beam search)


def as_rows(work: Any) -> Any:
    """A contiguous tensor as rows of its last dim (a 0-d one as one row of one)."""
    return work.reshape(-1, work.shape[-1]) if work.dim() > 0 else work.reshape(1, 1)


def signed(rows: Any) -> bool:
    """Whether the input holds a negative value (its domain is not positive only)."""
    return bool((rows < 0).any())


def with_repeats(rows: Any, seed: int, certain: int, kinds: Callable[[range], None]) -> None:
    """`kinds(skip)` (a distribution's row kinds, drawn from rows outside `skip`), then a run
    of equal rows (repeated_run) over the rows `skip` names. The run takes only rows that no
    certain kind needs (`certain` of them): a run copied over the only bf16 row of a 4-row
    input had left round eleven's c03 accepted again."""
    run = repeated_run(rows.shape[0], seed, certain)
    kinds(run)
    if run:
        rows[run.start : run.stop] = rows[run.start - 1]


def grid_rows(rows: Any, generator: Any, draws: Any, skip: range = range(0)) -> None:
    """On the grid's values, distinct eighths of the rows: one rounded to whole numbers
    (masks, counts, labels, quantised activations), always; then, while rows last (fewer rows
    meet a drawn few), one sorted in descending order (top-p samplers pass sorted logits) and,
    in a signed input, one masked (about half the values zeroed by a multiply, so negative
    ones become -0.0, as `h * mask` does; round thirteen's c01 zeroed a block that started
    with a zero). The masks come from `draws`, a generator on the rows' device."""

    rewrites = [lambda r: r.sort(dim=1, descending=True).values]
    if signed(rows):
        rewrites.append(lambda r: r * _half_kept(r, draws))
    _by_eighths(rows, [_whole], generator, skip, rotating=rewrites)


def narrow_rows(rows: Any, generator: Any, skip: range = range(0)) -> None:
    """In an fp32 or fp64 input, an eighth of the rows rounded through bf16 and another through
    fp16, their values' full mantissas kept otherwise (a float32 activation upcast from a bf16
    or fp16 layer; round eleven's c03 rounded its results to bf16 for such rows, round
    thirteen's c04 to fp16 by integer bit operations). On the scaled draws, not the grid: a
    grid value is already exact in both."""
    import torch

    if narrow_kinds(rows):
        rewrites = [lambda r: _through(r, torch.bfloat16), lambda r: _through(r, torch.float16)]
        _by_eighths(rows, rewrites, generator, skip)


def narrow_kinds(rows: Any) -> int:
    """How many rows narrow_rows' certain kinds take (a bf16 and an fp16 row, in an fp32 or
    fp64 input only)."""
    import torch

    return 2 if rows.dtype in (torch.float32, torch.float64) else 0


GRID_KINDS = 1  # grid_rows' certain kinds: the whole-number row
OUTLIER_KINDS = 4  # outlier_rows': an outlier, a shifted, a zero and a constant row


def _by_eighths(
    rows: Any, rewrites: list, generator: Any, skip: range, rotating: list = ()
) -> None:
    """Each rewrite on its own eighth of the rows outside `skip` (at least one), drawn:
    `rewrites` first, in order, then `rotating` turned by a drawn step (rows left for some
    only: each trial meets a drawn few)."""
    order = _order(rows.shape[0], generator, skip)
    eighth = max(1, rows.shape[0] // 8)
    left = max(0, len(order) - len(rewrites) * eighth) // eighth
    kinds = list(rewrites) + _rotated(list(rotating), left, generator)
    for k, rewrite in enumerate(kinds):
        _rewrite_rows(rows, order[k * eighth : (k + 1) * eighth], rewrite)


def outlier_rows(rows: Any, generator: Any, skip: range = range(0)) -> None:
    """A quarter of `rows` (at least one) each get up to four entries set to +-32x the row's
    peak (at least 1), the last of them +-1024x instead in every other such row (the first
    first); the other rows take the off-centre kinds (_off_centre_rows). Drawn on the CPU from
    `generator`, written in chunks of rows: a loop over rows cost minutes on an input of
    millions of rows."""
    import torch

    n_cols = rows.shape[1]
    order = _order(rows.shape[0], generator, skip)
    picked = order[: max(1, rows.shape[0] // 4)]
    _off_centre_rows(rows, order[len(picked) :], generator)
    width = min(4, n_cols)
    cols = torch.randint(0, n_cols, (len(picked), width), generator=generator)
    signs = torch.where(torch.rand(len(picked), width, generator=generator) < 0.5, -1.0, 1.0)
    factors = torch.full((len(picked), width), _OUTLIER_FACTOR)
    factors[0::2, -1] = _MASSIVE_FACTOR  # the last: a duplicate column keeps its value
    signs = signs * factors
    # A column drawn twice for one row gets one value (its last draw's), so the result does
    # not depend on the order in which the device writes duplicates.
    for j in range(width - 1):
        for k in range(j + 1, width):
            signs[:, j] = torch.where(cols[:, j] == cols[:, k], signs[:, k], signs[:, j])
    step = max(1, _CHUNK // max(1, n_cols))
    for start in range(0, len(picked), step):
        index = picked[start : start + step].to(rows.device)
        peak = rows.index_select(0, index).abs().amax(dim=1).clamp(min=1.0)
        values = signs[start : start + step].to(rows.device) * peak.float()[:, None]
        # finite, with room to add: an fp16 row with a peak of 100 stays below 65504 / 16
        limit = torch.finfo(rows.dtype).max / 16
        values = values.clamp_(-limit, limit).to(rows.dtype)
        rows[index[:, None], cols[start : start + step].to(rows.device)] = values


def repeated_run(n_rows: int, seed: int, certain: int = 0) -> range:
    """The rows a run of two to four equal rows overwrites with the row before them (n > 1
    sampling and beam search expand one hidden state into several; round thirteen's c02 left
    a row equal to the one before it unwritten), drawn from `seed` alone, so every input of as
    many rows repeats the same ones; at most the rows beyond `certain`."""
    import torch

    spare = n_rows - max(1, certain)
    if n_rows < 2 or spare < 1:
        return range(0)
    draws = torch.Generator().manual_seed(seed ^ _REPEAT_SALT)
    start = int(torch.randint(0, n_rows - 1, (1,), generator=draws))
    length = min(int(torch.randint(2, _MAX_REPEATS + 1, (1,), generator=draws)), n_rows - start)
    return range(start + 1, start + min(length, spare + 1))


def _order(n_rows: int, generator: Any, skip: range) -> Any:
    """The row indices outside `skip`, in an order drawn from `generator`."""
    import torch

    order = torch.randperm(n_rows, generator=generator)
    if skip:
        order = order[(order < skip.start) | (order >= skip.stop)]
    return order


def _off_centre_rows(rows: Any, others: Any, generator: Any) -> None:
    """Of `others`: a quarter (at least one where there are any) moved by 256x their RMS, a
    common offset (a one-pass variance, E[x^2] - E[x]^2, loses its digits there: round nine's
    c01), up in a positive input, else every other one down (logits minus a large constant:
    an online softmax whose running max starts at 0 gives NaN there, round thirteen's c03); an
    eighth (at least one where more rows are left) multiplied by zero (padding rows, -0.0
    where the value was negative: a row divided by its own peak is NaN there, round nine's
    c02; a zero test on the bits missed -0.0, round thirteen's c11); and an eighth of them
    set to one of their own values (a constant row, a fully masked attention row: round
    thirteen's c12 gave zeros for it)."""
    import torch

    quarter, eighth = max(1, len(others) // 4), max(1, len(others) // 8)
    kinds = ["shifted", "zeroed", "constant"]  # in this order while rows last
    counts = {"shifted": quarter, "zeroed": eighth, "constant": eighth}
    picked, start = {}, 0
    for kind in kinds:
        picked[kind] = others[start : start + counts[kind]]
        start += len(picked[kind])
    # where it may go down, every other shifted row does, the first drawn
    down = (1 + int(torch.randint(0, 2, (1,), generator=generator))) if signed(rows) else 0
    columns = torch.randint(0, rows.shape[1], (len(picked["constant"]),), generator=generator)

    def moved(chosen):
        offset = chosen.float().square().mean(dim=1).sqrt() * _OFFSET_FACTOR
        if down:
            offset[down - 1 :: 2] = -offset[down - 1 :: 2]
        return chosen + offset.to(rows.dtype)[:, None]

    _rewrite_rows(rows, picked["shifted"], moved)
    _rewrite_rows(rows, picked["zeroed"], lambda r: r * 0)
    picks = iter(_chunks(columns, rows))
    _rewrite_rows(rows, picked["constant"], lambda r: _constant(r, next(picks)))


def _rotated(kinds: list, rows: int, generator: Any) -> list:
    """`kinds` in order while there are rows for all of them, else turned by a drawn step:
    with fewer rows than kinds (decode's one row) each trial meets a drawn few, and none is
    left out of every trial."""
    import torch

    if rows >= len(kinds):
        return kinds
    step = int(torch.randint(0, len(kinds), (1,), generator=generator))
    return kinds[step:] + kinds[:step]


def _constant(picked: Any, columns: Any) -> Any:
    """Each row set to one of its values rounded to a power of two (1 for a zero): a sum of
    its copies is exact in any order, so a mean subtracted from it leaves exact zeros for the
    reference and a correct kernel alike (a row's own value left a kernel's (x - mean) / std
    at +-inf where the reference's was NaN)."""
    import torch

    chosen = picked.gather(1, columns.to(picked.device)[:, None]).float()
    power = torch.exp2(torch.round(torch.log2(chosen.abs().clamp(min=2.0**-14))))
    power = torch.where(chosen < 0, -power, power).to(picked.dtype)
    return torch.broadcast_to(power, picked.shape).clone()


def _whole(picked: Any) -> Any:
    """Rounded to whole numbers, a nonzero value to at least 1 on its side of zero: float rows
    of integers are common (masks, counts, labels, quantised activations; round ten's c08
    copied such rows through a ReLU unchanged)."""
    import torch

    wide = picked.float()
    whole = torch.round(wide)
    return torch.where((whole == 0) & (wide != 0), wide.sign(), whole).to(picked.dtype)


def _through(picked: Any, dtype: Any) -> Any:
    """Rounded through `dtype`, a nonzero value kept nonzero (a float32 activation upcast from
    a bf16 or fp16 layer; round eleven's c03 rounded its results to bf16 for such rows, round
    thirteen's c04 to fp16 by integer bit operations)."""
    import torch

    limit = torch.finfo(dtype).max
    narrow = picked.clamp(-limit, limit).to(dtype).to(picked.dtype)
    return torch.where((narrow == 0) & (picked != 0), picked, narrow)


def _half_kept(picked: Any, draws: Any) -> Any:
    """A 0/1 mask like `picked`, about half ones, drawn on its device."""
    import torch

    kept = torch.rand(picked.shape, generator=draws, device=draws.device) < 0.5
    return kept.to(picked.device, picked.dtype)


def _chunks(values: Any, rows: Any) -> list:
    """`values` (one row per picked row) cut as _rewrite_rows cuts the picked rows."""
    step = _rows_per_chunk(rows)
    return [values[start : start + step] for start in range(0, len(values), step)]


def _rewrite_rows(rows: Any, picked: Any, rewrite: Callable[[Any], Any]) -> None:
    """`rows[picked] = rewrite(rows[picked])`, a chunk of rows at a time."""
    step = _rows_per_chunk(rows)
    for start in range(0, len(picked), step):
        index = picked[start : start + step].to(rows.device)
        rows[index] = rewrite(rows.index_select(0, index))


def _rows_per_chunk(rows: Any) -> int:
    return max(1, _CHUNK // max(1, rows.shape[1]))
