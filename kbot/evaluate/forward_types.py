"""What the forward check knows of the candidate's module level before it walks forward: the
kind of each module-level name (`module_constants`), and its classes (`CandidateTypes`): Enums
of numbers, `tl.constexpr` and str constants, whose `.value` or str methods give Python values,
and the plain classes, @dataclasses and typing.NamedTuples that forward may build or call into.
Used by `forward_path.check`; the calls themselves are judged in `forward_classes`."""

from __future__ import annotations

import ast
from collections.abc import Container

from kbot.evaluate.allowed import TORCH_VALUES
from kbot.evaluate.forward_kinds import CandidateTypes, ForwardFacts, HelperClass, Kind
from kbot.evaluate.names import Aliases

_SCALAR_TYPES = frozenset("int float bool str".split())
_ENUM_BASES = frozenset({"enum.Enum", "enum.IntEnum", "enum.StrEnum", "enum.Flag", "enum.IntFlag"})
_HELPER_BASES = frozenset({"object", "typing.NamedTuple"})
# str methods, by what they return: a str or a number (STR_SCALAR), or a list of str.
STR_SCALAR = frozenset(
    "capitalize casefold center count endswith expandtabs find format index isalnum isalpha "
    "isascii isdecimal isdigit isidentifier islower isnumeric isspace istitle isupper join "
    "ljust lower lstrip removeprefix removesuffix replace rfind rindex rjust rstrip startswith "
    "strip swapcase title upper zfill".split()
)
STR_LISTS = frozenset("partition rpartition rsplit split splitlines".split())
_STR_RESULTS = frozenset(
    "capitalize casefold center expandtabs format join ljust lower lstrip removeprefix "
    "removesuffix replace rjust rstrip strip swapcase title upper zfill".split()
)


def candidate_types(tree: ast.Module, aliases: Aliases) -> CandidateTypes:
    """The module's class names and its Enums of numbers; `module_constants` adds the
    constexpr and str constants, `forward_path` the helper classes (they need class facts)."""
    return CandidateTypes(
        names=frozenset(n.name for n in tree.body if isinstance(n, ast.ClassDef)),
        enums=_scalar_enums(tree, aliases),
        members=frozenset(_members(tree, aliases)),
    )


def _members(tree: ast.Module, aliases: Aliases) -> set[str]:
    """Every method name of the file's classes, and of its classes other than ModelNew and
    nn.Modules the fields, class attributes and `self.<name>` assignments that may hold a
    function."""
    members: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        module = any((aliases.qualname(b) or "").startswith("torch.nn.") for b in cls.bases)
        for node in cls.body:
            if isinstance(node, ast.FunctionDef):
                members.add(node.name)
                for sub in ast.walk(node) if not module and cls.name != "ModelNew" else ():
                    if _is_self_store(sub):  # not a ctx's attributes
                        members.add(sub.attr)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                if _annotation_kind(node.annotation) is None:
                    members.add(node.target.id)
            elif isinstance(node, ast.Assign) and not is_number_expr(node.value):
                members.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return {m for m in members if not (m.startswith("__") and m.endswith("__"))}


def _scalar_enums(tree: ast.Module, aliases: Aliases) -> dict[str, frozenset[str]]:
    """`class Mode(enum.Enum): LLAMA = 0`: its members are Python values, and so are their
    `.value` and `.name`. Only an Enum that defines nothing but members of numbers or strings
    (a method could be called on a member, or replace `.value`)."""
    enums: dict[str, frozenset[str]] = {}
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        if cls.keywords or cls.decorator_list or len(cls.bases) != 1:
            continue
        if aliases.qualname(cls.bases[0]) not in _ENUM_BASES:
            continue
        members: set[str] = set()
        for stmt in cls.body:
            if isinstance(stmt, ast.Pass) or (
                isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
            ):
                continue
            auto = (
                isinstance(stmt, ast.Assign)
                and isinstance(stmt.value, ast.Call)
                and aliases.qualname(stmt.value.func) == "enum.auto"
                and not stmt.value.args
            )
            if not (
                isinstance(stmt, ast.Assign)
                and len(stmt.targets) == 1
                and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id not in ("value", "name")
                and (auto or is_number_expr(stmt.value))
            ):
                break
            members.add(stmt.targets[0].id)
        else:
            enums[cls.name] = frozenset(members)
    return enums


def _is_self_store(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.ctx, ast.Store)
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    )


def scalar_member(node: ast.AST, types: CandidateTypes, shadowed: Container[str] = ()) -> bool:
    """`Mode.LLAMA` of an Enum of numbers, its `.value` or `.name`, or `_MODE.value` of a
    module-level `tl.constexpr(0)`: a Python number or string, never a tensor."""
    if isinstance(node, ast.Attribute) and node.attr in ("value", "name"):
        inner = node.value
        if (
            node.attr == "value"
            and isinstance(inner, ast.Name)
            and inner.id in types.constexprs
            and inner.id not in shadowed
        ):
            return True
        if _enum_member(inner, types, shadowed):
            return True
    return _enum_member(node, types, shadowed)


def _enum_member(node: ast.AST, types: CandidateTypes, shadowed: Container[str]) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id not in shadowed
        and node.attr in types.enums.get(node.value.id, ())
    )


def is_str(node: ast.AST, types: CandidateTypes, shadowed: Container[str] = ()) -> bool:
    """A str literal, a module-level str constant, an Enum member's `.name`, or a str method's
    str result of one of them (`_NAME.lower()`)."""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str)
    if isinstance(node, ast.JoinedStr):
        return True
    if isinstance(node, ast.Name):
        return node.id in types.strings and node.id not in shadowed
    if isinstance(node, ast.Attribute) and node.attr == "name":
        return _enum_member(node.value, types, shadowed)
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in _STR_RESULTS
        and is_str(node.func.value, types, shadowed)
    )


def stored_attributes(tree: ast.Module) -> set[str]:
    """Attribute names assigned or deleted anywhere in the file (`cfg.BLOCK = x`, `self.n +=
    1`): a field or class constant of that name may not keep the kind it was built with."""
    return {
        node.attr
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del))
    }


def helper_class(
    cls: ast.ClassDef, aliases: Aliases, facts: ForwardFacts, stored: set[str]
) -> HelperClass | None:
    """`cls` as forward may build it or call its static and class methods: a plain class (no
    bases but `object`), a @dataclass or a typing.NamedTuple; None for any other class (an
    nn.Module, an autograd.Function, an Enum, a subclass of anything else)."""
    bases = [aliases.qualname(b) or ast.unparse(b) for b in cls.bases]
    if cls.keywords or any(b not in _HELPER_BASES for b in bases):
        return None
    dataclass = _is_dataclass(cls, aliases)
    if len(cls.decorator_list) != int(dataclass):
        return None
    generated = dataclass or bases == ["typing.NamedTuple"]
    untracked = stored | {n.name for n in cls.body if isinstance(n, ast.FunctionDef)}
    fields: list[str] = []
    defaults: dict[str, Kind] = {}
    factories: list[ast.expr] = []
    attributes: dict[str, Kind] = {}
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and generated:
            annotation = ast.unparse(node.annotation)
            if "ClassVar" in annotation or "KW_ONLY" in annotation:
                continue
            value, keywords = node.value, {}
            if isinstance(value, ast.Call) and aliases.qualname(value.func) == "dataclasses.field":
                keywords = {k.arg: k.value for k in value.keywords}
                value = keywords.get("default")
                if "default_factory" in keywords:
                    factories.append(keywords["default_factory"])
            init = keywords.get("init")
            if not (isinstance(init, ast.Constant) and init.value is False):
                fields.append(node.target.id)
            if value is not None:
                defaults[node.target.id] = _constant_kind(value)
            if "InitVar" in annotation:
                untracked = untracked | {node.target.id}  # a parameter, not an attribute
        elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in (t for t in targets if isinstance(t, ast.Name)):
                attributes[target.id] = _constant_kind(node.value)
    return HelperClass(
        node=cls,
        facts=facts,
        fields=tuple(fields),
        defaults=defaults,
        tracked=frozenset(fields) - untracked,
        factories=tuple(factories),
        attributes={
            n: k for n, k in attributes.items() if n not in untracked and k != Kind.UNKNOWN
        },
    )


def _constant_kind(value: ast.expr) -> Kind:
    """A class-level value: a number or string, a tuple of them, or something else."""
    if is_number_expr(value):
        return Kind.SCALAR
    if isinstance(value, ast.Tuple) and all(is_number_expr(e) for e in value.elts):
        return Kind.CONTAINER
    return Kind.UNKNOWN


def _is_dataclass(cls: ast.ClassDef, aliases: Aliases) -> bool:
    return any(
        aliases.qualname(d.func if isinstance(d, ast.Call) else d) == "dataclasses.dataclass"
        for d in cls.decorator_list
    )


def dataclass_fields(cls: ast.ClassDef, aliases: Aliases) -> dict[str, Kind]:
    """A @dataclass's fields annotated as numbers (`head_dim: int`) or tuples of them: what its
    properties compute with is Python arithmetic on sizes. (A tensor stored in such a field
    and computed with in a property still meets the compute guard during the call.)"""
    if not _is_dataclass(cls, aliases):
        return {}
    fields: dict[str, Kind] = {}
    for node in cls.body:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            kind = _annotation_kind(node.annotation)
            if kind is not None:
                fields[node.target.id] = kind
    return fields


def _annotation_kind(annotation: ast.expr) -> Kind | None:
    if isinstance(annotation, ast.Name) and annotation.id in _SCALAR_TYPES:
        return Kind.SCALAR
    if isinstance(annotation, ast.Subscript):
        outer = annotation.value
        name = outer.attr if isinstance(outer, ast.Attribute) else getattr(outer, "id", "")
        parts = (
            annotation.slice.elts if isinstance(annotation.slice, ast.Tuple) else [annotation.slice]
        )
        scalar = all(
            (isinstance(p, ast.Name) and p.id in _SCALAR_TYPES)
            or (isinstance(p, ast.Constant) and p.value is Ellipsis)
            for p in parts
        )
        if name in ("Tuple", "tuple") and scalar:
            return Kind.CONTAINER
    return None


def module_constants(tree: ast.Module, aliases: Aliases, types: CandidateTypes) -> dict[str, Kind]:
    """Kinds of module-level names: numbers (and math/triton expressions of them, a constexpr's
    `.value`, an Enum member) are scalars, tuples of numbers are containers, mutable containers
    that the file mutates may hold tensors, anything else (a tensor built at import, say) counts
    as a tensor. Records the `tl.constexpr(...)` and str constants in `types`."""
    mutated = _mutated_names(tree)
    rebound = {
        name
        for node in ast.walk(tree)
        if isinstance(node, (ast.Global, ast.Nonlocal))
        for name in node.names
    }
    kinds: dict[str, Kind] = {name: Kind.TENSOR for name in rebound}  # state across calls
    constexprs: set[str] = set()
    strings: set[str] = set()
    scalar = lambda node: _is_scalar_expr(node, aliases, kinds, types)  # noqa: E731
    for node in tree.body:
        types.constexprs, types.strings = frozenset(constexprs), frozenset(strings)
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        else:
            continue
        if not isinstance(target, ast.Name) or target.id in aliases.names or target.id in rebound:
            continue
        constexprs.discard(target.id)
        strings.discard(target.id)
        if isinstance(value, ast.Lambda):
            kinds[target.id] = Kind.FUNCTION
            continue
        if scalar(value):
            kinds[target.id] = Kind.SCALAR
            if isinstance(value, ast.Call):
                if aliases.qualname(value.func) == "triton.language.constexpr":
                    constexprs.add(target.id)
            elif is_str(value, types):
                strings.add(target.id)
        elif isinstance(value, ast.Tuple) and all(scalar(e) for e in value.elts):
            kinds[target.id] = Kind.CONTAINER
        elif isinstance(value, (ast.Dict, ast.List, ast.Set)) and target.id not in mutated:
            elements = list(value.values) if isinstance(value, ast.Dict) else list(value.elts)
            kinds[target.id] = Kind.CONTAINER if all(map(scalar, elements)) else Kind.TENSORS
        elif isinstance(value, (ast.Dict, ast.List, ast.Set)):
            kinds[target.id] = Kind.TENSORS
        else:
            kinds[target.id] = Kind.TENSOR
    types.constexprs, types.strings = frozenset(constexprs), frozenset(strings)
    return kinds


def _is_scalar_expr(
    node: ast.AST, aliases: Aliases, known: dict[str, Kind], types: CandidateTypes
) -> bool:
    """Numbers, names of scalar constants, math./triton. calls or attributes of them, a
    constexpr's `.value`, an Enum member, and str methods of a str constant."""
    if is_number_expr(node) or scalar_member(node, types):
        return True
    if isinstance(node, ast.Name):
        return known.get(node.id) == Kind.SCALAR
    recurse = lambda n: _is_scalar_expr(n, aliases, known, types)  # noqa: E731
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in STR_SCALAR
        and is_str(node.func.value, types)
    ):
        return all(map(recurse, node.args)) and all(recurse(k.value) for k in node.keywords)
    if isinstance(node, ast.Attribute) and (aliases.qualname(node) or "") in TORCH_VALUES:
        return True  # `SUPPORTED = (torch.float16, torch.bfloat16)`: dtypes, as inline
    if isinstance(node, (ast.Call, ast.Attribute)):
        func = node.func if isinstance(node, ast.Call) else node
        dotted = aliases.qualname(func) or ""
        args = node.args if isinstance(node, ast.Call) else []
        return dotted.split(".")[0] in ("math", "triton") and all(map(recurse, args))
    if isinstance(node, ast.BinOp):
        return recurse(node.left) and recurse(node.right)
    if isinstance(node, ast.UnaryOp):
        return recurse(node.operand)
    return False


def _mutated_names(tree: ast.Module) -> set[str]:
    """Names whose value is changed in place somewhere: `name[k] = v`, `name.append(v)`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
            if isinstance(node.value, ast.Name):
                names.add(node.value.id)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            if isinstance(node.func.value, ast.Name) and node.func.attr in (
                "append",
                "extend",
                "insert",
                "update",
                "setdefault",
                "add",
                "__setitem__",
            ):
                names.add(node.func.value.id)
    return names


def is_number_expr(node: ast.AST) -> bool:
    return all(
        isinstance(n, (ast.Constant, ast.BinOp, ast.UnaryOp, ast.operator, ast.unaryop))
        for n in ast.walk(node)
    )
