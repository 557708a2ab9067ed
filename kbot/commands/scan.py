"""`kbot scan PATH`: find the ops worth a kernel, rank them, optionally emit problem files."""

from __future__ import annotations

import argparse
from pathlib import Path

from kbot.errors import ConfigError, ExitCode, UsageError
from kbot.output import CommandResult

HELP = "find hot PyTorch ops in a repository, rank them, and extract runnable problems"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, help="folder (or .py file) to scan")
    source = parser.add_mutually_exclusive_group()
    source.add_argument(
        "--profile",
        "--profile-cmd",
        dest="profile",
        metavar='"CMD ..."',
        help="run a Python command of yours (a bench script, your tests: "
        '"python -m pytest tests/test_layers.py") with hooks on the targets: their time, and '
        "the argument shapes, dtypes and constructor arguments they were called with as cases",
    )
    source.add_argument(
        "--profile-module",
        metavar="PKG.MOD:FN",
        help="profile a function called with no arguments, e.g. tinyserve.bench:run",
    )
    parser.add_argument(
        "--emit-problems", type=Path, metavar="DIR", help="write one problem file per target"
    )
    parser.add_argument(
        "--model-config",
        metavar="PATH|PRESET",
        help="a Hugging Face config.json or a preset (llama-3-8b, qwen2.5-7b, qwen3-8b): "
        "inputs for targets that .kbot.yml and the profile leave without",
    )
    parser.add_argument("--top", type=int, metavar="N", help="keep the N best targets")
    parser.add_argument(
        "--include-existing",
        action="store_true",
        default=None,
        help="also target ops that already have a fast path (forward_cuda/forward_triton, a cuda backend)",
    )
    parser.add_argument(
        "--config", type=Path, metavar="FILE", help=".kbot.yml to use instead of the one found"
    )


def options_from_args(args: argparse.Namespace):
    """Resolves .kbot.yml + CLI into ScanOptions; returns (options, config root)."""
    from kbot.config import load_config
    from kbot.scan.findings import ScanOptions, TargetHint

    if not args.path.exists():
        raise UsageError(f"path {args.path} does not exist; give a folder or .py file to scan")
    if args.top is not None and args.top < 1:
        raise UsageError(f"--top must be at least 1, got {args.top}")
    cli = {"scan.include_existing": True} if args.include_existing else {}
    config = load_config(args.path, cli=cli, config_file=args.config)
    scan_root = args.path.resolve()
    exclude = config.scan.exclude
    if config.config_file is not None and scan_root != config.root:
        # .kbot.yml globs are relative to its folder; re-anchor them on the scanned folder.
        try:
            prefix = scan_root.relative_to(config.root).as_posix() + "/"
            exclude = tuple(p[len(prefix) :] if p.startswith(prefix) else p for p in exclude)
        except ValueError:
            pass
    exclude = (*exclude, *_work_dir_excluded(config, scan_root))
    options = ScanOptions(
        compile_decorators=tuple(config.scan.compile_decorators),
        exclude=tuple(exclude),
        include_existing=config.scan.include_existing,
        include_stochastic=config.scan.include_stochastic,
        cases=tuple(config.scan.cases),
        targets=tuple(TargetHint.from_config(t, config.config_file) for t in config.targets),
        profile_command=args.profile,
        profile_function=args.profile_module,
        top=args.top,
        model_config=_model_config(
            getattr(args, "model_config", None) or config.scan.model_config, config.root
        ),
    )
    return options, config.root


def _model_config(spec: str | None, root: Path):
    """--model-config, else scan.model_config (a path relative to .kbot.yml's folder)."""
    if not spec:
        return None
    from kbot.scan.model_config import PRESETS, load_model_config

    if spec not in PRESETS and not Path(spec).is_absolute() and not Path(spec).is_file():
        anchored = root / spec
        if anchored.is_file():
            spec = str(anchored)
    return load_model_config(spec)


def run(args: argparse.Namespace) -> CommandResult:
    from kbot.scan import scan
    from kbot.scan.table import render_table, scan_json

    options, config_root = options_from_args(args)
    result = scan(args.path, options, config_root=config_root)
    problems: dict[str, str] = {}
    problem_status: dict[str, str] = {}
    problem_cases: dict[str, tuple] = {}
    emitted_json = None
    if args.emit_problems is not None:
        from kbot.output import to_jsonable
        from kbot.scan.extract import emit_problems

        emitted = emit_problems(result, args.emit_problems, options)
        for item in emitted:
            problem_status[item.name] = (
                f"problem {item.path}" if item.path else f"no problem: {item.message}"
            )
            if item.path:
                problems[item.name] = str(item.path)
                problem_cases[item.name] = item.cases
        emitted_json = to_jsonable(emitted)
    else:
        planned = _planned_inputs(result, options)
        for name, (cases, source) in planned.items():
            problem_status[name] = source
            if cases:
                problem_cases[name] = cases
    data = scan_json(result, problems)
    if emitted_json is not None:
        data["problems"] = emitted_json
    else:  # what each target's inputs would be, and from where (or what to add)
        data["inputs"] = {
            name: {"cases": list(cases), "source": source} if cases else {"missing": source}
            for name, (cases, source) in planned.items()
        }
    text = render_table(result, problem_status, problem_cases)
    code = ExitCode.OK if result.targets else ExitCode.REJECTED
    if not result.targets:
        text += "\nno targets found (mark one with `# kbot: optimize` or list it under targets: in .kbot.yml)"
    return CommandResult(code, text, data)


def _work_dir_excluded(config, scan_root: Path) -> tuple[str, ...]:
    """kbot's own folder (clones, problems, runs) as an exclude pattern when it lies in the
    scanned tree: a later scan would list the clone's ops as the project's. A work_dir that
    is the scanned folder itself (`work_dir: .`) is refused: kbot would write its clones and
    problems among the user's files."""
    work_dir = config.work_dir.resolve()
    folder = scan_root if scan_root.is_dir() else scan_root.parent
    if folder == work_dir:
        raise ConfigError(
            f"{config.source_of('work_dir')}: work_dir is the scanned folder {folder} itself; "
            "kbot writes clones and problems there: give it a folder of its own, such as .kbot"
        )
    try:
        return (work_dir.relative_to(folder).as_posix() + "/**",)
    except ValueError:
        return ()


def _planned_inputs(result, options) -> dict[str, tuple[tuple, str]]:
    """Each target's cases and where its inputs come from (.kbot.yml, the profile,
    --model-config with the values it read), or, with no cases, what to add to .kbot.yml:
    planned without running anything, as `--emit-problems` would plan them."""
    from kbot.scan.inputs import InputsUnknown, plan_inputs

    planned: dict[str, tuple[tuple, str]] = {}
    for finding in result.targets:
        try:
            plan = plan_inputs(finding, options)
        except InputsUnknown as exc:
            planned[finding.name] = ((), f"no inputs: {exc}")
        else:
            planned[finding.name] = (plan.cases, f"inputs from {plan.source}")
    return planned
