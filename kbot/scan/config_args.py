"""Constructor arguments that are configuration objects, read from the source.

Modules built from one object rather than from sizes are common in real repositories:
torchtitan's `RoPE(config: Config)` with a dataclass nested in the class, Hugging Face's
`LlamaRotaryEmbedding(config)` that reads `config.hidden_size`. The scan finds which
constructor argument is such an object and how a problem file builds it:

- annotated with a dataclass of the op's own source (nested in the class or one of its in-tree
  ancestors, or at the top of the constructor's file): built by calling it with its fields,
  which are then sized by name like any constructor argument;
- otherwise, named like a configuration (`config`, `cfg`, `args` ...): an attribute bag, a
  `types.SimpleNamespace` holding every value of the model configuration.
"""

from __future__ import annotations

import ast

from kbot.scan.facts import ClassInfo, FileFacts, FunctionNode
from kbot.scan.findings import ConfigArg, Param
from kbot.scan.patterns import function_params

# Constructor argument names that mean "the model's configuration object".
CONFIG_NAMES = frozenset(
    ("config", "cfg", "conf", "model_config", "model_cfg", "args", "model_args", "params")
)


def config_args(
    init_facts: FileFacts, init: FunctionNode, chain: list[tuple[FileFacts, ClassInfo]]
) -> tuple[ConfigArg, ...]:
    """The configuration arguments of `init`, the constructor the class runs; `chain` is the
    class and its in-tree ancestors, where a nested config class may live."""
    found = []
    for param in function_params(init):
        if param.name.startswith("*"):
            continue
        name = _annotated_class(param.annotation)
        nested = next(
            (c for _, info in chain for c in _nested_classes(info) if c.name == name), None
        )
        if nested is not None and is_dataclass(nested):
            fields = _inherited_fields(nested, chain)
            found.append(ConfigArg(param.name, name, nested=True, fields=fields))
            continue
        top = next(
            (
                n
                for n in init_facts.file.tree.body
                if isinstance(n, ast.ClassDef) and n.name == name
            ),
            None,
        )
        if top is not None and is_dataclass(top):
            found.append(ConfigArg(param.name, name, fields=_fields(top)))
        elif param.name.lower() in CONFIG_NAMES and param.default is None:
            found.append(ConfigArg(param.name))
    return tuple(found)


def _annotated_class(annotation: str | None) -> str:
    """`Config`, `"RoPE.Config"`, `Optional[Config]` -> the class's own name ("" for none)."""
    if not annotation:
        return ""
    text = annotation.strip("'\"")
    for wrapper in ("Optional[", "typing.Optional["):
        if text.startswith(wrapper) and text.endswith("]"):
            text = text[len(wrapper) : -1]
    return text.split(" | ")[0].rsplit(".", 1)[-1]


def _nested_classes(info: ClassInfo) -> list[ast.ClassDef]:
    return [n for n in info.node.body if isinstance(n, ast.ClassDef)]


def is_dataclass(node: ast.ClassDef) -> bool:
    """Decorated with `@dataclass` (or `@dataclasses.dataclass(...)`) and nothing else."""
    names = [
        ast.unparse(d.func if isinstance(d, ast.Call) else d).rsplit(".", 1)[-1]
        for d in node.decorator_list
    ]
    return bool(names) and all(n == "dataclass" for n in names)


def _inherited_fields(
    node: ast.ClassDef, chain: list[tuple[FileFacts, ClassInfo]], depth: int = 0
) -> tuple[Param, ...]:
    """The dataclass's fields with those of its dataclass bases first, as `dataclass` orders
    them (`class Config(RoPE.Config): pass` has RoPE.Config's): a base is a class nested in one
    of the op's in-tree classes (`RoPE.Config`, or `Config` of an ancestor)."""
    inherited: dict[str, Param] = {}
    for base in node.bases if depth < 8 else ():
        owner, _, name = ast.unparse(base).rpartition(".")
        owner = owner.rsplit(".", 1)[-1]
        found = next(
            (
                c
                for _, info in chain
                if not owner or info.name == owner
                for c in _nested_classes(info)
                if c.name == name and c is not node
            ),
            None,
        )  # fmt: skip
        if found is not None and is_dataclass(found):
            for field in _inherited_fields(found, chain, depth + 1):
                inherited[field.name] = field
    for field in _fields(node):
        inherited[field.name] = field
    return tuple(inherited.values())


def _fields(node: ast.ClassDef) -> tuple[Param, ...]:
    """The dataclass's own fields in order; a field with any default (a literal, `field(...)`)
    keeps its source text as the default."""
    fields = []
    for stmt in node.body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        annotation = ast.unparse(stmt.annotation)
        if "ClassVar" in annotation:
            continue
        default = ast.unparse(stmt.value) if stmt.value is not None else None
        fields.append(Param(stmt.target.id, default, annotation))
    return tuple(fields)
