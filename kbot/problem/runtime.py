"""Importing a problem file and building its model and inputs. Runs user code: call only in
the evaluator's worker or when tracing a reference the user owns."""

from __future__ import annotations

import importlib.util
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any


def import_file(
    path: str | Path, prefix: str = "kbot_problem", builtins: dict | None = None
) -> ModuleType:
    """Imports a Python file under a fresh module name (so two files never collide);
    `builtins`: the builtins its code runs with (the evaluator's guarded ones for a candidate)."""
    path = Path(path).resolve()
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    if builtins is not None:
        module.__builtins__ = builtins  # type: ignore[attr-defined]
    sys.modules[name] = module
    # A problem may import modules that sit next to it (an extracted target's package).
    sys.path.insert(0, str(path.parent))
    try:
        spec.loader.exec_module(module)
    finally:
        # Ours is the first entry of that folder, also after the problem put its own first.
        if str(path.parent) in sys.path:
            sys.path.remove(str(path.parent))
    return module


def case_inputs(module: ModuleType, case: dict[str, Any]) -> list[Any]:
    """Calls get_inputs(**case) (or get_inputs() for a file without CASES) and returns a list."""
    inputs = module.get_inputs(**case) if case else module.get_inputs()
    return list(inputs)


def init_inputs(module: ModuleType) -> list[Any]:
    return list(module.get_init_inputs())


def build_on(device: Any, make: Callable[[], Any], seed: int | None = None) -> Any:
    """`make()` (a Model's or ModelNew's constructor call) with the tensors it creates made on
    `device`, seeded with `seed` first: random initialisation then runs there (an `nn.Linear`
    took 1.8 s per GB on two CPU threads, and the judge built one per candidate).
    A constructor that cannot run so (it hands a tensor it made to numpy, or draws with a CPU
    generator) is built again on the CPU, as before; its own failure there propagates."""
    import torch

    if torch.device(device).type != "cpu":
        try:
            if seed is not None:
                torch.manual_seed(seed)
            with torch.device(device):
                return make()
        except Exception:  # noqa: BLE001 - the CPU build below says what is wrong, if anything
            pass
    if seed is not None:
        torch.manual_seed(seed)
    return make()


# Value distributions the evaluator draws inputs from, each a transform of the problem's own
# draw (so domains such as "positive only" are kept): as drawn, scaled small, scaled large,
# and rows with a few outliers (and rows off centre or zero: _off_centre_rows). Powers of two
# keep the scaling exact in every dtype.
# "grid": half the values snapped to multiples of 1/8 (equal values are common: ties in argmax,
# max and comparisons), the other half to multiples of 2**-10 (exact halves after scaling by up
# to 512: `round(x * 64)` meets its .5 cases), as quantized real data has them; then an eighth
# of the rows rounded to whole numbers (_integer_rows) and, in fp32/fp64, an eighth rounded
# through bf16 (_bfloat16_rows).
DISTRIBUTIONS = ("normal", "small", "large", "outliers", "grid")
_GRID_STEPS = (2.0**-3, 2.0**-10)
_SCALE = {"small": 2.0**-6, "large": 2.0**4}
_OUTLIER_FACTOR = 32.0
# Half the outlier rows get one "massive activation" (LLMs' residual streams carry a few
# channels in the thousands): 2**10x the row's peak. A kernel with a path of its own above some
# magnitude (red-team round twelve zeroed |x| >= 1024) is judged there too.
_MASSIVE_FACTOR = 2.0**10
_OFFSET_FACTOR = 256.0  # an off-centre row's common offset, in units of its RMS
# Outlier rows are edited this many elements at a time (a 6 GB input is not gathered at once).
_OUTLIER_CHUNK = 1 << 24


def seeded_inputs(module: ModuleType, case: dict[str, Any], seed: int, device: Any = None) -> list:
    """The case's inputs drawn under `seed`, created on `device` (None: where get_inputs puts them)."""
    import torch

    torch.manual_seed(seed)
    if device is None:
        return case_inputs(module, case)
    with torch.device(device):
        inputs = case_inputs(module, case)
    return [x.to(device) if isinstance(x, torch.Tensor) else x for x in inputs]


def apply_distribution(inputs: list, distribution: str, seed: int) -> list:
    """Transforms the floating-point tensors of `inputs` (in place) to `distribution`."""
    import torch

    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"unknown distribution {distribution!r}; choose from {DISTRIBUTIONS}")
    generator = torch.Generator().manual_seed(seed)
    for x in inputs:
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.numel() == 0:
            continue
        if x.element_size() == 1:  # fp8, which torch cannot scale: in fp32, then saturated
            wide = apply_distribution([x.float()], distribution, seed)[0]
            limit = torch.finfo(x.dtype).max
            x.copy_(wide.clamp_(-limit, limit))
            continue
        if distribution in _SCALE:
            x.mul_(_SCALE[distribution])
        elif distribution == "grid":
            work = x if x.is_contiguous() else x.contiguous()
            flat = work.view(-1)
            # One draw per element, on the tensor's device: drawn on the CPU and copied over,
            # 2^30 draws took about 5 s on a 2-core machine (not timed on a GPU machine).
            draws = generator if not x.is_cuda else torch.Generator(x.device).manual_seed(seed)
            for start in range(0, flat.numel(), _OUTLIER_CHUNK):
                piece = flat[start : start + _OUTLIER_CHUNK]
                piece.copy_(_snapped(piece.float(), draws))
            rows = _as_rows(work)
            # distinct rows for the two rewrites: a bf16 row rounded to whole numbers after is no
            # longer a row of fractions (round eleven's c03 slipped through when they met)
            order = torch.randperm(rows.shape[0], generator=generator)
            eighth = max(1, rows.shape[0] // 8)
            _integer_rows(rows, order[:eighth])
            _bfloat16_rows(rows, order[eighth : 2 * eighth])
            if work is not x:
                x.copy_(work)
        elif distribution == "outliers":
            # A non-contiguous input (a transposed view) is edited through a contiguous copy:
            # reshaping the view itself can alias it, and copying that back overlaps.
            work = x if x.is_contiguous() else x.contiguous()
            _add_outliers(_as_rows(work), generator)
            if work is not x:
                x.copy_(work)
    return inputs


def _integer_rows(rows: Any, picked: Any) -> None:
    """The `picked` rows (an eighth, at least one) rounded to whole numbers, a nonzero value to
    at least 1 on its side of zero: float rows of integers are common (masks, counts, labels,
    quantised activations), and a kernel with a path of its own for them (round ten's c08,
    which copied such rows through a ReLU unchanged) is judged there too."""
    import torch

    def rounded(picked):
        wide = picked.float()
        whole = torch.round(wide)
        return torch.where((whole == 0) & (wide != 0), wide.sign(), whole).to(rows.dtype)

    _rewrite_rows(rows, picked, rounded)


def _bfloat16_rows(rows: Any, picked: Any) -> None:
    """In an fp32 or fp64 input, the `picked` rows (another eighth; none of a one-row input)
    rounded through bf16, fractions kept: a float32 activation upcast from a bf16 checkpoint
    or layer is common, and a kernel with a path of its own for such rows (round eleven's c03
    rounded its results to bf16 there) is judged there too."""
    import torch

    if rows.dtype not in (torch.float32, torch.float64) or len(picked) == 0:
        return
    _rewrite_rows(rows, picked, lambda r: r.to(torch.bfloat16).to(rows.dtype))


def _as_rows(work: Any) -> Any:
    """A contiguous tensor as rows of its last dim (a 0-d one as one row of one)."""
    return work.reshape(-1, work.shape[-1]) if work.dim() > 0 else work.reshape(1, 1)


def _rewrite_rows(rows: Any, picked: Any, rewrite: Callable[[Any], Any]) -> None:
    """`rows[picked] = rewrite(rows[picked])`, a chunk of rows at a time (a 6 GB input is not
    gathered at once)."""
    step = max(1, _OUTLIER_CHUNK // max(1, rows.shape[1]))
    for start in range(0, len(picked), step):
        index = picked[start : start + step].to(rows.device)
        rows[index] = rewrite(rows.index_select(0, index))


def _snapped(wide, generator):
    """`wide` (fp32) on the grid distribution's steps; a nonzero value stays on its side of
    zero (a positive domain stays positive)."""
    import torch

    fine = torch.rand(wide.shape, generator=generator, device=generator.device) < 0.5
    fine = fine.to(wide.device)
    step = torch.where(fine, _GRID_STEPS[1], _GRID_STEPS[0])
    snapped = torch.round(wide / step) * step
    return torch.where((snapped == 0) & (wide != 0), wide.sign() * step, snapped)


def _off_centre_rows(rows: Any, others: Any) -> None:
    """Rows real inputs have and centred draws never do: a quarter of `others` (at least one
    where there are any) moved by +256x their RMS, a common offset (a one-pass variance,
    E[x^2] - E[x]^2, loses its digits there: round nine's c01), and an eighth (at least one
    where more rows are left) set to zero (padding rows: a row divided by its own peak is NaN
    there, c02). The offset is positive:
    a positive domain stays positive."""

    shifted = others[: max(1, len(others) // 4)] if len(others) else others
    zeroed = others[len(shifted) : len(shifted) + max(1, len(others) // 8)]

    def moved(picked):
        rms = picked.float().square().mean(dim=1).sqrt()
        return picked + (rms * _OFFSET_FACTOR).to(rows.dtype)[:, None]

    _rewrite_rows(rows, shifted, moved)
    if len(zeroed):
        rows[zeroed.to(rows.device)] = 0


def refill_(buffers: list, fresh: list) -> None:
    """Copies `fresh` into the same tensors `buffers` (pointers unchanged); other values must match."""
    import torch

    if len(buffers) != len(fresh):
        raise ValueError("get_inputs returned a different number of inputs for another seed")
    for index, (buffer, value) in enumerate(zip(buffers, fresh)):
        if isinstance(buffer, torch.Tensor):
            if not isinstance(value, torch.Tensor) or value.shape != buffer.shape:
                raise ValueError(f"get_inputs()[{index}] changes shape between seeds")
            buffer.copy_(value)


def case_dtypes(path: str | Path, cases: list[dict[str, Any]]) -> list[str | None]:
    """The floating dtype each case's inputs are built in ("bfloat16"; the first floating
    tensor's), read on the meta device (nothing is allocated); None for a case without one.
    What the parity test of a PR checks each dtype against (kbot.publish.artifacts)."""
    import torch

    module = import_file(path, prefix="kbot_dtypes_problem")
    found: list[str | None] = []
    for case in cases:
        with torch.device("meta"):
            inputs = case_inputs(module, dict(case))
        floating = [v for v in inputs if isinstance(v, torch.Tensor) and v.is_floating_point()]
        found.append(str(floating[0].dtype).removeprefix("torch.") if floating else None)
    return found


def _add_outliers(rows: Any, generator: Any) -> None:
    """A quarter of `rows` (at least one) each get up to four entries set to +-32x the row's
    peak (at least 1), the last of them +-1024x instead in every other such row (the first
    first); of the other rows, a quarter are moved by a common offset of 256x their
    RMS and an eighth are set to zero (_off_centre_rows). Drawn on the CPU from `generator`,
    written in chunks of rows: a loop over rows cost minutes on an input of millions of rows."""
    import torch

    n_rows, n_cols = rows.shape
    order = torch.randperm(n_rows, generator=generator)
    picked = order[: max(1, n_rows // 4)]
    _off_centre_rows(rows, order[len(picked) :])
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
    step = max(1, _OUTLIER_CHUNK // max(1, n_cols))
    for start in range(0, len(picked), step):
        index = picked[start : start + step].to(rows.device)
        peak = rows.index_select(0, index).abs().amax(dim=1).clamp(min=1.0)
        values = signs[start : start + step].to(rows.device) * peak.float()[:, None]
        # finite, with room to add: an fp16 row with a peak of 100 stays below 65504 / 16
        limit = torch.finfo(rows.dtype).max / 16
        values = values.clamp_(-limit, limit).to(rows.dtype)
        rows[index[:, None], cols[start : start + step].to(rows.device)] = values
