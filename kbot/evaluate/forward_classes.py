"""The forward check's calls into the candidate's own classes: building a plain class, a
@dataclass or a typing.NamedTuple of the file (`cfg = LaunchConfig(BLOCK=1024)`), calling a
class's @staticmethod or @classmethod (`Launcher.run(x)`) or a method of an instance built in
forward, each followed into its body like a module-level function; and what the attributes of
such values are (a field built from a number is a number, an Enum member or a constexpr's
`.value` is a Python value). Mixed into `forward_walk.Walker` with `forward_calls.CallRules`;
what the classes are is read beforehand (`forward_types`)."""

from __future__ import annotations

import ast
import dataclasses
from typing import TYPE_CHECKING

from kbot.evaluate.allowed import AUTOGRAD_METHODS
from kbot.evaluate.forward_kinds import (
    MAX_CALL_DEPTH,
    MAYBE_TENSOR,
    TOO_DEEP,
    Callable,
    ForwardFacts,
    HelperClass,
    Kind,
    container_of,
)
from kbot.evaluate.forward_types import STR_LISTS, STR_SCALAR, is_str, scalar_member

if TYPE_CHECKING:
    from kbot.evaluate.forward_calls import CallSite

# What a dataclass's `field(default_factory=...)` may name besides the file's functions.
_BUILTIN_FACTORIES = frozenset("list dict set tuple".split())
# An object built in forward: its class, and the kinds of its fields that are known.
Built = tuple[str, dict[str, Kind]]


class ClassCalls:
    """The class half of `forward_walk.Walker`, which supplies `expr`, `follow`,
    `run_callable` and the state below. Also the candidate's nn.Module submodules
    (`self.norm(x)`) and torch.autograd.Functions (`F.apply(x)`)."""

    m: ForwardFacts
    env: dict[str, Kind]
    local_fns: dict[str, Callable]
    objects: dict[str, Built]  # local names bound to an object built in this function
    built: dict[int, Built]  # id() of each construction call walked here
    class_params: dict[str, str]  # a @classmethod's `cls` -> its class

    def class_named(self, node: ast.AST) -> str | None:
        """The candidate's class `node` names: `Launcher`, or a @classmethod's `cls`."""
        if not isinstance(node, ast.Name):
            return None
        if node.id in self.class_params:
            return self.class_params[node.id]
        if node.id in self.m.types.names and node.id not in self.env:
            return node.id
        return None

    def object_of(self, node: ast.AST) -> Built | None:
        if isinstance(node, ast.Name) and self.env.get(node.id) == Kind.OBJECT:
            return self.objects.get(node.id)
        return self.built.get(id(node)) if isinstance(node, ast.Call) else None

    def track(self, name: str, kind: Kind, value: ast.AST | None) -> None:
        """`name = value` in this function: what object, if any, `name` now holds."""
        self.objects.pop(name, None)
        self.class_params.pop(name, None)
        found = self.object_of(value) if value is not None else None
        if kind == Kind.OBJECT and found is not None:
            self.objects[name] = found

    def store_field(self, target: ast.Attribute, kind: Kind) -> None:
        """`cfg.BLOCK = v` here: the object's field holds what v is from now on."""
        found = self.object_of(target.value) if isinstance(target.value, ast.Name) else None
        if found is not None:
            found[1][target.attr] = kind

    def class_attribute(self, node: ast.Attribute, base: Kind) -> Kind | None:
        """`node`'s kind where its base is a class or object of the candidate's, an Enum member
        or a constexpr constant; None where the ordinary rules decide."""
        if scalar_member(node, self.m.types, self.env):
            return Kind.SCALAR
        if base != Kind.OBJECT:
            return None
        name = self.class_named(node.value)
        found = self.object_of(node.value)
        if found is not None and node.attr in found[1]:
            return found[1][node.attr]
        helper = self.m.types.helpers.get(name or (found[0] if found else ""))
        return helper.attributes.get(node.attr, Kind.UNKNOWN) if helper else Kind.UNKNOWN

    def construct(self, node: ast.Call, name: str, site: CallSite) -> Kind:
        """`LaunchConfig(BLOCK=1024)`: a plain class's __init__ is followed like a method; a
        @dataclass's or NamedTuple's generated one only stores its arguments (and runs the
        fields' default factories)."""
        helper = self.m.types.helpers.get(name)
        if helper is None:
            self.m.reject(
                node,
                f"`{name}(...)` builds a class kbot does not follow; forward may build plain "
                "classes, @dataclasses and typing.NamedTuples of the file (no other bases)",
            )
            return Kind.UNKNOWN
        init = helper.facts.methods.get("__init__")
        fields: dict[str, Kind] = {}
        if init is not None:
            self.follow(
                f"class:{name}.__init__", init, site.arg_kinds, True, site=site, facts=helper.facts
            )
        else:
            fields = _field_kinds(helper, site)
            for factory in helper.factories:
                self.default_factory(factory)
        self.built[id(node)] = (name, fields)
        return Kind.OBJECT

    def default_factory(self, factory: ast.expr) -> None:
        """`field(default_factory=f)` runs f (at module scope) each time the class is built."""
        if isinstance(factory, ast.Lambda):
            self.run_callable(Callable(factory, {}), (), Kind.UNKNOWN)
        elif isinstance(factory, ast.Name) and factory.id in self.m.functions:
            fn = self.m.functions[factory.id]
            self.run_callable(Callable(fn, module_key=f"fn:{factory.id}"), (), Kind.UNKNOWN)
        elif not (isinstance(factory, ast.Name) and factory.id in _BUILTIN_FACTORIES):
            self.m.reject(
                factory,
                f"`default_factory={ast.unparse(factory)}` runs code kbot cannot follow when "
                "the class is built in forward",
            )

    def class_method_call(self, node: ast.Call, cls: str, name: str, site: CallSite) -> Kind:
        """`Launcher.run(x)`: a @staticmethod or @classmethod of a class of the file."""
        helper = self.m.types.helpers.get(cls)
        method = helper.facts.methods.get(name) if helper else None
        decorators = _decorators(method)
        if helper is None or method is None or not decorators & {"staticmethod", "classmethod"}:
            self.m.reject(
                node,
                f"`{cls}.{name}(...)`: kbot follows a class's @staticmethod and @classmethod "
                "methods, and methods called on an instance built in forward",
            )
            return Kind.UNKNOWN
        return self.follow(
            f"class:{cls}.{name}", method, site.arg_kinds, "classmethod" in decorators,
            site=site, facts=helper.facts, bound_class=cls,
        )  # fmt: skip

    def object_call(self, node: ast.Call, func: ast.Attribute, site: CallSite) -> Kind:
        """`cfg.grid(n)` on an object built in forward: its method, `self`'s fields of the
        kinds they were built with (other attributes tensors)."""
        found = self.object_of(func.value)
        helper = self.m.types.helpers.get(found[0]) if found else None
        method = helper.facts.methods.get(func.attr) if helper else None
        if found is None or helper is None or method is None:
            self.m.reject(
                node,
                f"`{ast.unparse(func)}(...)` may call a method of the file's classes (or a "
                "function an object holds) that kbot cannot follow; call methods of a "
                "module-level class on the class or on an object built in the same function",
            )
            return Kind.UNKNOWN
        decorators = _decorators(method)
        if decorators & {"staticmethod", "classmethod"}:
            return self.class_method_call(node, found[0], func.attr, site)
        facts = dataclasses.replace(
            helper.facts, self_kinds={**helper.facts.self_kinds, **found[1]}
        )
        return self.follow(
            f"object:{found[0]}.{func.attr}", method, site.arg_kinds, True, site=site, facts=facts
        )

    def str_method(self, func: ast.Attribute, site: CallSite) -> Kind | None:
        """`_NAME.lower()` of a str constant with no tensor arguments: a str, number or list
        of str, never a tensor; None where the ordinary rules decide."""
        if not is_str(func.value, self.m.types, self.env):
            return None
        if any(k in MAYBE_TENSOR for k in site.kinds):
            return None
        if func.attr in STR_SCALAR:
            return Kind.SCALAR
        return Kind.CONTAINER if func.attr in STR_LISTS else None

    def submodule_call(self, node: ast.Call, facts: ForwardFacts, site: CallSite) -> Kind:
        """`self.norm(x)` of an nn.Module class of the file: its forward, walked with what
        its own __init__ says of its attributes (its launches count as forward's)."""
        forward = facts.methods.get("forward")
        if forward is None:
            self.m.reject(node, f"`{ast.unparse(node.func)}(...)` has no forward to check")
            return Kind.UNKNOWN
        site.consumed = True
        visit = (f"module:{id(facts)}:forward", tuple(site.arg_kinds))
        if self.depth > MAX_CALL_DEPTH:
            self.m.reject(forward, TOO_DEEP, rule="call-depth")
            return Kind.UNKNOWN
        if visit in self.m.visiting:
            return Kind.UNKNOWN
        self.m.visiting.add(visit)
        before = facts.launches
        try:
            return type(self)(facts, {}, self.depth + 1).run(
                forward, is_method=True, arg_kinds=site.arg_kinds, default_kind=Kind.TENSOR,
                keyword_kinds=site.keyword_kinds, star_kind=site.star_kind,
                callable_args=site.callables,
            )  # fmt: skip
        finally:
            self.m.visiting.discard(visit)
            self.m.launches += facts.launches - before

    def autograd_call(self, node: ast.Call, cls: str, name: str, site: CallSite) -> Kind:
        """`F.apply(...)` of a module-level torch.autograd.Function runs F.forward with a ctx
        (or F.forward, then F.setup_context(ctx, inputs, output)); `F.helper(...)` calls one
        of F's own static methods."""
        methods = self.m.autograd[cls]
        if name == "apply" and "forward" in methods:
            if "setup_context" not in methods:
                args = (Kind.CONTEXT, *site.arg_kinds)
                return self.follow(f"autograd:{cls}", methods["forward"], args, False, site=site)
            output = self.follow(
                f"autograd:{cls}", methods["forward"], site.arg_kinds, False, site=site
            )
            inputs = container_of(site.kinds)
            self.follow(
                f"autograd-setup:{cls}",
                methods["setup_context"],
                (Kind.CONTEXT, inputs, output),
                False,
            )
            return output
        static = "staticmethod" in _decorators(methods.get(name))
        if name in methods and name not in AUTOGRAD_METHODS and static:
            return self.follow(f"autograd:{cls}.{name}", methods[name], site.arg_kinds, False,
                               site=site)  # fmt: skip
        self.m.reject(
            node,
            f"`{cls}.{name}(...)`: call a torch.autograd.Function through `{cls}.apply(...)` "
            "(or its own static helpers)",
        )
        return Kind.UNKNOWN


def _field_kinds(helper: HelperClass, site: CallSite) -> dict[str, Kind]:
    """The kinds a generated __init__ stores in the fields it keeps: what is passed for each
    (in order, by name, or spread with `*`/`**`), else its default's."""
    kinds = dict(helper.defaults)
    passed = dict(zip(helper.fields, site.arg_kinds))
    for field in helper.fields:
        if field in site.keyword_kinds:
            kinds[field] = site.keyword_kinds[field]
        elif field in passed:
            kinds[field] = passed[field]
        elif site.star_kind is not None:
            kinds[field] = site.star_kind
    return {f: k for f, k in kinds.items() if f in helper.tracked}


def _decorators(method: ast.FunctionDef | None) -> set[str]:
    if method is None:
        return set()
    return {d.id for d in method.decorator_list if isinstance(d, ast.Name)}
