"""Problem extraction: one KernelBench-format problem file per target, plus `<name>.target.json`
(the finding: where the op lives and how it was found, which the publisher reads to pick its
integration adapter) and an `index.json` listing them all.

The problem imports the op when its package imports cleanly (checked in a child process,
since importing runs the project's code); otherwise the reference is rebuilt from source
(kbot.scan.rebuild). Either way `Model` subclasses the op, so its attribute and parameter
names are the original's and a kernel's state dict loads into both.
"""

from __future__ import annotations

import enum
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from kbot.errors import UsageError
from kbot.output import to_jsonable
from kbot.scan.findings import Finding, Flag, ScanOptions, ScanResult
from kbot.scan.inputs import InputPlan, InputsUnknown, plan_inputs
from kbot.scan.location import ImportLocation, import_location, imported_names
from kbot.scan.rebuild import RebuildError, rebuild_reference
from kbot.scan.render import EMITTED_MARK, render_problem
from kbot.scan.smoke import Refusal, run_first_cases
from kbot.scan.table import target_id

_IMPORT_CHECK_TIMEOUT_S = 120.0


class EmitStatus(str, enum.Enum):
    EMITTED = "emitted"
    SKIPPED = "skipped"


@dataclass(frozen=True)
class EmittedProblem:
    name: str
    target: str  # file::qualname
    status: EmitStatus
    message: str  # how it was built, or why not
    path: Path | None = None  # the problem file
    target_json: Path | None = None
    mode: str = ""  # "import" (the problem imports the op) or "rebuilt" (copied from source)
    cases: tuple[dict[str, int], ...] = ()  # the problem's CASES
    inputs_from: str = ""  # where its inputs came from: .kbot.yml, profile, --model-config ...


def check_imports(locations: list[ImportLocation]) -> dict[str, str | None]:
    """Imports each module in one child process; module -> None when it imported, else why not."""
    if not locations:
        return {}
    script = (
        "import importlib, json, sys\n"
        "todo = json.loads(sys.argv[1])\n"
        "out = {}\n"
        "for path, module in todo:\n"
        "    sys.path.insert(0, path)\n"
        "    try:\n"
        "        importlib.import_module(module)\n"
        "        out[module] = None\n"
        "    except BaseException as exc:\n"
        "        out[module] = f'{type(exc).__name__}: {exc}'.splitlines()[0][:300]\n"
        "print('KBOT-IMPORTS' + json.dumps(out))\n"
    )
    todo = json.dumps([[str(loc.sys_path), loc.module] for loc in locations])
    try:
        done = subprocess.run(
            [sys.executable, "-c", script, todo],
            capture_output=True,
            text=True,
            timeout=_IMPORT_CHECK_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired:
        return {loc.module: "importing took over 120 s" for loc in locations}
    for line in done.stdout.splitlines():
        if line.startswith("KBOT-IMPORTS"):
            return json.loads(line[len("KBOT-IMPORTS") :])
    why = (done.stderr.strip().splitlines() or ["the import check crashed"])[-1]
    return {loc.module: why for loc in locations}


def _package_roots(root: Path) -> set[str]:
    names = {p.name for p in root.iterdir() if p.is_dir() and (p / "__init__.py").is_file()}
    names |= {p.stem for p in root.glob("*.py")}
    src = root / "src"
    if src.is_dir():
        names |= {p.name for p in src.iterdir() if (p / "__init__.py").is_file()}
    return names


def emit_problems(
    result: ScanResult,
    out_dir: Path,
    options: ScanOptions | None = None,
    check_import: bool = True,
) -> list[EmittedProblem]:
    """Writes problems for every target of `result` into `out_dir`; never raises for one op."""
    options = options or ScanOptions()
    out_dir = Path(out_dir)
    refuse_foreign_files(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    plans: dict[int, InputPlan | str] = {}
    for number, finding in enumerate(result.targets):
        try:
            plans[number] = plan_inputs(finding, options)
        except InputsUnknown as exc:
            plans[number] = str(exc)
    # Importing runs the project's code and costs a process: only for ops that can be emitted.
    imports = imported_names(result.root) if result.targets else {}
    locations = {f.file: import_location(result.root, f.file, imports) for f in result.targets}
    wanted = {
        locations[f.file].module: locations[f.file]
        for n, f in enumerate(result.targets)
        if not isinstance(plans[n], str)
    }
    imported = check_imports(list(wanted.values())) if check_import else {}
    package_roots = _package_roots(result.root)
    emitted: list[EmittedProblem] = []
    for number, finding in enumerate(result.targets):
        plan = plans[number]
        if isinstance(plan, str):
            emitted.append(
                EmittedProblem(finding.name, target_id(finding), EmitStatus.SKIPPED, plan)
            )
            continue
        emitted.append(
            _emit_one(
                finding,
                plan,
                result.root,
                out_dir,
                locations[finding.file],
                imported,
                package_roots,
                options.compile_decorators,
            )
        )
    if check_import:
        emitted = _checked_inferred(emitted, plans, result, out_dir, locations, imported,
                                    package_roots, options)  # fmt: skip
    index = [to_jsonable(e) for e in emitted]
    (out_dir / "index.json").write_text(
        json.dumps({"root": str(result.root), "problems": index}, indent=2) + "\n"
    )
    return emitted


def refuse_foreign_files(out_dir: Path) -> None:
    """UsageError when `out_dir` holds a file an emit could overwrite that kbot did not write:
    a problem file without kbot's header, a JSON file that is not kbot's index or target
    record (a folder of the user's is never written into)."""
    if not out_dir.is_dir():
        return
    for path in sorted(out_dir.iterdir()):
        if not path.is_file() or path.suffix not in (".py", ".json"):
            continue
        if path.suffix == ".py":
            ours = EMITTED_MARK in path.read_bytes()[:4096].decode("utf-8", "replace")
        else:
            ours = _is_kbots_json(path, {"root", "problems"} if path.name == "index.json" else
                                  {"name", "root", "qualname", "kind"})  # fmt: skip
        if not ours:
            raise UsageError(
                f"{path} was not written by kbot and would be overwritten; emit problems into "
                "an empty folder or one kbot wrote"
            )


def _is_kbots_json(path: Path, keys: set[str]) -> bool:
    """An index or a target's record as kbot writes them (other JSON files are the user's)."""
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    return isinstance(record, dict) and keys <= set(record)


def _checked_inferred(
    emitted: list[EmittedProblem],
    plans: dict[int, InputPlan | str],
    result: ScanResult,
    out_dir: Path,
    locations: dict[str, ImportLocation],
    imported: dict[str, str | None],
    package_roots: set[str],
    options: ScanOptions,
) -> list[EmittedProblem]:
    """Runs the first cases of every problem whose inputs --model-config inferred; one the
    reference refuses is emitted again from the plan's `retry` (another layout), and skipped
    with what it raised when no plan is left."""
    emitted = list(emitted)
    todo = {
        n: plan
        for n, plan in plans.items()
        if isinstance(plan, InputPlan)
        and plan.source.startswith("--model-config")
        and emitted[n].status == EmitStatus.EMITTED
    }
    while todo:
        ran = run_first_cases([emitted[n].path for n in todo])
        retry: dict[int, InputPlan] = {}
        for n, plan in todo.items():
            refused = ran.get(str(emitted[n].path))
            if refused is None:
                continue
            finding = result.targets[n]
            if plan.retry is not None and not refused.needs:
                retry[n] = plan.retry
                emitted[n] = _emit_one(
                    finding, plan.retry, result.root, out_dir, locations[finding.file],
                    imported, package_roots, options.compile_decorators,
                )  # fmt: skip
                continue
            for written in (emitted[n].path, emitted[n].target_json):
                Path(written).unlink(missing_ok=True)
            emitted[n] = EmittedProblem(
                finding.name, target_id(finding), EmitStatus.SKIPPED, _refused(refused, plan)
            )
        todo = retry
    return emitted


def _refused(refused: Refusal, plan: InputPlan) -> str:
    """Why a problem whose first cases raised is skipped, and what would fix it: installing
    what the module needs or scanning on a GPU host, else inputs given in .kbot.yml."""
    if refused.needs.startswith("package"):
        return (
            f"its module needs {refused.needs}, which is not installed here ({refused.said}); "
            "install the repository's requirements where kbot scans, and scan again"
        )
    if refused.needs:
        return (
            f"its reference needs {refused.needs} to run ({refused.said}); scan on a machine "
            "with one"
        )
    missing = _NAMESPACE_FIELD.search(refused.said)
    if missing:  # the constructor reads a field of its config the model config does not have
        return (
            f"running its first cases on the inputs {plan.source} raised {refused.said}: "
            f"--model-config has no `{missing.group(1)}`; give the config's fields under "
            f"`init: {{config: {{{missing.group(1)}: ...}}}}` of its .kbot.yml target"
        )
    return (
        f"running its first cases on the inputs {plan.source} raised {refused.said}; give "
        "its inputs under `inputs:` of its .kbot.yml target (or make the module run here)"
    )


# AttributeError of the `types.SimpleNamespace` a config argument is given (kbot.scan.config_args)
_NAMESPACE_FIELD = re.compile(r"'(?:types\.)?SimpleNamespace' object has no attribute '(\w+)'")


def _emit_one(
    finding: Finding,
    plan: InputPlan,
    root: Path,
    out_dir: Path,
    location: ImportLocation,
    imported: dict[str, str | None],
    package_roots: set[str],
    compile_names: tuple[str, ...],
) -> EmittedProblem:
    tid = target_id(finding)
    import_error = imported.get(location.module, "import not checked")
    if import_error is None:
        source = render_problem(finding, plan, location=location)
        mode, how = "import", f"imports {location.module}"
    else:
        try:
            rebuilt = rebuild_reference(
                (root / finding.file).read_text(encoding="utf-8"),
                finding,
                package_roots,
                compile_names,
                location.module,
            )
        except RebuildError as exc:
            return EmittedProblem(
                finding.name,
                tid,
                EmitStatus.SKIPPED,
                f"cannot import {location.module} ({import_error}) nor rebuild it from source: {exc}",
            )
        source = render_problem(
            finding, plan, rebuilt=rebuilt, why_rebuilt=import_error, root=location
        )
        mode, how = (
            "rebuilt",
            f"rebuilt from source ({location.module} did not import: {import_error})",
        )
    path = out_dir / f"{finding.name}.py"
    path.write_text(source)
    meta = out_dir / f"{finding.name}.target.json"
    meta.write_text(json.dumps(_target_meta(finding, plan, location, mode, root), indent=2) + "\n")
    return EmittedProblem(
        finding.name, tid, EmitStatus.EMITTED, how, path, meta, mode, plan.cases, plan.source
    )


def _target_meta(
    finding: Finding, plan: InputPlan, location: ImportLocation, mode: str, root: Path
) -> dict:
    return {
        "name": finding.name,
        "root": str(root),
        "file": finding.file,
        "line": finding.line,
        "qualname": finding.qualname,
        "entry": finding.entry,
        "kind": finding.kind.value,
        "also_found_as": [k.value for k in finding.also_found_as],
        "compiled_by": finding.compiled_by,
        "op_base": finding.op_base,
        "has_fast_path": finding.has_fast_path,
        "fast_path": finding.fast_path,
        "module": location.module,
        "mode": mode,
        "flags": [
            {"flag": n.flag.value, "reason": n.reason, "line": n.line} for n in finding.flags
        ],
        "in_place": finding.has_flag(Flag.IN_PLACE),
        "returns_view": finding.has_flag(Flag.RETURNS_VIEW),
        "stochastic": finding.has_flag(Flag.STOCHASTIC),
        "inputs_from": plan.source,
        "cases": list(plan.cases),
    }
