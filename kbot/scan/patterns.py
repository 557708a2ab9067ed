"""The patterns that make something a target, applied to the facts of the whole tree.

Op classes are recognised by method and base-class names (never by path): a class with a
concrete `forward_native` is an op; the family defines `forward_triton` (BaseFusedOp) or not
(CustomOp, MultiPlatformOp). LMDeploy-style default backends are the one place a path matters,
because the registry itself is a folder convention: `backends/default/` vs `backends/cuda/`.
"""

from __future__ import annotations

import ast
import textwrap
from dataclasses import dataclass

from kbot.scan.facts import ClassInfo, FileFacts, FunctionNode, dotted_name
from kbot.scan.findings import Kind, Param

# Methods that run on NVIDIA GPUs instead of forward_native. Newer op bases name the backend
# (SGLang's BaseFusedOp: forward_aot for the sgl_kernel wheel, forward_jit for JIT kernels).
FAST_PATH_METHODS = (
    "forward_cuda",
    "forward_triton",
    "forward_aot",
    "forward_jit",
    "forward_cutlass",
    "forward_flashinfer",
    "forward_cudnn",
    "forward_cute",
)
_GENERIC_BASES = {"Module", "object", "ABC", "Generic", "Protocol", ""}


@dataclass
class Candidate:
    """One match of one pattern, before matches of the same callable are merged."""

    facts: FileFacts
    qualname: str  # class qualname for class targets, function qualname otherwise
    kind: Kind
    entry: str  # method of the class to reproduce, "" for a plain function
    func: FunctionNode | None  # the reference callable; None when it could not be found
    cls: ClassInfo | None = None
    has_fast_path: bool = False
    fast_path: str = ""
    op_base: str = ""
    problem: str = ""  # why this match cannot become a target, when it cannot

    @property
    def key(self) -> tuple[str, str, str]:
        """One callable: a class's `forward` and its `add_rms_forward` are two targets."""
        return (self.facts.file.rel, self.qualname, self.entry)


class ClassIndex:
    """Classes of the whole tree by simple name, for resolving bases across files."""

    def __init__(self, all_facts: list[FileFacts]) -> None:
        self.by_name: dict[str, list[tuple[FileFacts, ClassInfo]]] = {}
        for facts in all_facts:
            for info in facts.classes:
                self.by_name.setdefault(info.name, []).append((facts, info))

    def resolve(self, name: str, near: FileFacts) -> tuple[FileFacts, ClassInfo] | None:
        options = self.by_name.get(name)
        if not options:
            return None
        for facts, info in options:
            if facts is near:
                return facts, info
        return options[0]

    def ancestors(self, facts: FileFacts, info: ClassInfo) -> list[tuple[FileFacts, ClassInfo]]:
        """The class and its in-tree ancestors, depth first, each once (a simple MRO)."""
        out: list[tuple[FileFacts, ClassInfo]] = []
        seen: set[int] = set()

        def visit(f: FileFacts, c: ClassInfo) -> None:
            if id(c) in seen:
                return
            seen.add(id(c))
            out.append((f, c))
            for base in c.bases:
                if base == c.name and f is facts:
                    # `class X(X)` re-exports an imported X; look elsewhere for it.
                    others = [o for o in self.by_name.get(base, []) if o[1] is not c]
                    resolved = others[0] if others else None
                else:
                    resolved = self.resolve(base, f)
                if resolved:
                    visit(*resolved)

        visit(facts, info)
        return out


def function_source(facts: FileFacts, node: ast.AST) -> str:
    """The def (or class) without its decorators, dedented."""
    lines = facts.file.source.splitlines()
    return textwrap.dedent("\n".join(lines[node.lineno - 1 : node.end_lineno])) + "\n"


def function_params(node: FunctionNode) -> tuple[Param, ...]:
    args = node.args
    positional = args.posonlyargs + args.args
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
    defaults += list(args.defaults)
    params = [
        Param(
            a.arg,
            ast.unparse(d) if d else None,
            ast.unparse(a.annotation) if a.annotation else None,
        )
        for a, d in zip(positional, defaults)
    ]
    params += [
        Param(
            a.arg,
            ast.unparse(d) if d else None,
            ast.unparse(a.annotation) if a.annotation else None,
        )
        for a, d in zip(args.kwonlyargs, args.kw_defaults)
    ]
    return tuple(p for p in params if p.name not in ("self", "cls"))


def _body_without_docstring(node: FunctionNode) -> list[ast.stmt]:
    body = list(node.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    return body


def is_stub(node: FunctionNode) -> bool:
    """`pass`, `...`, or `raise NotImplementedError`: an abstract method of a base class."""
    for stmt in _body_without_docstring(node):
        if isinstance(stmt, ast.Pass) or (
            isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)
        ):
            continue
        if isinstance(stmt, ast.Raise) and stmt.exc is not None:
            exc = stmt.exc.func if isinstance(stmt.exc, ast.Call) else stmt.exc
            if (dotted_name(exc) or "").endswith("NotImplementedError"):
                continue
        return False
    return True


def delegates_to_native(node: FunctionNode) -> bool:
    """True when the method only returns `self.forward_native(...)` (possibly after asserts)."""
    body = _body_without_docstring(node)
    returns = 0
    for stmt in body:
        if isinstance(stmt, (ast.Pass, ast.Assert)):
            continue
        if (
            isinstance(stmt, ast.Return)
            and isinstance(stmt.value, ast.Call)
            and (dotted_name(stmt.value.func) or "").endswith("forward_native")
        ):
            returns += 1
            continue
        if isinstance(stmt, ast.Return) and isinstance(stmt.value, ast.Call):
            func = stmt.value.func
            if isinstance(func, ast.Attribute) and func.attr == "forward_native":
                returns += 1  # super().forward_native(...)
                continue
        return False
    return returns > 0


_ALLOCATIONS = {"empty", "empty_like", "zeros", "zeros_like", "ones", "ones_like", "new_empty"}


def _first_call(node: FunctionNode) -> str:
    """The call that does the work, for the report: allocations and delegation don't count."""
    for child in ast.walk(node):
        if isinstance(child, ast.Call):
            name = dotted_name(child.func) or ast.unparse(child.func)
            last = name.rsplit(".", 1)[-1]
            if last != "forward_native" and last not in _ALLOCATIONS:
                return f"calls {name} (line {child.lineno})"
    return f"has its own body (line {node.lineno})"


def op_class_candidates(all_facts: list[FileFacts], index: ClassIndex) -> list[Candidate]:
    out: list[Candidate] = []
    for facts in all_facts:
        for info in facts.classes:
            native = info.methods.get("forward_native")
            if native is None or is_stub(native):
                continue
            chain = index.ancestors(facts, info)
            family = {name for _, c in chain for name in (*c.methods, *c.aliases)}
            kind = Kind.FUSED_OP if "forward_triton" in family else Kind.CUSTOM_OP
            # The op's own implementations: this class and ancestors that are ops themselves,
            # not the abstract base whose dispatch methods are plumbing.
            concrete = [
                (f, c)
                for f, c in chain
                if "forward_native" in c.methods and not is_stub(c.methods["forward_native"])
            ]
            concrete_ids = {id(c) for _, c in concrete}
            abstract = [c for _, c in chain if id(c) not in concrete_ids]
            bases_out = [b for b in chain[-1][1].bases if b not in _GENERIC_BASES]
            op_base = abstract[0].name if abstract else (bases_out[0] if bases_out else "")
            candidate = Candidate(facts, info.qualname, kind, "forward_native", native, info)
            candidate.op_base = op_base
            _find_fast_path(candidate, concrete)
            out.append(candidate)
    return out


def _find_fast_path(candidate: Candidate, concrete: list[tuple[FileFacts, ClassInfo]]) -> None:
    for method in FAST_PATH_METHODS:
        for f, c in concrete:
            if c.aliases.get(method) == "forward_native":
                break
            node = c.methods.get(method)
            if node is None:
                continue
            if not (is_stub(node) or delegates_to_native(node)):
                candidate.has_fast_path = True
                where = "" if f is candidate.facts and c is candidate.cls else f" (in {c.name})"
                candidate.fast_path = f"{method}{where} {_first_call(node)}"
                return
            break


def _is_default_backend_file(rel: str) -> bool:
    return "/backends/default/" in "/" + rel


def _backend_bases(index: ClassIndex, facts: FileFacts, info: ClassInfo) -> set[str]:
    names: set[str] = set()
    for f, c in index.ancestors(facts, info):
        if _is_default_backend_file(f.file.rel) or c is info:
            names.update(b for b in c.bases if b not in _GENERIC_BASES)
    if info.name not in info.bases:  # `class XImpl(XImpl)` re-exports the imported interface
        names.discard(info.name)
    return names


def default_backend_candidates(all_facts: list[FileFacts], index: ClassIndex) -> list[Candidate]:
    """`class DefaultRMSNormImpl(RMSNormImpl)` in backends/default/, overridden or not by a
    class in backends/cuda/ deriving from the same interface."""
    cuda_classes = [
        (f, c) for f in all_facts if "/backends/cuda/" in "/" + f.file.rel for c in f.classes
    ]
    out: list[Candidate] = []
    for facts in all_facts:
        if not _is_default_backend_file(facts.file.rel):
            continue
        for info in facts.classes:
            forward = info.methods.get("forward")
            implements = info.name.endswith("Impl") or any(b.endswith("Impl") for b in info.bases)
            if forward is None or is_stub(forward) or not implements:
                continue
            candidate = Candidate(
                facts, info.qualname, Kind.DEFAULT_BACKEND, "forward", forward, info
            )
            interfaces = _backend_bases(index, facts, info)
            candidate.op_base = sorted(interfaces)[0] if interfaces else ""
            for f, c in cuda_classes:
                common = interfaces.intersection(c.bases)
                if common:
                    candidate.has_fast_path = True
                    candidate.fast_path = f"{f.file.rel}: {c.name} overrides {sorted(common)[0]}"
                    break
            out.append(candidate)
    return out


def compiled_candidates(all_facts: list[FileFacts]) -> list[Candidate]:
    out: list[Candidate] = []
    for facts in all_facts:
        for fn in facts.functions:
            if fn.compile_decorator is None:
                continue
            candidate = function_candidate(
                facts, fn.qualname, fn.node, fn.class_qualname, Kind.TORCH_COMPILE
            )
            candidate.fast_path = f"compiled with {fn.compile_decorator}"
            out.append(candidate)
    return out


def marker_candidates(all_facts: list[FileFacts]) -> list[Candidate]:
    out: list[Candidate] = []
    for facts in all_facts:
        for fn in facts.functions:
            if fn.marked:
                out.append(
                    function_candidate(facts, fn.qualname, fn.node, fn.class_qualname, Kind.MARKER)
                )
        for info in facts.classes:
            if info.marked:
                out.append(class_candidate(facts, info, Kind.MARKER))
    return out


def class_candidate(facts: FileFacts, info: ClassInfo, kind: Kind, entry: str = "") -> Candidate:
    for name in (entry,) if entry else ("forward_native", "forward"):
        if name in info.methods:
            return Candidate(facts, info.qualname, kind, name, info.methods[name], info)
    candidate = Candidate(facts, info.qualname, kind, entry or "forward", None, info)
    candidate.problem = (
        f"class {info.qualname} defines no {entry or 'forward_native or forward'} method"
    )
    return candidate


def function_candidate(
    facts: FileFacts, qualname: str, node: FunctionNode, class_qualname: str | None, kind: Kind
) -> Candidate:
    """A method is its class plus the method as entry (`RMSNorm` + `add_rms_forward`), the
    shape a `.kbot.yml` target naming `RMSNorm.add_rms_forward` resolves to, so the two merge."""
    if class_qualname is not None:
        cls = next(c for c in facts.classes if c.qualname == class_qualname)
        return Candidate(facts, class_qualname, kind, node.name, node, cls)
    return Candidate(facts, qualname, kind, "", node)
