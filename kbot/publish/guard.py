"""What the checked cases say about each forward argument, and the dispatch guard built from it.

The kernel is known correct only for inputs like those kbot's evaluator checked: the dtypes it
ran, tensors present (an optional `residual=None` takes the original path), contiguous, and
every dimension that had one size in all cases at that size (hidden 4096 was checked; hidden
5120 was not) unless the shape sweep checked it at other sizes (report.json `sweep`,
kbot.search.sweep): a dimension the kernel passed at every swept size is free up to the
largest size checked, one it failed at some size keeps to the sizes that passed. Dimensions
that varied across the cases (the token count) are free up to the largest size checked, and
where the run found the original code faster at some sizes (report.json `by_size`) the guard
sends those sizes to the original path (`size_terms`). A number, flag or string passed to forward with one value
in every case is pinned to it (the kernel may have it built in); one passed at several values
stays free.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # adapters import this module; a runtime import would be circular
    from kbot.publish.adapters.source import Param
from kbot.errors import KbotError
from kbot.publish.swept import SweptDim, rows_split_positions, swept_dims


@dataclass(frozen=True)
class InputFact:
    """One forward argument as every checked case built it."""

    tensor: bool
    floating: bool
    dtype: str  # torch dtype name of a non-floating tensor ("int64"); "" otherwise
    shape_per_case: tuple[tuple[int, ...], ...]  # () when not a tensor
    swept: tuple[SweptDim, ...] = ()  # dimensions the shape sweep changed
    # A number (or bool, str, None) passed in every case: its distinct values in case order;
    # None when the argument is a tensor or something a guard cannot write as a literal.
    values: tuple[Any, ...] | None = None
    # The sweep's rows point passed and this tensor carries the rows (its first dim, which the
    # cases vary): it may come with one more leading dim ([batch, seqlen, ...]).
    rows_free: bool = False
    # A floating-point tensor's dtype in each case ("float32" for an fp32 rotary table beside
    # bf16 activations); () otherwise.
    float_dtypes: tuple[str, ...] = ()

    @property
    def fixed_dims(self) -> tuple[tuple[int, int], ...]:
        """(dim, size) for each dimension that had the same size in every case and that the
        shape sweep did not check at other sizes."""
        if not self.tensor or len({len(s) for s in self.shape_per_case}) != 1:
            return ()
        first = self.shape_per_case[0]
        swept = {s.dim for s in self.swept}
        return tuple(
            (d, size)
            for d, size in enumerate(first)
            if d not in swept and all(s[d] == size for s in self.shape_per_case)
        )

    @property
    def ndim(self) -> int | None:
        dims = {len(s) for s in self.shape_per_case}
        return dims.pop() if self.tensor and len(dims) == 1 else None


class GuardError(KbotError):
    """The guard cannot be built from the problem the kernel was checked on: publishing stops
    rather than ship a kernel that would run on sizes and dtypes nobody checked."""


def _guard_error(what: str, exc: BaseException) -> GuardError:
    return GuardError(
        f"the guard needs the problem's inputs, but {what} raised {type(exc).__name__}: "
        f"{' '.join(str(exc).split())[:300]}; publish from the repository's checkout (or set "
        "KBOT_REPO to it) so that the run directory's problem.py imports the op"
    )


def problem_module(problem_path: Path) -> ModuleType:
    """The run's problem file imported once for input_facts and scalar_attributes. GuardError
    when it does not import: without it the guard could not restrict the kernel to what was
    checked."""
    from kbot.problem.runtime import import_file

    try:
        return import_file(problem_path, prefix="kbot_publish_problem")
    except Exception as exc:  # the user's code, or a checkout it cannot find
        raise _guard_error("importing problem.py", exc) from None


def input_facts(
    problem: Path | ModuleType,
    cases: tuple[dict[str, Any], ...],
    sweep: dict[str, Any] | None = None,
) -> tuple[InputFact, ...]:
    """Builds the problem's inputs for every case on the meta device (no memory, no compute),
    with what report.json's `sweep` says of the dimensions it changed. GuardError when
    get_inputs cannot build them there."""
    import torch

    from kbot.problem.runtime import case_inputs

    module = problem_module(problem) if isinstance(problem, Path) else problem
    try:
        with torch.device("meta"):
            built = [case_inputs(module, dict(case)) for case in cases]
    except Exception as exc:  # the user's get_inputs
        raise _guard_error("building the inputs on the meta device", exc) from None
    if not built or len({len(args) for args in built}) != 1:
        return ()
    facts = []
    for position in range(len(built[0])):
        values = [args[position] for args in built]
        tensor = all(isinstance(v, torch.Tensor) for v in values)
        floating = tensor and all(v.is_floating_point() for v in values)
        dtype = str(values[0].dtype).removeprefix("torch.") if tensor and not floating else ""
        shapes = tuple(tuple(v.shape) for v in values) if tensor else ()
        swept = swept_dims(position, shapes, sweep) if tensor else ()
        literals = None if tensor else _distinct_literals(values)
        floats = tuple(str(v.dtype).removeprefix("torch.") for v in values) if floating else ()
        facts.append(
            InputFact(tensor, floating, dtype, shapes, swept, literals, float_dtypes=floats)
        )
    split = rows_split_positions(sweep)
    return tuple(
        replace(f, rows_free=True) if i in split and f.tensor else f for i, f in enumerate(facts)
    )


@dataclass(frozen=True)
class SizeGuard:
    """The sizes at which the kernel runs: forward argument `position`'s dimension `dim`
    (None: its numel) within one of `kernel_ranges`, each (low, high] with None unbounded.
    Between measured sizes the cut is kbot.search.dispatch's (the geometric mean)."""

    position: int
    dim: int | None
    kernel_ranges: tuple[tuple[int | None, int | None], ...]

    @classmethod
    def from_report(cls, report: dict[str, Any]) -> SizeGuard | None:
        """From report.json's `by_size`; None when the kernel runs at every size."""
        by_size = report.get("by_size")
        if not isinstance(by_size, dict) or not by_size.get("kernel_ranges"):
            return None
        key = by_size.get("size_key") or {}
        if not isinstance(key.get("position"), int):
            return None
        ranges = tuple((low, high) for low, high in by_size["kernel_ranges"])
        return cls(key["position"], key.get("dim"), ranges)


def size_terms(
    params: tuple[Param, ...], sizes: SizeGuard | None, facts: tuple[InputFact, ...] = ()
) -> list[str]:
    """`x.shape[0] <= 4`-like terms that keep the sizes where the original code was faster
    on the original path. Rows that may come in two leading dims count as their product."""
    from kbot.search.dispatch import range_condition

    if sizes is None or sizes.position >= len(params):
        return []
    name = params[sizes.position].name
    fact = facts[sizes.position] if sizes.position < len(facts) else None
    if sizes.dim is None:
        size = f"{name}.numel()"
    elif sizes.dim == 0 and fact is not None and fact.rows_free and fact.ndim:
        size = _rows_count(name, fact.ndim)
    else:
        size = f"{name}.shape[{sizes.dim}]"
    conditions = [range_condition(size, low, high) for low, high in sizes.kernel_ranges]
    return [conditions[0] if len(conditions) == 1 else "(" + " or ".join(conditions) + ")"]


def anchor_index(facts: tuple[InputFact, ...]) -> int:
    """The first floating-point tensor: the one whose dtype the guard names (RoPE's first
    argument is int64 positions; a dtype guard on it would never take the kernel)."""
    return next((i for i, f in enumerate(facts) if f.floating), 0)


def input_terms(
    params: tuple[Param, ...],
    facts: tuple[InputFact, ...],
    dtypes: tuple[str, ...],
    cuda: bool,
    weight: str | None = None,
) -> list[str]:
    """Guard terms for the arguments the kernel takes, named as the target names them. Where
    they are numbers only (a rotary table's length), the module's tensor `weight` (the one
    the kernel reads, whose dtype its own term checks) says where the kernel runs."""
    if facts and not any(f.tensor for f in facts[: len(params)]):
        terms = [f"self.{weight}.is_cuda"] if cuda and weight else []
        return terms + [t for p, f in zip(params, facts) for t in _number_terms(p.name, f)]
    anchor_at = min(anchor_index(facts), len(params) - 1)
    anchor = params[anchor_at].name
    dtype_tuple = ", ".join(f"torch.{d}" for d in dtypes) + ("," if len(dtypes) == 1 else "")
    # An optional anchor is checked for presence before anything reads its attributes.
    terms = [f"{anchor} is not None"] if params[anchor_at].default == "None" else []
    terms += [f"{anchor}.is_cuda"] if cuda else []
    terms.append(f"{anchor}.dtype in ({dtype_tuple})")
    if not facts:
        return terms + layout_terms(anchor)
    anchor_fact = facts[anchor_at]
    for index, (param, fact) in enumerate(zip(params, facts)):
        if not fact.tensor:
            terms += _number_terms(param.name, fact)
            continue
        name = param.name
        if param.default == "None" and index != anchor_at:
            terms.append(f"{name} is not None")
        if index != anchor_at:
            if fact.floating:
                terms.append(_float_dtype_term(name, fact, anchor, anchor_fact))
            elif fact.dtype:
                terms.append(f"{name}.dtype == torch.{fact.dtype}")
        terms += layout_terms(name)
        if index != anchor_at and fact.shape_per_case == anchor_fact.shape_per_case:
            terms.append(f"{name}.shape == {anchor}.shape")
        else:
            terms += _shape_terms(name, fact)
    return terms


def _float_dtype_term(name: str, fact: InputFact, anchor: str, anchor_fact: InputFact) -> str:
    """A floating tensor's dtype as checked: the anchor's where it followed the anchor in
    every case (or nothing says otherwise), else the one it always had (`cos.dtype ==
    torch.float32` beside bf16 activations, where `== x.dtype` would never hold), else the
    ones it had."""
    own = fact.float_dtypes
    if not own or own == anchor_fact.float_dtypes:
        return f"{name}.dtype == {anchor}.dtype"
    kinds = sorted(set(own))
    if len(kinds) == 1:
        return f"{name}.dtype == torch.{kinds[0]}"
    return f"{name}.dtype in ({', '.join(f'torch.{k}' for k in kinds)})"


def layout_terms(name: str) -> list[str]:
    """The layout the judge checked the kernel on: contiguous, at an address aligned to 16
    bytes (the alignment Triton and torch.compile's kernels specialise on; the judge's trials
    place inputs at such addresses and at the allocator's own, kbot.evaluate.input_places).
    A view such as `x.view(-1)[1:]` takes the original path."""
    return [f"{name}.is_contiguous()", f"{name}.data_ptr() % 16 == 0"]


def autograd_term(
    params: tuple[Param, ...], facts: tuple[InputFact, ...], weights: tuple[str, ...] = ()
) -> list[str]:
    """The kernel's output has no autograd history: a call whose float tensors require grad,
    under grad mode (training), keeps the original code. The judge never calls with such
    inputs (kbot.evaluate.host_session). `weights` are the module's float tensors the kernel
    reads (`self.weight`): a weight being trained needs its gradient too (red-team round
    fourteen's c12 gave none, and only forward's arguments were asked)."""
    if facts:
        names = [p.name for p, f in zip(params, facts) if f.tensor and f.floating]
    else:
        names = [params[0].name] if params else []
    names += [f"self.{name}" for name in weights]
    if not names:
        return []
    needs = " or ".join(f"{name}.requires_grad" for name in names)
    needs = f"({needs})" if len(names) > 1 else needs
    return [f"not (torch.is_grad_enabled() and {needs})"]


def default_dtype_term() -> list[str]:
    """The default dtype the judge ran under (float32, torch's own): code that sets another
    (`torch.set_default_dtype(torch.bfloat16)` in some models' inference) keeps the original
    path, since a kernel's launcher or the reference may take that dtype where the judge never
    looked (red-team round twelve: a kernel wrong under another default passed)."""
    return ["torch.get_default_dtype() == torch.float32"]


def _distinct_literals(values: list[Any]) -> tuple[Any, ...] | None:
    """The distinct values, when each is a bool, int, float, str or None; else None."""
    if not all(v is None or isinstance(v, (bool, int, float, str)) for v in values):
        return None
    distinct: list[Any] = []
    for value in values:
        if not any(type(value) is type(d) and value == d for d in distinct):
            distinct.append(value)
    return tuple(distinct)


def _number_terms(name: str, fact: InputFact) -> list[str]:
    """A number argument that had one value in every case is known correct at that value only:
    a kernel may have it built in (codegen traces a float as the constant it was), so another
    value takes the original path. One the cases passed at several values is read by the kernel
    (a kernel that had one built in fails the other cases) and stays free, an integer up to the
    largest value checked."""
    values = fact.values
    if len(values or ()) > 1 and all(type(v) is int for v in values):
        # a count the cases varied (a table's length, VisionRotaryEmbedding2D's seqlen): up to
        # the largest checked, as a dimension the cases varied is (`_varying_terms`)
        return [f"{name} <= {max(values)}"]
    if not values or (len(values) > 1 and all(not isinstance(v, str) for v in values)):
        return []
    if len(values) == 1:
        value = values[0]
        if value is None or isinstance(value, bool):
            return [f"{name} is {value!r}"]
        return [f"{name} == {_literal(value)}"]
    return [f"{name} in ({', '.join(_literal(v) for v in values)})"]


def _literal(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return f"float({str(value)!r})"
    return repr(value)


def _rows_count(name: str, ndim: int) -> str:
    return f"{name}.numel()" if ndim == 1 else f"{name}.shape[:-{ndim - 1}].numel()"


def _shape_terms(name: str, fact: InputFact) -> list[str]:
    if fact.rows_free and fact.ndim:
        return _rows_free_terms(name, fact) + _varying_terms(name, fact)
    return _fixed_terms(name, fact) + _swept_terms(name, fact) + _varying_terms(name, fact)


def _varying_terms(name: str, fact: InputFact) -> list[str]:
    """A dimension the cases varied (the token count): up to the largest size checked. Above
    it no trial ran, and a kernel may be wrong there (red-team round thirteen's c06 wrote 8
    rows at most, checked at 3 and 4). Rows that may come in more leading dims count as their
    product."""
    ndim = fact.ndim
    if ndim is None or not fact.shape_per_case:
        return []
    swept = {s.dim for s in fact.swept}
    terms = []
    for dim in range(ndim):
        sizes = {shape[dim] for shape in fact.shape_per_case}
        if len(sizes) < 2 or dim in swept:
            continue
        size = f"{name}.shape[{dim}]"
        if dim == 0 and fact.rows_free:
            size = _rows_count(name, ndim)
        terms.append(f"{size} <= {max(sizes)}")
    return terms


def _rows_free_terms(name: str, fact: InputFact) -> list[str]:
    """The traced rank or one more leading dim (what the sweep's rows point checked), the
    other dims counted from the end."""
    ndim = fact.ndim or 0
    terms = [f"{name}.dim() in ({ndim}, {ndim + 1})"]
    fixed = dict(fact.fixed_dims)
    if fixed and sorted(fixed) == list(range(1, ndim)):
        sizes = ", ".join(str(fixed[d]) for d in range(1, ndim)) + ("," if ndim == 2 else "")
        terms.append(f"{name}.shape[-{ndim - 1}:] == ({sizes})")
    else:
        terms += [f"{name}.shape[{d - ndim}] == {size}" for d, size in sorted(fixed.items())]
    return terms + _swept_terms(name, fact, ndim)


def _swept_terms(name: str, fact: InputFact, from_end: int = 0) -> list[str]:
    """A dimension the kernel passed at every swept size: up to the largest checked; one it
    failed at some size: the sizes that passed. `from_end`: the rank to count dims back from
    (rows that may come in more leading dims)."""
    terms = []
    for swept in fact.swept:
        size = f"{name}.shape[{swept.dim - from_end if from_end else swept.dim}]"
        if not swept.clean:
            terms.append(f"{size} in {tuple_source(swept.sizes)}")
            continue
        terms.append(f"{size} <= {max(swept.sizes)}")
        if swept.step > 1:
            terms.append(f"{size} % {swept.step} == 0")
    return terms


def tuple_source(values: tuple[Any, ...]) -> str:
    return repr(tuple(values))


def _fixed_terms(name: str, fact: InputFact) -> list[str]:
    fixed = fact.fixed_dims
    ndim = fact.ndim
    if ndim is None or not fixed:
        return [f"{name}.dim() == {ndim}"] if ndim is not None else []
    if len(fixed) == ndim:
        sizes = ", ".join(str(s) for _, s in fixed) + ("," if ndim == 1 else "")
        return [f"{name}.shape == ({sizes})"]
    first = fixed[0][0]
    if [d for d, _ in fixed] == list(range(first, ndim)):
        # The varying dims lead (tokens first): one slice comparison also pins the rank.
        sizes = ", ".join(str(s) for _, s in fixed) + ("," if len(fixed) == 1 else "")
        return [f"{name}.shape[{first}:] == ({sizes})"]
    terms = [f"{name}.dim() == {ndim}"]
    terms += [f"{name}.shape[{d}] == {size}" for d, size in fixed]
    return terms
