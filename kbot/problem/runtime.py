"""Importing a problem file and building its model and inputs. Runs user code: call only in
the evaluator's worker or when tracing a reference the user owns."""

from __future__ import annotations

import functools
import importlib.util
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from kbot.problem import input_rows


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
# and rows with a few outliers (and rows off centre, zero or constant). Powers of two keep the
# scaling exact in every dtype.
# "grid": half the values snapped to multiples of 1/8 (equal values are common: ties in argmax,
# max and comparisons), the other half to multiples of 2**-10 (exact halves after scaling by up
# to 512: `round(x * 64)` meets its .5 cases), as quantized real data has them; then eighths of
# the rows rounded to whole numbers, sorted and masked. "small" and "large" round eighths of
# an fp32/fp64 input's rows through bf16 and fp16. Every distribution but "normal" repeats a
# row or a few. The row kinds: kbot.problem.input_rows.
DISTRIBUTIONS = ("normal", "small", "large", "outliers", "grid")
_GRID_STEPS = (2.0**-3, 2.0**-10)
_SCALE = {"small": 2.0**-6, "large": 2.0**4}
_CHUNK = 1 << 24  # elements snapped at a time (a 6 GB input is not gathered at once)


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
            _edit_rows(x, functools.partial(_scaled, generator=generator, seed=seed))
        elif distribution == "grid":
            # One draw per element, on the tensor's device: drawn on the CPU and copied over,
            # 2^30 draws took about 5 s on a 2-core machine (not timed on a GPU machine).
            draws = generator if not x.is_cuda else torch.Generator(x.device).manual_seed(seed)
            _edit_rows(x, functools.partial(_grid, generator=generator, draws=draws, seed=seed))
        elif distribution == "outliers":
            _edit_rows(x, functools.partial(_outliers, generator=generator, seed=seed))
    return inputs


def _edit_rows(x: Any, edit: Callable[[Any], None]) -> None:
    """`edit` on `x` seen as rows of its last dim, in place. A non-contiguous input (a
    transposed view) is edited through a contiguous copy: reshaping the view itself can alias
    it, and copying that back overlaps."""
    work = x if x.is_contiguous() else x.contiguous()
    edit(input_rows.as_rows(work))
    if work is not x:
        x.copy_(work)


def _grid(rows: Any, generator: Any, draws: Any, seed: int) -> None:
    flat = rows.view(-1)
    for start in range(0, flat.numel(), _CHUNK):
        piece = flat[start : start + _CHUNK]
        piece.copy_(_snapped(piece.float(), draws))
    kinds = functools.partial(input_rows.grid_rows, rows, generator, draws)
    input_rows.with_repeats(rows, seed, input_rows.GRID_KINDS, kinds)


def _scaled(rows: Any, generator: Any, seed: int) -> None:
    kinds = functools.partial(input_rows.narrow_rows, rows, generator)
    input_rows.with_repeats(rows, seed, input_rows.narrow_kinds(rows), kinds)


def _outliers(rows: Any, generator: Any, seed: int) -> None:
    kinds = functools.partial(input_rows.outlier_rows, rows, generator)
    input_rows.with_repeats(rows, seed, input_rows.OUTLIER_KINDS, kinds)


def _snapped(wide, generator):
    """`wide` (fp32) on the grid distribution's steps; a nonzero value stays on its side of
    zero (a positive domain stays positive)."""
    import torch

    fine = torch.rand(wide.shape, generator=generator, device=generator.device) < 0.5
    fine = fine.to(wide.device)
    step = torch.where(fine, _GRID_STEPS[1], _GRID_STEPS[0])
    snapped = torch.round(wide / step) * step
    return torch.where((snapped == 0) & (wide != 0), wide.sign() * step, snapped)


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
