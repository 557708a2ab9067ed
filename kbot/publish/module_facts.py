"""What the publisher reads of the problem's Model itself, built on the meta device from
get_init_inputs(): its plain scalar attributes (pinned in the guard where the original code
reads them), its float parameters and buffers with their dtypes (the guard's autograd and
dtype terms), and whether the kernel call's `self.<attr>` names exist there at all.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

from kbot.publish.guard import problem_module, tuple_source
from kbot.publish.swept import SweptValue


def _meta_model(problem: Path | ModuleType) -> Any:
    """The problem's Model as get_init_inputs() builds it on the meta device; None where the
    user's constructor fails there."""
    module = problem_module(problem) if isinstance(problem, Path) else problem
    return _built_on_meta(module)


@lru_cache(maxsize=4)  # one publication asks three times of the same imported problem
def _built_on_meta(module: ModuleType) -> Any:
    import torch

    from kbot.problem.runtime import init_inputs

    try:
        with torch.device("meta"):
            return module.Model(*init_inputs(module))
    except Exception:
        return None


def scalar_attributes(problem: Path | ModuleType) -> tuple[tuple[str, Any], ...]:
    """The plain scalar attributes (int, float, bool, str) of the problem's Model as
    get_init_inputs() builds it, on the meta device: the values the kernel was checked with."""
    model = _meta_model(problem)
    if model is None:  # the user's constructor failed; without values there is nothing to pin
        return ()
    return tuple(
        (name, value)
        for name, value in vars(model).items()
        if not name.startswith("_")
        and name != "training"
        and isinstance(value, (bool, int, float, str))
    )


def missing_attributes(problem: Path | ModuleType, names: tuple[str, ...]) -> tuple[str, ...]:
    """Those of `names` that the problem's Model, as get_init_inputs() builds it on the meta
    device, does not have: what ModelNew built in its own constructor (a tuple of launch
    arguments, a submodule holding the weight). The patched op is the target's, so the kernel
    call there finds none of them. () where the constructor fails on meta."""
    model = _meta_model(problem)
    if model is None:
        return ()
    own = {**vars(model), **model._parameters, **model._buffers, **model._modules}
    return tuple(n for n in names if n not in own and not hasattr(type(model), n))


def float_tensor_attributes(problem: Path | ModuleType) -> tuple[tuple[str, str], ...]:
    """(name, dtype) of the problem's Model's own float parameters and buffers, as
    get_init_inputs() builds it on the meta device (`("weight", "float32")`): the tensors whose
    `requires_grad` and dtype a guard asks."""
    model = _meta_model(problem)
    if model is None:
        return ()
    tensors = [*model.named_parameters(recurse=False), *model.named_buffers(recurse=False)]
    return tuple(
        (name, str(t.dtype).removeprefix("torch.")) for name, t in tensors if t.is_floating_point()
    )


def attribute_terms(
    function: ast.FunctionDef | None,
    scalars: tuple[tuple[str, Any], ...],
    passed: tuple[str, ...],
    owner: ast.ClassDef | None = None,
    swept: dict[str, SweptValue] | None = None,
) -> list[str]:
    """`self.<attr> == <value>` for each scalar attribute the original code reads (in the method,
    or in the owner's methods it calls as `self.<method>(...)`, transitively) and the kernel does
    not take as an argument: the kernel has it built in (a head size, an approximation mode, an
    eps that torch.compile specialized), so another value must take the original path. A flag
    (bool or str) is pinned even where the kernel takes it: it picks a code path, and the judge
    ran one (red-team round fourteen's c07 took a wrong GPT-J path behind `is_neox_style`
    False, checked only True); a number the kernel takes stays free. An attribute the shape
    sweep changed (`swept`, kbot.publish.swept) is not built in: no term
    when every changed value passed, else the values that passed."""
    if function is None or not scalars:
        return []
    values = dict(scalars)
    methods = {
        node.name: node
        for node in (owner.body if owner is not None else [])
        if isinstance(node, ast.FunctionDef)
    }
    reads: list[str] = []
    pending, walked = [function], set()
    while pending:
        current = pending.pop(0)
        if current.name in walked:
            continue
        walked.add(current.name)
        for node in ast.walk(current):
            if not (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
            ):
                continue
            if node.attr in methods and node.attr not in walked:
                pending.append(methods[node.attr])
            elif (
                isinstance(node.ctx, ast.Load)
                and node.attr in values
                and (node.attr not in passed or isinstance(values[node.attr], (bool, str)))
                and node.attr not in reads
            ):
                reads.append(node.attr)
    swept = swept or {}
    terms = []
    for name in reads:
        if name not in swept:
            terms.append(f"self.{name} == {values[name]!r}")
        elif not swept[name].clean:
            terms.append(f"self.{name} in {tuple_source(swept[name].values)}")
    return terms


def weight_dtype_terms(weights: tuple[tuple[str, str], ...]) -> list[str]:
    """`self.weight.dtype == torch.float32` for each of the module's float tensors the kernel
    reads, at the dtype the judge checked it with (Model's as built): a module cast to
    another (`model.to(torch.bfloat16)`, a checkpoint loaded in 16 bits) keeps the original
    path, since the kernel's path for such a weight never ran (red-team round fourteen's c02
    took a wrong one there). A problem built with the callers' weight dtype (`kbot scan
    --profile-cmd`) is checked, and guarded, at that one."""
    return [f"self.{name}.dtype == torch.{dtype}" for name, dtype in weights]
