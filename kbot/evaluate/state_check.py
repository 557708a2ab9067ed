"""What a candidate's process compares after every call (host_session): everything a call could
change and carry to the next one, so a kernel cannot keep a call counter or a cache.

The walk starts at ModelNew (every attribute of every submodule, nn.Module's own tables
included: a hook's closure is state too) and at the candidate's module (its globals, its
classes' attributes, its functions' default arguments and closed-over values), and follows
lists, tuples, dicts, sets, the candidate's own objects and functions. Tensors are compared
byte for byte, plain values by value, and a name that appears or disappears is a change.

The walk never runs the candidate's code: containers are read through the builtin types'
own methods (`dict.items(d)`, not `d.items()`), types are read with `type()` (not
`isinstance`, which may ask an object's `__class__`), and only builtin values are compared.
A class of the candidate's that could run code when the judge touches a module (an override of
nn.Module's machinery) or a tensor subclass in the state is refused by `audit_classes` first.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from typing import Any

import torch

from kbot.evaluate import object_tables as tables
from kbot.evaluate.allowed import (
    CLASS_MACHINERY,
    IMPLICIT_DUNDERS,
    MODULE_MACHINERY,
    NN_MODULE_MACHINERY,
)
from kbot.evaluate.library_state import LIBRARY, library_state
from kbot.evaluate.object_tables import StateTypeError

_TENSORS = (torch.Tensor, torch.nn.Parameter)
_MAX_DEPTH = 8
# Attributes a class may not define where the judge would run them: nn.Module's machinery
# (the judge moves, loads and walks ModelNew through it) and the hooks Python runs unasked.
# `__dict__` and `__class__` too: the walk reads them.
_JUDGE_TOUCHES = NN_MODULE_MACHINERY | IMPLICIT_DUNDERS | {"__dict__", "__class__"}


def audit_classes(model: torch.nn.Module, module: Any) -> None:
    """Refuses (StateTypeError) a module class of the candidate's that overrides what the judge
    calls on ModelNew and its submodules, and any tensor subclass in ModelNew's state."""
    for path, sub in tables.submodules(model):
        for cls in type(sub).__mro__:
            if tables.module_of(cls).split(".")[0] == "torch" or cls is object:
                continue
            touched = sorted(_JUDGE_TOUCHES & set(tables.class_table(cls)) - {"__init__"})
            if touched:
                where = f"submodule `{path}`" if path else "ModelNew"
                raise StateTypeError(
                    f"{where} is a {cls.__name__}, which defines `{touched[0]}`: the judge "
                    "calls nn.Module's own; define only __init__, forward and helpers"
                )
    walk(model, module)  # refuses a tensor subclass or an object it cannot compare


def snapshot(
    model: torch.nn.Module | None, module: Any, identity: bool = True
) -> dict[str, object]:
    """What `walk` finds, each tensor's storage bytes cloned (`identity`: as walk's)."""
    return {
        name: value.copied() if type(value) is _TensorState else value
        for name, value in walk(model, module, identity)
    }


def kept_tensors(found: list[tuple[str, object]]) -> list[tuple[str, torch.Tensor]]:
    """Of what `walk` found, each tensor as the whole storage it keeps (a flat uint8 view)."""
    return [(name, value.bytes) for name, value in found if type(value) is _TensorState]


def first_change(
    before: dict[str, object], model: torch.nn.Module | None, module: Any, identity: bool = True
):
    """The name of the first value that differs from `before` (a snapshot taken with the same
    `identity`), or None."""
    now = dict(walk(model, module, identity))
    for name in sorted(before.keys() | now.keys()):
        if name.startswith(LIBRARY) and not (name in before and name in now):
            continue  # a library's lazily imported submodule appearing is not a change
        if name not in before or name not in now:
            return name
        old, new = before[name], now[name]
        if type(old) is _TensorState and type(new) is _TensorState:
            if not old.same(new):
                return name
        elif type(old) is _TensorState or type(new) is _TensorState or old != new:
            return name
    return None


def walk(model: torch.nn.Module | None, module: Any, identity: bool = True):
    """(name, value) of each tensor (its whole storage) and plain value reachable from ModelNew
    and the candidate's module; library objects that hold no state of the candidate's appear
    as references; anything else that could hold state is refused (StateTypeError). Without
    `identity`, which of the candidate's containers and objects sits where is left out and
    only what they hold is compared (two constructions that each build an equal config dict
    are alike; between calls, a ring of equal lists rotated each call is not)."""
    owner = getattr(module, "__name__", None) if module is not None else None
    walker = _Walker(owner, tables.attributes(module) if module is not None else None, identity)
    if model is not None:
        for path, sub in tables.submodules(model):
            for name, value in tables.items(tables.attributes(sub)):
                if name != "_modules":
                    walker.visit(f"{path}.{name}" if path else name, value, 0)
    walker.found.extend(library_state())
    if module is not None:
        injected = _interpreter_globals()
        for name, value in tables.items(tables.attributes(module)):
            if name in MODULE_MACHINERY:
                continue
            if name in injected and injected[name] is value:
                continue  # Triton's interpreter copies its own globals into a kernel's module
            walker.visit(f"module-level {name}", value, 0)
    return walker.found


class _TensorState:
    """A tensor as the walk compares it: its view and every byte of its storage (a counter in
    the storage past the view, or behind an empty view, is state too)."""

    def __init__(self, tensor: torch.Tensor) -> None:
        self.view = (tuple(tensor.shape), tuple(tensor.stride()), tensor.storage_offset())
        # An in-place write bumps the version even where it leaves the bytes as they were (a
        # `zero_()` each call counts calls in `_version`); flags are state too.
        self.meta = (tensor.dtype, _version(tensor), tensor.requires_grad, id(tensor))
        try:
            storage = tensor.untyped_storage()
        except Exception as exc:  # noqa: BLE001 - sparse, nested: no bytes to compare
            raise StateTypeError(f"a tensor without plain storage ({exc})") from None
        self.bytes = torch.empty(0, dtype=torch.uint8, device=tensor.device).set_(storage)

    def copied(self) -> _TensorState:
        twin = object.__new__(_TensorState)
        twin.view, twin.meta, twin.bytes = self.view, self.meta, self.bytes.clone()
        return twin

    def same(self, other: _TensorState) -> bool:
        return (
            self.view == other.view
            and self.meta == other.meta
            and same_bits(self.bytes, other.bytes)
        )


class _Walker:
    def __init__(
        self, owner: str | None, owner_globals: dict | None = None, identity: bool = True
    ) -> None:
        self.owner = owner  # the candidate module's name: its classes and functions are walked
        self.owner_globals = owner_globals
        self.identity = identity  # record which container or object sits where (walk)
        self.found: list[tuple[str, object]] = []
        self.seen: set[int] = set()

    def visit(self, name: str, value: object, depth: int) -> None:
        kind = type(value)
        if kind in tables.PLAIN_TYPES:
            # typed and by repr: 0, 0.0 and False are three states, a NaN equals itself
            self.found.append((name, (kind.__name__, repr(value))))
            return
        if depth > _MAX_DEPTH:
            raise StateTypeError(f"`{name}` is nested deeper than {_MAX_DEPTH} levels")
        if id(value) in self.seen:
            self.found.append((name, ("seen", kind.__name__, self._id(value))))
            return
        self.seen.add(id(value))
        if issubclass(kind, torch.Tensor):
            self._tensor(name, value, depth)
        elif kind in _CONTAINERS or issubclass(kind, _CONTAINERS):
            self._container(name, value, depth)
        elif kind is types.FunctionType and self._owns_function(value):
            # A mutable default argument or a closed-over list outlives the call.
            self.visit(f"{name}'s default arguments", value.__defaults__, depth + 1)
            self.visit(f"{name}'s keyword defaults", value.__kwdefaults__, depth + 1)
            for index, cell in enumerate(value.__closure__ or ()):
                try:
                    contents = cell.cell_contents
                except ValueError:  # a cell not yet filled
                    continue
                self.visit(f"{name}'s closure cell {index}", contents, depth + 1)
            self._attributes(name, value, depth)
        elif kind is types.MethodType:
            self.visit(f"{name}.__func__", value.__func__, depth + 1)
            self.visit(f"{name}.__self__", value.__self__, depth + 1)  # its object's state
        elif kind is property:
            for part in ("fget", "fset", "fdel"):
                self.visit(f"{name}.{part}", getattr(value, part), depth + 1)
        elif issubclass(kind, type) and self._owns_class(value):
            for attribute, member in tables.items(tables.class_table(value)):
                if attribute == "__dataclass_fields__":
                    self._fields(f"{name}.{attribute}", member, depth + 1)
                elif attribute not in CLASS_MACHINERY:
                    if type(member) in (staticmethod, classmethod):
                        member = member.__func__
                    self.visit(f"{name}.{attribute}", member, depth + 1)
        elif kind is functools.partial:
            self.visit(f"{name}.func", value.func, depth + 1)
            self.visit(f"{name}.args", value.args, depth + 1)
            self.visit(f"{name}.keywords", value.keywords, depth + 1)
        elif (
            issubclass(kind, torch.nn.Module)
            or kind is types.SimpleNamespace
            or self._owns_class(kind)
        ):
            # which object sits where is state too (a ring of equal lists rotated each call)
            self.found.append((name, ("object", kind.__name__, self._id(value))))
            self._attributes(name, value, depth)
            self._slots(name, value, depth)
        elif tables.module_of(kind).split(".")[0] == "triton":
            self._triton(name, value, depth)
        elif tables.is_reference(value):
            # a module, a library function or class, a dtype: shared, stateless for the call;
            # only which object is bound here can change. A library object with attributes of
            # its own (a torch distribution, a typing alias's arguments) can hold a tensor or
            # a list: those are walked.
            attributes = None if tables.stateless(value) else tables.attributes(value)
            self.found.append((name, ("ref", id(value))))
            for attribute, member in tables.items(attributes):
                self.visit(f"{name}.{attribute}", member, depth + 1)
        else:
            raise StateTypeError(
                f"`{name}` is a {kind.__name__}, which can hold state the judge cannot compare; "
                "forward keeps no state: keep plain values, tensors, lists and dicts"
            )

    def _id(self, value: object) -> int | None:
        return id(value) if self.identity else None

    def _owns_function(self, function: types.FunctionType) -> bool:
        """Defined in the candidate's module: its globals are that module's (a function's
        `__module__` is only a name the candidate could set)."""
        return self.owner_globals is not None and function.__globals__ is self.owner_globals

    def _owns_class(self, cls: type) -> bool:
        """The candidate's class, or one whose `__module__` names no module that holds it (a
        class claiming to be torch's is walked as the candidate's)."""
        if tables.module_of(cls) == self.owner:
            return True
        return bool(type.__dict__["__flags__"].__get__(cls) & _HEAP_TYPE) and not tables.resolves(
            cls
        )

    def _tensor(self, name: str, value: torch.Tensor, depth: int) -> None:
        if type(value) not in _TENSORS:  # its methods would run in the comparison
            raise StateTypeError(f"`{name}` is a {type(value).__name__}: keep plain tensors")
        self.found.append((name, _TensorState(value)))
        if value.grad is not None:  # a counter in a parameter's gradient is state too
            self.visit(f"{name}.grad", value.grad, depth + 1)
        self._attributes(name, value, depth)

    def _container(self, name: str, value: object, depth: int) -> None:
        kind = type(value)
        if issubclass(kind, dict):
            items = list(dict.items(value))
            keys = [tables.canonical(key, name) for key, _ in items]
            self.found.append((name, (kind.__name__, tuple(keys), self._id(value))))
            for key, (_, item) in zip(keys, items):
                self.visit(f"{name}[{key}]", item, depth + 1)
        elif issubclass(kind, (list, tuple)):
            items = list(list.__iter__(value) if issubclass(kind, list) else tuple.__iter__(value))
            self.found.append((name, (kind.__name__, len(items), self._id(value))))
            for index, item in enumerate(items):
                self.visit(f"{name}[{index}]", item, depth + 1)
        else:  # set, frozenset
            items = set.__iter__(value) if issubclass(kind, set) else frozenset.__iter__(value)
            self.found.append(
                (
                    name,
                    (
                        kind.__name__,
                        tuple(sorted(tables.canonical(v, name) for v in items)),
                        self._id(value),
                    ),
                )
            )

    def _fields(self, name: str, fields: object, depth: int) -> None:
        """A dataclass's Field records: a default, a default factory and the metadata mapping
        are the candidate's objects, which a call can change (a list in `field(metadata=...)`
        kept a counter the walk never saw)."""
        if type(fields) is not dict:
            raise StateTypeError(f"`{name}` is a {type(fields).__name__}: leave it to @dataclass")
        for key, record in dict.items(fields):
            where = f"{name}[{tables.canonical(key, name)}]"
            if type(record) is not dataclasses.Field:
                raise StateTypeError(f"`{where}` is a {type(record).__name__}, not a Field")
            for part in ("default", "default_factory"):
                held = object.__getattribute__(record, part)
                if held is not dataclasses.MISSING:
                    self.visit(f"{where}.{part}", held, depth + 1)
            metadata = object.__getattribute__(record, "metadata")
            items = tables.items(metadata) if type(metadata) is types.MappingProxyType else None
            if items is None:
                raise StateTypeError(f"`{where}.metadata` is a {type(metadata).__name__}")
            self.found.append(
                (f"{where}.metadata", tuple(tables.canonical(k, where) for k, _ in items))
            )
            for item_key, item in items:
                self.visit(
                    f"{where}.metadata[{tables.canonical(item_key, where)}]", item, depth + 1
                )

    def _slots(self, name: str, value: object, depth: int) -> None:
        """What `__slots__` keep (a `@dataclass(slots=True)`), read through the slots' own
        member descriptors: no code of the class runs."""
        for cls in type(value).__mro__:
            for slot, member in tables.items(tables.class_table(cls)):
                if type(member) is types.MemberDescriptorType:
                    try:
                        held = member.__get__(value, cls)
                    except AttributeError:  # an empty slot
                        continue
                    self.visit(f"{name}.{slot}", held, depth + 1)

    def _attributes(self, name: str, value: object, depth: int) -> None:
        for attribute, member in tables.items(tables.attributes(value)):
            self.visit(f"{name}.{attribute}", member, depth + 1)

    def _triton(self, name: str, value: object, depth: int) -> None:
        """Triton's objects: a kernel's Python function, an autotuner's configs and wrapped
        kernel, a config's values (their caches, filled by the first launch, are not state of
        the candidate's); any other Triton object, everything it holds."""
        import triton
        import triton.language as tl

        kind = type(value)
        fields = tables.attributes(value) or {}
        if kind is tl.constexpr:
            self.visit(f"{name}.value", fields.get("value"), depth + 1)
        elif kind is triton.Config:
            self.found.append((name, ("object", "Config")))
            self._attributes(name, value, depth)
        elif "fn" in fields:  # a JITFunction, an Autotuner, a Heuristics
            self.found.append((name, ("object", kind.__name__)))
            self.visit(f"{name}.fn", fields["fn"], depth + 1)
            for attribute in _TRITON_WALKED.get(kind.__name__, ()) + _KERNEL_WALKED:
                if attribute in fields:
                    self.visit(f"{name}.{attribute}", fields[attribute], depth + 1)
        else:
            # Any other Triton object is walked as an object of the candidate's: which object
            # sits where and all it holds. A TensorDescriptor's `base` tensor and its shape and
            # strides lists are the candidate's to change (round nine: counters, result caches
            # and output pools hidden there were accepted while only its id was recorded).
            self.found.append((name, ("object", kind.__name__, id(value))))
            self._attributes(name, value, depth)
            self._slots(name, value, depth)


# What the walk reads of Triton's kernel wrappers besides the function they wrap.
_TRITON_WALKED = {"Autotuner": ("configs",), "Heuristics": ("values",)}
# ... and of every kernel wrapper: the settings it was made with (the interpreter's `kwargs`
# dict) and the hooks a launch would run, which only the candidate could have filled.
_KERNEL_WALKED = ("kwargs", "pre_run_hooks")
_CONTAINERS = (dict, list, tuple, set, frozenset)


_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement, not C's


def _version(tensor: torch.Tensor) -> int:
    try:
        return tensor._version
    except RuntimeError:  # an inference tensor keeps no version counter
        return -1


def _interpreter_globals() -> dict:
    import sys

    interpreter = sys.modules.get("triton.runtime.interpreter")
    return dict(vars(interpreter)) if interpreter is not None else {}


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    if a.is_complex() or a.dtype == torch.bool:
        return torch.equal(a, b)
    # Bytes, not values: NaN equals itself, -0.0 differs from 0.0.
    return torch.equal(_bytes(a), _bytes(b))


def _bytes(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1).contiguous().view(torch.uint8)  # 1-d first: a 0-d tensor has no byte view
