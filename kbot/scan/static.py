"""Static discovery: walk, parse, apply every pattern, merge matches of the same callable into
one Finding, and decide whether each is a target or skipped (and why). Never imports the target."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from kbot.errors import ConfigError
from kbot.scan.call_literals import with_call_literals
from kbot.scan.compiled_context import mark_compiled_context
from kbot.scan.config_args import config_args
from kbot.scan.dispatchers import skip_dispatchers
from kbot.scan.facts import FileFacts, FunctionNode, collect_facts
from kbot.scan.findings import (
    CLASS_ENTRIES,
    FileSkip,
    Finding,
    Flag,
    Kind,
    ScanOptions,
    Status,
    TargetHint,
)
from kbot.scan.flags import analyse_flags
from kbot.scan.named_ops import compiled_library_wrappers, in_tests, named_op_candidates
from kbot.scan.patterns import (
    Candidate,
    ClassIndex,
    class_candidate,
    compiled_candidates,
    default_backend_candidates,
    function_params,
    function_source,
    marker_candidates,
    op_class_candidates,
)
from kbot.scan.walk import (
    ParsedFile,
    could_hold_target,
    parse_file,
    parse_source,
    python_files,
    read_source,
)

# Which kind names a merged finding: the structural pattern decides how kbot integrates a
# kernel (forward_cuda, forward_triton, a cuda builder, a guarded call), so it wins.
_KIND_PRIORITY = (
    Kind.FUSED_OP,
    Kind.CUSTOM_OP,
    Kind.DEFAULT_BACKEND,
    Kind.TORCH_COMPILE,
    Kind.CONFIG_TARGET,
    Kind.MARKER,
    Kind.NAMED_OP,
    Kind.PROFILED,
)
_EXPLICIT = {Kind.CONFIG_TARGET, Kind.MARKER}


def scan_static(
    root: Path, options: ScanOptions, config_root: Path | None = None
) -> tuple[list[Finding], list[FileSkip], int]:
    """Returns (findings in source order, unreadable files, number of files parsed)."""
    root = root.resolve()
    all_facts: list[FileFacts] = []
    skips: list[FileSkip] = []
    unparsed: dict[str, Path] = {}
    files = 0
    compiled_at = ""
    for rel, path in python_files(root, options.exclude):
        files += 1
        source = read_source(rel, path)
        if isinstance(source, FileSkip):
            skips.append(source)
            continue
        compiled_at = compiled_at or _whole_compile(rel, source)
        if could_hold_target(rel, source, options.compile_decorators):
            _add(parse_source(rel, path, source), all_facts, skips, options)
        else:
            unparsed[rel] = path
    _parse_missing_bases(all_facts, unparsed, skips, options)
    index = ClassIndex(all_facts)
    candidates = (
        op_class_candidates(all_facts, index)
        + default_backend_candidates(all_facts, index)
        + compiled_library_wrappers(compiled_candidates(all_facts))
        + marker_candidates(all_facts)
        + named_op_candidates(all_facts)
    )
    hints: dict[tuple[str, str], list[TargetHint]] = {}
    for hint in options.targets:
        candidate = _config_candidate(hint, root, config_root or root, all_facts, options)
        candidates.append(candidate)
        hints.setdefault(candidate.key, []).append(hint)
    findings = _merge(candidates, hints, options, index)
    if compiled_at:
        findings = [
            replace(f, compiled_by=compiled_at)
            if Kind.NAMED_OP in (f.kind, *f.also_found_as)
            else f
            for f in findings
        ]
    findings = mark_compiled_context(findings, all_facts)
    findings = skip_dispatchers(findings, all_facts)
    findings = with_call_literals(findings, root, options.exclude)
    findings.sort(key=lambda f: (f.file, f.line))
    return findings, skips, files


# `model = torch.compile(model)`, `decode_one_token = torch.compile(decode_one_token, ...)`: a
# call (not a decorator) that compiles a model or step function the repository runs whole.
_WHOLE_COMPILE = re.compile(r"(?m)^(?!\s*@).*?(?<![\w.])torch\.compile\(\s*[A-Za-z_][\w.]*\s*[,)]")


def _whole_compile(rel: str, source: str) -> str:
    """`file:line` of the first torch.compile of a model or function outside the tests."""
    if in_tests(rel):
        return ""
    found = _WHOLE_COMPILE.search(source)
    return f"{rel}:{source.count(chr(10), 0, found.start()) + 1}" if found else ""


def _add(
    parsed: ParsedFile | FileSkip,
    all_facts: list[FileFacts],
    skips: list[FileSkip],
    options: ScanOptions,
) -> None:
    if isinstance(parsed, FileSkip):
        skips.append(parsed)
    else:
        all_facts.append(collect_facts(parsed, options.compile_decorators))


def _parse_missing_bases(
    all_facts: list[FileFacts],
    unparsed: dict[str, Path],
    skips: list[FileSkip],
    options: ScanOptions,
) -> None:
    """Parses the skipped files that define a base class of an op (e.g. a `class
    MultiPlatformOp(CustomOp): pass` in between), so the op's family is known."""
    defined = {c.name for f in all_facts for c in f.classes}
    checked: set[str] = set()
    for _ in range(4):  # base chains are short; each round follows one more level
        wanted = (
            {
                base
                for f in all_facts
                for c in f.classes
                if "forward_native" in c.methods or c.name in checked
                for base in c.bases
            }
            - defined
            - checked
        )
        if not wanted or not unparsed:
            return
        checked |= wanted
        pattern = re.compile(
            r"^\s*class\s+(" + "|".join(map(re.escape, sorted(wanted))) + r")\b", re.M
        )
        for rel, path in list(unparsed.items()):
            source = read_source(rel, path)
            if isinstance(source, str) and pattern.search(source):
                del unparsed[rel]
                _add(parse_source(rel, path, source), all_facts, skips, options)
        defined = {c.name for f in all_facts for c in f.classes}


def _merge(
    candidates: list[Candidate],
    hints: dict[tuple[str, str], list[TargetHint]],
    options: ScanOptions,
    index: ClassIndex | None = None,
) -> list[Finding]:
    """One finding per callable, or one per `.kbot.yml` entry naming it (an op may be listed
    twice, e.g. RMSNorm with and without its residual, each with its own inputs)."""
    groups: dict[tuple[str, str], list[Candidate]] = {}
    for candidate in candidates:
        groups.setdefault(candidate.key, []).append(candidate)
    findings = []
    for key, group in groups.items():
        group.sort(key=lambda c: _KIND_PRIORITY.index(c.kind))
        main = group[0]
        kinds = [c.kind for c in group]
        explicit = any(k in _EXPLICIT for k in kinds)
        fast = next((c for c in group if c.has_fast_path), None)
        func = next((c.func for c in group if c.func is not None), None)
        problem = next((c.problem for c in group if c.problem), "")
        flags = analyse_flags(func) if func is not None else ()
        init_facts, init = _constructor(main, index)
        chain = []
        if main.cls is not None:
            chain = index.ancestors(main.facts, main.cls) if index else [(main.facts, main.cls)]
        finding = Finding(
            file=main.facts.file.rel,
            line=_line(main, func),
            qualname=main.qualname,
            kind=main.kind,
            entry=main.entry,
            reference_source=function_source(main.facts, func) if func else "",
            params=function_params(func) if func else (),
            init_params=function_params(init) if init else (),
            init_source=function_source(init_facts, init) if init else "",
            init_configs=config_args(init_facts, init, chain) if init else (),
            has_fast_path=fast is not None,
            fast_path=fast.fast_path
            if fast
            else (main.fast_path if main.kind == Kind.TORCH_COMPILE else ""),
            op_base=main.op_base,
            flags=flags,
            also_found_as=tuple(dict.fromkeys(k for k in kinds[1:] if k != main.kind)),
        )
        for hint in hints.get(key) or [None]:
            status, reason = _status(replace(finding, hint=hint), explicit, problem, options)
            findings.append(replace(finding, hint=hint, status=status, skip_reason=reason))
    return findings


def _constructor(
    main: Candidate, index: ClassIndex | None
) -> tuple[FileFacts, FunctionNode | None]:
    """The `__init__` the class runs: its own, else the nearest in-tree ancestor's (a rotary
    class that inherits its cache-building constructor from a base)."""
    if main.cls is None:
        return main.facts, None
    chain = index.ancestors(main.facts, main.cls) if index else [(main.facts, main.cls)]
    for facts, info in chain:
        if "__init__" in info.methods:
            return facts, info.methods["__init__"]
    return main.facts, None


def _line(main: Candidate, func) -> int:
    """An op class is where the class starts; a function or another method, where it starts."""
    if func is None:
        return 1
    if main.cls is not None and main.entry in CLASS_ENTRIES:
        return main.cls.node.lineno
    return func.lineno


def _status(
    finding: Finding, explicit: bool, problem: str, options: ScanOptions
) -> tuple[Status, str]:
    if problem:
        return Status.SKIPPED, problem
    if finding.hint is not None and finding.hint.skip:
        return Status.SKIPPED, "skip: true in .kbot.yml"
    stochastic = [n.reason for n in finding.flags if n.flag == Flag.STOCHASTIC]
    if stochastic and not options.include_stochastic:
        return Status.SKIPPED, (
            f"stochastic ({stochastic[0]}): outputs cannot be compared exactly; "
            "set scan.include_stochastic: true to include it"
        )
    if finding.has_fast_path and not options.include_existing and not explicit:
        return (
            Status.SKIPPED,
            f"has a fast path ({finding.fast_path}); pass --include-existing to optimize it anyway",
        )
    return Status.TARGET, ""


def _config_candidate(
    hint: TargetHint,
    root: Path,
    config_root: Path,
    all_facts: list[FileFacts],
    options: ScanOptions,
) -> Candidate:
    path = _target_file(hint, config_root).resolve()
    if root.is_file():  # one file scanned: the walk named it by its own name
        rel = root.name if path == root else None
    else:
        try:
            rel = path.relative_to(root).as_posix()
        except ValueError:
            rel = None
    facts = next((f for f in all_facts if f.file.rel == rel), None) if rel else None
    if facts is None:
        # Outside the scanned folder (or excluded): read it on its own.
        parsed = parse_file(rel or path.name, path)
        if isinstance(parsed, FileSkip):
            raise ConfigError(f".kbot.yml target {hint.target}: {parsed.file}: {parsed.reason}")
        facts = collect_facts(parsed, options.compile_decorators)
    return _resolve_qualname(hint, facts)


def _target_file(hint: TargetHint, config_root: Path) -> Path:
    if hint.file is not None:
        path = config_root / hint.file
        if not path.is_file():
            raise ConfigError(
                f".kbot.yml target {hint.target}: file {hint.file} not found under {config_root}"
            )
        return path
    module = (hint.module or "").replace(".", "/")
    for candidate in (
        f"{module}.py",
        f"{module}/__init__.py",
        f"src/{module}.py",
        f"src/{module}/__init__.py",
    ):
        if (config_root / candidate).is_file():
            return config_root / candidate
    raise ConfigError(
        f".kbot.yml target {hint.target}: module {hint.module} not found under {config_root} "
        "(write it as path/to/file.py::Qualname.method)"
    )


def _resolve_qualname(hint: TargetHint, facts: FileFacts) -> Candidate:
    qualname = hint.qualname
    classes = {c.qualname: c for c in facts.classes}
    functions = {f.qualname: f for f in facts.functions}
    if qualname in classes:
        return class_candidate(facts, classes[qualname], Kind.CONFIG_TARGET)
    owner, _, method = qualname.rpartition(".")
    if owner in classes:
        methods = classes[owner].methods
        # An op class named by its (maybe inherited) dispatching forward is reproduced from
        # forward_native; any other method must be defined by the class itself.
        if method in ("forward", "forward_native") and "forward_native" in methods:
            return class_candidate(facts, classes[owner], Kind.CONFIG_TARGET, "forward_native")
        if method in methods:
            return class_candidate(facts, classes[owner], Kind.CONFIG_TARGET, method)
    if qualname in functions:
        fn = functions[qualname]
        return Candidate(facts, qualname, Kind.CONFIG_TARGET, "", fn.node)
    raise ConfigError(
        f".kbot.yml target {hint.target}: no class or function {qualname} in {facts.file.rel}"
    )


def profiled_finding(root: Path, rel: str, qualname: str, options: ScanOptions) -> Finding | None:
    """A finding for a module class the profile found hot but no pattern matched."""
    parsed = parse_file(rel, root / rel)
    if isinstance(parsed, FileSkip):
        return None
    facts = collect_facts(parsed, options.compile_decorators)
    info = next((c for c in facts.classes if c.qualname == qualname), None)
    if info is None:
        return None
    findings = _merge([class_candidate(facts, info, Kind.PROFILED)], {}, options)
    return findings[0] if findings else None
