"""The scanner's records: what it was asked (ScanOptions), what it found (Finding), what it
skipped (FileSkip), and the whole answer (ScanResult). Frozen, JSON-ready via `to_jsonable`."""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def snake_case(qualname: str) -> str:
    """`GemmaRMSNorm` -> `gemma_rms_norm`, `Cls.method` -> `cls_method`."""
    out = []
    for part in qualname.split("."):
        part = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", part)
        part = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", part)
        out.append(part.lower().strip("_"))
    return "_".join(p for p in out if p) or "op"


DEFAULT_CASES: tuple[dict[str, int], ...] = ({"T": 1}, {"T": 16}, {"T": 4096})
# Entries that stand for the op class itself; any other entry is a method target of its own.
CLASS_ENTRIES = ("forward", "forward_native")


class Kind(str, enum.Enum):
    """How a target was found; the publisher picks its integration adapter from this."""

    MARKER = "marker"  # `# kbot: optimize` on or above a def/class
    CONFIG_TARGET = "config_target"  # listed under `targets:` in .kbot.yml
    TORCH_COMPILE = "torch_compile"  # a function or method under a compile decorator
    CUSTOM_OP = "custom_op"  # forward_native + forward_cuda family (CustomOp, MultiPlatformOp)
    FUSED_OP = "fused_op"  # forward_native + forward_triton family (BaseFusedOp)
    DEFAULT_BACKEND = "default_backend"  # LMDeploy-style Default*Impl under backends/default/
    # A module or function named as a common serving op (RMSNorm, apply_rotary_emb, SiluAndMul)
    # whose forward is tensor math of its own (no submodule calls): gpt-fast, litgpt, torchtitan
    # mark nothing and compile whole models, so their ops are found by name.
    NAMED_OP = "named_op"
    PROFILED = "profiled"  # a module or function that was hot in the profile but matched no pattern


class Flag(str, enum.Enum):
    STOCHASTIC = "stochastic"  # draws random numbers: outputs cannot be compared exactly
    IN_PLACE = "in_place"  # mutates an input (x.mul_(), out=, x[...] = ...)
    RETURNS_VIEW = "returns_view"  # returns a view or an input itself (aliasing)


class Status(str, enum.Enum):
    TARGET = "target"  # will be optimized
    SKIPPED = "skipped"  # found, but left out; `skip_reason` says why and how to include it


@dataclass(frozen=True)
class FlagNote:
    flag: Flag
    reason: str  # what in the source raised it, e.g. "calls exponential_ (line 12)"
    line: int


@dataclass(frozen=True)
class Param:
    """One argument of the reference callable, as written in the source."""

    name: str
    default: str | None = None  # source text of the default, None when required
    annotation: str | None = None


@dataclass(frozen=True)
class ConfigArg:
    """A constructor argument that is a configuration object (kbot.scan.config_args): a
    dataclass of the op's source, built from its `fields`, or (no `class_name`) an attribute
    bag of the model configuration's values."""

    param: str
    class_name: str = ""  # the dataclass, "" for an attribute bag
    nested: bool = False  # defined in the op's class (or an ancestor), not at module level
    fields: tuple[Param, ...] = ()

    @property
    def build(self) -> str:
        """The expression a problem file calls to build it: `_Target.Config`, the dataclass
        from the constructor's module, or `types.SimpleNamespace`."""
        if not self.class_name:
            return "types.SimpleNamespace"
        if self.nested:
            return f"_Target.{self.class_name}"
        return f"_Target.__init__.__globals__[{self.class_name!r}]"


@dataclass(frozen=True)
class InputMeta:
    """One tensor (or scalar) argument as seen in the profile."""

    name: str
    shape: tuple[int, ...] | None  # None: not a tensor
    dtype: str | None
    stride: tuple[int, ...] | None
    value: Any = None  # scalars (ints, floats, bools, strings) only


@dataclass(frozen=True)
class ProfileStats:
    """What the profile measured for one finding. Times are CPU time when there was no GPU."""

    calls: int
    self_time_us: float
    time_share: float  # of all measured op time in the run, 0..1
    time_kind: str  # "device" or "cpu"
    e2e_speedup_if_3x: float  # Amdahl: whole-run speedup if this op became 3x faster
    inputs_seen: tuple[tuple[InputMeta, ...], ...] = ()  # distinct call signatures, first few
    init_state: dict[str, Any] = field(default_factory=dict)  # scalar attributes at first call
    param_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)  # weights and buffers
    param_dtypes: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class TargetHint:
    """A `.kbot.yml` target, as far as the scanner needs it (kept apart from kbot.config so the
    scanner core runs on plain values)."""

    target: str
    name: str | None = None
    init: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)  # name -> {shape, dtype, high}
    cases: tuple[dict[str, int], ...] = ()
    dtypes: tuple[str, ...] = ()
    skip: bool = False
    where: str = ".kbot.yml"  # the entry's "file:line", for messages
    params_dtype: str = ""  # the dtype the model holds the module's float parameters in

    @property
    def file(self) -> str | None:
        return self.target.split("::")[0] if "::" in self.target else None

    @property
    def qualname(self) -> str:
        return self.target.split("::")[1] if "::" in self.target else self.target.split(":")[-1]

    @property
    def module(self) -> str | None:
        return None if "::" in self.target else self.target.split(":")[0]

    @classmethod
    def from_config(cls, target: Any, config_file: Any = None) -> TargetHint:
        """Converts a `kbot.config.TargetConfig` (duck-typed, so config stays optional here)."""
        inputs = {
            name: {"shape": tuple(spec.shape), "dtype": spec.dtype, "high": spec.high}
            for name, spec in target.inputs.items()
        }
        return cls(
            target=target.target,
            name=target.name,
            init=dict(target.init),
            inputs=inputs,
            cases=tuple(target.cases),
            dtypes=tuple(target.dtypes),
            skip=bool(target.skip),
            where=f"{config_file or '.kbot.yml'}:{target.line}",
            params_dtype=getattr(target, "params_dtype", ""),
        )


@dataclass(frozen=True)
class ScanOptions:
    compile_decorators: tuple[
        str, ...
    ] = ()  # extra names meaning "compiled", e.g. safe_torch_compile
    exclude: tuple[str, ...] = ()  # glob patterns relative to the scanned root
    include_existing: bool = False  # keep ops that already have a fast path
    include_stochastic: bool = False
    cases: tuple[dict[str, int], ...] = DEFAULT_CASES
    targets: tuple[TargetHint, ...] = ()
    profile_command: str | None = None  # "python bench.py ..." run under kbot's profiler
    profile_function: str | None = None  # "pkg.mod:fn"
    profile_timeout_s: float = 600.0
    top: int | None = None
    # kbot.scan.model_config.ModelConfig: inputs for targets without .kbot.yml inputs
    model_config: Any = None


@dataclass(frozen=True)
class Finding:
    """One candidate op. `file` is relative to the scanned root, `line` 1-based."""

    file: str
    line: int
    qualname: str  # "RMSNorm" for an op class, "fused_gelu" for a function, "A.method"
    kind: Kind
    entry: str  # the callable to reproduce: "forward_native", "forward", or "" for a function
    reference_source: str  # the source of the reference callable (decorators removed)
    params: tuple[Param, ...]  # arguments of the reference callable (without self)
    init_params: tuple[Param, ...] = ()  # constructor arguments of an op class (without self)
    init_source: str = ""  # the class's __init__, for mapping profiled state back to arguments
    init_configs: tuple[ConfigArg, ...] = ()  # constructor arguments that are config objects
    has_fast_path: bool = False
    fast_path: str = ""  # e.g. "forward_cuda calls sgl_kernel.rmsnorm (line 40)"
    op_base: str = ""  # root base class of the op family, e.g. "CustomOp"
    flags: tuple[FlagNote, ...] = ()
    status: Status = Status.TARGET
    skip_reason: str = ""
    also_found_as: tuple[Kind, ...] = ()  # other patterns that matched the same callable
    # For an op found by name: where the repository compiles a model or step function whole
    # ("generate.py:209"), so the op runs under torch.compile and a kernel must beat that.
    compiled_by: str = ""
    hint: TargetHint | None = None  # the .kbot.yml entry for this op, if any
    profile: ProfileStats | None = None
    unique_name: str = ""  # set by scan(): `name`, made unique across the result
    # kbot.scan.call_literals.CallLiteral: what the tree's calls of a function pass
    call_literals: tuple[Any, ...] = ()

    @property
    def callable_qualname(self) -> str:
        """What is reproduced: `RMSNorm` for an op class (its forward), `RMSNorm.add_rms_forward`
        for another method of a class, the function's qualname for a function."""
        if self.entry and self.entry not in CLASS_ENTRIES:
            return f"{self.qualname}.{self.entry}"
        return self.qualname

    @property
    def name(self) -> str:
        """A file-name-safe name: the .kbot.yml `name`, else the snake-cased qualname."""
        if self.unique_name:
            return self.unique_name
        if self.hint and self.hint.name:
            return self.hint.name
        return snake_case(self.callable_qualname)

    @property
    def key(self) -> tuple[str, str]:
        return (self.file, self.qualname)

    def has_flag(self, flag: Flag) -> bool:
        return any(note.flag == flag for note in self.flags)


@dataclass(frozen=True)
class FileSkip:
    """A file the scan could not read; reported, never fatal."""

    file: str
    reason: str  # "syntax error at line 3: invalid syntax", "not UTF-8 text"


@dataclass(frozen=True)
class ScanResult:
    root: Path
    findings: tuple[Finding, ...]  # ranked, best first; skipped ones after targets
    file_skips: tuple[FileSkip, ...]
    files_scanned: int
    scan_time_s: float
    profile_time_kind: str | None = None  # "device" | "cpu" | None (no profile)
    profile_total_us: float | None = None

    @property
    def targets(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.status == Status.TARGET)
