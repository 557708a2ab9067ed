"""The libraries' names as state (kbot.evaluate.state_check walks them with ModelNew's):
which object each name of the standard library's core modules, torch and Triton names,
what each list, dict or set among them holds, the size of every other loaded torch and Triton
module's `__all__`, and each public name of kbot's own loaded modules, compared after every call and, at load, against
their state before any candidate code ran (`library_baseline`, `library_change`).
"""

from __future__ import annotations

import sys

from kbot.evaluate import object_tables as tables

# Libraries whose names a candidate could rebind or whose tables it could grow or reorder (a
# call counter appended to `operator.__all__`): each name's object (every name of the
# standard library's modules, private ones too; torch's and Triton's public ones) and what each
# list, dict or set among them holds (_contents). torch's five such tables are constants
# (`torch.nn.functional.GRID_SAMPLE_PADDING_MODES`); none changed over kernel launches and
# torch ops on 2026-12-06.
LIBRARY = "library "
_STDLIB_STATE = (
    "builtins operator functools itertools math typing collections dataclasses enum types "
    "contextlib".split()
)
_TORCH_STATE = (
    "torch torch.nn torch.nn.functional torch.autograd torch.autograd.grad_mode triton "
    "triton.language".split()
)


_ALL_OF = ("torch.", "triton.")
_CLASSES_OF = ("triton.runtime.interpreter",)


def library_state() -> list[tuple[str, object]]:
    found: list[tuple[str, object]] = []
    for library in _STDLIB_STATE + _TORCH_STATE:
        table = tables.attributes(sys.modules.get(library)) if library in sys.modules else None
        stdlib = library in _STDLIB_STATE
        for name, value in tables.items(table):
            if name.startswith("_") and name != "__all__" and not stdlib:  # torch caches
                continue
            held = _contents(value) if type(value) in (list, dict, set) else None
            found.append((f"{LIBRARY}{library}.{name}", ("lib", id(value), held)))
    # kbot's own modules, whose functions the candidate's process calls to judge it (a
    # rebound `autotune_turns.unrun` reporting every config run): each public name's object,
    # and each attribute of the classes they define (`InputPlaces.place` rebound on its class
    # placed every trial's inputs aligned).
    for library in [m for m in list(sys.modules) if m.startswith("kbot.")]:
        for name, value in tables.items(tables.attributes(sys.modules.get(library))):
            if name.startswith("_"):
                continue
            found.append((f"{LIBRARY}{library}.{name}", ("lib", id(value), None)))
            if isinstance(value, type) and value.__module__ == library:
                found += _class_members(f"{library}.{name}", value)
    # The classes the candidate's process runs kernels and tensors with: each attribute of
    # Triton's interpreter classes, as kbot patched them for its bounds, order and rounding
    # checks (round ten's c09 put the originals back from the patches' closures and ran a
    # racing scan unchecked), and of torch.Tensor.
    for library in _CLASSES_OF:
        for name, value in tables.items(tables.attributes(sys.modules.get(library))):
            if isinstance(value, type) and value.__module__ == library:
                found += _class_members(f"{library}.{name}", value)
    tensor = getattr(sys.modules.get("torch"), "Tensor", None)
    if isinstance(tensor, type):
        found += _class_members("torch.Tensor", tensor)
    # Every loaded torch and Triton module's `__all__`, which nothing grows as it runs (a
    # counter appended to `torch.nn.modules.__all__` was round eight's c14).
    for library in [m for m in list(sys.modules) if m.startswith(_ALL_OF)]:
        if library in _TORCH_STATE:
            continue
        table = getattr(sys.modules.get(library), "__all__", None)
        if type(table) in (list, tuple, set):
            found.append((f"{LIBRARY}{library}.__all__", ("lib", id(table), len(table))))
    return found


def _contents(table: list | dict | set) -> tuple | frozenset:
    """What a library table holds, comparable across calls: plain values as themselves, anything
    else as which object it is. Its length alone let a candidate keep a count in the order of a
    list (rotating `typing.EXCLUDED_ATTRIBUTES`) or in a private dict (red-team round twelve)."""
    if type(table) is dict:
        return tuple((_plain(key), _plain(value)) for key, value in list(table.items()))
    if type(table) is set:
        return frozenset(_plain(value) for value in list(table))
    return tuple(_plain(value) for value in list(table))


def _plain(value: object) -> object:
    """`value` itself when it is a plain value that compares equal to itself; else its id."""
    if type(value) is float:
        return ("float", value.hex())
    if type(value) in (str, int, bool, bytes) or value is None:
        return value
    return ("object", id(value))


def _class_members(where: str, cls: type) -> list[tuple[str, object]]:
    """Which object each attribute of `cls` is (its own table, read without running it)."""
    return [
        (f"{LIBRARY}{where}.{attribute}", ("lib", id(member), None))
        for attribute, member in tables.items(tables.class_table(cls))
    ]


def library_baseline() -> dict[str, object]:
    """The libraries' public names as they are before any candidate code runs."""
    return dict(library_state())


def library_change(baseline: dict[str, object]) -> str | None:
    """The first library name (`operator.__all__`) whose object or size differs from the
    baseline, or None; names that appeared or went since (lazy imports) do not count."""
    for name, value in library_state():
        if name in baseline and baseline[name] != value:
            return name.removeprefix(LIBRARY)
    return None
