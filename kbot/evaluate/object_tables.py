"""Reading a candidate's objects without running its code, for the state walk
(kbot.evaluate.state_check) and the library tables' walk (kbot.evaluate.library_state).

Tables are read through the builtin types' own descriptors (`type.__dict__["__dict__"]`,
`dict.items`), never through an attribute lookup a class of the candidate's could override;
and an object is sorted into what is walked (the candidate's state) and what is a shared
reference (modules, library functions and classes, dtypes) by its type alone.
"""

from __future__ import annotations

import collections
import functools
import sys
import types

import torch

PLAIN_TYPES = (bool, int, float, str, bytes, complex, type(None))


class StateTypeError(Exception):
    """The candidate keeps state of a kind the judge cannot read without running its code."""


def canonical(key: object, where: str) -> str:
    """A dict key or set item as a comparable string: plain values typed, tuples of them."""
    kind = type(key)
    if kind in PLAIN_TYPES:
        return f"{kind.__name__}:{key!r}"
    if kind is torch.dtype:  # `{torch.float16: tl.float16}` tables; a dtype holds no attributes
        return f"dtype:{key}"
    if kind in (tuple, frozenset):
        parts = [
            canonical(k, where)
            for k in (tuple.__iter__(key) if kind is tuple else frozenset.__iter__(key))
        ]
        return f"{kind.__name__}({', '.join(parts if kind is tuple else sorted(parts))})"
    if is_reference(key) and stateless(key):
        return f"{kind.__name__}@{id(key)}"
    raise StateTypeError(f"`{where}` has a key of type {kind.__name__}; keep plain keys")


def resolves(cls: type) -> bool:
    """Whether `cls` is what its module and qualified name lead to."""
    where: object = sys.modules.get(module_of(cls))
    try:
        qualname = type.__dict__["__qualname__"].__get__(cls)
    except AttributeError:
        return False
    for part in str(qualname).split("."):
        table = class_table(where) if isinstance(where, type) else attributes(where)
        if where is None or table is None or part not in table:
            return False
        where = table[part]
    return where is cls


def stateless(value: object) -> bool:
    """References whose attributes are not walked: modules, functions, classes, and torch's op
    namespaces (they cache overloads as they are used)."""
    kind = type(value)
    return (
        kind in _CALLABLE_TYPES
        or kind is types.ModuleType
        or issubclass(kind, type)
        or module_of(kind).startswith("torch._ops")
    )


def is_reference(value: object) -> bool:
    """Objects shared by everyone and holding none of the call's state: modules, library
    functions and classes, dtypes and devices, typing's constructs, torch's op namespaces."""
    kind = type(value)
    if kind in _REFERENCE_TYPES or issubclass(kind, type):
        return True
    if kind in _CALLABLE_TYPES:
        return True  # a library's (the candidate's own are walked before this)
    top = module_of(kind).split(".")[0]
    # enum: the standard library's own members, such as the FlagBoundary every Flag class
    # holds as `_boundary_` (an IntFlag of the candidate's was refused for it)
    if top in ("typing", "typing_extensions", "__future__", "weakref", "_weakref", "enum"):
        return True
    return top == "torch" and kind is not torch.Generator


_CALLABLE_TYPES = (
    types.FunctionType,
    types.BuiltinFunctionType,
    types.BuiltinMethodType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.MethodWrapperType,
    types.ClassMethodDescriptorType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
    type(collections.namedtuple("_Pair", "a b").a),  # a NamedTuple's field accessor
    functools.cached_property,  # its value lives in the instance's attributes, walked there
)
_REFERENCE_TYPES = (
    types.ModuleType,
    torch.dtype,
    torch.device,
    torch.layout,
    torch.memory_format,
    type(Ellipsis),
    type(NotImplemented),
)


def submodules(model: torch.nn.Module):
    """(dotted path, module) of ModelNew and every submodule, read from nn.Module's own
    `_modules` tables (never through a method a subclass could override)."""
    stack = [("", model)]
    seen: set[int] = set()
    while stack:
        path, sub = stack.pop()
        if id(sub) in seen:
            continue
        seen.add(id(sub))
        yield path, sub
        children = dict(items(attributes(sub))).get("_modules")
        for name, child in reversed(items(children)):
            if child is not None:
                stack.append((f"{path}.{name}" if path else name, child))


_TYPE_DICT = type.__dict__["__dict__"]  # type's own `__dict__` getter (no metaclass's)
_TYPE_MODULE = type.__dict__["__module__"]
# How builtin classes hold `__dict__`; a class of the candidate's that defines its own would run
# code when the walk reads it.
_DESCRIPTORS = (type(_TYPE_DICT), type(types.ModuleType.__dict__["__dict__"]))


def class_table(cls: type):
    return _TYPE_DICT.__get__(cls)


def module_of(cls: type) -> str:
    try:
        name = _TYPE_MODULE.__get__(cls)
    except AttributeError:
        return ""
    return name if type(name) is str else ""


def attributes(value: object) -> dict | None:
    """An object's own attribute table, read past any `__dict__` its class defines (a class
    that defines one is refused: the walk would run it)."""
    if type(value) is type:
        return class_table(value)
    for cls in type(value).__mro__:
        entry = class_table(cls).get("__dict__")
        if entry is not None and type(entry) not in _DESCRIPTORS:
            raise StateTypeError(f"class {cls.__name__} defines `__dict__`; remove it")
    try:
        table = object.__getattribute__(value, "__dict__")
    except AttributeError:  # __slots__, or a builtin object
        return None
    return table if type(table) is dict else None


def items(table) -> list:
    """A dict's or a class table's items, through the builtin methods."""
    if table is None:
        return []
    if type(table) is types.MappingProxyType:
        return list(table.items())
    return list(dict.items(table))
