"""Walking forward's call graph: each value's kind (tensor, Python number, container) is
tracked through assignments, so grid math on sizes passes and tensor math is reported with its
line. This module walks statements and expressions; what a call may be is decided in
`forward_calls`, the kinds and the checker's facts are in `forward_kinds`. Used by
`forward_path.check`."""

from __future__ import annotations

import ast

from kbot.evaluate.allowed import CONTEXT_MANAGERS, SCALAR_ATTRS, TENSOR_ATTRS
from kbot.evaluate.forward_calls import CallRules
from kbot.evaluate.forward_classes import Built, ClassCalls
from kbot.evaluate.forward_kinds import (
    MAX_CALL_DEPTH,
    MAYBE_TENSOR,
    TOO_DEEP,
    Callable,
    ForwardFacts,
    Kind,
    container_of,
    element_of,
    join_arith,
)
from kbot.evaluate.forward_operators import OperatorRules
from kbot.evaluate.forward_params import bind_parameters

# The settings torch.nn layers keep from their constructors, by kind.
LAYER_SETTINGS: dict[str, Kind] = {
    **dict.fromkeys(
        "embedding_dim num_embeddings padding_idx max_norm in_features out_features "
        "in_channels out_channels groups eps momentum num_features num_groups num_channels "
        "negative_slope dim p approximate inplace affine elementwise_affine padding_mode "
        "track_running_stats beta threshold min_val max_val".split(),
        Kind.SCALAR,
    ),
    **dict.fromkeys(
        "kernel_size stride padding dilation output_padding normalized_shape".split(),
        Kind.CONTAINER,
    ),
}


class Walker(CallRules, ClassCalls, OperatorRules):
    """Walks one function body in order, binding names to kinds and recording violations.
    Calls are judged by `CallRules` (forward_calls), those into the candidate's classes by
    `ClassCalls` (forward_classes), operators and literals by `OperatorRules`
    (forward_operators)."""

    def __init__(
        self,
        module: ForwardFacts,
        env: dict[str, Kind],
        depth: int = 0,
        local_fns: dict[str, Callable] | None = None,
    ) -> None:
        self.m = module
        self.env = dict(env)
        self.depth = depth
        self.local_fns = dict(local_fns or {})
        self.return_kinds: list[Kind] = []
        self.objects: dict[str, Built] = {}
        self.built: dict[int, Built] = {}
        self.class_params: dict[str, str] = {}

    def run(
        self,
        fn: ast.FunctionDef | ast.Lambda,
        is_method: bool = False,
        arg_kinds=None,
        keyword_kinds=None,
        default_kind: Kind = Kind.UNKNOWN,
        star_kind: Kind | None = None,
        callable_args: dict | None = None,
    ) -> Kind:
        """Binds the parameters (forward_params), walks the body and returns the kind of what
        it returns."""
        bind_parameters(
            self, fn, is_method, arg_kinds, keyword_kinds or {}, default_kind, star_kind,
            callable_args or {},
        )  # fmt: skip
        if isinstance(fn, ast.Lambda):
            self.return_kinds.append(self.expr(fn.body))
        else:
            for stmt in fn.body:
                self.stmt(stmt)
        if self.return_kinds and all(k == Kind.SCALAR for k in self.return_kinds):
            return Kind.SCALAR
        if Kind.TENSORS in self.return_kinds:
            return Kind.TENSORS
        return Kind.TENSOR if Kind.TENSOR in self.return_kinds else Kind.UNKNOWN

    # ---- statements -------------------------------------------------------------------
    def stmt(self, node: ast.stmt) -> None:
        if isinstance(node, ast.Assign):
            kind = self.expr(node.value)
            for target in node.targets:
                self.bind(target, kind, node.value)
        elif isinstance(node, ast.AnnAssign):
            kind = self.expr(node.value) if node.value is not None else Kind.UNKNOWN
            self.bind(node.target, kind, node.value)
        elif isinstance(node, ast.AugAssign):
            left = self.expr(_as_load(node.target))
            right = self.expr(node.value)
            self.arith(node, left, right, node.op)
            self.bind(node.target, join_arith(left, right), None)
        elif isinstance(node, ast.Return):
            self.return_kinds.append(
                self.expr(node.value) if node.value is not None else Kind.SCALAR
            )
        elif isinstance(node, ast.Expr):
            self.expr(node.value)
        elif isinstance(node, (ast.If, ast.While)):
            self.test(node.test)
            for child in node.body + node.orelse:
                self.stmt(child)
        elif isinstance(node, ast.For):
            self.bind(node.target, self.iteration(node.iter), None)
            for child in node.body + node.orelse:
                self.stmt(child)
        elif isinstance(node, ast.With):
            for item in node.items:
                self.context_manager(item.context_expr)
                if item.optional_vars is not None:
                    self.bind(item.optional_vars, Kind.UNKNOWN, None)
            for child in node.body:
                self.stmt(child)
        elif isinstance(node, ast.Assert):
            self.test(node.test)
        elif isinstance(node, ast.FunctionDef):
            for decorator in node.decorator_list:
                self.expr(decorator)
            self.env[node.name] = Kind.FUNCTION
            self.local_fns[node.name] = Callable(node, dict(self.env), owner=id(self))
            self.run_callable(self.local_fns[node.name], (), Kind.UNKNOWN)
        elif isinstance(node, ast.Raise) and node.exc is not None:
            self.expr(node.exc)
        elif isinstance(node, (ast.Pass, ast.Break, ast.Continue, ast.Global, ast.Nonlocal)):
            pass  # carry no compute; `global` names are tensors (forward_path)
        elif isinstance(node, ast.ClassDef):
            self.env[node.name] = Kind.OBJECT  # a local class: no call on it is followed
        elif isinstance(node, (ast.Import, ast.ImportFrom, ast.Delete)):
            pass  # imports have rules of their own; `del name` computes nothing
        else:  # try, match, and whatever else holds statements and expressions
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.stmt):
                    self.stmt(child)
                elif isinstance(child, ast.expr):
                    self.expr(child)
                else:
                    for grandchild in ast.iter_child_nodes(child):
                        if isinstance(grandchild, ast.stmt):
                            self.stmt(grandchild)
                        elif isinstance(grandchild, ast.expr):
                            self.expr(grandchild)

    def test(self, node: ast.expr) -> Kind:
        """A condition: branching on a tensor reads its values (`if x:`, `while t[0]:`)."""
        kind = self.expr(node)
        if kind in (Kind.TENSOR, Kind.TENSORS):
            self.m.reject(
                node, f"`{ast.unparse(node)}` as a condition reads a tensor's values in Python"
            )
        return kind

    def context_manager(self, node: ast.expr) -> None:
        target = node.func if isinstance(node, ast.Call) else node
        dotted = self.m.aliases.qualname(target)
        if isinstance(node, ast.Call) and dotted in CONTEXT_MANAGERS:
            self.expr(node)
            return
        self.expr(node)
        self.m.reject(
            node,
            f"`with {ast.unparse(node)}:` the checks cannot see what its __exit__ does (it may "
            "swallow a failing kernel); only torch.no_grad(), torch.inference_mode() and "
            "torch.cuda.device(...) may be entered",
            rule="try-except-fallback",
        )

    def iteration(self, iterable: ast.expr) -> Kind:
        """The kind of each element of a loop or comprehension over `iterable`."""
        kind = self.expr(iterable)
        if (
            isinstance(iterable, ast.Call)
            and isinstance(iterable.func, ast.Name)
            and iterable.func.id == "range"
        ):
            return Kind.SCALAR
        return element_of(kind)

    def bind(self, target: ast.AST, kind: Kind, value: ast.AST | None) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = kind
            self.track(target.id, kind, value)
            self.local_fns.pop(target.id, None)
            if isinstance(value, ast.Lambda):
                self.local_fns[target.id] = Callable(value, dict(self.env), owner=id(self))
            elif isinstance(value, ast.Name) and value.id in self.local_fns:
                self.local_fns[target.id] = self.local_fns[value.id]
        elif isinstance(target, (ast.Tuple, ast.List)):
            if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
                for sub, sub_value in zip(target.elts, value.elts):
                    self.bind(sub, self.expr(sub_value), sub_value)
                return
            element = Kind.TENSOR if kind == Kind.TENSOR else element_of(kind)  # a, b = x.chunk(2)
            for sub in target.elts:
                self.bind(sub, element, None)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, Kind.TENSORS if kind in MAYBE_TENSOR else Kind.CONTAINER, None)
        elif isinstance(target, ast.Subscript):
            base = self.expr(target.value)
            self.expr(target.slice)
            if base == Kind.CONTAINER and kind in MAYBE_TENSOR:
                self.taint(target.value)  # the container now holds a tensor
            elif base not in (Kind.CONTAINER, Kind.TENSORS, Kind.META):
                self.m.reject(
                    target,
                    f"`{ast.unparse(target)} = ...` writes into a tensor with PyTorch; "
                    "write outputs from the Triton kernel",
                )
        elif isinstance(target, ast.Attribute):
            self.expr(target.value)
            self.store_field(target, kind)

    def taint(self, container: ast.AST) -> None:
        """A local container that received a tensor: its elements are tensors from now on."""
        if isinstance(container, ast.Name) and container.id in self.env:
            self.env[container.id] = Kind.TENSORS

    # ---- expressions ------------------------------------------------------------------
    def expr(self, node: ast.AST | None) -> Kind:
        if node is None:
            return Kind.SCALAR
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is not None:
            return method(node)
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child)
        return Kind.UNKNOWN

    def _Name(self, node: ast.Name) -> Kind:
        if node.id in self.env:
            return self.env[node.id]
        if node.id in self.m.constants:
            return self.m.constants[node.id]
        if node.id in self.m.aliases.names:
            self.check_torch_name(node, self.m.aliases.names[node.id], called=False)
            return Kind.SCALAR
        if node.id in self.m.kernels:
            return Kind.KERNEL
        if node.id in self.m.functions:
            return Kind.FUNCTION
        return Kind.OBJECT if node.id in self.m.types.names else Kind.UNKNOWN

    def _Attribute(self, node: ast.Attribute) -> Kind:
        if node.attr == "training" and isinstance(node.ctx, ast.Load):
            # the judge runs ModelNew in eval mode: a result that depends on the mode would be
            # checked in one of them only
            self.m.reject(
                node,
                f"`{ast.unparse(node)}` reads the module's train/eval mode; a kernel's result "
                "may not depend on it",
            )
        dotted = self.m.aliases.qualname(node)
        if dotted is not None:
            self.check_torch_name(node, dotted, called=False)
            return Kind.SCALAR
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            if node.attr in self.m.properties:  # a property's body runs on every access
                return self.follow(
                    f"property:{node.attr}", self.m.properties[node.attr], (), is_method=True
                )
            return self.m.self_kinds.get(node.attr, self.m.self_default)
        layer = node.value
        if (
            isinstance(layer, ast.Attribute)
            and isinstance(layer.value, ast.Name)
            and layer.value.id == "self"
            and layer.attr in self.m.self_modules
            and not self.m.self_modules[layer.attr].startswith("local:")  # torch.nn's only
            and node.attr in LAYER_SETTINGS
        ):
            # a torch.nn layer's constructor settings (nn.Embedding's embedding_dim, a conv's
            # stride): numbers and tuples of numbers, not its tensors
            return LAYER_SETTINGS[node.attr]
        base = self.expr(node.value)
        kind = self.class_attribute(node, base)
        if kind is not None:
            return kind
        if base == Kind.CONTEXT:  # what forward saved: tensors unless shown otherwise
            return Kind.TENSORS if node.attr in ("saved_tensors", "to_save") else Kind.TENSOR
        if node.attr == "shape":
            return Kind.SHAPE
        if node.attr in SCALAR_ATTRS:
            return Kind.SCALAR
        if node.attr in TENSOR_ATTRS and base in (Kind.TENSOR, Kind.UNKNOWN):
            return Kind.TENSOR
        return Kind.UNKNOWN

    def _Subscript(self, node: ast.Subscript) -> Kind:
        base = self.expr(node.value)
        index = self.expr(node.slice)
        if base in (Kind.SHAPE, Kind.CONTAINER):
            return Kind.SCALAR
        if base == Kind.TENSORS:
            return Kind.TENSOR
        if base == Kind.TENSOR:
            if index in (Kind.TENSOR, Kind.TENSORS):
                self.m.reject(
                    node, f"`{ast.unparse(node)}` gathers with a tensor index; gather in the kernel"
                )
            return Kind.TENSOR
        return Kind.UNKNOWN  # includes META["x"]: a grid's meta dict holds the kernel's tensors

    def _Lambda(self, node: ast.Lambda) -> Kind:
        self.run_callable(Callable(node, dict(self.env)), (), Kind.UNKNOWN)
        return Kind.FUNCTION

    def run_callable(
        self, target: Callable, arg_kinds: tuple[Kind, ...], default_kind: Kind, **binding
    ) -> Kind:
        """Walks a local def or lambda (with its closure) or a module function, its
        parameters bound to `arg_kinds`, else to `default_kind`."""
        if target.module_key is not None:
            return self.follow(
                target.module_key,
                target.node,
                arg_kinds,
                target.is_method,
                default_kind,
                **binding,
            )
        visit = (f"local:{id(target.node)}:{default_kind.value}", arg_kinds)
        if self.depth > MAX_CALL_DEPTH:
            self.m.reject(target.node, TOO_DEEP, rule="call-depth")
            return Kind.UNKNOWN
        if visit in self.m.visiting:
            return Kind.UNKNOWN
        self.m.visiting.add(visit)
        closure = dict(target.closure or {})
        if target.owner == id(self):
            closure.update(self.env)  # closures see their scope's names as they are now
        try:
            inner = type(self)(self.m, closure, self.depth + 1, self.local_fns)
            return inner.run(target.node, arg_kinds=arg_kinds, default_kind=default_kind, **binding)
        finally:
            self.m.visiting.discard(visit)

    def _comprehension(self, node) -> Kind:
        inner = Walker(self.m, self.env, self.depth, self.local_fns)
        inner.objects, inner.class_params = dict(self.objects), dict(self.class_params)
        for generator in node.generators:
            inner.bind(generator.target, inner.iteration(generator.iter), None)
            for condition in generator.ifs:
                inner.expr(condition)
        if isinstance(node, ast.DictComp):
            return container_of([inner.expr(node.key), inner.expr(node.value)])
        return container_of([inner.expr(node.elt)])

    _ListComp = _SetComp = _GeneratorExp = _DictComp = _comprehension


def _as_load(target: ast.AST) -> ast.AST:
    clone = ast.parse(ast.unparse(target), mode="eval").body
    return ast.copy_location(clone, target)
